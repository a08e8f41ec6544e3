"""DPCube (Xiao, Xiong, Fan, Goryczka, Li): a kd-tree partition of a noisy cell histogram, a DP baseline.

Two phases on a 2-D histogram, bounded differential privacy (one record
changes its value, n public), i.e. (epsilon, FullDomain)-Blowfish privacy:

1. *Cell partitioning* (alpha epsilon): the domain is cut into equi-width
   cells of ``cell_side`` x ``cell_side`` values (the last ones along each
   axis may be narrower) and every cell count gets discrete Laplace noise
   of scale 2/(alpha epsilon).  The default ``cell_side=1`` is the paper's
   cell histogram of every domain value; DPBench's reference code runs its
   first phase on cells of 11 x 11 values (its UGrid step with a fixed
   size): ``cell_side=11`` (far worse at large n, where the 11 x 11 cells'
   non-uniformity dominates).
2. *Multidimensional partitioning* (post-processing of phase 1): a kd-tree
   on the noisy cell histogram.  A node (a rectangle of cells) is cut
   along its longer side at the cell boundary that minimises the sum of
   the two halves' squared deviations from their own means, measured on
   the phase-1 estimate spread uniformly over the values; it is cut only
   when that lowers the node's squared deviation by more than ``penalty``
   (default: v1 + v2, the variance of one noisy cell count, about what a
   cut fitted to phase-1 noise alone gains, plus the variance of the extra
   noisy partition count the cut adds), else it is a leaf.  This is the
   V-optimal criterion of the paper's kd-tree (Sec 4, the partition that
   minimises the sum of squared errors) with a threshold playing the role
   of the paper's uniformity threshold; the value is ours.
3. *Partition counts* ((1 - alpha) epsilon): every leaf's count gets
   discrete Laplace noise of scale 2/((1 - alpha) epsilon); the leaves
   tile the domain, so one moved record changes two counts by one.
4. *Combination* (post-processing): each leaf's total is estimated by the
   inverse-variance mean of its noisy count and the sum of its noisy
   phase-1 cells (a leaf is a union of whole cells, so both estimate the
   same total), then spread uniformly over the leaf's values.

Citation
    Xiao, Xiong, Fan, Goryczka, Li, "DPCube: Differentially Private
    Histogram Release through Multidimensional Partitioning", Transactions
    on Data Privacy 7(3), 2014 (arXiv 1202.5358, 2012), Sec 3 (cell
    partitioning), Sec 4 (the 2-phase kd-tree partitioning and the
    estimation from both histograms); a 2-D baseline of DPBench (Hay,
    Machanavajjhala, Miklau, Chen, Zhang, SIGMOD 2016).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..noise import Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import DP, check_share, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of
from ..mechanisms.grids._rects import integral_image, paint_uniform, rect_sums
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, int64_bytes
from ..policy._policy import Policy

__all__ = ["plan_dpcube", "dpcube", "kd_partition"]

_CITE = ("Xiao, Xiong, Fan, Goryczka, Li, 'DPCube: differentially private histogram release through "
         "multidimensional partitioning', Transactions on Data Privacy 7(3), 2014, Sec 3-4; a 2-D baseline of "
         "DPBench (Hay et al., SIGMOD 2016)")


def _bounds(side: int, step: int) -> npt.NDArray[np.int64]:
    """Cell boundaries along one axis: 0, step, 2 step, ..., side."""
    b = np.arange(0, side, step, dtype=np.int64)
    return np.append(b, side)


def kd_partition(
    values: npt.ArrayLike, row_bounds: npt.ArrayLike, col_bounds: npt.ArrayLike, penalty: float,
) -> npt.NDArray[np.int64]:
    """DPCube's kd-tree partition of a grid of (noisy) cell counts.

    Parameters
    ----------
    values : numpy.ndarray of float, shape (cr, cc)
        The count of every cell (noisy, from phase 1).
    row_bounds, col_bounds : numpy.ndarray of int64, lengths cr + 1 and cc + 1
        The cells' boundaries in domain values (increasing, from 0).
    penalty : float >= 0
        A cut is made only when it lowers the node's squared deviation by
        more than this.

    Returns
    -------
    numpy.ndarray of int64, shape (leaves, 4)
        The leaves as half-open rectangles of *cells* (r0, r1, c0, c1); they
        tile the cell grid.

    Privacy
    -------
    Not a release: post-processing of the noisy phase-1 counts (it never
    reads the data).

    Sensitivity
    -----------
    None (no noise is added here).

    Runtime
    -------
    O(cells) per tree level, vectorised over the level's nodes; at most
    cr + cc levels.

    References
    ----------
    .. [1] Xiao, Xiong, Fan, Goryczka, Li. *DPCube: Differentially Private Histogram Release through
        Multidimensional Partitioning.* Transactions on Data Privacy 7(3), 2014, Sec 4 (kd-tree on the noisy
        cell histogram, the V-optimal split).

    Notes
    -----
    A node's squared deviation is measured on the counts spread uniformly
    over the domain values: with y_b the count of cell b and a_b its number
    of values, SSE = sum_b y_b^2 / a_b - (sum_b y_b)^2 / sum_b a_b.  A node
    is cut along its longer side in domain values (columns on a tie, as
    DPBench's reference; the other side when the longer one is a single
    cell) at the cell boundary with
    the least SSE(left) + SSE(right) (the first such boundary on ties), if
    SSE(node) - SSE(left) - SSE(right) > penalty.
    """
    y = np.asarray(values, dtype=np.float64)
    rb, cb = np.asarray(row_bounds, dtype=np.int64), np.asarray(col_bounds, dtype=np.int64)
    cr, cc = y.shape
    area = np.diff(rb).astype(np.float64)[:, None] * np.diff(cb).astype(np.float64)[None, :]
    S = np.zeros((cr + 1, cc + 1))
    S[1:, 1:] = y.cumsum(0).cumsum(1)
    Q = np.zeros((cr + 1, cc + 1))
    Q[1:, 1:] = (y * y / area).cumsum(0).cumsum(1)
    rbf, cbf = rb.astype(np.float64), cb.astype(np.float64)

    def sse(r0: npt.NDArray[np.int64], r1: npt.NDArray[np.int64], c0: npt.NDArray[np.int64],
            c1: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        s = S[r1, c1] - S[r0, c1] - S[r1, c0] + S[r0, c0]
        q = Q[r1, c1] - Q[r0, c1] - Q[r1, c0] + Q[r0, c0]
        a = (rbf[r1] - rbf[r0]) * (cbf[c1] - cbf[c0])
        return q - s * s / a

    pen = float(penalty)
    leaves = []
    nodes = np.array([[0, cr, 0, cc]], dtype=np.int64)
    while nodes.size:
        r0, r1, c0, c1 = nodes.T
        nr, nc = r1 - r0, c1 - c0
        by_rows = ((rb[r1] - rb[r0]) > (cb[c1] - cb[c0])) & (nr > 1) | (nc == 1)
        ncut = np.where(by_rows, nr, nc) - 1  # candidate cut positions per node
        can = ncut > 0
        leaves.append(nodes[~can])
        nodes, by_rows, ncut = nodes[can], by_rows[can], ncut[can]
        if not nodes.size:
            break
        r0, r1, c0, c1 = nodes.T
        node = np.repeat(np.arange(nodes.shape[0]), ncut)
        k = np.arange(node.size) - np.repeat(np.cumsum(ncut) - ncut, ncut) + 1  # 1 .. ncut, offset in the node
        rowcut = by_rows[node]
        R0, R1, C0, C1 = r0[node], r1[node], c0[node], c1[node]
        mid_r = np.where(rowcut, R0 + k, R1)
        mid_c = np.where(rowcut, C1, C0 + k)
        first = sse(R0, mid_r, C0, mid_c)
        second = sse(np.where(rowcut, mid_r, R0), R1, np.where(rowcut, C0, mid_c), C1)
        cost = first + second
        order = np.lexsort((cost, node))  # stable: the first cut among equals
        starts = np.cumsum(ncut) - ncut
        best = order[starts]
        gain = sse(r0, r1, c0, c1) - cost[best]
        cut = gain > pen
        leaves.append(nodes[~cut])
        kb = k[best][cut]
        rc = by_rows[cut]
        n0 = nodes[cut]
        left = n0.copy()
        right = n0.copy()
        left[rc, 1] = n0[rc, 0] + kb[rc]
        right[rc, 0] = left[rc, 1]
        left[~rc, 3] = n0[~rc, 2] + kb[~rc]
        right[~rc, 2] = left[~rc, 3]
        nodes = np.concatenate([left, right])
    return np.concatenate(leaves) if leaves else np.zeros((0, 4), dtype=np.int64)


def plan_dpcube(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, alpha: float | Fraction = Fraction(1, 2), cell_side: int = 1,
    penalty: float | Fraction | None = None, combine: bool = True,
) -> Plan[HistogramRelease]:
    """Plan DPCube: a noisy cell histogram, a kd-tree partition of it, noisy partition counts, their combination.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
        The public shape of the histogram.
    epsilon : float or Fraction, > 0
    alpha : float or Fraction in (0, 1)
        Share of epsilon for the cell histogram (phase 1); DPBench's
        reference uses 0.5.
    cell_side : int >= 1
        Domain values per cell side in phase 1 (1, the paper's cell
        histogram of every domain value; 11, DPBench's reference code).
    penalty : float >= 0, optional
        The least decrease of squared deviation that justifies a kd-tree
        cut; default v1 + v2, the variances of one noisy cell count and of
        one noisy partition count.
    combine : bool
        Combine each leaf's noisy count with the sum of its noisy phase-1
        cells (inverse-variance mean; the paper's estimation from both
        histograms).  False releases the leaf counts alone (DPBench's
        reference).

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` returns a :class:`HistogramRelease`
        of the domain's shape (each leaf's estimate spread uniformly over
        its values); ``params["partition"]`` holds the leaves as half-open
        rectangles of domain values (r0, r1, c0, c1).

    Raises
    ------
    ValueError, TypeError
        A shape that is not two positive sides, a policy that is not
        ``FullDomain`` on an ordinal domain, an epsilon that is not positive
        and finite, alpha outside (0, 1), cell_side < 1, a negative penalty.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with the number of records n public.  Phase 1: the cells
    partition the domain, discrete Laplace noise of scale 2/(alpha
    epsilon).  The kd-tree reads only the phase-1 release
    (post-processing), so the leaves are the same for neighbours given
    that release.  Phase 3: the leaves partition the domain, scale
    2/((1 - alpha) epsilon).  Sequential (adaptive) composition, 000 Thm
    4.1: the spend is the sum of the two parts, at most epsilon (each scale
    rounded up).  The combination and the uniform spreading are
    post-processing.

    Sensitivity
    -----------
    2 for each phase: its cells (phase 1) or leaves (phase 3) tile the
    domain and one moved record changes at most two of their counts by one
    (exact when there are two cells or more; a bound for a single cell,
    whose count is the public n).

    Runtime
    -------
    O(|T|) for the counts and the spreading; the kd-tree is O(cells) per
    level over at most (rows + cols) / cell_side levels.

    References
    ----------
    .. [1] Xiao, Xiong, Fan, Goryczka, Li. *DPCube: Differentially Private Histogram Release through
        Multidimensional Partitioning.* Transactions on Data Privacy 7(3), 2014 (arXiv 1202.5358, 2012), Sec 3
        (cell partitioning), Sec 4 (2-phase kd-tree partitioning, estimation from both histograms).
    .. [2] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (DPCube among the 2-D algorithms; alpha 0.5, 11 x 11 cells).
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Thm 4.1 (sequential composition), Sec 4.2 (bounded DP as the complete graph).
    """
    shp, pol = dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    a = check_share(alpha, "alpha")
    side = as_int(cell_side, "cell_side")
    if side < 1:
        raise ValueError(f"cell_side must be an integer >= 1 (domain values per cell side), got {cell_side!r}")
    if penalty is not None and (isinstance(penalty, bool) or not isinstance(penalty, (int, float, Fraction))
                                or not (0 <= penalty < float("inf"))):
        raise ValueError(f"penalty must be a finite number >= 0 (squared counts), got {penalty!r}")
    if not isinstance(combine, bool):
        raise TypeError(f"combine must be True or False, got {combine!r}")
    R, C = shp
    ncells = (-(-R // side)) * (-(-C // side))  # nothing per domain value in the plan
    cal1, cal2 = calibration(2, eps * a), calibration(2, eps * (1 - a))
    s1, s2 = cal1.scale, cal2.scale
    v1, v2 = discrete_laplace_variance(s1), discrete_laplace_variance(s2)
    pen = v1 + v2 if penalty is None else float(penalty)
    how = "bounded DP: the {} tile the domain, a moved record changes at most two of them by 1"
    parts = (NoisePart("cells", 2, ncells >= 2, how.format(f"{side} x {side} cells"), cal1.epsilon_exact, s1,
                       ncells),
             NoisePart("partitions", 2, False, how.format("kd-tree leaves (chosen from the noisy cells)")
                       + " (0 if there is a single leaf)", cal2.epsilon_exact, s2, None))

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        rb, cb = _bounds(R, side), _bounds(C, side)
        I = integral_image(hist)
        cr0, cc0 = np.meshgrid(rb[:-1], cb[:-1], indexing="ij")
        cr1, cc1 = np.meshgrid(rb[1:], cb[1:], indexing="ij")
        y1 = gen.add_discrete_laplace(rect_sums(I, cr0.ravel(), cr1.ravel(), cc0.ravel(), cc1.ravel()), s1)
        y1 = y1.reshape(rb.size - 1, cb.size - 1).astype(np.float64)
        leaves = kd_partition(y1, rb, cb, pen)  # post-processing of phase 1 only
        lr0, lr1, lc0, lc1 = leaves.T
        r0, r1, c0, c1 = rb[lr0], rb[lr1], cb[lc0], cb[lc1]
        y2 = gen.add_discrete_laplace(rect_sums(I, r0, r1, c0, c1), s2).astype(np.float64)
        if combine:
            J = np.zeros((y1.shape[0] + 1, y1.shape[1] + 1))
            J[1:, 1:] = y1.cumsum(0).cumsum(1)
            s_cells = J[lr1, lc1] - J[lr0, lc1] - J[lr1, lc0] + J[lr0, lc0]
            q = ((lr1 - lr0) * (lc1 - lc0)).astype(np.float64)
            den = q * v1 + v2
            est = y2 if not (den > 0).all() else (q * v1 * y2 + v2 * s_cells) / den
        else:
            est = y2
        out = paint_uniform(shp, r0, r1, c0, c1, est)
        return release(plan, out, gen, {"partition": np.stack([r0, r1, c0, c1], axis=1), "leaves": len(leaves),
                                         "cell_side": side, "alpha": a, "penalty": pen, "combine": combine,
                                         "scales": {"cells": s1, "partitions": s2}})

    return Plan(
        mechanism="dpcube", policy=pol,
        guarantee=DP + f"; the cell histogram with {a} of epsilon, the kd-tree leaves (chosen from it) with the rest",
        citation=_CITE, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"cell_count_variance": v1, "partition_count_variance": v2},
        memory_bytes=int64_bytes(8 * (R + 1) * (C + 1) + 40 * ncells),
        runtime="O(|T|) counts and spreading; kd-tree O(cells) per level",
        options={"alpha": a, "cell_side": side, "penalty": penalty, "combine": combine},
        model="DP", check=check_hist(shp), run=run)


@guarantee_of(plan_dpcube)
def dpcube(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *,
    alpha: float | Fraction = Fraction(1, 2), cell_side: int = 1, penalty: float | Fraction | None = None,
    combine: bool = True,
) -> HistogramRelease:
    """DPCube: a kd-tree partition of a noisy cell histogram, noisy partition counts, their combination.

    ``plan_dpcube(hist.shape, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    alpha, cell_side, penalty, combine
        As :func:`plan_dpcube`.

    Returns
    -------
    HistogramRelease
        The estimate (float64, shape (rows, cols)); ``params["partition"]``
        holds the kd-tree leaves.
    """
    h = np.asarray(hist)
    return plan_dpcube(h.shape, epsilon, alpha=alpha, cell_side=cell_side, penalty=penalty,
                       combine=combine).measure(h, generator)
