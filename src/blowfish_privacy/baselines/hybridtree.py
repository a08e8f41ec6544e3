"""HybridTree (Cormode, Procopiuc, Srivastava, Shen, Yu, ICDE 2012): a kd-hybrid private spatial decomposition.

A 2-D DP baseline under bounded differential privacy (one record changes
its value, n public), i.e. (epsilon, FullDomain)-Blowfish privacy:

1. *kd levels* (``median_share`` of epsilon, split evenly over
   ``kd_levels`` levels): each node is cut in two along its longer side
   (rows on a tie; the other side when the longer one has one value) at a
   private median, chosen by report-noisy-max over every cut position c of
   the score -|L(c) - R(c)| (L, R: the node's records on either side), with
   discrete Laplace noise (ties to the lowest position).
2. *quadtree levels*: below the kd levels every node is cut at the middle
   of each side that has two values or more (up to four children), down to
   single values (the data-independent part of the hybrid).
3. *counts* (the rest of epsilon): the count of every node of every level
   below the root (n is public) gets discrete Laplace noise; the levels'
   budgets grow geometrically towards the leaves by 2^(1/3) per level
   (the paper's geometric allocation, Sec 4.2).
4. *post-processing*: the weighted least-squares estimate of the tree with
   per-level variances and the exact root n (the paper's OLS
   post-processing, Sec 5: weighted averaging up, mean consistency down),
   computed in two passes; every leaf is one domain value.

Citation
    Cormode, Procopiuc, Srivastava, Shen, Yu, "Differentially Private
    Spatial Decompositions", ICDE 2012, Sec 3 (private medians for
    kd-trees), Sec 4 (geometric budget over the levels), Sec 5 (OLS
    post-processing), Sec 6 (the kd-hybrid tree); HybridTree of DPBench
    (Hay, Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..errors import ParameterError
from ..noise import Calibration, Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import DP, check_share, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of
from ..mechanisms.grids._rects import integral_image, paint_uniform, rect_sums
from .grids_2d import ugrid_cells
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, int64_bytes
from ..policy._policy import Policy

__all__ = ["plan_hybridtree", "hybridtree", "hybridtree_levels", "geometric_shares"]

_CITE = ("Cormode, Procopiuc, Srivastava, Shen, Yu, 'Differentially private spatial decompositions', ICDE 2012, "
         "Sec 3-6 (kd-hybrid tree, private medians, geometric budget, OLS); HybridTree of DPBench (SIGMOD 2016)")


def hybridtree_levels(shape: tuple[int, ...], kd_levels: int) -> int:
    """Levels below the root that the tree may have: ``kd_levels`` + ceil(log2(longest side)).

    Each kd level cuts one side of every node; the quadtree levels that
    follow halve every side of two values or more, so a node of any extent
    (at most the longest side) reaches single values within
    ceil(log2(longest side)) of them.  (The kd levels stop early at
    single values.)
    """
    return int(kd_levels) + max(0, math.ceil(math.log2(max(shape)))) if max(shape) > 1 else int(kd_levels)


def geometric_shares(levels: int) -> list[Fraction]:
    """Shares of the count budget per level (1 = just below the root, ``levels`` = deepest), summing to 1.

    Level i gets a share proportional to 2^(i/3) (Cormode et al., ICDE 2012,
    Sec 4.2, geometric budget: deeper levels more), made exact rationals
    (the float weights limited to denominators of 10^6, renormalised).
    """
    if levels <= 0:
        return []
    w = [Fraction(2 ** (i / 3)).limit_denominator(10**6) for i in range(1, levels + 1)]
    total = sum(w)
    return [x / total for x in w]


def plan_hybridtree(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, kd_levels: int = 2,
    median_share: float | Fraction = Fraction(1, 10), height: int | None = None,
) -> Plan[HistogramRelease]:
    """Plan HybridTree: private kd medians on top, quadtree below, geometric budget, least squares.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
        The public shape of the histogram.
    epsilon : float or Fraction, > 0
    kd_levels : int >= 0
        Levels cut at private medians before the quadtree levels (0: a
        quadtree with geometric budget and least squares); capped at
        rows + cols - 2 (a kd cut lowers a node's rows + cols by at least
        one, so no further level could cut).
    median_share : float or Fraction in (0, 1)
        Share of epsilon for the medians (ignored, i.e. 0, when
        ``kd_levels`` is 0).
    height : int >= 1, optional
        Levels below the root (the paper's h): the first ``kd_levels`` of
        them are kd levels, the rest quadtree levels; the leaves (nodes of
        the last level, or single values reached earlier) are spread
        uniformly.  Default: from the public n at the measurement, the
        fewest levels whose 2^kd_levels x 4^q leaves reach UGrid's m x m
        cells, m = floor(sqrt(n epsilon / 10)) (Qardaji, Yang, Li, ICDE
        2013; our rule, the paper fixes h by hand), at most
        :func:`hybridtree_levels` (single values).

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` returns a :class:`HistogramRelease`
        of the domain's shape (the least-squares leaf estimates);
        ``params["nodes_per_level"]`` counts the released nodes.

    Raises
    ------
    ValueError, TypeError
        A shape that is not two positive sides, a policy that is not
        ``FullDomain`` on an ordinal domain, an epsilon that is not positive
        and finite, a negative ``kd_levels``, ``median_share`` outside (0, 1)
        (or not finite), or so many levels (``kd_levels``, ``height``) for
        epsilon that a level's noise scale is beyond the sampler's.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public, by sequential (adaptive)
    composition (000 Thm 4.1) of: each kd level's medians, report-noisy-max
    with discrete Laplace noise of scale 4/eps_m (eps_m = median_share x
    epsilon / kd_levels, rounded up), eps_m-DP for the level as a whole;
    then every level's node counts, scale 2/eps_i, eps_i-DP, the eps_i a
    geometric split of (1 - median_share) epsilon (fixed in the plan for
    a given ``height``; by default made at the measurement from the
    public n, each rounded up so that the levels spend at most the
    planned part).  The tree's shape depends on the data only through the
    noisy medians and the public n.  The spend is the sum of the parts,
    at most epsilon.

    Sensitivity
    -----------
    Medians: the score -|L(c) - R(c)| of a node changes by at most 2 when
    the moved record stays in the node and by at most 1 in each of the (at
    most two) nodes it leaves or enters; report-noisy-max with ties to the
    lowest position and discrete Laplace noise of scale 2 Delta / eps is
    eps-DP for score sensitivity Delta (the claim proven in
    :func:`~blowfish_privacy.baselines.plan_mwem`'s notes), so scale
    4/eps_m costs eps_m for one node with Delta = 2, and eps_m / 2 for each
    of two nodes with Delta = 1.  Counts: the nodes of one level are
    disjoint, so a moved record changes at most two of them by one (2 per
    level, exact when the level has two nodes or more).

    Runtime
    -------
    O(|T| log |T|): per level, one integral-image lookup per node (and per
    cut position at the kd levels), one draw per node; two least-squares
    passes.

    References
    ----------
    .. [1] Cormode, Procopiuc, Srivastava, Shen, Yu. *Differentially Private Spatial Decompositions.* ICDE
        2012, Sec 3.2 (private medians), Sec 4.2 (geometric budget), Sec 5 (OLS post-processing), Sec 6
        (kd-hybrid trees).
    .. [2] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (HybridTree among the 2-D algorithms).
    .. [3] Dwork, Roth. *The Algorithmic Foundations of Differential Privacy.* 2014, Sec 3.3 (report noisy
        max, Claim 3.9).
    .. [4] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 4.1 (sequential composition), Sec 4.2 (bounded DP).
    """
    shp, pol = dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    kd = as_int(kd_levels, "kd_levels")
    if kd < 0:
        raise ValueError(f"kd_levels must be an integer >= 0, got {kd_levels!r}")
    beta = check_share(median_share, "median_share")
    R, C = shp
    kd = min(kd, R + C - 2)  # a kd cut lowers a node's rows + cols by at least 1: no more levels can cut
    if kd == 0:
        beta = Fraction(0)
    H_full = hybridtree_levels(shp, kd)
    H_fixed = None if height is None else as_int(height, "height")
    if H_fixed is not None and H_fixed < 1:
        raise ValueError(f"height must be an integer >= 1 (levels below the root), got {height!r}")
    if H_fixed is not None:
        kd = min(kd, H_fixed)
    eps_counts = eps * (1 - beta)
    parts: list[NoisePart] = []
    med_scales: list[Fraction] = []
    for j in range(kd):
        cal = calibration(4, eps * beta / kd)
        med_scales.append(cal.scale)
        parts.append(NoisePart(f"median_{j + 1}", 4, False,
                               "report-noisy-max over cut scores -|L - R| (2 when the record stays in a node, 1 in "
                               "each of two nodes): noise 2 x 2 / eps per node, eps for the level",
                               cal.epsilon_exact, cal.scale, None))
    how = "bounded DP: the nodes of a level are disjoint, a moved record changes at most two by 1"

    def level_calibrations(H: int) -> list[Calibration]:
        return [calibration(2, eps_counts * share) for share in geometric_shares(H)]

    try:  # the most levels a measurement may use (its shallowest share is the smallest); refused here, not there
        level_calibrations(H_fixed if H_fixed is not None else H_full)
    except ParameterError:
        raise ParameterError(
            "height" if H_fixed is not None else "kd_levels",
            f"kd_levels and height: {H_fixed if H_fixed is not None else H_full} count levels split "
            f"{float(eps_counts):g} of epsilon so thinly that the shallowest level's noise is beyond the sampler's "
            "largest scale; use fewer kd_levels, a smaller height or a larger epsilon") from None
    if H_fixed is not None:
        for i, cal in enumerate(level_calibrations(H_fixed)):
            parts.append(NoisePart(f"level_{i + 1}", 2, False, how + " (0 when the level has one node)",
                                   cal.epsilon_exact, cal.scale, None))
    else:
        parts.append(NoisePart("levels", 2, False,
                               how + " at every level; the height and the geometric split of this part's epsilon "
                               "over the levels are fixed at the measurement from the public n (each level's scale "
                               "rounded up, so the levels spend at most this)", eps_counts, None, None))

    def auto_height(n: int) -> int:
        # leaves aimed at UGrid's m x m cells (m from the public n, Qardaji, Yang, Li ICDE 2013):
        # 2^kd x 4^q >= m^2, capped at single values
        m = ugrid_cells(n, eps)
        target = m * m
        q = 0
        while (1 << kd) * 4**q < target and kd + q < H_full:
            q += 1
        return max(1, min(kd + q, H_full))

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        I = integral_image(hist)
        n = float(I[-1, -1])
        H = H_fixed if H_fixed is not None else auto_height(int(I[-1, -1]))
        cals = level_calibrations(H)
        count_scales = [c.scale for c in cals]
        count_vars = [discrete_laplace_variance(c.scale) for c in cals]
        z = np.zeros((1, 4), dtype=np.int64)
        z[0] = (0, R, 0, C)
        levels, parents = [z], [np.zeros(0, dtype=np.int64)]
        for depth in range(H):
            nodes = levels[-1]
            r0, r1, c0, c1 = nodes.T
            er, ec = r1 - r0, c1 - c0
            if depth < kd:
                rows = ((er >= ec) & (er > 1)) | (ec == 1)
                ext = np.where(rows, er, ec)
                live = ext > 1
                idx = np.flatnonzero(live)
                ncut = ext[idx] - 1
                node = np.repeat(idx, ncut)
                k = np.arange(node.size) - np.repeat(np.cumsum(ncut) - ncut, ncut) + 1
                rw = rows[node]
                mid_r = np.where(rw, r0[node] + k, r1[node])
                mid_c = np.where(rw, c1[node], c0[node] + k)
                left = rect_sums(I, r0[node], mid_r, c0[node], mid_c)
                total = rect_sums(I, r0[node], r1[node], c0[node], c1[node])
                score = -np.abs(2 * left - total)
                noisy = gen.add_discrete_laplace(score, med_scales[depth])
                order = np.lexsort((-noisy, node))  # per node, the largest noisy score, lowest cut on ties
                best = order[np.cumsum(ncut) - ncut]
                kb = k[best]
                a = nodes[idx].copy()
                b = nodes[idx].copy()
                rr = rows[idx]
                a[rr, 1] = a[rr, 0] + kb[rr]
                b[rr, 0] = a[rr, 1]
                a[~rr, 3] = a[~rr, 2] + kb[~rr]
                b[~rr, 2] = a[~rr, 3]
                children = np.concatenate([a, b])
                par = np.concatenate([idx, idx])
            else:
                hr, hc = er // 2 + er % 2, ec // 2 + ec % 2  # the first half takes the odd value
                pieces, par_l = [], []
                for top in (True, False):
                    for lft in (True, False):
                        keep = (top | (er > 1)) & (lft | (ec > 1)) & ((er > 1) | (ec > 1))
                        q = np.flatnonzero(keep)
                        ch = np.empty((q.size, 4), dtype=np.int64)
                        ch[:, 0] = np.where(top, r0[q], r0[q] + hr[q])
                        ch[:, 1] = np.where(top & (er[q] > 1), r0[q] + hr[q], r1[q])
                        ch[:, 2] = np.where(lft, c0[q], c0[q] + hc[q])
                        ch[:, 3] = np.where(lft & (ec[q] > 1), c0[q] + hc[q], c1[q])
                        pieces.append(ch)
                        par_l.append(q)
                children = np.concatenate(pieces)
                par = np.concatenate(par_l)
            if not children.size:
                break
            levels.append(children)
            parents.append(par)
        # every level's counts, drawn once the tree is fixed
        ys = [None] + [gen.add_discrete_laplace(rect_sums(I, *lv.T), count_scales[d]).astype(np.float64)
                       for d, lv in enumerate(levels[1:])]
        est = _tree_least_squares(levels, parents, ys, count_vars, n)
        leaf_rects, leaf_vals = [], []
        for d, (lv, x) in enumerate(zip(levels, est)):  # leaves: nodes without children
            has = np.zeros(lv.shape[0], dtype=bool)
            if d + 1 < len(levels):
                has[parents[d + 1]] = True
            leaf_rects.append(lv[~has])
            leaf_vals.append(x[~has])
        lr = np.concatenate(leaf_rects)
        out = paint_uniform(shp, lr[:, 0], lr[:, 1], lr[:, 2], lr[:, 3], np.concatenate(leaf_vals))
        return release(plan, out, gen, {"nodes_per_level": [len(lv) for lv in levels[1:]], "kd_levels": kd,
                                         "leaves": lr, "level_epsilons": [c.epsilon_exact for c in cals],
                                         "median_share": beta, "height": H,
                                         "level_scales": count_scales, "level_variances": count_vars})

    return Plan(
        mechanism="hybridtree", policy=pol,
        guarantee=DP + f"; {kd} kd levels of private medians with {beta} of epsilon, geometric level budgets",
        citation=_CITE, epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={} if H_fixed is None else {
            "level_variances": [discrete_laplace_variance(c.scale) for c in level_calibrations(H_fixed)]},
        memory_bytes=int64_bytes(4 * (R + 1) * (C + 1) + 40 * R * C + 8 * min(2**min(kd, 62), R * C) * max(R, C)),
        runtime="O(|T| log |T|)", options={"kd_levels": kd, "median_share": beta, "height": H_fixed},
        model="DP", check=check_hist(shp), run=run)


def _tree_least_squares(levels, parents, ys, variances, n):
    """Weighted least squares on the tree (root exact at n): up pass of inverse-variance means, down pass."""
    L = len(levels)
    z = [None] * L
    v = [None] * L
    for d in range(L - 1, 0, -1):
        y, var = ys[d], float(variances[d - 1])
        if d + 1 < L:
            m = levels[d].shape[0]
            csum = np.bincount(parents[d + 1], weights=z[d + 1], minlength=m)
            cvar = np.bincount(parents[d + 1], weights=v[d + 1], minlength=m)
            has = np.bincount(parents[d + 1], minlength=m) > 0
            zz, vv = y.copy(), np.full(m, var)
            both = has & (cvar + var > 0)
            zz[both] = (y[both] * cvar[both] + csum[both] * var) / (cvar[both] + var)
            vv[both] = var * cvar[both] / (cvar[both] + var)
            exact_children = has & (cvar == 0)
            zz[exact_children] = csum[exact_children]
            vv[exact_children] = 0.0
            z[d], v[d] = zz, vv
        else:
            z[d], v[d] = y.copy(), np.full(y.size, var)
    x = [np.array([float(n)])] + [None] * (L - 1)
    for d in range(1, L):
        p = parents[d]
        m = levels[d - 1].shape[0]
        csum = np.bincount(p, weights=z[d], minlength=m)
        vsum = np.bincount(p, weights=v[d], minlength=m)
        gap = x[d - 1] - csum
        w = np.where(vsum[p] > 0, v[d] / np.where(vsum[p] > 0, vsum[p], 1.0), 1.0 / np.bincount(p, minlength=m)[p])
        x[d] = z[d] + gap[p] * w
    return x


@guarantee_of(plan_hybridtree)
def hybridtree(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, kd_levels: int = 2,
    median_share: float | Fraction = Fraction(1, 10), height: int | None = None,
) -> HistogramRelease:
    """HybridTree: private kd medians, quadtree below, geometric level budgets, least squares.

    ``plan_hybridtree(hist.shape, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    kd_levels, median_share, height
        As :func:`plan_hybridtree`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (rows, cols)).
    """
    h = np.asarray(hist)
    return plan_hybridtree(h.shape, epsilon, kd_levels=kd_levels, median_share=median_share,
                           height=height).measure(h, generator)
