"""Optimised linear strategies under a policy (HDMM's templates with the policy's sensitivity).

The best strategy of a template for a workload, measured by
:func:`._strategy.plan_strategy` (exact discrete Laplace on ``A x``, least
squares).  HDMM (McKenna, Miklau, Hay, Machanavajjhala, *Optimizing error of
high-dimensional statistical queries under differential privacy*, PVLDB
11(10), 2018, Sec 4-5) optimises ``||W A^+||_F^2`` for unit column norms;
here the norm is the policy sensitivity ``Delta_G(A)`` of
:func:`._strategy_sensitivity.strategy_sensitivity` (000 Def 5.1), through
transformational equivalence where the policy graph is a tree (001 Sec 3).

:func:`optimize_p_identity`
    HDMM's p-Identity template ``A = [I; Theta] D^{-1}`` fitted to a
    workload's Gram matrix with L-BFGS-B and restarts.
:func:`plan_optimized`
    The optimised strategy for a policy, never worse than the
    hand-designed strategies it is compared with.
"""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING

import numpy as np

from ..._validation import check_epsilon
from ..._optional import require_scipy
from ...errors import ParameterError
from ...workloads import AllRanges
from ._bounds import linear_lower_bound
from ._kron import axis_grams, optimize_kronecker, plan_kronecker
from ._kron_sensitivity import kronecker_sensitivity
from ._marginals_plan import plan_marginals
from ._p_identity import optimize_p_identity
from ._strategy import RESOLUTION, hierarchical_strategy, plan_strategy, prefix_strategy, strategy_error
from ._strategy_inputs import Gram, plain_policy, workload_gram
from ._strategy_sensitivity import strategy_sensitivity
from ..cumulative._common import CumulativeRelease
from ..histogram import HistogramRelease
from ..cumulative._oh import isotonic_cumulative
from ..cumulative.cumulative import plan_ordered_hierarchical
from ..plan import Plan, check_memory, int64_bytes
from ..._typing import Real

if TYPE_CHECKING:
    from ..._workload_base import Workload
    from ...policy._policy import Policy

__all__ = [
    "hierarchical_strategy",
    "optimize_p_identity",
    "plan_optimized",
    "plan_optimized_cdf",
    "plan_strategy",
    "prefix_strategy",
    "strategy_error",
    "strategy_sensitivity",
]


# ---------------------------------------------------------------------------
# plan_optimized


#: Extra rows of p-Identity above which the cost O(p N^2) per step is capped.
_P_CAP = 32
#: Largest 1-D domain p-Identity optimises (dense (N, N) matrices; about a minute at 4096).
OPTIMIZE_LIMIT_1D = 8192
#: Largest axis a Kronecker factor is optimised for (O(n^3) per step; about a minute at 256).
OPTIMIZE_LIMIT_AXIS = 512
#: Largest domain the lower bound of plan_optimized is computed for.
BOUND_LIMIT = 2**17
#: Largest number of random starts and of optimiser iterations accepted.
_MAX_RESTARTS = 100
_MAX_ITER = 100_000


def _check_count(name: str, value, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not low <= value <= high:
        raise ParameterError(name, f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return int(value)


def _default_p(N: int, p: int | None) -> int:
    if p is not None:
        return _check_count("p", p, 1, max(1, N))
    return max(1, min(N // 16, _P_CAP))


def _oh_strategy(policy, epsilon) -> np.ndarray:
    """The ordered hierarchical mechanism's noisy nodes as one weighted linear strategy (rows / their noise scale).

    S nodes: prefix sums at the block ends; H trees: the nodes of each
    block's fan-out-f tree below its root (000 Sec 7.2, our OH plan's
    structure and split).  Answered with unit noise and least squares, this
    is OH with the best linear inference, the fair comparison.
    """
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
    N = int(policy.domain.size)
    if N > BOUND_LIMIT:
        return {"value": None, "how": f"not computed: {N} values, above the {BOUND_LIMIT} the bound is computed for"}
    try:
        b = linear_lower_bound(workload, policy, epsilon)
    except (ValueError, TypeError, MemoryError) as exc:  # a refusal of the bound is not a failure of the plan
        return {"value": None, "how": f"not computed: {exc}"}
    return {"value": float(b["value"]), "tree": b["tree"], "how": b["how"], "seconds": float(b["seconds"])}


def plan_optimized(workload: Workload, policy: Policy, epsilon: Real, *, template: str | None = None,
                   p: int | None = None, restarts: int = 3, seed: int = 0, maxiter: int = 300,
                   bound: bool = True) -> Plan[HistogramRelease]:
    """Plan the best strategy of a template for a workload under a policy, and its measurement.

    The strategy is optimised for the policy's own sensitivity (HDMM's
    templates, McKenna et al. PVLDB 2018 Sec 5, with the add/remove
    sensitivity replaced by ``Delta_G``, see
    Corrections to the papers (docs/explanation/corrections.md)) and compared with
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
        sensitivity (:func:`._kron_sensitivity.kronecker_sensitivity`).
        Distance thresholds (the grid): per-axis strategies optimised for the
        closed-form grid sensitivity ``max_a L_a prod_{b != a} c_b``
        (:func:`._kron.optimize_kronecker`), against the identity
        and HDMM's p-Identity.
    ``"marginals"`` (multi-attribute domains)
        HDMM's weighted marginals with the policy's sensitivity in closed
        form (:func:`._marginals_plan.plan_marginals`).

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
        seeded by ``seed``; they never touch the data).  ``restarts=0``
        keeps only the warm starts where there are some (the cut-count and
        Kronecker optimisations); HDMM's p-Identity always gets at least one
        random start.  300 L-BFGS-B
        iterations reach the p-Identity optimum on all ranges over 1024
        cells to 0.1% (1000: 4x the time for 0.12%).
    bound : bool
        Also compute the SVD lower bound on any data-independent linear
        mechanism's error (:func:`._bounds.linear_lower_bound`)
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
    (:func:`strategy_sensitivity`, :func:`._kron_sensitivity.kronecker_sensitivity`
    or :func:`._marginals_sensitivity.marginals_sensitivity`).

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
    policy = plain_policy(policy)
    eps = check_epsilon(epsilon)
    domain, graph = policy.domain, policy.secrets
    if template is None:
        template = "p-identity" if domain.ndim == 1 else "kronecker"
    if template not in ("p-identity", "kronecker", "marginals"):
        raise ParameterError("template", f"template must be 'p-identity', 'kronecker' or 'marginals', "
                                         f"got {template!r}")
    _check_count("restarts", restarts, 0, _MAX_RESTARTS)
    _check_count("maxiter", maxiter, 1, _MAX_ITER)
    _check_count("seed", seed, 0, 2**63 - 1)
    if not isinstance(bound, bool):
        raise ParameterError("bound", f"bound must be True or False, got {bound!r}")
    N = int(domain.size)
    if N < 2:
        raise ParameterError("policy", "policy: the domain needs at least 2 values")
    if not graph.has_edge(domain):
        raise ParameterError("policy", f"policy: its secret graph {graph!r} has no edge on this domain: it protects "
                                       "no pair of values, so there is no noise to optimise (every answer would be "
                                       "exact)")
    require_scipy("the optimized mechanism (its strategy search)")
    # the optimisers' work is cubic in a dense dimension: refuse what would not finish in minutes
    if template == "p-identity" and N > OPTIMIZE_LIMIT_1D:
        raise ParameterError("policy", f"policy: template 'p-identity' optimises dense ({N}, {N}) matrices; at most "
                                       f"{OPTIMIZE_LIMIT_1D} values are accepted (merge bins, or use plan_ordered / "
                                       f"plan_ordered_hierarchical / plan_hierarchical)")
    if template == "kronecker" and max(int(n) for n in domain.shape) > OPTIMIZE_LIMIT_AXIS:
        raise ParameterError("policy", f"policy: template 'kronecker' optimises one dense matrix per axis; at most "
                                       f"{OPTIMIZE_LIMIT_AXIS} values per axis are accepted, got shape "
                                       f"{tuple(int(n) for n in domain.shape)}")
    # working memory before anything is built: dense (N, N) matrices in 1-D, per-axis ones for Kronecker
    if template == "p-identity" and domain.ndim == 1:
        words = 8 * N * N + 4 * (N + _default_p(N, p)) * N
    elif template == "kronecker" and domain.ndim >= 2:
        words = 3 * N + sum(12 * int(n) * int(n) for n in domain.shape)
    else:
        words = 6 * N
    check_memory(int64_bytes(words), size=N, parameter="policy", mechanism="optimized")
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
        if graph.is_complete():
            shape = tuple(int(s) for s in domain.shape)
            fitted: dict[bytes, np.ndarray] = {}  # axes with the same Gram matrix share one fit (deterministic)
            fs = []
            for G, n in zip(axis_grams(workload, shape), shape):
                key = G.tobytes()
                if key not in fitted:
                    fitted[key] = optimize_p_identity(G, "add_remove", _default_p(n, p), restarts=max(1, restarts),
                                                      seed=seed, maxiter=maxiter)[0]
                fs.append(fitted[key])
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
        G = workload_gram(workload, N)
        q = _default_p(N, p)
        same_as_prefix = False
        line_theta = graph.line_threshold(domain)  # edges: the pairs at most theta bins apart (None: not such)
        if graph.is_complete():
            A_opt = optimize_p_identity(G, "bounded", q, restarts=max(1, restarts), seed=seed, maxiter=maxiter)[0]
            cands = {"identity": np.eye(N, dtype=np.int64), "p-identity": A_opt}  # ties go to the hand-designed
            total = "none"
        elif line_theta is not None:
            GG = G[:-1, :-1] - G[:-1, 1:] - G[1:, :-1] + G[1:, 1:]  # W_G^T W_G, W_G = W E
            qq = _default_p(N - 1, p)
            B = optimize_p_identity(GG, "add_remove", qq, restarts=restarts, seed=seed, maxiter=maxiter,
                                    init=np.zeros((qq, N - 1)))[0]
            # A = B P with P the prefix rows 0..N-2: column j of A is the sum of B's columns j..N-2
            A_cut = np.zeros((B.shape[0], N))
            A_cut[:, :-1] = np.cumsum(B[:, ::-1], axis=1)[:, ::-1]
            cands = {"prefix": prefix_strategy(N)}
            if np.any(B[N - 1:] != 0):  # else the optimum is the prefix sums themselves (Theta = 0)
                cands["p-identity (cut counts)"] = A_cut
            else:
                same_as_prefix = True
            if line_theta != 1:  # wider than the line graph: the OH and bounded p-Identity strategies may win
                cands["ordered-hierarchical"] = _oh_strategy(policy, eps)
                cands["p-identity"] = optimize_p_identity(G, "bounded", q, restarts=max(1, restarts), seed=seed,
                                                          maxiter=maxiter)[0]
            total = "public"
        else:
            raise ParameterError("policy", f"policy: template 'p-identity' handles FullDomain, Line and distance "
                                           f"threshold secrets, got {graph!r}")
        # real strategies on the grid 1/RESOLUTION, rounded down: column norms never grow
        for name in list(cands):
            if cands[name].dtype.kind == "f":
                cands[name] = np.floor(cands[name] * RESOLUTION) / RESOLUTION
        # one candidate's plan at a time (each holds an (N, m) reconstruction): keep the best so far
        errors, plan, chosen = {}, None, ""
        for name in list(cands):
            pl = plan_strategy(cands.pop(name), policy, eps, workload=Gram(G), total=total)
            errors[name] = pl.expected_error["workload_total_squared_error"]
            if plan is None or errors[name] < errors[chosen]:  # ties go to the earlier, hand-designed one
                plan, chosen = pl, name
            del pl
        if same_as_prefix:
            errors["p-identity (cut counts)"] = errors["prefix"]
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


# ---------------------------------------------------------------------------
# the cumulative histogram (the cdf release kind)


def plan_optimized_cdf(
    policy: Policy, epsilon: Real, *, restarts: int = 1, seed: int = 0, maxiter: int = 300,
) -> Plan[CumulativeRelease]:
    """Plan a cumulative histogram by the optimised strategy for all ranges, then isotonic regression.

    :func:`plan_optimized` with the workload of all ``N (N + 1) / 2`` ranges
    (1-D, template p-Identity, never worse in expected error than the
    ordered and ordered hierarchical mechanisms it is compared with), whose
    least-squares histogram is turned into cumulative counts and projected
    onto the non-decreasing sequences in ``[0, n]`` ending at ``n``
    (isotonic regression, post-processing: it never moves the cumulative
    counts farther from the truth in L2, see
    Corrections to the papers (docs/explanation/corrections.md)).

    Parameters
    ----------
    policy : Policy
        1-D; secrets ``FullDomain``, ``Line`` or ``DistanceThreshold``; no
        constraints; at most 8192 values.
    epsilon : float or Fraction, > 0
    restarts, seed, maxiter
        As :func:`plan_optimized`.

    Returns
    -------
    Plan
        ``measure(hist, generator)`` returns a
        :class:`~blowfish_privacy.mechanisms.CumulativeRelease` whose
        expected range error is the least-squares estimate's mean squared
        error over all ranges (before the isotonic projection, which can
        only lower the L2 error of the cumulative counts).

    Raises
    ------
    ParameterError, ValueError
        As :func:`plan_optimized`.

    Privacy
    -------
    As :func:`plan_optimized`: (epsilon, P)-Blowfish privacy for P =
    ``policy``; the projection is post-processing with the public n.

    Sensitivity
    -----------
    Of the chosen strategy (:func:`strategy_sensitivity`, exact by an edge
    scan in 1-D).

    Runtime
    -------
    As :func:`plan_optimized` (about a minute at 4096 values); measurement
    O(m N).

    Utility
    -------
    Mean squared error per range at most that of the ordered / ordered
    hierarchical mechanisms with least squares.

    References
    ----------
    .. [1] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 5.
    .. [2] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Sec 7.
    """
    policy = plain_policy(policy)
    if policy.domain.ndim != 1:
        raise ParameterError("policy", f"policy: a cumulative histogram needs a 1-D domain, got {policy.domain!r}")
    N = int(policy.domain.size)
    inner = plan_optimized(AllRanges(N), policy, epsilon, template="p-identity", restarts=restarts, seed=seed,
                           maxiter=maxiter, bound=False)
    ranges = N * (N + 1) / 2
    mse = inner.expected_error["workload_total_squared_error"] / ranges

    def run(plan, hist, gen):
        r = inner.measure(hist, gen)
        n = int(np.asarray(hist).sum())
        cum = isotonic_cumulative(np.cumsum(r.histogram.reshape(-1)), n)
        return CumulativeRelease(
            cumulative=cum, n=n, secure=gen.is_secure,
            params={"chosen": inner.options["chosen"], "template": "p-identity", "workload": "all ranges",
                    "post_processing": "least squares with the public total, then isotonic regression in [0, n]"},
            domain=policy.domain, plan=plan)

    return dataclasses.replace(
        inner, mechanism="optimized_cdf",
        expected_error={"range_query_mse_before_inference": mse, **inner.expected_error},
        runtime=inner.runtime + "; isotonic regression O(N)", run=run)
