"""Planning HDMM's marginals strategy under a Blowfish policy: exact discrete Laplace, least squares.

The noisy stage is the integer queries ``K theta_S M_S x`` plus exact
discrete Laplace noise calibrated to their exact sensitivity
(:mod:`._marginals_sensitivity`); the estimate is least squares through
the eigen-structure of :mod:`._marginals_algebra` in O(2^d N).

Under Blowfish neighbours the number of records ``n`` is public (a record
changes its value), so the total (``S = ()``) costs nothing and is not
measured: the component on ``P_()`` (the mean) is ``n / N`` exactly, as
with ``total="public"`` in :func:`._strategy.plan_strategy`.  Likewise the
marginal on the axes ``F`` that no edge of the secret graph changes (e.g.
an axis whose bins are wider than a distance threshold) is the same for
every two neighbours: it is released exactly and every component ``P_T``
with ``T`` a subset of ``F`` is known.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_epsilon
from ...errors import ParameterError
from ...noise import MAX_SCALE, calibration, discrete_laplace_variance
from ._marginals_algebra import (
    as_workload,
    axes_mask,
    check_shape,
    eigenvalues,
    error_terms,
    mask_axes,
    needed,
    outside_products,
    projector_traces,
    public_sets,
    traces,
    weights_vector,
)
from ._marginals_optimise import optimize_marginals
from ._marginals_sensitivity import sensitivity_model
from ._strategy import RESOLUTION
from ._strategy_inputs import plain_policy
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from ..._workload_base import Workload
    from ...policy._policy import Policy

__all__ = ["plan_marginals"]

_CITATION = ("McKenna, Miklau, Hay, Machanavajjhala, 'Optimizing error of high-dimensional statistical queries "
             "under differential privacy', PVLDB 11(10) 2018, Section 5.3 (the marginals template); He, "
             "Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 (Definition 5.1, Theorem 5.1: policy sensitivity); "
             "sampler: Canonne, "
             "Kamath, Steinke 2020 Alg. 2")


# ---------------------------------------------------------------------------
# least squares through the eigen-structure


def _spectral(arr: np.ndarray, axes: tuple[int, ...], coef: np.ndarray) -> np.ndarray:
    """sum over T subset of axes of coef[T] P_T arr, for arr on the marginal of ``axes`` (mean / deviation splits)."""
    out = np.zeros(arr.shape)

    def rec(X, k, bits):
        if k == len(axes):
            c = coef[bits]
            if c != 0:
                np.add(out, c * X, out=out)
            return
        m = X.mean(axis=k, keepdims=True)
        rec(m, k + 1, bits)
        rec(X - m, k + 1, bits | 1 << axes[k])

    rec(arr, 0, 0)
    return out


def _reconstruct(answers: dict, theta: np.ndarray, shape: tuple[int, ...], n=None, *, fixed: int = 0,
                 fixed_marginal=None) -> np.ndarray:
    """(A^T A)^+ A^T y through the eigen-structure, with the known components exact.

    ``answers[mask]`` holds y_S (marginal shape) for every S with theta_S > 0, in units of theta_S M_S x.
    With ``n`` the total is known: the mean component is n / N.  With ``fixed_marginal`` (the exact
    marginal on the axes of ``fixed``) every component P_T, T a subset of ``fixed``, is known: it is
    that marginal spread evenly over the other axes (M_F^T m_F / prod_{i not in F} n_i); least squares
    on the answers gives the others.
    """
    d = len(shape)
    lam = eigenvalues(theta, shape)
    inv = np.where(lam > 0, 1.0 / np.where(lam > 0, lam, 1.0), 0.0)  # the pseudo-inverse on the unmeasured
    if fixed_marginal is None and n is not None:
        fixed, fixed_marginal = 0, np.asarray(float(n))
    if fixed_marginal is not None:
        inv[public_sets(d, fixed)] = 0.0
    x = np.zeros(shape)
    for S, y in answers.items():
        axes = mask_axes(S, d)
        z = _spectral(np.asarray(y, dtype=np.float64).reshape([shape[i] for i in axes]), axes, inv)
        bshape = [shape[i] if S >> i & 1 else 1 for i in range(d)]
        x += theta[S] * z.reshape(bshape)
    if fixed_marginal is not None:
        bshape = [shape[i] if fixed >> i & 1 else 1 for i in range(d)]
        x += np.asarray(fixed_marginal, dtype=np.float64).reshape(bshape) / outside_products(shape)[fixed]
    return x


def _marginal(hist: np.ndarray, S: int, d: int) -> np.ndarray:
    other = tuple(i for i in range(d) if not S >> i & 1)
    return hist.sum(axis=other) if other else hist


# ---------------------------------------------------------------------------
# plan_marginals


def plan_marginals(workload: Workload, policy: Policy, epsilon: Real, *,
                   weights: dict[tuple[int, ...], float] | None = None, restarts: int = 3, seed: int = 0,
                   maxiter: int = 500) -> Plan[HistogramRelease]:
    """Plan HDMM's marginals strategy under a policy: exact discrete Laplace on the marginals, least squares.

    The weights (given, or from :func:`._marginals_optimise.optimize_marginals`) are scaled so
    that the largest is 1 and put on the grid of multiples of ``1 / K``,
    ``K = 2**20``, rounded *down* (so the sensitivity never exceeds that of
    the weights asked); the noisy stage is the integer queries
    ``K theta_S M_S x`` plus exact discrete Laplace noise calibrated to
    their exact sensitivity (:func:`._marginals_sensitivity.marginals_sensitivity` of the integer
    weights); the estimate is least squares through the eigen-structure,
    with the public total.  ``K`` is halved (from public inputs) while the
    noise scale would exceed a quarter of the sampler's largest scale, as
    in :func:`._strategy.plan_strategy`.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
        The queries the strategy is optimised for and whose expected error
        is reported; of the policy's domain shape.
    policy : Policy
        Without constraints; secrets as :func:`._marginals_sensitivity.marginals_sensitivity`.
    epsilon : float or Fraction, > 0
    weights : dict, optional
        ``{sorted tuple of distinct axes: theta_S >= 0}`` (finite, one
        positive at least); default: optimised.  Weights on the total
        (``()``) and on marginals of axes no edge changes are ignored: those
        are public under Blowfish neighbours (released exactly).
    restarts, seed, maxiter
        As :func:`._marginals_optimise.optimize_marginals` (unused with ``weights``).

    Returns
    -------
    Plan
        ``measure(hist, generator)`` returns a :class:`HistogramRelease`
        whose ``histogram`` (float64, the domain's shape) is the least
        squares estimate (the minimum-norm one when the marginals do not
        determine every cell: then unbiased for the workload, not for every
        cell); ``params["answers"]`` maps each measured ``S`` to its noisy
        marginal in units of ``theta_S M_S x``.  ``options`` holds
        ``weights`` (the rounded ones), ``resolution``, ``public_marginal``
        (the axes no edge changes, of length >= 2: their marginal is kept
        exactly; a second, zero-epsilon part of the plan when not empty),
        ``histogram_determined`` and ``optimisation``
        (:func:`._marginals_optimise.optimize_marginals`'s info, or None).

    Raises
    ------
    ParameterError, TypeError
        Invalid weights, workload or policy; weights that do not determine
        the workload (after rounding); an epsilon that is not positive.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for P = ``policy`` (000 Thm 5.1): the
    noisy stage is an integer linear query plus exact discrete Laplace
    noise of scale ``Delta / epsilon`` rounded up (the spend is at most
    epsilon); the least squares uses public inputs only (the weights, the
    number of records ``n`` and the marginal on the axes no edge changes:
    both are the same for every two neighbours, sensitivity 0, and are
    released exactly).

    Sensitivity
    -----------
    :func:`._marginals_sensitivity.marginals_sensitivity` of the integer weights, exact.

    Runtime
    -------
    Planning: the optimisation (see :func:`._marginals_optimise.optimize_marginals`) and
    O(d 2^d); measurement O(2^d N) (the marginals, one batch of draws, the
    per-axis projections).

    Utility
    -------
    Expected total squared error ``v sum_T g_T / lambda_T`` over the
    workload (``v`` the discrete Laplace variance over ``K^2``), and for
    the cells ``v sum_T tr(P_T) / lambda_T`` when the marginals determine
    every cell (McKenna et al. 2018, Sec 3 and 5.3).

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Alg. 2.
    """
    policy = plain_policy(policy)
    eps = check_epsilon(epsilon)
    shp = check_shape(policy.domain.shape, "policy.domain.shape")
    d, N = len(shp), math.prod(shp)
    w, _ = as_workload(workload, shp)
    model = sensitivity_model(policy, shp)
    g = traces(w, shp)
    if weights is None:
        wts, info = optimize_marginals(w, policy, restarts=restarts, seed=seed, maxiter=maxiter)
        theta = weights_vector(wts, shp)
    else:
        theta, info = weights_vector(weights, shp), None
    fixed = model.fixed  # the axes no edge changes (at least those of length 1)
    public = public_sets(d, fixed)
    fixed_axes = tuple(i for i in mask_axes(fixed, d) if shp[i] >= 2)
    theta[public] = 0.0  # the total and the marginals no edge changes are public: released exactly, not measured
    if not (theta > 0).any():
        if model.C.shape[0] == 0:
            raise ParameterError("policy", "policy: the secret graph has no edge on this domain: every marginal "
                                           "is public, there is nothing to measure with noise")
        raise ParameterError("weights", f"weights: only the total or marginals on axes no edge changes "
                                        f"{fixed_axes} have a weight, and they are public: nothing to measure")
    theta = theta / float(theta.max())
    sizes = {S: math.prod(shp[i] for i in mask_axes(S, d)) for S in range(1 << d)}
    m = sum(sizes[S] for S in range(1 << d) if theta[S] > 0)
    memory = check_memory(int64_bytes(4 * m + (d + 4) * N), size=N, parameter="policy", mechanism="marginals")
    K = RESOLUTION
    while True:
        t_int = [int(math.floor(t * K)) for t in theta]  # rounded down: the sensitivity never grows
        sens = model.exact_int(t_int)
        if K > 1 and Fraction(sens) / eps > MAX_SCALE // 4:
            K //= 2
            continue
        break
    theta_q = np.array(t_int, dtype=np.float64) / K
    lam = eigenvalues(theta_q, shp)
    err_units = error_terms(g, lam, public)
    if not err_units < math.inf:
        need = needed(g, public)
        bad = [mask_axes(T, d) for T in range(1 << d) if need[T] and lam[T] <= 0]
        raise ParameterError("weights", f"weights: the marginals measured (after rounding to multiples of 1/{K}) "
                                        f"do not determine the workload: no measured marginal contains the axes "
                                        f"{bad[0]} (a marginal on a superset of them is needed)")
    cal = calibration(sens, eps)
    var = discrete_laplace_variance(cal.scale) / (K * K)
    tp = projector_traces(shp)
    U = axes_mask(i for i in range(d) if shp[i] >= 2)
    cells = [T for T in range(1 << d) if T & ~U == 0 and not public[T]]
    determined = all(lam[T] > 0 for T in cells)
    expected = {"per_answer_variance": var, "workload_total_squared_error": var * err_units,
                "cells_total_variance": var * float(sum(tp[T] / lam[T] for T in cells if lam[T] > 0))}
    if determined:
        expected["cells_total_squared_error"] = expected["cells_total_variance"]
    measured = [S for S in range(1 << d) if t_int[S] > 0]
    how = model.how + (f" (weights on the grid 1/{K}: the queries are {K} theta_S M_S x)" if K > 1 else "")
    parts = (NoisePart("answers", cal.sensitivity, True, how, cal.epsilon_exact, cal.scale, m),)
    fixed_size = math.prod(shp[i] for i in fixed_axes)
    if fixed_axes:
        zero = calibration(0, eps)
        parts += (NoisePart("public marginal", zero.sensitivity, True,
                            f"exact: no edge of {policy.secrets!r} changes the axes {fixed_axes}, so their marginal "
                            "is the same for every two neighbours (released without noise)",
                            zero.epsilon_exact, zero.scale, fixed_size),)
    scale = cal.scale
    max_entry = max(t_int)
    weights_out = {mask_axes(S, d): t_int[S] / K for S in measured}

    def run(plan, hist, gen):
        n = int(hist.sum())  # public: Blowfish neighbours keep the number of records
        if max_entry * max(n, 1) >= 2**62:
            raise ValueError(f"hist: the total count times the largest integer weight ({max_entry}) must stay "
                             "below 2**62")
        exact = np.concatenate([t_int[S] * _marginal(hist, S, d).reshape(-1) for S in measured]).astype(np.int64)
        noisy = exact.copy() if scale == 0 else gen.add_discrete_laplace(exact, scale)
        answers, pos = {}, 0
        for S in measured:
            k = sizes[S]
            answers[S] = noisy[pos:pos + k].astype(np.float64).reshape([shp[i] for i in mask_axes(S, d)]) / K
            pos += k
        # public: Blowfish neighbours keep n and the marginal on the axes no edge changes
        est = _reconstruct(answers, theta_q, shp, fixed=fixed, fixed_marginal=_marginal(hist, fixed, d))
        return HistogramRelease(
            histogram=est, secure=gen.is_secure,
            expected_squared_error=expected.get("cells_total_squared_error"),
            params={"answers": {mask_axes(S, d): a for S, a in answers.items()}, "scale": scale, "resolution": K},
            plan=plan)

    return Plan(
        mechanism="marginals", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r} (Theorem 5.1 of the Blowfish paper; "
                  "least squares is "
                  "post-processing)",
        citation=_CITATION, epsilon_requested=eps, parts=parts,
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error=expected, memory_bytes=memory,
        runtime="O(2^d N): the measured marginals, one batch of exact discrete Laplace draws, least squares by "
                "per-axis projections",
        options={"weights": weights_out, "resolution": K, "total": "public", "public_marginal": fixed_axes,
                 "histogram_determined": determined, "optimisation": info},
        check=shape_check(shp), run=run)
