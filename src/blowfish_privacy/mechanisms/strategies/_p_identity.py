"""HDMM's p-Identity template: ``A = [I; Theta] D^{-1}`` fitted to a workload's Gram matrix.

McKenna, Miklau, Hay, Machanavajjhala, *Optimizing error of
high-dimensional statistical queries under differential privacy*, PVLDB
11(10), 2018, Sec 5.2: unit column norms (so the add/remove sensitivity is
1, the bounded one at most 2), the objective ``tr(W^T W (A^T A)^{-1})`` and
its gradient through the p x p matrix ``I + Theta Theta^T`` (Woodbury),
minimised by L-BFGS-B over ``Theta >= 0``.  Used by
:func:`.optimized.plan_optimized` and the Kronecker template.
"""

from __future__ import annotations

import contextlib
import math
import time

import numpy as np

from ..._optional import require_scipy

__all__ = ["optimize_p_identity"]


def one_blas_thread():
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
    # H = D G D is never formed: products with it are (X * d) @ G * d (three p x N x N products, no N x N temporary)
    Y = np.eye(p) + T @ T.T
    Z = np.linalg.solve(Y, T)  # Y^{-1} Theta = Theta M, with M = (I + Theta^T Theta)^{-1}
    TH = ((T * d) @ G) * d  # Theta H, (p, N)
    value = float(np.sum(np.diag(G) * d * d) - np.sum(Z * TH))  # tr(H M) = tr(H) - tr(Theta^T Y^{-1} Theta H)
    ZH = ((Z * d) @ G) * d  # Theta M H (before the right M)
    ZHM = ZH - (ZH @ T.T) @ Z  # Theta M H M
    GDT = G @ (T.T * d[:, None])  # G D Theta^T, (N, p)
    diag_gdm = np.diag(G) * d - np.einsum("jk,kj->j", GDT, Z)  # diag(G D M)
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
    require_scipy("optimize_p_identity")
    from scipy.optimize import minimize

    if sensitivity_kind not in ("bounded", "add_remove"):
        raise ValueError(f"sensitivity_kind must be 'bounded' or 'add_remove', got {sensitivity_kind!r}")
    bound = 2.0 if sensitivity_kind == "bounded" else 1.0
    if hasattr(gram, "gram"):
        G0 = np.asarray(gram.gram(), dtype=np.float64)
    elif hasattr(gram, "matrix"):
        M = np.asarray(gram.matrix(), dtype=np.float64)  # built once
        G0 = M.T @ M
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
    with one_blas_thread():
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
