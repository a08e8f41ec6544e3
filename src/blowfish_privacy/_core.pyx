# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Bindings of the C core.

The C functions trust their inputs; this module checks types and ranges
that would otherwise be undefined behaviour in C (array shapes, scale
bounds), releases the GIL around every kernel and turns C status codes into
Python exceptions.  Argument checks with user-facing messages live in the
Python modules that call these (noise.py, mechanisms/).
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

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

    def add_discrete_laplace(self, const int64_t[::1] values, uint64_t t, uint64_t s):
        """``values + noise`` as a new int64 array of the same length.

        values : int64, shape (n,), C-contiguous  # IN
        The noise vector is drawn completely before ``values`` is read.
        """
        _check_scale(t, s)
        cdef Py_ssize_t n = values.shape[0]
        out = np.empty(n, dtype=np.int64)
        cdef int64_t[::1] o = out  # OUT
        cdef int status = BF_OK
        with self._lock:
            with nogil:
                status = bf_rng_check_fork(&self.rng)
                if status == BF_OK and n > 0:
                    status = bf_discrete_laplace_add(&self.rng, t, s, &values[0], &o[0], <size_t>n)
        _raise_status(status)
        return out


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
