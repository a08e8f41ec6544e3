"""Lower bounds on the error of every data-independent linear mechanism under a policy.

A data-independent linear mechanism answers a strategy ``A`` (``m`` queries
on the flattened histogram ``x`` of ``N`` cells) with i.i.d. Laplace noise of
scale ``s = Delta_G(A) / epsilon``, ``Delta_G(A) = max over edges (u, v) of G
of ||A (e_u - e_v)||_1`` (000 Def 5.1, Thm 5.1), and estimates the workload
``W`` (``q x N``) linearly (see Corrections to the papers,
docs/explanation/corrections.md).  This module bounds its
expected total squared error over the workload from below, for *every* ``A``,
so a reader knows how far any such mechanism (identity, prefix sums,
hierarchical, HDMM's optimised templates) can be from the best one.

The bound
---------
Let ``E`` be a non-empty set of edges of the secret graph ``G`` and ``D_E``
the ``N x |E|`` matrix whose columns are ``d_e = e_u - e_v``.  Then for every
strategy ``A`` and every linear reconstruction that is unbiased on every
histogram with the (public) number of records ``n`` -- least squares with
or without the public total --

    E ||W_hat - W x||_2^2  >=  (2 / epsilon^2) * (sum_i sigma_i(W D_E))^2 / |E|,

with ``sigma_i`` the singular values.  Proof, generalising the SVD bound of
Li and Miklau ("Optimal error of query sets under the differentially
private matrix mechanism", ICDT 2013, Sec 4, Thm 2; also Li, Miklau, Hay,
McGregor, Rastogi, "The matrix mechanism", VLDB Journal 24(6), 2015): with
``U`` an orthonormal basis of ``1^perp`` (the directions that keep ``n``), an
unbiased linear estimator ``L y + c(n)`` needs ``L A U = W U``; its error is
``2 s^2 ||L||_F^2 >= 2 s^2 tr(G' B'^+)`` (``G' = U^T W^T W U``, ``B' = U^T A^T A
U``; the minimum-norm ``L``).  The noise scale satisfies ``Delta_G(A)^2 >=
max_e ||A d_e||_2^2 >= (1/|E|) sum_e ||A d_e||_2^2 = tr(B' L') / |E|``
(L1 >= L2 norm; max >= mean; ``L' = U^T D_E D_E^T U``).  Hoelder for
Schatten norms gives ``||G'^{1/2} L'^{1/2}||_* <= ||G'^{1/2} B'^{+1/2}||_F
||B'^{1/2} L'^{1/2}||_F``, i.e. ``tr(G' B'^+) tr(B' L') >= ||W D_E||_*^2``.

- A spanning tree ``T`` of ``G`` rooted anywhere is the case of the
  transformational equivalence of Haney, Machanavajjhala, Ding (VLDB 2015;
  001 Sec 3): ``x`` is determined by ``n`` and the ``N - 1`` subtree counts
  ``x_T[v]``, a move along a tree edge changes exactly one of them by 1, and
  ``W x = W_T x_T + n W e_root`` with ``W_T[:, v] = W[:, v] - W[:, parent(v)]
  = W D_T``.  The bound is the SVD bound of ``W_T`` with ``N - 1`` columns.
  It does not depend on the root (``W_T W_T^T = W L_T W^T``, ``L_T`` the
  tree's Laplacian).
- Any ``E`` contained in ``G`` is valid (``Delta_G(A) >= Delta_E(A)``): the
  candidates are spanning trees (a path in flat order, a boustrophedon
  "snake" path and two combs on a 2-D domain, stars at a corner and at the
  centre), the set of all axis-neighbour edges ("grid"), for ``FullDomain``
  all ``N (N - 1) / 2`` pairs ("complete graph", for which ``W D_E D_E^T
  W^T = N W W^T - (W 1)(W 1)^T``), for other graphs all their edges and, for
  distance thresholds, the edges of the two longest offsets (on a line
  with ``theta >= 2`` these beat the path by a factor that grows with
  ``theta``: a long edge moves more of the workload); every edge of a candidate is
  checked with the graph's :meth:`~blowfish_privacy.policy.secrets.SecretGraph.edge_mask`
  first, and the largest bound is reported with the candidate that gave it.
- Add/remove differential privacy (neighbours ``x +- e_u``, no public
  ``n``, ``Delta(A)`` the largest column L1 norm; HDMM-style baselines):
  ``(2 / epsilon^2) (sum_i sigma_i(W))^2 / N``, Li and Miklau's SVD bound
  with ``N`` the number of columns of ``W`` (any rank; the strategy must
  support ``W``, else no unbiased estimate exists and the error is
  unbounded).

Assumptions: continuous Laplace noise (variance ``2 s^2``; the library's
exact discrete Laplace of the same scale has a slightly smaller variance,
``2 s^2 - 1/6 + O(1/s^2)``, so the discrete mechanism can fall below this
bound by a relative ``1 / (12 s^2)``, which matters only for scales near 1
or below); i.i.d. noise of one scale on every strategy answer (the
matrix mechanism; a weighted strategy row is the same as a scaled row);
an estimator that is linear and unbiased; no public constraints beyond
``n``.  Data-dependent mechanisms (DAWA, MWEM, ...) are not covered.
The bound goes through L2 column norms (``||.||_1 >= ||.||_2``), so it can be
loose for Laplace noise by the L1/L2 gap of the best strategy; it is tight
where a best strategy changes one answer per edge move (``A d_e`` with a
single non-zero, of one size for every edge): prefix sums
under the line (the ordered mechanism, 000 Sec 7.1) meet it exactly for the
prefix workload, and within 0.1 % for all ranges of 1024 cells.

Computation: ``(sum sigma)^2`` from the eigenvalues of the smaller of
``M M^T`` and ``M^T M`` (``M = W D_E``), lowered by ``8 k eps_64
lambda_max`` (``k`` the side) before the square root so round-off cannot
raise the bound.  ``M`` is built as a scipy.sparse matrix from the end points
of :class:`~blowfish_privacy.workloads.Ranges` (edges of any span) and
:class:`~blowfish_privacy.workloads.Rectangles` (when every edge joins two
axis neighbours; an entry is non-zero only where the edge crosses the
range's or rectangle's boundary: ``O(q (h + w))`` entries, never a dense
``(q, N)`` matrix); stars and the complete graph use the closed-form
``W W^T`` (overlap lengths and areas); otherwise the workload's Gram matrix
``G = W^T W`` (``D_E^T G D_E`` by indexing, or ``C^T L_E C`` with ``G = C
C^T`` when ``|E| > N``) or its dense matrix, when they fit.  A Kronecker
workload under a policy goes through its dense Gram matrix (the transformed
workload of a tree is no Kronecker product) and is refused above
``EIG_LIMIT`` cells; under add/remove DP its nuclear norm is the product of
its factors'.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ..._optional import require_scipy
from ..._validation import check_epsilon, memory_limit
from ...errors import ParameterError
from ..._workload_base import DENSE_LIMIT, Workload, WorkloadTooLargeError
from ...workloads import Explicit, Kronecker
from ._bound_edge_sets import EdgeSet, edge_sets
from ._bound_transformed import indicator, row_gram, sparse_ok, structured, transformed_workload
from ._p_identity import one_blas_thread
from ._strategy_inputs import plain_policy
from ..._typing import Real

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...policy._policy import Policy

__all__ = [
    "EIG_LIMIT",
    "dp_lower_bound",
    "linear_lower_bound",
    "svd_bound",
]

#: Largest side of a symmetric matrix whose eigenvalues are computed (8192: about 30 s, 0.5 GiB).
EIG_LIMIT = 8192
#: Largest dense (q, N) workload matrix built on the dense route.
_DENSE_MATRIX_LIMIT = 2**25

_HOW = ("lower bound on the expected total squared error of every data-independent linear mechanism (i.i.d. "
        "continuous Laplace noise at the strategy's exact policy sensitivity, linear unbiased reconstruction "
        "with or without the public total): 2/eps^2 (sum of singular values of W D_E)^2 / |E| for edges E of the "
        "secret graph, the SVD bound of Li and Miklau (ICDT 2013, Thm 2) applied to the transformed workload "
        "of Haney et al. (VLDB 2015)")
_HOW_DP = ("lower bound on the expected total squared error of every data-independent linear mechanism under "
           "add/remove differential privacy (i.i.d. continuous Laplace noise at the largest column L1 norm, "
           "linear unbiased reconstruction): 2/eps^2 (sum of singular values of W)^2 / N, the SVD bound of Li "
           "and Miklau (ICDT 2013, Thm 2)")


# ---------------------------------------------------------------------------
# the SVD bound


def _sum_sqrt_eigs(K: np.ndarray) -> float:
    """sum_i sqrt(lambda_i(K)) for a symmetric PSD K, each eigenvalue lowered by the eigensolver's error first."""
    if K.size == 0:
        return 0.0
    with one_blas_thread():  # on a shared machine one BLAS thread is several times faster than contending ones
        lam = np.linalg.eigvalsh(K)
    top = max(float(lam[-1]), 0.0)
    tol = 8.0 * K.shape[0] * np.finfo(np.float64).eps * top
    return float(np.sqrt(np.clip(lam - tol, 0.0, None)).sum())


def _smaller_gram(M) -> np.ndarray:
    """The smaller of M M^T and M^T M, dense float64 (M dense or scipy.sparse)."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    q, c = M.shape
    if sp.issparse(M):
        M = M.tocsr()
        K = (M @ M.T) if q <= c else (M.T @ M)
        return np.asarray(K.toarray(), dtype=np.float64)
    M = np.asarray(M, dtype=np.float64)
    return M @ M.T if q <= c else M.T @ M


def svd_bound(M, *, columns: int | None = None, gram: bool = False) -> float:
    """``(sum of singular values)^2 / columns``: the epsilon-free SVD bound of a (transformed) workload.

    Parameters
    ----------
    M : array_like or scipy.sparse matrix
        The matrix (``W``, or ``W_T = W D_E``), shape ``(q, c)``; or, with
        ``gram=True``, a symmetric positive semi-definite Gram matrix of it
        (``M M^T`` or ``M^T M``, whichever is smaller).
    columns : int, optional
        The divisor: the number of columns ``c`` of the matrix (``N`` for
        add/remove DP, ``N - 1`` for a spanning tree, ``|E|`` for an edge
        set).  Default ``c``; required with ``gram=True``.
    gram : bool
        Whether ``M`` is a Gram matrix.

    Returns
    -------
    float
        ``(sum_i sigma_i)^2 / columns``; times ``2 / epsilon^2`` it bounds
        the expected total squared error (module docstring).

    Raises
    ------
    ValueError, TypeError
        A matrix that is not 2-D (or not square with ``gram=True``), non
        finite entries, a missing or non-positive ``columns``.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(k^3) for the eigenvalues of the ``k x k`` Gram matrix, ``k = min(q,
    c)`` (refused above :data:`EIG_LIMIT`), plus forming it.

    References
    ----------
    .. [1] Li, Miklau. *Optimal error of query sets under the differentially-private matrix mechanism.*
       ICDT 2013, Sec 4 (the SVD bound).
    """
    require_scipy("svd_bound")
    import scipy.sparse as sp  # optional dependency (the test extra)
    if sp.issparse(M):
        shape = M.shape
        data = M.data
    else:
        M = np.asarray(M)
        if M.dtype.kind not in "iuf" or M.dtype == bool:
            raise TypeError(f"M must hold real numbers, got dtype {M.dtype}")
        shape, data = M.shape, M
    if len(shape) != 2:
        raise ValueError(f"M must be a 2-D matrix, got shape {shape}")
    if not np.isfinite(data).all():
        raise ValueError("M must hold finite numbers")
    if gram:
        if shape[0] != shape[1]:
            raise ValueError(f"M must be a square Gram matrix with gram=True, got shape {shape}")
        if columns is None:
            raise ValueError("columns is required with gram=True (the number of columns of the workload)")
    c = shape[1] if columns is None else columns
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 1:
        raise ValueError(f"columns must be an integer >= 1, got {columns!r}")
    side = shape[0] if gram else min(shape)
    if side > EIG_LIMIT:
        raise ValueError(f"M: the Gram matrix would be {side} x {side}, above EIG_LIMIT = {EIG_LIMIT}")
    if gram:
        K = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
        K = (K + K.T) / 2.0
    else:
        K = _smaller_gram(M)
    s = _sum_sqrt_eigs(K)
    return s * s / int(c)


def _gram_fits(N: int) -> bool:
    return N <= EIG_LIMIT and N * N <= DENSE_LIMIT


class _Source:
    """The workload and the forms of it computed so far (shared by the candidates)."""

    def __init__(self, workload: Workload) -> None:
        self.w = workload
        self.N = int(workload.size)
        self.q = int(workload.n_queries)
        self.kind = structured(workload)
        self._G = None
        self._W = None
        self._rowgram = None

    def G(self) -> np.ndarray:
        if self._G is None:
            self._G = np.asarray(self.w.gram(), dtype=np.float64)
        return self._G

    def W(self) -> np.ndarray:
        if self._W is None:
            self._W = np.asarray(self.w.matrix(), dtype=np.float64)
        return self._W

    def rowgram(self):
        if self._rowgram is None:
            self._rowgram = row_gram(self.w)
        return self._rowgram

    def dense_ok(self) -> bool:
        return isinstance(self.w, Explicit) or self.q * self.N <= _DENSE_MATRIX_LIMIT


def _edge_gram(G: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """D_E^T G D_E by indexing (|E| x |E|)."""
    K = G[np.ix_(u, u)]
    K -= G[np.ix_(u, v)]
    K -= G[np.ix_(v, u)]
    K += G[np.ix_(v, v)]
    return K  # symmetric in exact arithmetic; eigvalsh reads one triangle


def _candidate_value(src: _Source, es: EdgeSet) -> tuple[float, str]:
    """(||W D_E||_*^2 / |E|, route) or raise _Skip."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    N, q, m = src.N, src.q, es.size
    if m == 0:
        return 0.0, "no edges"
    shape = tuple(src.w.shape)
    # 1. the q x q side: sparse W D_E (local edges), closed forms (stars, the complete graph), a dense W
    if q <= EIG_LIMIT and q <= m:
        if es.kind not in ("star", "complete") and sparse_ok(src.kind, shape, es.u, es.v):
            M = transformed_workload(src.w, (es.u, es.v))
            return _finish(_sum_sqrt_eigs(_smaller_gram(M)), m), f"sparse W D_E ({M.nnz} non-zeros), {q} x {q}"
        if src.kind is not None and es.kind in ("star", "complete"):
            K, a = src.rowgram()
            if es.kind == "complete":
                K = N * K - np.outer(a, a)
            else:
                w = indicator(src.w, es.centre)
                K = K + N * np.outer(w, w) - np.outer(a, w) - np.outer(w, a)
            return _finish(_sum_sqrt_eigs(K), m), f"closed-form W L_E W^T, {q} x {q}"
        if src.dense_ok():
            W = src.W()
            if es.kind == "complete":
                a = W.sum(axis=1)
                K = N * (W @ W.T) - np.outer(a, a)
            else:
                M = W[:, es.u] - W[:, es.v]
                K = M @ M.T
            return _finish(_sum_sqrt_eigs(K), m), f"dense W L_E W^T, {q} x {q}"
    # 2. the N side: the workload's Gram matrix (G, a k x k result and one temporary, k = min(|E|, N))
    k = N if es.kind == "complete" or m > N else m
    if _gram_fits(N) and k <= EIG_LIMIT and 8 * (3 * N * N + 2 * k * k) <= memory_limit():
        try:
            G = src.G()
        except WorkloadTooLargeError:
            G = None
        if G is not None:
            if es.kind == "complete":
                r = G.sum(axis=1) / N
                K = G * float(N)  # N P G P = N (G - r 1^T - 1 r^T + mean(r)), r = G 1 / N
                K -= N * r[:, None]
                K -= N * r[None, :]
                K += N * r.mean()
                return _finish(_sum_sqrt_eigs(K), m), f"Gram N P G P, {N} x {N}"
            if m > N:  # more edges than cells: C^T L_E C with G = C C^T has the non-zero eigenvalues of W L_E W^T
                try:
                    C = np.linalg.cholesky(G)
                except np.linalg.LinAlgError:
                    C = None
                if C is not None:
                    ones = np.ones(m)
                    D = sp.csr_matrix((np.concatenate([ones, -ones]),
                                       (np.concatenate([es.u, es.v]), np.concatenate([np.arange(m)] * 2))),
                                      shape=(N, m))
                    K = C.T @ np.asarray((D @ (D.T @ C)))
                    return _finish(_sum_sqrt_eigs(K), m), f"Gram C^T L_E C (G = C C^T), {N} x {N}"
            if m <= EIG_LIMIT and 8 * (N * N + 2 * m * m) <= memory_limit():
                return _finish(_sum_sqrt_eigs(_edge_gram(G, es.u, es.v)), m), f"Gram D_E^T G D_E, {m} x {m}"
    # 3. the |E| side from a sparse W D_E
    if es.kind not in ("star", "complete") and m <= EIG_LIMIT and sparse_ok(src.kind, shape, es.u, es.v):
        M = transformed_workload(src.w, (es.u, es.v))
        return _finish(_sum_sqrt_eigs(_smaller_gram(M)), m), f"sparse W D_E ({M.nnz} non-zeros), {m} x {m}"
    raise _Skip(f"no route fits: q = {q}, N = {N}, |E| = {m} (eigenvalues up to EIG_LIMIT = {EIG_LIMIT}; "
                f"dense Gram up to {DENSE_LIMIT} entries; sparse only for ranges/rectangles with axis-neighbour "
                "edges)")


def _finish(s: float, m: int) -> float:
    return s * s / m


class _Skip(Exception):
    pass


# ---------------------------------------------------------------------------
# public entry points


def _as_workload(workload, shape: tuple[int, ...], name: str = "workload") -> Workload:
    if isinstance(workload, Workload):
        same = tuple(workload.shape) == tuple(shape)
        if not same and not (isinstance(workload, Explicit) and workload.size == math.prod(shape)):
            raise ParameterError(name, f"{name} has shape {tuple(workload.shape)}, the policy's domain has shape "
                                       f"{tuple(shape)}")
        return workload
    try:
        W = np.asarray(workload)
    except (TypeError, ValueError):
        W = None
    if W is None or W.ndim != 2 or W.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a Workload (e.g. workloads.AllRanges(n)) or a 2-D numeric (q, N) array, "
                        f"got {type(workload).__name__}")
    if W.shape[1] != math.prod(shape):
        raise ParameterError(name, f"{name} must have N = {math.prod(shape)} columns, got shape {W.shape}")
    return Explicit(W, shape=shape)


def linear_lower_bound(workload: Workload | npt.ArrayLike, policy: Policy, epsilon: Real = 1.0, *,
                       trees: Sequence[Any] | None = None) -> dict[str, Any]:
    """Lower bound on the expected total squared error of every data-independent linear mechanism under a policy.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
        The queries, on the policy's domain (row-major flat cells).
    policy : Policy
        Without public constraints; Blowfish neighbours.
    epsilon : float or Fraction, > 0
    trees : sequence, optional
        The edge sets to try (see :func:`._bound_edge_sets.spanning_trees` for the tree names
        and ``(name, parent)`` pairs), plus ``"grid"`` (all axis-neighbour
        edges), ``"complete"`` (all pairs, FullDomain only) and ``"graph"``
        (all edges of the secret graph: the complete graph under FullDomain,
        else when they can be listed).  Default: the named trees that are
        subgraphs of the secret graph, the grid edges on a domain with two
        or more axes, the complete graph under FullDomain, all edges of
        other graphs and, for distance thresholds, the edges of the two
        longest offsets.

    Returns
    -------
    dict
        ``value`` (float): the bound on the expected total squared error
        over the workload at ``epsilon`` with Laplace noise, ``2 / epsilon^2
        * per_unit``; ``per_unit`` (float): ``(sum sigma(W D_E))^2 / |E|``
        for the best edge set (``(sum sigma(W_T))^2 / (N - 1)`` for a
        spanning tree), epsilon-free; ``tree`` (str): that edge set;
        ``how`` (str): the statement and its assumptions; ``seconds``
        (float); ``candidates`` (dict: description -> per_unit, or the
        reason it was skipped); ``route`` (str): how the winner was
        computed.

    Raises
    ------
    ParameterError, TypeError
        A policy with constraints, a workload of another shape, unknown or
        invalid trees, epsilon not positive, or no edge set computable
        within the limits (e.g. a Kronecker workload on a domain above
        ``EIG_LIMIT`` cells: its transformed workload is no Kronecker
        product).

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used: the statement holds for the exact policy sensitivity of every
    strategy (it uses ``Delta_G(A) >= Delta_E(A)`` for ``E`` within ``G``;
    each candidate's edges are checked with ``edge_mask``).

    Runtime
    -------
    Per candidate: O(k^3) for the eigenvalues of a ``k x k`` matrix, ``k =
    min(q, |E|)`` (sparse ``W D_E`` for ranges and rectangles), or ``k = N``
    from the Gram matrix; 4096 cells: a few seconds per candidate.

    References
    ----------
    .. [1] Li, Miklau. *Optimal error of query sets under the differentially-private matrix mechanism.*
       ICDT 2013, Sec 4, Thm 2 (the SVD bound).
    .. [2] Li, Miklau, Hay, McGregor, Rastogi. *The matrix mechanism: optimizing linear counting queries under
       differential privacy.* VLDB Journal 24(6), 2015.
    .. [3] Haney, Machanavajjhala, Ding. *Design of policy-aware differentially private algorithms.* PVLDB 9(4),
       2015, Sec 3 (transformational equivalence; 001 Sec 3).
    .. [4] He, Machanavajjhala, Ding. *Blowfish Privacy.* SIGMOD 2014 (000), Def 5.1, Thm 5.1.
    """
    require_scipy("linear_lower_bound")
    t0 = time.perf_counter()
    if getattr(policy, "constraints", ()):
        raise ParameterError("policy", f"policy: {len(policy.constraints)} public count constraint(s) given; this "
                                       "bound assumes that only the number of records n is public (with public "
                                       "counts the neighbours of Definition 4.1 of the Blowfish paper change and an "
                                       "estimator may use the "
                                       "counts), so it is not proven for them: pass a policy without constraints")
    policy = plain_policy(policy)
    eps = float(check_epsilon(epsilon))
    if trees is not None and (isinstance(trees, (str, bytes)) or not hasattr(trees, "__iter__")):
        raise ParameterError("trees", f"trees must be a sequence of tree names or (name, parent) pairs, got "
                                      f"{trees!r}")
    shape = tuple(int(s) for s in policy.domain.shape)
    W = _as_workload(workload, shape)
    if not policy.secrets.has_edge(policy.domain):
        return {"value": 0.0, "per_unit": 0.0, "tree": "none (the secret graph has no edge: no noise is needed)",
                "how": _HOW, "seconds": time.perf_counter() - t0, "candidates": {}, "route": "none"}
    sets = edge_sets(policy, trees)
    if not sets:
        raise ParameterError("policy", f"policy: no spanning tree of {policy.secrets!r} on {policy.domain.size} "
                                       "cells was found among the named ones (path, snake, combs, stars; 'bfs' "
                                       "lists edges only up to 4096 cells); pass trees=[(name, parent), ...]")
    if isinstance(W, Kronecker) and not _gram_fits(W.size):
        raise ParameterError("workload", f"workload: {W!r} on {W.size} cells under {policy.secrets!r}: the "
                                         "transformed workload W D_E of a spanning tree is not a Kronecker product, "
                                         f"and its dense Gram route needs N <= {EIG_LIMIT} cells "
                                         f"(dp_lower_bound handles Kronecker workloads under add/remove DP)")
    src = _Source(W)
    best, cands = None, {}
    for es in sets:
        try:
            val, route = _candidate_value(src, es)
        except _Skip as why:
            cands[es.name] = f"skipped: {why}"
            continue
        cands[es.name] = val
        if best is None or val > best[0]:
            best = (val, es.name, route)
    if best is None:
        raise ParameterError("workload", f"workload: {W!r} (q = {src.q}, N = {src.N}) under {policy.secrets!r}: "
                                         "no candidate edge set could be computed within the limits: "
                                         + "; ".join(f"{k}: {v}" for k, v in cands.items()))
    per_unit, name, route = best
    return {"value": 2.0 * per_unit / (eps * eps), "per_unit": per_unit, "tree": name, "how": _HOW,
            "seconds": time.perf_counter() - t0, "candidates": cands, "route": route}


def _nuclear(workload: Workload) -> tuple[float, str]:
    """(sum of singular values of W, route), without a dense (q, N) matrix where a structure allows."""
    if isinstance(workload, Kronecker):
        total, routes = 1.0, []
        for f in workload.factors():
            s, r = _nuclear(f)
            total *= s
            routes.append(r)
        return total, "Kronecker: product of the factors' (" + "; ".join(routes) + ")"
    q, N = int(workload.n_queries), int(workload.size)
    kind = structured(workload)
    if q <= min(N, EIG_LIMIT) and kind is not None:
        return _sum_sqrt_eigs(row_gram(workload)[0]), f"closed-form W W^T, {q} x {q}"
    if q <= min(N, EIG_LIMIT) and (isinstance(workload, Explicit) or q * N <= _DENSE_MATRIX_LIMIT):
        W = np.asarray(workload.matrix(), dtype=np.float64)
        return _sum_sqrt_eigs(W @ W.T), f"dense W W^T, {q} x {q}"
    if _gram_fits(N):
        return _sum_sqrt_eigs(np.asarray(workload.gram(), dtype=np.float64)), f"Gram W^T W, {N} x {N}"
    if q <= EIG_LIMIT and kind is not None:
        return _sum_sqrt_eigs(row_gram(workload)[0]), f"closed-form W W^T, {q} x {q}"
    raise ParameterError("workload", f"workload: {workload!r} (q = {q}, N = {N}): neither W W^T nor W^T W fits "
                                     f"(EIG_LIMIT = {EIG_LIMIT}); use a Kronecker workload or fewer queries")


def dp_lower_bound(workload: Workload | npt.ArrayLike, epsilon: Real = 1.0) -> dict[str, Any]:
    """Lower bound on the expected total squared error of every data-independent linear mechanism under add/remove DP.

    Li and Miklau's SVD bound: ``2 / epsilon^2 (sum_i sigma_i(W))^2 / N``
    (``N`` the number of cells; any rank).  For the HDMM-style DP
    baselines; for bounded DP use :func:`linear_lower_bound` with
    ``FullDomain``.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
    epsilon : float or Fraction, > 0

    Returns
    -------
    dict
        ``value``, ``per_unit`` (``(sum sigma)^2 / N``), ``tree`` (``"none
        (add/remove DP: W itself, N columns)"``), ``how``, ``seconds``,
        ``route``.

    Raises
    ------
    ParameterError, TypeError
        Epsilon not positive; a workload neither of whose Gram matrices
        fits (not a Kronecker product, ``min(q, N) > EIG_LIMIT``).

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used (the statement covers every strategy at its largest column L1
    norm, the add/remove sensitivity).

    Runtime
    -------
    O(k^3), ``k = min(q, N)``; a Kronecker product per factor
    (``||kron(A, B)||_* = ||A||_* ||B||_*``); rectangles' ``W W^T`` from
    overlap areas in O(q^2).

    References
    ----------
    .. [1] Li, Miklau. *Optimal error of query sets under the differentially-private matrix mechanism.*
       ICDT 2013, Sec 4, Thm 2 (the SVD bound).
    .. [2] Li, Miklau, Hay, McGregor, Rastogi. *The matrix mechanism.* VLDB Journal 24(6), 2015.
    """
    require_scipy("dp_lower_bound")
    t0 = time.perf_counter()
    eps = float(check_epsilon(epsilon))
    if isinstance(workload, Workload):
        W = workload
    else:
        arr = np.asarray(workload)
        if arr.ndim != 2:
            raise TypeError(f"workload must be a Workload or a 2-D (q, N) array, got {type(workload).__name__}")
        W = _as_workload(arr, (arr.shape[1],))
    s, route = _nuclear(W)
    N = int(W.size)
    per_unit = s * s / N
    return {"value": 2.0 * per_unit / (eps * eps), "per_unit": per_unit,
            "tree": f"none (add/remove DP: W itself, {N} columns)", "how": _HOW_DP,
            "seconds": time.perf_counter() - t0, "route": route}
