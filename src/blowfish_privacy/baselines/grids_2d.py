"""DP baselines for 2-D histograms: HB in 2-D, UGrid and AGrid.

Every plan here is a bounded differential privacy baseline, i.e.
(epsilon, FullDomain)-Blowfish privacy: two datasets are neighbours when
one record changes its value, so the number of records n is public (He,
Machanavajjhala, Ding, SIGMOD 2014, 000 Sec 4.2).  A plan's first argument
is the public shape ``(rows, cols)`` or a 2-D :class:`~blowfish_privacy.Policy`
whose secrets are ``FullDomain`` on an ordinal domain (the shape is then
its domain's; this lets ``audit.exact`` call the plan with a policy).
``measure`` adds integer noise from the library's exact discrete Laplace
sampler only; the post-processing is float.

``plan_hb2d``
    HB (Qardaji, Yang, Li, PVLDB 2013) in 2-D: the tensor product of two
    b-ary trees (:func:`~blowfish_privacy.mechanisms.plan_grid_hierarchical`,
    ``levels="tensor"``), b from :func:`hb2d_branching`.
``plan_ugrid``
    UGrid (Qardaji, Yang, Li, ICDE 2013): the noisy counts of an m x m
    uniform grid, m from the public n, spread uniformly over their cells.
``plan_agrid``
    AGrid (Qardaji, Yang, Li, ICDE 2013): a coarse grid, each of its cells
    cut again according to its noisy count, constrained inference between
    the two levels, uniform expansion.

Each noisy stage releases the counts of a partition of the domain (UGrid's
cells, each AGrid level) or the nodes of a hierarchy: a bounded neighbour
moves one record from one cell to another, so a partition's counts change
in two cells by one each (L1 sensitivity 2) and a hierarchy's in two nodes
per released level that separates the two values.
``tests/baselines/test_dp_baselines.py`` audits the plans exactly
(``audit.exact``) on tiny domains.  The rectangle geometry (counts from
an integral image, uniform expansion) is in
:mod:`blowfish_privacy.mechanisms.grids._rects`; the quadtree is in
:mod:`.quadtree`, the 1-D baselines (Uniform, HB, MWEM, ...) in their own
modules of :mod:`blowfish_privacy.baselines`.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..policy.domain import Domain, Ordinal
from ..noise import Generator, calibration, discrete_laplace_variance
from ..policy._policy import Policy
from ..policy.secrets import FullDomain
from ..mechanisms._dp import (
    CITE_GRID,
    CITE_HB,
    DP,
    check_cells,
    check_positive,
    check_share,
    dp_shape,
    float_capped,
    release,
)
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of, not_a_release
from ..mechanisms.grids._rects import grid_cells, integral_image, paint_uniform, rect_sums, uniform_rects
from ..mechanisms._trees import best_branching
from ..mechanisms.grids.grid import plan_grid_hierarchical
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, int64_bytes

__all__ = [
    "hb2d_branching",
    "plan_hb2d",
    "plan_ugrid",
    "plan_agrid",
    "ugrid_cells",
    "agrid_first_cells",
    "hb2d",
    "ugrid",
    "agrid",
]

# ---------------------------------------------------------------------------
# HB in 2-D


@not_a_release(
    'O(log^2 side): one candidate b per tree height (the smallest b of that height), in exact integers.',
    'Qardaji, Yang, Li. *Understanding Hierarchical Methods for Differentially Private Histograms.* PVLDB 6(14), 2013: eq. 3 (the average variance of a random range query as a function of b) and its multi-dimensional hierarchies. ',
)
def hb2d_branching(side: int) -> int:
    """The branching factor b of the 2-D tensor HB for a square side of ``side`` values.

    The b in 2..side minimising
    ((h + 1)^2 - 1)^2 * max(1, (b - 1) h - 2 (b + 1) / 3)^2, h = ceil(log_b side),
    in exact integer arithmetic (three times the second factor's base is
    compared); ties go to the smaller b.  The cost does not decrease in b
    for a fixed h, so only the smallest b of each height is compared.

    Parameters
    ----------
    side : int >= 1
        The number of values per axis (the longer side of the domain).

    Returns
    -------
    int
        The branching factor b >= 2 (2 for a side of 1 or 2).

    Raises
    ------
    ValueError, TypeError
        ``side`` not an integer >= 1.

    Notes
    -----
    Qardaji, Yang and Li model the error of a random 1-D range query as
    the number of noisy nodes it sums times the variance of one node; their
    eq. 3 gives V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3 for h levels, whose
    nodes-per-range factor is V(b) / h^2.  In the tensor product of two
    b-ary trees a rectangle sums (nodes per row range) x (nodes per column
    range) noisy nodes, and each node's variance is proportional to the
    square of the number of level pairs that change, (h + 1)^2 - 1 (the
    root pair is the public n).  Minimising their product gives the rule
    above.  This extension of eq. 3 to the tensor strategy is ours, not the
    paper's.
    """
    k = as_int(side, "side")
    if k < 1:
        raise ValueError(f"side must be >= 1, got {k}")

    def cost(b: int, h: int) -> int:
        nodes3 = max(3, 3 * (b - 1) * h - 2 * (b + 1))      # 3 x QYL's nodes per range, at least one node
        return ((h + 1) ** 2 - 1) ** 2 * nodes3 ** 2

    return best_branching(k, cost)


def plan_hb2d(shape: tuple[int, ...] | Policy, epsilon: Real) -> Plan[HistogramRelease]:
    """Plan HB in 2-D: the tensor product of two b-ary trees, b from the longer side.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
        The public shape of the histogram.
    epsilon : float or Fraction, > 0

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` takes int64 counts of shape
        ``(rows, cols)`` and returns a :class:`HistogramRelease` whose
        ``histogram`` is the 2-D least-squares estimate (float64, same
        shape); ``plan.options["branching"]`` is b.

    Raises
    ------
    ValueError, TypeError
        A shape that is not two positive sides, a policy that is not
        ``FullDomain`` on an ordinal domain without constraints, or an
        epsilon that is not positive and finite.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public: every released rectangle
    count gets discrete Laplace noise of scale S/epsilon (rounded up, so
    the epsilon spent, S/scale, is at most epsilon), 000 Thm 5.1.  The
    branching b = :func:`hb2d_branching` of max(rows, cols) depends on the
    public shape only.

    Sensitivity
    -----------
    S = 2 ((h_r + 1)(h_c + 1) - 1), exact, h_r = ceil(log_b rows) and
    h_c = ceil(log_b cols): the strategy releases the rectangles of every
    (row level, column level) pair, and a moved record changes two counts
    (by one each) in every level pair that separates its old and new
    values.  Two opposite corners are separated in every pair but the root
    pair, whose count n never changes.  The value is computed by
    :func:`~blowfish_privacy.mechanisms.plan_grid_hierarchical` from the
    complete graph's worst pair (e.g. S = 6 on a 64 x 64 grid, b = 64).

    Runtime
    -------
    O(log^2 side) to choose b; the measurement is O(N_b), N_b = b^(h_r + h_c) the
    padded domain (less than b^2 |T|): one draw per released node (at most
    4 N_b of them) and two least-squares passes per axis.

    References
    ----------
    .. [1] Qardaji, Yang, Li. *Understanding Hierarchical Methods for Differentially Private Histograms.*
        PVLDB 6(14), 2013 (HB: the branching factor of eq. 3; multi-dimensional hierarchies).
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (least-squares consistency).
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 5, Thm 5.1 (policy-specific sensitivity; the complete graph is bounded
        DP).
    .. [4] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (HB among the 2-D baselines).
    """
    shp, pol = dp_shape(shape, dims=2)
    if pol is None:
        pol = Policy(Domain([Ordinal("row", 0, shp[0] - 1), Ordinal("col", 0, shp[1] - 1)]), FullDomain())
    b = hb2d_branching(max(shp))
    p = plan_grid_hierarchical(pol, epsilon, fanout=b, levels="tensor")
    return replace(p, mechanism="hb2d", citation=CITE_HB, model="DP",
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL eq. 3's model applied per axis to the tensor strategy"})


# ---------------------------------------------------------------------------
# UGrid


@not_a_release(
    'O(1).',
    "Qardaji, Yang, Li. *Differentially Private Grids for Geospatial Data.* ICDE 2013 (UGrid's size). ",
)
def ugrid_cells(n: int, epsilon: Real, c: float = 10) -> int:
    """UGrid's cells per axis: m = floor(sqrt(n epsilon / c)), at least 1 (each side clips it in the plan).

    Parameters
    ----------
    n : int
        The number of records (public under bounded DP); negative reads as 0.
    epsilon, c : float
        The budget and Qardaji, Yang and Li's constant (10).

    Returns
    -------
    int
        m >= 1.
    """
    n, eps, cc = min(max(as_int(n, "n"), 0), 2**1000), check_epsilon(epsilon), check_positive(c, "c")
    return max(1, int(math.floor(math.sqrt(min(n * float_capped(eps) / cc, 1e300)))))  # clipped to the sides later


def plan_ugrid(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, cells: int | None = None, c: float = 10,
) -> Plan[HistogramRelease]:
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
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public: the grid cells partition
    the domain, one moved record changes at most two cell counts by one
    (sensitivity 2), and every cell count gets discrete Laplace noise of
    scale 2/epsilon (rounded up: the epsilon spent is at most epsilon),
    000 Thm 5.1.  m = ``cells`` if given, else floor(sqrt(n epsilon / c))
    from the public n, so the grid is the same for every neighbour.

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
    shp, pol = dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    m_fixed = check_cells(cells, "cells")
    cc = check_positive(c, "c")
    cal = calibration(2, eps)
    scale = cal.scale
    count = None if m_fixed is None else min(m_fixed, shp[0]) * min(m_fixed, shp[1])
    exact = count is not None and count >= 2  # count is None exactly when m_fixed is
    part = NoisePart("cells", 2, exact,
                     "bounded DP: the grid cells partition the domain, a moved record changes at most two cells "
                     "by 1" + ("" if exact else " (0 when the grid has a single cell: 2 is then a bound)"),
                     cal.epsilon_exact, scale, count)
    var = discrete_laplace_variance(scale)

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        m = m_fixed if m_fixed is not None else ugrid_cells(int(hist.sum()), eps, cc)
        r0, r1, c0, c1 = grid_cells(shp, m, m)
        noisy = gen.add_discrete_laplace(rect_sums(integral_image(hist), r0, r1, c0, c1), scale)
        est = paint_uniform(shp, r0, r1, c0, c1, noisy.astype(np.float64))
        return release(plan, est, gen, {"cells": m, "scale": scale, "c": cc})

    return Plan(
        mechanism="ugrid", policy=pol, guarantee=DP + "; grid size from n (public) or given",
        citation=CITE_GRID, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"per_cell_variance": var},
        memory_bytes=int64_bytes(6 * (shp[0] + 1) * (shp[1] + 1)), runtime="O(|T|)",
        options={"cells": m_fixed, "c": cc}, model="DP", check=check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# AGrid


@not_a_release(
    'O(1).',
    "Qardaji, Yang, Li. *Differentially Private Grids for Geospatial Data.* ICDE 2013 (AGrid's level 1). ",
)
def agrid_first_cells(n: int, epsilon: Real, c: float = 10) -> int:
    """AGrid's first-level cells per axis: m1 = max(10, ceil(sqrt(n epsilon / c) / 4)).

    Parameters
    ----------
    n : int
        The number of records (public under bounded DP); negative reads as 0.
    epsilon, c : float
        The whole budget and Qardaji, Yang and Li's constant (10).

    Returns
    -------
    int
        m1 >= 10 (each side clips it in the plan).
    """
    n, eps, cc = min(max(as_int(n, "n"), 0), 2**1000), check_epsilon(epsilon), check_positive(c, "c")
    return max(10, int(math.ceil(math.sqrt(min(n * float_capped(eps) / cc, 1e300)) / 4)))  # clipped to the sides later


def plan_agrid(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, alpha: float | Fraction = Fraction(1, 2), c: float = 10,
    cells1: int | None = None, cells2: int | None = None,
) -> Plan[HistogramRelease]:
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

    Granularity
    -----------
    As published (QYL ICDE 2013, Sec IV-B): m1 = max(10, ceil(sqrt(n eps' / c) / 4)),
    and a level-1 cell of noisy count N' is cut into m2 x m2 with
    m2 = ceil(sqrt(N' (1 - alpha) eps' / (c / 2))) (1 when N' <= 0), each
    clipped to the cell's sides.  QYL derive these sizes for Laplace noise
    of scale 1/eps' (add/remove neighbours, sensitivity 1); the bounded-DP
    noise here is 2/eps (sensitivity 2), which is that noise at
    eps' = eps / 2, so the formulas are evaluated at eps' = eps / 2 (as
    DPBench's reference, run at eps / 2 for bounded eps, does).

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Level 1 (an m1 x m1 grid, m1 = ``cells1`` or from n):
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
    shp, pol = dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    a = check_share(alpha, "alpha")
    cc = check_positive(c, "c")
    m1_fixed = check_cells(cells1, "cells1")
    m2_fixed = check_cells(cells2, "cells2")
    cal1, cal2 = calibration(2, eps * a), calibration(2, eps * (1 - a))
    s1, s2 = cal1.scale, cal2.scale
    v1, v2 = discrete_laplace_variance(s1), discrete_laplace_variance(s2)
    eps2_float = float_capped(eps * (1 - a) / 2)  # QYL's formulas at the unbounded-equivalent epsilon
    how = "bounded DP: the {} partition the domain, a moved record changes at most two of them by 1"
    parts = (NoisePart("level1", 2, False, how.format("level-1 cells") + " (0 if there is a single cell)",
                       cal1.epsilon_exact, s1, None),
             NoisePart("level2", 2, False, how.format("level-2 cells (for any noisy level-1 output)")
                       + " (0 if there is a single cell)", cal2.epsilon_exact, s2, None))

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        R, C = shp
        n = int(hist.sum())
        m1 = m1_fixed if m1_fixed is not None else agrid_first_cells(n, eps / 2, cc)
        I = integral_image(hist)
        R0, R1, C0, C1 = grid_cells(shp, m1, m1)
        noisy1 = gen.add_discrete_laplace(rect_sums(I, R0, R1, C0, C1), s1).astype(np.float64)
        if m2_fixed is not None:
            m2 = np.full(R0.size, m2_fixed, dtype=np.int64)
        else:  # from the noisy level-1 counts only (post-processing of the first release)
            with np.errstate(over="ignore"):  # a huge epsilon: clipped to the sides before the cast
                m2f = np.ceil(np.sqrt(np.maximum(noisy1, 0.0) * eps2_float / (cc / 2)))
            m2 = np.minimum(m2f, float(max(R, C))).astype(np.int64)
        mr = np.clip(m2, 1, R1 - R0)
        mc = np.clip(m2, 1, C1 - C0)
        r0, r1, c0, c1, parent = uniform_rects(R0, R1, C0, C1, mr, mc)
        u = gen.add_discrete_laplace(rect_sums(I, r0, r1, c0, c1), s2).astype(np.float64)
        # constrained inference per level-1 cell: inverse-variance mean of the two estimates of its total
        q = (mr * mc).astype(np.float64)
        usum = np.bincount(parent, weights=u, minlength=R0.size)
        den = q * v2 + v1
        if den.size and not (den > 0).all():  # both levels exact (a huge epsilon): the totals agree
            best = noisy1
        else:
            best = (q * v2 * noisy1 + v1 * usum) / den
        u = u + ((best - usum) / q)[parent]
        est = paint_uniform(shp, r0, r1, c0, c1, u)
        return release(plan, est, gen, {"cells1": m1, "cells2": m2, "alpha": a, "c": cc,
                                         "scales": {"level1": s1, "level2": s2}})

    return Plan(
        mechanism="agrid", policy=pol,
        guarantee=DP + f"; level 1 with {a} of epsilon, level 2 (chosen from level 1's noisy counts) with the rest",
        citation=CITE_GRID, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"level1_variance": v1, "level2_variance": v2},
        memory_bytes=int64_bytes(12 * (shp[0] + 1) * (shp[1] + 1)), runtime="O(|T|)",
        options={"alpha": a, "c": cc, "cells1": m1_fixed, "cells2": m2_fixed},
        model="DP", check=check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# functional API


@guarantee_of(plan_hb2d)
def hb2d(hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None) -> HistogramRelease:
    """HB in 2-D: noisy rectangle counts of two b-ary trees, with least squares.

    ``plan_hb2d(hist.shape, epsilon).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional

    Returns
    -------
    HistogramRelease
        The 2-D least-squares estimate (float64, shape (rows, cols)).
    """
    h = np.asarray(hist)
    return plan_hb2d(h.shape, epsilon).measure(h, generator)


@guarantee_of(plan_ugrid)
def ugrid(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, cells: int | None = None,
    c: float = 10,
) -> HistogramRelease:
    """UGrid: the noisy counts of a uniform grid, spread uniformly over their cells.

    ``plan_ugrid(hist.shape, epsilon, cells=cells, c=c).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    cells, c
        As :func:`plan_ugrid`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (rows, cols)); ``params["cells"]`` is m.
    """
    h = np.asarray(hist)
    return plan_ugrid(h.shape, epsilon, cells=cells, c=c).measure(h, generator)


@guarantee_of(plan_agrid)
def agrid(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *,
    alpha: float | Fraction = Fraction(1, 2), c: float = 10, cells1: int | None = None, cells2: int | None = None,
) -> HistogramRelease:
    """AGrid: a two-level adaptive grid with constrained inference, spread uniformly.

    ``plan_agrid(hist.shape, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    alpha, c, cells1, cells2
        As :func:`plan_agrid`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (rows, cols)); ``params`` holds the
        granularities of both levels.
    """
    h = np.asarray(hist)
    return plan_agrid(h.shape, epsilon, alpha=alpha, c=c, cells1=cells1, cells2=cells2).measure(h, generator)
