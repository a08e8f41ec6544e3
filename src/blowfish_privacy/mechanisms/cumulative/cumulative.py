"""Cumulative histograms and range queries (000 Sec 7).

Five mechanisms share one result type, :class:`CumulativeRelease`:

``ordered``
    The ordered mechanism (000 Sec 7.1): every cumulative count
    s_j = #{t <= x_j} gets discrete Laplace noise of scale theta/epsilon,
    where theta = S(cumulative, P) is the policy's cumulative sensitivity
    (1 for the line graph, the threshold in bins for G^{d,theta}); the total
    n is public (known cardinality, 000 Sec 2); then isotonic regression
    clipped to [0, n].
``ordered_hierarchical``
    The ordered hierarchical (OH) mechanism (000 Sec 7.2): S nodes (the
    cumulative count at the end of every block of theta bins) and, per
    block, a fan-out-f tree H_i of height h = ceil(log_f theta).  Then
    weighted least-squares consistency over the whole OH structure (one
    tree: s_i has children s_{i-1} and the root of H_i) and isotonic
    regression.
``hierarchical``
    The DP baseline (Hay et al., VLDB 2010): one fan-out-f tree over the
    domain with consistency; OH with a single block.
``identity``
    Laplace noise on every cell (the plainest DP baseline, as DPBench's
    reference runs it), then only the unbiased least-squares step onto the
    public total n (every cell moves by the same amount).  Its cumulative
    counts end at n but need not be non-decreasing.
``identity_projected``
    The same noisy cells projected onto the non-negative histograms with the
    public total n (the simplex): lower error on sparse data at small n, but
    the projection biases range sums at scale; a separate, labelled variant.

Privacy guarantee and the OH budget
    OH releases s_1..s_{k-1} (s_k = n is public) with noise 1/eps_S and the
    tree nodes *below* each block's root with noise 2h/eps_H.  A neighbour
    pair (one value moved by at most theta bins) crosses at most one block
    boundary, so it changes at most one S node and at most h tree nodes in
    each of at most two blocks, each by 1: the privacy loss is at most
    eps_S + eps_H = epsilon.  This is Thm 7.2's argument; the paper also
    gives H_1 the budget eps_S + eps_H (noise 2h/(eps_S + eps_H)), which
    fails for a pair crossing the first block boundary (it changes s_1, h
    nodes of H_1 and h of H_2: loss eps/(2h) + eps/2 + eps_H/2, above eps
    whenever eps_H > eps (h-1)/h), so here every tree gets eps_H.  The
    exact privacy loss of every neighbour pair is checked by brute force in
    the tests.  With theta >= |T| - 1 there is one block: the hierarchical
    mechanism with a public root; with theta = 1 the trees are single bins
    and OH is the ordered mechanism.
Runtime
    O(|T|) for noise, tree, consistency (two passes) and isotonic
    regression; the hot loops are C.
Utility
    ``expected_range_error()`` gives the exact mean squared error of a
    uniformly random range query for the noisy release *before* inference
    (000 eq. 13-15 give its asymptotic form); inference is a projection and
    only lowers error in its norm.
Modules
    The ordered mechanism is in :mod:`.ordered`; the ordered hierarchical
    engine (forest, plan, release) lives in :mod:`._oh`, the checks and
    :class:`CumulativeRelease` in :mod:`._common`.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._validation import as_int, check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance
from .._docs import guarantee_of
from .._trees import check_fanout
from ..plan import NoisePart, Plan, int64_bytes
from ._common import DP_SENSITIVITY, CumulativeRelease, cumulative_theta, policy_guarantee
from ._oh import hist_check, oh_plan, release
from .ordered import plan_ordered
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = [
    "CumulativeRelease",
    "hierarchical",
    "identity",
    "identity_projected",
    "ordered_hierarchical",
    "plan_hierarchical",
    "plan_identity",
    "plan_identity_projected",
    "plan_ordered_hierarchical",
]


# ---------------------------------------------------------------------------
# public mechanisms


_CITE_OH = ("He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 (Section 7.2, Theorem 7.2, equations 13-15); "
            "inference: Hay et al. VLDB 2010")
_CITE_H = "Hay, Rastogi, Miklau, Suciu, VLDB 2010 (hierarchical with consistency)"


def _dp_guarantee() -> str:
    return ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy; the number of "
            "records n is public")


def _size(size, name: str = "size") -> int:
    N = as_int(size, name)
    if N < 1:
        raise ValueError(f"{name} must be the number of bins, an integer >= 1, got {N}")
    return N


def plan_ordered_hierarchical(
    policy: Policy, epsilon: Real, *, fanout: int = 16, split: str | float = "optimal", keep_noisy: bool = False,
) -> Plan[CumulativeRelease]:
    """Plan the ordered hierarchical mechanism (000 Sec 7.2): public inputs only.

    Parameters
    ----------
    policy : Policy
        1-D ordinal domain, no constraints.
    epsilon : float or Fraction, > 0
    fanout : int >= 2
    split : "optimal" or float in (0, 1)
        Fraction of epsilon for the S nodes (optimal: 000 eq. 15 with the
        exact constants of this structure).
    keep_noisy : bool

    Returns
    -------
    Plan
        ``measure(hist, generator)`` releases the OH mechanism's consistent
        cumulative counts (:class:`CumulativeRelease`, float64, shape (|T|,)).

    Privacy
    -------
    (epsilon, policy)-Blowfish privacy for a 1-D ordinal policy without
    constraints: S nodes with noise 1/eps_S, the nodes below each block's
    (unreleased) root with noise 2h/eps_H, eps_S + eps_H = epsilon; a
    neighbour pair crosses at most one block boundary (000 Thm 7.2, with
    every tree on eps_H: the paper's larger budget for H_1 fails, see the
    module docstring and DEVELOPERS.md).  n is public.

    Sensitivity
    -----------
    theta = ``policy.sensitivity("cumulative")`` (exact) fixes the block
    width; per block the tree of height h = ceil(log_f theta) has L1
    sensitivity 2h (one record changes two leaves' paths), the S nodes 1.

    Runtime
    -------
    O(|T|): noise, weighted least-squares consistency over the OH tree (two
    passes) and isotonic regression, in C.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 7.2, Thm 7.2, eq. 13-15.
    .. [2] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010 (tree consistency).
    """
    theta, domain, stated = cumulative_theta(policy)
    f = check_fanout(fanout)
    N = domain.size
    if theta == 0:  # no secret pair moves a cumulative count: nothing to hide
        return replace(plan_ordered(policy, epsilon, keep_noisy=keep_noisy), mechanism="ordered_hierarchical")
    block = N if theta >= N - 1 else theta
    return oh_plan(N, block, f, epsilon, split, bool(keep_noisy), mechanism="ordered_hierarchical", theta=theta,
                    policy=policy, guarantee=policy_guarantee(policy), citation=_CITE_OH, release_sensitivity=stated)


@guarantee_of(plan_ordered_hierarchical)
def ordered_hierarchical(
    hist: npt.ArrayLike,
    policy: Policy,
    epsilon: Real,
    generator: Generator | None = None,
    *,
    fanout: int = 16,
    split: str | float = "optimal",
    keep_noisy: bool = False,
) -> CumulativeRelease:
    """The ordered hierarchical mechanism (000 Sec 7.2) with exact inference.

    ``plan_ordered_hierarchical(policy, epsilon, ...).measure(hist,
    generator)``.  ``expected_range_error()`` is the exact pre-inference MSE
    of a random range query; the optimal split minimises it.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts per value of the 1-D ordinal domain.
    policy : Policy
        1-D ordinal domain; ``Line()``, ``DistanceThreshold(theta)`` or any
        other secret graph (theta is then its cumulative sensitivity).
    epsilon : float
    generator : Generator, optional
    fanout : int >= 2
        Fan-out f of the per-block trees.
    split : "optimal" or float in (0, 1)
        Fraction of epsilon for the S nodes.
    keep_noisy : bool
        Keep the pre-inference cumulative counts.

    Returns
    -------
    CumulativeRelease
        The consistent cumulative counts: float64, shape (|T|,), last = n.
    """
    plan = plan_ordered_hierarchical(policy, epsilon, fanout=fanout, split=split, keep_noisy=keep_noisy)
    return plan.measure(hist, generator)


def plan_hierarchical(
    size: int, epsilon: Real, *, fanout: int = 16, keep_noisy: bool = False,
) -> Plan[CumulativeRelease]:
    """Plan the hierarchical mechanism (Hay et al. 2010), a DP baseline, for ``size`` bins.

    Parameters
    ----------
    size : int >= 1
        The number of bins |T| (public).
    epsilon : float or Fraction, > 0
    fanout : int >= 2
        Children per tree node.
    keep_noisy : bool

    Returns
    -------
    Plan
        Its measurement releases the tree's leaves after consistency, as
        cumulative counts (:class:`CumulativeRelease`).

    Privacy
    -------
    (epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential
    privacy with n public: the h levels below the public root each get noise
    of scale 2h/epsilon.

    Sensitivity
    -----------
    2h, exact: one changed record changes one node per level on two paths,
    h = ceil(log_f |T|) levels below the root.

    Runtime
    -------
    O(|T|): noise, consistency (two passes) and isotonic regression, in C.

    References
    ----------
    .. [1] Hay, Rastogi, Miklau, Suciu. *Boosting the Accuracy of Differentially Private Histograms Through
        Consistency.* PVLDB 3(1), 2010.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 7.2 (the same structure with one block).
    """
    N = _size(size)
    f = check_fanout(fanout)
    return oh_plan(N, N, f, epsilon, "optimal", bool(keep_noisy), mechanism="hierarchical", theta=N,
                    policy=None, guarantee=_dp_guarantee(), citation=_CITE_H, model="DP",
                    release_sensitivity=DP_SENSITIVITY)


@guarantee_of(plan_hierarchical)
def hierarchical(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, fanout: int = 16,
    keep_noisy: bool = False
) -> CumulativeRelease:
    """The hierarchical mechanism (Hay et al. 2010) with consistency: a DP baseline.

    ``plan_hierarchical(hist.size, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts per value of the 1-D ordinal domain.
    epsilon : float
    generator : Generator, optional
    fanout : int >= 2
    keep_noisy : bool

    Returns
    -------
    CumulativeRelease
        The tree's consistent leaves as cumulative counts (float64, shape
        (|T|,), last = n).
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_hierarchical(hist.size, epsilon, fanout=fanout, keep_noisy=keep_noisy).measure(hist, generator)


def _project_simplex(y: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection onto {x >= 0, sum x = total} (sort-based, O(n log n))."""
    if total == 0:
        return np.zeros_like(y)
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - total
    idx = np.arange(1, y.size + 1)
    cond = u - css / idx > 0
    hits = np.nonzero(cond)[0]
    rho = int(hits[-1]) if hits.size else 0  # empty only by rounding when total << max(y)
    tau = css[rho] / (rho + 1)
    return np.maximum(y - tau, 0.0)


def _identity_parts(size, epsilon):
    N = _size(size)
    eps = check_epsilon(epsilon)
    cal = calibration(2, eps)
    var = discrete_laplace_variance(cal.scale)
    # cell i is used by A = N - i of the cumulative positions C(i..N): sum over A = 1..N of A (N + 1 - A)
    usage_sum = N * (N + 1) * (N + 2) // 6
    part = NoisePart("cells", 2, True, "bounded DP: one changed record changes two cells by 1", cal.epsilon_exact,
                     cal.scale, N)
    return N, eps, var, usage_sum, part


def _identity_range_mse(N: int, var: float) -> float:
    """Exact mean squared error of a uniformly random range [i, j] after the total-n step.

    With e the cell noises (independent, variance ``var``) and the release
    x + e - mean(e), a range of L cells errs by sum_R e - (L/N) sum e, of
    variance var L (1 - L/N); the N - L + 1 ranges of length L are averaged
    over the N (N + 1) / 2 ranges in exact integers.
    """
    if N == 1:
        return 0.0
    # sum over L = 1..N of (N - L + 1) L (N - L) = (N - 1) N (N + 1) (N + 2) / 12, an integer (4 consecutive)
    total = (N - 1) * N * (N + 1) * (N + 2) // 12
    return var * float(Fraction(total, N) / Fraction(N * (N + 1), 2))


def plan_identity(size: int, epsilon: Real, *, keep_noisy: bool = False) -> Plan[CumulativeRelease]:
    """Plan Laplace noise on every cell (the plainest DP baseline) for ``size`` bins.

    Parameters
    ----------
    size : int >= 1
    epsilon : float or Fraction, > 0
    keep_noisy : bool
        Keep the noisy cumulative counts before the total-n step.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` releases the noisy cells, each moved by
        the same amount so that they sum to the public n (the least-squares
        estimate under that constraint: unbiased, it only lowers the error),
        as cumulative counts (:class:`CumulativeRelease`; the last is n, but
        unlike the other mechanisms here they are *not* made non-decreasing:
        no biasing post-processing).  ``expected_error`` holds the exact mean
        squared error of a uniformly random range before
        (``range_query_mse_before_inference``) and after
        (``range_query_mse``) the total-n step.  For the variant projected
        onto the non-negative histograms see :func:`plan_identity_projected`.

    Privacy
    -------
    Bounded epsilon-differential privacy with n public, that is
    (epsilon, FullDomain)-Blowfish privacy.

    Sensitivity
    -----------
    2, exact: one changed record changes two cells by 1.  Noise scale
    2/epsilon per cell.

    Runtime
    -------
    O(|T|).

    References
    ----------
    .. [1] Dwork, McSherry, Nissim, Smith. *Calibrating Noise to Sensitivity in Private Data Analysis.* TCC
        2006.
    .. [2] Hay, Machanavajjhala, Miklau, Chen, Zhang. *Principled Evaluation of Differentially Private
        Algorithms using DPBench.* SIGMOD 2016 (Identity: plain Laplace, the reference baseline).
    """
    N, eps, var, usage_sum, part = _identity_parts(size, epsilon)
    return Plan(
        mechanism="identity", policy=None, guarantee=_dp_guarantee(), citation="Dwork et al. 2006 (Laplace mechanism)",
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": var * float(usage_sum) / (N * (N + 1) / 2),
                        "range_query_mse": _identity_range_mse(N, var)},
        memory_bytes=int64_bytes(5 * N), runtime="O(|T|)",
        options={"keep_noisy": bool(keep_noisy)}, model="DP", release_sensitivity=DP_SENSITIVITY,
        check=hist_check(N), run=_identity_run,
    )


def _identity_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    noisy = gen.add_discrete_laplace(hist, plan.parts[0].scale).astype(np.float64)
    noisy_cum = np.cumsum(noisy) if plan.options["keep_noisy"] else None
    noisy += (n - float(noisy.sum())) / noisy.size  # least squares onto sum = n: unbiased
    cum = np.cumsum(noisy)
    cum[-1] = n
    return release(plan, cum, n, gen, noisy_cum, params={"post_processing": "total n (least squares)"})


@guarantee_of(plan_identity)
def identity(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, keep_noisy: bool = False
) -> CumulativeRelease:
    """Laplace noise on every cell: the plainest DP baseline.

    ``plan_identity(hist.size, epsilon).measure(hist, generator)``: the noisy
    cells moved by one common amount to sum to the public n (unbiased); no
    projection onto non-negative counts (:func:`identity_projected` has it).

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts; |T| is public.
    epsilon : float
    generator : Generator, optional
    keep_noisy : bool
        Keep the noisy cumulative counts before the total-n step.

    Returns
    -------
    CumulativeRelease
        Cumulative counts: float64, shape (|T|,), last = n (not necessarily
        non-decreasing).
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_identity(hist.size, epsilon, keep_noisy=keep_noisy).measure(hist, generator)


def plan_identity_projected(size: int, epsilon: Real, *, keep_noisy: bool = False) -> Plan[CumulativeRelease]:
    """Plan Laplace noise on every cell projected onto the non-negative histograms with total n.

    A labelled variant of :func:`plan_identity`: the same noisy cells, then
    the Euclidean projection onto {x >= 0, sum x = n} (the simplex scaled by
    the public n).  The projection is a convex set holding the truth, so the
    L2 error of the cells never grows, but it is *biased*: on data with many
    empty cells it shifts mass, and range sums at large n err more than
    plain Laplace (DPBench's HEPTH, INCOME, SEARCHLOGS at 10^5 to 10^7
    records: 3-6 times).  Use it when non-negative, consistent counts matter
    more than unbiased range sums.

    Parameters
    ----------
    size : int >= 1
    epsilon : float or Fraction, > 0
    keep_noisy : bool
        Keep the noisy cumulative counts before the projection.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` releases the projected cells as
        cumulative counts (:class:`CumulativeRelease`: non-decreasing, within
        [0, n], last = n).  ``expected_error`` holds the exact pre-projection
        all-range MSE only (the projection's error is data dependent).

    Privacy
    -------
    Bounded epsilon-differential privacy with n public, that is
    (epsilon, FullDomain)-Blowfish privacy; the projection is
    post-processing with the public n.

    Sensitivity
    -----------
    2, exact: one changed record changes two cells by 1.  Noise scale
    2/epsilon per cell.

    Runtime
    -------
    O(|T| log |T|): noise, then projection onto the non-negative histograms
    summing to n (by sorting).

    References
    ----------
    .. [1] Dwork, McSherry, Nissim, Smith. *Calibrating Noise to Sensitivity in Private Data Analysis.* TCC
        2006.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 7.3 (the baseline of the range-query experiment).
    """
    N, eps, var, usage_sum, part = _identity_parts(size, epsilon)
    return Plan(
        mechanism="identity_projected", policy=None, guarantee=_dp_guarantee(),
        citation="Dwork et al. 2006 (Laplace mechanism), projected onto the simplex with the public n",
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": var * float(usage_sum) / (N * (N + 1) / 2)},
        memory_bytes=int64_bytes(7 * N), runtime="O(|T| log |T|) (projection by sorting)",
        options={"keep_noisy": bool(keep_noisy)}, model="DP", release_sensitivity=DP_SENSITIVITY,
        check=hist_check(N), run=_identity_projected_run,
    )


def _identity_projected_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    noisy = gen.add_discrete_laplace(hist, plan.parts[0].scale).astype(np.float64)
    proj = _project_simplex(noisy, float(n))
    cum = np.cumsum(proj)
    cum[-1] = n
    cum = np.minimum(np.maximum.accumulate(cum), n)
    return release(plan, cum, n, gen, np.cumsum(noisy) if plan.options["keep_noisy"] else None,
                    params={"post_processing": "projection onto the simplex (non-negative, total n)"})


@guarantee_of(plan_identity_projected)
def identity_projected(
    hist: npt.ArrayLike, epsilon: Real, generator: Generator | None = None, *, keep_noisy: bool = False
) -> CumulativeRelease:
    """Laplace noise on every cell projected onto the non-negative histograms summing to n.

    ``plan_identity_projected(hist.size, epsilon).measure(hist, generator)``;
    the projection is a convex set holding the truth, so its L2 error never
    grows, but range sums are biased (see :func:`plan_identity_projected`).

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts; |T| is public.
    epsilon : float
    generator : Generator, optional
    keep_noisy : bool
        Keep the noisy cumulative counts before the projection.

    Returns
    -------
    CumulativeRelease
        The consistent cumulative counts: float64, shape (|T|,), non-decreasing, last = n.
    """
    hist = np.asarray(hist)  # checked once, by the plan's measure
    return plan_identity_projected(hist.size, epsilon, keep_noisy=keep_noisy).measure(hist, generator)
