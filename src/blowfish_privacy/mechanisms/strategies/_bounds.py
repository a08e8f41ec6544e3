"""Lower bounds on the error of every data-independent linear mechanism under a policy.

A data-independent linear mechanism answers a strategy ``A`` (``m`` queries
on the flattened histogram ``x`` of ``N`` cells) with i.i.d. Laplace noise of
scale ``s = Delta_G(A) / epsilon``, ``Delta_G(A) = max over edges (u, v) of G
of ||A (e_u - e_v)||_1`` (000 Def 5.1, Thm 5.1), and estimates the workload
``W`` (``q x N``) linearly (DESIGN.md sec 5b).  This module bounds its
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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import check_epsilon, memory_limit
from ...errors import ParameterError
from ...policy.secrets import DistanceThreshold, FullDomain
from ...workloads import (
    DENSE_LIMIT,
    Explicit,
    Kronecker,
    Rectangles,
    Workload,
    WorkloadTooLargeError,
)
from ._strategy import plain_policy, threshold_offsets
from ._p_identity import one_blas_thread

if TYPE_CHECKING:  # annotations only
    import scipy.sparse as sp

__all__ = [
    "EIG_LIMIT",
    "dp_lower_bound",
    "linear_lower_bound",
    "spanning_trees",
    "svd_bound",
    "transformed_workload",
]

#: Largest side of a symmetric matrix whose eigenvalues are computed (8192: about 30 s, 0.5 GiB).
EIG_LIMIT = 8192
#: Largest dense (q, N) workload matrix built on the dense route.
_DENSE_MATRIX_LIMIT = 2**25
#: Largest edge set ("all edges of the graph") tried as a candidate.
_GRAPH_EDGE_LIMIT = 2_000_000
#: ... and at most this many edges per value where the longest offsets are tried as well (all 260,064 edges of
#: the distance threshold 64 on 4096 values took 155 s and 8.6 GB, and the offset-64 edges gave the larger bound).
_GRAPH_EDGES_PER_VALUE = 16

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


# ---------------------------------------------------------------------------
# edge sets: spanning trees and others


@dataclass(frozen=True)
class _EdgeSet:
    name: str
    kind: str  # "tree", "star", "local", "complete", "edges"
    u: np.ndarray | None  # None for the complete graph
    v: np.ndarray | None
    size: int  # |E|
    centre: int = -1  # a star's centre


def _snake_order(n1: int, n2: int) -> np.ndarray:
    grid = np.arange(n1 * n2, dtype=np.int64).reshape(n1, n2)
    grid[1::2] = grid[1::2, ::-1]
    return grid.reshape(-1)


def _tree_parent(shape: tuple[int, ...], name: str) -> np.ndarray:
    """Parent array (root -1) of a named spanning tree of the domain's cells (not yet checked against G)."""
    N = math.prod(shape)
    parent = np.full(N, -1, dtype=np.int64)
    if name == "path":
        parent[1:] = np.arange(N - 1)
        return parent
    if name == "snake":
        if len(shape) != 2:
            raise ParameterError("trees", f"trees: 'snake' needs a 2-D domain, got shape {shape}")
        order = _snake_order(*shape)
        parent[order[1:]] = order[:-1]
        return parent
    if name in ("comb-rows", "comb-cols"):
        if len(shape) != 2:
            raise ParameterError("trees", f"trees: {name!r} needs a 2-D domain, got shape {shape}")
        n1, n2 = shape
        r, c = np.divmod(np.arange(N, dtype=np.int64), n2)
        if name == "comb-rows":  # spine down column 0, teeth along each row
            parent = np.where(c > 0, r * n2 + c - 1, (r - 1) * n2)
        else:  # spine along row 0, teeth down each column
            parent = np.where(r > 0, (r - 1) * n2 + c, c - 1)
        parent[0] = -1
        return parent.astype(np.int64)
    if name.startswith("star:"):
        try:
            centre = int(name[5:])
        except ValueError:
            raise ParameterError("trees", f"trees: a star is 'star:<flat cell index>', got {name!r}") from None
        if not 0 <= centre < N:
            raise ParameterError("trees", f"trees: star centre {centre} is outside the domain's 0 .. {N - 1}")
        parent[:] = centre
        parent[centre] = -1
        return parent
    raise ParameterError("trees", f"trees: unknown tree {name!r}; allowed: 'path', 'snake', 'comb-rows', "
                                  "'comb-cols', 'star:<cell>', 'bfs', 'grid', 'complete', or a parent array")


def _bfs_parent(policy) -> np.ndarray:
    """A breadth-first spanning forest of the graph's listed edges (parent -1 at each component's root)."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    from scipy.sparse.csgraph import breadth_first_order

    domain, graph = policy.domain, policy.secrets
    N = int(domain.size)
    U, V = graph.iter_edges(domain)
    adj = sp.coo_matrix((np.ones(U.size), (U, V)), shape=(N, N)).tocsr()
    parent = np.full(N, -1, dtype=np.int64)
    seen = np.zeros(N, dtype=bool)
    for s in range(N):
        if seen[s]:
            continue
        order, pred = breadth_first_order(adj, s, directed=False, return_predecessors=True)
        seen[order] = True
        kids = order[1:]
        parent[kids] = pred[kids]
    return parent


def _tree_edges(parent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    kids = np.flatnonzero(parent >= 0).astype(np.int64)
    return kids, parent[kids].astype(np.int64)


def _check_spanning(parent: np.ndarray, name: str) -> None:
    """Raise unless ``parent`` describes a forest (every cell reaches a root without a cycle)."""
    N = parent.size
    if parent.min(initial=-1) < -1 or parent.max(initial=-1) >= N or np.any(parent == np.arange(N)):
        raise ParameterError("trees", f"trees: {name}: parent entries must be -1 (a root) or another cell in "
                                      f"0 .. {N - 1}")
    anc = parent.copy()  # pointer doubling: after k rounds anc[v] is the 2^k-th ancestor (-1 beyond a root)
    for _ in range(int(math.ceil(math.log2(max(N, 2)))) + 2):
        if (anc < 0).all():
            return
        anc = np.where(anc >= 0, anc[np.maximum(anc, 0)], -1)
    raise ParameterError("trees", f"trees: {name}: the parent array has a cycle (not a tree)")


def _valid_edges(policy, u: np.ndarray, v: np.ndarray) -> bool:
    return bool(u.size == 0 or policy.secrets.edge_mask(policy.domain, u, v).all())


def _grid_edges(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """All pairs of cells that differ by 1 in exactly one axis (the axis-neighbour edges)."""
    idx = np.arange(math.prod(shape), dtype=np.int64).reshape(shape)
    us, vs = [], []
    for a in range(len(shape)):
        lo = [slice(None)] * len(shape)
        hi = [slice(None)] * len(shape)
        lo[a], hi[a] = slice(0, -1), slice(1, None)
        us.append(idx[tuple(lo)].reshape(-1))
        vs.append(idx[tuple(hi)].reshape(-1))
    return np.concatenate(us), np.concatenate(vs)


def spanning_trees(policy, names=None) -> list[tuple[str, np.ndarray]]:
    """Spanning trees of the policy's secret graph, as parent arrays (the trees :func:`linear_lower_bound` tries).

    Parameters
    ----------
    policy : Policy
        Without public constraints.
    names : sequence, optional
        Tree names: ``"path"`` (flat order), ``"snake"`` (boustrophedon,
        2-D), ``"comb-rows"`` (spine down column 0, teeth along the rows),
        ``"comb-cols"`` (spine along row 0, teeth down the columns),
        ``"star:<flat cell>"``, ``"bfs"`` (a breadth-first spanning forest
        of the graph's listed edges, domains of at most 4096 cells), or
        ``(name, parent)`` pairs with a parent array of their own.  Default:
        every named tree that fits the domain (path, snake and combs on 2-D,
        stars at cell 0 and at the centre) whose edges are all edges of the
        graph; ``"bfs"`` when none is.

    Returns
    -------
    list of (str, numpy.ndarray)
        ``(description, parent)``: ``parent[v]`` the parent cell of ``v``
        (flat index), ``-1`` at the root.

    Raises
    ------
    ParameterError
        An unknown name, a tree that is not a forest, or (for names given)
        a tree with an edge that is not an edge of the secret graph.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used; every tree edge is checked with the graph's ``edge_mask``.

    Runtime
    -------
    O(N log N) per tree (the edge check and the cycle check).

    References
    ----------
    .. [1] Haney, Machanavajjhala, Ding. *Design of policy-aware differentially private algorithms.* PVLDB 9(4),
       2015, Sec 3 (transformational equivalence; summarised in 001 Sec 3).
    """
    policy = plain_policy(policy)
    shape = tuple(int(s) for s in policy.domain.shape)
    N = math.prod(shape)
    given = names is not None
    if names is None:
        names = ["path", "star:0", f"star:{_centre(shape)}"]
        if len(shape) == 2:
            names = ["snake", "comb-rows", "comb-cols"] + names
    out = []
    for item in names:
        if isinstance(item, tuple) and len(item) == 2:
            name, parent = str(item[0]), np.asarray(item[1])
            if parent.shape != (N,) or parent.dtype.kind not in "iu":
                raise ParameterError("trees", f"trees: {name}: a parent array must be {N} integers, got "
                                              f"shape {parent.shape}, dtype {parent.dtype}")
            parent = parent.astype(np.int64)
        elif isinstance(item, str):
            name = item
            if name in ("grid", "complete", "graph"):
                continue  # edge sets, not trees
            parent = _bfs_parent(policy) if name == "bfs" else _tree_parent(shape, name)
        else:
            raise ParameterError("trees", f"trees: each entry must be a tree name or a (name, parent) pair, "
                                          f"got {item!r}")
        _check_spanning(parent, name)
        u, v = _tree_edges(parent)
        if not _valid_edges(policy, u, v):
            if given:
                raise ParameterError("trees", f"trees: {name}: some tree edge is not an edge of the secret graph "
                                              f"{policy.secrets!r} (the bound would not be valid)")
            continue
        out.append((_describe(name, shape, u.size), parent))
    if not out and not given and N <= 4096 and policy.secrets.has_edge(policy.domain):
        parent = _bfs_parent(policy)
        out.append((_describe("bfs", shape, int((parent >= 0).sum())), parent))
    return out


def _centre(shape: tuple[int, ...]) -> int:
    return int(np.ravel_multi_index(tuple(s // 2 for s in shape), shape))


def _describe(name: str, shape: tuple[int, ...], edges: int) -> str:
    if name == "path":
        return f"path in flat order ({edges} edges)" if len(shape) > 1 else f"line path ({edges} edges)"
    if name == "snake":
        return f"boustrophedon (snake) path along the rows ({edges} edges)"
    if name == "comb-rows":
        return f"comb: spine down column 0, teeth along the rows ({edges} edges)"
    if name == "comb-cols":
        return f"comb: spine along row 0, teeth down the columns ({edges} edges)"
    if name.startswith("star:"):
        c = int(name[5:])
        cell = np.unravel_index(c, shape)
        return f"star centred at cell {tuple(int(x) for x in cell)} ({edges} edges)"
    if name == "bfs":
        return f"breadth-first spanning forest of the graph ({edges} edges)"
    return f"{name} ({edges} edges)"


def _edge_sets(policy, trees) -> list[_EdgeSet]:
    """The candidate edge sets, each checked against the graph."""
    shape = tuple(int(s) for s in policy.domain.shape)
    N = math.prod(shape)
    graph = policy.secrets
    out: list[_EdgeSet] = []
    names = None if trees is None else list(trees)
    for desc, parent in spanning_trees(policy, names):
        u, v = _tree_edges(parent)
        centre = int(v[0]) if u.size and (v == v[0]).all() and u.size == N - 1 else -1
        kind = "star" if centre >= 0 and N > 2 else "tree"
        out.append(_EdgeSet(desc, kind, u, v, int(u.size), centre))
    want_grid = (names is None and sum(s > 1 for s in shape) >= 2) or (names is not None and "grid" in names)
    if want_grid:
        u, v = _grid_edges(shape)
        if _valid_edges(policy, u, v):
            out.append(_EdgeSet(f"all {u.size} axis-neighbour (grid) edges, uniform weights", "local", u, v,
                                int(u.size)))
        elif names is not None:
            raise ParameterError("trees", f"trees: 'grid': some axis-neighbour edge is not an edge of "
                                          f"{graph!r}")
    want_complete = (names is None and isinstance(graph, FullDomain)) or (
        names is not None and ("complete" in names or ("graph" in names and isinstance(graph, FullDomain))))
    if want_complete:
        if isinstance(graph, FullDomain):
            out.append(_EdgeSet(f"complete graph: all {N * (N - 1) // 2} pairs, uniform weights", "complete",
                                None, None, N * (N - 1) // 2))
        else:
            raise ParameterError("trees", f"trees: 'complete' needs the FullDomain secret graph, got {graph!r}")
    if not isinstance(graph, FullDomain) and (names is None or "graph" in names):
        out.extend(_graph_edge_sets(policy, shape, out, offsets=names is None))
    return out


def _graph_edge_sets(policy, shape: tuple[int, ...], have: list[_EdgeSet], offsets: bool) -> list[_EdgeSet]:
    """All edges of the graph (uniform weights) and, for distance thresholds, the edges of the longest offsets."""
    domain, graph = policy.domain, policy.secrets
    N = math.prod(shape)
    found: list[tuple[str, np.ndarray, np.ndarray]] = []
    parts = None
    if isinstance(graph, DistanceThreshold):
        parts = threshold_offsets(graph, domain)
    if parts is not None:
        parts = [(np.array(np.unravel_index(int(V[0]), shape)) - np.array(np.unravel_index(int(U[0]), shape)), U, V)
                 for _, U, V in parts if U.size]
        total = sum(U.size for _, U, _ in parts)
        cap = min(_GRAPH_EDGE_LIMIT, _GRAPH_EDGES_PER_VALUE * N) if offsets else _GRAPH_EDGE_LIMIT
        if len(parts) > 1 and total <= cap:
            found.append((f"all {total} edges of the graph, uniform weights",
                          np.concatenate([U for _, U, _ in parts]), np.concatenate([V for _, _, V in parts])))
        if offsets:
            longest = sorted((p for p in parts if int(np.abs(p[0]).sum()) > 1),
                             key=lambda p: -float(np.square(p[0]).sum()))[:2]
            for delta, U, V in longest:
                step = tuple(int(x) for x in delta) if len(shape) > 1 else int(delta[0])
                found.append((f"the {U.size} edges at offset {step}, uniform weights", U, V))
    elif N <= 4096:
        U, V = graph.iter_edges(domain)
        if U.size <= _GRAPH_EDGE_LIMIT:
            found.append((f"all {U.size} edges of the graph, uniform weights", U, V))
    out = []
    sizes = {e.size for e in have if e.kind in ("tree", "local")}
    for desc, U, V in found:
        if U.size == 0 or (U.size in sizes and U.size in (N - 1, _grid_size(shape))):
            continue  # the graph is a tree or the grid already listed
        if _valid_edges(policy, U, V):
            out.append(_EdgeSet(desc, "edges", U.astype(np.int64), V.astype(np.int64), int(U.size)))
    return out


def _grid_size(shape: tuple[int, ...]) -> int:
    N = math.prod(shape)
    return sum(N - N // n for n in shape)


# ---------------------------------------------------------------------------
# W D_E for the candidates


def _spans(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which, value): for each k, the values start[k] .. start[k] + length[k] - 1, flattened."""
    which = np.repeat(np.arange(start.size, dtype=np.int64), length)
    first = np.cumsum(length) - length
    value = np.repeat(start, length) + (np.arange(which.size, dtype=np.int64) - np.repeat(first, length))
    return which, value


def _sparse_ok(kind: str | None, shape: tuple[int, ...], u: np.ndarray, v: np.ndarray) -> bool:
    """Whether W D_E has the sparse form: ranges with any edges, rectangles with axis-neighbour edges."""
    return kind == "ranges" or (kind == "rects" and _is_local(shape, u, v))


def _is_local(shape: tuple[int, ...], u: np.ndarray, v: np.ndarray) -> bool:
    cu = np.unravel_index(u, shape)
    cv = np.unravel_index(v, shape)
    steps = sum(np.abs(a.astype(np.int64) - b.astype(np.int64)) for a, b in zip(cu, cv))
    return bool(np.all(steps == 1))


def _ranges_transformed(lo: np.ndarray, hi: np.ndarray, n: int, u: np.ndarray, v: np.ndarray) -> sp.csr_matrix:
    """W D_E for inclusive ranges: an edge of span d crosses [lo, hi] only within d cells of an end point."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    m = u.size
    a, b = np.minimum(u, v), np.maximum(u, v)
    span = b - a
    rows, cols, vals = [], [], []
    for d in np.unique(span):
        sel = np.flatnonzero(span == d)
        idx = np.full(n, -1, dtype=np.int64)
        idx[a[sel]] = sel
        first = np.zeros(n, dtype=bool)
        first[a[sel]] = u[sel] == a[sel]  # u is the lower cell
        # lower cell out, upper in: lower in [lo - d, min(lo - 1, hi - d)]; then in(u) - in(v) = -1 if u is lower
        lo_a = np.maximum(lo - d, 0)
        hi_a = np.minimum(lo - 1, hi - d)
        k, c = _spans(lo_a, np.maximum(hi_a - lo_a + 1, 0))
        e = idx[c]
        ok = e >= 0
        rows.append(k[ok])
        cols.append(e[ok])
        vals.append(np.where(first[c[ok]], -1.0, 1.0))
        # lower cell in, upper out: lower in [max(lo, hi - d + 1), min(hi, n - 1 - d)]
        lo_b = np.maximum(lo, hi - d + 1)
        hi_b = np.minimum(hi, n - 1 - d)
        k, c = _spans(lo_b, np.maximum(hi_b - lo_b + 1, 0))
        e = idx[c]
        ok = e >= 0
        rows.append(k[ok])
        cols.append(e[ok])
        vals.append(np.where(first[c[ok]], 1.0, -1.0))
    if not rows:
        return sp.csr_matrix((lo.size, m))
    return sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(lo.size, m)).tocsr()


def _rects_transformed(rects: np.ndarray, shape: tuple[int, int], u: np.ndarray, v: np.ndarray) -> sp.csr_matrix:
    """W D_E for inclusive rectangles and axis-neighbour edges: entries only where an edge crosses a boundary."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    n1, n2 = shape
    m = u.size
    ur, uc = np.divmod(u, n2)
    vr, vc = np.divmod(v, n2)
    H = np.full((n1, max(n2 - 1, 0)), -1, dtype=np.int64)  # edge (r, c)-(r, c + 1)
    HF = np.zeros(H.shape, dtype=bool)  # its u is the left cell
    Vt = np.full((max(n1 - 1, 0), n2), -1, dtype=np.int64)  # edge (r, c)-(r + 1, c)
    VF = np.zeros(Vt.shape, dtype=bool)  # its u is the top cell
    h = np.flatnonzero(ur == vr)
    H[ur[h], np.minimum(uc[h], vc[h])] = h
    HF[ur[h], np.minimum(uc[h], vc[h])] = uc[h] < vc[h]
    w = np.flatnonzero(uc == vc)
    Vt[np.minimum(ur[w], vr[w]), uc[w]] = w
    VF[np.minimum(ur[w], vr[w]), uc[w]] = ur[w] < vr[w]
    r1, r2, c1, c2 = (rects[:, i] for i in range(4))
    rows, cols, vals = [], [], []

    def add(k, e, sign):
        ok = e >= 0
        rows.append(k[ok])
        cols.append(e[ok])
        vals.append(sign[ok])

    sel = np.flatnonzero(c1 > 0)  # left boundary: the right cell (r, c1) is inside
    kk, r = _spans(r1[sel], r2[sel] - r1[sel] + 1)
    k, c = sel[kk], c1[sel][kk] - 1
    add(k, H[r, c], np.where(HF[r, c], -1.0, 1.0))
    sel = np.flatnonzero(c2 < n2 - 1)  # right boundary: the left cell (r, c2) is inside
    kk, r = _spans(r1[sel], r2[sel] - r1[sel] + 1)
    k, c = sel[kk], c2[sel][kk]
    add(k, H[r, c], np.where(HF[r, c], 1.0, -1.0))
    sel = np.flatnonzero(r1 > 0)  # top boundary: the lower cell (r1, c) is inside
    kk, c = _spans(c1[sel], c2[sel] - c1[sel] + 1)
    k, r = sel[kk], r1[sel][kk] - 1
    add(k, Vt[r, c], np.where(VF[r, c], -1.0, 1.0))
    sel = np.flatnonzero(r2 < n1 - 1)  # bottom boundary: the upper cell (r2, c) is inside
    kk, c = _spans(c1[sel], c2[sel] - c1[sel] + 1)
    k, r = sel[kk], r2[sel][kk]
    add(k, Vt[r, c], np.where(VF[r, c], 1.0, -1.0))
    return sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                         shape=(rects.shape[0], m)).tocsr()


def _structured(workload) -> str | None:
    if isinstance(workload, Workload) and len(workload.shape) == 1 and callable(getattr(workload, "ranges", None)):
        return "ranges"
    if isinstance(workload, Rectangles):
        return "rects"
    return None


def transformed_workload(workload, edges) -> sp.csr_matrix:
    """``W D_E`` as a sparse matrix, from the end points of ranges or rectangles (no dense ``(q, N)`` matrix).

    Parameters
    ----------
    workload : Ranges-like (1-D ranges: Identity, Prefix, AllRanges, Ranges, ...) or Rectangles
    edges : tuple of two int arrays, or a parent array
        ``(u, v)``: edge ``k`` joins cells ``u[k]`` and ``v[k]`` (column
        ``k`` of the result is ``W[:, u[k]] - W[:, v[k]]``); or a parent
        array (root -1), whose edges ``(v, parent(v))`` are taken in the
        order of ``v`` (the transformed workload ``W_T`` of 001 Sec 3).
        For rectangles every edge must join two axis neighbours; ranges take
        edges of any span.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``(q, |E|)`` float64 with entries in {-1, 0, 1}.

    Raises
    ------
    ParameterError, TypeError
        Another workload class, edges that are not between axis neighbours.

    Privacy
    -------
    None: nothing is released (public inputs only).

    Sensitivity
    -----------
    None used.

    Runtime
    -------
    O(q (h + w) + |E|): at most ``2 d`` entries per range for edges of span
    ``d``; at most ``2 (h + w)`` per ``h x w`` rectangle.

    References
    ----------
    .. [1] Haney, Machanavajjhala, Ding. *Design of policy-aware differentially private algorithms.* PVLDB 9(4),
       2015, Sec 3 (``W_G = W P_G``; 001 Sec 3).
    """
    kind = _structured(workload)
    if kind is None:
        raise TypeError(f"workload must be a 1-D range workload or Rectangles, got {workload!r}")
    shape = tuple(workload.shape)
    if isinstance(edges, tuple) and len(edges) == 2:
        u, v = (np.asarray(e, dtype=np.int64).reshape(-1) for e in edges)
    else:
        parent = np.asarray(edges, dtype=np.int64)
        _check_spanning(parent, "edges")
        u, v = _tree_edges(parent)
    N = math.prod(shape)
    if u.shape != v.shape or (u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= N)):
        raise ParameterError("edges", f"edges: u and v must be equal-length arrays of cells in 0 .. {N - 1}")
    if u.size and not _sparse_ok(kind, shape, u, v):
        raise ParameterError("edges", "edges: every edge must join two axis-neighbour cells for the sparse form "
                                      "of rectangles")
    if u.size:
        key = np.minimum(u, v) * N + np.maximum(u, v)
        if np.unique(key).size != key.size:
            raise ParameterError("edges", "edges: an edge is listed twice")
    if kind == "ranges":
        r = workload.ranges()
        return _ranges_transformed(r[:, 0], r[:, 1], shape[0], u, v)
    return _rects_transformed(workload.rects(), shape, u, v)


def _row_gram(workload) -> tuple[np.ndarray, np.ndarray]:
    """(W W^T, W 1) in closed form for ranges (overlap lengths) and rectangles (overlap areas)."""
    if _structured(workload) == "ranges":
        lo, hi = (a.astype(np.float64) for a in workload.ranges().T)
        K = np.minimum.outer(hi, hi) - np.maximum.outer(lo, lo) + 1.0
        np.maximum(K, 0.0, out=K)
        return K, hi - lo + 1.0
    r = workload.rects().astype(np.float64)
    K = np.minimum.outer(r[:, 1], r[:, 1]) - np.maximum.outer(r[:, 0], r[:, 0]) + 1.0
    np.maximum(K, 0.0, out=K)
    C = np.minimum.outer(r[:, 3], r[:, 3]) - np.maximum.outer(r[:, 2], r[:, 2]) + 1.0
    np.maximum(C, 0.0, out=C)
    K *= C
    return K, (r[:, 1] - r[:, 0] + 1.0) * (r[:, 3] - r[:, 2] + 1.0)


def _indicator(workload, cell: int) -> np.ndarray:
    """W e_cell for ranges or rectangles."""
    if _structured(workload) == "ranges":
        lo, hi = workload.ranges().T
        return ((lo <= cell) & (cell <= hi)).astype(np.float64)
    r, c = divmod(cell, workload.shape[1])
    R = workload.rects()
    return ((R[:, 0] <= r) & (r <= R[:, 1]) & (R[:, 2] <= c) & (c <= R[:, 3])).astype(np.float64)


def _gram_fits(N: int) -> bool:
    return N <= EIG_LIMIT and N * N <= DENSE_LIMIT


class _Source:
    """The workload and the forms of it computed so far (shared by the candidates)."""

    def __init__(self, workload: Workload) -> None:
        self.w = workload
        self.N = int(workload.size)
        self.q = int(workload.n_queries)
        self.kind = _structured(workload)
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
            self._rowgram = _row_gram(self.w)
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


def _candidate_value(src: _Source, es: _EdgeSet) -> tuple[float, str]:
    """(||W D_E||_*^2 / |E|, route) or raise _Skip."""
    import scipy.sparse as sp  # optional dependency (the test extra)
    N, q, m = src.N, src.q, es.size
    if m == 0:
        return 0.0, "no edges"
    shape = tuple(src.w.shape)
    # 1. the q x q side: sparse W D_E (local edges), closed forms (stars, the complete graph), a dense W
    if q <= EIG_LIMIT and q <= m:
        if es.kind not in ("star", "complete") and _sparse_ok(src.kind, shape, es.u, es.v):
            M = transformed_workload(src.w, (es.u, es.v))
            return _finish(_sum_sqrt_eigs(_smaller_gram(M)), m), f"sparse W D_E ({M.nnz} non-zeros), {q} x {q}"
        if src.kind is not None and es.kind in ("star", "complete"):
            K, a = src.rowgram()
            if es.kind == "complete":
                K = N * K - np.outer(a, a)
            else:
                w = _indicator(src.w, es.centre)
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
    if es.kind not in ("star", "complete") and m <= EIG_LIMIT and _sparse_ok(src.kind, shape, es.u, es.v):
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


def linear_lower_bound(workload, policy, epsilon=1.0, *, trees=None) -> dict[str, Any]:
    """Lower bound on the expected total squared error of every data-independent linear mechanism under a policy.

    Parameters
    ----------
    workload : Workload or array_like (q, N)
        The queries, on the policy's domain (row-major flat cells).
    policy : Policy
        Without public constraints; Blowfish neighbours.
    epsilon : float or Fraction, > 0
    trees : sequence, optional
        The edge sets to try (see :func:`spanning_trees` for the tree names
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
    t0 = time.perf_counter()
    if getattr(policy, "constraints", ()):
        raise ParameterError("policy", f"policy: {len(policy.constraints)} public count constraint(s) given; this "
                                       "bound assumes that only the number of records n is public (with public "
                                       "counts the neighbours of 000 Def 4.1 change and an estimator may use the "
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
    sets = _edge_sets(policy, trees)
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
    kind = _structured(workload)
    if q <= min(N, EIG_LIMIT) and kind is not None:
        return _sum_sqrt_eigs(_row_gram(workload)[0]), f"closed-form W W^T, {q} x {q}"
    if q <= min(N, EIG_LIMIT) and (isinstance(workload, Explicit) or q * N <= _DENSE_MATRIX_LIMIT):
        W = np.asarray(workload.matrix(), dtype=np.float64)
        return _sum_sqrt_eigs(W @ W.T), f"dense W W^T, {q} x {q}"
    if _gram_fits(N):
        return _sum_sqrt_eigs(np.asarray(workload.gram(), dtype=np.float64)), f"Gram W^T W, {N} x {N}"
    if q <= EIG_LIMIT and kind is not None:
        return _sum_sqrt_eigs(_row_gram(workload)[0]), f"closed-form W W^T, {q} x {q}"
    raise ParameterError("workload", f"workload: {workload!r} (q = {q}, N = {N}): neither W W^T nor W^T W fits "
                                     f"(EIG_LIMIT = {EIG_LIMIT}); use a Kronecker workload or fewer queries")


def dp_lower_bound(workload, epsilon=1.0) -> dict[str, Any]:
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
