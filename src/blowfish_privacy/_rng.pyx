# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the generator and the exact sampler (csrc/chacha20.h,
csrc/csprng.h, csrc/discrete_laplace.h), used by noise.py.

Arrays reach C through the checks of ``_common``; the GIL is released
around every kernel and one lock per stream serialises callers.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from ._common cimport BF_OK, raise_status, vector, new_vector

import threading

import numpy as np

MAX_SCALE_PART = <uint64_t>BF_DLAP_MAX
RNG_BUFFER_WORDS = BF_RNG_BUFWORDS


cdef void check_scale(uint64_t t, uint64_t s) except *:
    """The discrete Laplace scale t/s has both parts in [1, BF_DLAP_MAX]."""
    if t < 1 or s < 1 or t > BF_DLAP_MAX or s > BF_DLAP_MAX:
        raise ValueError(
            f"scale numerator and denominator must lie in [1, {BF_DLAP_MAX}], got {t}/{s}")


cdef int _fill(bf_rng *rng, Draw kind, uint64_t a, uint64_t b, const int64_t *values,
               void *out, size_t n) noexcept nogil:
    """Re-key after fork, then draw ``n`` values of ``kind`` into ``out``."""
    cdef int status = bf_rng_check_fork(rng)
    cdef size_t i
    if status != BF_OK or n == 0:
        return status
    if kind == DRAW_RAW:
        bf_rng_fill_u32(rng, <uint32_t *>out, n)
    elif kind == DRAW_UNIFORM:
        for i in range(n):
            (<uint64_t *>out)[i] = bf_rng_uniform(rng, a)
    elif kind == DRAW_BERNOULLI_EXP:
        for i in range(n):
            (<uint8_t *>out)[i] = <uint8_t>bf_bernoulli_exp(rng, a, b)
    elif kind == DRAW_LAPLACE:
        bf_discrete_laplace_fill(rng, a, b, <int64_t *>out, n)
    else:
        status = bf_discrete_laplace_add(rng, a, b, values, <int64_t *>out, n)
    return status


cdef void *_data(object arr) except? NULL:
    """Address of the first element of a C-contiguous numpy array (NULL if empty)."""
    cdef const uint8_t[::1] raw
    if arr.size == 0:
        return NULL
    raw = arr.reshape(-1).view(np.uint8)
    return <void *>&raw[0]


cdef class ChaChaStream:
    """A ChaCha20 keystream generator (csrc/csprng.h).

    ``ChaChaStream(None)`` is keyed from the operating system and re-keys
    after fork; ``ChaChaStream(seed)`` with 32 bytes is reproducible.  One
    lock per stream serialises callers from several threads.
    """

    def __cinit__(self, seed=None):
        cdef const uint8_t[::1] key
        self._lock = threading.Lock()
        if seed is None:
            raise_status(bf_rng_init_secure(&self.rng))
        else:
            if not isinstance(seed, (bytes, bytearray)) or len(seed) != 32:
                raise TypeError("seed must be 32 bytes")
            key = bytes(seed)
            bf_rng_init_seeded(&self.rng, &key[0])

    def __dealloc__(self):
        memset(&self.rng, 0, sizeof(bf_rng))

    def __reduce__(self):
        raise TypeError("a random stream cannot be pickled: a copy would repeat its output")

    cdef void _draw(self, Draw kind, uint64_t a, uint64_t b, const int64_t *values,
                    void *out, size_t n) except *:
        """Draw under the stream's lock with the GIL released; raise on a bad status."""
        cdef int status
        with self._lock:
            with nogil:
                status = _fill(&self.rng, kind, a, b, values, out, n)
        raise_status(status)

    @property
    def secure(self):
        return bool(self.rng.secure)

    def random_raw(self, Py_ssize_t n):
        """``n`` raw keystream words as a uint32 array of shape (n,)."""
        out = new_vector(n, np.uint32)
        self._draw(DRAW_RAW, 0, 0, NULL, _data(out), <size_t>n)
        return out

    def uniform(self, uint64_t bound, Py_ssize_t n):
        """``n`` exactly uniform integers on [0, bound) as uint64, shape (n,)."""
        if bound < 1:
            raise ValueError(f"bound must be >= 1, got {bound}")
        out = new_vector(n, np.uint64)
        self._draw(DRAW_UNIFORM, bound, 0, NULL, _data(out), <size_t>n)
        return out

    def bernoulli_exp(self, uint64_t num, uint64_t den, Py_ssize_t n):
        """``n`` draws of Bernoulli(exp(-num/den)) as uint8, shape (n,)."""
        if den < 1:
            raise ValueError(f"den must be >= 1, got {den}")
        out = new_vector(n, np.uint8)
        self._draw(DRAW_BERNOULLI_EXP, num, den, NULL, _data(out), <size_t>n)
        return out

    def discrete_laplace(self, uint64_t t, uint64_t s, Py_ssize_t n):
        """``n`` discrete Laplace draws of scale t/s as int64, shape (n,)."""
        check_scale(t, s)
        out = new_vector(n, np.int64)
        self._draw(DRAW_LAPLACE, t, s, NULL, _data(out), <size_t>n)
        return out

    def fill_discrete_laplace(self, uint64_t t, uint64_t s, out):
        """Write discrete Laplace draws of scale t/s into ``out`` (int64, (n,))."""
        check_scale(t, s)
        out = vector(out, "out", np.int64, True)  # OUT
        self._draw(DRAW_LAPLACE, t, s, NULL, _data(out), <size_t>out.shape[0])

    def add_discrete_laplace(self, values, uint64_t t, uint64_t s):
        """``values + noise`` as a new int64 array of the same length.

        values : int64, shape (n,)  # IN (copied if misaligned or strided)
        The noise vector is drawn completely before ``values`` is read.
        """
        check_scale(t, s)
        values = vector(values, "values", np.int64, False)  # IN
        out = np.empty(values.shape[0], dtype=np.int64)  # OUT
        self._draw(DRAW_LAPLACE_ADD, t, s, <const int64_t *>_data(values), _data(out),
                   <size_t>out.shape[0])
        return out


def add_int64_checked(a, b):
    """``b[:] = a + b`` in place, int64, shape (n,); OverflowError if a sum
    does not fit (then ``b`` holds no release)."""
    cdef const int64_t[::1] av = vector(a, "a", np.int64, False)  # IN
    cdef int64_t[::1] bv = vector(b, "b", np.int64, True)  # IN/OUT
    if av.shape[0] != bv.shape[0]:
        raise ValueError(f"a and b must have the same length, got {av.shape[0]} and {bv.shape[0]}")
    cdef Py_ssize_t n = av.shape[0]
    cdef int status = BF_OK
    if n > 0:
        with nogil:
            status = bf_add_int64_checked(&av[0], &bv[0], &bv[0], <size_t>n)
    raise_status(status)


cdef bytes _words(object words):
    """uint32 keystream words serialised little-endian."""
    return np.array(words, dtype="<u4").tobytes()


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
    return _words([out[i] for i in range(16)])


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
    return _words([out[i] for i in range(128)])
