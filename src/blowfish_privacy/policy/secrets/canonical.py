"""Canonical forms of the library's secret graphs, for containment and intersections.

Every built-in graph, bound to a domain, has one of four forms:

:class:`Mono`
    A *difference-monotone* graph: ``(x, y)`` is an edge iff ``x != y`` and
    the vector of per-attribute differences ``delta`` (bin-value differences
    of ordinal attributes; 0 or 1 for categorical ones) lies in a set that
    is closed under lowering any entry.  :class:`FullDomain`,
    :class:`Attribute` (at most ``c`` non-zero entries),
    :meth:`Partition.by_attributes` (zero on the named attributes),
    :class:`DistanceThreshold` and :class:`Line` (``metric(delta) <=
    theta``) are of this kind, and so is any intersection of them: the
    conjunction of the conditions.  Such a graph is symmetric under
    translations of the domain, and its projection onto a subset of the
    attributes is the same conditions on those attributes (the dropped ones
    may be kept equal, which only lowers ``delta``).
:class:`Band`
    On a 1-D domain: consecutive intervals of codes, and codes of one
    interval at most ``u`` bins apart are joined.  A 1-D monotone graph is
    one interval; :meth:`Partition.intervals` is ``u = size - 1``.
:class:`Cliques`
    A clique on each of a list of sets of values (listed partition blocks,
    and their projections, which may overlap).
:class:`Edges`
    An explicit edge list (:class:`Custom`, and intersections that hold a
    :class:`Custom` or a listed :class:`Partition`).

The forms answer for edges in closed form without enumerating the domain;
:func:`form_of` finds the form of a graph (or raises :class:`Undecided`
for graphs it does not know).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..domain import Domain, Ordinal
from . import limits as _limits
from .attribute import Attribute, FullDomain
from .custom import Custom
from .lattice import ceil_div, within
from .partition import Partition
from .threshold import DistanceThreshold, Line


class Undecided(Exception):
    """No closed form and no bounded search answers the question; the message says why."""


def widths_of(domain: Domain) -> list[int]:
    """Bin width of each attribute (1 for categorical ones)."""
    return [a.bin_width if isinstance(a, Ordinal) else 1 for a in domain.attributes]


def flat_of(domain: Domain, codes: Any) -> int:
    """Flat index (a Python int) of one vector of per-attribute codes."""
    return sum(int(c) * s for c, s in zip(codes, domain.strides))


def codes_of(domain: Domain, index: int) -> list[int]:
    """Per-attribute codes of one flat index."""
    return [int(c) for c in domain._codes_unchecked(np.array([index], dtype=np.int64))[0]]


def isqrt_array(values: np.ndarray) -> np.ndarray:
    """Exact integer square roots of non-negative int64 (or Python int object) arrays."""
    if values.dtype == object:
        return np.array([math.isqrt(int(v)) for v in values.tolist()], dtype=object)
    root = np.floor(np.sqrt(values.astype(np.float64))).astype(np.int64)
    for _ in range(2):  # correct the rounding of the float square root
        root -= root * root > values
        root += (root + 1) * (root + 1) <= values
    return root


# ---------------------------------------------------------------------------
# the monotone form
# ---------------------------------------------------------------------------
class Mono:
    """A difference-monotone graph: fixed attributes, at most ``c`` changes, thresholds.

    Parameters
    ----------
    fixed : frozenset of int
        Attribute positions an edge may not change.
    c : int or None
        Largest number of attributes an edge may change (None: no limit).
    thr : dict
        ``{metric: theta}`` (Fractions); an edge has ``metric(delta) <=
        theta`` for each.  Thresholds implied by another one are dropped
        (``linf <= l2 <= l1``).
    """

    __slots__ = ("fixed", "c", "thr")

    def __init__(self, fixed: frozenset = frozenset(), c: int | None = None, thr: dict | None = None) -> None:
        self.fixed = frozenset(fixed)
        self.c = c
        thr = dict(thr or {})
        if "l1" in thr:
            for other in ("l2", "linf"):
                if other in thr and thr[other] >= thr["l1"]:
                    del thr[other]
        if "l2" in thr and "linf" in thr and thr["linf"] >= thr["l2"]:
            del thr["linf"]
        self.thr = thr

    def __repr__(self) -> str:
        return f"Mono(fixed={sorted(self.fixed)}, c={self.c}, thr={ {k: str(v) for k, v in self.thr.items()} })"

    def merge(self, other: Mono) -> Mono:
        """The conjunction of two monotone conditions (the intersection of the graphs)."""
        thr = dict(self.thr)
        for metric, theta in other.thr.items():
            thr[metric] = min(theta, thr.get(metric, theta))
        cs = [c for c in (self.c, other.c) if c is not None]
        return Mono(self.fixed | other.fixed, min(cs) if cs else None, thr)

    def project(self, pos: list[int]) -> Mono:
        """The same conditions on the attributes at positions ``pos`` (in that order)."""
        return Mono(frozenset(b for b, p in enumerate(pos) if p in self.fixed), self.c, self.thr)

    def k(self, live: int) -> int:
        """Most attributes one edge can change among ``live`` movable ones."""
        return live if self.c is None else min(self.c, live)

    def caps(self, domain: Domain) -> list[int]:
        """Largest change in bins of each attribute alone along one edge (0: it never changes)."""
        out = []
        for a, attr in enumerate(domain.attributes):
            if a in self.fixed or attr.size < 2:
                out.append(0)
                continue
            u = attr.size - 1
            if self.thr:
                for theta in self.thr.values():
                    u = min(u, int(theta // attr.bin_width))
            out.append(u)
        return out

    def live(self, domain: Domain) -> list[int]:
        return [a for a, u in enumerate(self.caps(domain)) if u >= 1]

    def step_ok(self, domain: Domain, step: list[int]) -> bool:
        """Whether a vector of bin changes (>= 0, not all 0) is an edge's."""
        caps = self.caps(domain)
        if not any(step) or any(s < 0 or s > u for s, u in zip(step, caps)):
            return False
        if self.c is not None and sum(1 for s in step if s) > self.c:
            return False
        widths = widths_of(domain)
        vals = np.empty((1, len(step)), dtype=object)
        vals[0, :] = [w * s for w, s in zip(widths, step)]
        vmax = max(int(v) for v in vals[0])
        return all(bool(within(vals, m, t, vmax)[0]) for m, t in self.thr.items())

    def edge_mask(self, domain: Domain, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        delta = np.abs(domain._codes_unchecked(i) - domain._codes_unchecked(j))
        nz = delta > 0
        ok = nz.any(axis=1)
        if self.fixed:
            ok &= ~nz[:, sorted(self.fixed)].any(axis=1)
        if self.c is not None:
            ok &= nz.sum(axis=1) <= self.c
        if self.thr:
            vals = delta * np.array(widths_of(domain), dtype=np.int64)
            vmax = max(a.span for a in domain.attributes)
            for metric, theta in self.thr.items():
                ok &= within(vals, metric, theta, vmax)
        return ok


def mono_of(graph: Any, domain: Domain) -> Mono | None:
    """The monotone form of a graph already bound to ``domain``, or None if it is not monotone."""
    kind = type(graph)
    if kind is FullDomain:
        return Mono()
    if kind is Attribute:
        return Mono(c=graph.c)
    if kind is Partition and graph.mode == "attributes":
        return Mono(fixed=frozenset(graph._binding(domain)))
    if kind in (DistanceThreshold, Line):
        return Mono(thr={graph.metric: graph._theta})
    return None


def row_maxima(form: Mono, domain: Domain, limit: int) -> np.ndarray:
    """Edge steps that dominate every edge step of ``form`` on ``domain``.

    Every feasible vector of bin changes ``s`` is below (entrywise) one of
    the returned rows, each itself feasible and non-zero: for each setting
    of all attributes but the one with the largest cap, the largest feasible
    change of that one.  A condition that grows with every entry (a metric
    above a threshold, a weighted sum) is therefore met by some edge iff it
    is met by some row.

    Raises
    ------
    Undecided
        If there are more than ``limit`` rows.
    """
    caps = form.caps(domain)
    m = domain.ndim
    live = [a for a in range(m) if caps[a] >= 1]
    if not live:
        return np.zeros((0, m), dtype=np.int64)
    k = form.k(len(live))
    last = max(live, key=lambda a: (caps[a], -a))
    others = [a for a in live if a != last]
    count = math.prod(caps[a] + 1 for a in others)
    if count > limit:
        raise Undecided(
            f"the exact search would visit {count} combinations of changes, more than the limit of {limit}"
        )
    widths = widths_of(domain)
    big = max(widths[a] * caps[a] for a in live) ** 2 * m >= _limits.SAFE
    dtype = object if big else np.int64
    if others:
        grid = np.indices([caps[a] + 1 for a in others], dtype=np.int64).reshape(len(others), -1).T
    else:
        grid = np.zeros((1, 0), dtype=np.int64)
    vals = grid.astype(dtype) * np.array([widths[a] for a in others], dtype=dtype)
    nz = (grid > 0).sum(axis=1)
    ok = nz <= k
    reach = np.full(grid.shape[0], caps[last], dtype=dtype)
    w_last = widths[last]
    for metric, theta in form.thr.items():
        if metric == "linf":
            continue  # already in the caps
        if metric == "l1":
            spent = vals.sum(axis=1) if vals.shape[1] else np.zeros(grid.shape[0], dtype=dtype)
            budget = math.floor(theta) - spent
            fits = np.asarray(budget >= 0, dtype=bool)
            room = np.where(fits, budget, 0) // w_last
        else:
            spent = (vals * vals).sum(axis=1) if vals.shape[1] else np.zeros(grid.shape[0], dtype=dtype)
            budget = math.floor(theta * theta) - spent
            fits = np.asarray(budget >= 0, dtype=bool)
            room = isqrt_array(np.where(fits, budget, 0).astype(dtype)) // w_last
        ok &= fits
        reach = np.minimum(reach, room)
    reach = np.where(nz < k, reach, 0)
    steps = np.zeros((grid.shape[0], m), dtype=np.int64)
    steps[:, others] = grid
    steps[:, last] = np.asarray(reach, dtype=np.int64)
    keep = ok & steps.any(axis=1)
    return steps[keep]


# ---------------------------------------------------------------------------
# the 1-D band form
# ---------------------------------------------------------------------------
class Band:
    """Intervals of codes ``[starts[k], starts[k+1])`` with edges of at most ``u`` bins inside one.

    ``starts`` is strictly increasing, from 0 to the domain size.
    """

    __slots__ = ("starts", "u")

    def __init__(self, starts: np.ndarray, u: int) -> None:
        self.starts = np.unique(np.asarray(starts, dtype=np.int64))
        self.u = int(u)

    def __repr__(self) -> str:
        return f"Band(starts={self.starts.tolist()}, u={self.u})"

    def merge(self, other: Band) -> Band:
        return Band(np.union1d(self.starts, other.starts), min(self.u, other.u))

    def interval(self, codes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.starts, codes, side="right") - 1

    def spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, end and largest edge length (in bins) of every interval with an edge."""
        a, b = self.starts[:-1], self.starts[1:]
        reach = np.minimum(self.u, b - a - 1)
        keep = reach >= 1
        return a[keep], b[keep], reach[keep]

    def has_edge(self) -> bool:
        return bool(self.spans()[0].shape[0])

    def edge_mask(self, domain: Domain, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        gap = np.abs(i - j)
        return (self.interval(i) == self.interval(j)) & (gap >= 1) & (gap <= self.u)


def band_of_mono(form: Mono, domain: Domain) -> Band:
    return Band(np.array([0, domain.size], dtype=np.int64), form.caps(domain)[0])


def band_of(graph: Any, domain: Domain) -> Band | None:
    """The band form of a graph bound to a 1-D ``domain`` (None if it has none)."""
    form = mono_of(graph, domain)
    if form is not None:
        return band_of_mono(form, domain)
    if type(graph) is Partition and graph.mode == "intervals":
        return Band(graph._binding(domain), domain.size - 1)
    return None


# ---------------------------------------------------------------------------
# explicit forms
# ---------------------------------------------------------------------------
class Cliques:
    """A clique on each set of flat indices; ``pre`` gives, for each member, a value it comes from."""

    __slots__ = ("sets", "pre")

    def __init__(self, sets: list[np.ndarray], pre: list[np.ndarray]) -> None:
        self.sets = sets
        self.pre = pre

    def pair_count(self) -> int:
        return sum(s.shape[0] * (s.shape[0] - 1) // 2 for s in self.sets)

    def has_edge(self) -> bool:
        return any(s.shape[0] >= 2 for s in self.sets)


class Edges:
    """An explicit edge list ``(pu[k], pv[k])``, each coming from the edge ``(xi[k], xj[k])``."""

    __slots__ = ("pu", "pv", "xi", "xj")

    def __init__(self, pu: np.ndarray, pv: np.ndarray, xi: np.ndarray, xj: np.ndarray) -> None:
        self.pu, self.pv, self.xi, self.xj = pu, pv, xi, xj

    def has_edge(self) -> bool:
        return bool(self.pu.shape[0])


def blocks_of(graph: Partition, domain: Domain) -> list[np.ndarray]:
    block_of = graph._binding(domain).block_of
    order = np.argsort(block_of, kind="stable")
    cuts = np.flatnonzero(np.diff(block_of[order])) + 1
    return np.split(order.astype(np.int64), cuts)


def pair_chunks(members: np.ndarray, max_pairs: int):
    """All pairs ``(members[a], members[b])``, ``a < b``, a block of rows at a time."""
    n = members.shape[0]
    rows = max(1, max_pairs // max(n, 1))
    for start in range(0, n - 1, rows):
        stop = min(n - 1, start + rows)
        a = np.repeat(np.arange(start, stop, dtype=np.int64), n - 1 - np.arange(start, stop))
        b = np.concatenate([np.arange(r + 1, n, dtype=np.int64) for r in range(start, stop)])
        yield members[a], members[b]


def form_of(graph: Any, domain: Domain) -> Any:
    """The canonical form of a graph on ``domain`` (validated there first).

    Raises
    ------
    Undecided
        For a graph class the library does not know, or an intersection
        whose edges would take too long to list.
    """
    bound = graph._binding(domain)
    # an Intersection (its module imports this one; it is known by its spec name and its own form)
    if getattr(type(graph), "spec_name", None) == "intersection" and hasattr(graph, "_form"):
        form = graph._form(domain, bound)  # cached with the binding
        if form is None:
            raise Undecided(bound.undecided)
        return form
    form = mono_of(graph, domain)
    if form is not None:
        return form
    if type(graph) is Partition and graph.mode == "intervals":
        return band_of(graph, domain)
    if type(graph) is Partition:
        blocks = blocks_of(graph, domain)
        return Cliques(blocks, blocks)
    if type(graph) is Custom:
        bound = graph._binding(domain)
        return Edges(bound.lo, bound.hi, bound.lo, bound.hi)
    raise Undecided(f"{graph!r} is not one of the library's secret graphs")


def monotone_form(graph: Any, domain: Domain) -> Mono | None:
    """The :class:`Mono` form of a graph on ``domain`` (intersections included), or None when it has none.

    None also when the form cannot be found (a graph the library does not
    know, an intersection too large to list): use the generic path then.
    """
    try:
        form = form_of(graph, domain)
    except Undecided:
        return None
    return form if isinstance(form, Mono) else None


def _filtered(graph: Any, domain: Domain, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = graph.edge_mask(domain, i, j) if i.shape[0] else np.zeros(0, dtype=bool)
    return i[keep], j[keep]


def intersection_form(graph: Any, domain: Domain) -> Any:
    """The form of an :class:`Intersection` from its members' forms (raises :class:`Undecided`)."""
    members = graph.graphs
    custom = [g for g in members if type(g) is Custom]
    if custom:
        base = min(custom, key=lambda g: g._binding(domain).lo.shape[0])
        bound = base._binding(domain)
        lo, hi = _filtered(graph, domain, bound.lo, bound.hi)
        return Edges(lo, hi, lo, hi)
    listed = [g for g in members if type(g) is Partition and g.mode == "blocks"]
    if listed:
        blocks = min((blocks_of(g, domain) for g in listed), key=lambda bs: sum(b.shape[0] ** 2 for b in bs))
        total = sum(b.shape[0] * (b.shape[0] - 1) // 2 for b in blocks)
        if total > _limits.PAIR_LIMIT:
            raise Undecided(
                f"listing the edges of {graph!r} means testing {total} pairs inside listed blocks, more than "
                f"the limit of {_limits.PAIR_LIMIT}"
            )
        parts_i, parts_j = [], []
        for block in blocks:
            for i, j in pair_chunks(block, _limits.PAIRS_PER_CHUNK):
                i, j = _filtered(graph, domain, i, j)
                parts_i.append(i)
                parts_j.append(j)
        lo = np.concatenate(parts_i) if parts_i else np.zeros(0, dtype=np.int64)
        hi = np.concatenate(parts_j) if parts_j else np.zeros(0, dtype=np.int64)
        return Edges(lo, hi, lo, hi)
    monos = [mono_of(g, domain) for g in members]
    if all(f is not None for f in monos):
        out = monos[0]
        for f in monos[1:]:
            out = out.merge(f)
        return out
    if domain.ndim == 1:
        bands = [band_of(g, domain) for g in members]
        if all(b is not None for b in bands):
            out = bands[0]
            for b in bands[1:]:
                out = out.merge(b)
            return out
    unknown = [g for g in members if type(g) not in (FullDomain, Attribute, Partition, DistanceThreshold, Line, Custom)]
    raise Undecided(f"{unknown[0] if unknown else graph!r} is not one of the library's secret graphs")


# ---------------------------------------------------------------------------
# distances of the monotone form
# ---------------------------------------------------------------------------
def mono_distance(form: Mono, delta: np.ndarray, caps: list[int | None]) -> tuple[np.ndarray, np.ndarray]:
    """Shortest-path lengths of a monotone graph, in closed form where one is proven.

    Shortest paths may be taken monotone (the set of edge steps is closed
    under lowering entries), so ``d_G(delta)`` is the fewest feasible steps
    summing to ``delta``.  Closed forms: no threshold, ``ceil(h / c)``;
    only Linf thresholds, ``max(max_a t_a, ceil(sum_a t_a / c))`` with
    ``t_a = ceil(delta_a / cap_a)`` (each attribute needs ``t_a`` steps, a
    step moves at most ``c`` attributes, and McNaughton's wrap-around
    schedule meets both bounds); ``c = 1``, ``sum_a t_a``.

    Parameters
    ----------
    delta : (n, m) int64 array
        Absolute differences in bins.
    caps : list
        Largest change of each attribute alone in one step (0 where it
        never changes, None where unbounded).

    Returns
    -------
    out : (n,) float64 array
        Distances; NaN where no closed form applies.
    todo : (n,) bool array
        Where ``out`` is NaN.
    """
    n, m = delta.shape
    out = np.full(n, np.nan)
    nz = delta > 0
    h = nz.sum(axis=1)
    out[h == 0] = 0.0
    dead_axes = [a for a in range(m) if caps[a] == 0]
    dead = nz[:, dead_axes].any(axis=1) if dead_axes else np.zeros(n, dtype=bool)
    out[dead] = math.inf
    rows = (h > 0) & ~dead
    if not rows.any():
        return out, np.zeros(n, dtype=bool)
    steps = np.zeros((n, m), dtype=np.int64)
    for a in range(m):
        if caps[a] is None:
            steps[:, a] = nz[:, a]
        elif caps[a] > 0:
            steps[:, a] = ceil_div(delta[:, a], min(caps[a], _limits.SAFE))
    c = form.c if form.c is not None else m
    metrics = set(form.thr)
    if not metrics:
        out[rows] = ceil_div(h[rows], c)
    elif metrics == {"linf"}:
        t = steps[rows]
        out[rows] = np.maximum(t.max(axis=1), ceil_div(t.sum(axis=1), c))
    elif c == 1:
        out[rows] = steps[rows].sum(axis=1)
    return out, np.isnan(out)


def single_threshold(form: Mono) -> tuple[str, Fraction] | None:
    """The one threshold of ``form`` when it has exactly one."""
    if len(form.thr) == 1:
        return next(iter(form.thr.items()))
    return None
