/* Isotonic regression: the weighted least squares projection of a
 * sequence onto the non-decreasing sequences, by pool-adjacent-violators
 * (Ayer, Brunk, Ewing, Reid, Silverman 1955; Barlow, Bartholomew, Bremner,
 * Brunk 1972) in O(n) time with one stack of blocks.
 *
 * For a simple order, clipping the isotonic solution to [lower, upper]
 * gives the solution constrained to that box (clipping keeps the order and
 * each pooled block's optimum is its clipped mean).
 *
 * Inputs are trusted (the bindings validate): y finite, weights finite and
 * positive, lower <= upper, and the weighted sums of y finite (|y| * n
 * below DBL_MAX).
 */
#ifndef BF_ISOTONIC_H
#define BF_ISOTONIC_H

#include <stddef.h>
#include <stdint.h>

/* out = argmin over non-decreasing x with lower <= x <= upper of
 * sum_i w[i] (x[i] - y[i])^2, for i in [0, n).  w == NULL means unit
 * weights.  Scratch: block_weight (n doubles) always, block_end (n) only
 * when w != NULL (it may be NULL otherwise).  `out` must not alias `y` or
 * `w`. */
void bf_isotonic(const double *y, const double *w, double *out,
                 double *block_weight, size_t *block_end, size_t n,
                 double lower, double upper);

/* bf_isotonic with unit weights, in place: y is overwritten by the
 * result (bit-identical to bf_isotonic(y, NULL, out, ...)). */
void bf_isotonic_unit_inplace(double *y, double *block_weight, size_t n,
                              double lower, double upper);

/* Unit-weight isotonic regression in chunks (the chunks' blocks can be
 * built in parallel; results agree with bf_isotonic up to the rounding of
 * block sums, exactly for integer-valued y below 2^53 / n).
 *
 * Blocks are kept by position, with one bit per place of scratch (`bits`,
 * ceil(n / 64) words, zero before the first call): block [p, e) has its
 * sum in y[p], bit p set and, when e - p >= 2, its length in y[e - 1].
 * bf_pava_bits_stack: the PAVA blocks of y[c0..c1) in that form; chunks
 *   that start at multiples of 64 own their words of `bits` and may run in
 *   parallel.  With nonfinite != NULL, y may hold NaN or infinities:
 *   *nonfinite is set to 1 if it does (the blocks are then meaningless,
 *   though well formed), else 0; this saves a separate scan when y was
 *   computed, not passed in.
 * bf_pava_bits_join: for chunks of `chunk` places over y[0..n), each so
 *   built, pools across every chunk boundary in order (the rule and the
 *   order of additions of the stack, so the blocks are those of one stack
 *   over the whole).  Writes to heads (room for ceil(n / chunk) + 1) block
 *   starts that split the work: 0, then for each chunk the first block
 *   start at or after its first place when it is new and below n,
 *   increasing; returns their number.
 * bf_pava_bits_fill: writes the clipped means of the blocks starting in
 *   [start, stop), two consecutive heads (or the last head and n); calls
 *   on different ranges touch disjoint places and may run in parallel. */
void bf_pava_bits_stack(double *y, uint64_t *bits, size_t c0, size_t c1, int *nonfinite);
size_t bf_pava_bits_join(double *y, uint64_t *bits, size_t n, size_t chunk, size_t *heads);
void bf_pava_bits_fill(double *y, const uint64_t *bits, size_t start, size_t stop,
                       double lower, double upper);

/* Index of the first element of x[0..n) that is NaN or infinite, or n. */
size_t bf_first_nonfinite(const double *x, size_t n);

/* Index of the first element of x[0..n) that is not finite and > 0 (NaN,
 * infinite, zero of either sign or negative), or n. */
size_t bf_first_nonpositive(const double *x, size_t n);

#endif
