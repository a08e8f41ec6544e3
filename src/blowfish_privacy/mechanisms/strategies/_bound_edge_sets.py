"""The candidate edge sets of the SVD lower bound: spanning trees of the secret graph and other subgraphs.

Any set ``E`` of edges contained in the secret graph ``G`` gives a valid
bound (``Delta_G(A) >= Delta_E(A)``): spanning trees (a path in flat order,
a boustrophedon "snake" path and two combs on a 2-D domain, stars at a
corner and at the centre, a breadth-first forest), the axis-neighbour
edges ("grid"), the complete graph under ``FullDomain``, all edges of other
graphs and, for distance thresholds, the edges of the two longest offsets.
Every edge of a candidate is checked with the graph's
:meth:`~blowfish_privacy.policy.secrets.SecretGraph.edge_mask` first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError
from ._strategy_inputs import plain_policy
from ._strategy_sensitivity import threshold_offsets

__all__ = ["EdgeSet", "check_spanning", "edge_sets", "spanning_trees", "tree_edges"]

#: Largest edge set ("all edges of the graph") tried as a candidate.
_GRAPH_EDGE_LIMIT = 2_000_000
#: ... and at most this many edges per value where the longest offsets are tried as well (all 260,064 edges of
#: the distance threshold 64 on 4096 values took 155 s and 8.6 GB, and the offset-64 edges gave the larger bound).
_GRAPH_EDGES_PER_VALUE = 16



@dataclass(frozen=True)
class EdgeSet:
    name: str
    kind: str  # "tree", "star", "local", "complete", "edges"
    u: np.ndarray | None  # None for the complete graph
    v: np.ndarray | None
    size: int  # |E|
    centre: int = -1  # a star's centre


def _snake_order(n1: int, n2: int) -> np.ndarray:
    grid = np.arange(n1 * n2, dtype=np.int64).reshape(n1, n2)
    grid[1::2] = grid[1::2, ::-1]
    return grid.reshape(-1)


def _tree_parent(shape: tuple[int, ...], name: str) -> np.ndarray:
    """Parent array (root -1) of a named spanning tree of the domain's cells (not yet checked against G)."""
    N = math.prod(shape)
    parent = np.full(N, -1, dtype=np.int64)
    if name == "path":
        parent[1:] = np.arange(N - 1)
        return parent
    if name == "snake":
        if len(shape) != 2:
            raise ParameterError("trees", f"trees: 'snake' needs a 2-D domain, got shape {shape}")
        order = _snake_order(*shape)
        parent[order[1:]] = order[:-1]
        return parent
    if name in ("comb-rows", "comb-cols"):
        if len(shape) != 2:
            raise ParameterError("trees", f"trees: {name!r} needs a 2-D domain, got shape {shape}")
        n1, n2 = shape
        r, c = np.divmod(np.arange(N, dtype=np.int64), n2)
        if name == "comb-rows":  # spine down column 0, teeth along each row
            parent = np.where(c > 0, r * n2 + c - 1, (r - 1) * n2)
        else:  # spine along row 0, teeth down each column
            parent = np.where(r > 0, (r - 1) * n2 + c, c - 1)
        parent[0] = -1
        return parent.astype(np.int64)
    if name.startswith("star:"):
        try:
            centre = int(name[5:])
        except ValueError:
            raise ParameterError("trees", f"trees: a star is 'star:<flat cell index>', got {name!r}") from None
        if not 0 <= centre < N:
            raise ParameterError("trees", f"trees: star centre {centre} is outside the domain's 0 .. {N - 1}")
        parent[:] = centre
        parent[centre] = -1
        return parent
    raise ParameterError("trees", f"trees: unknown tree {name!r}; allowed: 'path', 'snake', 'comb-rows', "
                                  "'comb-cols', 'star:<cell>', 'bfs', 'grid', 'complete', or a parent array")


def _bfs_parent(policy) -> np.ndarray:
    """A breadth-first spanning forest of the graph's listed edges (parent -1 at each component's root)."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    from scipy.sparse.csgraph import breadth_first_order

    domain, graph = policy.domain, policy.secrets
    N = int(domain.size)
    U, V = graph.iter_edges(domain)
    adj = sp.coo_matrix((np.ones(U.size), (U, V)), shape=(N, N)).tocsr()
    parent = np.full(N, -1, dtype=np.int64)
    seen = np.zeros(N, dtype=bool)
    for s in range(N):
        if seen[s]:
            continue
        order, pred = breadth_first_order(adj, s, directed=False, return_predecessors=True)
        seen[order] = True
        kids = order[1:]
        parent[kids] = pred[kids]
    return parent


def tree_edges(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kids = np.flatnonzero(parent >= 0).astype(np.int64)
    return kids, parent[kids].astype(np.int64)


def check_spanning(parent: np.ndarray, name: str) -> None:
    """Raise unless ``parent`` describes a forest (every cell reaches a root without a cycle)."""
    N = parent.size
    if parent.min(initial=-1) < -1 or parent.max(initial=-1) >= N or np.any(parent == np.arange(N)):
        raise ParameterError("trees", f"trees: {name}: parent entries must be -1 (a root) or another cell in "
                                      f"0 .. {N - 1}")
    anc = parent.copy()  # pointer doubling: after k rounds anc[v] is the 2^k-th ancestor (-1 beyond a root)
    for _ in range(int(math.ceil(math.log2(max(N, 2)))) + 2):
        if (anc < 0).all():
            return
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], -1)
    raise ParameterError("trees", f"trees: {name}: the parent array has a cycle (not a tree)")


def _valid_edges(policy, u: np.ndarray, v: np.ndarray) -> bool:
    return bool(u.size == 0 or policy.secrets.edge_mask(policy.domain, u, v).all())


def _grid_edges(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """All pairs of cells that differ by 1 in exactly one axis (the axis-neighbour edges)."""
    idx = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    us, vs = [], []
    for a in range(len(shape)):
        lo = [slice(None)] * len(shape)
        hi = [slice(None)] * len(shape)
        lo[a], hi[a] = slice(0, -1), slice(1, None)
        us.append(idx[tuple(lo)].reshape(-1))
        vs.append(idx[tuple(hi)].reshape(-1))
    return np.concatenate(us), np.concatenate(vs)


def spanning_trees(policy, names=None) -> list[tuple[str, np.ndarray]]:
    """Spanning trees of the policy's secret graph, as parent arrays (the trees :func:`._bounds.linear_lower_bound` tries).

    Parameters
    ----------
    policy : Policy
        Without public constraints.
    names : sequence, optional
        Tree names: ``"path"`` (flat order), ``"snake"`` (boustrophedon,
        2-D), ``"comb-rows"`` (spine down column 0, teeth along the rows),
        ``"comb-cols"`` (spine along row 0, teeth down the columns),
        ``"star:<flat cell>"``, ``"bfs"`` (a breadth-first spanning forest
        of the graph's listed edges, domains of at most 4096 cells), or
        ``(name, parent)`` pairs with a parent array of their own.  Default:
        every named tree that fits the domain (path, snake and combs on 2-D,
        stars at cell 0 and at the centre) whose edges are all edges of the
        graph; ``"bfs"`` when none is.

    Returns
    -------
    list of (str, numpy.ndarray)
        ``(description, parent)``: ``parent[v]`` the parent cell of ``v``
        (flat index), ``-1`` at the root.

    Raises
    ------
    ParameterError
        An unknown name, a tree that is not a forest, or (for names given)
        a tree with an edge that is not an edge of the secret graph.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used; every tree edge is checked with the graph's ``edge_mask``.

    Runtime
    -------
    O(N log N) per tree (the edge check and the cycle check).

    References
    ----------
    .. [1] Haney, Machanavajjhala, Ding. *Design of policy-aware differentially private algorithms.* PVLDB 9(4),
       2015, Sec 3 (transformational equivalence; summarised in 001 Sec 3).
    """
    policy = plain_policy(policy)
    shape = tuple(int(s) for s in policy.domain.shape)
    N = math.prod(shape)
    given = names is not None
    if names is None:
        names = ["path", "star:0", f"star:{_centre(shape)}"]
        if len(shape) == 2:
            names = ["snake", "comb-rows", "comb-cols"] + names
    out = []
    for item in names:
        if isinstance(item, tuple) and len(item) == 2:
            name, parent = str(item[0]), np.asarray(item[1])
            if parent.shape != (N,) or parent.dtype.kind not in "iu":
                raise ParameterError("trees", f"trees: {name}: a parent array must be {N} integers, got "
                                              f"shape {parent.shape}, dtype {parent.dtype}")
            parent = parent.astype(np.int64)
        elif isinstance(item, str):
            name = item
            if name in ("grid", "complete", "graph"):
                continue  # edge sets, not trees
            parent = _bfs_parent(policy) if name == "bfs" else _tree_parent(shape, name)
        else:
            raise ParameterError("trees", f"trees: each entry must be a tree name or a (name, parent) pair, "
                                          f"got {item!r}")
        check_spanning(parent, name)
        u, v = tree_edges(parent)
        if not _valid_edges(policy, u, v):
            if given:
                raise ParameterError("trees", f"trees: {name}: some tree edge is not an edge of the secret graph "
                                              f"{policy.secrets!r} (the bound would not be valid)")
            continue
        out.append((_describe(name, shape, u.size), parent))
    if not out and not given and N <= 4096 and policy.secrets.has_edge(policy.domain):
        parent = _bfs_parent(policy)
        out.append((_describe("bfs", shape, int((parent >= 0).sum())), parent))
    return out


def _centre(shape: tuple[int, ...]) -> int:
    return int(np.ravel_multi_index(tuple(s // 2 for s in shape), shape))


def _describe(name: str, shape: tuple[int, ...], edges: int) -> str:
    if name == "path":
        return f"path in flat order ({edges} edges)" if len(shape) > 1 else f"line path ({edges} edges)"
    if name == "snake":
        return f"boustrophedon (snake) path along the rows ({edges} edges)"
    if name == "comb-rows":
        return f"comb: spine down column 0, teeth along the rows ({edges} edges)"
    if name == "comb-cols":
        return f"comb: spine along row 0, teeth down the columns ({edges} edges)"
    if name.startswith("star:"):
        c = int(name[5:])
        cell = np.unravel_index(c, shape)
        return f"star centred at cell {tuple(int(x) for x in cell)} ({edges} edges)"
    if name == "bfs":
        return f"breadth-first spanning forest of the graph ({edges} edges)"
    return f"{name} ({edges} edges)"


def edge_sets(policy, trees) -> list[EdgeSet]:
    """The candidate edge sets, each checked against the graph."""
    shape = tuple(int(s) for s in policy.domain.shape)
    N = math.prod(shape)
    graph = policy.secrets
    out: list[EdgeSet] = []
    names = None if trees is None else list(trees)
    for desc, parent in spanning_trees(policy, names):
        u, v = tree_edges(parent)
        centre = int(v[0]) if u.size and (v == v[0]).all() and u.size == N - 1 else -1
        kind = "star" if centre >= 0 and N > 2 else "tree"
        out.append(EdgeSet(desc, kind, u, v, int(u.size), centre))
    want_grid = (names is None and sum(s > 1 for s in shape) >= 2) or (names is not None and "grid" in names)
    if want_grid:
        u, v = _grid_edges(shape)
        if _valid_edges(policy, u, v):
            out.append(EdgeSet(f"all {u.size} axis-neighbour (grid) edges, uniform weights", "local", u, v,
                                int(u.size)))
        elif names is not None:
            raise ParameterError("trees", f"trees: 'grid': some axis-neighbour edge is not an edge of "
                                          f"{graph!r}")
    complete = graph.is_complete()
    want_complete = (names is None and complete) or (
        names is not None and ("complete" in names or ("graph" in names and complete)))
    if want_complete:
        if complete:
            out.append(EdgeSet(f"complete graph: all {N * (N - 1) // 2} pairs, uniform weights", "complete",
                                None, None, N * (N - 1) // 2))
        else:
            raise ParameterError("trees", f"trees: 'complete' needs the FullDomain secret graph, got {graph!r}")
    if not complete and (names is None or "graph" in names):
        out.extend(_graph_edge_sets(policy, shape, out, offsets=names is None))
    return out


def _graph_edge_sets(policy, shape: tuple[int, ...], have: list[EdgeSet], offsets: bool) -> list[EdgeSet]:
    """All edges of the graph (uniform weights) and, for distance thresholds, the edges of the longest offsets."""
    domain, graph = policy.domain, policy.secrets
    N = math.prod(shape)
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    parts = threshold_offsets(graph, domain)
    if parts is not None:
        parts = [(np.array(np.unravel_index(int(V[0]), shape)) - np.array(np.unravel_index(int(U[0]), shape)), U, V)
                 for _, U, V in parts if U.size]
        total = sum(U.size for _, U, _ in parts)
        cap = min(_GRAPH_EDGE_LIMIT, _GRAPH_EDGES_PER_VALUE * N) if offsets else _GRAPH_EDGE_LIMIT
        if len(parts) > 1 and total <= cap:
            found.append((f"all {total} edges of the graph, uniform weights",
                          np.concatenate([U for _, U, _ in parts]), np.concatenate([V for _, _, V in parts])))
        if offsets:
            longest = sorted((p for p in parts if int(np.abs(p[0]).sum()) > 1),
                             key=lambda p: -float(np.square(p[0]).sum()))[:2]
            for delta, U, V in longest:
                step = tuple(int(x) for x in delta) if len(shape) > 1 else int(delta[0])
                found.append((f"the {U.size} edges at offset {step}, uniform weights", U, V))
    elif N <= 4096:
        U, V = graph.iter_edges(domain)
        if U.size <= _GRAPH_EDGE_LIMIT:
            found.append((f"all {U.size} edges of the graph, uniform weights", U, V))
    out = []
    sizes = {e.size for e in have if e.kind in ("tree", "local")}
    for desc, U, V in found:
        if U.size == 0 or (U.size in sizes and U.size in (N - 1, _grid_size(shape))):
            continue  # the graph is a tree or the grid already listed
        if _valid_edges(policy, U, V):
            out.append(EdgeSet(desc, "edges", U.astype(np.int64), V.astype(np.int64), int(U.size)))
    return out


def _grid_size(shape: tuple[int, ...]) -> int:
    N = math.prod(shape)
    return sum(N - N // n for n in shape)
