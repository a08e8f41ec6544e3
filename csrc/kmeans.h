/* k-means kernels (000 Sec 6, DESIGN sec 5): the fused assignment and
 * accumulation step of Lloyd / SuLQ k-means, and scans of a grid domain
 * that give the exact (or a proven upper bound on the) per-iteration
 * sensitivity of the cluster sizes and the cluster sums relative to public
 * reference points.
 *
 * Conventions shared by every function here:
 *  - points and reference points are int64 coordinates in value units
 *    (row-major, d per row); centroids are doubles (k rows of d);
 *  - a value x is assigned to the centroid with the smallest squared
 *    Euclidean distance sum_a (x_a - mu_a)^2, evaluated in the order
 *    a = 0..d-1 by bf_kmeans_nearest (so every kernel agrees), ties to the
 *    lowest index;
 *  - a grid domain is given by shape[a] bins of width[a] starting at
 *    low[a]; cell code c has value low[a] + c * width[a]; flat indices are
 *    row-major (last axis fastest);
 *  - cost(x) = sum_a |x_a - ref[label(x)][a]| (the L1 change of the sums
 *    when x leaves or joins its cluster).
 * Inputs are trusted (the bindings validate shapes; the Python layer keeps
 * every int64 sum below 2^63).
 */
#ifndef BF_KMEANS_H
#define BF_KMEANS_H

#include <stddef.h>
#include <stdint.h>

/* Largest number of dimensions the kernels accept. */
#define BF_KMEANS_MAXDIM 16

/* One pass over n points: labels[i] (if labels != NULL) = nearest
 * centroid; counts[j] += points in cluster j; sums[j*d + a] += x_a -
 * refs[j*d + a].  counts and sums are overwritten (not accumulated into). */
void bf_kmeans_assign_accumulate(const int64_t *points, size_t n, size_t d,
                                 const double *centroids, const int64_t *refs,
                                 size_t k, int32_t *labels, int64_t *counts,
                                 int64_t *sums);

/* A grid domain and the current clustering, the input of the scans. */
typedef struct {
    size_t d;                /* axes, 1..BF_KMEANS_MAXDIM */
    const int64_t *shape;    /* cells per axis (d) */
    const int64_t *low;      /* value of code 0 on each axis (d) */
    const int64_t *width;    /* bin width on each axis (d) */
    size_t k;                /* clusters */
    const double *centroids; /* k rows of d */
    const int64_t *refs;     /* reference points, k rows of d */
} bf_kmeans_grid;

/* Label and cost of every cell of the grid, in flat order. */
void bf_kmeans_grid_label_cost(const bf_kmeans_grid *g, int32_t *labels, int64_t *cost);

/* Clique scan.  The grid is cut into blocks: the cells that agree on the
 * axes whose bit is set in fixed_mask; every block is a clique of the
 * secret graph.  Outputs, over all blocks B and clusters i != j:
 *   *same  = max ||x - y||_1 over x, y in B, both in cluster i (0 if none);
 *            with projections == 0 an upper bound on it instead:
 *            min(2 max cost over B and i, the L1 diameter of B's box);
 *   *cross = max cost(x) + cost(y), x in B cluster i, y in B cluster j
 *            (-1 if no block holds two clusters).
 * Work: |T| * k * d, plus |T| * 2^(f-1) with projections (f the free axes).
 * scratch: k * (1 + 2 * 2^(f-1)) int64.  The bindings bound the grid so
 * that 2 * (sum_a max|value_a| + sum_a max_j |ref_ja|) fits int64. */
void bf_kmeans_clique_scan(const bf_kmeans_grid *g, uint32_t fixed_mask, int projections,
                           int64_t *scratch, int64_t *same, int64_t *cross);

/* Offset scan over precomputed labels and costs (from
 * bf_kmeans_grid_label_cost): for every cell x and every offset o (m rows
 * of d code deltas, one of each pair +-o) with y = x + o inside the grid:
 * same  = max length[o] over such pairs in one cluster (0 if none),
 * cross = max cost(x) + cost(y) over pairs in two clusters (-1 if none). */
void bf_kmeans_offset_scan(size_t d, const int64_t *shape, const int32_t *labels,
                           const int64_t *cost, const int64_t *offsets,
                           const int64_t *length, size_t m, int64_t *same,
                           int64_t *cross);

/* Bisector scan for graphs whose edges have Euclidean length at most
 * radius (in value units); k <= 64.  A cell x in cluster i can be the
 * i-end of an edge into cluster j only if its distance to the bisector of
 * centroids i and j is at most radius.  For every such (x, i, j) (with a
 * small floating-point slack that only admits more cells):
 *   near[i*k + j]  = max cost(x)                       (-1 if none),
 *   pair[i*k + j]  = max cost(x) + ||x - ref_j||_1     (-1 if none).
 * Pairs of equal centroids are skipped (the higher index is always empty). */
void bf_kmeans_bisector_scan(const bf_kmeans_grid *g, double radius, int64_t *near,
                             int64_t *pair);

#endif
