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
otherwise the answer is refused, never guessed.  The checks against an
outer graph of several attributes with monotone conditions are in
:mod:`.mono_cover`.
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
)
from .custom import Custom
from .intersection import Intersection
from .mono_cover import mono_witness
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
            return mono_witness(P, Dp, mono)
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
