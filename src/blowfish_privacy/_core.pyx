# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the C core.

The C functions trust their inputs; this module is what makes every call
safe by construction: arrays reach C only aligned, C-contiguous and
native-endian (inputs are copied once when they are not; outputs must be),
indices are checked to lie in range, sizes and the integer ranges that C
arithmetic needs are checked (OverflowError when a result could not fit
int64), and every loop is bounded.  It releases the GIL around every kernel
and turns C status codes into Python exceptions.  Argument checks with user-facing messages live in the
Python modules that call these (noise.py, mechanisms/).
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from cpython.mem cimport PyMem_Free, PyMem_Malloc

import math
import threading

import numpy as np

MAX_SCALE_PART = <uint64_t>BF_DLAP_MAX
RNG_BUFFER_WORDS = BF_RNG_BUFWORDS


cdef inline void _raise_status(int status) except *:
    if status == BF_ERR_ENTROPY:
        raise OSError("the operating system did not provide entropy for the secure generator")
    if status == BF_ERR_OVERFLOW:
        raise OverflowError("a noisy value does not fit a signed 64-bit integer")


cdef inline void _check_scale(uint64_t t, uint64_t s) except *:
    if t < 1 or s < 1 or t > BF_DLAP_MAX or s > BF_DLAP_MAX:
        raise ValueError(
            f"scale numerator and denominator must lie in [1, {BF_DLAP_MAX}], got {t}/{s}")


cdef class ChaChaStream:
    """A ChaCha20 keystream generator (csrc/csprng.h).

    ``ChaChaStream(None)`` is keyed from the operating system and re-keys
    after fork; ``ChaChaStream(seed)`` with 32 bytes is reproducible.  One
    lock per stream serialises callers from several threads.
    """

    cdef bf_rng rng
    cdef object _lock

    def __cinit__(self, seed=None):
        cdef const uint8_t[::1] key
        self._lock = threading.Lock()
        if seed is None:
            _raise_status(bf_rng_init_secure(&self.rng))
        else:
            if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
                raise TypeError("seed must be 32 bytes")
            key = bytes(seed)
            bf_rng_init_seeded(&self.rng, &key[0])

    def __dealloc__(self):
        memset(&self.rng, 0, sizeof(bf_rng))

    def __reduce__(self):
        raise TypeError("a random stream cannot be pickled: a copy would repeat its output")

    @property
    def secure(self):
        return bool(self.rng.secure)

    def random_raw(self, Py_ssize_t n):
        """``n`` raw keystream words as a uint32 array of shape (n,)."""
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        out = np.empty(n, dtype=np.uint32)
        cdef uint32_t[::1] o = out  # OUT
        cdef int status
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK and n > 0:
                    bf_rng_fill_u32(&self.rng, &o[0], <size_t>n)
        _raise_status(status)
        return out

    def uniform(self, uint64_t bound, Py_ssize_t n):
        """``n`` exactly uniform integers on [0, bound) as uint64, shape (n,)."""
        if bound < 1:
            raise ValueError(f"bound must be >= 1, got {bound}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        out = np.empty(n, dtype=np.uint64)
        cdef uint64_t[::1] o = out  # OUT
        cdef Py_ssize_t i
        cdef int status
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK:
                    for i in range(n):
                        o[i] = bf_rng_uniform(&self.rng, bound)
        _raise_status(status)
        return out

    def bernoulli_exp(self, uint64_t num, uint64_t den, Py_ssize_t n):
        """``n`` draws of Bernoulli(exp(-num/den)) as uint8, shape (n,)."""
        if den < 1:
            raise ValueError(f"den must be >= 1, got {den}")
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        out = np.empty(n, dtype=np.uint8)
        cdef uint8_t[::1] o = out  # OUT
        cdef Py_ssize_t i
        cdef int status
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK:
                    for i in range(n):
                        o[i] = <uint8_t>bf_bernoulli_exp(&self.rng, num, den)
        _raise_status(status)
        return out

    def discrete_laplace(self, uint64_t t, uint64_t s, Py_ssize_t n):
        """``n`` discrete Laplace draws of scale t/s as int64, shape (n,)."""
        _check_scale(t, s)
        if n < 0:
            raise ValueError(f"n must be >= 0, got {n}")
        out = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] o = out  # OUT
        cdef int status
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK and n > 0:
                    bf_discrete_laplace_fill(&self.rng, t, s, &o[0], <size_t>n)
        _raise_status(status)
        return out

    def fill_discrete_laplace(self, uint64_t t, uint64_t s, out):
        """Write discrete Laplace draws of scale t/s into ``out`` (int64, (n,))."""
        _check_scale(t, s)
        cdef int64_t[::1] ov = _vector(out, "out", np.int64, True)  # OUT
        cdef Py_ssize_t n = ov.shape[0]
        cdef int status
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK and n > 0:
                    bf_discrete_laplace_fill(&self.rng, t, s, &ov[0], <size_t>n)
        _raise_status(status)

    def add_discrete_laplace(self, values, uint64_t t, uint64_t s):
        """``values + noise`` as a new int64 array of the same length.

        values : int64, shape (n,)  # IN (copied if misaligned or strided)
        The noise vector is drawn completely before ``values`` is read.
        """
        _check_scale(t, s)
        cdef const int64_t[::1] vv = _vector(values, "values", np.int64, False)  # IN
        cdef Py_ssize_t n = vv.shape[0]
        out = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] o = out  # OUT
        cdef int status = BF_OK
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK and n > 0:
                    status = bf_discrete_laplace_add(&self.rng, t, s, &vv[0], &o[0], <size_t>n)
        _raise_status(status)
        return out


def add_int64_checked(a, b):
    """``b[:] = a + b`` in place, int64, shape (n,); OverflowError if a sum
    does not fit (then ``b`` holds no release)."""
    cdef const int64_t[::1] av = _vector(a, "a", np.int64, False)  # IN
    cdef int64_t[::1] bv = _vector(b, "b", np.int64, True)  # IN/OUT
    if av.shape[0] != bv.shape[0]:
        raise ValueError(f"a and b must have the same length, got {av.shape[0]} and {bv.shape[0]}")
    cdef Py_ssize_t n = av.shape[0]
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_add_int64_checked(&av[0], &bv[0], &bv[0], <size_t>n)
    _raise_status(status)


def chacha20_block(bytes key, uint64_t counter, bytes nonce):
    """One RFC 8439 ChaCha20 block: 32-byte key, 32-bit counter, 12-byte nonce.

    Returns the 64-byte keystream block (serialised little-endian).  For
    test vectors; the generator never uses this path.
    """
    if len(key) != 32 or len(nonce) != 12:
        raise ValueError("key must be 32 bytes and nonce 12 bytes")
    if counter > 0xFFFFFFFF:
        raise ValueError("counter must fit 32 bits")
    cdef uint32_t state[16]
    cdef uint32_t out[16]
    k = np.frombuffer(key, dtype="<u4")
    nn = np.frombuffer(nonce, dtype="<u4")
    state[0] = 0x61707865u
    state[1] = 0x3320646eu
    state[2] = 0x79622d32u
    state[3] = 0x6b206574u
    for i in range(8):
        state[4 + i] = int(k[i])
    state[12] = <uint32_t>counter
    for i in range(3):
        state[13 + i] = int(nn[i])
    bf_chacha20_block(state, out)
    return np.array([out[i] for i in range(16)], dtype="<u4").tobytes()


def chacha20_blocks8(bytes key, uint64_t counter, bytes nonce):
    """Eight consecutive blocks from the lane-parallel kernel (512 bytes).

    Same layout as :func:`chacha20_block`, with the counter as a 64-bit value
    over words 12-13 (so the nonce given here is 8 bytes, words 14-15).
    """
    if len(key) != 32 or len(nonce) != 8:
        raise ValueError("key must be 32 bytes and nonce 8 bytes")
    cdef uint32_t state[16]
    cdef uint32_t key_words[8]
    cdef uint32_t out[128]
    k = np.frombuffer(key, dtype="<u4")
    nn = np.frombuffer(nonce, dtype="<u4")
    for i in range(8):
        key_words[i] = int(k[i])
    bf_chacha20_init(state, key_words, counter, int(nn[0]), int(nn[1]))
    bf_chacha20_blocks8(state, out)
    return np.array([out[i] for i in range(128)], dtype="<u4").tobytes()


# -- Trees: prefix sums, level sums, least squares consistency (tree.h) ----
#
# A forest of m equal-shaped f-ary trees is stored level by level: node g of
# a level array has the children g*f .. g*f + f - 1 in the next level's
# array.  Variances: +inf marks an unobserved node, 0 an exact one.


cdef object _vector(object a, str name, object dtype, bint writable):
    """A one-dimensional ``dtype`` array C can take: aligned, C-contiguous,
    native-endian.  An input (``writable`` False) is copied once when it is
    not; an output must already be (and be writeable)."""
    want = np.dtype(dtype)
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name} must be a numpy array of dtype {want}, got {type(a).__name__}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind != want.kind or a.dtype.itemsize != want.itemsize:
        raise ValueError(f"{name} must have dtype {want}, got {a.dtype}")
    if a.flags.aligned and a.flags.c_contiguous and a.dtype.isnative:
        if writable and not a.flags.writeable:
            raise ValueError(f"{name} is written in place and must be writeable")
        return a
    if writable:
        raise ValueError(f"{name} is written in place and must be an aligned, C-contiguous, "
                         f"native-endian array of dtype {want}")
    return np.array(a, dtype=want, order="C", copy=True)


cdef object _c_array(object a, str name, object dtype):
    """``a`` as an aligned, C-contiguous, native-endian ``dtype`` array (copied
    once if needed); only dtypes that convert exactly (numpy "safe" casting)
    are accepted."""
    want = np.dtype(dtype)
    arr = np.asarray(a)
    if arr.dtype != want and not np.can_cast(arr.dtype, want, "safe"):
        raise TypeError(f"{name} must hold values of dtype {want} (or one that converts exactly), "
                        f"got dtype {arr.dtype}")
    return np.require(arr, dtype=want, requirements=["C", "A"])


cdef object _sum_int64(const int64_t[::1] x, str name):
    """Exact sum of ``x`` if it and every partial sum fit int64, else OverflowError."""
    cdef int64_t total = 0
    cdef int status = BF_OK
    cdef Py_ssize_t n = x.shape[0]
    if n > 0:
        with nogil:
            status = bf_sum_i64(&x[0], <size_t>n, &total)
    if status != BF_OK:
        raise OverflowError(f"the sum of {name} does not fit a signed 64-bit integer")
    return total


cdef inline void _check_index_range(object a, str name, object lo, object hi) except *:
    """Every entry of the int64 array ``a`` lies in [lo, hi)."""
    if a.size and (a.min() < lo or a.max() >= hi):
        bad = a[(a < lo) | (a >= hi)][0]
        raise ValueError(f"{name} must hold indices in [{lo}, {hi}), got {int(bad)}")


cdef inline void _check_fanout(Py_ssize_t f) except *:
    if f < 2:
        raise ValueError(f"f must be >= 2, got {f}")


cdef inline void _check_children(str child_name, Py_ssize_t n_child,
                                 str parent_name, Py_ssize_t n_parent,
                                 Py_ssize_t f) except *:
    if n_child != n_parent * f:
        raise ValueError(
            f"{child_name} must have len({parent_name}) * f = {n_parent} * {f} = "
            f"{n_parent * f} elements, got {n_child}")


cdef inline void _check_same_length(str name, Py_ssize_t n, str ref, Py_ssize_t n_ref) except *:
    if n != n_ref:
        raise ValueError(f"{name} must have the length of {ref} ({n_ref}), got {n}")


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
    cdef const int64_t[::1] xv = _vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_prefix_sum_i64(&xv[0], &o[0], <size_t>n)
    if status != BF_OK:
        raise OverflowError("a partial sum of x does not fit a signed 64-bit integer")
    return out


def sum_int64(x):
    """Exact sum of an int64 vector; OverflowError if a partial sum does not fit int64.

    x : ndarray of int64, shape (n,)  # IN
    """
    return _sum_int64(_vector(x, "x", np.int64, False), "x")


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
    cdef const int64_t[::1] c = _vector(child, "child", np.int64, False)  # IN
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
    if status != BF_OK:
        raise OverflowError("a sum of child does not fit a signed 64-bit integer")
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
    leaves = _vector(leaves, "leaves", np.int64, False)
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
        if status != BF_OK:
            raise OverflowError(
                f"a node sum at level {L} does not fit a signed 64-bit integer")
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
    cdef const double[::1] zcv = _vector(zc, "zc", np.float64, False)  # IN
    cdef const double[::1] vcv = _vector(vc, "vc", np.float64, False)  # IN
    cdef double[::1] zv = _vector(z, "z", np.float64, True)  # IN/OUT
    cdef double[::1] vv = _vector(v, "v", np.float64, True)  # IN/OUT
    _check_fanout(f)
    cdef Py_ssize_t m = zv.shape[0]
    _check_same_length("v", vv.shape[0], "z", m)
    _check_children("zc", zcv.shape[0], "z", m, f)
    _check_same_length("vc", vcv.shape[0], "zc", zcv.shape[0])
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
    cdef const double[::1] xpv = _vector(xp, "xp", np.float64, False)  # IN
    cdef double[::1] zcv = _vector(zc, "zc", np.float64, True)  # IN/OUT
    cdef const double[::1] vcv = _vector(vc, "vc", np.float64, False)  # IN
    _check_fanout(f)
    cdef Py_ssize_t m = xpv.shape[0]
    _check_children("zc", zcv.shape[0], "xp", m, f)
    _check_same_length("vc", vcv.shape[0], "zc", zcv.shape[0])
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
    cdef const double[::1] ysv = _vector(ys, "ys", np.float64, False)  # IN
    cdef const double[::1] vsv = _vector(vs, "vs", np.float64, False)  # IN
    cdef double[::1] zrv = _vector(zr, "zr", np.float64, True)  # IN/OUT
    cdef const double[::1] vrv = _vector(vr, "vr", np.float64, False)  # IN
    cdef double[::1] xsv = _vector(xs, "xs", np.float64, True)  # OUT
    cdef Py_ssize_t k = ysv.shape[0]
    _check_same_length("vs", vsv.shape[0], "ys", k)
    _check_same_length("zr", zrv.shape[0], "ys", k)
    _check_same_length("vr", vrv.shape[0], "ys", k)
    _check_same_length("xs", xsv.shape[0], "ys", k)
    if k == 0:
        return
    if any(np.may_share_memory(xs, a) for a in (ys, vs, zr, vr)):
        raise ValueError("xs must not share memory with ys, vs, zr or vr")
    cdef double[::1] work = np.empty(k, dtype=np.float64)
    with nogil:
        bf_wls_chain(&ysv[0], &vsv[0], &zrv[0], &vrv[0], &xsv[0], &work[0], <size_t>k)


# -- Isotonic regression (isotonic.h) --------------------------------------


def oh_estimate(hist, Py_ssize_t block, Py_ssize_t f, Py_ssize_t h, Py_ssize_t c,
                noise_s, noise_h, double var_s, double var_h):
    """The fused ordered hierarchical estimate (csrc/tree.h, bf_oh_estimate).

    hist : int64, shape (N,), non-negative, total fits int64  # IN
    noise_s : int64, shape (k - 1,)  # IN  (k = ceil(N / block))
    noise_h : int64, one entry per real tree node, level 1 first, block-major  # IN
    Returns the cumulative estimates (float64, shape (N,)) before isotonic
    regression, bit-identical to tree_levels + wls_* + per-block cumsum.
    OverflowError if a noisy value does not fit int64.
    """
    cdef const int64_t[::1] hv = _vector(hist, "hist", np.int64, False)  # IN
    cdef Py_ssize_t N = hv.shape[0]
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
    harr = np.asarray(hist)
    if N and harr.min() < 0:
        raise ValueError("hist must hold non-negative counts")
    _sum_int64(hv, "hist")
    cdef Py_ssize_t k = (N + block - 1) // block
    cdef Py_ssize_t last = N - block * (k - 1)
    count = 0
    wL = width
    for L in range(1, h + 1):
        wL //= (c if L == 1 else f)
        count += (k - 1) * (-(-block // wL)) + (-(-last // wL))
    cdef const int64_t[::1] ns
    cdef const int64_t[::1] nh = _vector(noise_h, "noise_h", np.int64, False)  # IN
    _check_same_length("noise_h", nh.shape[0], "the real tree nodes", count)
    cdef const int64_t *nsp = NULL
    if k > 1:
        ns = _vector(noise_s, "noise_s", np.int64, False)  # IN
        _check_same_length("noise_s", ns.shape[0], "the S nodes (k - 1)", k - 1)
        nsp = &ns[0]
    out = np.empty(N, dtype=np.float64)
    cdef double[::1] o = out  # OUT
    cdef double[::1] scratch = np.empty(
        bf_oh_scratch_doubles(<size_t>k, <size_t>c, <size_t>f, <int>h), dtype=np.float64)
    cdef int status
    with nogil:
        status = bf_oh_estimate(&hv[0], <size_t>N, <size_t>block, <size_t>f, <int>h, <size_t>c,
                                nsp, &nh[0], var_s, var_h, &o[0], &scratch[0])
    _raise_status(status)
    return out


def isotonic_inplace(y, double lower, double upper):
    """Unit-weight isotonic regression clipped to [lower, upper], in place.

    y : float64, shape (n,), finite, writeable  # IN/OUT
    Bit-identical to ``isotonic(y, None, lower, upper)``.
    """
    cdef double[::1] yv = _vector(y, "y", np.float64, True)  # IN/OUT
    cdef Py_ssize_t n = yv.shape[0]
    if not (lower <= upper):
        raise ValueError(f"lower must be <= upper, got lower = {lower}, upper = {upper}")
    if n == 0:
        return
    cdef size_t bad
    with nogil:
        bad = bf_first_nonfinite(&yv[0], <size_t>n)
    if bad < <size_t>n:
        raise ValueError(f"y must be finite (no NaN or infinity), got y[{bad}] = {yv[bad]}")
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
    ya = _c_array(y, "y", np.float64)
    if ya.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {ya.shape}")
    cdef const double[::1] yv = ya  # IN
    cdef Py_ssize_t n = yv.shape[0]
    cdef const double[::1] wv  # IN
    cdef const double *wp = NULL
    cdef size_t bad
    if weights is not None:
        wa = _c_array(weights, "weights", np.float64)
        if wa.ndim != 1 or wa.shape[0] != n:
            raise ValueError(f"weights must have the shape of y ({n},), got {wa.shape}")
        wv = wa
        if n > 0:
            with nogil:
                bad = bf_first_nonpositive(&wv[0], <size_t>n)
            if bad < <size_t>n:
                raise ValueError(
                    f"weights must be finite and > 0, got weights[{bad}] = {wv[bad]}")
            wp = &wv[0]
    if not (lower <= upper):
        raise ValueError(f"lower must be <= upper, got lower = {lower}, upper = {upper}")
    out = np.empty(n, dtype=np.float64)
    if n == 0:
        return out
    cdef double[::1] o = out  # OUT
    with nogil:
        bad = bf_first_nonfinite(&yv[0], <size_t>n)
    if bad < <size_t>n:
        raise ValueError(f"y must be finite (no NaN or infinity), got y[{bad}] = {yv[bad]}")
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


# -- Policy graph: longest simple cycle and path (policy_graph.h) -------------


cdef inline const uint64_t[::1] _check_adjacency(adj) except *:
    a = np.asarray(adj)
    if a.dtype.kind not in "iu" or a.dtype.itemsize > 8:
        raise TypeError(f"adj must hold unsigned 64-bit bit sets, got dtype {a.dtype}")
    if a.dtype.kind == "i" and a.size and a.min() < 0:
        raise ValueError(f"adj must hold non-negative bit sets, got {int(a.min())}")
    a = np.require(a, dtype=np.uint64, requirements=["C", "A"])
    if a.ndim != 1 or a.shape[0] < 1 or a.shape[0] > 64:
        raise ValueError(f"adj must be one-dimensional with 1 to 64 entries, got shape {a.shape}")
    cdef Py_ssize_t nv = a.shape[0]
    if nv < 64 and (a >> np.uint64(nv)).any():
        raise ValueError(f"adj entries must only have bits below nv = {nv} set")
    cdef const uint64_t[::1] view = a
    return view


def longest_cycle(adj, uint64_t max_nodes):
    """Longest simple directed cycle, exact within a work limit.

    Parameters
    ----------
    adj : array_like of uint64, shape (nv,), nv <= 64  # IN
        ``adj[v]`` has bit ``w`` set iff the edge ``v -> w`` exists.
    max_nodes : int
        Largest number of search nodes to expand.

    Returns
    -------
    (length, exact, nodes, cycle) : (int, bool, int, list of int)
        Number of edges of the longest cycle found (0 when acyclic); whether
        the search finished (else ``length`` is only a lower bound); nodes
        expanded; the cycle's vertices from its smallest one (the edge back
        to the first is implied; empty when acyclic).
    """
    cdef const uint64_t[::1] a = _check_adjacency(adj)
    cdef int best = 0, status
    cdef uint64_t nodes = 0
    cdef int nv = <int>a.shape[0]
    cdef int[::1] order = np.zeros(nv + 1, dtype=np.intc)
    with nogil:
        status = bf_longest_cycle(&a[0], nv, max_nodes, &best, &nodes, &order[0])
    return best, status == BF_OK, int(nodes), [int(v) for v in order[:best]]


def longest_path(adj, int src, int dst, uint64_t max_nodes):
    """Longest simple directed path from ``src`` to ``dst``, exact within a work limit.

    Parameters
    ----------
    adj : array_like of uint64, shape (nv,), nv <= 64  # IN
        As for :func:`longest_cycle`.
    src, dst : int
        Distinct vertices in ``[0, nv)``.
    max_nodes : int
        Largest number of search nodes to expand.

    Returns
    -------
    (length, exact, nodes, path) : (int, bool, int, list of int)
        Number of edges of the longest path found (-1 when ``dst`` is
        unreachable); whether the search finished; nodes expanded; the
        path's vertices from ``src`` to ``dst`` (empty when unreachable).
    """
    cdef const uint64_t[::1] a = _check_adjacency(adj)
    cdef int nv = <int>a.shape[0]
    if not (0 <= src < nv and 0 <= dst < nv) or src == dst:
        raise ValueError(f"src and dst must be distinct vertices in [0, {nv}), got src = {src}, dst = {dst}")
    cdef int best = -1, status
    cdef uint64_t nodes = 0
    cdef int[::1] order = np.zeros(nv + 1, dtype=np.intc)
    with nogil:
        status = bf_longest_path(&a[0], nv, src, dst, max_nodes, &best, &nodes, &order[0])
    return best, status == BF_OK, int(nodes), [int(v) for v in order[:best + 1]]
# -- DAWA's L1 partition over dyadic-length intervals (dawa.h) -------------
#
# rank and sorted_vals describe x in ascending order (np.argsort(x,
# kind="stable") gives sorted_vals = x[order] and rank[order] = arange(n));
# the callers in mechanisms/dawa.py build them.

cdef void _check_dawa_inputs(object x, const int64_t[::1] xv, object rank, Py_ssize_t n) except *:
    """What the kernel needs: counts >= 0 whose total fits int64, ranks in [0, n)."""
    xa = np.asarray(xv)
    if n and xa.min() < 0:
        raise ValueError(f"x must hold non-negative counts, got {int(xa.min())}")
    _sum_int64(xv, "x")
    _check_index_range(np.asarray(rank), "rank", 0, n)


def dawa_n_intervals(Py_ssize_t n):
    """Number of candidate intervals of length 2, 4, .. <= n (the noise count)."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    return bf_dawa_n_intervals(<size_t>n)


def dawa_partition(x, rank, sorted_vals, scores, double penalty):
    """Least-score partition of x into dyadic-length buckets.

    Parameters
    ----------
    x, rank, sorted_vals : ndarray of int64, shape (n,)  # IN
    scores : ndarray of float64, shape (dawa_n_intervals(n),)  # IN/OUT
        The noise of each interval on entry, its score on return.
    penalty : float
        Added to every bucket's score.

    Returns
    -------
    starts : ndarray of int64
        First index of each bucket, increasing, starting at 0.
    """
    cdef const int64_t[::1] xv = _vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    cdef const int64_t[::1] rv = _vector(rank, "rank", np.int64, False)  # IN
    cdef const int64_t[::1] sv = _vector(sorted_vals, "sorted_vals", np.int64, False)  # IN
    _check_same_length("rank", rv.shape[0], "x", n)
    _check_same_length("sorted_vals", sv.shape[0], "x", n)
    _check_dawa_inputs(x, xv, rank, n)
    cdef double[::1] sc = _vector(scores, "scores", np.float64, True)  # IN/OUT
    _check_same_length("scores", sc.shape[0], "the interval count", bf_dawa_n_intervals(<size_t>n))
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
    cdef size_t m = 0
    with nogil:
        bf_dawa_partition(&xv[0], &rv[0], &sv[0], <size_t>n, penalty, scp,
                          &fcv[0], &fsv[0], &bv[0], &backv[0], &stv[0], &m)
    return starts[:m].copy()


def dawa_deviations(x, rank, sorted_vals, Py_ssize_t L):
    """sum |x_i - mean| over every window [s, s + L) of x (n - L + 1 values)."""
    cdef const int64_t[::1] xv = _vector(x, "x", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    cdef const int64_t[::1] rv = _vector(rank, "rank", np.int64, False)  # IN
    cdef const int64_t[::1] sv = _vector(sorted_vals, "sorted_vals", np.int64, False)  # IN
    _check_same_length("rank", rv.shape[0], "x", n)
    _check_same_length("sorted_vals", sv.shape[0], "x", n)
    if L < 1 or L > n:
        raise ValueError(f"L must be in [1, len(x)] = [1, {n}], got {L}")
    _check_dawa_inputs(x, xv, rank, n)
    fc = np.empty(n + 1, dtype=np.int64)
    fs = np.empty(n + 1, dtype=np.int64)
    dev = np.empty(n - L + 1, dtype=np.float64)
    cdef int64_t[::1] fcv = fc, fsv = fs  # scratch
    cdef double[::1] dv = dev  # OUT
    with nogil:
        bf_dawa_deviations(&xv[0], &rv[0], &sv[0], <size_t>n, <size_t>L,
                           &fcv[0], &fsv[0], &dv[0])
    return dev


from ._dawa import DawaStream  # the binding lives in _dawa.pyx


# -- Transformational equivalence on trees (transform.h) -------------------
#
# A rooted tree is a parent array (int64, -1 at the root); the callers in
# transform.py check that it is a tree before calling these.

def tree_bfs_order(child_ptr, children, int64_t root):
    """Vertices in breadth-first order from ``root`` (children lists in CSR form)."""
    cdef const int64_t[::1] cp = _vector(child_ptr, "child_ptr", np.int64, False)  # IN
    cdef const int64_t[::1] ch = _vector(children, "children", np.int64, False)  # IN
    cdef Py_ssize_t n = cp.shape[0] - 1
    if n < 1:
        raise ValueError("child_ptr must have at least 2 elements")
    _check_same_length("children", ch.shape[0], "child_ptr minus 2", n - 1)
    if root < 0 or root >= n:
        raise ValueError(f"root must be in [0, {n}), got {root}")
    # A tree's CSR form: every vertex but the root is a child exactly once,
    # and the child lists tile ``children``; then the queue holds <= n.
    cpa, cha = np.asarray(cp), np.asarray(ch)
    if cpa[0] != 0 or cpa[n] != n - 1 or (np.diff(cpa) < 0).any():
        raise ValueError(f"child_ptr must be non-decreasing from 0 to len(children) = {n - 1}")
    _check_index_range(cha, "children", 0, n)
    seen = np.bincount(cha, minlength=n)
    if (seen > 1).any() or seen[root] != 0:
        raise ValueError("children must list every vertex but the root exactly once")
    order = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] ov = order  # OUT
    cdef const int64_t* chp = &ch[0] if n > 1 else NULL
    with nogil:
        bf_tree_bfs_order(&cp[0], chp, root, &ov[0], <size_t>n)
    return order


def subtree_sums(x, parent, order):
    """out[v] = sum of x over the subtree of v (order: parents before children)."""
    cdef const int64_t[::1] xv = _vector(x, "x", np.int64, False)  # IN
    cdef const int64_t[::1] pv = _vector(parent, "parent", np.int64, False)  # IN
    cdef const int64_t[::1] ov = _vector(order, "order", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    _check_same_length("parent", pv.shape[0], "x", n)
    _check_same_length("order", ov.shape[0], "x", n)
    oa = np.asarray(ov)
    _check_index_range(oa, "order", 0, n)
    _check_index_range(np.asarray(pv)[oa[1:]], "parent (of order[1:])", 0, n)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_subtree_sums(&xv[0], &pv[0], &ov[0], &o[0], <size_t>n)
    if status != BF_OK:
        raise OverflowError("a subtree sum does not fit a signed 64-bit integer")
    return out


def tree_inverse(xg, parent):
    """out[v] = xg[v] - sum of xg over the children of v."""
    cdef const int64_t[::1] xv = _vector(xg, "xg", np.int64, False)  # IN
    cdef const int64_t[::1] pv = _vector(parent, "parent", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    _check_same_length("parent", pv.shape[0], "xg", n)
    _check_index_range(np.asarray(pv), "parent", -1, n)
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_tree_inverse(&xv[0], &pv[0], &o[0], <size_t>n)
    if status != BF_OK:
        raise OverflowError("a difference does not fit a signed 64-bit integer")
    return out


def line_inverse(xg):
    """out[0] = xg[0], out[v] = xg[v] - xg[v - 1]: the inverse of prefix_sum."""
    cdef const int64_t[::1] xv = _vector(xg, "xg", np.int64, False)  # IN
    cdef Py_ssize_t n = xv.shape[0]
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out  # OUT
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_line_inverse(&xv[0], &o[0], <size_t>n)
    if status != BF_OK:
        raise OverflowError("a difference does not fit a signed 64-bit integer")
    return out
# -- k-means: assignment and accumulation, sensitivity scans (kmeans.h) ----

KMEANS_MAXDIM = BF_KMEANS_MAXDIM
#: Most clusters the bisector scan accepts (its per-pair tables are static).
KMEANS_MAXK = 64


_INT64_MAX = 2**63 - 1
#: Largest grid the scans accept (cells); the per-cell tables are 12 bytes a cell.
KMEANS_MAX_CELLS = 2**40


cdef object _matrix(object a, str name, object dtype, Py_ssize_t cols):
    arr = _c_array(a, name, dtype)
    if arr.ndim != 2 or (cols >= 0 and arr.shape[1] != cols):
        want = f"(m, {cols})" if cols >= 0 else "(m, d)"
        raise ValueError(f"{name} must have shape {want}, got {arr.shape}")
    return arr


cdef object _absmax(object a):
    """Largest |entry| of an int64 array as a Python int (0 when empty)."""
    if a.size == 0:
        return 0
    return max(-int(a.min()), int(a.max()))


cdef object _grid(object shape, object low, object width):
    sh = _vector(shape, "shape", np.int64, False)
    lo = _vector(low, "low", np.int64, False)
    wd = _vector(width, "width", np.int64, False)
    cdef Py_ssize_t d = sh.shape[0]
    if d < 1 or d > BF_KMEANS_MAXDIM:
        raise ValueError(f"shape must have 1 to {BF_KMEANS_MAXDIM} axes, got {d}")
    _check_same_length("low", lo.shape[0], "shape", d)
    _check_same_length("width", wd.shape[0], "shape", d)
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
    c = _matrix(centroids, "centroids", np.float64, d)
    r = _matrix(refs, "refs", np.int64, d)
    if c.shape[0] < 1:
        raise ValueError("centroids must have at least one row")
    _check_same_length("refs", r.shape[0], "centroids", c.shape[0])
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
    pa = _matrix(points, "points", np.int64, -1)
    cdef Py_ssize_t n = pa.shape[0], d = pa.shape[1]
    if d < 1:
        raise ValueError("points must have at least one column")
    ca, ra = _centres(centroids, refs, d)
    cdef Py_ssize_t k = ca.shape[0]
    if n * (_absmax(pa) + _absmax(ra)) > _INT64_MAX:
        raise OverflowError(
            f"points: n * (max |coordinate| + max |ref|) = {n} * ({_absmax(pa)} + {_absmax(ra)}) "
            "must fit a signed 64-bit integer (assign fewer points per call)")
    cdef const int64_t[:, ::1] pv = pa  # IN
    cdef const double[:, ::1] cv = ca  # IN
    cdef const int64_t[:, ::1] rv = ra  # IN
    cdef bf_kmeans_grid g
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
    sh, lo, wd = _grid(shape, low, width)
    cdef Py_ssize_t d = sh.shape[0]
    ca, ra = _centres(centroids, refs, d)
    _check_costs(sh, lo, wd, ra)
    cdef Py_ssize_t k = ca.shape[0]
    cdef Py_ssize_t total = int(np.prod(sh, dtype=object))
    labels = np.empty(total, dtype=np.int32)
    cost = np.empty(total, dtype=np.int64)
    cdef const int64_t[::1] shv = sh  # IN
    cdef const int64_t[::1] lov = lo  # IN
    cdef const int64_t[::1] wdv = wd  # IN
    cdef const double[:, ::1] cv = ca  # IN
    cdef const int64_t[:, ::1] rv = ra  # IN
    cdef bf_kmeans_grid g
    cdef int32_t[::1] lab = labels  # OUT
    cdef int64_t[::1] cst = cost  # OUT
    with nogil:
        g.d, g.shape, g.low, g.width = <size_t>d, &shv[0], &lov[0], &wdv[0]
        g.k, g.centroids, g.refs = <size_t>k, &cv[0, 0], &rv[0, 0]
        bf_kmeans_grid_label_cost(&g, &lab[0], &cst[0])
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
    sh, lo, wd = _grid(shape, low, width)
    cdef Py_ssize_t d = sh.shape[0]
    ca, ra = _centres(centroids, refs, d)
    cdef Py_ssize_t k = ca.shape[0]
    if fixed_mask >> d:
        raise ValueError(f"fixed_mask must only set bits below d = {d}, got {fixed_mask}")
    _check_costs(sh, lo, wd, ra)
    cdef Py_ssize_t nv = d - bin(fixed_mask).count("1")
    cdef Py_ssize_t ns = (1 << (nv - 1)) if nv > 0 else 1
    cdef int64_t[::1] scratch = np.empty(k * (1 + 2 * ns), dtype=np.int64)
    cdef const int64_t[::1] shv = sh  # IN
    cdef const int64_t[::1] lov = lo  # IN
    cdef const int64_t[::1] wdv = wd  # IN
    cdef const double[:, ::1] cv = ca  # IN
    cdef const int64_t[:, ::1] rv = ra  # IN
    cdef bf_kmeans_grid g
    cdef int64_t same = 0, cross = -1
    with nogil:
        g.d, g.shape, g.low, g.width = <size_t>d, &shv[0], &lov[0], &wdv[0]
        g.k, g.centroids, g.refs = <size_t>k, &cv[0, 0], &rv[0, 0]
        bf_kmeans_clique_scan(&g, fixed_mask, projections, &scratch[0], &same, &cross)
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
    sh = _vector(shape, "shape", np.int64, False)
    cdef Py_ssize_t d = sh.shape[0]
    if d < 1 or d > BF_KMEANS_MAXDIM:
        raise ValueError(f"shape must have 1 to {BF_KMEANS_MAXDIM} axes, got {d}")
    if (sh < 1).any():
        raise ValueError(f"shape must be >= 1 on every axis, got {sh.tolist()}")
    if int(np.prod(sh, dtype=object)) > KMEANS_MAX_CELLS:
        raise ValueError(f"the grid must have at most {KMEANS_MAX_CELLS} cells, got shape {sh.tolist()}")
    cdef Py_ssize_t total = int(np.prod(sh, dtype=object))
    la = _vector(labels, "labels", np.int32, False)
    co = _vector(cost, "cost", np.int64, False)
    _check_same_length("labels", la.shape[0], "prod(shape)", total)
    _check_same_length("cost", co.shape[0], "prod(shape)", total)
    oa = _matrix(offsets, "offsets", np.int64, d)
    ln = _vector(length, "length", np.int64, False)
    cdef Py_ssize_t m = oa.shape[0]
    _check_same_length("length", ln.shape[0], "offsets", m)
    if co.size and (co.min() < 0 or int(co.max()) > _INT64_MAX // 2):
        raise ValueError(f"cost must lie in [0, {_INT64_MAX // 2}], got {int(co.min())}..{int(co.max())}")
    if m and ((oa <= -sh).any() or (oa >= sh).any()):
        raise ValueError(f"offsets must satisfy |offsets[:, a]| < shape[a], got shape {sh.tolist()}")
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
    sh, lo, wd = _grid(shape, low, width)
    cdef Py_ssize_t d = sh.shape[0]
    ca, ra = _centres(centroids, refs, d)
    cdef Py_ssize_t k = ca.shape[0]
    if k > KMEANS_MAXK:
        raise ValueError(f"centroids must have at most {KMEANS_MAXK} rows, got {k}")
    if not (radius >= 0 and radius < np.inf):
        raise ValueError(f"radius must be finite and >= 0, got {radius}")
    _check_costs(sh, lo, wd, ra)
    near = np.empty((k, k), dtype=np.int64)
    pair = np.empty((k, k), dtype=np.int64)
    cdef const int64_t[::1] shv = sh  # IN
    cdef const int64_t[::1] lov = lo  # IN
    cdef const int64_t[::1] wdv = wd  # IN
    cdef const double[:, ::1] cv = ca  # IN
    cdef const int64_t[:, ::1] rv = ra  # IN
    cdef bf_kmeans_grid g
    cdef int64_t[:, ::1] nv = near  # OUT
    cdef int64_t[:, ::1] pv = pair  # OUT
    with nogil:
        g.d, g.shape, g.low, g.width = <size_t>d, &shv[0], &lov[0], &wdv[0]
        g.k, g.centroids, g.refs = <size_t>k, &cv[0, 0], &rv[0, 0]
        bf_kmeans_bisector_scan(&g, radius, &nv[0, 0], &pv[0, 0])
    return near, pair
