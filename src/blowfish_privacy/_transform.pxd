# Declarations of csrc/transform.h.

from libc.stdint cimport int64_t, uint32_t, uint64_t


cdef extern from "transform.h" nogil:
    void bf_tree_bfs_order(const int64_t *child_ptr, const int64_t *children,
                           int64_t root, int64_t *order, size_t n)
    size_t bf_graph_bfs(const int64_t *ptr, const int64_t *adj, int64_t root,
                        int64_t *parent, int64_t *order, size_t n)
    int bf_subtree_sums(const int64_t *x, const int64_t *parent,
                        const int64_t *order, int64_t *out, size_t n)
    int bf_tree_inverse(const int64_t *xg, const int64_t *parent, int64_t *out,
                        size_t n)
    int bf_line_inverse(const int64_t *xg, int64_t *out, size_t n)
    int bf_add_nonroot(int64_t *xg, const int64_t *parent, const int64_t *noise, size_t m, size_t n)
    int bf_line_noisy_counts(const int64_t *x, const int64_t *noise, int64_t *out, size_t n)
    int bf_add_nonroot_streams(int64_t *xg, const int64_t *parent, size_t n, size_t chunk,
                               const uint32_t key[8], uint64_t t, uint64_t s, size_t g0, size_t g1,
                               int64_t *scratch)
    int bf_line_noisy_counts_streams(const int64_t *x, size_t n, size_t chunk, const uint32_t key[8],
                                     uint64_t t, uint64_t s, size_t g0, size_t g1, const int64_t *base,
                                     int64_t *out, int64_t ends[2])
