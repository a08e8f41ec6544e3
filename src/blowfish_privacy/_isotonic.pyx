# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of csrc/isotonic.h: weighted isotonic regression (pool-adjacent-violators) clipped to a box, in
place, and chunked on threads (the same result for every thread count)."""


from libc.stdint cimport uint64_t

from ._common cimport vector, c_array, positive_count

from concurrent.futures import ThreadPoolExecutor

import numpy as np


cdef void check_finite(const double[::1] y, str name) except *:
    """ValueError at the first NaN or infinity of ``y``."""
    cdef size_t n = <size_t>y.shape[0], bad = 0
    if n > 0:
        with nogil:
            bad = bf_first_nonfinite(&y[0], n)
    if bad < n:
        raise ValueError(f"{name} must be finite (no NaN or infinity), got a value that is not")


#: Chunk length of :func:`isotonic_unit_chunked`: fixed, so that the result
#: does not depend on the number of threads.
ISOTONIC_CHUNK = 1 << 20


def isotonic_unit_chunked(y, double lower, double upper, threads=1, chunk=None):
    """Unit-weight isotonic regression clipped to [lower, upper], in place, chunk stacks on threads.

    y : float64, shape (n,), finite, writeable  # IN/OUT

    The PAVA blocks of chunks of :data:`ISOTONIC_CHUNK` values (``chunk``
    overrides it, for tests) are built independently, on up to ``threads``
    threads when the chunk length is a multiple of 64, then joined across
    the chunk boundaries and written out on the threads
    (csrc/isotonic.h, bf_pava_bits_*; scratch: one bit per value).  Equal
    to ``isotonic(y, None, lower, upper)`` up to the rounding of pooled sums
    (exactly for integer-valued y), and the same for every ``threads``.
    y is checked (finite, chunk by chunk on the threads) before anything is
    written.
    """
    cdef double[::1] yv = vector(y, "y", np.float64, True)  # IN/OUT
    cdef Py_ssize_t n = yv.shape[0]
    if not (lower <= upper):
        raise ValueError(f"lower must be <= upper, got lower = {lower}, upper = {upper}")
    threads = positive_count(threads, "threads")
    chunk = ISOTONIC_CHUNK if chunk is None else positive_count(chunk, "chunk")
    if n == 0:
        return
    isotonic_threads(np.asarray(yv), lower, upper, threads, chunk, True)


cdef bint isotonic_threads(object yarr, double lower, double upper, object threads, Py_ssize_t clen,
                            bint scan_first) except -1:
    """:func:`isotonic_chunks` on a pool of up to ``threads`` threads (one per chunk at most)."""
    nthreads = min(threads, -(-yarr.shape[0] // clen))
    pool = ThreadPoolExecutor(max_workers=nthreads) if nthreads > 1 else None
    try:
        return isotonic_chunks(yarr, lower, upper, clen, pool, scan_first)
    finally:
        if pool is not None:
            pool.shutdown()


cdef bint isotonic_chunks(object yarr, double lower, double upper, Py_ssize_t clen,
                           object pool, bint scan_first) except -1:
    """The chunked regression of ``yarr`` in place (one bit of scratch per value).

    With ``scan_first`` y is scanned for NaN and infinities before anything
    is written (ValueError); otherwise the stacks' own pass notices them
    and False is returned (y is then overwritten with meaningless values).
    Chunks share words of the bitmap unless ``clen`` is a multiple of 64:
    their stacks then run one after another.
    """
    cdef double[::1] yv = yarr
    cdef Py_ssize_t n = yv.shape[0]
    bits_arr = np.zeros((n + 63) // 64, dtype=np.uint64)
    cdef uint64_t[::1] bits = bits_arr
    starts = list(range(0, n, clen))
    finite = [True] * len(starts)

    def check(i):
        cdef double[::1] ys = yarr[starts[i]:starts[i] + clen]
        cdef size_t bad
        with nogil:
            bad = bf_first_nonfinite(&ys[0], <size_t>ys.shape[0])
        finite[i] = bad == <size_t>ys.shape[0]

    def stack(i):
        cdef size_t c0 = starts[i], c1 = min(starts[i] + clen, n)
        cdef int nonfinite = 0
        with nogil:
            bf_pava_bits_stack(&yv[0], &bits[0], c0, c1, NULL if scan_first else &nonfinite)
        finite[i] = not nonfinite

    serial = lambda fn, items: [fn(i) for i in items]  # noqa: E731
    run = serial if pool is None else (lambda fn, items: list(pool.map(fn, items)))
    if scan_first:
        run(check, range(len(starts)))
        if not all(finite):
            raise ValueError("y must be finite (no NaN or infinity), got a value that is not")
    (run if clen % 64 == 0 else serial)(stack, range(len(starts)))
    if not all(finite):
        return False
    # pool across the chunk boundaries (serial, touching only the pooled
    # blocks), then write the means between block starts near the chunk
    # starts, in parallel
    heads_arr = np.empty(len(starts) + 1, dtype=np.uintp)
    cdef size_t[::1] heads = heads_arr
    cdef size_t nheads
    with nogil:
        nheads = bf_pava_bits_join(&yv[0], &bits[0], <size_t>n, <size_t>clen, &heads[0])
    bounds = [int(x) for x in heads_arr[:nheads]] + [int(n)]

    def fill(j):
        cdef size_t lo = bounds[j], hi = bounds[j + 1]
        with nogil:
            bf_pava_bits_fill(&yv[0], &bits[0], lo, hi, lower, upper)

    run(fill, range(nheads))
    return True


def isotonic_inplace(y, double lower, double upper):
    """Unit-weight isotonic regression clipped to [lower, upper], in place.

    y : float64, shape (n,), finite, writeable  # IN/OUT
    Bit-identical to ``isotonic(y, None, lower, upper)``.
    """
    cdef double[::1] yv = vector(y, "y", np.float64, True)  # IN/OUT
    cdef Py_ssize_t n = yv.shape[0]
    if not (lower <= upper):
        raise ValueError(f"lower must be <= upper, got lower = {lower}, upper = {upper}")
    if n == 0:
        return
    check_finite(yv, "y")
    cdef double[::1] block_weight = np.empty(n, dtype=np.float64)
    with nogil:
        bf_isotonic_unit_inplace(&yv[0], &block_weight[0], <size_t>n, lower, upper)


def isotonic(y, weights=None, double lower=-np.inf, double upper=np.inf):
    """Weighted isotonic (non-decreasing) regression, clipped to a box.

    Pool-adjacent-violators in O(n) with one preallocated stack of blocks.

    Parameters
    ----------
    y : array_like of float64, shape (n,)  # IN
        Finite values (converted to a C-contiguous float64 array).
    weights : array_like of float64, shape (n,), optional  # IN
        Finite positive weights; None for unit weights.
    lower, upper : float
        Bounds, ``lower <= upper`` (infinite bounds allowed).

    Returns
    -------
    out : ndarray of float64, shape (n,)
        The minimiser of ``sum(weights * (out - y)**2)`` over non-decreasing
        sequences with ``lower <= out <= upper``: the isotonic regression
        of ``y`` clipped to ``[lower, upper]``.

    Raises
    ------
    ValueError
        If ``y`` is not one-dimensional or holds NaN or infinity, ``weights``
        has another length or a non-positive or non-finite value, or
        ``lower > upper`` (or either is NaN).
    """
    ya = c_array(y, "y", np.float64)
    if ya.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {ya.shape}")
    cdef const double[::1] yv = ya  # IN
    cdef Py_ssize_t n = yv.shape[0]
    cdef const double[::1] wv  # IN
    cdef const double *wp = NULL
    cdef size_t bad
    if weights is not None:
        wa = c_array(weights, "weights", np.float64)
        if wa.ndim != 1 or wa.shape[0] != n:
            raise ValueError(f"weights must have the shape of y ({n},), got {wa.shape}")
        wv = wa
        if n > 0:
            with nogil:
                bad = bf_first_nonpositive(&wv[0], <size_t>n)
            if bad < <size_t>n:
                raise ValueError(
                    "weights must be finite and > 0, got a value that is not")
            wp = &wv[0]
    if not (lower <= upper):
        raise ValueError(f"lower must be <= upper, got lower = {lower}, upper = {upper}")
    out = np.empty(n, dtype=np.float64)
    if n == 0:
        return out
    cdef double[::1] o = out  # OUT
    check_finite(yv, "y")
    # Scratch from numpy: large arrays get transparent huge pages.
    cdef double[::1] block_weight = np.empty(n, dtype=np.float64)
    cdef size_t[::1] block_end
    cdef size_t *end_ptr = NULL
    if wp != NULL:
        block_end = np.empty(n, dtype=np.uintp)
        end_ptr = &block_end[0]
    with nogil:
        bf_isotonic(&yv[0], wp, &o[0], &block_weight[0], end_ptr, <size_t>n, lower, upper)
    return out
