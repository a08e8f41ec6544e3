"""Containment of secret graphs across a projection: :func:`uncovered_pair`.

A dataset is registered with a protection policy, a secret graph ``G_d``
on its whole domain.  A release computes a function of each record's
projection onto some of the attributes and is ``(eps, G_r)``-private for a
secret graph ``G_r`` on that sub-domain; on the whole domain it protects
every pair whose projections are equal or an edge of ``G_r``.  When that
lifted graph contains ``G_d`` the release is ``(eps, G_d)``-private (fewer
pairs to protect), so releases under different policies compose under
``G_d`` (DESIGN sec 6).

The question is decided without enumerating the domain for the library's
graphs (see :mod:`.canonical` for the forms that make this possible): the
edges of the inner graph are projected (a monotone graph projects to the
same conditions on the kept attributes; listed blocks and edges are
projected one by one) and compared with the outer graph's rule.  Where no
closed form applies, the pairs are enumerated when there are few enough;
otherwise the answer is refused, never guessed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Domain
from ...errors import UnsupportedPolicyError
from . import limits as _limits
from .attribute import FullDomain
from .base import SecretGraph
from .canonical import (
    Band,
    Cliques,
    Edges,
    Mono,
    Undecided,
    band_of,
    band_of_mono,
    codes_of,
    flat_of,
    form_of,
    mono_of,
    pair_chunks,
    row_maxima,
    widths_of,
)
from .custom import Custom
from .intersection import Intersection
from .lattice import within
from .partition import Partition

__all__ = ["uncovered_pair"]


def uncovered_pair(
    inner: SecretGraph, inner_domain: Domain, outer: SecretGraph, outer_domain: Domain
) -> tuple[tuple, tuple] | None:
    """An edge of ``inner`` that ``outer`` does not cover across the projection, or None.

    ``outer`` covers the edge ``(x, y)`` of ``inner`` when the projections
    of ``x`` and ``y`` onto the attributes of ``outer_domain`` are equal or
    an edge of ``outer``.  None therefore means that every pair ``inner``
    protects is protected by ``outer`` lifted to ``inner_domain``: an
    ``(eps, outer)``-private function of the projected records is
    ``(eps, inner)``-private.

    Parameters
    ----------
    inner : SecretGraph
        The graph that must be covered (a dataset's protection policy).
    inner_domain : Domain
        The domain of ``inner``.
    outer : SecretGraph
        The covering graph (a release's policy).
    outer_domain : Domain
        The domain of ``outer``: some of the attributes of ``inner_domain``
        (matched by name, in any order, with the same definitions).

    Returns
    -------
    tuple of two tuples, or None
        None when ``outer`` covers every edge of ``inner``; else one edge
        ``(x, y)`` of ``inner`` it does not cover, each a tuple of the
        values of every attribute of ``inner_domain`` (bin lower edges for
        ordinal attributes, labels for categorical ones).

    Raises
    ------
    TypeError
        If an argument is not a SecretGraph or a Domain.
    ValueError
        If an attribute of ``outer_domain`` is not an attribute of
        ``inner_domain`` with the same definition, or a graph does not fit
        its domain.
    UnsupportedPolicyError
        If no closed form decides the question and there are too many
        pairs of values to check them one by one
        (:data:`limits.PAIR_LIMIT`).

    Notes
    -----
    Decided in closed form, for domains of any size:

    * every pair of :class:`FullDomain`, :class:`Attribute`,
      :meth:`Partition.by_attributes`, :class:`DistanceThreshold` and
      :class:`Line` and intersections of them.  The inner graph projects to
      the same conditions on the kept attributes; each condition of the
      outer graph is checked on the largest edges of the inner one.  When an
      L1 or L2 threshold of the inner graph cuts a threshold of the outer
      one in another way than the norm inequalities settle (mixed bin
      widths, L2 inside L1, several thresholds), the largest edges are
      searched exactly up to :data:`limits.ENUM_LIMIT` combinations;
    * 1-D :meth:`Partition.intervals` and its intersections with those
      graphs, on either side (intervals inside intervals, longest edge);
    * listed :class:`Partition` blocks and :class:`Custom` edges on either
      side, through their listed values or edges; a large outer
      :class:`Custom` graph is answered without enumeration when some value
      has no listed edge.

    Otherwise (a class the library does not know, or a search beyond its
    limit) every pair of values is checked when there are at most
    :data:`limits.PAIR_LIMIT` of them; beyond that the question is refused
    with :class:`~blowfish_privacy.errors.UnsupportedPolicyError`, never
    answered with an unproven None.

    Examples
    --------
    >>> from blowfish_privacy.policy.domain import Categorical, Domain, Ordinal
    >>> from blowfish_privacy.policy.secrets import DistanceThreshold, Line, Partition
    >>> full = Domain([Ordinal("age", 0, 99), Categorical("sex", ["f", "m"])])
    >>> ages = Domain([Ordinal("age", 0, 99)])
    >>> dataset = Partition.by_attributes(["sex"])  # any change of age is secret
    >>> uncovered_pair(dataset, full, DistanceThreshold(5), ages)  # a release on age protecting 5 years
    ((0, 'f'), (99, 'f'))
    >>> uncovered_pair(dataset, full, Partition.by_attributes([]), ages) is None
    True
    >>> uncovered_pair(Line(), ages, DistanceThreshold(5), ages) is None
    True
    """
    for name, value, kind in (
        ("inner", inner, SecretGraph),
        ("inner_domain", inner_domain, Domain),
        ("outer", outer, SecretGraph),
        ("outer_domain", outer_domain, Domain),
    ):
        if not isinstance(value, kind):
            raise TypeError(f"{name} must be a {kind.__name__}, got {value!r} of type {type(value).__name__}")
    pos = _positions(inner_domain, outer_domain)
    for name, graph, dom, dname in (("inner", inner, inner_domain, "inner_domain"),
                                     ("outer", outer, outer_domain, "outer_domain")):
        try:
            graph.validate(dom)
        except ValueError as exc:
            raise ValueError(f"{name} {graph!r} does not fit {dname}: {exc}") from None
    pair = _decide(inner, inner_domain, outer, outer_domain, pos)
    if pair is None:
        return None
    return _record(inner_domain, pair[0]), _record(inner_domain, pair[1])


def _positions(inner_domain: Domain, outer_domain: Domain) -> list[int]:
    pos = []
    for attr in outer_domain.attributes:
        if attr.name not in inner_domain.names:
            raise ValueError(
                f"outer_domain: attribute {attr.name!r} is not an attribute of inner_domain "
                f"{list(inner_domain.names)}; outer_domain must use some of inner_domain's attributes"
            )
        p = inner_domain.position(attr.name)
        if inner_domain.attributes[p] != attr:
            raise ValueError(
                f"outer_domain: attribute {attr!r} differs from inner_domain's {inner_domain.attributes[p]!r}; "
                f"a projection keeps each attribute as it is (same range, bins or labels)"
            )
        pos.append(p)
    return pos


def _record(domain: Domain, index: int) -> tuple:
    value = domain.record_of(int(index))
    return value if isinstance(value, tuple) else (value,)


# ---------------------------------------------------------------------------
# driver
# ---------------------------------------------------------------------------
def _decide(inner, D: Domain, outer, Dp: Domain, pos: list[int]) -> tuple[int, int] | None:
    """A witness edge of ``inner`` as two flat indices of ``D``, or None."""
    if type(outer) is FullDomain:
        return None  # every pair of distinct values is an edge
    form = None
    try:
        form = _project(form_of(inner, D), D, Dp, pos)
        found = _find(form, Dp, outer)
        return None if found is None else _lift(form, D, Dp, pos, *found)
    except Undecided as exc:
        reason = str(exc)
    limit = _limits.PAIR_LIMIT
    if isinstance(form, (Mono, Band)) and Dp.size * (Dp.size - 1) // 2 <= limit:
        found = _scan(Dp, lambda i, j: form.edge_mask(Dp, i, j), Dp, outer, list(range(Dp.ndim)))
        return None if found is None else _lift(form, D, Dp, pos, *found)
    if D.size * (D.size - 1) // 2 <= limit:
        bound = inner._binding(D)
        return _scan(D, lambda i, j: inner._edge_mask(D, bound, i, j), Dp, outer, pos)
    raise UnsupportedPolicyError(
        f"cannot decide whether {outer!r} on the attributes {list(Dp.names)} contains {inner!r} on "
        f"{list(D.names)}; {reason}, and the {D.size} values of inner_domain are too many to check every "
        f"pair (at most {limit} pairs)"
    )


def _scan(D: Domain, mask, Dp: Domain, outer, pos: list[int]) -> tuple[int, int] | None:
    """Check every pair of ``D`` that ``mask`` calls an edge against ``outer`` on the projection."""
    size = D.size
    rows = max(1, _limits.PAIRS_PER_CHUNK // max(size, 1))
    cols = np.arange(size, dtype=np.int64)
    for start in range(0, size, rows):
        ii = np.arange(start, min(size, start + rows), dtype=np.int64)
        I = np.repeat(ii, size)
        J = np.tile(cols, ii.shape[0])
        keep = J > I
        I, J = I[keep], J[keep]
        if I.shape[0] == 0:
            continue
        edge = mask(I, J)
        I, J = I[edge], J[edge]
        pu, pv = _project_flat(D, Dp, pos, I), _project_flat(D, Dp, pos, J)
        moved = pu != pv
        I, J, pu, pv = I[moved], J[moved], pu[moved], pv[moved]
        if I.shape[0] == 0:
            continue
        bad = ~outer.edge_mask(Dp, pu, pv)
        if bad.any():
            k = int(np.argmax(bad))
            return int(I[k]), int(J[k])
    return None


def _project_flat(D: Domain, Dp: Domain, pos: list[int], idx: np.ndarray) -> np.ndarray:
    if D is Dp or (list(pos) == list(range(D.ndim)) and D == Dp):
        return idx
    codes = D._codes_unchecked(idx)[:, pos]
    return codes @ np.array(Dp.strides, dtype=np.int64)


def _project(form: Any, D: Domain, Dp: Domain, pos: list[int]) -> Any:
    """The inner graph's form moved to ``Dp``: the projections of its edges (pairs that stay apart)."""
    if isinstance(form, Mono):
        out = form.project(pos)
        return band_of_mono(out, Dp) if Dp.ndim == 1 else out
    if isinstance(form, Band):  # 1-D inner domain: the projection keeps its one attribute
        return form
    if isinstance(form, Cliques):
        sets, pre = [], []
        for members in form.sets:
            flat, first = np.unique(_project_flat(D, Dp, pos, members), return_index=True)
            sets.append(flat)
            pre.append(members[first])
        return Cliques(sets, pre)
    pu, pv = _project_flat(D, Dp, pos, form.pu), _project_flat(D, Dp, pos, form.pv)
    moved = pu != pv
    return Edges(pu[moved], pv[moved], form.xi[moved], form.xj[moved])


def _lift(form: Any, D: Domain, Dp: Domain, pos: list[int], u: int, v: int) -> tuple[int, int]:
    """An edge of the inner graph whose projection is ``(u, v)``."""
    if isinstance(form, (Mono, Band)):
        def embed(index: int) -> int:
            codes = [0] * D.ndim
            for b, c in enumerate(codes_of(Dp, index)):
                codes[pos[b]] = c
            return flat_of(D, codes)

        return embed(u), embed(v)
    if isinstance(form, Cliques):
        for members, pre in zip(form.sets, form.pre):
            a, b = np.searchsorted(members, [u, v])
            if a < members.shape[0] and b < members.shape[0] and members[a] == u and members[b] == v:
                return int(pre[a]), int(pre[b])
        raise AssertionError("no block holds the witness pair")
    hit = ((form.pu == u) & (form.pv == v)) | ((form.pu == v) & (form.pv == u))
    k = int(np.argmax(hit))
    return (int(form.xi[k]), int(form.xj[k])) if form.pu[k] == u else (int(form.xj[k]), int(form.xi[k]))


# ---------------------------------------------------------------------------
# the projected inner form against the outer graph
# ---------------------------------------------------------------------------
def _find(P: Any, Dp: Domain, O: SecretGraph) -> tuple[int, int] | None:
    """A pair ``(u, v)`` of ``Dp``, an edge of the form ``P``, that is not an edge of ``O``; or None."""
    if isinstance(P, Edges):
        return _edges_find(P, Dp, O)
    if isinstance(P, Cliques) and P.pair_count() <= _limits.PAIR_LIMIT:
        return _cliques_pairs_find(P, Dp, O)
    if isinstance(P, Mono) and not P.live(Dp):
        return None
    if isinstance(P, Band) and not P.has_edge():
        return None
    kind = type(O)
    if kind is Intersection:
        for member in O.graphs:
            found = _find(P, Dp, member)
            if found is not None:
                return found
        return None
    if kind is FullDomain:
        return None
    if Dp.ndim == 1:
        band = band_of(O, Dp)
        if band is not None:
            return _vs_band(P, Dp, band)
    else:
        mono = mono_of(O, Dp)
        if mono is not None:
            return _vs_mono(P, Dp, mono)
    if kind is Partition and O.mode == "blocks":
        return _vs_blocks(P, Dp, O._binding(Dp).block_of)
    if kind is Custom:
        return _vs_custom(P, Dp, O)
    raise Undecided(f"{O!r} is not one of the library's secret graphs")


def _edges_find(P: Edges, Dp: Domain, O: SecretGraph) -> tuple[int, int] | None:
    step = _limits.PAIRS_PER_CHUNK
    for start in range(0, P.pu.shape[0], step):
        pu, pv = P.pu[start : start + step], P.pv[start : start + step]
        bad = ~O.edge_mask(Dp, pu, pv)
        if bad.any():
            k = int(np.argmax(bad))
            return int(pu[k]), int(pv[k])
    return None


def _cliques_pairs_find(P: Cliques, Dp: Domain, O: SecretGraph) -> tuple[int, int] | None:
    for members in P.sets:
        for pu, pv in pair_chunks(members, _limits.PAIRS_PER_CHUNK):
            bad = ~O.edge_mask(Dp, pu, pv)
            if bad.any():
                k = int(np.argmax(bad))
                return int(pu[k]), int(pv[k])
    return None


def _step_pair(Dp: Domain, step: list[int]) -> tuple[int, int]:
    """The edge from the first value of ``Dp`` by ``step`` bins."""
    return 0, flat_of(Dp, step)


def _unit(m: int, a: int, size: int = 1) -> list[int]:
    step = [0] * m
    step[a] = size
    return step


# -- outer: 1-D bands (intervals, 1-D monotone graphs) ------------------------------
def _vs_band(P: Any, Dp: Domain, O: Band) -> tuple[int, int] | None:
    if isinstance(P, Band):
        a, b, reach = P.spans()
        k = O.interval(a)
        end = O.starts[k + 1]
        cross = b > end  # the interval of P runs over a boundary of O
        long = reach > O.u
        bad = cross | long
        if not bad.any():
            return None
        r = int(np.argmax(bad))
        if cross[r]:
            return int(end[r]) - 1, int(end[r])
        return int(a[r]), int(a[r] + reach[r])
    # big listed blocks on one attribute: the extremes of each decide
    for members in P.sets:
        if members.shape[0] < 2:
            continue
        lo, hi = int(members.min()), int(members.max())
        if O.interval(np.array([lo]))[0] != O.interval(np.array([hi]))[0] or hi - lo > O.u:
            return lo, hi
    return None


# -- outer: listed blocks -------------------------------------------------------------
def _vs_blocks(P: Any, Dp: Domain, block_of: np.ndarray) -> tuple[int, int] | None:
    if isinstance(P, Band):
        ids = P.interval(np.arange(Dp.size, dtype=np.int64))
        bad = (block_of[1:] != block_of[:-1]) & (ids[1:] == ids[:-1]) & (P.u >= 1)
        if bad.any():
            k = int(np.argmax(bad))
            return k, k + 1
        return None
    if isinstance(P, Mono):
        # the components of a monotone graph are the classes of the attributes it never changes
        grid = block_of.reshape(Dp.shape)
        for a in P.live(Dp):
            bad = np.diff(grid, axis=a) != 0
            if bad.any():
                codes = [int(c) for c in np.unravel_index(int(np.argmax(bad)), bad.shape)]
                nxt = list(codes)
                nxt[a] += 1
                return flat_of(Dp, codes), flat_of(Dp, nxt)
        return None
    for members in P.sets:
        ids = block_of[members]
        if members.shape[0] >= 2 and (ids != ids[0]).any():
            return int(members[0]), int(members[int(np.argmax(ids != ids[0]))])
    return None


# -- outer: listed edges ------------------------------------------------------------------
def _vs_custom(P: Any, Dp: Domain, O: Custom) -> tuple[int, int] | None:
    verts = O._binding(Dp).verts
    limit = _limits.PAIR_LIMIT
    if isinstance(P, Mono):
        # every value has a neighbour along a movable attribute, so every value needs a listed edge
        a = P.live(Dp)[0]
        missing = _first_missing(verts, Dp.size)
        if missing is not None:
            codes = codes_of(Dp, missing)
            other = list(codes)
            other[a] += 1 if codes[a] + 1 < Dp.shape[a] else -1
            return missing, flat_of(Dp, other)
        if Dp.size * (Dp.size - 1) // 2 > limit:
            raise Undecided(f"checking every pair of the {Dp.size} values against {O!r} exceeds {limit} pairs")
        return _scan(Dp, lambda i, j: P.edge_mask(Dp, i, j), Dp, O, list(range(Dp.ndim)))
    if isinstance(P, Band):
        a, b, reach = P.spans()
        # every value of an interval with an edge has a neighbour in it, so it needs a listed edge
        for lo, hi in zip(a.tolist(), b.tolist()):
            inside = verts[(verts >= lo) & (verts < hi)]
            if inside.shape[0] < hi - lo:
                gaps = np.flatnonzero(inside != np.arange(lo, lo + inside.shape[0], dtype=np.int64))
                k = int(lo + gaps[0]) if gaps.shape[0] else lo + inside.shape[0]
                return (k, k + 1) if k + 1 < hi else (k - 1, k)
        # so the intervals hold at most 2 |E| values: few pairs to check
        work = 0
        for lo, hi, r in zip(a.tolist(), b.tolist(), reach.tolist()):
            for d in range(1, r + 1):
                i = np.arange(lo, hi - d, dtype=np.int64)
                bad = ~O.edge_mask(Dp, i, i + d)
                if bad.any():
                    k = int(np.argmax(bad))
                    return int(i[k]), int(i[k]) + d
                work += i.shape[0]
                if work > limit:
                    raise Undecided(f"checking the pairs against {O!r} exceeds {limit} pairs")
        return None
    work = 0
    for members in P.sets:
        for pu, pv in pair_chunks(members, _limits.PAIRS_PER_CHUNK):
            bad = ~O.edge_mask(Dp, pu, pv)
            if bad.any():
                k = int(np.argmax(bad))
                return int(pu[k]), int(pv[k])
            work += pu.shape[0]
            if work > limit:
                raise Undecided(f"checking the pairs against {O!r} exceeds {limit} pairs")
    return None


def _first_missing(verts: np.ndarray, size: int) -> int | None:
    """The smallest flat index in ``[0, size)`` absent from the sorted array ``verts``."""
    if verts.shape[0] >= size:
        return None
    gaps = np.flatnonzero(verts != np.arange(verts.shape[0], dtype=np.int64))
    return int(gaps[0]) if gaps.shape[0] else int(verts.shape[0])


# -- outer: monotone graphs on several attributes ----------------------------------------------
def _vs_mono(P: Any, Dp: Domain, O: Mono) -> tuple[int, int] | None:
    if isinstance(P, Mono):
        step = _mono_in_mono(P, Dp, O)
        return None if step is None else _step_pair(Dp, step)
    return _cliques_in_mono(P, Dp, O)


def _mono_in_mono(P: Mono, Dp: Domain, O: Mono) -> list[int] | None:
    """A vector of bin changes that is an edge step of ``P`` but not of ``O``, or None."""
    m = Dp.ndim
    caps = P.caps(Dp)
    live = [a for a in range(m) if caps[a] >= 1]
    if not live:
        return None
    k = P.k(len(live))
    widths = widths_of(Dp)
    # an attribute O keeps fixed that P can change
    for a in sorted(O.fixed):
        if caps[a] >= 1:
            return _unit(m, a)
    # more changed attributes than O allows: the narrowest bins change most cheaply
    if O.c is not None and O.c < k:
        step = [0] * m
        for a in sorted(live, key=lambda a: (widths[a], a))[: O.c + 1]:
            step[a] = 1
        if P.step_ok(Dp, step):
            return step
    for metric, theta in O.thr.items():
        step = _threshold_violation(P, Dp, caps, live, k, widths, metric, theta)
        if step is not None:
            return step
    return None


def _exceeds(metric: str, theta, values: list[int]) -> bool:
    vals = np.empty((1, len(values)), dtype=object)
    vals[0, :] = values
    return not bool(within(vals, metric, theta, max(values, default=0))[0])


def _threshold_violation(P: Mono, Dp: Domain, caps, live, k, widths, metric: str, theta) -> list[int] | None:
    """An edge step of ``P`` farther than ``theta`` in ``metric`` (bin values), or None."""
    m = Dp.ndim

    def too_far(step: list[int]) -> bool:
        return _exceeds(metric, theta, [w * s for w, s in zip(widths, step)])

    # the largest change of one attribute alone (every metric agrees on it)
    a = max(live, key=lambda a: (widths[a] * caps[a], -a))
    step = _unit(m, a, caps[a])
    if too_far(step):
        return step
    if metric == "linf":
        return None  # no edge step changes one attribute more than that
    # the largest changes of k attributes at once: a bound on every edge step
    top = sorted(live, key=lambda a: (-(widths[a] * caps[a]), a))[:k]
    box = [caps[a] if a in top else 0 for a in range(m)]
    if not too_far(box):
        return None
    if P.step_ok(Dp, box):
        return box
    # P has an L1 or L2 threshold that cuts the box: norm inequalities first
    t1, t2 = P.thr.get("l1"), P.thr.get("l2")
    if t1 is not None and t1 <= theta:
        return None  # L2 <= L1 <= t1
    if t2 is not None and metric == "l2" and t2 <= theta:
        return None
    if t2 is not None and metric == "l1" and k * t2 * t2 <= theta * theta:
        return None  # L1 <= sqrt(k) L2
    if set(P.thr) - {"linf"} == {"l1"} and len({widths[a] for a in live}) == 1:
        # one L1 threshold on bins of one width: filling the largest caps first gives the
        # farthest step in L1 and in L2 (it majorises every other edge step)
        room = int(t1 // widths[live[0]])
        step = [0] * m
        for a in sorted(live, key=lambda a: (-caps[a], a))[:k]:
            step[a] = min(caps[a], room)
            room -= step[a]
        return step if too_far(step) else None
    try:
        rows = row_maxima(P, Dp, _limits.ENUM_LIMIT)
    except Undecided:
        # too many to search: try balanced steps (far in L1 under an L2 threshold) before refusing
        for step in _balanced_steps(P, Dp, caps, live, k, widths):
            if too_far(step):
                return step
        raise
    big = max(widths[a] * caps[a] for a in live) ** 2 * m >= _limits.SAFE
    w = np.array(widths, dtype=object if big else np.int64)
    vals = rows.astype(w.dtype) * w
    vmax = max(widths[a] * caps[a] for a in live)
    bad = ~within(vals, metric, theta, vmax)
    if bad.any():
        return [int(s) for s in rows[int(np.argmax(bad))]]
    return None


def _balanced_steps(P: Mono, Dp: Domain, caps, live, k, widths):
    """Edge steps of ``P`` changing ``j = 1..k`` attributes by about the same value, then each filled up.

    Candidates only (each is checked to be an edge step): far in L1 under
    an L2 threshold, where the farthest steps are balanced.
    """
    order = sorted(live, key=lambda a: (-(widths[a] * caps[a]), a))

    def largest(lo: int, hi: int, make) -> int:
        while lo < hi:  # largest value whose step is an edge step (or zero)
            mid = (lo + hi + 1) // 2
            step = make(mid)
            if not any(step) or P.step_ok(Dp, step):
                lo = mid
            else:
                hi = mid - 1
        return lo

    for j in range(1, k + 1):
        chosen = order[:j]

        def step_at(value: int) -> list[int]:
            step = [0] * Dp.ndim
            for a in chosen:
                step[a] = min(caps[a], value // widths[a])
            return step

        step = step_at(largest(0, max(widths[a] * caps[a] for a in chosen), step_at))
        if not any(step):
            continue
        for a in chosen:
            def raised(s: int, a: int = a, base: list[int] = step) -> list[int]:
                out = list(base)
                out[a] = s
                return out

            step = raised(largest(step[a], caps[a], raised))
        yield step


def _cliques_in_mono(P: Cliques, Dp: Domain, O: Mono) -> tuple[int, int] | None:
    """Sets too large to check pair by pair: each must be a clique of ``O``."""
    widths = np.array(widths_of(Dp), dtype=object)
    for members in P.sets:
        if members.shape[0] < 2:
            continue
        codes = Dp._codes_unchecked(members)
        differs = codes != codes[0]
        for a in sorted(O.fixed):
            if differs[:, a].any():
                return int(members[0]), int(members[int(np.argmax(differs[:, a]))])
        varying = [a for a in range(Dp.ndim) if differs[:, a].any()]
        if O.c is not None and len(varying) > O.c:
            raise Undecided(
                f"a listed block varies in {len(varying)} attributes; whether two of its values differ in more "
                f"than {O.c} has no closed form here"
            )
        if not O.thr:
            continue
        vals = codes[:, varying].astype(object) * widths[varying]
        for metric, theta in O.thr.items():
            if metric == "linf" or len(varying) == 1:
                for col in range(len(varying)):
                    hi, lo = int(np.argmax(vals[:, col])), int(np.argmin(vals[:, col]))
                    if _exceeds(metric, theta, [int(vals[hi, col] - vals[lo, col])]):
                        return int(members[lo]), int(members[hi])
            elif metric == "l1":
                # the L1 diameter is the largest spread of a projection on a sign vector
                signs = 1 << (len(varying) - 1)
                if signs * members.shape[0] > _limits.PAIR_LIMIT:
                    raise Undecided(f"the L1 diameter of a listed block over {len(varying)} attributes is too costly")
                for bits in range(signs):
                    sign = np.array([1] + [-1 if (bits >> t) & 1 else 1 for t in range(len(varying) - 1)], dtype=object)
                    proj = vals @ sign
                    hi, lo = int(np.argmax(proj)), int(np.argmin(proj))
                    if _exceeds("l1", theta, [int(proj[hi] - proj[lo])]):
                        return int(members[lo]), int(members[hi])
            else:
                raise Undecided("the L2 diameter of a large listed block has no closed form here")
    return None
