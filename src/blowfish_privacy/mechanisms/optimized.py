"""Optimised linear strategies under a policy (HDMM's templates with the policy's sensitivity).

The best strategy of a template for a workload, measured by
:func:`._strategy.plan_strategy` (exact discrete Laplace on ``A x``, least
squares).  HDMM (McKenna, Miklau, Hay, Machanavajjhala, *Optimizing error of
high-dimensional statistical queries under differential privacy*, PVLDB
11(10), 2018, Sec 4-5) optimises ``||W A^+||_F^2`` for unit column norms;
here the norm is the policy sensitivity ``Delta_G(A)`` of
:func:`._strategy.strategy_sensitivity` (000 Def 5.1), through
transformational equivalence where the policy graph is a tree (001 Sec 3).

:func:`optimize_p_identity`
    HDMM's p-Identity template ``A = [I; Theta] D^{-1}`` fitted to a
    workload's Gram matrix with L-BFGS-B and restarts.
:func:`plan_optimized`
    The optimised strategy for a policy, never worse than the
    hand-designed strategies it is compared with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time

import numpy as np

from .._validation import check_epsilon
from ..errors import ParameterError
from ..secrets import FullDomain, Line
from ._strategy import (
    _RESOLUTION,
    _Gram,
    _plain_policy,
    _workload_gram,
    hierarchical_strategy,
    plan_strategy,
    prefix_strategy,
    strategy_error,
    strategy_sensitivity,
)
from .plan import Plan

__all__ = [
    "hierarchical_strategy",
    "optimize_p_identity",
    "plan_optimized",
    "plan_strategy",
    "prefix_strategy",
    "strategy_error",
    "strategy_sensitivity",
]


# ---------------------------------------------------------------------------
# p-Identity optimisation (HDMM Sec 5)


def _one_blas_thread():
    """Limit BLAS to one thread while optimising (small products: threads only contend), when possible."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def _p_identity(theta: np.ndarray) -> np.ndarray:
    p, N = theta.shape
    d = 1.0 + theta.sum(axis=0)
    return np.vstack([np.eye(N), theta]) / d


def _p_identity_objective(flat: np.ndarray, G: np.ndarray, p: int, N: int) -> tuple[float, np.ndarray]:
    """tr(W^T W (A^T A)^{-1}) for A = [I; Theta] D^{-1} and its gradient in Theta, by Woodbury (O(p N^2))."""
    T = flat.reshape(p, N)
    d = 1.0 + T.sum(axis=0)
    H = G * np.outer(d, d)  # D G D
    Y = np.eye(p) + T @ T.T
    Z = np.linalg.solve(Y, T)  # Y^{-1} Theta = Theta M, with M = (I + Theta^T Theta)^{-1}
    TH = T @ H  # (p, N)
    value = float(np.trace(H) - np.sum(Z * TH))  # tr(H M) = tr(H) - tr(Theta^T Y^{-1} Theta H)
    ZH = Z @ H  # Theta M H (before the right M)
    ZHM = ZH - (ZH @ T.T) @ Z  # Theta M H M
    GD = G * d[None, :]  # G D
    diag_gdm = np.diag(GD) - np.einsum("jk,kj->j", GD @ T.T, Z)  # diag(G D M)
    grad = -2.0 * ZHM + 2.0 * diag_gdm[None, :]
    return value, grad.reshape(-1)


def optimize_p_identity(gram, sensitivity_kind: str = "bounded", p: int | None = None, *, restarts: int = 3,
                        seed: int = 0, init=None, maxiter: int = 1000) -> tuple[np.ndarray, float, dict]:
    """HDMM's p-Identity strategy ``A = [I; Theta] D^{-1}`` for a workload's Gram matrix.

    Minimises ``||W A^+||_F^2 = tr(W^T W (A^T A)^{-1})`` over ``Theta >= 0``
    (``p`` extra rows; ``D`` normalises every column of ``[I; Theta]`` to L1
    norm 1) with scipy's L-BFGS-B, from ``restarts`` random starts (and
    ``init`` when given), keeping the best (McKenna et al., PVLDB 2018,
    Sec 5.2).

    Parameters
    ----------
    gram : array_like (N, N)
        ``W^T W`` (or a workload with ``gram()``/``matrix()``).
    sensitivity_kind : {"bounded", "add_remove"}
        The sensitivity the unit column norms give: at most 2 under bounded
        DP (the complete graph), exactly 1 under add/remove (and for a
        transformed tree policy).  It scales the reported error only.
    p : int, optional
        Extra rows; default ``max(1, N // 16)``.
    restarts : int
        Random starts (Theta uniform on [0, 1), numpy seeded by ``seed``;
        this randomness is public, it touches no data).
    seed : int
    init : array_like (p, N), optional
        A warm start for Theta (e.g. zeros: the identity).
    maxiter : int

    Returns
    -------
    A : numpy.ndarray (N + p, N)
    error : float
        ``sensitivity_bound^2 * ||W A^+||_F^2``: the expected total squared
        error at epsilon 1 divided by 2 (multiply by ``2 / epsilon^2``).
    info : dict
        ``objective`` (``||W A^+||_F^2``), ``theta``, ``restarts`` (each
        start's objective), ``seconds``, ``sensitivity_bound``.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    Not computed here: unit column norms bound it by ``sensitivity_kind``; measure the
    result with :func:`plan_strategy`, which computes it exactly.

    Runtime
    -------
    O(p N^2) per objective evaluation (Woodbury: ``(I + Theta^T Theta)^{-1}``
    through the p x p matrix ``I + Theta Theta^T``), times the L-BFGS-B
    iterations (at most ``maxiter``) and the starts.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.2 (the p-Identity template).
    """
    from scipy.optimize import minimize

    if sensitivity_kind not in ("bounded", "add_remove"):
        raise ValueError(f"sensitivity_kind must be 'bounded' or 'add_remove', got {sensitivity_kind!r}")
    bound = 2.0 if sensitivity_kind == "bounded" else 1.0
    if hasattr(gram, "gram") or hasattr(gram, "matrix"):
        G0 = np.asarray(gram.gram() if hasattr(gram, "gram") else gram.matrix().T @ gram.matrix(), dtype=float)
    else:
        G0 = np.asarray(gram, dtype=np.float64)
    if G0.ndim != 2 or G0.shape[0] != G0.shape[1] or G0.shape[0] < 1:
        raise ValueError(f"gram must be a square matrix (N, N), got shape {G0.shape}")
    G = 0.5 * (G0 + G0.T)
    N = G.shape[0]
    p = max(1, N // 16) if p is None else int(p)
    if p < 1:
        raise ValueError(f"p must be an integer >= 1, got {p}")
    if isinstance(restarts, bool) or int(restarts) < 0:
        raise ValueError(f"restarts must be an integer >= 0, got {restarts!r}")
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    starts = [rng.random((p, N)) for _ in range(int(restarts))]
    if init is not None:
        th0 = np.asarray(init, dtype=np.float64)
        if th0.shape != (p, N) or (th0 < 0).any():
            raise ValueError(f"init must be a non-negative matrix of shape ({p}, {N}), got {th0.shape}")
        starts.insert(0, th0)
    if not starts:
        raise ValueError("give restarts >= 1 or an init")
    best_val, best_theta, values = math.inf, None, []
    with _one_blas_thread():
        for th in starts:
            res = minimize(_p_identity_objective, th.reshape(-1), args=(G, p, N), jac=True, method="L-BFGS-B",
                           bounds=[(0.0, None)] * (p * N), options={"maxiter": int(maxiter)})
            theta = np.maximum(res.x.reshape(p, N), 0.0)
            val = _p_identity_objective(theta.reshape(-1), G, p, N)[0]
            values.append(val)
            if val < best_val:
                best_val, best_theta = val, theta
    A = _p_identity(best_theta)
    info = {"objective": best_val, "theta": best_theta, "restarts": values,
            "seconds": time.perf_counter() - start, "sensitivity_bound": bound}
    return A, bound * bound * best_val, info


# ---------------------------------------------------------------------------
# plan_optimized


def plan_optimized(workload, policy, epsilon, *, template: str = "p-identity", p: int | None = None,
                   restarts: int = 3, seed: int = 0, maxiter: int = 1000) -> Plan:
    """Plan the best strategy of a template for a workload under a 1-D policy, and its measurement.

    ``FullDomain`` (bounded DP): HDMM's p-Identity optimised on ``W^T W``
    (McKenna et al., PVLDB 2018, Sec 5), compared with the identity
    strategy; the one of lower expected error (with its *exact* bounded
    sensitivity, which can be below 2 when columns overlap) is measured
    by :func:`plan_strategy`.

    ``Line``: transformational equivalence (001 Sec 3).  With ``x_G`` the
    N - 1 cut counts ``x_G[k] = sum_{i <= k} x_i`` (the total n is
    public), a move along the edge (k, k + 1) changes exactly one of them
    by 1, so a strategy ``B`` on ``x_G`` has Line sensitivity equal to its
    largest column L1 norm (add/remove DP on ``x_G``); the workload becomes
    ``W_G = W[:, :-1] - W[:, 1:]``.  p-Identity is optimised on ``W_G``
    and compared with ``B = I`` (the ordered mechanism's prefix sums,
    sensitivity 1, 000 Sec 7.1); the better one, composed as
    ``A = B P`` with ``P`` the prefix-sum rows, is measured (its Line
    sensitivity recomputed by an edge scan).

    Parameters
    ----------
    workload : array_like (q, N) or object with ``matrix()``/``gram()``
    policy : Policy
        1-D, secrets ``FullDomain`` or ``Line``, no constraints.
    epsilon : float or Fraction, > 0
    template : {"p-identity"}
    p : int, optional
        Extra rows of p-Identity (default ``max(1, N // 16)``).
    restarts, seed, maxiter
        As :func:`optimize_p_identity`.

    Returns
    -------
    Plan
        :func:`plan_strategy`'s plan (mechanism ``"optimized"``); its
        ``options`` add ``chosen`` ("p-identity", "identity" or
        "prefix"), ``candidates`` (expected workload error of each) and
        ``optimisation_seconds``.

    Raises
    ------
    ValueError
        Another template, a policy that is not 1-D ``FullDomain``/``Line``.

    Privacy
    -------
    As :func:`plan_strategy` (the optimisation reads only the workload).

    Sensitivity
    -----------
    :func:`strategy_sensitivity` of the chosen (rounded) strategy.

    Runtime
    -------
    O(restarts * iterations * p N^2) for the optimisation, then
    :func:`plan_strategy`.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.
    .. [2] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* VLDB 2015
       (001), Sec 3.
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Sec 7.1 (the ordered mechanism).
    """
    policy = _plain_policy(policy)
    eps = check_epsilon(epsilon)
    if template != "p-identity":
        raise ValueError(f"template must be 'p-identity' (the only one so far), got {template!r}")
    domain, graph = policy.domain, policy.secrets
    if domain.ndim != 1:
        raise ParameterError("policy", f"policy: plan_optimized handles 1-D domains so far, got {domain!r}")
    N = int(domain.size)
    if N < 2:
        raise ParameterError("policy", "policy: the domain needs at least 2 values")
    G = _workload_gram(workload, N)
    start = time.perf_counter()
    if isinstance(graph, FullDomain):
        A_opt, _, info = optimize_p_identity(G, "bounded", p, restarts=restarts, seed=seed, maxiter=maxiter)
        cands = {"identity": np.eye(N, dtype=np.int64), "p-identity": A_opt}  # ties go to the hand-designed
        total = "none"
    elif isinstance(graph, Line):
        # W_G = W[:, :-1] - W[:, 1:], so W_G^T W_G = E^T G E with E the differencing
        GG = G[:-1, :-1] - G[:-1, 1:] - G[1:, :-1] + G[1:, 1:]
        q = max(1, (N - 1) // 16) if p is None else p
        B, _, info = optimize_p_identity(GG, "add_remove", q, restarts=restarts, seed=seed, maxiter=maxiter,
                                         init=np.zeros((q, N - 1)))
        # A = B P with P the prefix rows 0..N-2: column j of A is the sum of B's columns j..N-2
        A_opt = np.zeros((B.shape[0], N))
        A_opt[:, :-1] = np.cumsum(B[:, ::-1], axis=1)[:, ::-1]
        cands = {"prefix": prefix_strategy(N), "p-identity": A_opt}  # ties go to the hand-designed
        total = "public"
    else:
        raise ParameterError("policy", f"policy: plan_optimized handles FullDomain and Line secrets so far, "
                                       f"got {graph!r}")
    seconds = time.perf_counter() - start
    # on the grid 1/_RESOLUTION, rounded down: unit column norms stay <= 1 (no sensitivity above the template's)
    cands["p-identity"] = np.floor(cands["p-identity"] * _RESOLUTION) / _RESOLUTION
    plans = {name: plan_strategy(A, policy, eps, workload=_Gram(G), total=total) for name, A in cands.items()}
    errors = {name: pl.expected_error["workload_total_squared_error"] for name, pl in plans.items()}
    chosen = min(errors, key=errors.get)
    plan = plans[chosen]
    options = dict(plan.options, template=template, chosen=chosen, candidates=errors,
                   optimisation_seconds=seconds, p=int(info["theta"].shape[0]), restarts=int(restarts), seed=seed)
    return dataclasses.replace(plan, mechanism="optimized", options=options)
