"""UGrid and AGrid (Qardaji, Yang, Li, ICDE 2013): DP baselines for 2-D histograms.

Uniform grids of cells sized from the public number of records (UGrid), and
adaptive grids that split the first level's noisy cells again (AGrid), with
uniform expansion back to the histogram.  Bounded DP; re-exported by
:mod:`.baselines`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from .._validation import check_epsilon
from ..noise import discrete_laplace_variance
from .laplace import calibrate
from .plan import NoisePart, Plan, int64_bytes
from ._baselines_common import _CITE_GRID, _DP, _check_cells, _check_hist, _check_positive, _dp_shape, _release


# ---------------------------------------------------------------------------
# grids: rectangles, sums, uniform expansion


def _integral(hist: np.ndarray) -> np.ndarray:
    R, C = hist.shape
    I = np.zeros((R + 1, C + 1), dtype=np.int64)
    I[1:, 1:] = hist.cumsum(0).cumsum(1)
    return I


def _rect_sums(I, r0, r1, c0, c1) -> np.ndarray:
    return I[r1, c1] - I[r0, c1] - I[r1, c0] + I[r0, c0]


def _paint(shape, r0, r1, c0, c1, values) -> np.ndarray:
    """Spread each rectangle's value uniformly over its cells (rectangles tile the domain)."""
    R, C = shape
    dens = values / ((r1 - r0) * (c1 - c0))
    D = np.zeros((R + 1, C + 1), dtype=np.float64)
    np.add.at(D, (r0, c0), dens)
    np.add.at(D, (r0, c1), -dens)
    np.add.at(D, (r1, c0), -dens)
    np.add.at(D, (r1, c1), dens)
    return D.cumsum(0).cumsum(1)[:R, :C]


def _uniform_rects(R0, R1, C0, C1, mr, mc):
    """Sub-rectangles of rectangles [R0, R1) x [C0, C1), each cut into mr x mc nearly equal bands.

    Arrays in, arrays out (one entry per sub-rectangle, grouped by parent), and the parent of each.
    """
    q = mr * mc
    parent = np.repeat(np.arange(R0.size, dtype=np.int64), q)
    start = np.cumsum(q) - q
    t = np.arange(int(q.sum()), dtype=np.int64) - np.repeat(start, q)
    mcp, mrp = mc[parent], mr[parent]
    tr, tc = t // mcp, t % mcp
    H, W = (R1 - R0)[parent], (C1 - C0)[parent]
    r0 = R0[parent] + tr * H // mrp
    r1 = R0[parent] + (tr + 1) * H // mrp
    c0 = C0[parent] + tc * W // mcp
    c1 = C0[parent] + (tc + 1) * W // mcp
    return r0, r1, c0, c1, parent


def _grid_cells(shape, m_r, m_c):
    one = np.zeros(1, dtype=np.int64)
    return _uniform_rects(one, one + shape[0], one, one + shape[1],
                          np.array([min(max(m_r, 1), shape[0])]), np.array([min(max(m_c, 1), shape[1])]))[:4]


# ---------------------------------------------------------------------------
# UGrid


def ugrid_cells(n, epsilon, c=10) -> int:
    """QYL ICDE 2013: m = floor(sqrt(n eps / c)), at least 1 (clip to the side separately)."""
    return max(1, int(math.floor(math.sqrt(max(int(n), 0) * float(epsilon) / float(c)))))


def plan_ugrid(shape, epsilon, *, cells: int | None = None, c: float = 10) -> Plan:
    """Plan UGrid (Qardaji, Yang, Li, ICDE 2013): noisy counts of an m x m uniform grid, spread uniformly.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
    epsilon : float
    cells : int, optional
        Cells per axis (clipped to each side); default from n.
    c : float
        QYL's constant (10).

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` releases the noisy cell counts spread
        uniformly over their bins, a :class:`HistogramRelease` of the
        domain's shape.

    Privacy
    -------
    Bounded DP: the grid cells partition the domain, one moved record
    changes at most two cell counts by one: sensitivity 2 (exact when the
    grid has two cells or more), discrete Laplace of scale 2/eps per cell.
    m = ``cells`` if given, else floor(sqrt(n eps / c)) from the public n.

    Sensitivity
    -----------
    2, exact when the grid has two cells or more: the cells partition the
    domain and one moved record changes at most two counts by one (bounded
    DP, the complete secret graph).

    Runtime
    -------
    O(|T|): cell sums, one draw per cell, uniform spreading.

    References
    ----------
    .. [1] Qardaji, Yang, Li. *Differentially Private Grids for Geospatial Data.* ICDE 2013 (UGrid).
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 4.2 (bounded DP as Blowfish under the complete graph).
    """
    shp, pol = _dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    m_fixed = _check_cells(cells, "cells")
    cc = _check_positive(c, "c")
    cal = calibrate(2, eps)
    scale = cal.scale
    count = None if m_fixed is None else min(m_fixed, shp[0]) * min(m_fixed, shp[1])
    exact = m_fixed is not None and count >= 2
    part = NoisePart("cells", 2, exact,
                     "bounded DP: the grid cells partition the domain, a moved record changes at most two cells "
                     "by 1" + ("" if exact else " (0 when the grid has a single cell: 2 is then a bound)"),
                     cal.epsilon_exact, scale, count)
    var = discrete_laplace_variance(scale)

    def run(plan, hist, gen):
        m = m_fixed if m_fixed is not None else ugrid_cells(int(hist.sum()), eps, cc)
        r0, r1, c0, c1 = _grid_cells(shp, m, m)
        noisy = gen.add_discrete_laplace(_rect_sums(_integral(hist), r0, r1, c0, c1), scale)
        est = _paint(shp, r0, r1, c0, c1, noisy.astype(np.float64))
        return _release(plan, est, gen, {"cells": m, "scale": scale, "c": cc})

    return Plan(
        mechanism="ugrid", policy=pol, guarantee=_DP + "; grid size from n (public) or given",
        citation=_CITE_GRID, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"per_cell_variance": var},
        memory_bytes=int64_bytes(6 * (shp[0] + 1) * (shp[1] + 1)), runtime="O(|T|)",
        options={"cells": m_fixed, "c": cc}, check=_check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# AGrid


def agrid_first_cells(n, epsilon, c=10) -> int:
    """QYL ICDE 2013: m1 = max(10, ceil(sqrt(n eps / c) / 4))."""
    return max(10, int(math.ceil(math.sqrt(max(int(n), 0) * float(epsilon) / float(c)) / 4)))


def plan_agrid(shape, epsilon, *, alpha=Fraction(1, 2), c: float = 10, cells1: int | None = None,
               cells2: int | None = None) -> Plan:
    """Plan AGrid (Qardaji, Yang, Li, ICDE 2013): two-level adaptive grid with constrained inference.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
    epsilon : float
    alpha : float or Fraction in (0, 1)
        Fraction of epsilon for level 1 (QYL: 0.5).
    c : float
        QYL's constant (10); level 2 uses c / 2.
    cells1, cells2 : int, optional
        Fix the level-1 / level-2 granularity (tests, audits); default adaptive.

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` releases the two-level estimate after
        constrained inference, spread uniformly, a :class:`HistogramRelease`
        of the domain's shape.

    Privacy
    -------
    Bounded DP.  Level 1 (an m1 x m1 grid, m1 = ``cells1`` or from n):
    sensitivity 2, scale 2/(alpha eps).  Level 2 (every level-1 cell cut
    into m2 x m2, m2 = ``cells2`` or from the cell's *noisy* count): the
    sub-cells partition the domain, sensitivity 2, scale
    2/((1 - alpha) eps).  Sequential (adaptive) composition: the spend is
    the sum, at most epsilon.  Constrained inference and uniform
    expansion are post-processing.

    Sensitivity
    -----------
    2 at each level, exact: each level's cells partition the domain, so one
    moved record changes at most two counts of a level by one.

    Runtime
    -------
    O(|T|): two levels of cell sums and draws, constrained inference per
    level-1 cell, uniform spreading.

    References
    ----------
    .. [1] Qardaji, Yang, Li. *Differentially Private Grids for Geospatial Data.* ICDE 2013 (AGrid).
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 4.1 (sequential composition).
    """
    shp, pol = _dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, Fraction)):
        raise TypeError(f"alpha must be a fraction in (0, 1), got {alpha!r}")
    a = Fraction(alpha).limit_denominator(10 ** 6)
    if not 0 < a < 1:
        raise ValueError(f"alpha must be a fraction in (0, 1), got {alpha!r}")
    cc = _check_positive(c, "c")
    m1_fixed = _check_cells(cells1, "cells1")
    m2_fixed = _check_cells(cells2, "cells2")
    cal1, cal2 = calibrate(2, eps * a), calibrate(2, eps * (1 - a))
    s1, s2 = cal1.scale, cal2.scale
    v1, v2 = discrete_laplace_variance(s1), discrete_laplace_variance(s2)
    eps2_float = float(eps * (1 - a))
    how = "bounded DP: the {} partition the domain, a moved record changes at most two of them by 1"
    parts = (NoisePart("level1", 2, False, how.format("level-1 cells") + " (0 if there is a single cell)",
                       cal1.epsilon_exact, s1, None),
             NoisePart("level2", 2, False, how.format("level-2 cells (for any noisy level-1 output)")
                       + " (0 if there is a single cell)", cal2.epsilon_exact, s2, None))

    def run(plan, hist, gen):
        R, C = shp
        n = int(hist.sum())
        m1 = m1_fixed if m1_fixed is not None else agrid_first_cells(n, eps, cc)
        I = _integral(hist)
        R0, R1, C0, C1 = _grid_cells(shp, m1, m1)
        noisy1 = gen.add_discrete_laplace(_rect_sums(I, R0, R1, C0, C1), s1).astype(np.float64)
        if m2_fixed is not None:
            m2 = np.full(R0.size, m2_fixed, dtype=np.int64)
        else:  # from the noisy level-1 counts only (post-processing of the first release)
            m2 = np.ceil(np.sqrt(np.maximum(noisy1, 0.0) * eps2_float / (cc / 2))).astype(np.int64)
        mr = np.clip(m2, 1, R1 - R0)
        mc = np.clip(m2, 1, C1 - C0)
        r0, r1, c0, c1, parent = _uniform_rects(R0, R1, C0, C1, mr, mc)
        u = gen.add_discrete_laplace(_rect_sums(I, r0, r1, c0, c1), s2).astype(np.float64)
        # constrained inference per level-1 cell: inverse-variance mean of the two estimates of its total
        q = (mr * mc).astype(np.float64)
        usum = np.bincount(parent, weights=u, minlength=R0.size)
        best = (q * v2 * noisy1 + v1 * usum) / (q * v2 + v1)
        u = u + ((best - usum) / q)[parent]
        est = _paint(shp, r0, r1, c0, c1, u)
        return _release(plan, est, gen, {"cells1": m1, "cells2": m2, "alpha": a, "c": cc,
                                         "scales": {"level1": s1, "level2": s2}})

    return Plan(
        mechanism="agrid", policy=pol,
        guarantee=_DP + f"; level 1 with {a} of epsilon, level 2 (chosen from level 1's noisy counts) with the rest",
        citation=_CITE_GRID, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"level1_variance": v1, "level2_variance": v2},
        memory_bytes=int64_bytes(12 * (shp[0] + 1) * (shp[1] + 1)), runtime="O(|T|)",
        options={"alpha": a, "c": cc, "cells1": m1_fixed, "cells2": m2_fixed},
        check=_check_hist(shp), run=run)
