/* Kernels on implicit f-ary forests: prefix sums, level sums and weighted
 * least squares consistency.
 *
 * A forest of m equal-shaped f-ary trees of height h is stored level by
 * level.  Level L is an array of m * f^L nodes; node g of level L has the
 * children g*f .. g*f + f - 1 in the level L + 1 array, so each level
 * holds the trees one after the other (block-major) and level 0 holds the
 * m roots.
 *
 * Consistency (Hay, Rastogi, Miklau, Suciu, "Boosting the Accuracy of
 * Differentially Private Histograms Through Consistency", PVLDB 2010) is
 * generalised here to one noisy observation per node with its own
 * variance: the two passes compute the generalised least squares (best
 * linear unbiased) estimate of the leaves under the constraints
 * "parent = sum of children", in O(number of nodes).  A variance of +inf
 * marks an unobserved node (its value is ignored), 0 an exact node.
 *
 * Like the rest of the core the functions trust their inputs: the
 * bindings check lengths, f >= 2 and that outputs do not alias inputs
 * unless stated.  Status codes (BF_OK, BF_ERR_OVERFLOW) are those of
 * status.h.
 */
#ifndef BF_TREE_H
#define BF_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "csprng.h"
#include "status.h"

/* out[i] = x[0] + ... + x[i] for i in [0, n).  Returns BF_OK, or
 * BF_ERR_OVERFLOW if some partial sum does not fit int64 (then `out`
 * holds no meaningful values).  `out` may equal `x`. */
int bf_prefix_sum_i64(const int64_t *x, int64_t *out, size_t n);

/* *out = x[0] + ... + x[n-1]; BF_ERR_OVERFLOW if a partial sum does not
 * fit int64. */
int bf_sum_i64(const int64_t *x, size_t n, int64_t *out);

/* bf_sum_i64 of counts, in the same pass: *negative = 1 if some x[i] < 0
 * (then *out is not the sum of a histogram), else 0. */
int bf_sum_counts_i64(const int64_t *x, size_t n, int64_t *out, int *negative);

/* out[i] = (double)(x[0] + ... + x[i] + noise[i]) for i in [0, m): the
 * noisy cumulative counts of the ordered mechanism in one pass, each sum
 * exact in int64 (BF_ERR_OVERFLOW if one does not fit).  out may alias
 * noise (the same places, written as doubles after each is read). */
int bf_noisy_cumulative(const int64_t *x, const int64_t *noise, size_t m, double *out);

/* bf_noisy_cumulative with the noise drawn inside, chunk by chunk: chunk
 * g covers the counts [g chunk, min(m, (g+1) chunk)), its noise is the
 * discrete Laplace draws of scale t/s from stream g of `key`
 * (bf_rng_init_stream, one bf_discrete_laplace_fill of the chunk's length)
 * written into the chunk's place in `out`, then read back as the counts are
 * added (the chunk's noise is drawn before its counts are read).  base[g]:
 * x[0] + ... + x[g chunk - 1].  Chunks [g0, g1); callers run disjoint
 * ranges in parallel (the result does not depend on the ranges).  Returns
 * BF_OK or BF_ERR_OVERFLOW. */
int bf_noisy_cumulative_streams(const int64_t *x, size_t m, size_t chunk, const uint32_t key[8],
                                uint64_t t, uint64_t s, size_t g0, size_t g1,
                                const int64_t *base, double *out);

/* out[g] = child[g*f] + ... + child[g*f + f - 1] for g in [0, m), f >= 1.
 * Specialised for f == 16 and f == 2.  Returns BF_OK, or BF_ERR_OVERFLOW
 * if some sum does not fit int64 (sums whose intermediate terms overflow
 * but whose total fits are exact and accepted). */
int bf_level_sums_i64(const int64_t *child, int64_t *out, size_t m, size_t f);

/* One level of the upward pass.  zc, vc (m*f): the children's subtree
 * estimates and variances.  z, v (m): on entry each parent's own
 * observation and variance; on return its subtree estimate and variance,
 * the combination of its observation with (sum of zc, sum of vc).
 *
 * Combination of independent estimates (a, va) and (b, vb), in order:
 * va == inf -> (b, vb); vb == inf -> (a, va); va == 0 -> (a, 0);
 * vb == 0 -> (b, 0); otherwise the inverse-variance weighted mean with
 * variance 1 / (1/va + 1/vb). */
void bf_wls_up_level(const double *zc, const double *vc,
                     double *z, double *v, size_t m, size_t f);

/* One level of the downward pass.  xp (m): the parents' final values.
 * zc (m*f): the children's subtree estimates on entry, their final values
 * on return.  vc (m*f): the children's subtree variances.  For each
 * parent, d = xp - (sum of its children's zc) goes to the children with
 * vc == inf in equal shares if there are any, otherwise in proportion to
 * vc when the children's variances do not sum to 0; exact children keep
 * their value. */
void bf_wls_down_level(const double *xp, double *zc, const double *vc,
                       size_t m, size_t f);

/* Both passes over the chain s_1 .. s_k above the roots r_1 .. r_k of a
 * forest (the ordered hierarchy: s_1 has the child r_1, s_i has the
 * children s_{i-1} and r_i, so s_i = r_1 + ... + r_i).
 * ys, vs (k): observations and variances of the s_i.  zr (k): the roots'
 * subtree estimates on entry, their final values on return.  vr (k): the
 * roots' subtree variances.  xs (k): the final s values.  work (k):
 * scratch.  xs and work must not alias the other arrays. */
void bf_wls_chain(const double *ys, const double *vs, double *zr,
                  const double *vr, double *xs, double *work, size_t k);

/* The whole ordered hierarchical (OH) estimate in two passes over the
 * blocks, with O(block + k) scratch: per-block tree sums, noise, the
 * upward least-squares pass, the chain over the S nodes, the downward pass
 * and the cumulative counts (the same operations, in the same order, as
 * tree_levels + wls_up_level + wls_chain + wls_down_level + a cumulative
 * sum per block, so the result is bit-identical to that path).
 *
 * hist (N): non-negative counts whose total n fits int64.  Blocks of
 * `block` bins (the last has N - (k-1) block), k = ceil(N / block); each
 * block's tree has height h >= 1, root fan-out c <= f and fan-out f below,
 * width c f^(h-1) >= block leaves.  Level L >= 1 of a block has c f^(L-1)
 * nodes of width f^(h-L); its real nodes (those covering bins) are the
 * first ceil(len / f^(h-L)).  noise_h: the noise of every real node, level
 * 1 first, within a level block-major.  noise_s (k - 1): the noise of
 * s_1..s_{k-1}.  var_s, var_h: their variances (s_k = n is exact, the
 * roots unobserved, padding nodes exact zeros).  cum (N): the estimated
 * cumulative counts.
 *
 * In three phases, so that callers can run the block phases on disjoint
 * block ranges in parallel (each block is computed alone: the result is
 * the same whatever the ranges); k blocks.
 *
 * 1. bf_oh_up_range: for b in [b0, b1), block b's root estimate zr[b], its
 *    variance vr[b] and its exact total tot[b]; what the downward pass
 *    needs of the block: its inner nodes' estimates and variances after the
 *    upward pass in inner[b I .. (b+1) I) (I = bf_oh_inner_doubles(c, f, h))
 *    and its leaves' noisy counts in cum[b block .. b block + len).  cum
 *    may be the storage of noise_h's last N values (the leaves' noise):
 *    each block's noise is read before its leaves are written there.
 *    Returns BF_OK or BF_ERR_OVERFLOW.  scratch:
 *    bf_oh_range_scratch_doubles(c, f, h).
 * 2. bf_oh_chain (once, all k blocks): the S-node chain; overwrites zr with
 *    the final root estimates and writes xs (k), the final s_1..s_k.
 *    work: 3 k doubles.  Returns BF_OK or BF_ERR_OVERFLOW.
 * 3. bf_oh_down_range: for b in [b0, b1), the downward pass from zr[b],
 *    inner and the leaves in cum, then the cumulative counts in their
 *    place, cum[b block .. b block + len).  It reads neither hist nor the
 *    noise. */
/* The noise of the OH kernel drawn inside it (bf_oh_up_streams): blocks
 * are cut into streams of `group` consecutive blocks (the last may have
 * fewer); stream g (bf_rng_init_stream(key, g)) first draws the S nodes of
 * its blocks b < k - 1 (one fill of scale t_s/s_s into noise_s[b]), then
 * the tree nodes of all its blocks in one fill of scale t_h/s_h: block
 * after block, the real nodes of level 1, then of level 2, ..., h.  A
 * stream's noise is drawn before its blocks' counts are read. */
typedef struct {
    uint32_t key[8];
    uint64_t t_s, s_s, t_h, s_h;
    size_t group;
} bf_oh_noise;

size_t bf_oh_range_scratch_doubles(size_t c, size_t f, int h);
size_t bf_oh_inner_doubles(size_t c, size_t f, int h);
int bf_oh_up_range(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                   const int64_t *noise_h, double var_h, size_t b0, size_t b1,
                   double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch);
/* bf_oh_up_range for the blocks of streams [g0, g1), with their noise
 * drawn as bf_oh_noise says (noise_s (k - 1): written for those blocks;
 * noise_buf: bf_oh_stream_noise_words(c, f, h, group) scratch words). */
size_t bf_oh_stream_noise_words(size_t c, size_t f, int h, size_t group);
int bf_oh_up_streams(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                     const bf_oh_noise *noise, double var_h, size_t g0, size_t g1, int64_t *noise_s,
                     double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch,
                     int64_t *noise_buf);
int bf_oh_chain(const int64_t *tot, const int64_t *noise_s, double var_s, size_t k,
                double *zr, const double *vr, double *xs, double *work);
void bf_oh_down_range(size_t N, size_t block, size_t f, int h, size_t c, double var_h,
                      size_t b0, size_t b1, const double *inner, const double *zr,
                      const double *xs, double *cum, double *scratch);

#endif
