"""Distance profiles of secret graphs: the distances a graph has on a domain, for the guarantee tables.

The distances ``d_G`` that occur, their diameter and an example pair at each
are found without building a ``|T| x |T|`` object:

* graphs whose ``d_G`` depends only on the per-attribute differences and
  grows with them (:class:`FullDomain`, :class:`Attribute`,
  :class:`DistanceThreshold`, :class:`Line`,
  :meth:`Partition.by_attributes` and intersections of these):
  along a chain of differences from 0 to the largest one, one bin at a
  time, ``d_G`` (the graph's own ``distance_index``) never falls and rises
  by at most 1 per step (a one-bin change of a movable attribute is an
  edge), so every distance up to the diameter ``d_G(largest difference)``
  occurs and a binary search finds a pair at each;
* partitions: ``d_G`` is 1 inside a block and infinite across blocks;
* an edge list (:class:`Custom`) that is a forest: two sweeps of
  breadth-first search per tree give each tree's diameter exactly, O(|E|);
* any other graph (other edge lists, ...) on at most
  :data:`SEARCH_LIMIT` values: breadth-first search (the graph's own
  ``distance_index``) from one value and then from the farthest value found
  (every distance up to the largest found occurs); exact over all pairs on
  at most :data:`EXACT_LIMIT` values, otherwise the table says which
  distances were not searched.

:func:`profile` returns a :class:`Profile` (the distances that occur,
examples, words); :func:`short_name` names a graph in a few words.  The
tables themselves are built in :mod:`blowfish_privacy.policy.guarantee`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Domain, Ordinal
from . import canonical as _canon
from .attribute import Attribute, FullDomain
from .base import SecretGraph
from .custom import Custom
from .partition import Partition
from .threshold import DistanceThreshold, Line

__all__ = ["EXACT_LIMIT", "SEARCH_LIMIT", "Profile", "profile", "short_name"]

#: Largest domain searched by breadth-first search for graphs without a closed form.
SEARCH_LIMIT = 2_000_000
#: Largest domain on which such a graph's diameter is found exactly (a search from every value).
EXACT_LIMIT = 256


# ---------------------------------------------------------------------------
# names and words
# ---------------------------------------------------------------------------
def short_name(graph: SecretGraph, domain: Domain) -> str:
    """A few words naming the graph for a table's title ("line", "grid", "distance threshold 4", ...)."""
    kind = type(graph)
    if kind is FullDomain:
        return "DP (full domain)"
    if kind is Line:
        return "line"
    if kind is DistanceThreshold:
        if graph.metric == "l1" and graph.theta == 1 and domain.ndim == 2:
            return "grid"
        metric = "" if domain.ndim == 1 else f" ({graph.metric.upper().replace('INF', 'inf')})"
        return f"distance threshold {graph.theta}{metric}"
    if kind is Attribute:
        return "attribute" if graph.c == 1 else f"attribute (c={graph.c})"
    if kind is Partition:
        return "partition"
    if kind is Custom:
        return "custom graph"
    return type(graph).__name__.lower()


def _span(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}..{hi}"


def _value_width(domain: Domain) -> list[int]:
    return [a.bin_width if isinstance(a, Ordinal) else 1 for a in domain.attributes]


def _record(domain: Domain, index: int) -> Any:
    return domain.record_of(int(index))


class Profile:
    """What the search found: distances that occur, examples, words."""

    def __init__(self) -> None:
        self.diameter: int | None = None
        self.exact = True
        self.max_found = 0  # every distance 1..max_found occurs
        self.unbounded = False
        self.unbounded_words = "values in different components of the graph"
        self.unbounded_pair: tuple | None = None
        self.notes: list[str] = []
        self.example = lambda d: None  # noqa: E731  d -> (x, y) records or None
        self.words = lambda d: "pairs at this distance"  # noqa: E731


# -- graphs whose distance is a monotone function of the differences --------
def _mono_profile(graph: SecretGraph, domain: Domain, caps: list[int]) -> Profile:
    """``caps[a]``: the most bins one edge moves attribute a alone (0: no edge changes it)."""
    prof = Profile()
    live = [a for a in range(domain.ndim) if caps[a] >= 1]
    dead = [a for a in range(domain.ndim) if caps[a] == 0 and domain.shape[a] >= 2]
    strides = domain.strides
    if dead:
        prof.unbounded = True
        a = dead[0]
        prof.unbounded_pair = (_record(domain, 0), _record(domain, strides[a]))
        names = ", ".join(domain.names[b] for b in dead)
        prof.unbounded_words = (f"values that differ in {names}" if type(graph) is Partition
                                else f"values that differ in {names} (no edge changes {'it' if len(dead) == 1 else 'them'})")
    if not live:
        return prof
    lengths = [domain.shape[a] - 1 for a in live]
    total = sum(lengths)
    bounds = np.cumsum([0] + lengths)

    def flat(p: np.ndarray) -> np.ndarray:
        # position p on the chain: the live axes filled in order, one bin at a time
        out = np.zeros(p.shape[0], dtype=np.int64)
        for k, a in enumerate(live):
            out += np.clip(p - bounds[k], 0, lengths[k]) * strides[a]
        return out

    def dist(p: np.ndarray) -> np.ndarray:
        return graph.distance_index(domain, np.zeros(p.shape[0], dtype=np.int64), flat(p))

    try:
        prof.diameter = int(dist(np.array([total]))[0])
    except (ValueError, NotImplementedError) as exc:
        prof.exact = False
        prof.notes.append(f"distances not computed: {exc}")
        return prof
    prof.max_found = prof.diameter

    def example(d: int):
        lo, hi = 1, total  # smallest chain position with d_G >= d: d_G there is exactly d
        while lo < hi:
            mid = (lo + hi) // 2
            if dist(np.array([mid]))[0] >= d:
                hi = mid
            else:
                lo = mid + 1
        return (_record(domain, 0), _record(domain, int(flat(np.array([lo]))[0])))

    prof.example = example
    prof.words = _mono_words(graph, domain, caps, live)
    return prof


def _mono_words(graph: SecretGraph, domain: Domain, caps: list[int], live: list[int]):
    kind = type(graph)
    widths = _value_width(domain)
    generic = lambda d: "e.g. the example pair"  # noqa: E731
    if kind is FullDomain:
        return lambda d: "any two different values"
    if kind is Attribute:
        c, m = graph.c, len(live)
        def words(d):
            lo, hi = c * (d - 1) + 1, min(c * d, m)
            return f"values differing in {_span(lo, hi)} attribute{'s' if hi > 1 else ''}"
        return words
    if kind is Partition:  # by attributes: one block per value of the named attributes
        fixed = [domain.names[p] for p in graph.agreement_cliques(domain)[0]]  # the attributes a block fixes
        return lambda d: ("values that agree on " + ", ".join(fixed)) if fixed else "any two different values"
    if kind not in (DistanceThreshold, Line):
        return generic
    if domain.ndim == 1:
        u, n, w = caps[0], domain.shape[0] - 1, widths[0]

        def words(d):
            lo, hi = ((d - 1) * u + 1) * w, min(d * u, n) * w
            if kind is Line:
                return f"values {lo} apart"
            return f"|x - y| in {_span(lo, hi)}" + (" (bin lower edges)" if w != 1 else "")
        return words
    live_w = {widths[a] for a in live}
    if len(live_w) != 1:
        return generic
    w = live_w.pop()
    # bins one step may cover in total (L1) or per attribute (Linf)
    step = int(graph.threshold_steps(domain).theta // w)
    reach = sum(domain.shape[a] - 1 for a in live) if graph.metric == "l1" else max(domain.shape[a] - 1 for a in live)
    if graph.metric == "l2":
        return generic
    metric = "L1" if graph.metric == "l1" else "Linf"

    def words(d):
        lo, hi = ((d - 1) * step + 1) * w, min(d * step, reach) * w
        if step == 1 and w == 1:
            return f"cells {d} step{'s' if d > 1 else ''} apart ({metric})"
        return f"{metric} distance in {_span(lo, hi)}"
    return words


# -- partitions: cliques ----------------------------------------------------
def _partition_profile(graph: Partition, domain: Domain) -> Profile:
    bound = graph._binding(domain)
    prof = Profile()
    if graph.mode == "attributes":
        return _mono_profile(graph, domain, _canon.mono_of(graph, domain).caps(domain))
    size = domain.size
    same = diff = None
    if graph.mode == "intervals":
        starts = [int(s) for s in bound]
        spans = [(s, e) for s, e in zip(starts[:-1], starts[1:]) if e > s]
        wide = [(s, e) for s, e in spans if e - s >= 2]
        if wide:
            same = (wide[0][0], wide[0][0] + 1)
        if len(spans) >= 2:
            diff = (spans[0][0], spans[1][0])
        prof.unbounded_words = "values in different intervals"
        words = "two values in the same interval"
    else:
        block_of = bound.block_of
        sizes = bound.sizes
        big = np.flatnonzero(sizes >= 2)
        if big.size:
            members = np.flatnonzero(block_of == big[0])[:2]
            same = (int(members[0]), int(members[1]))
        other = np.flatnonzero(block_of != block_of[0])
        if other.size:
            diff = (0, int(other[0]))
        prof.unbounded_words = "values in different blocks"
        words = "two values in the same block"
    if same is not None:
        prof.diameter = prof.max_found = 1
        pair = (_record(domain, same[0]), _record(domain, same[1]))
        prof.example = lambda d: pair
        prof.words = lambda d: words
    if diff is not None and size >= 2:
        prof.unbounded = True
        prof.unbounded_pair = (_record(domain, diff[0]), _record(domain, diff[1]))
    return prof


# -- any other graph: breadth-first search ----------------------------------
def _search_profile(graph: SecretGraph, domain: Domain) -> Profile:
    prof = Profile()
    size = domain.size
    if size > SEARCH_LIMIT:
        prof.exact = False
        prof.notes.append(f"distances not searched: {type(graph).__name__} has no closed form here and the domain "
                          f"has {size:,} values (the search stops at {SEARCH_LIMIT:,})")
        return prof
    everything = np.arange(size, dtype=np.int64)

    def from_(v: int) -> np.ndarray:
        return graph.distance_index(domain, np.full(size, v, dtype=np.int64), everything)

    try:
        v0 = 0
        if type(graph) is Custom:
            lo = graph._binding(domain).lo
            v0 = int(lo[0]) if lo.shape[0] else 0
        d0 = from_(v0)
        if not (np.isfinite(d0) & (d0 > 0)).any() and graph.has_edge(domain):
            # value 0 is on no edge: start from a value that is
            for v in np.unique(np.linspace(0, size - 1, num=min(size, 64)).astype(np.int64)).tolist():
                dv = from_(v)
                if (np.isfinite(dv) & (dv > 0)).any():
                    v0, d0 = v, dv
                    break
        prof.unbounded = bool(np.isinf(d0).any())
        if prof.unbounded:
            prof.unbounded_pair = (_record(domain, v0), _record(domain, int(np.argmax(np.isinf(d0)))))
        fin0 = np.where(np.isinf(d0), -1, d0)
        v1 = int(np.argmax(fin0))
        d1 = from_(v1)
        fin1 = np.where(np.isinf(d1), -1, d1)
        best_src, best = (v1, fin1) if fin1.max() >= fin0.max() else (v0, fin0)
        prof.max_found = int(best.max())
        if size <= EXACT_LIMIT:
            for v in range(size):
                dv = from_(v)
                dv = np.where(np.isinf(dv), -1, dv)
                if dv.max() > prof.max_found:
                    best_src, best, prof.max_found = v, dv, int(dv.max())
        else:
            prof.exact = False
            prof.notes.append(
                f"distances found by breadth-first search from two values ({_record(domain, v0)!r} and "
                f"{_record(domain, v1)!r}); every distance up to {prof.max_found} occurs, larger ones were not searched")
    except (ValueError, NotImplementedError) as exc:
        prof.exact = False
        prof.notes.append(f"distances not computed: {exc}")
        return prof
    prof.diameter = prof.max_found if prof.max_found >= 1 else None

    def example(d: int):
        j = int(np.argmax(best == d))
        return (_record(domain, best_src), _record(domain, j))

    prof.example = example
    prof.words = lambda d: f"values {d} edge{'s' if d > 1 else ''} apart"
    return prof


def _forest_profile(graph: Custom, domain: Domain) -> Profile | None:
    """Exact distances of an edge list that is a forest: two sweeps of breadth-first search per tree.

    In a tree the farthest value from any value is an end of a longest
    path, so a second search from it finds the tree's diameter; O(|E|).
    None when the edges close a cycle (or there are none).
    """
    bound = graph._binding(domain)
    nv, ne = bound.verts.shape[0], bound.lo.shape[0]
    if ne == 0:
        return None
    indptr, adj = bound.indptr.tolist(), bound.adj.tolist()
    seen = [False] * nv
    parts = 0
    best: tuple = (-1, 0, {})

    def sweep(start: int) -> dict:
        dist = {start: 0}
        frontier = [start]
        while frontier:
            nxt = []
            for v in frontier:
                for w in adj[indptr[v]:indptr[v + 1]]:
                    if w not in dist:
                        dist[w] = dist[v] + 1
                        nxt.append(w)
            frontier = nxt
        return dist

    for s in range(nv):
        if seen[s]:
            continue
        parts += 1
        first = sweep(s)
        for v in first:
            seen[v] = True
        far = max(first, key=first.get)
        second = sweep(far)
        ecc = max(second.values())
        if ecc > best[0]:
            best = (ecc, far, second)
    if ne != nv - parts:
        return None
    prof = Profile()
    diam, src, dist = best
    prof.diameter = prof.max_found = diam
    verts = bound.verts
    if parts > 1 or nv < domain.size:
        prof.unbounded = True
        if nv < domain.size:  # a value on no edge
            on = np.zeros(domain.size, dtype=bool)
            on[verts] = True
            lone = int(np.argmin(on))
            prof.unbounded_pair = (_record(domain, int(verts[0])), _record(domain, lone))
        else:
            other = next(v for v in range(nv) if v not in dist)
            prof.unbounded_pair = (_record(domain, int(verts[src])), _record(domain, int(verts[other])))
    by_d: dict = {}
    for v, d in dist.items():
        by_d.setdefault(d, v)
    prof.example = lambda d: (_record(domain, int(verts[src])), _record(domain, int(verts[by_d[d]])))
    prof.words = lambda d: f"values {d} edge{'s' if d > 1 else ''} apart"
    return prof


def profile(graph: SecretGraph, domain: Domain) -> Profile:
    """What a guarantee table needs of ``graph`` on ``domain``, by the first way of the module docstring that fits."""
    if type(graph) is Partition:
        return _partition_profile(graph, domain)
    if type(graph) is Custom:
        prof = _forest_profile(graph, domain)
        if prof is not None:
            return prof
    form = _canon.monotone_form(graph, domain)
    if form is not None:
        return _mono_profile(graph, domain, form.caps(domain))
    return _search_profile(graph, domain)
