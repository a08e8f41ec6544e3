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
from ..secrets import DistanceThreshold, FullDomain, Line
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


#: Extra rows of p-Identity above which the cost O(p N^2) per step is capped.
_P_CAP = 32


def _default_p(N: int, p: int | None) -> int:
    if p is not None:
        if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
            raise ValueError(f"p must be an integer >= 1, got {p!r}")
        return int(p)
    return max(1, min(N // 16, _P_CAP))


def _oh_strategy(policy, epsilon) -> np.ndarray:
    """The ordered hierarchical mechanism's noisy nodes as one weighted linear strategy (rows / their noise scale).

    S nodes: prefix sums at the block ends; H trees: the nodes of each
    block's fan-out-f tree below its root (000 Sec 7.2, our OH plan's
    structure and split).  Answered with unit noise and least squares, this
    is OH with the best linear inference, the fair comparison.
    """
    from .cumulative import plan_ordered_hierarchical

    oh = plan_ordered_hierarchical(policy, epsilon)
    N = int(policy.domain.size)
    block, f, h = int(oh.options["block"]), int(oh.options["fanout"]), int(oh.options["height"])
    scales = {part.name: float(part.scale) for part in oh.parts}
    rows = []
    if "S" in scales:
        for end in range(block, N, block):
            r = np.zeros(N)
            r[:end] = 1.0 / scales["S"]
            rows.append(r)
    if "H" in scales:
        for s0 in range(0, N, block):
            s1 = min(N, s0 + block)
            for level in range(h):
                width = f ** level
                if width >= s1 - s0:
                    break
                for a in range(s0, s1, width):
                    r = np.zeros(N)
                    r[a:min(s1, a + width)] = 1.0 / scales["H"]
                    rows.append(r)
    return np.array(rows)


def _lower_bound(workload, policy, epsilon) -> dict:
    from ._strategy_bounds import linear_lower_bound

    try:
        b = linear_lower_bound(workload, policy, epsilon)
    except (ValueError, TypeError, MemoryError) as exc:  # a refusal of the bound is not a failure of the plan
        return {"value": None, "how": f"not computed: {exc}"}
    return {"value": float(b["value"]), "tree": b["tree"], "how": b["how"], "seconds": float(b["seconds"])}


def plan_optimized(workload, policy, epsilon, *, template: str | None = None, p: int | None = None,
                   restarts: int = 3, seed: int = 0, maxiter: int = 1000, bound: bool = True) -> Plan:
    """Plan the best strategy of a template for a workload under a policy, and its measurement.

    The strategy is optimised for the policy's own sensitivity (HDMM's
    templates, McKenna et al. PVLDB 2018 Sec 5, with the add/remove
    sensitivity replaced by ``Delta_G``, DESIGN.md sec 5b) and compared with
    the hand-designed strategies of the same policy; the one of lowest
    expected workload error is measured (ties go to the hand-designed one),
    so the result is never worse than they are.

    Templates and policies:

    ``"p-identity"`` (1-D; the default there)
        ``FullDomain`` (bounded DP): HDMM's p-Identity ``[I; Theta] D^{-1}``
        on ``W^T W`` against the identity; the exact bounded sensitivity
        (an all-pairs scan) calibrates.  ``Line``: transformational
        equivalence (001 Sec 3): with the N - 1 cut counts ``x_G[k] =
        sum_{i <= k} x_i`` (n public) a move along an edge changes one of
        them by 1, so p-Identity is optimised on ``W_G = W[:, :-1] -
        W[:, 1:]`` with unit column norms and compared with the ordered
        mechanism's prefix sums (000 Sec 7.1).  ``DistanceThreshold``
        (theta > 1): the ordered mechanism (sensitivity theta), the ordered
        hierarchical mechanism as a weighted linear strategy (000 Sec 7.2,
        its own split), the cut-space optimum of the line and HDMM's
        p-Identity, each with its exact threshold sensitivity (edge scan).
    ``"kronecker"`` (2-D and more; the default there)
        ``A = A_1 (x) ... (x) A_d`` (HDMM Sec 5.3). ``FullDomain``: HDMM's
        per-axis p-Identity, calibrated to a safe bound on the bounded
        sensitivity (:func:`._strategy_kron.kronecker_sensitivity`).
        Distance thresholds (the grid): per-axis strategies optimised for the
        closed-form grid sensitivity ``max_a L_a prod_{b != a} c_b``
        (:func:`._strategy_kron.optimize_kronecker`), against the identity
        and HDMM's p-Identity.
    ``"marginals"`` (multi-attribute domains)
        HDMM's weighted marginals with the policy's sensitivity in closed
        form (:func:`._strategy_marginals.plan_marginals`).

    Parameters
    ----------
    workload : Workload or array_like (q, N)
        The queries (:mod:`blowfish_privacy.workloads`), on the policy's
        domain.
    policy : Policy
        No constraints.
    epsilon : float or Fraction, > 0
    template : {"p-identity", "kronecker", "marginals"}, optional
    p : int, optional
        Extra rows of p-Identity (default ``min(N // 16, 32)``, at least 1).
    restarts, seed, maxiter
        Optimiser settings (random starts are public randomness: numpy
        seeded by ``seed``; they never touch the data).
    bound : bool
        Also compute the SVD lower bound on any data-independent linear
        mechanism's error (:func:`._strategy_bounds.linear_lower_bound`)
        and report the optimum's ratio to it.

    Returns
    -------
    Plan
        Mechanism ``"optimized"``; ``options`` add ``template``,
        ``chosen``, ``candidates`` (expected workload error of each, at
        this epsilon), ``optimisation_seconds`` and ``lower_bound`` (its
        ``value``, ``tree``, ``how`` and ``ratio`` = expected error /
        bound).  ``expected_error["workload_total_squared_error"]`` is the
        chosen strategy's.

    Raises
    ------
    ValueError, ParameterError
        An unknown template, a template that does not fit the policy, a
        policy with constraints.

    Privacy
    -------
    (epsilon, P)-Blowfish privacy for P = ``policy`` (000 Thm 5.1): exact
    discrete Laplace on the integer strategy answers at their exact policy
    sensitivity (or a safe bound, stated in the plan's part); the
    optimisation reads only public inputs.

    Sensitivity
    -----------
    Of the chosen strategy, recomputed on its rounded entries
    (:func:`strategy_sensitivity`, :func:`._strategy_kron.kronecker_sensitivity`
    or :func:`._strategy_marginals.marginals_sensitivity`).

    Runtime
    -------
    1-D: O(restarts * iterations * p N^2) plus O(N^3) per candidate's least
    squares (about a minute at 4096 cells).  Kronecker: O(iterations * n^3)
    per axis and grid point (about two minutes at 256 x 256).  Measurement
    O(m N) (1-D), O(N sum m_a) (Kronecker).

    Utility
    -------
    The expected total squared error over the workload, with the lower
    bound beside it.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.
    .. [2] Haney, Machanavajjhala, Ding. *Design of Policy-Aware Differentially Private Algorithms.* VLDB 2015
       (001), Sec 3.
    .. [3] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Sec 7.
    .. [4] Li, Miklau. *Optimal error of query sets under the differentially-private matrix mechanism.* ICDT
       2013 (the SVD bound).
    """
    from ._strategy_kron import kronecker_sensitivity, optimize_kronecker, plan_kronecker
    from ._strategy_marginals import plan_marginals

    policy = _plain_policy(policy)
    eps = check_epsilon(epsilon)
    domain, graph = policy.domain, policy.secrets
    if template is None:
        template = "p-identity" if domain.ndim == 1 else "kronecker"
    if template not in ("p-identity", "kronecker", "marginals"):
        raise ParameterError("template", f"template must be 'p-identity', 'kronecker' or 'marginals', "
                                         f"got {template!r}")
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
        raise ValueError(f"restarts must be an integer >= 0, got {restarts!r}")
    N = int(domain.size)
    if N < 2:
        raise ParameterError("policy", "policy: the domain needs at least 2 values")
    start = time.perf_counter()
    extra: dict = {}
    if template == "marginals":
        plan = plan_marginals(workload, policy, eps, restarts=restarts, seed=seed, maxiter=maxiter)
        opt = plan.options.get("optimisation") or {}
        chosen = str(opt.get("chosen", "given"))
        errors = {chosen: plan.expected_error["workload_total_squared_error"]}
    elif template == "kronecker":
        if domain.ndim < 2:
            raise ParameterError("template", "template 'kronecker' needs a domain of 2 or more axes; use "
                                             "'p-identity' in 1-D")
        if isinstance(graph, FullDomain):
            shape = tuple(int(s) for s in domain.shape)
            from ._strategy_kron import _axis_grams

            grams = _axis_grams(workload, shape)
            fs = [optimize_p_identity(G, "add_remove", _default_p(n, p), restarts=max(1, restarts), seed=seed,
                                      maxiter=maxiter)[0] for G, n in zip(grams, shape)]
            cands = {"identity": [np.eye(n) for n in shape], "p-identity": fs}
        else:
            res = optimize_kronecker(workload, policy, seed=seed, maxiter=min(maxiter, 300))
            cands = {"identity": [np.eye(int(n)) for n in domain.shape], res["chosen"]: res["factors"]}
            extra["grid_candidates"] = res["candidates"]
        plans = {name: plan_kronecker(fs, policy, eps, workload=workload) for name, fs in cands.items()}
        errors = {name: pl.expected_error["workload_total_squared_error"] for name, pl in plans.items()}
        chosen = min(errors, key=errors.get)
        plan = plans[chosen]
        extra["sensitivity_of_each"] = {name: kronecker_sensitivity(fs, policy)[0] for name, fs in cands.items()}
    else:
        if domain.ndim != 1:
            raise ParameterError("template", f"template 'p-identity' handles 1-D domains; use 'kronecker' or "
                                             f"'marginals' for {domain!r}")
        G = _workload_gram(workload, N)
        q = _default_p(N, p)
        if isinstance(graph, FullDomain):
            A_opt = optimize_p_identity(G, "bounded", q, restarts=max(1, restarts), seed=seed, maxiter=maxiter)[0]
            cands = {"identity": np.eye(N, dtype=np.int64), "p-identity": A_opt}  # ties go to the hand-designed
            total = "none"
        elif isinstance(graph, DistanceThreshold):
            GG = G[:-1, :-1] - G[:-1, 1:] - G[1:, :-1] + G[1:, 1:]  # W_G^T W_G, W_G = W E
            qq = _default_p(N - 1, p)
            B = optimize_p_identity(GG, "add_remove", qq, restarts=restarts, seed=seed, maxiter=maxiter,
                                    init=np.zeros((qq, N - 1)))[0]
            # A = B P with P the prefix rows 0..N-2: column j of A is the sum of B's columns j..N-2
            A_cut = np.zeros((B.shape[0], N))
            A_cut[:, :-1] = np.cumsum(B[:, ::-1], axis=1)[:, ::-1]
            cands = {"prefix": prefix_strategy(N), "p-identity (cut counts)": A_cut}
            if not isinstance(graph, Line):
                cands["ordered-hierarchical"] = _oh_strategy(policy, eps)
                cands["p-identity"] = optimize_p_identity(G, "bounded", q, restarts=max(1, restarts), seed=seed,
                                                          maxiter=maxiter)[0]
            total = "public"
        else:
            raise ParameterError("policy", f"policy: template 'p-identity' handles FullDomain, Line and distance "
                                           f"threshold secrets, got {graph!r}")
        # real strategies on the grid 1/_RESOLUTION, rounded down: column norms never grow
        for name in list(cands):
            if cands[name].dtype.kind == "f":
                cands[name] = np.floor(cands[name] * _RESOLUTION) / _RESOLUTION
        plans = {name: plan_strategy(A, policy, eps, workload=_Gram(G), total=total) for name, A in cands.items()}
        errors = {name: pl.expected_error["workload_total_squared_error"] for name, pl in plans.items()}
        chosen = min(errors, key=errors.get)
        plan = plans[chosen]
        opts = dict(plan.options)
        opts.pop("strategy", None)  # the matrix stays in the plan's closure; options stay printable
        plan = dataclasses.replace(plan, options=opts)
    seconds = time.perf_counter() - start
    lower = _lower_bound(workload, policy, eps) if bound else {"value": None, "how": "not asked (bound=False)"}
    if lower.get("value"):
        lower["ratio"] = plan.expected_error["workload_total_squared_error"] / lower["value"]
    options = dict(plan.options, template=template, chosen=chosen, candidates=errors,
                   optimisation_seconds=seconds, restarts=int(restarts), seed=seed, lower_bound=lower, **extra)
    return dataclasses.replace(plan, mechanism="optimized", options=options)
