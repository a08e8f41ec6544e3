"""Fitting HDMM's marginals template to a workload under a policy's sensitivity (:func:`optimize_marginals`).

Minimises ``Delta(theta)^2 * sum_T g_T / lambda_T(theta)`` over the
weights (McKenna, Miklau, Hay, Machanavajjhala, PVLDB 11(10) 2018, Sec 5.3
and 6), with the exact sensitivity of :mod:`._marginals_sensitivity`
smoothed by a p-norm during the search and every candidate compared by its
exact value.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ..._optional import require_scipy
from ...errors import ParameterError
from ...policy._policy import Policy
from ...workloads import Marginals
from ._marginals_algebra import (
    as_workload,
    axes_mask,
    eigenvalues,
    error_terms,
    maximal_sets,
    needed,
    outside_products,
    public_sets,
    subset_sum,
    superset_sum,
    traces,
    weights_dict,
    weights_vector,
)
from ._marginals_sensitivity import Sensitivity, sensitivity_model

__all__ = ["optimize_marginals"]


# ---------------------------------------------------------------------------
# optimisation


class _Objective:
    """log(s(x)^2 * E(x)) over the free weights x (smooth max of the pattern sums with a p-norm)."""

    def __init__(self, g, shape, model: Sensitivity, free: np.ndarray) -> None:
        d = len(shape)
        self.d = d
        self.shape = shape
        self.free = free  # bit masks of the optimised weights
        self.c = outside_products(shape)
        use = needed(g, public_sets(d, model.fixed))
        self.g = np.where(use, g, 0.0)
        self.use = use
        self.C = model.C[:, free]
        self.model = model

    def full(self, x):
        theta = np.zeros(1 << self.d)
        theta[self.free] = x
        return theta

    def error_and_grad(self, x):
        theta = self.full(x)
        lam = superset_sum(theta * theta * self.c, self.d)
        lu = lam[self.use]
        E = float(np.sum(self.g[self.use] / lu))
        h = np.zeros_like(lam)
        h[self.use] = self.g[self.use] / (lu * lu)
        dE = -2.0 * theta * self.c * subset_sum(h, self.d)  # d/dtheta_S: -sum_{T subset S} g_T/lam_T^2 2 theta_S c_S
        return E, dE[self.free]

    def smooth_max(self, x, p):
        s = self.C @ x
        m = float(s.max())
        if m <= 0:
            return 0.0, np.zeros_like(x)
        r = s / m
        rp = r ** p
        tot = float(rp.sum())
        val = m * tot ** (1.0 / p)
        wts = r ** (p - 1) / tot ** ((p - 1.0) / p)
        return val, self.C.T @ wts

    def __call__(self, x, p):
        s, ds = self.smooth_max(x, p) if self.C.shape[0] > 1 else (float(self.C[0] @ x), self.C[0].copy())
        E, dE = self.error_and_grad(x)
        return 2.0 * math.log(s) + math.log(E), 2.0 * ds / s + dE / E

    def exact(self, x) -> float:
        theta = self.full(x)
        lam = superset_sum(theta * theta * self.c, self.d)
        if (lam[self.use] <= 0).any():
            return math.inf
        s = float(np.max(self.C @ x))
        return s * s * float(np.sum(self.g[self.use] / lam[self.use]))


_POWERS = (16.0, 128.0)


def optimize_marginals(workload, policy, *, shape=None, restarts: int = 3, seed: int = 0, maxiter: int = 500,
                       init=None) -> tuple[dict, dict]:
    """HDMM's marginals template fitted to a workload under a policy's sensitivity.

    Minimises ``Delta(theta)^2 * sum_T g_T / lambda_T(theta)`` over
    ``theta >= 0`` (scale invariant; the result is scaled so that its
    largest weight is 1) with scipy's L-BFGS-B on the logarithm, with the
    analytic gradient, from warm starts (the identity ``theta_all = 1``;
    the workload's own marginals with equal weights, for a
    :class:`~blowfish_privacy.workloads.Marginals` workload, else the
    maximal sets ``T`` with ``g_T > 0``; ``init`` when given) and
    ``restarts`` random starts, keeping the best by the exact objective.
    The maximum over the edge patterns of :func:`._marginals_sensitivity.marginals_sensitivity`
    (``Attribute(c)`` with several patterns) is smoothed by a p-norm
    (p = 16, then 128 from there) during the optimisation; every candidate
    is compared by its exact value, warm starts included, so the result is
    never worse than a warm start.

    Under a Blowfish policy the total, and the marginals on the axes no
    edge changes, are public: their weights are not optimised (they are 0)
    and their components ``T`` are left out of the error.  Under
    ``"add_remove"`` the total is a weight like the others.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
    policy : Policy or "add_remove"
    shape : tuple of int, optional
        Required for a matrix workload with ``"add_remove"``.
    restarts : int
        Random starts (weights uniform on [0, 1), numpy seeded by ``seed``:
        public randomness, no data).
    seed : int
    maxiter : int
        L-BFGS-B iterations per start and smoothing stage.
    init : dict, optional
        Another warm start ``{axes: weight}``.

    Returns
    -------
    weights : dict
        ``{sorted tuple of axes: theta_S}``, positive weights only, the
        largest 1.
    info : dict
        ``objective`` (``Delta^2 * ||W A^+||_F^2``, exact: multiply by the
        noise variance per unit sensitivity for the expected error),
        ``sensitivity``, ``error`` (``||W A^+||_F^2``), ``candidates``
        (exact objective of every start after optimisation, and of each
        warm start as given), ``chosen``, ``seconds``, ``evaluations``.

    Raises
    ------
    ParameterError, TypeError
        A workload of another shape, invalid policy or ``init``,
        ``restarts < 0``, a workload with nothing to estimate.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    The closed form of :func:`._marginals_sensitivity.marginals_sensitivity` (exact).

    Runtime
    -------
    O(d 2^d + patterns 2^d) per evaluation, times the iterations and starts.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.3 and 6 (the optimisation).
    """
    require_scipy("optimize_marginals")
    from scipy.optimize import minimize

    start_time = time.perf_counter()
    if isinstance(policy, Policy):
        w, shp = as_workload(workload, shape if shape is not None else policy.domain.shape)
    else:
        w, shp = as_workload(workload, shape)
    model = sensitivity_model(policy, shp)
    if isinstance(restarts, bool) or not isinstance(restarts, (int, np.integer)) or restarts < 0:
        raise ParameterError("restarts", f"restarts must be an integer >= 0, got {restarts!r}")
    if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)) or maxiter < 1:
        raise ParameterError("maxiter", f"maxiter must be an integer >= 1, got {maxiter!r}")
    d = len(shp)
    g = traces(w, shp)
    U = axes_mask(i for i in range(d) if shp[i] >= 2)
    public = public_sets(d, model.fixed)
    # weights on marginals that no edge changes are not optimised: those marginals are public (exact)
    free = np.array([m for m in range(1 << d) if m & ~U == 0 and not public[m]], dtype=np.int64)
    obj = _Objective(g, shp, model, free)
    if not obj.use.any():
        raise ParameterError("workload", "workload: nothing to estimate (every query is a function of the public "
                                         "total or of a marginal no edge changes, or the workload is zero)")
    if model.C.shape[0] == 0:
        raise ParameterError("policy", "policy: the secret graph has no edge on this domain; nothing needs noise")
    index = {int(m): k for k, m in enumerate(free)}

    def vec(theta_full):
        return np.array([theta_full[m] for m in free], dtype=np.float64)

    warm = {}
    ident = np.zeros(1 << d)
    ident[U] = 1.0
    warm["identity"] = vec(ident)
    own = np.zeros(1 << d)
    if isinstance(w, Marginals):
        for axes in w.axes_list:
            own[axes_mask(axes) & U] = 1.0
    else:
        sup = [int(T) for T in np.flatnonzero(obj.use)]
        for T in maximal_sets(sup):
            own[T] = 1.0
    own[public] = 0.0
    if own[free].any():
        warm["workload marginals"] = vec(own)
    if init is not None:
        th = weights_vector(init, shp, "init")
        if (th[[m for m in range(1 << d) if m not in index]] > 0).any():
            raise ParameterError("init", "init: weights on the total, on marginals no edge changes (both public "
                                         "under Blowfish neighbours) or on axes of length 1 are not optimised; "
                                         "leave them out")
        warm["init"] = vec(th)
    rng = np.random.default_rng(seed)
    starts = dict(warm)
    for k in range(int(restarts)):
        starts[f"random {k}"] = rng.random(free.shape[0])
    lower = 1e-9  # the box's floor: every eigenvalue stays positive during the search
    candidates, best = {}, (math.inf, None, None)
    evaluations = 0
    for name, x0 in warm.items():
        val = obj.exact(x0)
        candidates[name + " (as given)"] = val
        if val < best[0]:
            best = (val, x0, name + " (as given)")
    for name, x0 in starts.items():
        x = np.maximum(np.asarray(x0, dtype=np.float64), lower) / max(float(np.max(x0)), 1e-300)
        powers = _POWERS if obj.C.shape[0] > 1 else (1.0,)
        for p in powers:
            res = minimize(obj, x, args=(p,), jac=True, method="L-BFGS-B",
                           bounds=[(lower, None)] * free.shape[0],
                           options={"maxiter": int(maxiter)})
            evaluations += int(res.nfev)
            x = np.maximum(res.x, 0.0)
            x = x / float(np.max(x))
        cut = np.where(x < 1e-7, 0.0, x)  # the floor of the box is no weight at all (kept only when not worse)
        val, val_cut = obj.exact(x), obj.exact(cut)
        if val_cut <= val:
            x, val = cut, val_cut
        candidates[name + " (optimised)"] = val
        if val < best[0]:
            best = (val, x, name + " (optimised)")
    val, x, chosen = best
    if x is None:
        raise ParameterError("workload", "workload: no start gave a strategy that determines the workload")
    x = x / float(np.max(x))
    theta = obj.full(x)
    sens = model.exact(theta)
    err = error_terms(g, eigenvalues(theta, shp), public)
    info = {"objective": sens * sens * err, "sensitivity": sens, "error": err, "candidates": candidates,
            "chosen": chosen, "seconds": time.perf_counter() - start_time, "evaluations": evaluations,
            "sensitivity_how": model.how}
    return weights_dict(theta, d), info
