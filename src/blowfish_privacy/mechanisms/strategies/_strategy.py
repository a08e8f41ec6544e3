"""Linear strategies under a policy: exact policy sensitivity, least squares, measurement.

A data-independent linear mechanism answers a *strategy* matrix ``A``
(``m`` queries on the flattened histogram ``x`` of ``|T| = N`` cells) with
noise and reconstructs by least squares (DESIGN.md sec 5b).  Under a policy
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

:func:`strategy_sensitivity`
    ``Delta_G(A)`` exactly by a vectorised edge scan, else the safe bound
    ``2 max_u ||A e_u||_1``, saying which in ``how``.
:func:`plan_strategy`
    The plan of "exact discrete Laplace on ``A x``, then least squares"
    (with the public total ``n`` as a constraint by default), its exact
    spend and its analytic expected error on a workload.
:func:`prefix_strategy`, :func:`hierarchical_strategy`, :func:`strategy_error`
    Hand-designed strategies and the error formula, for comparisons.

The optimisers live in :mod:`.optimized`.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from typing import Any

import numpy as np

from ..._validation import check_epsilon
from ...noise import MAX_SCALE, calibrate, discrete_laplace_variance
from ...policy._policy import require_policy
from ...policy.secrets import Custom, DistanceThreshold, FullDomain
from ..histogram import HistogramRelease, shape_check
from ..plan import NoisePart, Plan, check_memory, int64_bytes

__all__ = [
    "hierarchical_strategy",
    "plan_strategy",
    "prefix_strategy",
    "strategy_error",
    "strategy_sensitivity",
]

#: Largest N * N * m for which the complete graph's sensitivity is found by scanning every pair.
PAIR_SCAN_LIMIT = 2_000_000_000
#: Largest number of matrix entries touched at once by a scan.
_CHUNK_ENTRIES = 1 << 22
#: Largest number of candidate offsets a distance-threshold scan tests.
_OFFSET_LIMIT = 200_000
#: Largest domain whose edges are listed by :meth:`SecretGraph.iter_edges` (explicit graphs excepted).
LISTED_EDGE_DOMAIN = 4096
#: Grid a real-valued strategy is put on: entries are multiples of 1 / RESOLUTION.
RESOLUTION = 2**20

CITATION = ("McKenna, Miklau, Hay, Machanavajjhala, 'Optimizing error of high-dimensional statistical queries "
             "under differential privacy', PVLDB 11(10) 2018 (HDMM: strategies, p-Identity, least squares); "
             "He, Machanavajjhala, Ding, SIGMOD 2014 (000 Def 5.1, Thm 5.1: policy sensitivity); Haney, "
             "Machanavajjhala, Ding, VLDB 2015 (001 Sec 3: transformational equivalence); sampler: Canonne, "
             "Kamath, Steinke 2020 Alg. 2")


# ---------------------------------------------------------------------------
# inputs


def as_strategy(A, name: str = "A") -> np.ndarray:
    try:
        arr = np.asarray(A)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 2-D numeric matrix (m, N)") from None
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be a 2-D matrix of shape (m, N) with m, N >= 1, got shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype == bool:
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise ValueError(f"{name} must hold finite numbers")
    return arr


def _workload_matrix(workload, size: int, name: str = "workload") -> np.ndarray:
    W = workload.matrix() if hasattr(workload, "matrix") and callable(workload.matrix) else workload
    W = np.asarray(W, dtype=np.float64)
    if W.ndim != 2 or W.shape[1] != size:
        raise ValueError(f"{name} must be a matrix of shape (q, {size}) (or have .matrix() giving one), "
                         f"got shape {W.shape}")
    if not np.isfinite(W).all():
        raise ValueError(f"{name} must hold finite numbers")
    return W


def workload_gram(workload, size: int, name: str = "workload") -> np.ndarray:
    if hasattr(workload, "gram") and callable(workload.gram):
        G = np.asarray(workload.gram(), dtype=np.float64)
        if G.shape != (size, size):
            raise ValueError(f"{name}.gram() must have shape ({size}, {size}), got {G.shape}")
        return G
    W = _workload_matrix(workload, size, name)
    return W.T @ W


class Gram:
    """A workload known by its Gram matrix only."""

    def __init__(self, G: np.ndarray) -> None:
        self._G = G

    def gram(self) -> np.ndarray:
        return self._G


def plain_policy(policy):
    policy = require_policy(policy)
    if getattr(policy, "constraints", ()):
        raise ValueError("policy: public count constraints are not supported here (the sensitivity of a strategy "
                         "under constraints needs the policy graph of 000 Sec 8)")
    if getattr(policy, "neighbours", "blowfish") != "blowfish":
        raise ValueError(f"policy: only Blowfish neighbours are supported, got {policy.neighbours!r}")
    return policy


# ---------------------------------------------------------------------------
# sensitivity


def _diff_max(A: np.ndarray, U: np.ndarray, V: np.ndarray) -> float:
    """max over k of ||A[:, U[k]] - A[:, V[k]]||_1, in chunks."""
    best = 0.0
    step = max(1, _CHUNK_ENTRIES // A.shape[0])
    k = U.shape[0]
    if k and V.shape[0] == k and int(U[-1]) - int(U[0]) == k - 1 and bool(np.all(np.diff(U) == 1)) \
            and bool(np.all(V - U == int(V[0]) - int(U[0]))):
        # one translation of a run of columns (a 1-D offset): column slices, no gathered copies
        u0, v0 = int(U[0]), int(V[0])
        for s in range(0, k, step):
            e = min(k, s + step)
            best = max(best, float(np.abs(A[:, u0 + s:u0 + e] - A[:, v0 + s:v0 + e]).sum(axis=0).max()))
        return best
    for s in range(0, k, step):
        d = np.abs(A[:, U[s:s + step]] - A[:, V[s:s + step]]).sum(axis=0)
        if d.size:
            best = max(best, float(d.max()))
    return best


def _column_bound(A: np.ndarray) -> float:
    return 2.0 * float(np.abs(A).sum(axis=0).max())


def _split_singletons(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B, s): the rows of A with two or more non-zeros, and per column the L1 mass of the one-non-zero rows.

    For u != v, ||A (e_u - e_v)||_1 = s_u + s_v + ||B (e_u - e_v)||_1: a row with a single
    non-zero (at column c) contributes |A[r, c]| exactly to the pairs that involve c.
    """
    nz = (A != 0).sum(axis=1)
    single = nz == 1
    s = np.abs(A[single]).sum(axis=0)
    return A[~single], s


def _all_pairs_max(B: np.ndarray, s: np.ndarray) -> float:
    """max over u != v of s_u + s_v + ||B[:, u] - B[:, v]||_1, in chunks."""
    m, N = B.shape
    best = 0.0
    rows = max(1, _CHUNK_ENTRIES // max(1, m * N))
    Bt = np.ascontiguousarray(B.T)  # (N, m)
    for start in range(0, N, rows):
        stop = min(N, start + rows)
        d = s[start:stop, None] + s[None, :]
        if m:
            d = d + np.abs(Bt[start:stop, None, :] - Bt[None, :, :]).sum(axis=2)
        d[np.arange(stop - start), np.arange(start, stop)] = -np.inf  # u == v is no edge
        best = max(best, float(d.max()))
    return best


def threshold_offsets(graph, domain) -> list[tuple[int, np.ndarray, np.ndarray]] | None:
    """Edges of a translation-invariant graph as (flat offset, sources, targets), or None when too many offsets."""
    shape = [int(n) for n in domain.shape]
    widths = [int(getattr(a, "bin_width", 1)) for a in domain.attributes]
    theta = Fraction(graph.theta)
    caps = [min(int(theta // w), n - 1) for w, n in zip(widths, shape)]
    if math.prod(2 * c + 1 for c in caps) > 2 * _OFFSET_LIMIT:
        return None
    deltas = [d for d in itertools.product(*[range(-c, c + 1) for c in caps])
              if any(d) and next(x for x in d if x != 0) > 0]
    if not deltas:
        return []
    D = np.array(deltas, dtype=np.int64)
    base = np.maximum(-D, 0)
    strides = np.array(domain.strides, dtype=np.int64)
    i = base @ strides
    j = (base + D) @ strides
    mask = graph.edge_mask(domain, i, j)  # the graph decides which offsets are edges
    out = []
    for d in D[mask]:
        axes = [np.arange(max(0, -int(x)), n - max(0, int(x)), dtype=np.int64) for x, n in zip(d, shape)]
        grids = np.meshgrid(*axes, indexing="ij")
        U = sum(g.reshape(-1) * s for g, s in zip(grids, domain.strides))
        U = np.asarray(U, dtype=np.int64)
        off = int(d @ strides)
        out.append((off, U, U + off))
    return out


def strategy_sensitivity(A, policy) -> tuple[Any, str]:
    """The policy sensitivity ``max over edges (u, v) of ||A (e_u - e_v)||_1`` of a linear strategy.

    Parameters
    ----------
    A : array_like, shape (m, N)
        The strategy on the flattened histogram of ``policy.domain``
        (``N = policy.domain.size``, flat indices in the domain's order).
    policy : Policy
        Without public constraints.

    Returns
    -------
    value : int or float
        An int when ``A`` has integer entries (exact), else a float.
    how : str
        Starts with ``"exact"`` when ``value`` is the maximum itself, with
        ``"upper bound"`` when it is the safe bound ``2 max_u ||A e_u||_1``
        (never below the truth: ``||a_u - a_v||_1 <= ||a_u||_1 + ||a_v||_1``).

    Raises
    ------
    ValueError, TypeError
        A matrix of the wrong shape or type, a policy with constraints.

    Privacy
    -------
    None by itself (nothing is released).  Laplace noise of scale
    ``value / epsilon`` on ``A x`` is (epsilon, P)-Blowfish private (000
    Thm 5.1): neighbours differ by one individual's move along one edge.

    Sensitivity
    -----------
    Exact by an edge scan: for :class:`DistanceThreshold` graphs (``Line``,
    the 2-D grid) over the translation offsets the graph's
    :meth:`~blowfish_privacy.policy.secrets.SecretGraph.edge_mask` accepts; for
    :class:`Custom` graphs and any graph on at most 4096 values over
    :meth:`~blowfish_privacy.policy.secrets.SecretGraph.iter_edges`; for
    ``FullDomain`` over every pair when ``N * N * m' <= PAIR_SCAN_LIMIT``
    (``m'`` the rows with two or more non-zeros; a row with one non-zero
    adds its entry to every pair through that column, in closed form).
    Otherwise the safe upper bound, said so in ``how``.

    Runtime
    -------
    O(m * |E|) for a scan (O(m N^2) for all pairs); O(m N) for the bound.

    References
    ----------
    .. [1] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    .. [2] McKenna, Miklau, Hay, Machanavajjhala. *Optimizing error of high-dimensional statistical queries
       under differential privacy.* PVLDB 11(10), 2018, Sec 3 (the column-norm sensitivity of a strategy).
    """
    policy = plain_policy(policy)
    arr = as_strategy(A)
    domain, graph = policy.domain, policy.secrets
    N = int(domain.size)
    if arr.shape[1] != N:
        raise ValueError(f"A must have N = policy.domain.size = {N} columns, got shape {arr.shape}")
    integral = arr.dtype.kind in "iu" or bool(np.all(arr == np.round(arr)))
    if integral and float(np.abs(arr).sum(axis=0).max()) >= 2.0**52:
        raise ValueError("A: integer column norms must stay below 2**52 for an exact scan")
    F = arr.astype(np.float64)

    def done(value: float, how: str):
        return (int(round(value)) if integral else float(value)), how

    if not graph.has_edge(domain):
        return done(0.0, "exact: the secret graph has no edge on this domain")
    m = F.shape[0]
    if isinstance(graph, FullDomain):
        B, s = _split_singletons(F)
        work = N * N * max(1, B.shape[0])
        if work <= PAIR_SCAN_LIMIT:
            return done(_all_pairs_max(B, s), f"exact: scan of all {N * (N - 1) // 2} pairs (complete graph; "
                        f"{m - B.shape[0]} rows with one non-zero added in closed form)")
        return done(_column_bound(F), f"upper bound 2 max_u ||A e_u||_1 (complete graph: N*N*m' = {work} for "
                    f"the m' = {B.shape[0]} rows with two or more non-zeros, above the pair-scan limit "
                    f"{PAIR_SCAN_LIMIT})")
    if isinstance(graph, DistanceThreshold):
        offsets = threshold_offsets(graph, domain)
        if offsets is not None:
            best = max((_diff_max(F, U, V) for _, U, V in offsets), default=0.0)
            edges = sum(U.shape[0] for _, U, _ in offsets)
            return done(best, f"exact: scan of {edges} edges over {len(offsets)} translation offsets")
    if isinstance(graph, Custom) or N <= LISTED_EDGE_DOMAIN:
        U, V = graph.iter_edges(domain, limit=max(N, 1))
        return done(_diff_max(F, U, V), f"exact: scan of {U.shape[0]} listed edges")
    return done(_column_bound(F), f"upper bound 2 max_u ||A e_u||_1 (the edges of {graph!r} on {N} values are "
                "not scanned)")


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


def strategy_error(A, workload, *, total: str = "none") -> float:
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


def plan_strategy(A, policy, epsilon, *, workload=None, total: str = "public", resolution: int | None = None
                  ) -> Plan:
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
    :func:`strategy_sensitivity` of the integer strategy: exact by an edge
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
    cal = calibrate(sens, eps)
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
            histogram=est.reshape(shp), mechanism=plan.mechanism, epsilon=float(plan.epsilon_exact),
            epsilon_exact=plan.epsilon_exact, epsilon_parts={"answers": plan.epsilon_exact},
            guarantee=repr(policy.secrets), secure=gen.is_secure,
            expected_squared_error=expected["cells_total_squared_error"],
            params={"answers": answers, "scale": scale, "resolution": K, "total": total}, plan=plan)

    return Plan(
        mechanism="strategy", policy=policy,
        guarantee=f"(epsilon, P)-Blowfish privacy for P = {policy!r} (000 Thm 5.1; least squares is "
                  "post-processing)",
        citation=CITATION, epsilon_requested=eps, parts=(part,),
        aggregate=f"int64 histogram of shape {shp}", aggregate_shape=shp,
        expected_error=expected, memory_bytes=memory,
        runtime="O(m N) for the answers, m exact discrete Laplace draws, O(m N) for the least squares",
        options={"strategy_shape": (m, N), "resolution": K, "total": total, "strategy": Aq},
        check=shape_check(shp), run=run)
