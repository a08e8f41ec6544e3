"""The exact policy sensitivity of a linear strategy, by vectorised edge scans.

Under a policy without constraints, moving one individual from ``u`` to ``v``
along an edge of the secret graph changes ``A x`` by ``A (e_v - e_u)``, so the
policy sensitivity of ``A`` is

    Delta_G(A) = max over edges (u, v) of G of ||A (e_u - e_v)||_1

(He, Machanavajjhala, Ding, SIGMOD 2014, 000 Def 5.1 and Thm 5.1).  It is
found by scanning the graph's edges (translation offsets of a distance
threshold, the listed edges of small or explicit graphs, every pair of the
complete graph), else bounded safely by ``2 max_u ||A e_u||_1``.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from ._strategy_inputs import as_strategy, plain_policy

if TYPE_CHECKING:
    from ...policy._policy import Policy

__all__ = ["strategy_sensitivity", "threshold_offsets"]

#: Largest N * N * m for which the complete graph's sensitivity is found by scanning every pair.
PAIR_SCAN_LIMIT = 2_000_000_000
#: Largest number of matrix entries touched at once by a scan.
_CHUNK_ENTRIES = 1 << 22
#: Largest number of candidate offsets a distance-threshold scan tests.
_OFFSET_LIMIT = 200_000
#: Largest domain whose edges are listed by :meth:`SecretGraph.iter_edges` (explicit graphs excepted).
LISTED_EDGE_DOMAIN = 4096
#: Grid a real-valued strategy is put on: entries are multiples of 1 / RESOLUTION.


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
    """Edges of a translation-invariant graph as (flat offset, sources, targets).

    None when the graph is no distance threshold (no :meth:`threshold_steps`) or has too many offsets.
    """
    steps = graph.threshold_steps(domain)
    if steps is None:
        return None
    shape = [int(n) for n in domain.shape]
    caps = [int(c) for c in steps.caps]  # the radius along each axis: min(theta // bin width, n - 1)
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


def strategy_sensitivity(A: npt.ArrayLike, policy: Policy) -> tuple[Any, str]:
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
    if graph.is_complete():
        B, s = _split_singletons(F)
        work = N * N * max(1, B.shape[0])
        if work <= PAIR_SCAN_LIMIT:
            return done(_all_pairs_max(B, s), f"exact: scan of all {N * (N - 1) // 2} pairs (complete graph; "
                        f"{m - B.shape[0]} rows with one non-zero added in closed form)")
        return done(_column_bound(F), f"upper bound 2 max_u ||A e_u||_1 (complete graph: N*N*m' = {work} for "
                    f"the m' = {B.shape[0]} rows with two or more non-zeros, above the pair-scan limit "
                    f"{PAIR_SCAN_LIMIT})")
    offsets = threshold_offsets(graph, domain)
    if offsets is not None:
        best = max((_diff_max(F, U, V) for _, U, V in offsets), default=0.0)
        edges = sum(U.shape[0] for _, U, _ in offsets)
        return done(best, f"exact: scan of {edges} edges over {len(offsets)} translation offsets")
    if graph.lists_edges() or N <= LISTED_EDGE_DOMAIN:
        U, V = graph.iter_edges(domain, limit=max(N, 1))
        return done(_diff_max(F, U, V), f"exact: scan of {U.shape[0]} listed edges")
    return done(_column_bound(F), f"upper bound 2 max_u ||A e_u||_1 (the edges of {graph!r} on {N} values are "
                "not scanned)")
