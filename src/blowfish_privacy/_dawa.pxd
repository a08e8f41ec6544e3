# Declarations of csrc/dawa.h (same order and names as the header).

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "dawa.h" nogil:
    size_t bf_dawa_n_intervals(size_t n)
    void bf_dawa_ranks(const int64_t *x, size_t n, int32_t *rank, int64_t *sv,
                       int64_t *key, int32_t *idx, int32_t *idx2)
    int bf_dawa_partition(const int64_t *x, const int64_t *rank,
                          const int64_t *sorted_vals, size_t n, double penalty,
                          double *scores, const double *single, int64_t *fen_cnt,
                          int64_t *fen_sum, double *best, int64_t *back,
                          int64_t *starts, size_t *m)
    void bf_dawa_deviations(const int64_t *x, const int64_t *rank,
                            const int64_t *sorted_vals, size_t n, size_t L,
                            int64_t *fen_cnt, int64_t *fen_sum, double *dev)
    int BF_DAWA_DIRECT
    int BF_DAWA_TIERS
    int BF_DAWA_FEW
    ctypedef struct bf_dawa_ctx:
        const int64_t *x
        const int32_t *rank
        const int64_t *sv
        const int32_t *g
        const int64_t *u
        size_t n
        size_t D
        double penalty
        const double *noise
        const double *single
        const uint32_t *keys
        size_t chunk
        uint64_t t
        uint64_t s
    ctypedef struct bf_dawa_level:
        size_t len
        size_t next_end
    unsigned bf_dawa_n_levels(size_t n)
    size_t bf_dawa_level_words(const bf_dawa_ctx *ctx, size_t L)
    void bf_dawa_level_init(const bf_dawa_ctx *ctx, bf_dawa_level *lv, unsigned k,
                            int64_t *words, int64_t *nbuf)
    int bf_dawa_level_scores(const bf_dawa_ctx *ctx, bf_dawa_level *lv,
                             size_t e0, size_t e1, double *row)
    void bf_dawa_dp(const bf_dawa_ctx *ctx, const double *rows, size_t stride,
                    size_t e0, size_t e1, double *best, uint8_t *back)
    size_t bf_dawa_backtrack(size_t n, const uint8_t *back, int64_t *starts)
