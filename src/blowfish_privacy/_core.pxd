# Declarations of the C core (csrc/), one block per header, in the same
# order and with the same names as the headers.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "chacha20.h" nogil:
    void bf_chacha20_block(const uint32_t input[16], uint32_t out[16])
    void bf_chacha20_blocks8(const uint32_t input[16], uint32_t out[128])
    void bf_chacha20_init(uint32_t state[16], const uint32_t key[8],
                          uint64_t counter, uint32_t nonce0, uint32_t nonce1)


cdef extern from "status.h" nogil:
    enum:
        BF_OK
        BF_ERR_ENTROPY
        BF_ERR_OVERFLOW
        BF_ERR_LIMIT


cdef extern from "csprng.h" nogil:
    enum:
        BF_RNG_BUFWORDS

    ctypedef struct bf_rng:
        int secure

    int bf_os_entropy(void *out, size_t n)
    int bf_rng_init_secure(bf_rng *rng)
    void bf_rng_init_seeded(bf_rng *rng, const uint8_t seed[32])
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


cdef extern from "tree.h" nogil:
    int bf_prefix_sum_i64(const int64_t *x, int64_t *out, size_t n)
    int bf_sum_i64(const int64_t *x, size_t n, int64_t *out)
    int bf_level_sums_i64(const int64_t *child, int64_t *out, size_t m, size_t f)
    void bf_wls_up_level(const double *zc, const double *vc,
                         double *z, double *v, size_t m, size_t f)
    void bf_wls_down_level(const double *xp, double *zc, const double *vc,
                           size_t m, size_t f)
    void bf_wls_chain(const double *ys, const double *vs, double *zr,
                      const double *vr, double *xs, double *work, size_t k)
    size_t bf_oh_scratch_doubles(size_t k, size_t c, size_t f, int h)
    int bf_oh_estimate(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                       const int64_t *noise_s, const int64_t *noise_h,
                       double var_s, double var_h, double *cum, double *scratch)


cdef extern from "isotonic.h" nogil:
    void bf_isotonic(const double *y, const double *w, double *out,
                     double *block_weight, size_t *block_end, size_t n,
                     double lower, double upper)
    void bf_isotonic_unit_inplace(double *y, double *block_weight, size_t n,
                                  double lower, double upper)
    size_t bf_first_nonfinite(const double *x, size_t n)
    size_t bf_first_nonpositive(const double *x, size_t n)


cdef extern from "policy_graph.h" nogil:
    int bf_longest_cycle(const uint64_t *adj, int nv, uint64_t max_nodes,
                         int *best, uint64_t *nodes, int *order)
    int bf_longest_path(const uint64_t *adj, int nv, int src, int dst,
                        uint64_t max_nodes, int *best, uint64_t *nodes, int *order)
cdef extern from "dawa.h" nogil:
    size_t bf_dawa_n_intervals(size_t n)
    int bf_dawa_partition(const int64_t *x, const int64_t *rank,
                          const int64_t *sorted_vals, size_t n, double penalty,
                          double *scores, int64_t *fen_cnt, int64_t *fen_sum,
                          double *best, int64_t *back, int64_t *starts,
                          size_t *m)
    void bf_dawa_deviations(const int64_t *x, const int64_t *rank,
                            const int64_t *sorted_vals, size_t n, size_t L,
                            int64_t *fen_cnt, int64_t *fen_sum, double *dev)
    int BF_DAWA_DIRECT
    int BF_DAWA_TIERS
    ctypedef struct bf_dawa_ctx:
        const int64_t *x
        const int32_t *g
        const int64_t *u
        size_t n
        size_t D
        double penalty
        const double *noise
        const uint32_t *keys
        size_t chunk
        uint64_t t
        uint64_t s
    ctypedef struct bf_dawa_level:
        size_t len
        size_t next_end
    unsigned bf_dawa_n_levels(size_t n)
    void bf_dawa_level_words(size_t D, size_t L, size_t *cnt_words, size_t *sum_words)
    void bf_dawa_level_init(const bf_dawa_ctx *ctx, bf_dawa_level *lv, unsigned k,
                            uint32_t *cnt, int64_t *sum, int64_t *nbuf)
    int bf_dawa_level_scores(const bf_dawa_ctx *ctx, bf_dawa_level *lv,
                             size_t e0, size_t e1, double *row)
    void bf_dawa_dp(const bf_dawa_ctx *ctx, const double *rows, size_t stride,
                    size_t e0, size_t e1, double *best, uint8_t *back)
    size_t bf_dawa_backtrack(size_t n, const uint8_t *back, int64_t *starts)


cdef extern from "transform.h" nogil:
    void bf_tree_bfs_order(const int64_t *child_ptr, const int64_t *children,
                           int64_t root, int64_t *order, size_t n)
    int bf_subtree_sums(const int64_t *x, const int64_t *parent,
                        const int64_t *order, int64_t *out, size_t n)
    int bf_tree_inverse(const int64_t *xg, const int64_t *parent, int64_t *out,
                        size_t n)
    int bf_line_inverse(const int64_t *xg, int64_t *out, size_t n)
cdef extern from "kmeans.h" nogil:
    enum:
        BF_KMEANS_MAXDIM
    void bf_kmeans_assign_accumulate(const int64_t *points, size_t n, size_t d,
                                     const double *centroids, const int64_t *refs,
                                     size_t k, int32_t *labels, int64_t *counts,
                                     int64_t *sums)
    ctypedef struct bf_kmeans_grid:
        size_t d
        const int64_t *shape
        const int64_t *low
        const int64_t *width
        size_t k
        const double *centroids
        const int64_t *refs
    void bf_kmeans_grid_label_cost(const bf_kmeans_grid *g, int32_t *labels, int64_t *cost)
    void bf_kmeans_clique_scan(const bf_kmeans_grid *g, uint32_t fixed_mask, int projections,
                               int64_t *scratch, int64_t *same, int64_t *cross)
    void bf_kmeans_offset_scan(size_t d, const int64_t *shape, const int32_t *labels,
                               const int64_t *cost, const int64_t *offsets,
                               const int64_t *length, size_t m, int64_t *same,
                               int64_t *cross)
    void bf_kmeans_bisector_scan(const bf_kmeans_grid *g, double radius, int64_t *near,
                                 int64_t *pair)
