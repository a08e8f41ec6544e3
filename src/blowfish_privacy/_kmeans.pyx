# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the k-means kernels (csrc/kmeans.h): assignment and
accumulation, and the sensitivity scans of a grid domain, used by
mechanisms/clustering/kmeans.py and its helpers."""

from libc.stdint cimport int32_t, int64_t, uint32_t

from ._common cimport vector, matrix, check_same_length

import numpy as np

KMEANS_MAXDIM = BF_KMEANS_MAXDIM
#: Most clusters the bisector scan accepts (its per-pair tables are static).
KMEANS_MAXK = 64


_INT64_MAX = 2**63 - 1
#: Largest grid the scans accept (cells); the per-cell tables are 12 bytes a cell.
KMEANS_MAX_CELLS = 2**40

cdef object _absmax(object a):
    """Largest |entry| of an int64 array as a Python int (0 when empty)."""
    if a.size == 0:
        return 0
    return max(-int(a.min()), int(a.max()))


cdef object _grid(object shape, object low, object width):
    sh = vector(shape, "shape", np.int64, False)
    lo = vector(low, "low", np.int64, False)
    wd = vector(width, "width", np.int64, False)
    cdef Py_ssize_t d = sh.shape[0]
    if d < 1 or d > BF_KMEANS_MAXDIM:
        raise ValueError(f"shape must have 1 to {BF_KMEANS_MAXDIM} axes, got {d}")
    check_same_length("low", lo.shape[0], "shape", d)
    check_same_length("width", wd.shape[0], "shape", d)
    if (sh < 1).any() or (wd < 1).any():
        raise ValueError(f"shape and width must be >= 1 on every axis, got shape {sh.tolist()}, "
                         f"width {wd.tolist()}")
    total = 1
    for a in range(d):
        total *= int(sh[a])
        # the kernels step one width past the last value
        if int(lo[a]) + int(sh[a]) * int(wd[a]) > _INT64_MAX:
            raise OverflowError(f"grid axis {a}: low + shape * width = {int(lo[a])} + {int(sh[a])} * "
                                f"{int(wd[a])} does not fit a signed 64-bit integer")
    if total > KMEANS_MAX_CELLS:
        raise ValueError(f"the grid must have at most {KMEANS_MAX_CELLS} cells, got {total}")
    return sh, lo, wd


cdef object _centres(object centroids, object refs, Py_ssize_t d):
    c = matrix(centroids, "centroids", np.float64, d)
    r = matrix(refs, "refs", np.int64, d)
    if c.shape[0] < 1:
        raise ValueError("centroids must have at least one row")
    check_same_length("refs", r.shape[0], "centroids", c.shape[0])
    if not np.isfinite(c).all():
        raise ValueError("centroids must be finite")
    return c, r


cdef void _check_costs(object sh, object lo, object wd, object r) except *:
    """2 * (max L1 norm of a cell + max L1 norm of a reference) fits int64,
    so costs, their pairwise sums and the L1 projection ranges never overflow."""
    m = 0
    for a in range(sh.shape[0]):
        hi = int(lo[a]) + (int(sh[a]) - 1) * int(wd[a])
        m += max(abs(int(lo[a])), abs(hi)) + _absmax(r[:, a])
    if 2 * m > _INT64_MAX:
        raise OverflowError(
            f"refs and the grid are too far from 0: 2 * (max |cell|_1 + max |ref|_1) = {2 * m} "
            f"must fit a signed 64-bit integer")


cdef class _Grid:
    """A checked grid and clustering as the kernels take it (bf_kmeans_grid):
    the arrays are kept alive here and the struct points into them."""
    cdef bf_kmeans_grid g
    cdef object sh, lo, wd, c, r

    def __cinit__(self, shape, low, width, centroids, refs):
        self.sh, self.lo, self.wd = _grid(shape, low, width)
        self.c, self.r = _centres(centroids, refs, self.sh.shape[0])
        _check_costs(self.sh, self.lo, self.wd, self.r)
        cdef const int64_t[::1] shv = self.sh
        cdef const int64_t[::1] lov = self.lo
        cdef const int64_t[::1] wdv = self.wd
        cdef const double[:, ::1] cv = self.c
        cdef const int64_t[:, ::1] rv = self.r
        self.g.d = <size_t>shv.shape[0]
        self.g.shape, self.g.low, self.g.width = &shv[0], &lov[0], &wdv[0]
        self.g.k = <size_t>cv.shape[0]
        self.g.centroids, self.g.refs = &cv[0, 0], &rv[0, 0]


def kmeans_assign(points, centroids, refs, bint return_labels=False):
    """One fused assignment-and-accumulation pass (nearest centroid, ties to
    the lowest index).

    Parameters
    ----------
    points : ndarray of int64, shape (n, d)  # IN
    centroids : ndarray of float64, shape (k, d)  # IN
    refs : ndarray of int64, shape (k, d)  # IN
        Reference point of each cluster; sums are taken relative to it.
    return_labels : bool
        Also return each point's cluster.

    Returns
    -------
    counts : ndarray of int64, shape (k,)
    sums : ndarray of int64, shape (k, d)
        ``sum over points p of cluster j of (p - refs[j])``.
    labels : ndarray of int32, shape (n,), or None
    """
    pa = matrix(points, "points", np.int64, -1)
    cdef Py_ssize_t n = pa.shape[0], d = pa.shape[1]
    if d < 1:
        raise ValueError("points must have at least one column")
    ca, ra = _centres(centroids, refs, d)
    cdef Py_ssize_t k = ca.shape[0]
    if n * (_absmax(pa) + _absmax(ra)) > _INT64_MAX:
        raise OverflowError(
            f"points: n * (max |coordinate| + max |ref|) with n = {n} must fit a signed 64-bit integer "
            "(assign fewer points per call, or use smaller coordinates)")
    cdef const int64_t[:, ::1] pv = pa  # IN
    cdef const double[:, ::1] cv = ca  # IN
    cdef const int64_t[:, ::1] rv = ra  # IN
    counts = np.zeros(k, dtype=np.int64)
    sums = np.zeros((k, d), dtype=np.int64)
    cdef int64_t[::1] cnt = counts  # OUT
    cdef int64_t[:, ::1] sm = sums  # OUT
    cdef int32_t[::1] lab  # OUT
    cdef int32_t *lp = NULL
    labels = None
    if return_labels:
        labels = np.empty(n, dtype=np.int32)
        if n > 0:
            lab = labels
            lp = &lab[0]
    cdef const int64_t *pp = &pv[0, 0] if n > 0 else NULL
    with nogil:
        bf_kmeans_assign_accumulate(pp, <size_t>n, <size_t>d, &cv[0, 0], &rv[0, 0],
                                    <size_t>k, lp, &cnt[0], &sm[0, 0])
    return counts, sums, labels


def kmeans_grid_label_cost(shape, low, width, centroids, refs):
    """Nearest centroid and L1 distance to its reference point of every cell
    of a grid (flat row-major order).

    Parameters
    ----------
    shape, low, width : ndarray of int64, shape (d,)  # IN
        Cells per axis, first value, bin width.
    centroids : ndarray of float64, shape (k, d)  # IN
    refs : ndarray of int64, shape (k, d)  # IN

    Returns
    -------
    labels : ndarray of int32, shape (prod(shape),)
    cost : ndarray of int64, shape (prod(shape),)
    """
    cdef _Grid grid = _Grid(shape, low, width, centroids, refs)
    cdef Py_ssize_t total = int(np.prod(grid.sh, dtype=object))
    labels = np.empty(total, dtype=np.int32)
    cost = np.empty(total, dtype=np.int64)
    cdef int32_t[::1] lab = labels  # OUT
    cdef int64_t[::1] cst = cost  # OUT
    with nogil:
        bf_kmeans_grid_label_cost(&grid.g, &lab[0], &cst[0])
    return labels, cost


def kmeans_clique_scan(shape, low, width, centroids, refs, uint32_t fixed_mask, bint projections=True):
    """Sensitivity scan for a secret graph made of cliques: the blocks of cells
    that agree on the axes set in ``fixed_mask``.

    Parameters
    ----------
    shape, low, width : ndarray of int64, shape (d,)  # IN
    centroids : ndarray of float64, shape (k, d)  # IN
    refs : ndarray of int64, shape (k, d)  # IN
    fixed_mask : int
        Bit a set: axis a is fixed within a block.
    projections : bool
        True: ``same`` exact, work ``|T| (k d + 2**(f-1))`` with f the free
        axes.  False: ``same`` is the upper bound min(2 max cost, block
        diameter) per block and cluster, work ``|T| k d``.

    Returns
    -------
    same : int
        Largest L1 distance between two cells of one block and one cluster
        (or its bound, see ``projections``).
    cross : int
        Largest cost(x) + cost(y) over x, y of one block in two clusters; -1
        when no block meets two clusters.
    """
    cdef _Grid grid = _Grid(shape, low, width, centroids, refs)
    cdef Py_ssize_t d = grid.g.d, k = grid.g.k
    if fixed_mask >> d:
        raise ValueError(f"fixed_mask must only set bits below d = {d}, got {fixed_mask}")
    cdef Py_ssize_t nv = d - bin(fixed_mask).count("1")
    cdef Py_ssize_t ns = (1 << (nv - 1)) if nv > 0 else 1
    cdef int64_t[::1] scratch = np.empty(k * (1 + 2 * ns), dtype=np.int64)
    cdef int64_t same = 0, cross = -1
    with nogil:
        bf_kmeans_clique_scan(&grid.g, fixed_mask, projections, &scratch[0], &same, &cross)
    return int(same), int(cross)


def kmeans_offset_scan(shape, labels, cost, offsets, length):
    """Sensitivity scan over explicit edge offsets (exact for translation-
    invariant graphs such as distance thresholds).

    Parameters
    ----------
    shape : ndarray of int64, shape (d,)  # IN
    labels : ndarray of int32, shape (prod(shape),)  # IN
    cost : ndarray of int64, shape (prod(shape),)  # IN
    offsets : ndarray of int64, shape (m, d)  # IN
        Code deltas, one of each pair ``+-o``.
    length : ndarray of int64, shape (m,)  # IN
        L1 length of each offset in value units.

    Returns
    -------
    same, cross : int
        As for :func:`kmeans_clique_scan`.
    """
    sh = vector(shape, "shape", np.int64, False)
    cdef Py_ssize_t d = sh.shape[0]
    if d < 1 or d > BF_KMEANS_MAXDIM:
        raise ValueError(f"shape must have 1 to {BF_KMEANS_MAXDIM} axes, got {d}")
    if (sh < 1).any():
        raise ValueError(f"shape must be >= 1 on every axis, got {sh.tolist()}")
    cells = int(np.prod(sh, dtype=object))
    if cells > KMEANS_MAX_CELLS:
        raise ValueError(f"the grid must have at most {KMEANS_MAX_CELLS} cells, got shape {sh.tolist()}")
    cdef Py_ssize_t total = cells
    la = vector(labels, "labels", np.int32, False)
    co = vector(cost, "cost", np.int64, False)
    check_same_length("labels", la.shape[0], "prod(shape)", total)
    check_same_length("cost", co.shape[0], "prod(shape)", total)
    oa = matrix(offsets, "offsets", np.int64, d)
    ln = vector(length, "length", np.int64, False)
    cdef Py_ssize_t m = oa.shape[0]
    check_same_length("length", ln.shape[0], "offsets", m)
    if co.size and (co.min() < 0 or int(co.max()) > _INT64_MAX // 2):
        raise ValueError(f"cost must lie in [0, {_INT64_MAX // 2}], got {int(co.min())}..{int(co.max())}")
    if m and ((oa <= -sh).any() or (oa >= sh).any()):
        raise ValueError(f"offsets must satisfy |offsets[:, a]| < shape[a], got shape {sh.tolist()}")
    if m and (ln.min() < 1 or int(ln.max()) > _INT64_MAX // 4):
        # the scan adds a length to two costs of at most INT64_MAX / 2 each
        raise ValueError(f"length must lie in [1, {_INT64_MAX // 4}] (an edge has a positive L1 length)")
    cdef int64_t same = 0, cross = -1
    if m == 0 or total == 0:
        return 0, -1
    cdef const int64_t[::1] shv = sh  # IN
    cdef const int32_t[::1] lv = la  # IN
    cdef const int64_t[::1] cov = co  # IN
    cdef const int64_t[:, ::1] ov = oa  # IN
    cdef const int64_t[::1] lnv = ln  # IN
    with nogil:
        bf_kmeans_offset_scan(<size_t>d, &shv[0], &lv[0], &cov[0], &ov[0, 0], &lnv[0],
                              <size_t>m, &same, &cross)
    return int(same), int(cross)


def kmeans_bisector_scan(shape, low, width, centroids, refs, double radius):
    """Cells near the bisector of two centroids, for graphs whose edges are at
    most ``radius`` long (Euclidean, value units).

    Parameters
    ----------
    shape, low, width : ndarray of int64, shape (d,)  # IN
    centroids : ndarray of float64, shape (k, d), k <= 64  # IN
    refs : ndarray of int64, shape (k, d)  # IN
    radius : float
        Finite, >= 0.

    Returns
    -------
    near : ndarray of int64, shape (k, k)
        ``near[i, j]``: largest cost of a cell of cluster i within ``radius``
        of the bisector of centroids i and j (-1 if none).
    pair : ndarray of int64, shape (k, k)
        ``pair[i, j]``: largest cost(x) + ||x - refs[j]||_1 over those cells.
    """
    if not (radius >= 0 and radius < np.inf):
        raise ValueError(f"radius must be finite and >= 0, got {radius}")
    cdef _Grid grid = _Grid(shape, low, width, centroids, refs)
    cdef Py_ssize_t k = grid.g.k
    if k > KMEANS_MAXK:
        raise ValueError(f"centroids must have at most {KMEANS_MAXK} rows, got {k}")
    near = np.empty((k, k), dtype=np.int64)
    pair = np.empty((k, k), dtype=np.int64)
    cdef int64_t[:, ::1] nv = near  # OUT
    cdef int64_t[:, ::1] pv = pair  # OUT
    with nogil:
        bf_kmeans_bisector_scan(&grid.g, radius, &nv[0, 0], &pv[0, 0])
    return near, pair
