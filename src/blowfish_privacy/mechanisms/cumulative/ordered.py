"""The ordered mechanism (000 Sec 7.1): noisy cumulative counts on a line, then isotonic regression.

Every cumulative count s_j = #{t <= x_j} gets discrete Laplace noise of
scale theta/epsilon, where theta = S(cumulative, P) is the policy's
cumulative sensitivity (1 for the line graph, the threshold in bins for
G^{d,theta}); the total n is public (known cardinality, 000 Sec 2); then
isotonic regression clipped to [0, n].  The result is a
:class:`~._common.CumulativeRelease`; the noise and the regression run in
the threads of :mod:`._oh`'s kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ... import _streams
from ..._validation import check_epsilon
from ...noise import Generator, calibration, discrete_laplace_variance
from .._docs import guarantee_of
from ..plan import NoisePart, Plan, int64_bytes
from ._common import CumulativeRelease, cumulative_theta, policy_guarantee
from ._oh import hist_check, isotonic_cumulative, release, stream_key, ts
from ..._typing import Real

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = ["ordered", "plan_ordered"]

CITATION = ("He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 (Section 7.1, Theorem 7.1); sampler: "
            "Canonne, Kamath, Steinke 2020, Algorithm 2")


def plan_ordered(policy: Policy, epsilon: Real, *, keep_noisy: bool = False) -> Plan[CumulativeRelease]:
    """Plan the ordered mechanism (000 Sec 7.1): public inputs only.

    Parameters
    ----------
    policy : Policy
        1-D ordinal domain, no constraints.
    epsilon : float or Fraction, > 0
    keep_noisy : bool
        Keep the pre-inference cumulative counts in ``noisy_cumulative``.

    Returns
    -------
    Plan
        Noisy cumulative counts made monotone by isotonic regression,
        released by ``measure(hist, generator)`` (:class:`CumulativeRelease`).

    Privacy
    -------
    (epsilon, policy)-Blowfish privacy for a 1-D ordinal policy without
    constraints: each cumulative count s_1..s_{|T|-1} gets exact discrete
    Laplace noise of scale theta/epsilon; s_|T| = n is public (bounded
    neighbours); isotonic regression is post-processing (000 Thm 5.1, Thm
    7.1, Thm 4.3).

    Sensitivity
    -----------
    theta = ``policy.sensitivity("cumulative")``: the largest bin distance of
    a secret edge, exact (1 for ``Line()``, the threshold in bins for
    ``DistanceThreshold``; a value moved across theta bins changes at most
    theta cumulative counts by 1, 000 Sec 7.1).

    Runtime
    -------
    O(|T|): noise, then isotonic regression (pool adjacent violators, in C).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy: Tuning Privacy-Utility Trade-offs using Policies.*
        SIGMOD 2014 (paper 000), Sec 7.1, Def 7.2, Thm 7.1.
    .. [2] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Algorithm 2
        (the exact discrete Laplace sampler).
    """
    theta, domain, stated = cumulative_theta(policy)
    eps = check_epsilon(epsilon)
    N = domain.size
    parts = ()
    var = 0.0
    if N > 1 and theta > 0:
        cal = calibration(theta, eps)
        var = discrete_laplace_variance(cal.scale)
        parts = (NoisePart("S", theta, True, f"cumulative sensitivity of {policy.secrets!r}: the largest bin "
                           "distance of a secret edge "
                           "(Section 7.1 of the Blowfish paper)", cal.epsilon_exact, cal.scale, N - 1),)
    # N - 1 noisy cumulative counts, each used by A = 1 position: sum of A (N + 1 - A) is (N - 1) N
    error = var * float((N - 1) * N) / (N * (N + 1) / 2) if var else 0.0
    return Plan(
        mechanism="ordered", policy=policy, guarantee=policy_guarantee(policy), citation=CITATION,
        epsilon_requested=eps, parts=parts, aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": error}, memory_bytes=int64_bytes((5 if keep_noisy else 2) * N),
        runtime="O(|T|)", options={"keep_noisy": bool(keep_noisy), "theta": theta}, release_sensitivity=stated,
        check=hist_check(N), run=_run,
    )


def _run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    if plan.parts and not plan.options["keep_noisy"] and not getattr(gen, "needs_values", False):
        # the noise drawn in the kernel's threads, chunk by chunk just before
        # the chunk's counts are read (stream g of a key taken from gen for
        # chunk g), in the output's place; then the chunked regression on the
        # same threads (the auditor's generators, which see each noisy value
        # with its true one, take the path below)
        key = stream_key(gen)
        try:
            cum, n = _streams.ordered_cumulative_streams(hist, key, *ts(plan.parts[0].scale),
                                                         threads=getattr(gen, "threads", 1))
        finally:
            key.fill(0)
        return release(plan, cum, n, gen, None, params={"theta": plan.options["theta"]})
    n = int(hist.sum())
    true_cum = np.cumsum(hist)
    noisy = true_cum.astype(np.float64)
    if plan.parts:
        noisy[:-1] = gen.add_discrete_laplace(true_cum[:-1], plan.parts[0].scale)
    cum = isotonic_cumulative(noisy, n)
    return release(plan, cum, n, gen, noisy if plan.options["keep_noisy"] else None,
                    params={"theta": plan.options["theta"]})


@guarantee_of(plan_ordered)
def ordered(
    hist: npt.ArrayLike, policy: Policy, epsilon: Real, generator: Generator | None = None, *, keep_noisy: bool = False,
) -> CumulativeRelease:
    """The ordered mechanism (000 Sec 7.1) for a 1-D ordinal policy.

    ``plan_ordered(policy, epsilon, keep_noisy=...).measure(hist, generator)``.
    Error per range query at most 4 theta^2/eps^2 before inference (000
    eq. 12 for theta = 1); isotonic regression clipped to [0, n] after.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact non-negative counts per value of the 1-D ordinal domain.
    policy : Policy
    epsilon : float
    generator : Generator, optional (a new secure one by default)
    keep_noisy : bool
        Keep the pre-inference cumulative counts in ``noisy_cumulative``.

    Returns
    -------
    CumulativeRelease
        Cumulative counts (float64, shape (|T|,), non-decreasing in [0, n],
        last = n); ``range_query(i, j)`` answers ranges.
    """
    return plan_ordered(policy, epsilon, keep_noisy=keep_noisy).measure(hist, generator)
