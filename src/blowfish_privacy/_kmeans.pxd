# Declarations of csrc/kmeans.h.

from libc.stdint cimport int32_t, int64_t, uint32_t


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
