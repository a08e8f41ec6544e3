"""The quadtree (Cormode et al. ICDE 2012): a DP baseline for 2-D histograms.

``plan_quadtree``
    The quadtree of Cormode, Procopiuc, Srivastava, Shen, Yu (ICDE 2012)
    down to single cells, with their geometric budget split across the
    levels (:func:`quadtree_shares`; the leaves get the largest share) and
    weighted least squares over the levels' different noise variances.

Privacy guarantee
    Bounded differential privacy, i.e. (epsilon, FullDomain)-Blowfish
    privacy with n public: a bounded neighbour moves one record from one
    cell to another, so each level's counts (a partition of the domain)
    change in at most two nodes by one; the levels compose sequentially.
    A plan's first argument is the public shape ``(rows, cols)`` or a 2-D
    FullDomain :class:`~blowfish_privacy.Policy` on an ordinal domain.
Citation
    Cormode, Procopiuc, Srivastava, Shen, Yu, "Differentially Private
    Spatial Decompositions", ICDE 2012; as evaluated by DPBench (Hay et al.
    SIGMOD 2016).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import as_int, check_epsilon
from ..noise import Generator, calibration, discrete_laplace_variance
from ..mechanisms._dp import DP, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of, not_a_release
from ..mechanisms.grids.grid import sum_level
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["plan_quadtree", "quadtree_shares", "quadtree"]


#: Denominator of the exact per-level shares of :func:`quadtree_shares` (each share is rounded down to it).
_SHARE_DENOMINATOR = 10 ** 9


@not_a_release(
    'O(h).',
    'Cormode, Procopiuc, Srivastava, Shen, Yu. *Differentially Private Spatial Decompositions.* ICDE 2012, '
    'Sec 4.2 (geometric budget). ',
)
def quadtree_shares(height: int, budget: Literal["geometric", "uniform"] = "geometric") -> list[Fraction]:
    """Per-level shares of epsilon for a quadtree of ``height`` noisy levels (index 0 = the root's children).

    ``"geometric"``: Cormode et al.'s split, level i (counted from the
    leaves, i = 0) gets a share proportional to 2^((h - i) / 3), so every
    level gets 2^(1/3) times its parent's share and the leaves the most;
    ``"uniform"``: 1/h per level.  The public root (n) is not measured, so
    the split is over the levels below it.  Every geometric share is an
    exact Fraction rounded down to a multiple of 1e-9: they sum to at most 1.

    Parameters
    ----------
    height : int >= 1
        The number of measured levels (the root's children down to the leaves).
    budget : "geometric" or "uniform"

    Returns
    -------
    list of Fraction
        ``height`` positive shares, summing to at most 1.

    Raises
    ------
    ValueError, TypeError
        ``height`` not an integer >= 1, or an unknown ``budget``.
    """
    h = as_int(height, "height")
    if h < 1:
        raise ValueError(f"height must be >= 1, got {h}")
    if budget not in ("geometric", "uniform"):
        raise ValueError(f"budget must be 'geometric' or 'uniform', got {budget!r}")
    if budget == "uniform":
        return [Fraction(1, h)] * h
    w = [2.0 ** (d / 3.0) for d in range(1, h + 1)]
    tot = math.fsum(w)
    return [Fraction(max(1, math.floor(x / tot * _SHARE_DENOMINATOR)), _SHARE_DENOMINATOR) for x in w]


def _quad_wls(levels: list[npt.NDArray[np.float64]], variances: list[float], total: float) -> npt.NDArray[np.float64]:
    """Weighted least squares leaf estimates of a complete quadtree with the root known exactly.

    ``levels[d - 1]`` holds the noisy nodes of depth d (2^d x 2^d), d = 1..h,
    all of one variance ``variances[d - 1]`` per level; the root is
    ``total`` (exact).  Two passes (Hay et al. VLDB 2010, with a variance
    per level as in Cormode et al. ICDE 2012 Sec 4.3): bottom-up, each node's
    inverse-variance mean of its own count and its children's estimate;
    top-down, each parent's discrepancy shared equally by its four
    children (equal variances).  This is the least-squares (BLUE) estimate
    of the tree with independent per-node noise.
    """
    h = len(levels)

    def childsum(a: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        m = a.shape[0] // 2
        return a.reshape(m, 2, m, 2).sum(axis=(1, 3))

    z: list[npt.NDArray[np.float64]] = [np.empty(0)] * h  # every depth is set, deepest first, before it is read
    V = [0.0] * h
    z[h - 1] = levels[h - 1].astype(np.float64)
    V[h - 1] = float(variances[h - 1])
    for d in range(h - 2, -1, -1):
        c, vc, v = childsum(z[d + 1]), 4.0 * V[d + 1], float(variances[d])
        if v == 0.0 or vc == 0.0:  # a level measured exactly (huge epsilon)
            z[d] = levels[d].astype(np.float64) if v == 0.0 else c
            V[d] = 0.0
        else:
            z[d] = (levels[d] * vc + c * v) / (v + vc)
            V[d] = v * vc / (v + vc)
    x = np.array([[float(total)]])
    for d in range(h):
        x = z[d] + np.repeat(np.repeat((x - childsum(z[d])) / 4.0, 2, axis=0), 2, axis=1)
    return x


def plan_quadtree(
    shape: tuple[int, ...] | Policy, epsilon: Real, *, budget: Literal["geometric", "uniform"] = "geometric",
) -> Plan[HistogramRelease]:
    """Plan the DP quadtree of Cormode et al. (ICDE 2012) with their geometric budget split.

    The k x k domain (padded to 2^h x 2^h, h = ceil(log2 max side)) is cut
    into four quadrants, recursively, down to single cells; every node below
    the root (whose count is the public n) gets a noisy count, level by
    level with its own share of epsilon (:func:`quadtree_shares`), then
    weighted least squares (:func:`_quad_wls`) makes the tree consistent.

    Parameters
    ----------
    shape : (rows, cols) or a 2-D FullDomain Policy
    epsilon : float or Fraction, > 0
    budget : "geometric" or "uniform"
        Cormode et al.'s geometric split (default; DPBench's QuadTree) or
        an equal share per level.

    Returns
    -------
    Plan
        ``measure(hist2d, generator)`` takes int64 counts of the shape and
        returns a :class:`HistogramRelease` whose ``histogram`` is the
        least-squares leaf estimate (float64, same shape).

    Raises
    ------
    ValueError, TypeError
        A bad shape, policy, epsilon or budget; a domain whose tree does
        not fit in memory.

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public: level d's nodes partition the domain, so a moved record changes
    two of its counts by one (L1 sensitivity 2) and discrete Laplace noise
    of scale 2 / (epsilon share_d), rounded up, spends at most
    epsilon share_d; the shares sum to at most 1 and the levels compose
    sequentially (000 Thm 4.1, Thm 5.1).  The root is n, public under
    bounded neighbours.  Least squares is post-processing.

    Sensitivity
    -----------
    2 per level, exact: the first and last cell lie in different nodes of
    every level below the root (bounded DP, the complete graph).

    Runtime
    -------
    O(N_2) with N_2 = 4^h the padded domain: one draw per node (4/3 N_2 in
    all) and two passes.

    References
    ----------
    .. [1] Cormode, Procopiuc, Srivastava, Shen, Yu. *Differentially Private Spatial Decompositions.*
        ICDE 2012, Sec 4.2 (geometric budget: eps_i proportional to 2^((h - i)/3)) and Sec 4.3 (least squares).
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (the two passes).
    .. [3] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (QuadTree among the 2-D baselines).
    """
    shp, pol = dp_shape(shape, dims=2)
    eps = check_epsilon(epsilon)
    rows, cols = shp
    h = max(1, int(max(rows, cols) - 1).bit_length())
    side = 1 << h
    count = sum(4 ** d for d in range(1, h + 1))
    memory = check_memory(int64_bytes(4 * count + 4 * side * side), size=rows * cols, parameter="shape",
                          mechanism="quadtree")
    shares = quadtree_shares(h, budget)
    cals = [calibration(2, eps * s) for s in shares]
    scales = [c.scale for c in cals]
    variances = [discrete_laplace_variance(s) for s in scales]
    parts = tuple(NoisePart(f"level_{d}", 2, True,
                            "bounded DP: the level's nodes partition the domain, a moved record changes two of them "
                            "by one (exactly 2: the first and last cell lie in different nodes)",
                            c.epsilon_exact, c.scale, 4 ** d) for d, c in enumerate(cals, start=1))

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        pad = np.zeros((side, side), dtype=np.int64)
        pad[:rows, :cols] = hist
        # one draw per node, level by level (each level's noise vector drawn before its counts are read)
        noisy = [gen.add_discrete_laplace(sum_level(sum_level(pad, 0, 2, h, d), 1, 2, h, d), s).astype(np.float64)
                 for d, s in enumerate(scales, start=1)]
        est = _quad_wls(noisy, variances, int(hist.sum()))[:rows, :cols]
        return release(plan, est, gen, {"height": h, "budget": budget, "shares": [str(s) for s in shares],
                                         "scales": scales})

    return Plan(
        mechanism="quadtree", policy=pol,
        guarantee=DP + f"; quadtree of {h} noisy levels, {budget} budget split (Cormode et al. ICDE 2012)",
        citation=("Cormode, Procopiuc, Srivastava, Shen, Yu, 'Differentially private spatial decompositions', "
                  "ICDE 2012, Sec 4.2-4.3"),
        epsilon_requested=eps, parts=parts,
        aggregate=f"int64 2-D histogram of shape {shp}", aggregate_shape=shp,
        expected_error={"level_variances": variances},
        memory_bytes=memory, runtime="O(4^h): one draw per node, two least-squares passes",
        options={"budget": budget, "height": h, "shares": shares}, model="DP", check=check_hist(shp),
        run=run)


@guarantee_of(plan_quadtree)
def quadtree(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *,
    budget: Literal["geometric", "uniform"] = "geometric",
) -> HistogramRelease:
    """The DP quadtree with the geometric budget: ``plan_quadtree(hist.shape, epsilon, budget=budget).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (rows, cols)
        Exact non-negative counts of the 2-D ordinal domain.
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    budget : "geometric" or "uniform"
        As :func:`plan_quadtree`.

    Returns
    -------
    HistogramRelease
        The least-squares leaf estimate (float64, shape (rows, cols)).
    """
    h = np.asarray(hist)
    return plan_quadtree(h.shape, epsilon, budget=budget).measure(h, generator)
