"""Kronecker strategies ``A = A_1 (x) ... (x) A_d`` on a d-dimensional domain, under a policy.

HDMM's Kronecker template (McKenna, Miklau, Hay, Machanavajjhala, PVLDB
11(10) 2018, Sec 5.2-5.3): one strategy per axis, their Kronecker product
answered with noise and reconstructed by least squares axis by axis, in
O(N sum_i m_i) time and without any (N, N) matrix.

Policy sensitivity in closed form (``Delta = max over axes a with unit
edges of L_a prod_{b != a} c_b``, and safe bounds elsewhere):
:mod:`._kron_sensitivity`.

Expected error.  With ``M_a = (A_a^T A_a)^{-1}``, ``(A^T A)^{-1} = M_1 (x)
... (x) M_d`` and ``||W A^+||_F^2 = tr(W^T W (x)_a M_a)``: a product of
per-axis traces for Kronecker workloads, ``sum_k prod_a r_ka^T M_a r_ka``
for rectangles (prefix sums of ``M_a``), a sum over the parts of a stack.
The public total ``n`` (Blowfish neighbours keep the number of records)
is a linear constraint; its least squares is the rank-one correction
``x = x_u + M 1 (n - 1^T x_u) / (1^T M 1)``, with ``M 1 = (x)_a M_a 1``.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from ..._validation import check_epsilon
from ...noise import MAX_SCALE, calibration, discrete_laplace_variance
from ...workloads import Kronecker, Rectangles, Stack, Workload
from ._p_identity import optimize_p_identity
from ._kron_sensitivity import check_factors, col_max, kronecker_sensitivity
from ._strategy import CITATION
from ._strategy_inputs import plain_policy, workload_gram
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..._workload_base import Workload
    from ...policy._policy import Policy

__all__ = ["axis_grams", "kronecker_error", "optimize_axis", "optimize_kronecker", "plan_kronecker"]

#: Grid of each factor: entries are multiples of 1 / _FACTOR_RESOLUTION.
_FACTOR_RESOLUTION = 2**12
#: Smoothing of the largest norm during optimisation: a p-norm over the norms.
_SMOOTH_P = 32.0
_SMOOTH_ETA = 1e-12


# ---------------------------------------------------------------------------
# error


def _spd_inverse(X: np.ndarray) -> np.ndarray | None:
    """The inverse of a symmetric positive definite matrix, None if it is not (Cholesky decides)."""
    try:
        np.linalg.cholesky(X)
        Xi = np.linalg.inv(X)
    except np.linalg.LinAlgError:
        return None
    return 0.5 * (Xi + Xi.T)


def _inverse_gram(A: np.ndarray) -> np.ndarray:
    Xi = _spd_inverse(A.T @ A)
    if Xi is None:
        raise ValueError("every factor must have full column rank (least squares needs a unique solution)")
    return Xi


def _range_quad(M: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """r_k^T M r_k for the ranges [lo_k, hi_k] (prefix sums of M)."""
    n = M.shape[0]
    S = np.zeros((n + 1, n + 1))
    S[1:, 1:] = M
    S = S.cumsum(axis=0).cumsum(axis=1)
    return S[hi + 1, hi + 1] - S[lo, hi + 1] - S[hi + 1, lo] + S[lo, lo]


def _range_dot(v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    c = np.concatenate([[0.0], np.cumsum(v)])
    return c[hi + 1] - c[lo]


def _trace(workload, Ms: list[np.ndarray]) -> float:
    """tr(W^T W (x)_a M_a) without the (N, N) product."""
    if isinstance(workload, Stack):
        return sum(_trace(w, Ms) for w in workload.parts())
    if isinstance(workload, Kronecker) and len(workload.factors()) == len(Ms):
        return math.prod(float(np.sum(f.gram() * M)) for f, M in zip(workload.factors(), Ms))
    if isinstance(workload, Rectangles) and len(Ms) == 2:
        r = workload.rects()
        return float(np.sum(_range_quad(Ms[0], r[:, 0], r[:, 1]) * _range_quad(Ms[1], r[:, 2], r[:, 3])))
    if len(Ms) == 1:
        return float(np.sum(workload_gram(workload, Ms[0].shape[0]) * Ms[0]))
    shape = [M.shape[0] for M in Ms]
    N = math.prod(shape)
    G = workload_gram(workload, N).reshape(shape + shape)
    # contract G[i1..id, j1..jd] with prod_a M_a[i_a, j_a]
    T = G
    for a, M in enumerate(Ms):
        T = np.tensordot(T, M, axes=([0, len(shape) - a], [0, 1]))
    return float(T)


def _quad(workload, vs: list[np.ndarray]) -> float:
    """v^T W^T W v for v = (x)_a v_a."""
    if isinstance(workload, Stack):
        return sum(_quad(w, vs) for w in workload.parts())
    if isinstance(workload, Kronecker) and len(workload.factors()) == len(vs):
        return math.prod(float(np.sum(f.answer(v) ** 2)) for f, v in zip(workload.factors(), vs))
    if isinstance(workload, Rectangles) and len(vs) == 2:
        r = workload.rects()
        a = _range_dot(vs[0], r[:, 0], r[:, 1]) * _range_dot(vs[1], r[:, 2], r[:, 3])
        return float(np.sum(a * a))
    v = vs[0]
    for w in vs[1:]:
        v = np.multiply.outer(v, w).reshape(-1)
    if isinstance(workload, Workload):
        return float(np.sum(workload.answer(v) ** 2))
    G = workload_gram(workload, v.shape[0])
    return float(v @ G @ v)


def kronecker_error(factors: Sequence[npt.ArrayLike], workload: Workload | npt.ArrayLike, *,
                    total: str = "none") -> float:
    """``||W R||_F^2`` for the Kronecker strategy of ``factors``: the expected error per unit noise variance.

    Parameters
    ----------
    factors : sequence of array_like (m_a, n_a)
        Full column rank each.
    workload : Workload or array_like (q, N)
        :class:`~blowfish_privacy.workloads.Kronecker` (same number of
        axes), :class:`~blowfish_privacy.workloads.Rectangles` (2-D),
        :class:`~blowfish_privacy.workloads.Stack` of those, or any
        workload whose Gram matrix fits in memory.
    total : {"none", "public"}
        ``"public"``: least squares subject to the public total (rank-one
        correction, module docstring).

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
    O(sum_a (m_a n_a^2 + n_a^3)) plus the workload's part (O(q) for
    rectangles after O(n_a^2) prefix sums, O(N^2) for a dense Gram).

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 3 and 5.3.
    """
    F = [f.astype(np.float64) for f in check_factors(factors)]
    if total not in ("none", "public"):
        raise ValueError(f"total must be 'none' or 'public', got {total!r}")
    Ms = [_inverse_gram(f) for f in F]
    err = _trace(workload, Ms)
    if total == "public":
        vs = [M.sum(axis=1) for M in Ms]
        err -= _quad(workload, vs) / math.prod(float(v.sum()) for v in vs)
    return float(err)


# ---------------------------------------------------------------------------
# per-axis optimisation


def _axis_objective(flat: np.ndarray, G: np.ndarray, m: int, n: int, delta: float) -> tuple[float, np.ndarray]:
    """tr(G (A^T A)^{-1}) * S(A)^2, S a p-norm of the column norms and adjacent differences / delta."""
    A = flat.reshape(m, n)
    Xi = _spd_inverse(A.T @ A)
    if Xi is None:
        return math.inf, np.zeros_like(flat)
    e = float(np.sum(G * Xi))
    Sa = np.sqrt(A * A + _SMOOTH_ETA)
    c = Sa.sum(axis=0)
    D = A[:, :-1] - A[:, 1:]
    Sd = np.sqrt(D * D + _SMOOTH_ETA)
    d = Sd.sum(axis=0) / delta
    v = np.concatenate([c, d])
    top = float(v.max())
    r = v / top
    total = float(np.sum(r ** _SMOOTH_P))
    S = top * total ** (1.0 / _SMOOTH_P)
    w = r ** (_SMOOTH_P - 1.0) / total ** ((_SMOOTH_P - 1.0) / _SMOOTH_P)
    gS = (A / Sa) * w[None, :n]
    gD = (D / Sd) * (w[n:] / delta)[None, :]
    gS[:, :-1] += gD
    gS[:, 1:] -= gD
    ge = -2.0 * ((A @ Xi) @ (G @ Xi))
    return e * S * S, (ge * S * S + 2.0 * e * S * gS).reshape(-1)


def optimize_axis(gram, delta: float, init, *, maxiter: int = 500) -> tuple[np.ndarray, float]:
    """One axis's strategy for a Kronecker product under a graph of unit moves.

    Minimises ``tr(G (A^T A)^{-1})`` subject to unit column norms and
    adjacent column differences at most ``delta`` (the two quantities of
    the closed-form sensitivity), as ``tr(G (A^T A)^{-1}) * S(A)^2`` with
    ``S`` a smooth maximum (a p-norm, p = 32) of the column norms and the
    differences divided by ``delta``; scipy's L-BFGS-B from ``init``.

    Parameters
    ----------
    gram : array_like (n, n)
        The axis's workload Gram matrix.
    delta : float, > 0
    init : array_like (m, n)
        The start (full column rank), e.g. HDMM's p-Identity optimum.
    maxiter : int

    Returns
    -------
    A : numpy.ndarray (m, n)
        Scaled to unit largest column norm (exact ``c = 1``).
    error : float
        ``tr(G (A^T A)^{-1})`` of the returned ``A``.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    Not computed here (see :func:`._kron_sensitivity.kronecker_sensitivity`).

    Runtime
    -------
    O(m n^2 + n^3) per evaluation, at most ``maxiter`` iterations.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5 (gradient-based strategy optimisation).
    """
    from scipy.optimize import minimize

    G = np.asarray(gram, dtype=np.float64)
    A0 = np.asarray(init, dtype=np.float64)
    if not (isinstance(delta, (int, float)) and delta > 0 and math.isfinite(delta)):
        raise ValueError(f"delta must be a positive finite number, got {delta!r}")
    m, n = A0.shape
    if G.shape != (n, n):
        raise ValueError(f"gram must have shape ({n}, {n}), got {G.shape}")
    res = minimize(_axis_objective, A0.reshape(-1), args=(G, m, n, float(delta)), jac=True, method="L-BFGS-B",
                   options={"maxiter": int(maxiter)})
    A = res.x.reshape(m, n)
    if not np.isfinite(_axis_objective(res.x, G, m, n, float(delta))[0]):
        A = A0
    A = A / col_max(A)
    return A, float(np.sum(G * _inverse_gram(A)))


# ---------------------------------------------------------------------------
# the plan


def _mode_product(X: np.ndarray, M: np.ndarray, axis: int) -> np.ndarray:
    """Multiply the tensor X by the matrix M along ``axis``."""
    return np.moveaxis(np.tensordot(M, X, axes=([1], [axis])), 0, axis)


def plan_kronecker(factors: Sequence[npt.ArrayLike], policy: Policy, epsilon: Real, *,
                   workload: Workload | npt.ArrayLike | None = None, total: str = "public",
                   neighbours: str = "blowfish", resolution: int = _FACTOR_RESOLUTION) -> Plan[HistogramRelease]:
    """Plan the Kronecker strategy ``(x)_a factors[a]``: exact discrete Laplace on ``A x``, then least squares.

    Parameters
    ----------
    factors : sequence of array_like (m_a, n_a)
        One per axis of ``policy.domain``, full column rank each; put on
        the grid of multiples of ``1 / resolution`` (round to nearest)
        before anything is computed (the plan's factors are the rounded
        ones).
    policy : Policy
        Without constraints.
    epsilon : float or Fraction, > 0
    workload : Workload or array_like, optional
        When given, the plan reports its expected error.
    total : {"public", "none"}
        ``"public"`` (default): least squares subject to the public total
        ``n``.  Must be ``"none"`` with ``neighbours="add_remove"`` (n is
        then private).
    neighbours : {"blowfish", "add_remove"}
        ``"add_remove"`` calibrates to add/remove DP (DP baselines).
    resolution : int
        The grid of each factor (default 4096; 1 for integer factors).

    Returns
    -------
    Plan
        ``measure(hist, generator)`` returns a :class:`HistogramRelease`
        (float64 estimate of the domain's shape).

    Raises
    ------
    ValueError, TypeError
        Shapes, ranks, totals, a policy with constraints, epsilon.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for P = ``policy`` (000 Thm 5.1), or
    epsilon-DP under add/remove neighbours: the integer query ``(x)_a
    (resolution A_a) x`` plus exact discrete Laplace noise of scale
    ``Delta / epsilon`` (rounded up); least squares is post-processing.

    Sensitivity
    -----------
    :func:`._kron_sensitivity.kronecker_sensitivity` of the integer factors (exact for graphs
    of unit moves, else a safe bound; ``how`` says which).

    Runtime
    -------
    Planning O(sum_a (m_a n_a^2 + n_a^3)); measurement O(N sum_a m_a) and
    ``prod_a m_a`` draws.

    Utility
    -------
    Unbiased; expected total squared error ``v ||W R||_F^2`` with ``v`` the
    discrete Laplace variance (:func:`kronecker_error`).

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [3] Canonne, Kamath, Steinke. *The Discrete Gaussian for Differential Privacy.* NeurIPS 2020, Alg. 2.
    """
    policy = plain_policy(policy)
    eps = check_epsilon(epsilon)
    shp = tuple(int(d) for d in policy.domain.shape)
    F = check_factors(factors, shp)
    if total not in ("public", "none"):
        raise ValueError(f"total must be 'public' or 'none', got {total!r}")
    if neighbours == "add_remove" and total == "public":
        raise ValueError("total must be 'none' under add/remove neighbours (the number of records is private)")
    N = math.prod(shp)
    ms = [f.shape[0] for f in F]
    memory = check_memory(int64_bytes(3 * N + 3 * math.prod(ms) + sum(m * n + 2 * n * n for m, n in zip(ms, shp))),
                          size=N, parameter="policy", mechanism="kronecker")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or not 1 <= resolution <= 2**16:
        raise ValueError(f"resolution must be an integer in [1, 2**16], got {resolution!r}")
    K = int(resolution)
    ints = []
    for a, f in enumerate(F):
        scaled = np.rint(f.astype(np.float64) * K)
        if float(np.abs(scaled).max(initial=0.0)) >= 2.0**30:
            raise ValueError(f"factors[{a}]: entries times {K} must stay below 2**30")
        ints.append(scaled.astype(np.int64))
    sens, how = kronecker_sensitivity(ints, policy, neighbours=neighbours)
    KK = K ** len(F)
    if Fraction(sens) / eps > MAX_SCALE:
        raise ValueError(f"epsilon: {float(eps):g} is too small for this strategy (noise scale above the "
                         f"sampler's largest, {MAX_SCALE})")
    Fq = [i.astype(np.float64) / K for i in ints]
    Ms = [_inverse_gram(f) for f in Fq]
    pinvs = [M @ f.T for M, f in zip(Ms, Fq)]
    vs = [M.sum(axis=1) for M in Ms]
    ones_m = math.prod(float(v.sum()) for v in vs)
    cal = calibration(sens, eps)
    var = discrete_laplace_variance(cal.scale) / (KK * KK)
    cells = math.prod(float(np.trace(M)) for M in Ms)
    if total == "public":
        cells -= math.prod(float(v @ v) for v in vs) / ones_m
    expected = {"per_answer_variance": var, "cells_total_squared_error": var * cells}
    if workload is not None:
        expected["workload_total_squared_error"] = var * kronecker_error(Fq, workload, total=total)
    col_norms = math.prod(int(np.abs(i).sum(axis=0).max(initial=0)) for i in ints)
    scale = cal.scale
    part = NoisePart("answers", cal.sensitivity, how.startswith("exact"),
                     how + f" (factors on the grid 1/{K}: the query is {KK} A x)", cal.epsilon_exact, scale,
                     math.prod(ms))

    def run(plan, hist, gen):
        X = np.asarray(hist, dtype=np.int64).reshape(shp)
        n = int(X.sum())
        if col_norms * max(n, 1) >= 2**62:
            raise ValueError("hist: the total count times the strategy's column norm must stay below 2**62")
        Y = X
        for a, I in enumerate(ints):
            Y = _mode_product(Y, I, a)  # exact int64 products
        flat = Y.reshape(-1)
        noisy = flat.copy() if scale == 0 else gen.add_discrete_laplace(flat, scale)
        Z = noisy.astype(np.float64).reshape(Y.shape) / KK
        for a, P in enumerate(pinvs):
            Z = _mode_product(Z, P, a)
        if total == "public":
            v = vs[0]
            for w in vs[1:]:
                v = np.multiply.outer(v, w)
            Z = Z + v.reshape(shp) * ((n - float(Z.sum())) / ones_m)
        return HistogramRelease(
            histogram=Z.reshape(shp), secure=gen.is_secure,
            expected_squared_error=expected["cells_total_squared_error"],
            params={"answers": noisy.astype(np.float64) / KK, "scale": scale, "resolution": KK, "total": total},
            plan=plan)

    guarantee = (f"(epsilon, P)-Blowfish privacy for P = {policy!r} (Theorem 5.1 of the Blowfish paper; "
                 "least squares is post-processing)"
                 if neighbours == "blowfish" else "epsilon-differential privacy under add/remove neighbours")
    return Plan(
        mechanism="kronecker", policy=policy, guarantee=guarantee, citation=CITATION,
        epsilon_requested=eps, parts=(part,), aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error=expected, memory_bytes=memory,
        runtime="O(N sum_a m_a) for the answers and the least squares, prod_a m_a exact discrete Laplace draws",
        options={"factor_shapes": [tuple(f.shape) for f in F], "resolution": KK, "total": total,
                 "neighbours": neighbours},
        model="Blowfish" if neighbours == "blowfish" else "DP", check=shape_check(shp), run=run)


def axis_grams(workload, shape) -> list[np.ndarray]:
    """Per-axis Gram matrices a Kronecker optimiser fits (a surrogate when the workload is not a product)."""
    if isinstance(workload, Kronecker) and len(workload.factors()) == len(shape):
        return [f.gram() for f in workload.factors()]
    if isinstance(workload, Rectangles) and len(shape) == 2:
        return [r.gram() for r in workload.axis_ranges()]
    if isinstance(workload, Stack):
        parts = [axis_grams(w, shape) for w in workload.parts()]
        return [sum(p[a] for p in parts) for a in range(len(shape))]
    N = math.prod(shape)
    G = workload_gram(workload, N).reshape(tuple(shape) + tuple(shape))
    out = []
    d = len(shape)
    for a in range(d):  # axis a's Gram: the other axes' row and column indices set equal and summed
        T = G
        k = d
        for b in reversed(range(d)):
            if b != a:
                T = np.diagonal(T, axis1=b, axis2=b + k).sum(axis=-1)
                k -= 1
        out.append(np.asarray(T))
    return out


def optimize_kronecker(workload, policy, *, delta_grid=None, maxiter: int = 300, p_identity=None,
                       seed: int = 0) -> dict:
    """Per-axis strategies whose Kronecker product minimises the expected error under a policy.

    Used by :func:`~blowfish_privacy.mechanisms.strategies.optimized.plan_optimized`;
    see there.  Returns ``{"factors", "error", "delta", "candidates",
    "seconds"}`` with ``error`` the expected error per unit noise variance
    times the sensitivity squared (the epsilon-free objective).
    """
    policy = plain_policy(policy)
    shape = tuple(int(s) for s in policy.domain.shape)
    start = time.perf_counter()
    grams = axis_grams(workload, shape)
    if len(set(shape)) == 1:  # equal axes share one factor, fitted to the mean Gram (half the work)
        mean = sum(grams) / len(grams)
        grams = [mean] * len(shape)
    cache: dict[bytes, np.ndarray] = {}
    pid = []
    for G in grams:
        key = G.tobytes()
        if key not in cache:
            A, _, _ = optimize_p_identity(G, "add_remove", max(1, G.shape[0] // 16), restarts=1, seed=seed)
            cache[key] = A
        pid.append(cache[key])
    cands: dict[str, list[np.ndarray]] = {"identity": [np.eye(n) for n in shape], "p-identity": pid}

    def objective(fs):
        s, _ = kronecker_sensitivity(fs, policy)
        return float(s) ** 2 * kronecker_error(fs, workload, total="public")

    scores = {k: objective(v) for k, v in cands.items()}
    graph = policy.secrets
    unit = graph.threshold_steps(policy.domain) is not None  # a distance threshold: unit steps can be fitted
    if unit:
        deltas = list(delta_grid) if delta_grid is not None else [1.0, 0.7, 0.5]
        prev = {}
        for delta in deltas:
            fs = []
            for a, G in enumerate(grams):
                key = G.tobytes()
                if key not in prev:
                    prev[key] = pid[a]
                A, _ = optimize_axis(G, delta, prev[key], maxiter=maxiter)
                prev[key] = A
                fs.append(A)
            name = f"kronecker(delta={delta:g})"
            cands[name] = fs
            scores[name] = objective(fs)
    best = min(scores, key=scores.get)
    return {"factors": cands[best], "chosen": best, "error": scores[best], "candidates": scores,
            "seconds": time.perf_counter() - start}
