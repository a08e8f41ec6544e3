# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of DAWA's L1 partition over dyadic-length intervals
(csrc/dawa.h), used by mechanisms/data_dependent/dawa.py through mechanisms/data_dependent/_dawa_partition.py.

rank and sorted_vals describe x in ascending order: sorted_vals the values
sorted, rank[i] the position of x[i] among them (:func:`dawa_ranks` gives
both, ties by index; the reference kernels take rank as int64, the stream
as int32).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from ._common cimport vector, check_same_length, check_index_range
from ._rng cimport check_scale
from ._tree cimport _sum_counts

import math
import threading

import numpy as np


cdef tuple _sorted_counts(object x, object rank, object sorted_vals):
    """``x``, ``rank`` and ``sorted_vals`` as the kernels need them: int64
    vectors of one length, counts >= 0 whose total fits int64, ranks in [0, n)."""
    xa = vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xa.shape[0]
    ra = vector(rank, "rank", np.int64, False)  # IN
    sa = vector(sorted_vals, "sorted_vals", np.int64, False)  # IN
    check_same_length("rank", ra.shape[0], "x", n)
    check_same_length("sorted_vals", sa.shape[0], "x", n)
    _sum_counts(xa, "x")  # signs and an int64 total, one pass
    check_index_range(ra, "rank", 0, n)
    return xa, ra, sa


#: Most distinct values for which DawaStream counts per value (g, u).
FEW = BF_DAWA_FEW
#: Window lengths up to this are scanned directly (no bit tree).
DIRECT = BF_DAWA_DIRECT


def dawa_ranks(x):
    """(rank, sorted_vals) of non-negative counts x, by a stable sort.

    Parameters
    ----------
    x : ndarray of int64, shape (n,), n < 2**31, values >= 0  # IN

    Returns
    -------
    rank : ndarray of int32, shape (n,)
        The position of x[i] in sorted_vals (ties by index).
    sorted_vals : ndarray of int64, shape (n,)
        x in non-decreasing order.
    """
    cdef const int64_t[::1] xv = vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    if n >= 2**31:
        raise ValueError(f"x must have fewer than 2**31 values, got {n}")
    rank = np.empty(n, dtype=np.int32)
    sorted_vals = np.empty(n, dtype=np.int64)
    if n == 0:
        return rank, sorted_vals
    if np.asarray(xv).min() < 0:
        raise ValueError("x must hold non-negative counts")
    key = np.empty(n, dtype=np.int64)
    idx = np.empty(n, dtype=np.int32)
    idx2 = np.empty(n, dtype=np.int32)
    cdef int32_t[::1] rv = rank, iv = idx, i2v = idx2  # OUT / scratch
    cdef int64_t[::1] sv = sorted_vals, kv = key  # OUT / scratch
    with nogil:
        bf_dawa_ranks(&xv[0], <size_t>n, &rv[0], &sv[0], &kv[0], &iv[0], &i2v[0])
    return rank, sorted_vals


def dawa_n_intervals(Py_ssize_t n):
    """Number of candidate intervals of length 2, 4, .. <= n (the noise count)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return bf_dawa_n_intervals(<size_t>n)


cdef object _single_scores(object single_noise, Py_ssize_t n, double penalty):
    """max(0, noise) + penalty for each one-value bucket (a new array), or None."""
    if single_noise is None:
        return None
    a = np.array(vector(single_noise, "single_noise", np.float64, False), copy=True)
    check_same_length("single_noise", a.shape[0], "x", n)
    if n and not bool(np.isfinite(a).all()):
        raise ValueError("single_noise must be finite (no NaN or infinity)")
    np.maximum(a, 0.0, out=a)
    a += penalty
    return a


def dawa_partition(x, rank, sorted_vals, scores, double penalty, single_noise=None):
    """Least-score partition of x into dyadic-length buckets.

    Parameters
    ----------
    x, rank, sorted_vals : ndarray of int64, shape (n,)  # IN
    scores : ndarray of float64, shape (dawa_n_intervals(n),)  # IN/OUT
        The noise of each interval on entry, its score on return.
    penalty : float
        Added to every bucket's score.
    single_noise : ndarray of float64, shape (n,), or None  # IN
        The noise of each one-value bucket (its score: max(0, noise) +
        penalty); None scores them by the penalty alone.

    Returns
    -------
    starts : ndarray of int64
        First index of each bucket, increasing, starting at 0.
    """
    xa, ra, sa = _sorted_counts(x, rank, sorted_vals)
    cdef const int64_t[::1] xv = xa  # IN
    cdef const int64_t[::1] rv = ra  # IN
    cdef const int64_t[::1] sv = sa  # IN
    cdef Py_ssize_t n = xv.shape[0]
    cdef double[::1] sc = vector(scores, "scores", np.float64, True)  # IN/OUT
    check_same_length("scores", sc.shape[0], "the interval count", bf_dawa_n_intervals(<size_t>n))
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    fc = np.empty(n + 1, dtype=np.int64)
    fs = np.empty(n + 1, dtype=np.int64)
    best = np.empty(n + 1, dtype=np.float64)
    back = np.empty(n + 1, dtype=np.int64)
    starts = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] fcv = fc, fsv = fs, backv = back, stv = starts  # scratch / OUT
    cdef double[::1] bv = best  # scratch
    cdef double* scp = &sc[0] if sc.shape[0] > 0 else NULL
    single = _single_scores(single_noise, n, penalty)
    cdef const double[::1] sgv
    cdef const double *sgp = NULL
    if single is not None:
        sgv = single
        sgp = &sgv[0]
    cdef size_t m = 0
    with nogil:
        bf_dawa_partition(&xv[0], &rv[0], &sv[0], <size_t>n, penalty, scp, sgp,
                          &fcv[0], &fsv[0], &bv[0], &backv[0], &stv[0], &m)
    return starts[:m].copy()


def dawa_deviations(x, rank, sorted_vals, Py_ssize_t L):
    """sum |x_i - mean| over every window [s, s + L) of x (n - L + 1 values)."""
    xa, ra, sa = _sorted_counts(x, rank, sorted_vals)
    cdef const int64_t[::1] xv = xa  # IN
    cdef const int64_t[::1] rv = ra  # IN
    cdef const int64_t[::1] sv = sa  # IN
    cdef Py_ssize_t n = xv.shape[0]
    if L < 1 or L > n:
        raise ValueError(f"L must be in [1, len(x)] = [1, {n}], got {L}")
    fc = np.empty(n + 1, dtype=np.int64)
    fs = np.empty(n + 1, dtype=np.int64)
    dev = np.empty(n - L + 1, dtype=np.float64)
    cdef int64_t[::1] fcv = fc, fsv = fs  # scratch
    cdef double[::1] dv = dev  # OUT
    with nogil:
        bf_dawa_deviations(&xv[0], &rv[0], &sv[0], <size_t>n, <size_t>L,
                           &fcv[0], &fsv[0], &dv[0])
    return dev


cdef class DawaStream:
    """The DAWA partition's dynamic program in chunks of end points (dawa.h).

    Same result as :func:`dawa_partition` given the same noise, with O(n)
    memory: for every length L = 2^k (level k, 1 <= k <= n_levels) a
    sliding window computes the scores of the intervals ending in one chunk
    of end points into one row, then the dynamic program consumes the chunk.
    Each level longer than 64 keeps its window as a set of ranks (about
    n / 4 bytes, whatever the values).

    Parameters
    ----------
    x : ndarray of int64, shape (n,), 1 <= n < 2**31, values >= 0  # IN
    rank : ndarray of int32, shape (n,), or None  # IN
        A permutation of 0..n-1 with ``sorted_vals[rank] == x``.
    sorted_vals : ndarray of int64, shape (n,), or None  # IN
        The values of ``x`` in non-decreasing order.
    penalty : float, finite
    noise : ndarray of float64, shape (dawa_n_intervals(n),), or None  # IN
        Every interval's noise (finite), in the order of dawa_partition; or
        None: the noise of entries [j chunk, (j + 1) chunk) is drawn from
        the child stream seeded by ``keys[8 j : 8 j + 8]`` (scale t/s), as
        ``Generator.discrete_laplace`` draws a large batch.
    keys : ndarray of uint32, shape (8 * ceil(dawa_n_intervals(n) / chunk),) or None  # IN
    t, s : int
        The noise scale t/s (with ``keys``).
    chunk : int >= 1
        Child chunk length (with ``keys``).
    width : int >= 1
        End points per chunk of the dynamic program.
    g, u : ndarrays of int32, shape (n,), and int64, shape (D,), or None  # IN
        Instead of ``rank`` and ``sorted_vals`` (both None) when x has at
        most ``FEW`` distinct values: ``u`` those values, increasing, and
        ``u[g] == x``; each level then counts per distinct value.
    single_noise : ndarray of float64, shape (n,), or None  # IN
        As in :func:`dawa_partition`: the one-value buckets' noise.

    Every array is copied when the stream is made (the kernel trusts them).

    Levels of one chunk may run in several threads at once (each level in
    one thread); every call checks the order: ``levels(e0, e1, ks)`` for
    chunk [e0, e1) once the dynamic program reached e0, then ``dp(e0,
    e1)`` once every level has covered [e0, e1), then ``starts()``.
    """
    cdef bf_dawa_ctx ctx
    cdef bf_dawa_level *lv
    cdef readonly unsigned n_levels
    cdef readonly Py_ssize_t n
    cdef readonly Py_ssize_t width
    cdef object _x, _rank, _sv, _g, _u, _noise, _single, _keys, _words, _nbuf, _rows, _best, _back
    cdef object _next, _busy, _lock
    cdef Py_ssize_t _dp_next

    def __cinit__(self, x, rank, sorted_vals, double penalty, noise=None, keys=None, uint64_t t=1,
                  uint64_t s=1, Py_ssize_t chunk=1, Py_ssize_t width=1, g=None, u=None, single_noise=None):
        self.lv = NULL
        # every input is copied before it is checked: the kernel trusts what
        # it reads, so a caller changing its arrays later must not reach it
        cdef const int64_t[::1] xv = np.array(vector(x, "x", np.int64, False), copy=True)  # IN
        cdef Py_ssize_t n = xv.shape[0]
        if n < 1 or n >= 2**31:
            raise ValueError(f"x must have between 1 and 2**31 - 1 values, got {n}")
        xa = np.asarray(xv)
        _sum_counts(xv, "x")  # signs and an int64 total, one pass
        cdef const int32_t[::1] rv
        cdef const int64_t[::1] svv
        cdef const int32_t[::1] gv
        cdef const int64_t[::1] uv
        ra = sa = ga = ua = None
        if g is None and u is None:
            if rank is None or sorted_vals is None:
                raise ValueError("give rank and sorted_vals, or g and u")
            rv = np.array(vector(rank, "rank", np.int32, False), copy=True)  # IN
            svv = np.array(vector(sorted_vals, "sorted_vals", np.int64, False), copy=True)  # IN
            check_same_length("rank", rv.shape[0], "x", n)
            check_same_length("sorted_vals", svv.shape[0], "x", n)
            ra, sa = np.asarray(rv), np.asarray(svv)
            if n > 1 and not bool(np.all(sa[1:] >= sa[:n - 1])):
                raise ValueError("sorted_vals must be non-decreasing")
            check_index_range(ra, "rank", 0, n)
            seen = np.zeros(n, dtype=np.bool_)
            seen[ra] = True
            if not bool(seen.all()):
                raise ValueError("rank must be a permutation of 0..n-1")
            del seen
            if not np.array_equal(sa[ra], xa):
                raise ValueError("rank and sorted_vals must describe x: sorted_vals[rank] == x")
        else:
            if rank is not None or sorted_vals is not None or g is None or u is None:
                raise ValueError("give rank and sorted_vals, or g and u")
            gv = np.array(vector(g, "g", np.int32, False), copy=True)  # IN
            uv = np.array(vector(u, "u", np.int64, False), copy=True)  # IN
            check_same_length("g", gv.shape[0], "x", n)
            if not 1 <= uv.shape[0] <= BF_DAWA_FEW:
                raise ValueError(f"u must hold between 1 and {BF_DAWA_FEW} distinct values, got {uv.shape[0]}")
            ga, ua = np.asarray(gv), np.asarray(uv)
            if ua.size > 1 and not bool(np.all(ua[1:] > ua[:ua.size - 1])):
                raise ValueError("u must be strictly increasing")
            check_index_range(ga, "g", 0, ua.size)
            if not np.array_equal(ua[ga], xa):
                raise ValueError("g and u must describe x: u[g] == x")
        if not (math.isfinite(penalty) and penalty >= 0):
            raise ValueError(f"penalty must be finite and >= 0, got {penalty}")
        self._single = _single_scores(single_noise, n, penalty)
        if width < 1:
            raise ValueError(f"width must be >= 1, got {width}")
        cdef size_t N = bf_dawa_n_intervals(<size_t>n)
        cdef const double[::1] nv
        cdef const uint32_t[::1] kv
        self._x, self._rank, self._sv, self._g, self._u = xa, ra, sa, ga, ua
        self._noise = self._keys = None
        if noise is not None:
            if keys is not None:
                raise ValueError("give noise or keys, not both")
            nv = np.array(vector(noise, "noise", np.float64, False), copy=True)  # IN
            check_same_length("noise", nv.shape[0], "the interval count", N)
            if N and not bool(np.isfinite(np.asarray(nv)).all()):
                raise ValueError("noise must be finite (no NaN or infinity)")
            self._noise = np.asarray(nv)
            chunk = 1
        else:
            if keys is None:
                raise ValueError("give noise or keys")
            check_scale(t, s)
            if chunk < 1:
                raise ValueError(f"chunk must be >= 1, got {chunk}")
            kv = vector(keys, "keys", np.uint32, False)  # IN
            check_same_length("keys", kv.shape[0], "8 words per child chunk", 8 * ((N + chunk - 1) // chunk))
            self._keys = np.array(kv, copy=True)  # erased when the stream ends
        self.n, self.width = n, width
        self.n_levels = bf_dawa_n_levels(<size_t>n)
        cdef const double[::1] nref
        cdef const uint32_t[::1] kref
        cdef const int64_t[::1] xref = self._x
        cdef const int32_t[::1] iref
        cdef const int64_t[::1] vref
        self.ctx.x = &xref[0]
        self.ctx.rank = self.ctx.g = NULL
        self.ctx.sv = self.ctx.u = NULL
        self.ctx.D = 0
        if self._g is None:
            iref, vref = self._rank, self._sv
            self.ctx.rank = &iref[0]
            self.ctx.sv = &vref[0]
        else:
            iref, vref = self._g, self._u
            self.ctx.g = &iref[0]
            self.ctx.u = &vref[0]
            self.ctx.D = <size_t>self._u.size
        self.ctx.n = <size_t>n
        self.ctx.penalty = penalty
        self.ctx.noise = NULL
        self.ctx.single = NULL
        self.ctx.keys = NULL
        self.ctx.chunk = <size_t>chunk
        cdef const double[::1] sref
        if self._single is not None:
            sref = self._single
            self.ctx.single = &sref[0]
        self.ctx.t, self.ctx.s = t, s
        if self._noise is not None and N > 0:
            nref = self._noise
            self.ctx.noise = &nref[0]
        elif self._keys is not None and self._keys.size > 0:
            kref = self._keys
            self.ctx.keys = &kref[0]
        cdef unsigned L = self.n_levels
        cdef unsigned k
        cdef size_t wtot = 0
        for k in range(1, L + 1):
            wtot += bf_dawa_level_words(&self.ctx, (<size_t>1) << k)
        self._words = np.empty(max(wtot, 1), dtype=np.int64)  # zeroed by bf_dawa_level_init
        self._nbuf = np.zeros(L * chunk if self.ctx.noise == NULL else 1, dtype=np.int64)
        self._rows = np.zeros((max(L, 1), width), dtype=np.float64)
        self._best = np.zeros(n + 1, dtype=np.float64)
        self._back = np.zeros(n + 1, dtype=np.uint8)
        self.lv = <bf_dawa_level *>PyMem_Malloc(max(L, 1) * sizeof(bf_dawa_level))
        if self.lv == NULL:
            raise MemoryError()
        cdef int64_t[::1] wv = self._words
        cdef int64_t[::1] bv = self._nbuf
        wtot = 0
        for k in range(1, L + 1):
            bf_dawa_level_init(&self.ctx, &self.lv[k - 1], k, &wv[wtot],
                               &bv[(k - 1) * chunk] if self.ctx.noise == NULL else NULL)
            wtot += bf_dawa_level_words(&self.ctx, (<size_t>1) << k)
        self._next = [1] * L
        self._busy = [False] * L
        self._lock = threading.Lock()
        self._dp_next = 1

    def __dealloc__(self):
        if self.lv != NULL:
            PyMem_Free(self.lv)
            self.lv = NULL

    def __reduce__(self):
        raise TypeError("a DAWA stream cannot be pickled")

    def _erase(self):
        """Zero the child keys and the buffered noise."""
        if self._keys is not None:
            self._keys.fill(0)
        if self._nbuf is not None:
            self._nbuf.fill(0)

    def levels(self, Py_ssize_t e0, Py_ssize_t e1, ks):
        """Scores of the levels ``ks`` (ints in [1, n_levels]) for the end points [e0, e1)."""
        if not (1 <= e0 < e1 <= self.n + 1) or e1 - e0 > self.width:
            raise ValueError(f"need 1 <= e0 < e1 <= n + 1 = {self.n + 1} and e1 - e0 <= width = {self.width}, "
                             f"got e0 = {e0}, e1 = {e1}")
        ks = [int(k) for k in ks]
        cdef list mine = []
        with self._lock:
            if e0 != self._dp_next:
                raise ValueError(f"the dynamic program is at end point {self._dp_next}, not {e0}")
            for k in ks:
                if not 1 <= k <= self.n_levels:
                    raise ValueError(f"levels must lie in [1, {self.n_levels}], got {k}")
                if self._busy[k - 1] or self._next[k - 1] != e0 or k in mine:
                    raise ValueError(f"level {k} is not ready for end points [{e0}, {e1})")
                mine.append(k)
            for k in mine:
                self._busy[k - 1] = True
        cdef double[:, ::1] rows = self._rows
        cdef Py_ssize_t i, m = len(mine)
        cdef unsigned kk
        cdef int64_t[::1] karr = np.array(mine, dtype=np.int64)
        try:
            with nogil:
                for i in range(m):
                    kk = <unsigned>karr[i]
                    bf_dawa_level_scores(&self.ctx, &self.lv[kk - 1], <size_t>e0, <size_t>e1, &rows[kk - 1, 0])
        finally:
            with self._lock:
                for k in mine:
                    self._next[k - 1] = e1
                    self._busy[k - 1] = False

    def dp(self, Py_ssize_t e0, Py_ssize_t e1):
        """The dynamic program over the end points [e0, e1) (every level done there)."""
        with self._lock:
            if e0 != self._dp_next or not e0 < e1 <= self.n + 1:
                raise ValueError(f"the dynamic program is at end point {self._dp_next}, got [{e0}, {e1})")
            if any(self._busy) or any(nx != e1 for nx in self._next):
                raise ValueError(f"every level must have covered the end points [{e0}, {e1})")
            self._busy = [True] * len(self._busy)
        cdef double[:, ::1] rows = self._rows
        cdef double[::1] best = self._best
        cdef uint8_t[::1] back = self._back
        cdef const double *rp = &rows[0, 0]
        try:
            with nogil:
                bf_dawa_dp(&self.ctx, rp, <size_t>self.width, <size_t>e0, <size_t>e1, &best[0], &back[0])
        finally:
            with self._lock:
                self._busy = [False] * len(self._busy)
                self._dp_next = e1

    def starts(self):
        """Bucket starts of the least-score partition (after the last chunk)."""
        if self._dp_next != self.n + 1:
            raise ValueError(f"the dynamic program is at end point {self._dp_next}, not past {self.n}")
        cdef uint8_t[::1] back = self._back
        cdef size_t m = 0, e = <size_t>self.n
        with nogil:
            while e > 0:  # the number of buckets, to allocate exactly them
                e -= (<size_t>1) << back[e]
                m += 1
        out = np.empty(m, dtype=np.int64)
        cdef int64_t[::1] ov = out
        with nogil:
            bf_dawa_backtrack(<size_t>self.n, &back[0], &ov[0])
        self._erase()
        return out
