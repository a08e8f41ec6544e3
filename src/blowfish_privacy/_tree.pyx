# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the tree kernels and isotonic regression (csrc/tree.h,
csrc/isotonic.h), used by the cumulative and hierarchical mechanisms.

A forest of m equal-shaped f-ary trees is stored level by level: node g of
a level array has the children g*f .. g*f + f - 1 in the next level's
array.  Variances: +inf marks an unobserved node, 0 an exact one.  Arrays
reach C through the checks of ``_common``; the GIL is released around
every kernel.
"""

from libc.stdint cimport int64_t, uint64_t

from ._isotonic cimport isotonic_chunks, isotonic_threads
from ._common cimport (positive_count, BF_OK, apply_int64, raise_status, check_overflow, vector, c_array,
                       check_same_length)

import math
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._isotonic import ISOTONIC_CHUNK


cdef object checked_sum(const int64_t[::1] x, str name):
    """Exact sum of ``x`` if it and every partial sum fit int64, else OverflowError."""
    cdef int64_t total = 0
    cdef int status = BF_OK
    cdef Py_ssize_t n = x.shape[0]
    if n > 0:
        with nogil:
            status = bf_sum_i64(&x[0], <size_t>n, &total)
    check_overflow(status, f"the sum of {name}")
    return total


cdef inline void _check_fanout(Py_ssize_t f) except *:
    if f < 2:
        raise ValueError(f"f must be >= 2, got {f}")


cdef void check_oh_shape(Py_ssize_t N, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c) except *:
    """The OH forest's shape (csrc/tree.h, bf_oh_up_range): N bins in blocks of ``block``, trees of height h,
    root fan-out c, fan-out f below, width c f^(h-1) >= block and <= 2^40."""
    if N < 1:
        raise ValueError("hist must have at least one bin")
    _check_fanout(f)
    if h < 1 or h > 62:
        raise ValueError(f"h must lie in [1, 62], got {h}")
    if c < 1 or c > f:
        raise ValueError(f"c must lie in [1, f], got {c}")
    if block < 1 or block > N:
        raise ValueError(f"block must lie in [1, len(hist)], got {block}")
    width = int(c) * int(f) ** int(h - 1)
    if width < block or width > (1 << 40):
        raise ValueError(f"the tree width c * f**(h-1) = {width} must be >= block = {block} and <= 2**40")


cdef inline void _check_children(str child_name, Py_ssize_t n_child,
                                 str parent_name, Py_ssize_t n_parent,
                                 Py_ssize_t f) except *:
    if n_child != n_parent * f:
        raise ValueError(
            f"{child_name} must have len({parent_name}) * f = {n_parent} * {f} = "
            f"{n_parent * f} elements, got {n_child}")



def prefix_sum(x):
    """Inclusive cumulative sums of int64 counts, checked for overflow.

    Parameters
    ----------
    x : ndarray of int64, shape (n,), C-contiguous  # IN

    Returns
    -------
    out : ndarray of int64, shape (n,)
        ``out[i] = x[0] + ... + x[i]``.

    Raises
    ------
    OverflowError
        If a partial sum does not fit a signed 64-bit integer.
    """
    return apply_int64(x, "x", bf_prefix_sum_i64, "a partial sum of x")


def sum_int64(x):
    """Exact sum of an int64 vector; OverflowError if a partial sum does not fit int64.

    x : ndarray of int64, shape (n,)  # IN
    """
    return checked_sum(vector(x, "x", np.int64, False), "x")


def sum_counts(x):
    """Exact total of int64 counts in one pass: ValueError if one is negative
    (the message quotes no count), OverflowError if a partial sum does not
    fit int64.

    x : ndarray of int64, shape (n,)  # IN
    """
    cdef const int64_t[::1] xv = vector(x, "x", np.int64, False)  # IN
    return _sum_counts(xv, "x")


cdef object _sum_counts(const int64_t[::1] x, str name):
    cdef int64_t total = 0
    cdef int status = BF_OK, negative = 0
    cdef Py_ssize_t n = x.shape[0]
    if n > 0:
        with nogil:
            status = bf_sum_counts_i64(&x[0], <size_t>n, &total, &negative)
    if negative:
        raise ValueError(f"{name} must hold non-negative counts, got a negative one")
    check_overflow(status, f"the sum of {name}")
    return total


def ordered_cumulative(hist, noise, threads=1):
    """The ordered mechanism's estimate from its noise: one pass, then isotonic regression.

    hist : int64, shape (N,), non-negative, total n fits int64  # IN
    noise : int64, shape (N - 1,)  # IN

    Returns ``(cum, n)``: cum (float64, shape (N,)) the noisy cumulative
    counts ``hist[0] + ... + hist[i] + noise[i]`` (exact in int64, then
    converted; csrc/tree.h, bf_noisy_cumulative) projected by
    :func:`isotonic_unit_chunked` onto the non-decreasing sequences in
    [0, n], and ``cum[N-1] = n``; the same for any ``threads``.
    OverflowError if a noisy count does not fit int64.
    """
    cdef const int64_t[::1] hv = vector(hist, "hist", np.int64, False)  # IN
    cdef Py_ssize_t N = hv.shape[0]
    if N < 1:
        raise ValueError("hist must have at least one bin")
    total = _sum_counts(hv, "hist")
    threads = positive_count(threads, "threads")
    cdef const int64_t[::1] nv = vector(noise, "noise", np.int64, False)  # IN
    check_same_length("noise", nv.shape[0], "len(hist) - 1", N - 1)
    if N == 1:
        return np.array([float(total)]), total
    out = np.empty(N, dtype=np.float64)
    cdef double[::1] o = out
    cdef int status
    with nogil:
        status = bf_noisy_cumulative(&hv[0], &nv[0], <size_t>(N - 1), &o[0])
    check_overflow(status, "a noisy cumulative count")
    out[N - 1] = float(total)
    isotonic_threads(out[:N - 1], 0.0, float(total), threads, ISOTONIC_CHUNK, False)
    return out, total


def level_sums(child, Py_ssize_t f):
    """Sums of consecutive groups of ``f`` children: one level up a tree.

    Parameters
    ----------
    child : ndarray of int64, shape (m*f,), C-contiguous  # IN
    f : int
        Fan-out, >= 2.

    Returns
    -------
    out : ndarray of int64, shape (m,)
        ``out[g] = child[g*f:(g+1)*f].sum()``.

    Raises
    ------
    ValueError
        If ``f < 2`` or ``len(child)`` is not a multiple of ``f``.
    OverflowError
        If a sum does not fit a signed 64-bit integer.
    """
    cdef const int64_t[::1] c = vector(child, "child", np.int64, False)  # IN
    _check_fanout(f)
    cdef Py_ssize_t n = c.shape[0]
    if n % f != 0:
        raise ValueError(f"len(child) must be a multiple of f = {f}, got {n}")
    cdef Py_ssize_t m = n // f
    out = np.empty(m, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if m > 0:
        with nogil:
            status = bf_level_sums_i64(&c[0], &o[0], <size_t>m, <size_t>f)
    check_overflow(status, "a sum of child")
    return out


def tree_levels(leaves, Py_ssize_t f, Py_ssize_t h):
    """All levels of ``m`` f-ary trees of height ``h`` built from their leaves.

    Parameters
    ----------
    leaves : ndarray of int64, shape (m * f**h,), C-contiguous  # IN
    f : int
        Fan-out, >= 2.
    h : int
        Height, >= 0.

    Returns
    -------
    levels : list of h + 1 ndarrays of int64
        ``levels[L]`` has shape (m * f**L,) and holds the level-L node sums;
        ``levels[h]`` is ``leaves`` itself (not a copy, unless it had to be
        copied to be aligned and contiguous).  One pass per level.

    Raises
    ------
    ValueError
        If ``f < 2``, ``h < 0`` or ``len(leaves)`` is not a multiple of
        ``f**h``.
    OverflowError
        If a node sum does not fit a signed 64-bit integer.
    """
    leaves = vector(leaves, "leaves", np.int64, False)
    cdef const int64_t[::1] lv = leaves  # IN
    _check_fanout(f)
    if h < 0 or h > 62:
        raise ValueError(f"h must be >= 0 and at most 62 (f**h leaves must fit int64), got {h}")
    cdef Py_ssize_t n = lv.shape[0]
    cdef Py_ssize_t m = n
    cdef Py_ssize_t L
    for L in range(h):
        if m % f != 0:
            raise ValueError(f"len(leaves) must be a multiple of f**h = {f}**{h}, got {n}")
        m //= f
    levels = []
    cdef Py_ssize_t size = m
    for L in range(h):
        levels.append(np.empty(size, dtype=np.int64))
        size *= f
    levels.append(leaves)
    cdef const int64_t[::1] child = lv  # IN
    cdef int64_t[::1] parent  # OUT
    cdef int status = BF_OK
    for L in range(h - 1, -1, -1):
        parent = levels[L]
        if parent.shape[0] > 0:
            with nogil:
                status = bf_level_sums_i64(&child[0], &parent[0],
                                           <size_t>parent.shape[0], <size_t>f)
        check_overflow(status, f"a node sum at level {L}")
        child = parent
    return levels


def wls_up_level(zc, vc, z, v, Py_ssize_t f):
    """One level of the upward (subtree estimate) pass of least squares consistency.

    Each parent's own observation ``(z[g], v[g])`` is combined with the sum
    of its children's subtree estimates and the sum of their variances::

        (a, va), (b, vb) -> (b, vb) if va == inf; (a, va) if vb == inf;
                            (a, 0) if va == 0;    (b, 0) if vb == 0;
                            inverse-variance weighted mean otherwise.

    Parameters
    ----------
    zc : ndarray of float64, shape (m*f,), C-contiguous  # IN
        Children's subtree estimates.
    vc : ndarray of float64, shape (m*f,), C-contiguous  # IN
        Children's subtree variances (+inf unobserved, 0 exact).
    z : ndarray of float64, shape (m,), C-contiguous  # IN/OUT
        Parents' observations; overwritten with their subtree estimates.
    v : ndarray of float64, shape (m,), C-contiguous  # IN/OUT
        Parents' observation variances; overwritten with the subtree
        estimates' variances.
    f : int
        Fan-out, >= 2.
    """
    cdef const double[::1] zcv = vector(zc, "zc", np.float64, False)  # IN
    cdef const double[::1] vcv = vector(vc, "vc", np.float64, False)  # IN
    cdef double[::1] zv = vector(z, "z", np.float64, True)  # IN/OUT
    cdef double[::1] vv = vector(v, "v", np.float64, True)  # IN/OUT
    _check_fanout(f)
    cdef Py_ssize_t m = zv.shape[0]
    check_same_length("v", vv.shape[0], "z", m)
    _check_children("zc", zcv.shape[0], "z", m, f)
    check_same_length("vc", vcv.shape[0], "zc", zcv.shape[0])
    if m > 0:
        with nogil:
            bf_wls_up_level(&zcv[0], &vcv[0], &zv[0], &vv[0], <size_t>m, <size_t>f)


def wls_down_level(xp, zc, vc, Py_ssize_t f):
    """One level of the downward pass of least squares consistency.

    For each parent, ``d = xp[g] - zc[g*f:(g+1)*f].sum()`` is added to its
    children: in equal shares to those with ``vc == inf`` if there are any,
    otherwise in proportion to ``vc`` (children with ``vc == 0`` keep their
    value; if all are exact, none changes).

    Parameters
    ----------
    xp : ndarray of float64, shape (m,), C-contiguous  # IN
        Parents' final values.
    zc : ndarray of float64, shape (m*f,), C-contiguous  # IN/OUT
        Children's subtree estimates; overwritten with their final values.
    vc : ndarray of float64, shape (m*f,), C-contiguous  # IN
        Children's subtree variances from the upward pass.
    f : int
        Fan-out, >= 2.
    """
    cdef const double[::1] xpv = vector(xp, "xp", np.float64, False)  # IN
    cdef double[::1] zcv = vector(zc, "zc", np.float64, True)  # IN/OUT
    cdef const double[::1] vcv = vector(vc, "vc", np.float64, False)  # IN
    _check_fanout(f)
    cdef Py_ssize_t m = xpv.shape[0]
    _check_children("zc", zcv.shape[0], "xp", m, f)
    check_same_length("vc", vcv.shape[0], "zc", zcv.shape[0])
    if m > 0:
        with nogil:
            bf_wls_down_level(&xpv[0], &zcv[0], &vcv[0], <size_t>m, <size_t>f)


def wls_chain(ys, vs, zr, vr, xs):
    """Both passes over the ordered-hierarchy chain above the roots of a forest.

    Nodes ``s_1 .. s_k``: ``s_1`` has the single child ``r_1`` and ``s_i``
    (i >= 2) has the children ``s_{i-1}`` and ``r_i``, where ``r_i`` are the
    roots (level 0) of a forest of k trees.  Run it between the upward and
    the downward passes of the forest.

    Parameters
    ----------
    ys : ndarray of float64, shape (k,), C-contiguous  # IN
        Observations of the ``s_i``.
    vs : ndarray of float64, shape (k,), C-contiguous  # IN
        Their variances (+inf unobserved, 0 exact).
    zr : ndarray of float64, shape (k,), C-contiguous  # IN/OUT
        Roots' subtree estimates from the upward pass; overwritten with the
        roots' final values.
    vr : ndarray of float64, shape (k,), C-contiguous  # IN
        Roots' subtree variances from the upward pass.
    xs : ndarray of float64, shape (k,), C-contiguous  # OUT
        Final values of the ``s_i``.
    """
    cdef const double[::1] ysv = vector(ys, "ys", np.float64, False)  # IN
    cdef const double[::1] vsv = vector(vs, "vs", np.float64, False)  # IN
    cdef double[::1] zrv = vector(zr, "zr", np.float64, True)  # IN/OUT
    cdef const double[::1] vrv = vector(vr, "vr", np.float64, False)  # IN
    cdef double[::1] xsv = vector(xs, "xs", np.float64, True)  # OUT
    cdef Py_ssize_t k = ysv.shape[0]
    check_same_length("vs", vsv.shape[0], "ys", k)
    check_same_length("zr", zrv.shape[0], "ys", k)
    check_same_length("vr", vrv.shape[0], "ys", k)
    check_same_length("xs", xsv.shape[0], "ys", k)
    if k == 0:
        return
    if any(np.may_share_memory(xs, a) for a in (ys, vs, zr, vr)):
        raise ValueError("xs must not share memory with ys, vs, zr or vr")
    cdef double[::1] work = np.empty(k, dtype=np.float64)
    with nogil:
        bf_wls_chain(&ysv[0], &vsv[0], &zrv[0], &vrv[0], &xsv[0], &work[0], <size_t>k)



# -- The fused ordered hierarchical estimate and isotonic regression --------


def oh_estimate(hist, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c,
                noise_s, noise_h, double var_s, double var_h, threads=1):
    """The fused ordered hierarchical estimate (csrc/tree.h, bf_oh_up_range, bf_oh_chain, bf_oh_down_range).

    hist : int64, shape (N,), non-negative, total fits int64  # IN
    noise_s : int64, shape (k - 1,)  # IN  (k = ceil(N / block))
    noise_h : int64, one entry per real tree node, level 1 first, block-major  # IN
    threads : the blocks' passes run on up to this many threads; the result
    does not depend on it (each block is computed alone, then the S chain)
    Returns the cumulative estimates (float64, shape (N,)) before isotonic
    regression, bit-identical to tree_levels + wls_* + per-block cumsum.
    OverflowError if a noisy value does not fit int64.
    """
    return _oh(hist, block, f, h, c, noise_s, noise_h, var_s, var_h, threads, False, False)[0]


def oh_cumulative(hist, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c,
                  noise_s, noise_h, double var_s, double var_h, threads=1, overwrite_noise_h=False):
    """:func:`oh_estimate` followed by isotonic regression, in one call on the same threads.

    Returns ``(cum, n)``: n the exact total of ``hist`` (int), cum (float64,
    shape (N,)) the estimates with ``cum[:-1]`` projected onto the
    non-decreasing sequences in [0, n] and ``cum[-1] = n``; bit-identical to
    ``oh_estimate`` then ``isotonic_unit_chunked(cum[:-1], 0, n)``, for any
    ``threads``.  The estimates are not scanned for NaN first: they are
    computed here from checked inputs (variances 0 or at least
    :data:`OH_MIN_VARIANCE`), and the regression's own pass would report one.

    overwrite_noise_h : with True, ``noise_h`` (then writeable, not sharing
    memory with ``hist`` or ``noise_s``) becomes the output's storage: cum
    is a float64 view of its last N places, each leaf's estimate written
    where its noise was, and no other N-value array is allocated.
    """
    if overwrite_noise_h:
        noise_h = vector(noise_h, "noise_h", np.int64, True)
        if any(np.may_share_memory(noise_h, a) for a in (hist, noise_s) if isinstance(a, np.ndarray)):
            raise ValueError("noise_h must not share memory with hist or noise_s when it is overwritten")
    return _oh(hist, block, f, h, c, noise_s, noise_h, var_s, var_h, threads, True, bool(overwrite_noise_h))


#: The smallest positive node variance the OH kernel takes (the largest is
#: its inverse).  Precisions up to 1e200, times node values below 1e31 (2^40
#: leaves of int64 counts), and halved at most once per level (62 levels),
#: stay far below DBL_MAX, as do sums of 2^40 variances up to 1e200; a
#: discrete Laplace scale this precise (below about 1/460) gives noise that
#: is zero with probability 1 - 1e-200, and the sampler's largest scale,
#: 2^32, has a variance near 4e19.
OH_MIN_VARIANCE = 1e-200


cdef tuple _oh(hist, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c,
               noise_s, noise_h, double var_s, double var_h, threads, bint project, bint in_noise):
    """oh_estimate's checks and phases; with ``project``, the isotonic regression too."""
    cdef const int64_t[::1] hv = vector(hist, "hist", np.int64, False)  # IN
    cdef Py_ssize_t N = hv.shape[0]
    check_oh_shape(N, block, f, h, c)
    width = int(c) * int(f) ** int(h - 1)
    total = _sum_counts(hv, "hist")
    cdef Py_ssize_t k = (N + block - 1) // block
    cdef Py_ssize_t last = N - block * (k - 1)
    count = 0
    wL = width
    for L in range(1, h + 1):
        wL //= (c if L == 1 else f)
        count += (k - 1) * (-(-block // wL)) + (-(-last // wL))
    cdef const int64_t[::1] ns
    cdef const int64_t[::1] nh = vector(noise_h, "noise_h", np.int64, False)  # IN
    check_same_length("noise_h", nh.shape[0], "the real tree nodes", count)
    cdef const int64_t *nsp = NULL
    if k > 1:
        ns = vector(noise_s, "noise_s", np.int64, False)  # IN
        check_same_length("noise_s", ns.shape[0], "the S nodes (k - 1)", k - 1)
        nsp = &ns[0]
    threads = positive_count(threads, "threads")
    for name, var in (("var_s", var_s), ("var_h", var_h)):
        if not (var == 0 or OH_MIN_VARIANCE <= var <= 1 / OH_MIN_VARIANCE):
            raise ValueError(f"{name} must be 0 or in [{OH_MIN_VARIANCE}, {1 / OH_MIN_VARIANCE}] (others overflow "
                             f"the least squares weights or the sums of variances), got {var!r}")
    if in_noise:
        # the leaves' noise is the last N entries (the leaf level comes
        # last and has one node per bin): the upward pass reads each
        # block's noise before it writes the block's leaves in its place
        out = np.asarray(noise_h).view(np.float64)[count - N:]
    else:
        out = np.empty(N, dtype=np.float64)
    cdef double[::1] o = out  # OUT
    cdef _OHJob job = _OHJob()
    job.hist, job.N, job.block, job.f, job.h, job.c = &hv[0], N, block, f, h, c
    job.k = k
    job.noise_s, job.noise_h, job.var_s, job.var_h = nsp, &nh[0], var_s, var_h
    job.cum = &o[0]
    cdef double[::1] blocks = np.empty(7 * k, dtype=np.float64)  # zr, vr, xs, chain work, totals
    job.zr, job.vr, job.xs, job.work = &blocks[0], &blocks[k], &blocks[2 * k], &blocks[3 * k]
    job.tot = <int64_t *>&blocks[6 * k]
    # the inner nodes of every block after the upward pass (about 2/15 of a
    # word per bin at fan-out 16): the downward pass reads them, not the data
    cdef double[::1] inner = np.empty(max(1, int(k) * int(bf_oh_inner_doubles(<size_t>c, <size_t>f, <int>h))),
                                      dtype=np.float64)
    job.inner = &inner[0]
    nthreads = min(threads, k)
    per = -(-k // nthreads)
    ranges = [(i * per, min(k, (i + 1) * per)) for i in range(nthreads) if i * per < k]
    work = [np.empty(bf_oh_range_scratch_doubles(<size_t>c, <size_t>f, <int>h), dtype=np.float64)
            for _ in ranges]
    if len(ranges) == 1:
        job.up(0, k, work[0])
        job.chain()
        job.down(0, k, work[0])
        pool = None
    else:
        pool = ThreadPoolExecutor(max_workers=max(len(ranges), min(threads, -(-N // ISOTONIC_CHUNK))))
    try:
        if pool is not None:
            list(pool.map(lambda i: job.up(ranges[i][0], ranges[i][1], work[i]), range(len(ranges))))
            job.chain()
            list(pool.map(lambda i: job.down(ranges[i][0], ranges[i][1], work[i]), range(len(ranges))))
        if project and N > 1:
            if not isotonic_chunks(out[:N - 1], 0.0, float(total), ISOTONIC_CHUNK, pool, False):
                raise ValueError("the least squares estimates are not finite")  # not reached: see OH_MIN_VARIANCE
    finally:
        if pool is not None:
            pool.shutdown()
    if project:
        out[N - 1] = float(total)
    return out, total


cdef class _OHJob:
    """The validated arrays of one oh_estimate call, for its block phases on threads."""
    cdef const int64_t *hist
    cdef const int64_t *noise_s
    cdef const int64_t *noise_h
    cdef size_t N, block, f, c, k
    cdef int h
    cdef double var_s, var_h
    cdef double *cum
    cdef double *zr
    cdef double *vr
    cdef double *xs
    cdef double *work
    cdef int64_t *tot
    cdef double *inner

    def up(self, size_t b0, size_t b1, double[::1] scratch):
        cdef int status
        with nogil:
            status = bf_oh_up_range(self.hist, self.N, self.block, self.f, self.h, self.c, self.noise_h,
                                    self.var_h, b0, b1, self.zr, self.vr, self.tot, self.inner, self.cum,
                                    &scratch[0])
        raise_status(status)

    def chain(self):
        cdef int status
        with nogil:
            status = bf_oh_chain(self.tot, self.noise_s, self.var_s, self.k, self.zr, self.vr, self.xs,
                                 self.work)
        raise_status(status)

    def down(self, size_t b0, size_t b1, double[::1] scratch):
        with nogil:
            bf_oh_down_range(self.N, self.block, self.f, self.h, self.c, self.var_h, b0, b1, self.inner,
                             self.zr, self.xs, self.cum, &scratch[0])
