"""Exact integer arithmetic on the lattice of bin differences.

The distance-threshold graphs (:mod:`.threshold`) live on the integer
lattice of bin codes.  This module answers their questions without building
the graph: whether a difference vector is within ``theta`` in the L1, L2 or
Linf metric (:func:`within`, exact on integers of any size), the
shortest-path length ``d_G`` of a difference vector (:func:`lattice_distance`,
closed forms or a dynamic program over reach tables, :class:`_ReachTable`),
and the largest weighted L1 change of one edge (:func:`max_gain`, used for
the sensitivity of sums, 000 Sec 5).  :class:`ThresholdSteps` bundles
what a threshold graph is on one domain (metric, threshold, bin widths,
largest step per attribute) for callers that scan its edges by their
offsets.  Nothing here knows about graph classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from . import limits as _limits

def within(vals: np.ndarray, metric: str, theta: Fraction, vmax: int) -> np.ndarray:
    """``metric(row) <= theta`` for each row of non-negative integer differences.

    ``vmax`` bounds the entries; the arithmetic switches to Python integers
    when int64 could overflow, so the comparison is always exact.
    """
    m = vals.shape[-1]
    if metric == "linf":
        limit = math.floor(theta)
        total = vals.max(axis=-1)
    elif metric == "l1":
        limit = math.floor(theta)
        total = vals.sum(axis=-1) if vmax * m < _limits.SAFE else vals.astype(object).sum(axis=-1)
    else:
        limit = math.floor(theta * theta)
        if vmax * vmax * m < _limits.SAFE:
            total = (vals * vals).sum(axis=-1)
        else:
            obj = vals.astype(object)
            total = (obj * obj).sum(axis=-1)
    total = np.asarray(total)
    if total.dtype != object:
        return total <= min(limit, 2**63 - 1)
    return np.array([t <= limit for t in total.reshape(-1).tolist()], dtype=bool).reshape(total.shape)


def within_float(vals: np.ndarray, metric: str, theta: float) -> np.ndarray:
    if metric == "linf":
        return vals.max(axis=-1) <= theta
    if metric == "l1":
        return vals.sum(axis=-1) <= theta
    return (vals * vals).sum(axis=-1) <= theta * theta


def ceil_div(a: np.ndarray, b: int) -> np.ndarray:
    return -((-a) // b)


def maximal_steps(widths: Sequence[int], caps: Sequence[int], metric: str, theta: Fraction) -> np.ndarray:
    """Pareto-maximal lattice steps ``s`` with ``0 <= s <= caps`` and ``metric(w*s) <= theta``."""
    shape = tuple(c + 1 for c in caps)
    grid = np.indices(shape, dtype=np.int64).reshape(len(shape), -1).T
    vmax = max(w * c for w, c in zip(widths, caps))
    feasible = within(grid * np.array(widths, dtype=object if vmax >= _limits.SAFE else np.int64), metric, theta, vmax)
    feasible = np.asarray(feasible, dtype=bool).reshape(shape)
    maximal = feasible.copy()
    for a in range(len(shape)):
        up = np.zeros_like(feasible)
        src = [slice(None)] * len(shape)
        dst = [slice(None)] * len(shape)
        src[a] = slice(1, None)
        dst[a] = slice(None, -1)
        up[tuple(dst)] = feasible[tuple(src)]
        maximal &= ~up
    steps = np.argwhere(maximal)
    return steps[steps.any(axis=1)]


@dataclass(frozen=True)
class ThresholdSteps:
    """A distance-threshold graph on one domain, as steps on the lattice of bin codes.

    The edges are the pairs whose bin codes differ by a non-zero vector
    ``s`` (entries taken in absolute value) with ``s[a] <= caps[a]`` and
    ``metric(widths * s) <= theta``; the graph is the same around every
    value (translation invariant).

    Attributes
    ----------
    metric : {"l1", "l2", "linf"}
    theta : fractions.Fraction
        The threshold, exact.
    widths : tuple of int
        Bin width of each attribute (value units per bin).
    caps : tuple of int
        Most bins one edge moves each attribute when it moves no other
        (0: the attribute never changes along an edge).
    """

    metric: str
    theta: Fraction
    widths: tuple
    caps: tuple

    def within(self, diffs: npt.ArrayLike) -> np.ndarray:
        """Whether each row of non-negative differences in value units is within the threshold.

        Parameters
        ----------
        diffs : array_like of int, shape (m, d)

        Returns
        -------
        numpy.ndarray of bool, shape (m,)
            ``metric(row) <= theta``, exactly (Python integers where int64
            could overflow).
        """
        vals = np.asarray(diffs)
        return within(vals, self.metric, self.theta, int(vals.max()) if vals.size else 0)

    def maximal_steps(self) -> np.ndarray:
        """The Pareto-maximal steps ``s`` (``0 <= s <= caps``, in bins) of an edge, one per row (int64)."""
        return maximal_steps(self.widths, self.caps, self.metric, self.theta)


class _ReachTable:
    """Shortest-path lengths of a threshold graph on a box, by dynamic programming.

    Paths may be taken monotone (every metric here is monotone in the
    absolute coordinates), so the length from ``0`` to ``delta`` is the
    fewest steps ``s >= 0`` with ``metric(w*s) <= theta`` summing to
    ``delta``.  The sets ``R_k`` of points reachable in ``k`` steps are
    down-closed, so each is stored as a staircase: for every position ``u``
    on all axes but the longest, the largest reachable coordinate ``h_k(u)``
    on the longest axis.  ``h_{k+1}(u) = max_s h_k(max(u - s_u, 0)) + s_L``
    over the maximal steps ``s``.
    """

    def __init__(self, widths: Sequence[int], box: Sequence[int], metric: str, theta: Fraction) -> None:
        cells = math.prod(box)
        if cells > _limits.DP_CELL_LIMIT:
            raise ValueError(
                f"the exact distance needs a dynamic program over {cells} cells (box {tuple(box)} in bins), "
                f"more than the limit of {_limits.DP_CELL_LIMIT}; it is too costly to compute exactly"
            )
        self.box = tuple(box)
        caps = [min(theta // w, b - 1) for w, b in zip(widths, box)]
        if min(caps) < 1:
            raise ValueError("internal: every axis of the reach table needs a unit step")
        steps = maximal_steps(widths, caps, metric, theta)
        last = int(np.argmax(box))
        self.last = last
        self.rest = [a for a in range(len(box)) if a != last]
        rest_box = tuple(box[a] for a in self.rest)
        top = box[last] - 1
        h = np.full(rest_box, -1, dtype=np.int64)
        h[(0,) * len(rest_box)] = 0
        moves = []
        for s in steps:
            index = np.ix_(*[np.maximum(np.arange(box[a]) - s[a], 0) for a in self.rest])
            moves.append((index, int(s[last])))
        layers = [h]
        while not (h == top).all():
            new = h.copy()
            for index, rise in moves:
                src = h[index]
                np.maximum(new, np.where(src >= 0, np.minimum(src + rise, top), -1), out=new)
            if np.array_equal(new, h):
                break
            layers.append(new)
            h = new
        self.rest_box = rest_box
        self.layers = np.stack(layers).reshape(len(layers), -1)

    def covers(self, box: Sequence[int]) -> bool:
        return all(b <= c for b, c in zip(box, self.box))

    def lookup(self, delta: np.ndarray) -> np.ndarray:
        """Distances for rows of ``delta`` (non-negative, inside the box)."""
        n = delta.shape[0]
        x = delta[:, self.last]
        if self.rest:
            pos = np.ravel_multi_index(tuple(delta[:, a] for a in self.rest), self.rest_box)
        else:
            pos = np.zeros(n, dtype=np.int64)
        top = self.layers.shape[0] - 1
        out = np.full(n, np.inf)
        ok = self.layers[top, pos] >= x
        lo = np.zeros(n, dtype=np.int64)
        hi = np.full(n, top, dtype=np.int64)
        while True:
            active = ok & (lo < hi)
            if not active.any():
                break
            mid = (lo + hi) // 2
            reach = self.layers[mid, pos] >= x
            hi = np.where(active & reach, mid, hi)
            lo = np.where(active & ~reach, mid + 1, lo)
        out[ok] = lo[ok]
        return out


def lattice_distance(
    delta: np.ndarray, widths: Sequence[int], metric: str, theta: Fraction, cache: dict
) -> np.ndarray:
    """Shortest-path lengths in a threshold graph for rows of bin differences.

    Parameters
    ----------
    delta : (n, m) int64 array
        Absolute per-attribute differences in bins.
    widths : sequence of int
        Bin width of each attribute.
    cache : dict
        Reach tables already built, reused when their box is large enough.

    Returns
    -------
    (n,) float64 array, ``inf`` where no path exists.
    """
    n, m = delta.shape
    out = np.zeros(n)
    if n == 0:
        return out
    steps = [theta // w for w in widths]
    nonzero = delta > 0
    dead = np.zeros(n, dtype=bool)
    for a in range(m):
        if steps[a] == 0:
            dead |= nonzero[:, a]
    count = nonzero.sum(axis=1)
    simple = ~dead & ((count <= 1) | (metric == "linf"))
    if simple.any():
        best = np.zeros(int(simple.sum()), dtype=np.int64)
        for a in range(m):
            if steps[a] > 0:
                best = np.maximum(best, ceil_div(delta[simple, a], min(steps[a], _limits.SAFE)))
        out[simple] = best
    out[dead] = np.inf
    rest = ~dead & ~simple
    if not rest.any():
        return out
    axes = [a for a in range(m) if nonzero[rest, a].any()]
    sub = delta[np.ix_(rest, axes)]
    sub_widths = [widths[a] for a in axes]
    if metric == "l1" and len(set(sub_widths)) == 1:
        out[rest] = ceil_div(sub.sum(axis=1), min(steps[axes[0]], _limits.SAFE))
        return out
    box = [int(sub[:, k].max()) + 1 for k in range(len(axes))]
    key = tuple(axes)
    table = cache.get(key)
    if table is None or not table.covers(box):
        if table is not None:
            union = [max(b, c) for b, c in zip(box, table.box)]
            if math.prod(union) <= _limits.DP_CELL_LIMIT:
                box = union
        table = _ReachTable(sub_widths, box, metric, theta)
        cache[key] = table
    out[rest] = table.lookup(sub)
    return out


def max_gain(
    widths: Sequence[int], caps: Sequence[int], scale: Sequence[int], metric: str, theta: Fraction
) -> tuple[int, bool, str]:
    """``max scale . s`` over integer ``0 <= s <= caps`` with ``metric(w*s) <= theta``.

    Exact by closed form, enumeration or a group-knapsack dynamic program;
    when all of those are too large, a proven upper bound (``exact=False``).
    """
    sel = [a for a in range(len(widths)) if scale[a] > 0 and caps[a] > 0]
    if not sel:
        return 0, True, ""
    w = [widths[a] for a in sel]
    u = [caps[a] for a in sel]
    g = [scale[a] for a in sel]
    full = sum(gi * ui for gi, ui in zip(g, u))
    if metric == "linf" or len(sel) == 1:
        return full, True, ""
    limit = math.floor(theta) if metric == "l1" else math.floor(theta * theta)

    def cost(wi: int, si: int) -> int:
        return wi * si if metric == "l1" else (wi * si) ** 2

    total_cost = sum(cost(wi, ui) for wi, ui in zip(w, u))
    if total_cost <= limit:
        return full, True, ""
    # Enumerate every attribute but the one with the most steps; for that
    # one the best step given the others is max s with cost(s) <= budget left.
    last = max(range(len(sel)), key=lambda k: u[k])
    others = [k for k in range(len(sel)) if k != last]
    count = math.prod(u[k] + 1 for k in others)
    if count <= _limits.ENUM_LIMIT:
        big = total_cost >= _limits.SAFE or full >= _limits.SAFE
        dtype = object if big else np.int64
        grid = np.indices(tuple(u[k] + 1 for k in others), dtype=np.int64).reshape(len(others), -1).T
        spent = np.zeros(grid.shape[0], dtype=dtype)
        gain = np.zeros(grid.shape[0], dtype=dtype)
        for col, k in enumerate(others):
            step = grid[:, col].astype(dtype)
            spent = spent + (step * w[k] if metric == "l1" else (step * w[k]) ** 2)
            gain = gain + step * g[k]
        budget = limit - spent
        ok = budget >= 0
        budget = budget[ok]
        if metric == "l1":
            reach = budget // w[last]
        elif big:
            reach = np.array([math.isqrt(b) // w[last] for b in budget.tolist()], dtype=object)
        else:
            root = np.floor(np.sqrt(budget.astype(np.float64))).astype(np.int64)
            root -= root * root > budget  # correct float rounding of the square root
            root += (root + 1) * (root + 1) <= budget
            reach = root // w[last]
        reach = np.minimum(reach, u[last])
        best = gain[ok] + reach * g[last]
        return int(max(best.tolist(), default=0)), True, ""
    work = (limit + 1) * sum(u)
    if work <= _limits.KNAPSACK_LIMIT and full < _limits.SAFE:
        best = np.zeros(limit + 1, dtype=np.int64)
        for wi, ui, gi in zip(w, u, g):
            new = best.copy()
            for si in range(1, ui + 1):
                c = cost(wi, si)
                if c > limit:
                    break
                np.maximum(new[c:], best[: limit + 1 - c] + gi * si, out=new[c:])
            best = new
        return int(best[limit]), True, ""
    ratios = [Fraction(gi, wi) for gi, wi in zip(g, w)]
    if metric == "l1":
        bound = math.floor(max(ratios) * theta)
        how = "max_a(scale_a / w_a) * theta"
    else:
        bound = math.isqrt(math.floor(sum(r * r for r in ratios) * theta * theta))
        how = "sqrt(sum_a (scale_a / w_a)^2) * theta (Cauchy-Schwarz)"
    return (
        min(bound, full),
        False,
        f"exact search too large ({count} difference vectors); upper bound {how}",
    )
