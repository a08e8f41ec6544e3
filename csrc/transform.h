/* Transformational equivalence on trees (Haney, Machanavajjhala, Ding,
 * VLDB 2015; 001 Sec 3): x_G = P_G^{-1} x by subtree sums, and back.
 *
 * A rooted tree on n vertices is given by parent[v] (-1 at the root).
 * x_G[v] is the number of records in the subtree of v (the count on the
 * edge from v to its parent); x_G[root] is the total.  Both directions
 * are O(n).  The functions trust their inputs (a valid parent array, an
 * order listing every vertex after its parent) and return status codes
 * of status.h.
 */
#ifndef BF_TRANSFORM_H
#define BF_TRANSFORM_H

#include <stddef.h>
#include <stdint.h>

#include "csprng.h"
#include "status.h"

/* order (n): vertices in breadth-first order from the root, computed from
 * the children lists (child_ptr (n + 1), children (n - 1)). */
void bf_tree_bfs_order(const int64_t *child_ptr, const int64_t *children,
                       int64_t root, int64_t *order, size_t n);

/* Breadth-first search of an undirected graph in CSR form from root:
 * the neighbours of v are adj[ptr[v] .. ptr[v + 1] - 1] (ptr: n + 1
 * non-decreasing offsets from 0, every adj entry in [0, n)).  Writes
 * parent[v] (the BFS parent, -1 at the root, -2 when v is not reached)
 * and order (the reached vertices in the order they were dequeued,
 * neighbours in adjacency order); returns how many were reached.  O(n +
 * ptr[n]), no allocation. */
size_t bf_graph_bfs(const int64_t *ptr, const int64_t *adj, int64_t root,
                    int64_t *parent, int64_t *order, size_t n);

/* out[v] = sum of x over the subtree of v.  order: every vertex after its
 * parent (e.g. BFS order).  Returns BF_OK or BF_ERR_OVERFLOW. */
int bf_subtree_sums(const int64_t *x, const int64_t *parent,
                    const int64_t *order, int64_t *out, size_t n);

/* out[v] = xg[v] - sum of xg over the children of v.  Returns BF_OK or
 * BF_ERR_OVERFLOW. */
int bf_tree_inverse(const int64_t *xg, const int64_t *parent, int64_t *out,
                    size_t n);

/* Line tree (parent[v] = v + 1): out[v] = xg[v] - xg[v - 1], out[0] =
 * xg[0].  Returns BF_OK or BF_ERR_OVERFLOW. */
int bf_line_inverse(const int64_t *xg, int64_t *out, size_t n);

/* xg[v] += the next of the m noise values, for every v with parent[v] >= 0
 * in increasing v (m is their number; it never reads past noise[m - 1]).
 * noise must not overlap xg.  Returns BF_OK or BF_ERR_OVERFLOW (all the
 * sums are still computed, modulo 2^64). */
int bf_add_nonroot(int64_t *xg, const int64_t *parent, const int64_t *noise, size_t m, size_t n);

/* The line tree's noisy counts in one pass: a = prefix sums of x plus
 * noise[v] on every v < n - 1 (the root, n - 1, is the exact total),
 * out[v] = a[v] - a[v - 1] (out[0] = a[0]); the same numbers as
 * prefix sums, bf_add_nonroot and bf_line_inverse, without a[] in memory.
 * noise: n - 1 values.  Returns BF_OK or BF_ERR_OVERFLOW. */
int bf_line_noisy_counts(const int64_t *x, const int64_t *noise, int64_t *out, size_t n);

/* The noise of the two functions above drawn inside them, chunk by chunk:
 * chunk g covers the vertices [g chunk, min(n, (g+1) chunk)) and its noise
 * (one value per noisy vertex of the chunk, in vertex order) is one
 * bf_discrete_laplace_fill of scale t/s from stream g of `key`
 * (bf_rng_init_stream), drawn before the chunk's values are read.  Chunks
 * [g0, g1); callers run disjoint ranges in parallel.
 *
 * bf_add_nonroot_streams: xg[v] += noise for every v of the chunks with
 * parent[v] >= 0.  scratch: chunk values.  Returns BF_OK or
 * BF_ERR_OVERFLOW.
 *
 * bf_line_noisy_counts_streams: bf_line_noisy_counts' out[v] for the
 * vertices of the chunks, given base[g] = x[0] + ... + x[g chunk - 1]; the
 * noise is drawn into the chunk's place in `out`.  The first vertex v0 of
 * the range needs a[v0 - 1] (the previous range's last): for g0 > 0,
 * out[v0] holds a[v0] instead, for the caller to subtract; ends[0] =
 * a[v0], ends[1] = a[last vertex of the range].  Returns BF_OK or
 * BF_ERR_OVERFLOW. */
int bf_add_nonroot_streams(int64_t *xg, const int64_t *parent, size_t n, size_t chunk,
                           const uint32_t key[8], uint64_t t, uint64_t s, size_t g0, size_t g1,
                           int64_t *scratch);
int bf_line_noisy_counts_streams(const int64_t *x, size_t n, size_t chunk, const uint32_t key[8],
                                 uint64_t t, uint64_t s, size_t g0, size_t g1, const int64_t *base,
                                 int64_t *out, int64_t ends[2]);

#endif
