"""GreedyH: a binary hierarchy whose per-level budget is chosen greedily for a range workload.

The greedy hierarchical strategy of DAWA's second step (Li, Hay, Miklau,
Wang, "A data- and workload-aware algorithm for range queries under
differential privacy", PVLDB 2014, Sec 4), used on its own over the full
domain as DPBench does (Hay et al., SIGMOD 2016: "GreedyH", every cell its
own bucket).  A binary tree over the |T| cells (padded to 2^h leaves, the
padding known to be zero); the root is the total n, public under bounded
DP; level l (1 = the root's children, h = the cells) is measured with
discrete Laplace noise of scale 2 / (epsilon * share_l); least squares
(Hay et al.'s two passes with per-level variances) gives the estimate.

Shares per node (a given workload, the default there)
    For an explicit workload of ranges, :func:`node_greedy` chooses one
    share per node as the paper does: bottom-up, each node splits the
    budget that reaches it between its own total and its children's
    strategy, keeping the split (a grid of 100) of least workload error,
    computed exactly from the children's inverse normal matrices by
    Sherman-Morrison (only u = S 1, 1'u and the error per node are kept);
    leaves that no query tells apart are measured as one total and spread
    uniformly; the choice discounts deep nodes as DPBench's reference code
    does (see :func:`node_greedy`).  Node shares are exact Fractions
    summing to at most 1 along every root-to-leaf path; every node is
    calibrated on its own (:func:`node_calibrations`) and the estimate is
    weighted least squares with per-node variances
    (:func:`node_hierarchy_estimate`).  This is what DPBench runs as
    GreedyH (with its random ranges as the workload); it beats the
    per-level shares below by a wide margin there.
Shares per level (no workload, or ``weights="level"``)
    One weight per level from :data:`~.dawa.GREEDY_CHOICES` relative to
    the leaves' weight, chosen bottom-up, keeping the choice of least
    workload error; the shares are the weights normalised to sum 1.  The
    workload error of a choice is the expected squared error when every
    query sums the up-pass (subtree) estimates of its canonical dyadic
    nodes, an upper bound on the error of the least-squares estimate (the
    best linear unbiased one).  The paper's GreedyH weighs nodes; one
    weight per level is our simplification (the one DAWA's second step
    uses in :mod:`.dawa`).  For an explicit workload of ranges the search
    is :func:`.dawa.greedy_shares`.  For the default workload (every range
    [i, j] of the domain) :func:`all_range_shares` uses the exact
    least-squares error when |T| is a power of two
    (:func:`all_range_error_exact`: the hierarchy's normal matrix is
    diagonal in the Haar basis), otherwise the up-pass criterion in closed
    form (:func:`all_range_error`: a node [a, b) is a canonical node of
    exactly (a + 1)(|T| - b + 1) - (a' + 1)(|T| - b' + 1) ranges, [a', b')
    its parent).

Privacy guarantee
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public.  Per node: a move from u to v changes by one the counts of the
    nodes on the root-to-leaf paths of u and of v (below their common
    ancestor), each node of share w at scale >= 2/(epsilon w) loses at
    most epsilon w / 2, and the shares along a path sum to at most 1, so
    the loss is at most epsilon (the plan records the exact largest path
    sum of the calibrated epsilons).  Per level:
    one record moving from u to v changes, on each level, the
    counts of the node holding u and the node holding v by one each: L1
    sensitivity 2 per level, exactly 2 (for every level l >= 1 the cells 0
    and |T| - 1 lie in different nodes because |T| > 2^(h-1)).  Level l's
    scale is >= 2 / (epsilon share_l) (rounded up by the exact sampler's
    calibration), so it spends <= epsilon share_l, and the levels compose
    to <= epsilon (000 Thm 5.1; exact discrete Laplace: Canonne, Kamath,
    Steinke 2020).  The shares depend on |T|, epsilon and the workload
    only (public).  ``tests/mechanisms/test_greedyh.py`` audits the plan
    exactly with ``audit.exact`` on tiny domains.
Runtime
    Plan: O(h^3 |C|) for the all-range criterion (|C| = 4 weights tried per
    level, each in closed form), O(h |C| q log |T|) for q given ranges
    per level, O(h q |T|) time and O(q |T|) memory per node; a
    domain whose hierarchy does not fit the memory available is refused
    before the search.  Measurement O(|T|).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Literal

import numpy as np
import numpy.typing as npt

from .._typing import Real
from .._validation import check_epsilon
from ..noise import Generator, calibration
from ..mechanisms._dp import DP, dp_shape, release
from ..mechanisms.histogram import shape_check as check_hist
from ..mechanisms._docs import guarantee_of
from ..mechanisms._trees import greedy_level_shares, hierarchy_estimate, tree_height
from ..mechanisms.data_dependent._subtree_variances import SubtreeVariances
from ..mechanisms.data_dependent.dawa import (GREEDY_CHOICES, check_range_workload, greedy_shares, level_variances,
                                              workload_error)
from ..mechanisms.data_dependent._greedy_nodes import (
    node_calibrations,
    node_greedy,
    node_hierarchy_estimate,
    range_workload_matrix,
)
from ..mechanisms.histogram import HistogramRelease
from ..mechanisms.plan import NoisePart, Plan, check_memory, int64_bytes
from ..policy._policy import Policy

__all__ = ["all_range_error", "all_range_error_exact", "all_range_shares", "greedyh", "plan_greedyh"]

_CITE = ("Li, Hay, Miklau, Wang, 'A data- and workload-aware algorithm for range queries under differential "
         "privacy', PVLDB 2014, Sec 4 (GreedyH); used standalone as in Hay et al., SIGMOD 2016 (DPBench)")


def _height(m: int) -> int:
    """Levels below the root of GreedyH's binary hierarchy over m values: ceil(log2 m), at least 1."""
    return max(1, tree_height(m, 2))


def _node_variances(shares: Sequence[Real], m: int, eps: Real) -> list[npt.NDArray[np.float64]]:
    """Per level (0 = root) the variance of every node's noisy count: 0 root/padding, inf unobserved (O(m))."""
    h = len(shares)
    out = [np.zeros(1)]
    for level, v_level in enumerate(level_variances(shares, eps)[1:], start=1):
        v = np.full(1 << level, v_level)
        v[(np.arange(1 << level) << (h - level)) >= m] = 0.0
        out.append(v)
    return out


def _holding_sum(m: int, w: int) -> int:
    """Sum over the full nodes [a, a + w) of width w (a = 0, w, ...; a + w <= m) of (a + 1)(m - a - w + 1).

    The number of ranges [i, j] of 0..m-1 holding each such node entirely,
    summed in closed form (exact integers).
    """
    F = m // w
    A = m - w + 1
    s1 = F * (F - 1) // 2
    s2 = (F - 1) * F * (2 * F - 1) // 6
    return F * A + w * (A - 1) * s1 - w * w * s2


def all_range_error(shares: Sequence[Real], m: int, eps: Real) -> float:
    """Sum over every range [i, j] of 0..m-1 of the up-pass error criterion (module docstring), O(h^2).

    Only full nodes (every leaf below is real) are canonical nodes of a
    range (a node holding padding is held by no range, nor is its parent),
    and the full nodes of a level share one subtree variance; the number of
    ranges whose canonical node is a full node [a, b) of the level sums in
    closed form (:func:`_holding_sum`: ranges holding the node minus those
    holding its parent).
    """
    h = len(shares)
    sub = SubtreeVariances(level_variances(shares, eps), m)
    total = 0.0
    parent = _holding_sum(m, 1 << h)
    for level in range(1, h + 1):
        cur = _holding_sum(m, 1 << (h - level))
        count = cur - 2 * parent  # each full child has a full parent or one holding padding (held by no range)
        if count > 0:
            if sub.full[level] == np.inf:
                return float("inf")
            total += float(count) * sub.full[level]
        parent = cur
    return total


def all_range_error_exact(shares: Sequence[Real], m: int, eps: Real) -> float:
    """Exact expected squared error summed over every range, least-squares estimate, m = 2^h (O(h^2)).

    The normal matrix of the hierarchy, sum over levels of B_l / v_l (B_l:
    all-ones blocks of the level's node width w_l, v_l its noise variance),
    is diagonal in the Haar basis: a Haar wavelet of support S is an
    eigenvector with eigenvalue lambda(S) = sum over levels with
    w_l <= S/2 of w_l / v_l (wider nodes hold its whole support and see
    0); the constant vector is the public root (no error).  So the
    least-squares error covariance is sum over wavelets of
    psi psi^T / (S lambda(S)), and the all-range error of one wavelet,
    sum over ranges of (W psi)^2 = (m + 1) sum P^2 - (sum P)^2 with P its
    prefix sums (a triangle of height S/2), depends on S only:
    total = sum over S of (m / S) ||W psi_S||^2 / (S lambda(S)).  A level
    measured without noise (variance 0, a huge epsilon) makes every wavelet
    it sees exact (lambda infinite: no error).
    """
    h = len(shares)
    if m != 1 << h:
        raise ValueError(f"the exact all-range error needs m = 2^h, got m = {m}, h = {h}")
    inv_var = []
    for v in level_variances(shares, eps)[1:]:
        inv_var.append(0.0 if v == np.inf else (np.inf if v == 0 else 1.0 / v))
    total = 0.0
    for j in range(1, h + 1):
        S = 1 << j
        lam = sum((1 << (h - level)) * inv_var[level - 1] for level in range(1, h + 1) if (1 << (h - level)) <= S // 2)
        if lam == 0:
            return float("inf")
        if lam == np.inf:
            continue
        half = S // 2
        sum_p = float(half) * half
        sum_p2 = float(2 * ((half - 1) * half * (2 * half - 1) // 6) + half * half)
        w2 = (m + 1) * sum_p2 - sum_p * sum_p
        total += (m // S) * w2 / (S * lam)
    return total


def all_range_shares(m: int, eps: Real) -> list[Fraction]:
    """Greedy per-level shares for the all-range workload (the search of :func:`.dawa.greedy_shares`).

    The criterion is :func:`all_range_error_exact` when m is a power of
    two, else the up-pass bound :func:`all_range_error`.
    """
    h = _height(m)
    crit = all_range_error_exact if m == 1 << h else all_range_error
    return greedy_level_shares(h, lambda shares: crit(shares, m, eps), GREEDY_CHOICES)




def plan_greedyh(
    size: int | Policy, epsilon: Real, *, workload: npt.ArrayLike | None = None,
    weights: Literal["node", "level"] = "node",
) -> Plan[HistogramRelease]:
    """Plan GreedyH (DAWA paper Sec 4) on the full domain: a binary hierarchy with greedy per-level budgets.

    Parameters
    ----------
    size : int >= 1 or 1-D FullDomain Policy
        |T|, the number of cells.
    epsilon : float or Fraction, > 0
    workload : None, (lo, hi) pair of int arrays or int array of shape (q, 2)
        Inclusive ranges the shares are chosen for; None: every range of
        the domain (:func:`all_range_shares`, one share per level).
    weights : "node" or "level"
        With a workload: one share per node, the paper's GreedyH
        (:func:`node_greedy`, the default), or one per level (the earlier
        simplification, :func:`.dawa.greedy_shares`).  Ignored without a
        workload.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` takes int64 counts of shape (|T|,) and
        releases a :class:`~.histogram.HistogramRelease` whose float64
        ``histogram`` (|T|,) is the least-squares leaf estimate; ranges are
        sums of it.  ``expected_error["workload_mse_bound"]``: the up-pass
        criterion per query (an upper bound on the least-squares error);
        for the all-range workload and |T| a power of two also
        ``"range_query_mse"``, the exact mean squared error of a uniformly
        random range (:func:`all_range_error_exact`).  Per node:
        ``"workload_mse_estimate"``, the least-squares mean squared error
        of the given ranges with continuous-Laplace variances at the node
        scales before rounding (the strategy's exact error in that model;
        leaves measured as one total add the data's own spread, not counted).

    Raises
    ------
    ValueError
        A policy whose secrets are not FullDomain, a bad workload, a domain
        whose hierarchy (6 * 2^h words) needs more memory than a plan may
        ask for (:func:`~.plan.check_memory`).

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-DP with n
    public (the root, n, is not perturbed); level l spends at most
    epsilon * share_l and the levels compose to at most epsilon.

    Sensitivity
    -----------
    2 per level, exact: a moved record changes the two nodes of the level
    holding its old and new value by one each, and the first and last cell
    lie in different nodes of every level (|T| > 2^(h-1)).  Level l's scale
    is 2 / (epsilon share_l), rounded up by the exact sampler's calibration.

    Runtime
    -------
    Plan O(h^2) per tried share vector for the all-range workload (closed
    forms), O(h + q log |T|) for q given ranges per level, O(h q |T|)
    per node (a dense q x 2^h workload matrix); measurement O(|T|).

    References
    ----------
    Li, Hay, Miklau, Wang, "A data- and workload-aware algorithm for range
    queries under differential privacy", PVLDB 2014, Sec 4 (GreedyH); Hay,
    Machanavajjhala, Miklau, Chen, Zhang, "Principled evaluation of
    differentially private algorithms using DPBench", SIGMOD 2016 (GreedyH
    on the full domain); Hay, Rastogi, Miklau, Suciu, VLDB 2010 Sec 4
    (least squares on a hierarchy).
    """
    shp, pol = dp_shape(size, dims=1)
    N = shp[0]
    eps = check_epsilon(epsilon)
    h = _height(N)
    memory = check_memory(int64_bytes(6 << h), size=N, parameter="size", mechanism="greedyh")
    exact = {}
    if workload is None:
        shares = all_range_shares(N, eps)
        nq = N * (N + 1) // 2
        bound = all_range_error(shares, N, eps) / nq
        if N == 1 << h:
            exact = {"range_query_mse": all_range_error_exact(shares, N, eps) / nq}
        wname = "all ranges"
    elif weights == "node":
        lo, hi = check_range_workload(workload, N)
        return _plan_node_greedyh(N, shp, pol, eps, lo, hi, h)
    elif weights != "level":
        raise ValueError(f"weights must be 'node' or 'level', got {weights!r}")
    else:
        lo, hi = check_range_workload(workload, N)
        queries: list[tuple[int, int, list[int]]] = [(int(a), int(b), []) for a, b in zip(lo.tolist(), hi.tolist())]
        shares = greedy_shares(N, queries, eps)
        bound = workload_error(shares, N, queries, eps) / len(queries)
        wname = f"{len(queries)} given ranges"
    scales: list[Fraction | None] = []
    parts: list[NoisePart] = []
    for level, s in enumerate(shares, start=1):
        if s == 0:
            scales.append(None)
            continue
        cal = calibration(2, eps * s)
        scales.append(cal.scale)
        parts.append(NoisePart(f"level_{level}", 2, True,
                               "bounded DP: a moved record changes two nodes of the level by one each (exactly 2: "
                               "the first and last cell lie in different nodes)",
                               cal.epsilon_exact, cal.scale, 1 << level))

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        est = hierarchy_estimate(hist, scales, gen)
        return release(plan, est, gen, {"level_shares": [float(s) for s in shares],
                                         "scales": [None if s is None else s for s in scales]})

    return Plan(
        mechanism="greedyh", policy=pol,
        guarantee=DP + f"; binary hierarchy of height {h}, per-level shares chosen greedily for {wname}",
        citation=_CITE, epsilon_requested=eps, parts=tuple(parts),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"workload_mse_bound": bound, "workload": wname, **exact},
        memory_bytes=memory, runtime="O(|T|)",
        options={"level_shares": [str(s) for s in shares], "workload": wname},
        model="DP", check=check_hist(shp), run=run)


def _plan_node_greedyh(N: int, shp: tuple[int, ...], pol: Policy | None, eps: Fraction, lo: npt.NDArray[np.int64],
                       hi: npt.NDArray[np.int64], h: int) -> Plan[HistogramRelease]:
    """plan_greedyh with one share per node for the ranges [lo, hi] (:func:`node_greedy`)."""
    M = 1 << h
    q = int(lo.size)
    memory = check_memory(int64_bytes(6 * M + 2 * q * M), size=N, parameter="size", mechanism="greedyh")
    Q = range_workload_matrix(lo, hi, np.arange(N, dtype=np.int64), N, M)
    weights, collapsed, err = node_greedy(Q, N)
    del Q
    scales, spends, spent = node_calibrations(weights, eps)
    measured = sum(s is not None for level in scales for s in level)
    unit = 2.0 * (2.0 / float(eps)) ** 2  # continuous Laplace variance at scale 2 / epsilon
    part = NoisePart("nodes", 2, True,
                     "bounded DP: a moved record changes the counts of the nodes on two root-to-leaf paths by one "
                     "each (exactly 2 per path pair: the first and last cell share only the root); node shares sum "
                     "to at most 1 along every path, so the loss is at most the largest path sum of the nodes' "
                     "exact epsilons", spent, None, measured)

    def run(plan: Plan[HistogramRelease], hist: npt.NDArray[np.int64], gen: Generator) -> HistogramRelease:
        est = node_hierarchy_estimate(hist, scales, collapsed, gen)
        return release(plan, est, gen, {"weights": "node", "measured_nodes": measured})

    return Plan(
        mechanism="greedyh", policy=pol,
        guarantee=DP + f"; binary hierarchy of height {h}, per-node shares chosen greedily for {q} given ranges",
        citation=_CITE, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"workload_mse_estimate": err * unit / q, "workload": f"{q} given ranges",
                        "note": "continuous-Laplace variances of the node scales, least squares (exact in that model)"},
        memory_bytes=memory, runtime="O(|T|) plus one scale per distinct node share",
        options={"weights": "node", "workload": f"{q} given ranges", "measured_nodes": measured},
        model="DP", check=check_hist(shp), run=run)


@guarantee_of(plan_greedyh)
def greedyh(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *,
    workload: npt.ArrayLike | None = None, weights: Literal["node", "level"] = "node",
) -> HistogramRelease:
    """GreedyH on a histogram: ``plan_greedyh(hist.size, epsilon, workload=workload, weights=weights).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
    epsilon : float or Fraction, > 0
    generator : Generator, optional
    workload, weights
        As in :func:`plan_greedyh`.

    Returns
    -------
    HistogramRelease
        float64 ``histogram`` of shape (|T|,).
    """
    h = np.asarray(hist)
    return plan_greedyh(h.size, epsilon, workload=workload, weights=weights).measure(h, generator)


# ---------------------------------------------------------------------------
# GreedyH with one weight per node (Li et al. 2014 Sec 4), for a given workload of ranges
