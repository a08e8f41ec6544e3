# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the kernels that draw their own noise (csrc/tree.h,
csrc/transform.h, the ``*_streams`` functions), used by the ordered,
ordered hierarchical and transformed mechanisms.

A release's noise is cut into chunks whose length depends only on public
parameters (:data:`STREAM_CELLS`, and for OH the block width); chunk g
draws from its own ChaCha20 generator, stream g of a 256-bit key
(csrc/csprng.h, bf_rng_init_stream) that the caller takes from its
:class:`~blowfish_privacy.Generator` once per release.  Each thread draws
the noise of its chunks just before it reads their values, so noise and
data pass through the cache together, and the result is the same for any
number of threads.  :func:`stream_seed` gives the 32-byte seed of a
stream, so that tests can replay the draws with a plain seeded stream.
"""

from libc.stdint cimport int64_t, uint32_t, uint64_t

from ._common cimport BF_OK, raise_status, check_overflow, vector, check_same_length
from ._rng cimport check_scale
from ._tree cimport (bf_noisy_cumulative_streams, bf_oh_noise, bf_oh_up_streams, bf_oh_stream_noise_words,
                     bf_oh_chain,
                     bf_oh_down_range, bf_oh_range_scratch_doubles, bf_oh_inner_doubles,
                     _sum_counts, check_oh_shape)
from ._isotonic cimport isotonic_chunks
from ._common cimport positive_count
from ._transform cimport bf_add_nonroot_streams, bf_line_noisy_counts_streams

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _rng
from ._isotonic import ISOTONIC_CHUNK
from ._tree import OH_MIN_VARIANCE

#: Values per noise stream of the ordered and transformed kernels, and the
#: least number of bins per stream of the OH kernel (whole blocks): fixed,
#: so that the draws do not depend on the number of threads; large enough
#: that a stream's set-up (one ChaCha20 block and a first refill) is
#: negligible, small enough that a chunk's noise and values stay in cache.
STREAM_CELLS = 1 << 14


def stream_seed(key, uint64_t index):
    """The 32-byte seed of stream ``index`` of ``key`` (csrc/csprng.h, bf_rng_init_stream).

    ``ChaChaStream(stream_seed(key, g))`` draws exactly what the kernels
    draw from stream g: the first 32 bytes of the ChaCha20 block of ``key``
    at counter 0 with the nonce words (g mod 2^32, g // 2^32 + 2^31).
    """
    words = _key_words(key)
    if index >= (<uint64_t>1) << 63:
        raise ValueError(f"index must be below 2**63, got {index}")
    nonce = np.array([index & 0xFFFFFFFF, (index >> 32) | 0x80000000], dtype="<u4").tobytes()
    return _rng.chacha20_blocks8(words.astype("<u4").tobytes(), 0, nonce)[:32]


cdef object _key_words(object key):
    """``key`` (32 bytes, or 8 uint32 words) as 8 native uint32 words."""
    if isinstance(key, (bytes, bytearray)):
        if len(key) != 32:
            raise ValueError(f"key must be 32 bytes, got {len(key)}")
        return np.frombuffer(bytes(key), dtype="<u4").astype(np.uint32)
    arr = np.asarray(key)
    if arr.dtype != np.uint32 or arr.shape != (8,):
        raise ValueError("key must be 32 bytes or a uint32 array of shape (8,)")
    return np.ascontiguousarray(arr)


#: Ranges of chunks per thread: the pool hands them out as threads free up,
#: so a thread slowed by other processes delays the others less.
TASKS_PER_THREAD = 4


cdef object _ranges(Py_ssize_t count, object threads):
    """``count`` chunks cut into contiguous ranges: one for one thread, else
    up to TASKS_PER_THREAD per thread (the result does not depend on it)."""
    nranges = max(1, min(threads * TASKS_PER_THREAD if threads > 1 else 1, count))
    per = (count + nranges - 1) // nranges
    return [(i * per, min(count, (i + 1) * per)) for i in range(nranges) if i * per < count]


cdef object _pool(object ranges, object threads):
    """A pool of min(threads, len(ranges)) threads, or None for one."""
    workers = min(threads, len(ranges))
    return ThreadPoolExecutor(max_workers=workers) if workers > 1 else None


cdef object _per_thread(object size, object dtype):
    """A function giving each calling thread its own scratch array (made once)."""
    local = threading.local()

    def get():
        arr = getattr(local, "arr", None)
        if arr is None:
            arr = local.arr = np.empty(size, dtype=dtype)
        return arr

    return get


cdef object _run(object fn, object ranges, object pool):
    if pool is None:
        return [fn(r) for r in ranges]
    return list(pool.map(fn, ranges))


cdef void _run_checked(object fn, object ranges, object pool, str what) except *:
    """``_run``, then the pool (if any) shut down, then an OverflowError naming ``what`` if a status says so."""
    try:
        statuses = _run(fn, ranges, pool)
    finally:
        if pool is not None:
            pool.shutdown()
    for st in statuses:
        check_overflow(st, what)


cdef object _chunk_length(object chunk):
    return STREAM_CELLS if chunk is None else positive_count(chunk, "chunk")


cdef object _bases(const int64_t[::1] x, Py_ssize_t chunk, Py_ssize_t nchunks):
    """base[g] = x[0] + ... + x[g chunk - 1] (counts whose total fits int64)."""
    xa = np.asarray(x)
    base = np.zeros(nchunks, dtype=np.int64)
    if nchunks > 1:
        np.cumsum(np.add.reduceat(xa[:(nchunks - 1) * chunk], np.arange(0, (nchunks - 1) * chunk, chunk)),
                  out=base[1:])
    return base


def ordered_cumulative_streams(hist, key, uint64_t t, uint64_t s, threads=1, chunk=None):
    """The ordered mechanism's estimate with its noise drawn in the kernel.

    hist : int64, shape (N,), non-negative, total n fits int64  # IN
    key : 32 bytes or uint32 (8,): the release's key
    t, s : the discrete Laplace scale t/s of every cumulative count

    Returns ``(cum, n)`` as ``_tree.ordered_cumulative(hist, noise)`` with
    noise[i] drawn from stream i // chunk of ``key`` (one fill per chunk of
    ``chunk`` counts, default :data:`STREAM_CELLS`, the last N - 1 - ...
    shorter), for any ``threads``.  OverflowError if a noisy count does not
    fit int64.
    """
    cdef const int64_t[::1] hv = vector(hist, "hist", np.int64, False)  # IN
    cdef Py_ssize_t N = hv.shape[0]
    if N < 1:
        raise ValueError("hist must have at least one bin")
    total = _sum_counts(hv, "hist")
    check_scale(t, s)
    threads = positive_count(threads, "threads")
    cdef Py_ssize_t clen = _chunk_length(chunk)
    cdef const uint32_t[::1] kw = _key_words(key)
    if N == 1:
        return np.array([float(total)]), total
    cdef Py_ssize_t m = N - 1, nchunks = (m + clen - 1) // clen
    cdef const int64_t[::1] base = _bases(hv[:m], clen, nchunks)
    out = np.empty(N, dtype=np.float64)
    cdef double[::1] o = out  # OUT
    ranges = _ranges(nchunks, threads)
    pool = _pool(ranges, threads)

    def work(r):
        cdef size_t g0 = r[0], g1 = r[1]
        cdef int status
        with nogil:
            status = bf_noisy_cumulative_streams(&hv[0], <size_t>m, <size_t>clen, &kw[0], t, s, g0, g1,
                                                 &base[0], &o[0])
        return status

    try:
        statuses = _run(work, ranges, pool)
        for st in statuses:
            check_overflow(st, "a noisy cumulative count")
        isotonic_chunks(out[:m], 0.0, float(total), ISOTONIC_CHUNK, pool, False)
    finally:
        if pool is not None:
            pool.shutdown()
    out[m] = float(total)
    return out, total


def oh_cumulative_streams(hist, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c, key,
                          Py_ssize_t group, scale_s, scale_h, double var_s, double var_h, threads=1):
    """``_tree.oh_cumulative`` with every node's noise drawn in the kernel (csrc/tree.h, bf_oh_noise).

    hist : int64, shape (N,), non-negative, total fits int64  # IN
    key : 32 bytes or uint32 (8,): the release's key
    group : blocks per stream (>= 1; more than the blocks: one stream)
    scale_s, scale_h : (t, s) scales of the S nodes (None when k == 1) and
    of the tree nodes.

    Returns ``(cum, n)``, bit-identical to ``_tree.oh_cumulative`` fed with
    the noise that the streams draw (stream g: one fill of the S nodes of
    its blocks b < k - 1, then one fill of the tree nodes of its blocks,
    block by block, level 1 first, each level's real nodes), for any
    ``threads``.  OverflowError if a noisy value does not fit int64.
    """
    cdef const int64_t[::1] hv = vector(hist, "hist", np.int64, False)  # IN
    cdef Py_ssize_t N = hv.shape[0]
    check_oh_shape(N, block, f, h, c)
    if group < 1:
        raise ValueError(f"group must be >= 1, got {group}")
    cdef Py_ssize_t k = (N + block - 1) // block
    if group > k:  # one stream holds every block: the same draws, and no overflow in the sizes below
        group = k
    # the noise scratch of one stream, in Python integers (a hostile shape must not wrap a size_t)
    noise_words = int(bf_oh_stream_noise_words(<size_t>c, <size_t>f, <int>h, 1)) * int(group)
    if noise_words > (1 << 60):
        raise MemoryError(f"a stream of {group} blocks needs {noise_words} noise words; give a smaller group")
    cdef bf_oh_noise src
    if k > 1:
        if scale_s is None:
            raise ValueError("scale_s must be given when there is more than one block")
        check_scale(scale_s[0], scale_s[1])
        src.t_s, src.s_s = scale_s[0], scale_s[1]
    else:
        src.t_s = src.s_s = 1
    check_scale(scale_h[0], scale_h[1])
    src.t_h, src.s_h = scale_h[0], scale_h[1]
    for name, var in (("var_s", var_s), ("var_h", var_h)):
        if not (var == 0 or OH_MIN_VARIANCE <= var <= 1 / OH_MIN_VARIANCE):
            raise ValueError(f"{name} must be 0 or in [{OH_MIN_VARIANCE}, {1 / OH_MIN_VARIANCE}], got {var!r}")
    threads = positive_count(threads, "threads")
    kw = _key_words(key)
    cdef Py_ssize_t i
    for i in range(8):
        src.key[i] = kw[i]
    src.group = group
    total = _sum_counts(hv, "hist")
    out = np.empty(N, dtype=np.float64)
    cdef double[::1] o = out  # OUT
    cdef double[::1] blocks = np.empty(7 * k, dtype=np.float64)  # zr, vr, xs, chain work, totals
    cdef int64_t[::1] noise_s = np.zeros(max(k - 1, 1), dtype=np.int64)
    cdef double *zr = &blocks[0]
    cdef double *vr = &blocks[k]
    cdef double *xs = &blocks[2 * k]
    cdef double *cwork = &blocks[3 * k]
    cdef int64_t *tot = <int64_t *>&blocks[6 * k]
    cdef double[::1] inner = np.empty(max(1, int(k) * int(bf_oh_inner_doubles(<size_t>c, <size_t>f, <int>h))),
                                      dtype=np.float64)
    cdef Py_ssize_t nstreams = (k + group - 1) // group
    granges = _ranges(nstreams, threads)
    branges = [(a * group, min(k, b * group)) for a, b in granges]
    scratch = _per_thread(bf_oh_range_scratch_doubles(<size_t>c, <size_t>f, <int>h), np.float64)
    noise_buf = _per_thread(noise_words, np.int64)
    nworkers = min(threads, max(len(granges), (N + ISOTONIC_CHUNK - 1) // ISOTONIC_CHUNK))
    pool = ThreadPoolExecutor(max_workers=nworkers) if nworkers > 1 else None

    def up(i):
        cdef size_t g0 = granges[i][0], g1 = granges[i][1]
        cdef double[::1] sc = scratch()
        cdef int64_t[::1] nb = noise_buf()
        cdef int status
        with nogil:
            status = bf_oh_up_streams(&hv[0], <size_t>N, <size_t>block, <size_t>f, <int>h, <size_t>c, &src,
                                      var_h, g0, g1, &noise_s[0], zr, vr, tot, &inner[0], &o[0], &sc[0],
                                      &nb[0])
        return status

    def down(i):
        cdef size_t b0 = branges[i][0], b1 = branges[i][1]
        cdef double[::1] sc = scratch()
        with nogil:
            bf_oh_down_range(<size_t>N, <size_t>block, <size_t>f, <int>h, <size_t>c, var_h, b0, b1,
                             &inner[0], zr, xs, &o[0], &sc[0])

    cdef int status
    try:
        for st in _run(up, range(len(granges)), pool if len(granges) > 1 else None):
            raise_status(st)
        with nogil:
            status = bf_oh_chain(tot, &noise_s[0], var_s, <size_t>k, zr, vr, xs, cwork)
        raise_status(status)
        _run(down, range(len(branges)), pool if len(branges) > 1 else None)
        if N > 1 and not isotonic_chunks(out[:N - 1], 0.0, float(total), ISOTONIC_CHUNK, pool, False):
            raise ValueError("the least squares estimates are not finite")  # not reached: see OH_MIN_VARIANCE
    finally:
        if pool is not None:
            pool.shutdown()
        for i in range(8):
            src.key[i] = 0
    out[N - 1] = float(total)
    return out, total


def line_noisy_counts_streams(x, key, uint64_t t, uint64_t s, threads=1, chunk=None):
    """``_transform.line_noisy_counts`` with its noise drawn in the kernel.

    x : int64, shape (n,), non-negative, total fits int64  # IN
    key : 32 bytes or uint32 (8,)

    noise[v] (v < n - 1) is drawn from stream v // chunk of ``key`` (one
    fill per chunk of ``chunk`` vertices, default :data:`STREAM_CELLS`, the
    last chunk's last vertex, the root, without noise); the same result for
    any ``threads``.  Returns int64 (n,).
    """
    cdef const int64_t[::1] xv = vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    if n < 1:
        raise ValueError("x must have at least one value")
    _sum_counts(xv, "x")
    check_scale(t, s)
    threads = positive_count(threads, "threads")
    cdef Py_ssize_t clen = _chunk_length(chunk)
    cdef const uint32_t[::1] kw = _key_words(key)
    cdef Py_ssize_t nchunks = (n + clen - 1) // clen
    cdef const int64_t[::1] base = _bases(xv, clen, nchunks)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    ranges = _ranges(nchunks, threads)
    ends = np.zeros((len(ranges), 2), dtype=np.int64)
    cdef int64_t[:, ::1] ev = ends
    pool = _pool(ranges, threads)

    def work(i):
        cdef size_t g0 = ranges[i][0], g1 = ranges[i][1]
        cdef Py_ssize_t j = i
        cdef int status
        with nogil:
            status = bf_line_noisy_counts_streams(&xv[0], <size_t>n, <size_t>clen, &kw[0], t, s, g0, g1,
                                                  &base[0], &o[0], &ev[j, 0])
        return status

    _run_checked(work, range(len(ranges)), pool, "a noisy count")
    # the first vertex of each range after the first: a[v0] - a[v0 - 1]
    for i in range(1, len(ranges)):
        d = int(ends[i, 0]) - int(ends[i - 1, 1])
        if not -2**63 <= d < 2**63:
            raise OverflowError("a noisy count does not fit a signed 64-bit integer")
        out[ranges[i][0] * clen] = d
    return out


def add_nonroot_streams(xg, parent, key, uint64_t t, uint64_t s, threads=1, chunk=None):
    """``_transform.add_nonroot`` with its noise drawn in the kernel, in place.

    xg : int64, shape (n,), writeable  # IN/OUT
    parent : int64, shape (n,), -1 at the root  # IN
    key : 32 bytes or uint32 (8,)

    The noise of the vertices with a parent in chunk g (``chunk`` vertices,
    default :data:`STREAM_CELLS`) is one fill from stream g of ``key``, in
    vertex order; the same result for any ``threads``.
    """
    cdef int64_t[::1] xv = vector(xg, "xg", np.int64, True)  # IN/OUT
    cdef const int64_t[::1] pv = vector(parent, "parent", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    check_same_length("parent", pv.shape[0], "xg", n)
    check_scale(t, s)
    threads = positive_count(threads, "threads")
    cdef Py_ssize_t clen = _chunk_length(chunk)
    cdef const uint32_t[::1] kw = _key_words(key)
    if n == 0:
        return
    ranges = _ranges((n + clen - 1) // clen, threads)
    scratch = _per_thread(min(clen, n), np.int64)
    pool = _pool(ranges, threads)

    def work(i):
        cdef size_t g0 = ranges[i][0], g1 = ranges[i][1]
        cdef int64_t[::1] sc = scratch()
        cdef int status
        with nogil:
            status = bf_add_nonroot_streams(&xv[0], &pv[0], <size_t>n, <size_t>clen, &kw[0], t, s, g0, g1,
                                            &sc[0])
        return status

    _run_checked(work, range(len(ranges)), pool, "a noisy subtree count")
