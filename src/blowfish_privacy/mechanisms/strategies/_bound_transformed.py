"""The transformed workload ``W D_E`` of ranges and rectangles, sparse, and their closed-form row Gram matrices.

An edge ``(u, v)`` changes a range's or rectangle's answer only where it
crosses the boundary, so ``W D_E`` has ``O(q (h + w))`` non-zeros and is
built from the end points, never from a dense ``(q, N)`` matrix (Haney,
Machanavajjhala, Ding, PVLDB 9(4) 2015, Sec 3: ``W_G = W P_G``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ...errors import ParameterError
from ...workloads import Rectangles, Workload
from ._bound_edge_sets import check_spanning, tree_edges

if TYPE_CHECKING:  # annotations only
    import scipy.sparse as sp

__all__ = ["indicator", "row_gram", "sparse_ok", "structured", "transformed_workload"]



def _spans(start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(which, value): for each k, the values start[k] .. start[k] + length[k] - 1, flattened."""
    which = np.repeat(np.arange(start.size, dtype=np.int64), length)
    first = np.cumsum(length) - length
    value = np.repeat(start, length) + (np.arange(which.size, dtype=np.int64) - np.repeat(first, length))
    return which, value


def sparse_ok(kind: str | None, shape: tuple[int, ...], u: np.ndarray, v: np.ndarray) -> bool:
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


def structured(workload) -> str | None:
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
    kind = structured(workload)
    if kind is None:
        raise TypeError(f"workload must be a 1-D range workload or Rectangles, got {workload!r}")
    shape = tuple(workload.shape)
    if isinstance(edges, tuple) and len(edges) == 2:
        u, v = (np.asarray(e, dtype=np.int64).reshape(-1) for e in edges)
    else:
        parent = np.asarray(edges, dtype=np.int64)
        check_spanning(parent, "edges")
        u, v = tree_edges(parent)
    N = math.prod(shape)
    if u.shape != v.shape or (u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= N)):
        raise ParameterError("edges", f"edges: u and v must be equal-length arrays of cells in 0 .. {N - 1}")
    if u.size and not sparse_ok(kind, shape, u, v):
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


def row_gram(workload) -> tuple[np.ndarray, np.ndarray]:
    """(W W^T, W 1) in closed form for ranges (overlap lengths) and rectangles (overlap areas)."""
    if structured(workload) == "ranges":
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


def indicator(workload, cell: int) -> np.ndarray:
    """W e_cell for ranges or rectangles."""
    if structured(workload) == "ranges":
        lo, hi = workload.ranges().T
        return ((lo <= cell) & (cell <= hi)).astype(np.float64)
    r, c = divmod(cell, workload.shape[1])
    R = workload.rects()
    return ((R[:, 0] <= r) & (r <= R[:, 1]) & (R[:, 2] <= c) & (c <= R[:, 3])).astype(np.float64)
