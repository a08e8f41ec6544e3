"""Public count constraints, sparsity and the policy graph (000 Sec 8).

A constraint is a family of count queries whose answers are public.  Each
constraint here is a family of *disjoint* queries (a :class:`CountQuery` or
a :class:`RangeCount` is one query, a :class:`Marginal` is the
``size(C)`` cells of a cuboid), so a constraint labels every domain value
with the index of the one query it satisfies, or ``-1``.  Overlaps only
arise between constraints.  The query classes are defined in
:mod:`blowfish_privacy.policy._count_queries`; this module is their
public import path and holds what looks at their overlaps.

Sparsity (000 Def 8.2) and the policy graph (Def 8.3) are computed on
*groups*: domain values with the same labels under every constraint satisfy
the same queries, so a pair ``(x, y)`` lifts and lowers the same queries as
any other pair from the same two groups.  The work is O(|T|) to label and
O(groups^2 * constraints) to compare groups, never O(|T|^2).

Sensitivity rule used for calibration (see Corrections to the papers,
docs/explanation/corrections.md): for count
constraints every neighbour pair under a secret graph ``G`` is a neighbour
pair under the complete graph ``K``, so ``S(h, (T, G, Q)) <= S(h, (T, K,
Q))``; under ``K`` every change is a secret change and Thm 8.2 holds, so
when ``Q`` is sparse w.r.t. ``K``, ``S(h, P) <= 2 max(alpha, xi)`` with
``alpha, xi`` of the policy graph of ``(T, K, Q)``.  ``alpha <= |Q|`` and
``xi <= |Q| + 1`` (Cor 8.3 corrected), so ``2 (|Q| + 1)`` is the safe bound
when the exact search does not finish.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import _policy_graph
from .._validation import as_int
from ._count_queries import Constraint, CountQuery, Marginal, RangeCount, show_value
from .domain import Domain
from ..errors import NoProvenSensitivityError, NotSparseError

__all__ = [
    "Constraint",
    "CountQuery",
    "Marginal",
    "RangeCount",
    "NotSparseError",
    "NoProvenSensitivityError",
    "PolicyGraph",
    "check_policy_graph",
    "group_values",
    "policy_graph",
    "EXACT_VERTEX_LIMIT",
    "SEARCH_NODE_LIMIT",
    "SEARCH_WORK_LIMIT",
    "GROUP_LIMIT",
]

#: Largest policy graph (queries + 2) searched exactly.
EXACT_VERTEX_LIMIT = 26
#: Work limit of the exact search (search nodes expanded, per search).
SEARCH_NODE_LIMIT = 20_000_000
#: Work budget per search in node * vertex steps: a search node costs O(nv)
#: word operations (two bit-set reachability sweeps), about 10 ns per
#: vertex, so one search stays near a second on any graph of <= 64 vertices.
SEARCH_WORK_LIMIT = 2**27
#: Largest number of value groups compared pairwise.
GROUP_LIMIT = 4096


# ---------------------------------------------------------------------------
# groups, sparsity and the policy graph
# ---------------------------------------------------------------------------
@dataclass
class Groups:
    """Domain values grouped by the queries they satisfy.

    ``labels[g, c]`` is the query of constraint ``c`` satisfied by group
    ``g`` (or -1); ``offsets[c]`` is the global index of constraint ``c``'s
    first query; ``member[g]`` is one flat index of the group; ``of_value``
    maps each flat index to its group.
    """

    labels: np.ndarray
    offsets: np.ndarray
    member: np.ndarray
    of_value: np.ndarray
    num_queries: int

    def query_sets(self) -> list[frozenset]:
        out = []
        for row in self.labels:
            out.append(frozenset(int(self.offsets[c] + q) for c, q in enumerate(row) if q >= 0))
        return out


def group_values(domain: Domain, constraints: Sequence[Constraint]) -> Groups:
    """Group the values of ``domain`` by the queries they satisfy (O(|T| * constraints))."""
    counts = [c.num_queries(domain) for c in constraints]
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if counts else np.zeros(0, np.int64)
    lab = np.stack([c.labels(domain) for c in constraints], axis=1) if constraints else np.zeros((domain.size, 0), np.int64)
    key = np.zeros(domain.size, dtype=np.int64)
    radix_ok = np.prod([k + 1 for k in counts], dtype=float) < 2.0**62
    if radix_ok:
        for c, k in enumerate(counts):
            key = key * (k + 1) + (lab[:, c] + 1)
        _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(lab, axis=0, return_index=True, return_inverse=True)
    return Groups(lab[first], offsets, first.astype(np.int64), inverse.ravel().astype(np.int64), int(sum(counts)))


@dataclass
class PolicyGraph:
    """The policy graph of ``(T, K, Q)`` for the complete secret graph ``K`` (000 Def 8.3).

    Vertices ``0 .. |Q|-1`` are the count queries, ``|Q|`` is ``v+`` and
    ``|Q|+1`` is ``v-``.  ``edges`` is a set of ``(u, v)`` pairs: directed
    edges between two different vertices (a change never lowers and lifts
    one query).  :meth:`adjacency` checks them (:func:`check_policy_graph`).
    """

    num_queries: int
    edges: set = field(default_factory=set)
    #: For each edge, up to four pairs of value groups ``(g, h)`` whose change g -> h realises it.
    realised_by: dict = field(default_factory=dict)

    @property
    def v_plus(self) -> int:
        return self.num_queries

    @property
    def v_minus(self) -> int:
        return self.num_queries + 1

    def adjacency(self) -> np.ndarray:
        """Out-neighbour bit sets (needs at most 64 vertices); the edges are checked first.

        Raises
        ------
        TypeError, ValueError
            As :func:`check_policy_graph`.
        """
        nv, edges = check_policy_graph(self.num_queries, self.edges)
        adj = [0] * nv
        for u, v in edges:
            adj[u] |= 1 << v
        return np.array(adj, dtype=np.uint64)


#: Most vertices (queries + 2) of a policy graph the bit-set search takes.
MAX_SEARCH_VERTICES = 64


def _vertex(value, name: str, nv: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be a vertex index (an int in [0, {nv})), got a {type(value).__name__}")
    value = int(value)
    if not 0 <= value < nv:
        raise ValueError(f"{name} must be a vertex index in [0, {nv}), got {show_value(value)}")
    return value


def check_policy_graph(num_queries, edges) -> tuple[int, list[tuple[int, int]]]:
    """The vertex count and the checked edge list of a policy graph.

    Parameters
    ----------
    num_queries : int
        |Q|, from 0 to ``MAX_SEARCH_VERTICES - 2``; the graph has
        ``|Q| + 2`` vertices (the queries, v+ and v-).
    edges : iterable of pairs (u, v)
        Directed edges between two different vertices, each an int in
        [0, |Q| + 2); repeats are allowed (a set of edges).

    Returns
    -------
    (int, list of (int, int))
        The number of vertices and the edges as Python ints.

    Raises
    ------
    TypeError
        ``num_queries`` or an end point not an integer, ``edges`` not an
        iterable of pairs.
    ValueError
        ``num_queries`` outside [0, 62], an end point outside the
        vertices, a self-loop (u, u).  The messages name ``edges`` and the
        edge; vertex indices are public (they number the queries).
    """
    if isinstance(num_queries, bool) or not isinstance(num_queries, (numbers.Integral, np.integer)):
        raise TypeError(f"num_queries must be an int, got {num_queries!r} of type {type(num_queries).__name__}")
    nq = int(num_queries)
    if not 0 <= nq <= MAX_SEARCH_VERTICES - 2:
        raise ValueError(f"num_queries must be in [0, {MAX_SEARCH_VERTICES - 2}] (the search takes at most "
                         f"{MAX_SEARCH_VERTICES} vertices: the queries, v+ and v-), got {nq}")
    nv = nq + 2
    if isinstance(edges, (str, bytes)) or not isinstance(edges, Iterable):
        raise TypeError(f"edges must be an iterable of pairs (u, v), got {type(edges).__name__}")
    out = []
    for k, edge in enumerate(edges):
        if isinstance(edge, (str, bytes)) or not isinstance(edge, Iterable):
            raise TypeError(f"edges: every edge must be a pair (u, v) of vertex indices, got a {type(edge).__name__} "
                            f"(edge number {k})")
        pair = tuple(edge)
        if len(pair) != 2:
            raise ValueError(f"edges: every edge must be a pair (u, v) of vertex indices, got {len(pair)} items")
        u = _vertex(pair[0], f"edges: the tail u of edge number {k} (in iteration order)", nv)
        v = _vertex(pair[1], f"edges: the head v of edge number {k} (in iteration order)", nv)
        if u == v:
            raise ValueError(f"edges: ({u}, {v}) is a self-loop; a policy graph has none (a change never lowers and "
                             "lifts the same query)")
        out.append((u, v))
    return nv, out


def _pair_effects(labels: np.ndarray, gi: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    g, h = labels[gi], labels[hi]
    lift = (h >= 0) & (h != g)
    lower = (g >= 0) & (g != h)
    return lift, lower


def policy_graph(domain: Domain, constraints: Sequence[Constraint], groups: Groups | None = None) -> PolicyGraph:
    """Check sparsity w.r.t. the complete graph and build the policy graph.

    Raises
    ------
    NotSparseError
        If some pair of values lifts or lowers two queries; the message
        names one such pair and the queries.
    ValueError
        If there are more than :data:`GROUP_LIMIT` groups of values.
    """
    groups = groups or group_values(domain, constraints)
    G = groups.labels.shape[0]
    if G > GROUP_LIMIT:
        raise ValueError(
            f"constraints split the domain into {G} groups of values; the policy graph is built for at most "
            f"{GROUP_LIMIT} groups"
        )
    graph = PolicyGraph(groups.num_queries, {(groups.num_queries, groups.num_queries + 1)})
    names = _query_names(domain, constraints)
    rows = max(1, (1 << 20) // max(G, 1))
    for start in range(0, G, rows):
        gi, hi = np.meshgrid(np.arange(start, min(G, start + rows)), np.arange(G), indexing="ij")
        gi, hi = gi.ravel(), hi.ravel()
        keep = gi != hi
        _add_pairs(graph, domain, groups, names, gi[keep], hi[keep])
    return graph


def _add_pairs(graph: PolicyGraph, domain: Domain, groups: Groups, names: list[str], gi, hi) -> None:
    lift, lower = _pair_effects(groups.labels, gi, hi)
    nl, nw = lift.sum(axis=1), lower.sum(axis=1)
    bad = np.flatnonzero((nl > 1) | (nw > 1))
    if bad.size:
        k = bad[0]
        x, y = int(groups.member[gi[k]]), int(groups.member[hi[k]])
        lifted = [names[int(groups.offsets[c] + groups.labels[hi[k], c])] for c in np.flatnonzero(lift[k])]
        lowered = [names[int(groups.offsets[c] + groups.labels[gi[k], c])] for c in np.flatnonzero(lower[k])]
        raise NotSparseError(
            "constraints are not sparse (Definition 8.2 of the Blowfish paper) with respect to the complete secret "
            "graph: changing "
            f"{domain.record_of(x)!r} to {domain.record_of(y)!r} lifts {lifted} and lowers {lowered}; "
            f"no sensitivity is proven for such overlapping constraints. Use disjoint constraints (one marginal, "
            f"disjoint count or range queries), the 004 move model (neighbours='moves' with one or two "
            f"marginals), or pass an explicit sensitivity you take responsibility for"
        )
    active = np.flatnonzero((nl + nw) > 0)
    up = np.full(active.size, -1, dtype=np.int64)
    down = np.full(active.size, -1, dtype=np.int64)
    for c in range(groups.labels.shape[1]):
        sel = lift[active, c]
        up[sel] = groups.offsets[c] + groups.labels[hi[active[sel]], c]
        sel = lower[active, c]
        down[sel] = groups.offsets[c] + groups.labels[gi[active[sel]], c]
    down = np.where(down < 0, graph.v_plus, down)
    up = np.where(up < 0, graph.v_minus, up)
    graph.edges.update(zip(down.tolist(), up.tolist()))
    key = down * (graph.num_queries + 2) + up
    g_act, h_act = gi[active], hi[active]
    remaining = np.arange(key.size)
    for _ in range(4):
        if remaining.size == 0:
            break
        _, first = np.unique(key[remaining], return_index=True)
        pick = remaining[first]
        for k in pick.tolist():
            slot = graph.realised_by.setdefault((int(down[k]), int(up[k])), [])
            if len(slot) < 4:
                slot.append((int(g_act[k]), int(h_act[k])))
        remaining = np.setdiff1d(remaining, pick, assume_unique=True)


def _query_names(domain: Domain, constraints: Sequence[Constraint]) -> list[str]:
    names = []
    for k, c in enumerate(constraints):
        label = c.name or f"constraint {k}"
        m = c.num_queries(domain)
        names.extend([label] if m == 1 else [f"{label}[cell {j}]" for j in range(m)])
    return names


def longest_cycle_and_path(graph: PolicyGraph, node_limit: int | None = None) -> tuple[int, int, bool]:
    """``(alpha, xi, exact)`` by the exact search in C (csrc/policy_graph.c).

    Cost model: a depth-first search over simple cycles / paths with
    reachability pruning; worst case exponential in the number of vertices
    nv, each search node costing O(nv).  Each of the two searches expands at
    most ``node_limit`` nodes (default: ``min(SEARCH_NODE_LIMIT,
    SEARCH_WORK_LIMIT // nv)``, about a second per search).  When ``exact``
    is False the search hit that bound and the values are lower bounds
    only; callers must then use the proven bound ``|Q|`` / ``|Q| + 1``
    (a simple cycle has at most |Q| vertices among the queries, a path at
    most |Q| + 1 edges).

    Raises
    ------
    TypeError, ValueError
        ``graph`` not a policy graph, edges that are not pairs of distinct
        vertices in range (:func:`check_policy_graph`), a ``node_limit``
        that is not an integer in [1, 2**64 - 1].
    """
    alpha, xi, exact, _, _ = _search(graph, node_limit)
    return alpha, xi, exact


def _search(graph: PolicyGraph, node_limit: int | None = None):
    adjacency = getattr(graph, "adjacency", None)
    if not callable(adjacency):
        raise TypeError(f"graph must be a PolicyGraph (from policy_graph), got {type(graph).__name__}")
    if node_limit is not None:
        node_limit = as_int(node_limit, "node_limit", minimum=1)
        if node_limit >= 2**64:
            raise ValueError(f"node_limit must be an integer in [1, 2**64 - 1], got {node_limit}")
    adj = adjacency()
    nv = len(adj)
    v_plus = _vertex(getattr(graph, "v_plus", None), "graph.v_plus", nv)
    v_minus = _vertex(getattr(graph, "v_minus", None), "graph.v_minus", nv)
    if v_plus == v_minus:
        raise ValueError(f"graph.v_plus and graph.v_minus must be two different vertices, got {v_plus} for both")
    if node_limit is None:
        limit = max(1, min(SEARCH_NODE_LIMIT, SEARCH_WORK_LIMIT // max(nv, 1)))
    else:
        limit = node_limit
    alpha, ea, _, cycle = _policy_graph.longest_cycle(adj, limit)
    xi, ex, _, path = _policy_graph.longest_path(adj, v_plus, v_minus, limit)
    return alpha, xi, bool(ea and ex), cycle, path


def complete_graph_witness(graph: PolicyGraph, groups: Groups, node_limit: int | None = None):
    """Exact ``S(h, (T, K, Q))`` with a witness, when one can be built.

    Thm 8.2 Direction II under the complete graph ``K``: for a simple cycle
    (or ``v+`` to ``v-`` path) of the policy graph, give one tuple per edge
    the value ``x`` of a group that lowers the edge's tail query in ``D1``
    and the value ``y`` of the group that lifts its head query in ``D2``.
    Both databases have the same answers.  No proper non-empty subset of the
    changes keeps the answers (the edges of a proper part of a simple cycle
    or path do not balance at every query vertex), and under ``K`` every
    change is a secret pair, so ``(D1, D2)`` are neighbours (000 Def 4.1)
    with ``|T(D1, D2)|`` = the length.  ``||h(D1) - h(D2)||_1`` is twice the
    length when no value is used both as an ``x`` and as a ``y``: groups used
    on both sides must hold two values.  With Direction I this gives
    ``S(h, (T, K, Q)) = 2 max(alpha, xi)`` for databases with at least
    ``max(alpha, xi)`` tuples.

    Returns
    -------
    (alpha, xi, exact, witnessed)
        ``witnessed`` is True when a witness for the larger of the two was
        built.
    """
    alpha, xi, exact, cycle, path = _search(graph, node_limit)
    if not exact:
        return alpha, xi, exact, False
    if alpha > xi:
        seq = [(cycle[k], cycle[(k + 1) % len(cycle)]) for k in range(len(cycle))]
    else:
        seq = [(path[k], path[k + 1]) for k in range(len(path) - 1)]
    sizes = np.bincount(groups.of_value, minlength=groups.labels.shape[0])
    options = [graph.realised_by.get(e, []) for e in seq]
    if any(not o for o in options):
        return alpha, xi, exact, False
    choice = [0] * len(seq)

    def conflicts(ch):
        xs = {options[k][c][0] for k, c in enumerate(ch)}
        ys = {options[k][c][1] for k, c in enumerate(ch)}
        return sum(1 for g in xs & ys if sizes[g] < 2)

    best = conflicts(choice)
    improved = True
    while best and improved:
        improved = False
        for k in range(len(seq)):
            for c in range(len(options[k])):
                trial = choice.copy()
                trial[k] = c
                value = conflicts(trial)
                if value < best:
                    best, choice, improved = value, trial, True
    return alpha, xi, exact, best == 0
