# Declarations of csrc/chacha20.h, csrc/csprng.h and csrc/discrete_laplace.h
# (same order and names as the headers), and the generator type: other
# binding modules cimport ChaChaStream to draw from a stream made here.

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "chacha20.h" nogil:
    void bf_chacha20_block(const uint32_t input[16], uint32_t out[16])
    void bf_chacha20_blocks8(const uint32_t input[16], uint32_t out[128])
    void bf_chacha20_init(uint32_t state[16], const uint32_t key[8],
                          uint64_t counter, uint32_t nonce0, uint32_t nonce1)


cdef extern from "csprng.h" nogil:
    enum:
        BF_RNG_BUFWORDS

    ctypedef struct bf_rng:
        int secure

    int bf_os_entropy(void *out, size_t n)
    int bf_rng_init_secure(bf_rng *rng)
    void bf_rng_init_seeded(bf_rng *rng, const uint8_t seed[32])
    void bf_rng_init_stream(bf_rng *rng, const uint32_t key[8], uint64_t index)
    void bf_rng_wipe(bf_rng *rng)
    int bf_rng_check_fork(bf_rng *rng)
    uint32_t bf_rng_next32(bf_rng *rng)
    uint64_t bf_rng_uniform(bf_rng *rng, uint64_t n)
    void bf_rng_fill_u32(bf_rng *rng, uint32_t *out, size_t n)


cdef extern from "discrete_laplace.h" nogil:
    uint64_t BF_DLAP_MAX
    int64_t bf_discrete_laplace(bf_rng *rng, uint64_t t, uint64_t s)
    void bf_discrete_laplace_fill(bf_rng *rng, uint64_t t, uint64_t s,
                                  int64_t *out, size_t n)
    int bf_discrete_laplace_add(bf_rng *rng, uint64_t t, uint64_t s,
                                const int64_t *values, int64_t *out, size_t n)
    int bf_add_int64_checked(const int64_t *a, const int64_t *b, int64_t *out, size_t n)
    int bf_bernoulli_exp(bf_rng *rng, uint64_t num, uint64_t den)


# What a draw computes (ChaChaStream._draw).
cdef enum Draw:
    DRAW_RAW
    DRAW_UNIFORM
    DRAW_BERNOULLI_EXP
    DRAW_LAPLACE
    DRAW_LAPLACE_ADD


cdef class ChaChaStream:
    cdef bf_rng rng
    cdef object _lock
    cdef void _draw(self, Draw kind, uint64_t a, uint64_t b, const int64_t *values,
                    void *out, size_t n) except *


cdef void check_scale(uint64_t t, uint64_t s) except *
