"""Cumulative histograms and range queries (000 Sec 7).

Four mechanisms share one result type, :class:`CumulativeRelease`:

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
    Laplace noise on every cell (the plainest DP baseline), projected onto
    the non-negative histograms with the public total n.

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
    The ordered hierarchical engine (forest, plan, release) lives in
    :mod:`._oh`, the checks and :class:`CumulativeRelease` in
    :mod:`._cumulative_common`; every name is importable from here as before.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._validation import as_int, check_epsilon
from ..noise import Generator, discrete_laplace_variance
from .laplace import calibrate
from .plan import NoisePart, Plan, int64_bytes
from ._cumulative_common import (  # private names re-exported: importable from here as before
    CumulativeRelease,
    _as_histogram,
    _check_fanout,
    _cumulative_theta,
    _range_error,
    _tree_height,
)
from ._oh import (  # private names re-exported: importable from here as before
    _Forest,
    _hist_check,
    _isotonic_cumulative,
    _oh_plan,
    _oh_run,
    _oh_run_levels,
    _pre_inference_cumulative,
    _release,
)

__all__ = [
    "CumulativeRelease",
    "hierarchical",
    "identity",
    "ordered",
    "ordered_hierarchical",
    "plan_hierarchical",
    "plan_identity",
    "plan_ordered",
    "plan_ordered_hierarchical",
]


# ---------------------------------------------------------------------------
# public mechanisms


_CITE_ORDERED = "He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 7.1, Thm 7.1); sampler: CKS 2020 Alg. 2"
_CITE_OH = "He, Machanavajjhala, Ding, SIGMOD 2014 (000 Sec 7.2, Thm 7.2, eq. 13-15); inference: Hay et al. VLDB 2010"
_CITE_H = "Hay, Rastogi, Miklau, Suciu, VLDB 2010 (hierarchical with consistency)"


def _policy_guarantee(policy) -> str:
    return f"(epsilon, P)-Blowfish privacy for P = {policy!r}; the number of records n is public (bounded neighbours)"


def _dp_guarantee() -> str:
    return ("(epsilon, FullDomain)-Blowfish privacy, i.e. bounded epsilon-differential privacy; the number of "
            "records n is public")


def _size(size, name: str = "size") -> int:
    N = as_int(size, name)
    if N < 1:
        raise ValueError(f"{name} must be the number of bins, an integer >= 1, got {N}")
    return N


def plan_ordered(policy, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan the ordered mechanism (000 Sec 7.1): public inputs only.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy: each cumulative count s_1..s_{|T|-1}
        gets discrete Laplace noise of scale theta/epsilon, theta the
        policy's cumulative sensitivity (000 Thm 5.1, Thm 7.1); s_|T| = n
        is public.
    """
    theta, domain = _cumulative_theta(policy)
    eps = check_epsilon(epsilon)
    N = domain.size
    parts = ()
    var = 0.0
    if N > 1 and theta > 0:
        cal = calibrate(theta, eps)
        var = discrete_laplace_variance(cal.scale)
        parts = (NoisePart("S", theta, True, f"cumulative sensitivity of {policy.secrets!r}: the largest bin "
                           "distance of a secret edge (000 Sec 7.1)", cal.epsilon_exact, cal.scale, N - 1),)
    error = _range_error([(var, np.ones(N - 1, dtype=np.int64))], N) if var else 0.0
    return Plan(
        mechanism="ordered", policy=policy, guarantee=_policy_guarantee(policy), citation=_CITE_ORDERED,
        epsilon_requested=eps, parts=parts, aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": error}, memory_bytes=int64_bytes(5 * N),
        runtime="O(|T|)", options={"keep_noisy": bool(keep_noisy), "theta": theta},
        check=_hist_check(N), run=_ordered_run,
    )


def _ordered_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    true_cum = np.cumsum(hist)
    noisy = true_cum.astype(np.float64)
    if plan.parts:
        noisy[:-1] = gen.add_discrete_laplace(true_cum[:-1], plan.parts[0].scale)
    cum = _isotonic_cumulative(noisy, n)
    return _release(plan, cum, n, gen, noisy if plan.options["keep_noisy"] else None,
                    params={"theta": plan.options["theta"]})


def ordered(hist, policy, epsilon, generator: Generator | None = None, *, keep_noisy: bool = False) -> CumulativeRelease:
    """The ordered mechanism (000 Sec 7.1) for a 1-D ordinal policy.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy: each cumulative count s_1..s_{|T|-1}
        gets discrete Laplace noise of scale theta/epsilon with theta the
        policy's cumulative sensitivity (1 for ``Line()``, the threshold in
        bins for ``DistanceThreshold``; 000 Thm 5.1).  s_|T| = n is public.
    Utility
        Error per range query at most 4 theta^2/eps^2 before inference (000
        eq. 12 for theta = 1); isotonic regression clipped to [0, n] after.

    This is ``plan_ordered(policy, epsilon, keep_noisy=...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
        Exact counts per value of the policy's 1-D ordinal domain.
    policy : Policy
    epsilon : float
    generator : Generator, optional (a new secure one by default)
    keep_noisy : bool
        Keep the pre-inference cumulative counts in ``noisy_cumulative``.
    """
    hist = _as_histogram(hist)
    return plan_ordered(policy, epsilon, keep_noisy=keep_noisy).measure(hist, generator)


def plan_ordered_hierarchical(policy, epsilon, *, fanout: int = 16, split="optimal", keep_noisy: bool = False) -> Plan:
    """Plan the ordered hierarchical mechanism (000 Sec 7.2): public inputs only.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy for any 1-D ordinal policy, theta
        its cumulative sensitivity in bins (module docstring: the argument
        and the correction to the paper's budget for H_1).
    """
    theta, domain = _cumulative_theta(policy)
    f = _check_fanout(fanout)
    N = domain.size
    if theta == 0:  # no secret pair moves a cumulative count: nothing to hide
        return replace(plan_ordered(policy, epsilon, keep_noisy=keep_noisy), mechanism="ordered_hierarchical")
    block = N if theta >= N - 1 else theta
    return _oh_plan(N, block, f, epsilon, split, bool(keep_noisy), mechanism="ordered_hierarchical", theta=theta,
                    policy=policy, guarantee=_policy_guarantee(policy), citation=_CITE_OH)


def ordered_hierarchical(
    hist,
    policy,
    epsilon,
    generator: Generator | None = None,
    *,
    fanout: int = 16,
    split="optimal",
    keep_noisy: bool = False,
) -> CumulativeRelease:
    """The ordered hierarchical mechanism (000 Sec 7.2) with exact inference.

    Privacy guarantee
        (epsilon, policy)-Blowfish privacy for any 1-D ordinal policy, with
        theta its cumulative sensitivity in bins (the module docstring gives
        the argument and the correction to the paper's budget for H_1).
    Runtime
        O(|T|).
    Utility
        ``expected_range_error()``: exact pre-inference MSE of a random
        range query; the optimal split minimises it (000 eq. 15 with the
        exact constants of this structure).

    This is ``plan_ordered_hierarchical(policy, epsilon, ...).measure(hist, generator)``.

    Parameters
    ----------
    hist : array_like of int, shape (|T|,)
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
    """
    hist = _as_histogram(hist)
    plan = plan_ordered_hierarchical(policy, epsilon, fanout=fanout, split=split, keep_noisy=keep_noisy)
    return plan.measure(hist, generator)


def plan_hierarchical(size, epsilon, *, fanout: int = 16, keep_noisy: bool = False) -> Plan:
    """Plan the hierarchical mechanism (Hay et al. 2010), a DP baseline, for ``size`` bins.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy, i.e. bounded differential
        privacy with n public: the h levels below the public root each get
        noise of scale 2h/epsilon (one changed record changes two nodes per
        level).
    """
    N = _size(size)
    f = _check_fanout(fanout)
    return _oh_plan(N, N, f, epsilon, "optimal", bool(keep_noisy), mechanism="hierarchical", theta=N,
                    policy=None, guarantee=_dp_guarantee(), citation=_CITE_H)


def hierarchical(
    hist, epsilon, generator: Generator | None = None, *, fanout: int = 16, keep_noisy: bool = False
) -> CumulativeRelease:
    """The hierarchical mechanism (Hay et al. 2010) with consistency: a DP baseline.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy, i.e. bounded differential
        privacy with n public: the h levels below the public root each get
        noise of scale 2h/epsilon (one changed record changes two nodes per
        level).
    Runtime
        O(|T|).

    This is ``plan_hierarchical(hist.size, epsilon, ...).measure(hist, generator)``.
    """
    hist = _as_histogram(hist)
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


def plan_identity(size, epsilon, *, keep_noisy: bool = False) -> Plan:
    """Plan Laplace noise on every cell (the plainest DP baseline) for ``size`` bins.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy (bounded DP): the histogram
        has sensitivity 2, noise scale 2/epsilon per cell.
    """
    N = _size(size)
    eps = check_epsilon(epsilon)
    cal = calibrate(2, eps)
    var = discrete_laplace_variance(cal.scale)
    usage = N - np.arange(N, dtype=np.int64)  # cell i is used by C(i..N)
    part = NoisePart("cells", 2, True, "bounded DP: one changed record changes two cells by 1", cal.epsilon_exact,
                     cal.scale, N)
    return Plan(
        mechanism="identity", policy=None, guarantee=_dp_guarantee(), citation="Dwork et al. 2006 (Laplace mechanism)",
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 histogram of shape ({N},)", aggregate_shape=(N,),
        expected_error={"range_query_mse_before_inference": _range_error([(var, usage)], N)},
        memory_bytes=int64_bytes(7 * N), runtime="O(|T| log |T|) (projection by sorting)",
        options={"keep_noisy": bool(keep_noisy)}, check=_hist_check(N), run=_identity_run,
    )


def _identity_run(plan: Plan, hist: np.ndarray, gen: Generator) -> CumulativeRelease:
    n = int(hist.sum())
    noisy = gen.add_discrete_laplace(hist, plan.parts[0].scale).astype(np.float64)
    proj = _project_simplex(noisy, float(n))
    cum = np.cumsum(proj)
    cum[-1] = n
    cum = np.minimum(np.maximum.accumulate(cum), n)
    return _release(plan, cum, n, gen, np.cumsum(noisy) if plan.options["keep_noisy"] else None, params={})


def identity(
    hist, epsilon, generator: Generator | None = None, *, keep_noisy: bool = False
) -> CumulativeRelease:
    """Laplace noise on every cell: the plainest DP baseline.

    Privacy guarantee
        (epsilon, FullDomain)-Blowfish privacy (bounded DP): the histogram
        has sensitivity 2, noise scale 2/epsilon per cell.
    Inference
        Projection onto the non-negative histograms summing to the public n
        (a convex set holding the truth, so the L2 error never grows).

    This is ``plan_identity(hist.size, epsilon).measure(hist, generator)``.
    """
    hist = _as_histogram(hist)
    return plan_identity(hist.size, epsilon, keep_noisy=keep_noisy).measure(hist, generator)
