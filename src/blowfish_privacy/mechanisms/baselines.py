"""DP baselines of the DPBench protocol (Hay et al., SIGMOD 2016) not elsewhere in the library.

Every plan here is a bounded differential privacy baseline, i.e.
(epsilon, FullDomain)-Blowfish privacy: two datasets are neighbours when
one record changes its value, so the number of records n is public (000
Sec 2).  A plan's first argument is the public size (1-D: an int), shape
(2-D: a pair) or a :class:`~blowfish_privacy.Policy` whose secrets are
``FullDomain`` (the shape is then its domain's; this lets ``audit.exact``
call the plan with a policy).  ``measure`` adds integer noise from the
library's exact discrete Laplace sampler only; post-processing is float.

``plan_uniform``
    The estimate n / |T| in every cell.  Under bounded DP n is public, so
    the default spends nothing (epsilon 0: the output is the same for all
    neighbours).  ``noisy_total=True`` is DPBench's Uniform, which works
    under unbounded DP and measures the total with noise of scale 1/eps
    (sensitivity 1 under add/remove; under bounded DP the total does not
    change at all, so 1 is an upper bound).
``plan_hb`` / ``plan_hb2d``
    HB (Qardaji, Yang, Li, VLDB 2013): the hierarchical method with the
    branching factor b chosen from the domain size to minimise the average
    variance of a random range query, QYL eq. 3,
    V(b) = (b - 1) h^3 - 2 (b + 1) h^2 / 3, h = ceil(log_b |T|), minimised
    over b = 2..|T| (:func:`hb_branching`; this is also DPBench's rule).
    1-D: :func:`~blowfish_privacy.mechanisms.plan_hierarchical` with
    ``fanout=b`` (least-squares consistency, public root).  2-D: the tensor
    product of two b-ary trees (:func:`grid.plan_grid_hierarchical`,
    ``levels="tensor"``); QYL's model applied to it (:func:`hb2d_branching`):
    a rectangle costs (nodes per row range) x (nodes per column range) noisy
    nodes, each of variance proportional to the square of the number of
    released level pairs ((h + 1)^2 - 1), so b minimises
    ((h + 1)^2 - 1)^2 * max(1, (b - 1) h - 2 (b + 1) / 3)^2 over the side k
    (QYL's per-range node count is V(b) / h^2).  This extension of eq. 3 to
    the tensor strategy is ours, not the paper's.
``plan_ugrid``
    UGrid (Qardaji, Yang, Li, ICDE 2013): an m x m uniform grid,
    m = floor(sqrt(n eps / c)), c = 10, clipped to [1, side]; noisy cell
    counts spread uniformly over their cells.  n is read at measurement
    (public under bounded DP) unless ``cells`` fixes m in the plan.
``plan_agrid``
    AGrid (Qardaji, Yang, Li, ICDE 2013): a first-level m1 x m1 grid,
    m1 = max(10, ceil(sqrt(n eps / c) / 4)), measured with alpha * eps; each
    first-level cell with noisy count N' gets an m2 x m2 second-level grid,
    m2 = ceil(sqrt(N' (1 - alpha) eps / c2)), c2 = c / 2, measured with
    (1 - alpha) eps; then constrained inference (the cell count and the sum
    of its sub-cells combined by inverse variance, the difference spread
    equally over the sub-cells) and uniform expansion.
``plan_mwem``
    MWEM (Hardt, Ligett, McSherry, NIPS 2012) for 1-D range workloads,
    with the exponential mechanism replaced by report-noisy-max with the
    library's discrete Laplace noise (eps-DP: the proof is in the
    docstring), so no real-valued sampling reaches a release.

Privacy (every plan)
    Each noisy stage is the histogram of a partition of the domain into
    cells (UGrid's cells, AGrid's first level, AGrid's second level for any
    value of the first level's *noisy* output) or the set of nodes of a
    hierarchy.  A bounded neighbour moves one record from one value to
    another: a partition's counts change in at most two cells, by one each,
    so the L1 sensitivity is 2 (exactly 2 as soon as the partition has two
    cells), and the discrete Laplace of scale >= 2/eps_i gives eps_i
    (000 Thm 5.1; exact sampler: Canonne, Kamath, Steinke 2020).  AGrid's
    second stage is chosen from the first stage's noisy counts only, so the
    two stages compose adaptively: eps_1 + eps_2 <= epsilon.  UGrid's and
    AGrid's grid sizes read n, which is the same for every neighbour.
    ``tests/mechanisms/test_dp_baselines.py`` audits the plans exactly with
    ``audit.exact`` on tiny domains (AGrid with fixed second-level
    granularities, its adaptive composition is argued above).  MWEM is not
    auditable by ``audit.exact``, which prices the release of the whole
    noisy stage (every noisy score), while MWEM releases only its argmax:
    its selection step is checked by exact enumeration of the
    report-noisy-max output distribution instead.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .._validation import as_int, check_epsilon
from ..noise import Generator, discrete_laplace_variance
from .cumulative import plan_hierarchical
from .histogram import HistogramRelease
from .laplace import calibrate
from .plan import NoisePart, Plan, int64_bytes

__all__ = [
    "hb_branching",
    "hb2d_branching",
    "plan_uniform",
    "plan_hb",
    "plan_hb2d",
    "plan_ugrid",
    "plan_agrid",
    "plan_mwem",
    "dyadic_ranges",
    "uniform",
    "hb",
    "hb2d",
    "ugrid",
    "agrid",
    "mwem",
]

_CITE_UNIFORM = "Hay, Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016 (DPBench: Uniform)"
_CITE_HB = ("Qardaji, Yang, Li, 'Understanding hierarchical methods for differentially private histograms', "
            "VLDB 2013 (HB, eq. 3); Hay, Rastogi, Miklau, Suciu, VLDB 2010 (consistency)")
_CITE_GRID = ("Qardaji, Yang, Li, 'Differentially private grids for geospatial data', ICDE 2013 "
              "(UGrid, AGrid)")
_DP = ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy; the number of "
       "records n is public")


# ---------------------------------------------------------------------------
# public inputs


def _dp_shape(arg, dims: int | None = None):
    """(shape, policy or None) from a size, a shape or a FullDomain policy."""
    from ..domain import Ordinal
    from ..policy import Policy
    from ..secrets import FullDomain

    if isinstance(arg, Policy):
        if not isinstance(arg.secrets, FullDomain):
            raise ValueError(f"policy: the DP baselines need FullDomain secrets (bounded DP), got {arg.secrets!r}")
        if getattr(arg, "constraints", None):
            raise ValueError("policy: public constraints are not supported by the DP baselines")
        if not all(isinstance(a, Ordinal) for a in arg.domain.attributes):
            raise ValueError(f"policy: the DP baselines need an ordinal domain, got {arg.domain!r}")
        shape = tuple(int(d) for d in arg.domain.shape)
        pol = arg
    elif isinstance(arg, (tuple, list)):
        shape = tuple(as_int(d, "shape") for d in arg)
        pol = None
    else:
        shape = (as_int(arg, "size"),)
        pol = None
    if not shape or any(d < 1 for d in shape):
        raise ValueError(f"shape must hold positive cell counts, got {arg!r}")
    if dims is not None and len(shape) != dims:
        raise ValueError(f"this plan needs a {dims}-D shape, got {shape}")
    return shape, pol


def _check_hist(shape):
    def check(hist):
        arr = np.asarray(hist)
        if arr.dtype.kind not in "iu":
            raise TypeError(f"hist must hold integer counts, got dtype {arr.dtype}")
        if arr.shape != tuple(shape):
            raise ValueError(f"hist must have the planned shape {tuple(shape)}, got shape {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.int64)

    return check


def _check_positive(value, name):
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not value > 0 \
            or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a positive finite number, got {value!r}")
    return float(value)


def _check_cells(cells, name):
    if cells is None:
        return None
    c = as_int(cells, name)
    if c < 1:
        raise ValueError(f"{name} must be an integer >= 1 (cells per axis), got {cells!r}")
    return c


def _release(plan, est, gen, params):
    spent = plan.epsilon_exact
    return HistogramRelease(
        histogram=est, mechanism=plan.mechanism, epsilon=float(spent), epsilon_exact=spent,
        epsilon_parts={p.name: p.epsilon for p in plan.parts}, guarantee="FullDomain", secure=gen.is_secure,
        params=params, plan=plan)


# ---------------------------------------------------------------------------
# Uniform


def plan_uniform(shape, epsilon, *, noisy_total: bool = False) -> Plan:
    """Plan Uniform: the total spread evenly over every cell (DPBench's plainest baseline).

    Privacy guarantee
        Bounded DP (``FullDomain``).  Default: the estimate n / |T| reads only
        the public n and spends nothing (epsilon 0).  ``noisy_total=True``:
        DPBench's Uniform, the total with discrete Laplace noise of scale
        1/epsilon (its unbounded-DP sensitivity 1; under bounded DP the total
        never changes, so 1 is an upper bound), clipped at 0.
    Citation
        Hay et al., SIGMOD 2016 (DPBench).
    """
    shp, pol = _dp_shape(shape)
    eps = check_epsilon(epsilon)
    if not isinstance(noisy_total, bool):
        raise TypeError(f"noisy_total must be a bool, got {noisy_total!r}")
    cells = int(np.prod(shp, dtype=np.int64))
    if noisy_total:
        cal = calibrate(1, eps)
        scale = cal.scale
        parts = (NoisePart("total", 1, False, "upper bound: add/remove one record changes the total by 1 "
                           "(DPBench's Uniform); under bounded DP the total is public and does not change",
                           cal.epsilon_exact, scale, 1),)
        var = discrete_laplace_variance(scale)
    else:
        scale, parts, var = Fraction(0), (), 0.0

    def run(plan, hist, gen):
        n = int(hist.sum())
        if noisy_total:
            total = max(float(gen.add_discrete_laplace(np.array([n], dtype=np.int64), scale)[0]), 0.0)
        else:
            total = float(n)
        est = np.full(shp, total / cells, dtype=np.float64)
        return _release(plan, est, gen, {"noisy_total": noisy_total, "scale": scale})

    return Plan(
        mechanism="uniform", policy=pol,
        guarantee=_DP + ("; the total measured with noise of scale 1/epsilon" if noisy_total
                         else "; reads only n, spends epsilon 0"),
        citation=_CITE_UNIFORM, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"total_variance": var, "note": "plus the data-dependent bias of uniform spreading"},
        memory_bytes=int64_bytes(2 * cells), runtime="O(|T|)",
        options={"noisy_total": noisy_total}, check=_check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# HB


def _height(k: int, b: int) -> int:
    h, cap = 0, 1
    while cap < k:
        cap *= b
        h += 1
    return h


def hb_branching(size) -> int:
    """QYL VLDB 2013 eq. 3: the b in 2..size minimising (b - 1) h^3 - 2 (b + 1) h^2 / 3, h = ceil(log_b size).

    Exact integer arithmetic (3 V(b) compared); ties go to the smaller b.
    For 4096 this is 16, for 256 it is 16 (h = 2), for small sizes the
    flat tree b = size (h = 1).
    """
    N = as_int(size, "size")
    if N < 1:
        raise ValueError(f"size must be >= 1, got {N}")
    if N <= 2:
        return 2
    best, best_v = 2, None
    for b in range(2, N + 1):
        h = _height(N, b)
        v3 = 3 * (b - 1) * h ** 3 - 2 * (b + 1) * h ** 2
        if best_v is None or v3 < best_v:
            best, best_v = b, v3
    return best


def hb2d_branching(side) -> int:
    """Branching of the 2-D tensor HB: minimises ((h+1)^2 - 1)^2 * max(1, (b-1) h - 2(b+1)/3)^2 (module docstring)."""
    k = as_int(side, "side")
    if k < 1:
        raise ValueError(f"side must be >= 1, got {k}")
    if k <= 2:
        return 2
    best, best_v = 2, None
    for b in range(2, k + 1):
        h = _height(k, b)
        nodes3 = max(3, 3 * (b - 1) * h - 2 * (b + 1))      # 3 x QYL's nodes per range, at least one node
        v = ((h + 1) ** 2 - 1) ** 2 * nodes3 ** 2
        if best_v is None or v < best_v:
            best, best_v = b, v
    return best


def plan_hb(size, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan HB (Qardaji, Yang, Li, VLDB 2013) in 1-D: the hierarchical method with b = :func:`hb_branching`.

    Privacy guarantee
        Bounded DP, as :func:`~blowfish_privacy.mechanisms.plan_hierarchical`
        (public root; the h levels below it each get noise of scale 2h/eps:
        one changed record changes two nodes per level).  The branching
        factor depends on the size only.
    """
    shp, pol = _dp_shape(size, dims=1)
    N = shp[0]
    b = hb_branching(N)
    p = plan_hierarchical(N, epsilon, fanout=b, keep_noisy=keep_noisy)
    return replace(p, mechanism="hb", policy=pol, citation=_CITE_HB,
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL VLDB 2013 eq. 3 minimised over b = 2..|T|"})


def plan_hb2d(shape, epsilon) -> Plan:
    """Plan HB in 2-D: the tensor product of two b-ary trees, b = :func:`hb2d_branching` of the longer side.

    Privacy guarantee
        Bounded DP, as :func:`grid.plan_grid_hierarchical` under the complete
        graph: one scale S/eps for every node, S = 2 x (released level pairs
        that separate some two values), exact.
    """
    from .. import Domain, Ordinal, Policy, secrets
    from .grid import plan_grid_hierarchical

    shp, pol = _dp_shape(shape, dims=2)
    if pol is None:
        pol = Policy(Domain([Ordinal("row", 0, shp[0] - 1), Ordinal("col", 0, shp[1] - 1)]), secrets.FullDomain())
    b = hb2d_branching(max(shp))
    p = plan_grid_hierarchical(pol, epsilon, fanout=b, levels="tensor")
    return replace(p, mechanism="hb2d", citation=_CITE_HB,
                   options={**p.options, "branching": b,
                            "branching_rule": "QYL eq. 3's model applied per axis to the tensor strategy"})


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

    Privacy guarantee
        Bounded DP: the grid cells partition the domain, one moved record
        changes at most two cell counts by one: sensitivity 2 (exact when the
        grid has two cells or more), discrete Laplace of scale 2/eps per cell.
        m = ``cells`` if given, else floor(sqrt(n eps / c)) from the public n.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
    epsilon : float
    cells : int, optional
        Cells per axis (clipped to each side); default from n.
    c : float
        QYL's constant (10).
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

    Privacy guarantee
        Bounded DP.  Level 1 (an m1 x m1 grid, m1 = ``cells1`` or from n):
        sensitivity 2, scale 2/(alpha eps).  Level 2 (every level-1 cell cut
        into m2 x m2, m2 = ``cells2`` or from the cell's *noisy* count): the
        sub-cells partition the domain, sensitivity 2, scale
        2/((1 - alpha) eps).  Sequential (adaptive) composition: the spend is
        the sum, at most epsilon.  Constrained inference and uniform
        expansion are post-processing.

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


# ---------------------------------------------------------------------------
# MWEM


_CITE_MWEM = ("Hardt, Ligett, McSherry, 'A simple and practical algorithm for differentially private data release', "
              "NIPS 2012 (MWEM); report-noisy-max: Dwork, Roth 2014 Sec 3.3")


def dyadic_ranges(size) -> np.ndarray:
    """Every distinct node of a binary tree over ``size`` values as an inclusive range (lo, hi), root first."""
    N = as_int(size, "size")
    out = []
    w = 1
    while True:
        lo = np.arange(0, N, w, dtype=np.int64)
        out.append(np.column_stack([lo, np.minimum(lo + w, N) - 1]))
        if w >= N:
            break
        w *= 2
    rows = np.concatenate(out[::-1])
    _, first = np.unique(rows, axis=0, return_index=True)   # a short last node repeats on upper levels
    return rows[np.sort(first)]


def _check_ranges(ranges, N) -> np.ndarray:
    r = np.asarray(ranges)
    if r.ndim != 2 or r.shape[1] != 2 or r.shape[0] < 1 or r.dtype.kind not in "iu":
        raise ValueError(f"ranges must be an integer array of shape (q, 2) with q >= 1, got shape {r.shape}")
    r = r.astype(np.int64)
    if (r[:, 0] < 0).any() or (r[:, 1] >= N).any() or (r[:, 0] > r[:, 1]).any():
        raise ValueError(f"ranges must hold inclusive ranges 0 <= lo <= hi < {N}")
    return r


def plan_mwem(size, epsilon, *, rounds: int = 10, ranges=None, average: bool = False) -> Plan:
    """Plan MWEM (Hardt, Ligett, McSherry 2012) for a workload of 1-D range queries.

    T = ``rounds`` rounds, each with epsilon / T: half to select the worst
    answered range of the (public) workload by report-noisy-max, half to
    measure it with discrete Laplace noise; after each round, multiplicative
    weights updates of the estimate A (total n, public) with every
    measurement so far (the paper's practical variant, Sec 4).  Returns the
    last A (as DPBench's MWEM), or the average of the T estimates
    (``average=True``, the paper's Fig. 1).

    Privacy guarantee
        Bounded DP.  Measurement: a range count changes by at most 1 when a
        record moves (exactly 1 for a range holding one end of the move):
        sensitivity 1, scale 1/eps_m.  Selection: the exponential mechanism
        is replaced by report-noisy-max over the integer scores
        s_i = |round(q_i(A)) - q_i(x)| (A is public: it is computed from
        earlier noisy outputs), with discrete Laplace noise of scale
        2/eps_s and ties to the lowest index.

        Claim: this is eps_s-DP.  The scores have sensitivity 1 (q_i(x)
        moves by at most 1 and |c - .| is 1-Lipschitz), in any directions.
        Fix the noise r_j of every j != i and let r* be the smallest integer
        with which i wins on x (it exists: the winning set of r_i is an
        upward-closed set of integers).  On a neighbour x', s_i' >= s_i - 1
        and s_j' <= s_j + 1, so with r_i >= r* + 2, s_i' + r_i >= s_i + r* + 1,
        which beats (or ties with a higher index) every s_j + r_j + 1 >=
        s_j' + r_j: i wins on x'.  Hence P[i | x', r_-i] >= P[Z >= r* + 2] and
        P[i | x, r_-i] = P[Z >= r*].  For the discrete Laplace with
        P(z) proportional to exp(-|z|/b), P(z + 2) >= exp(-2/b) P(z) for every
        integer z (|z + 2| <= |z| + 2), so summing over z >= r*,
        P[Z >= r* + 2] >= exp(-2/b) P[Z >= r*].  With b = 2/eps_s:
        P[i | x'] >= exp(-eps_s) P[i | x] after averaging over r_-i, for every
        i and both directions.  (The proof of Dwork, Roth Claim 3.9 with a
        Laplace tail replaced by the discrete one.)  ``test_dp_baselines``
        checks the claim by exact enumeration on small score vectors.
        Composition over 2T steps: the spend is the sum, at most epsilon.

    Parameters
    ----------
    size : int or 1-D FullDomain Policy
    epsilon : float
    rounds : int >= 1
    ranges : int array (q, 2), optional
        The workload (inclusive ranges); default :func:`dyadic_ranges`, a
        public set from which every range is a sum of at most 2 log2 |T|.
    average : bool
    """
    shp, pol = _dp_shape(size, dims=1)
    N = shp[0]
    eps = check_epsilon(epsilon)
    T = as_int(rounds, "rounds")
    if T < 1:
        raise ValueError(f"rounds must be an integer >= 1, got {rounds!r}")
    if not isinstance(average, bool):
        raise TypeError(f"average must be a bool, got {average!r}")
    Q = dyadic_ranges(N) if ranges is None else _check_ranges(ranges, N)
    eps_round = eps / T
    cal_s, cal_m = calibrate(2, eps_round / 2), calibrate(1, eps_round / 2)
    s_scale, m_scale = cal_s.scale, cal_m.scale
    parts = []
    for t in range(T):
        parts.append(NoisePart(f"select_{t + 1}", Fraction(2), False,
                               "report-noisy-max over scores of exact sensitivity 1, noise 2/eps (proof in "
                               "plan_mwem's docstring): recorded as 2 x 1", cal_s.epsilon_exact, s_scale, Q.shape[0]))
        parts.append(NoisePart(f"measure_{t + 1}", 1, True, "bounded DP: a moved record changes a range count by "
                               "at most 1", cal_m.epsilon_exact, m_scale, 1))
    lo, hi = Q[:, 0], Q[:, 1]

    def run(plan, hist, gen):
        n = int(hist.sum())
        C = np.concatenate([[0], np.cumsum(hist)])
        truth = C[hi + 1] - C[lo]
        A = np.full(N, n / N, dtype=np.float64)
        acc = np.zeros(N, dtype=np.float64)
        chosen, measured = [], []
        for _ in range(T):
            CA = np.concatenate([[0.0], np.cumsum(A)])
            qa = CA[hi + 1] - CA[lo]
            score = np.abs(np.rint(qa).astype(np.int64) - truth)
            i = int(np.argmax(gen.add_discrete_laplace(score, s_scale)))   # first maximum: lowest index
            m = float(gen.add_discrete_laplace(truth[i:i + 1], m_scale)[0])
            chosen.append(i)
            measured.append(m)
            if n > 0:  # n is public
                for j, mj in zip(chosen, measured):
                    sl = slice(int(lo[j]), int(hi[j]) + 1)
                    qj = A[sl].sum()
                    A[sl] *= math.exp(max(min((mj - qj) / (2.0 * n), 50.0), -50.0))
                    A *= n / A.sum()
            acc += A
        est = acc / T if average else A.copy()
        return _release(plan, est, gen, {"rounds": T, "chosen": np.asarray(chosen), "measured": np.asarray(measured),
                                         "select_scale": s_scale, "measure_scale": m_scale})

    return Plan(
        mechanism="mwem", policy=pol, guarantee=_DP + f"; {T} rounds of report-noisy-max and a Laplace measurement",
        citation=_CITE_MWEM, epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"measure_variance": discrete_laplace_variance(m_scale),
                        "note": "data dependent: no analytic error"},
        memory_bytes=int64_bytes(4 * N + 4 * Q.shape[0]), runtime="O(T (q + T |T|))",
        options={"rounds": T, "queries": int(Q.shape[0]), "average": average,
                 "workload": "dyadic" if ranges is None else "given"},
        check=_check_hist(shp), run=run)


# ---------------------------------------------------------------------------
# functional API


def uniform(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_uniform(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_uniform(h.shape, epsilon, **options).measure(h, generator)


def hb(hist, epsilon, generator: Generator | None = None, **options):
    """``plan_hb(hist.size, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_hb(h.size, epsilon, **options).measure(h, generator)


def hb2d(hist, epsilon, generator: Generator | None = None) -> HistogramRelease:
    """``plan_hb2d(hist.shape, epsilon).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_hb2d(h.shape, epsilon).measure(h, generator)


def ugrid(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_ugrid(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_ugrid(h.shape, epsilon, **options).measure(h, generator)


def agrid(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_agrid(hist.shape, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_agrid(h.shape, epsilon, **options).measure(h, generator)


def mwem(hist, epsilon, generator: Generator | None = None, **options) -> HistogramRelease:
    """``plan_mwem(hist.size, epsilon, **options).measure(hist, generator)``."""
    h = np.asarray(hist)
    return plan_mwem(h.size, epsilon, **options).measure(h, generator)
