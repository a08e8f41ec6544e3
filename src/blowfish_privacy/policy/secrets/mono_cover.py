"""Whether a monotone secret graph on several attributes covers the projected edges of another.

The outer graph of :func:`~.containment.uncovered_pair` is here a
:class:`~.canonical.Mono`: attributes an edge may not change, at most
``c`` changed attributes, L1 / L2 / Linf thresholds on the bin values.
Against a projected monotone inner graph the question is about steps
(vectors of bin changes): each outer condition is checked on the largest
edge steps of the inner graph, in closed form where norm inequalities
settle it, else by an exact search of the maximal steps (up to
:data:`limits.ENUM_LIMIT`); against large listed blocks, each block must be
a clique of the outer graph (its spread per attribute, its L1 diameter by
sign vectors).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..domain import Domain
from . import limits as _limits
from .canonical import Cliques, Mono, Undecided, flat_of, row_maxima, widths_of
from .lattice import within

__all__ = ["mono_witness"]


def step_pair(Dp: Domain, step: list[int]) -> tuple[int, int]:
    """The edge from the first value of ``Dp`` by ``step`` bins."""
    return 0, flat_of(Dp, step)


def unit_step(m: int, a: int, size: int = 1) -> list[int]:
    """The step of ``size`` bins along attribute ``a`` of ``m``."""
    step = [0] * m
    step[a] = size
    return step


def mono_witness(P: Any, Dp: Domain, O: Mono) -> tuple[int, int] | None:
    """A pair of ``Dp``, an edge of the projected form ``P``, that is not an edge of ``O``; or None.

    ``P`` is a :class:`~.canonical.Mono` (compared step by step) or
    :class:`~.canonical.Cliques` too large to check pair by pair (each set
    must be a clique of ``O``).

    Raises
    ------
    Undecided
        When no closed form or bounded search decides it.
    """
    if isinstance(P, Mono):
        step = _mono_in_mono(P, Dp, O)
        return None if step is None else step_pair(Dp, step)
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
            return unit_step(m, a)
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
    step = unit_step(m, a, caps[a])
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
