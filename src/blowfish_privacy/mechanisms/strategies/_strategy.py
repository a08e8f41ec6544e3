"""Linear strategies under a policy: least squares, measurement, hand-designed strategies.

A data-independent linear mechanism answers a *strategy* matrix ``A``
(``m`` queries on the flattened histogram ``x`` of ``|T| = N`` cells) with
noise and reconstructs by least squares (see Corrections to the papers,
docs/explanation/corrections.md).  Under a policy
without constraints, moving one individual from ``u`` to ``v`` along an
edge of the secret graph changes ``A x`` by ``A (e_v - e_u)``, so the policy
sensitivity of ``A`` is

    Delta_G(A) = max over edges (u, v) of G of ||A (e_u - e_v)||_1

(He, Machanavajjhala, Ding, SIGMOD 2014, 000 Def 5.1 and Thm 5.1).  Under
the complete graph (bounded DP) it is at most twice the largest column L1
norm; under a tree graph the transformation ``x_G = P_G^{-1} x`` (Haney,
Machanavajjhala, Ding, VLDB 2015, 001 Sec 3: transformational equivalence)
turns it into the largest column norm of the transformed strategy, which
is the add/remove sensitivity that the High-Dimensional Matrix Mechanism
optimises (McKenna, Miklau, Hay, Machanavajjhala, PVLDB 11(10), 2018).

:func:`~._strategy_sensitivity.strategy_sensitivity`
    ``Delta_G(A)`` exactly by a vectorised edge scan, else the safe bound
    ``2 max_u ||A e_u||_1``, saying which in ``how`` (its own module).
:func:`plan_strategy`
    The plan of "exact discrete Laplace on ``A x``, then least squares"
    (with the public total ``n`` as a constraint by default), its exact
    spend and its analytic expected error on a workload.
:func:`prefix_strategy`, :func:`hierarchical_strategy`, :func:`strategy_error`
    Hand-designed strategies and the error formula, for comparisons.

The optimisers live in :mod:`.optimized`.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._validation import check_epsilon
from ...noise import MAX_SCALE, calibration, discrete_laplace_variance
from ._strategy_inputs import as_strategy, plain_policy, workload_gram
from ._strategy_sensitivity import strategy_sensitivity
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from ..._workload_base import Workload
    from ...policy._policy import Policy

__all__ = [
    "hierarchical_strategy",
    "plan_strategy",
    "prefix_strategy",
    "strategy_error",
]

#: Grid a real-valued strategy is put on: entries are multiples of 1 / RESOLUTION.
RESOLUTION = 2**20

CITATION = ("McKenna, Miklau, Hay, Machanavajjhala, 'Optimizing error of high-dimensional statistical queries "
             "under differential privacy', PVLDB 11(10) 2018 (HDMM: strategies, p-Identity, least squares); "
             "He, Machanavajjhala, Ding, Blowfish Privacy, SIGMOD 2014 "
             "(Definition 5.1, Theorem 5.1: policy sensitivity); "
             "Haney, Machanavajjhala, Ding, VLDB 2015 (transformational equivalence); sampler: Canonne, "
             "Kamath, Steinke 2020 Alg. 2")


# ---------------------------------------------------------------------------
# least squares and error


def _reconstruction(Aq: np.ndarray, total: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, c) with x_hat = R y + c n: least squares, subject to 1^T x = n when total == "public"."""
    m, N = Aq.shape
    S = Aq.T @ Aq
    try:
        if total == "public":
            S1 = S + 1.0  # A^T A + 1 1^T: positive definite iff A is injective on 1^perp
            L = np.linalg.cholesky(S1)
        else:
            L = np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        what = "on the vectors summing to 0 (with the public total)" if total == "public" else "(full column rank)"
        raise ValueError(f"A must determine the histogram {what}: least squares has no unique solution") from None

    def solve(B):
        return np.linalg.solve(L.T, np.linalg.solve(L, B))

    P = solve(Aq.T)  # (N, m)
    if total != "public":
        return P, np.zeros(N)
    u = solve(np.ones(N))
    su = float(u.sum())
    R = P - np.outer(u, P.sum(axis=0)) / su
    return R, u / su


def strategy_error(A: npt.ArrayLike, workload: Workload | npt.ArrayLike, *, total: str = "none") -> float:
    """``||W R||_F^2``: the expected total squared error per unit noise variance of strategy ``A``.

    ``R`` is the least-squares reconstruction (``A^+`` with ``total="none"``,
    least squares subject to the public total with ``total="public"``).
    Multiply by the per-answer noise variance (``2 s^2`` for Laplace of
    scale ``s``) for the expected total squared error over the workload
    (McKenna et al., PVLDB 2018, Sec 3).

    Parameters
    ----------
    A : array_like, shape (m, N)
    workload : array_like (q, N) or object with ``matrix()``
    total : {"none", "public"}

    Returns
    -------
    float

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(m N^2 + N^3) (a Cholesky factorisation and the reconstruction).

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 3 (the expected error of a strategy).
    """
    arr = as_strategy(A).astype(np.float64)
    if total not in ("none", "public"):
        raise ValueError(f"total must be 'none' or 'public', got {total!r}")
    G = workload_gram(workload, arr.shape[1])
    R, _ = _reconstruction(arr, total)
    return float(np.sum(R * (G @ R)))


def prefix_strategy(size: int) -> np.ndarray:
    """The ordered mechanism's strategy (000 Sec 7.1): prefix sums ``s_k``, k = 0..size-2, int64 (size-1, size).

    The last prefix sum (the total n) is public under Blowfish neighbours
    and is not measured.

    Returns
    -------
    numpy.ndarray of int64, shape (size - 1, size)

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(size^2) (a dense matrix).

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Sec 7.1 (the ordered mechanism:
       prefix sums have Line sensitivity 1).
    """
    N = int(size)
    return np.tril(np.ones((N, N), dtype=np.int64))[: N - 1] if N > 1 else np.zeros((0, 1), dtype=np.int64)


def hierarchical_strategy(size: int, branching: int = 2) -> np.ndarray:
    """Every node of a ``branching``-ary tree over ``size`` cells (leaves included), int64 (nodes, size).

    The hierarchical mechanism's strategy (Hay, Rastogi, Miklau, Suciu,
    VLDB 2010); the root is kept (its count is n).

    Returns
    -------
    numpy.ndarray of int64, shape (nodes, size)

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(nodes * size) (a dense matrix).

    References
    ----------
    .. [1] Hay, Rastogi, Miklau, Suciu. *Boosting the accuracy of differentially private histograms through
       consistency.* PVLDB 3(1), 2010, Sec 4 (the hierarchical strategy).
    """
    N, b = int(size), int(branching)
    rows = []
    width = 1
    while True:
        for s in range(0, N, width):
            r = np.zeros(N, dtype=np.int64)
            r[s:s + width] = 1
            rows.append(r)
        if width >= N:
            break
        width *= b
    return np.array(rows)


# ---------------------------------------------------------------------------
# plan_strategy


def plan_strategy(A: npt.ArrayLike, policy: Policy, epsilon: Real, *, workload: Workload | npt.ArrayLike | None = None,
                  total: str = "public", resolution: int | None = None) -> Plan[HistogramRelease]:
    """Plan a linear strategy under a policy: exact discrete Laplace on ``A x``, then least squares.

    Parameters
    ----------
    A : array_like, shape (m, N)
        The strategy on the flattened histogram (``N = policy.domain.size``).
    policy : Policy
        Without public constraints.
    epsilon : float or Fraction, > 0
    workload : array_like (q, N) or object with ``matrix()``, optional
        When given, the plan's expected error includes the workload's.
    total : {"public", "none"}
        ``"public"`` (default): least squares subject to ``sum(x) = n``, the
        number of records, public under Blowfish neighbours (a record
        changes its value); needed for strategies that leave the total out
        (prefix sums under the line).  ``"none"``: plain ``A^+ y``.
    resolution : int, optional
        ``A`` is put on the grid of multiples of ``1 / resolution`` before
        anything is computed (so that ``resolution * A x`` is an integer
        query for the discrete sampler); default 1 for an integer ``A``,
        ``2**20`` otherwise, halved (from public inputs) while the noise
        scale would exceed a quarter of the sampler's largest scale.  The
        plan's strategy is the rounded one.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` returns a :class:`HistogramRelease`
        whose ``histogram`` (float64, the domain's shape) is the least
        squares estimate; ``params["answers"]`` holds the noisy strategy
        answers (in units of ``A``).

    Raises
    ------
    ValueError, TypeError
        Shapes, a strategy that does not determine the histogram, a
        policy with constraints, an epsilon that is not positive.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for P = ``policy`` (000 Thm 5.1): the
    noisy stage is the integer query ``resolution * A_q x`` plus exact
    discrete Laplace noise of scale ``Delta_G(resolution * A_q) / epsilon``
    (rounded up, so the spend is at most epsilon); the least squares is
    post-processing with public inputs (``A_q``, n).

    Sensitivity
    -----------
    :func:`._strategy_sensitivity.strategy_sensitivity` of the integer strategy: exact by an edge
    scan where one is possible, else the safe bound (``how`` says which).

    Runtime
    -------
    Planning O(m N^2 + N^3) (one Cholesky factorisation, the
    reconstruction matrix); measurement O(m N) plus m draws.

    Utility
    -------
    Unbiased; expected total squared error ``v ||W R||_F^2`` over the
    workload with ``v`` the discrete Laplace variance (``2 s^2`` for the
    continuous one) and ``R`` the reconstruction (McKenna et al. 2018,
    Sec 3); the plan reports it for the cells and for the workload.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 3.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Alg. 2.
    """
    policy = plain_policy(policy)
    eps = check_epsilon(epsilon)
    arr = as_strategy(A)
    N = int(policy.domain.size)
    if arr.shape[1] != N:
        raise ValueError(f"A must have N = policy.domain.size = {N} columns, got shape {arr.shape}")
    if total not in ("public", "none"):
        raise ValueError(f"total must be 'public' or 'none', got {total!r}")
    m = arr.shape[0]
    memory = check_memory(int64_bytes(4 * m * N + 2 * N * N + 4 * N + 2 * m), size=N, parameter="policy",
                          mechanism="strategy")
    integral = arr.dtype.kind in "iu" or bool(np.all(arr == np.round(arr)))
    if resolution is None:
        resolution = 1 if integral else RESOLUTION
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or not 1 <= resolution <= 2**30:
        raise ValueError(f"resolution must be an integer in [1, 2**30], got {resolution!r}")
    K = int(resolution)
    auto = not integral and K == RESOLUTION
    while True:
        scaled = np.rint(arr.astype(np.float64) * K)
        if float(np.abs(scaled).max(initial=0.0)) >= 2.0**40:
            raise ValueError(f"A: entries times resolution {K} must stay below 2**40, got a larger one")
        A_int = scaled.astype(np.int64)
        sens, how = strategy_sensitivity(A_int, policy)
        # a default grid is coarsened (public inputs only) until the noise scale fits the sampler
        if auto and K > 1 and Fraction(sens) / eps > MAX_SCALE // 4:
            K //= 2
            continue
        break
    Aq = A_int.astype(np.float64) / K
    cal = calibration(sens, eps)
    R, c = _reconstruction(Aq, total)
    var = discrete_laplace_variance(cal.scale) / (K * K)
    part = NoisePart("answers", cal.sensitivity, how.startswith("exact"),
                     how + (f" (strategy on the grid 1/{K}: the query is {K} A x)" if K > 1 else ""),
                     cal.epsilon_exact, cal.scale, m)
    expected = {"per_answer_variance": var, "cells_total_squared_error": var * float(np.sum(R * R))}
    if workload is not None:
        G = workload_gram(workload, N)
        expected["workload_total_squared_error"] = var * float(np.sum(R * (G @ R)))  # tr(R^T W^T W R)
    shp = tuple(int(d) for d in policy.domain.shape)
    scale = cal.scale
    max_entry = int(np.abs(A_int).max(initial=0))

    def run(plan, hist, gen):
        flat = hist.reshape(-1)
        n = int(flat.sum())  # public: Blowfish neighbours keep the number of records
        if max_entry * max(n, 1) >= 2**62:
            raise ValueError(f"hist: the total count times the strategy's largest entry ({max_entry}) must stay "
                             "below 2**62")
        exact = A_int @ flat
        noisy = exact.copy() if scale == 0 else gen.add_discrete_laplace(exact, scale)
        answers = noisy.astype(np.float64) / K
        est = R @ answers + c * n
        return HistogramRelease(
            histogram=est.reshape(shp), secure=gen.is_secure,
            expected_squared_error=expected["cells_total_squared_error"],
            params={"answers": answers, "scale": scale, "resolution": K, "total": total}, plan=plan)

    return Plan(
        mechanism="strategy", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r} (Theorem 5.1 of the Blowfish paper; "
                  "least squares is "
                  "post-processing)",
        citation=CITATION, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error=expected, memory_bytes=memory,
        runtime="O(m N) for the answers, m exact discrete Laplace draws, O(m N) for the least squares",
        options={"strategy_shape": (m, N), "resolution": K, "total": total, "strategy": Aq},
        check=shape_check(shp), run=run)
