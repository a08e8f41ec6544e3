/* DAWA's private L1 partition over dyadic-length intervals (Li, Hay,
 * Miklau, Wang, "A Data- and Workload-Aware Algorithm for Range Queries
 * Under Differential Privacy", PVLDB 2014, Sec 3, the approximate variant
 * restricted to intervals whose length is a power of two).
 *
 * The candidate buckets are every interval [s, s + L) with L = 2^k <= n.
 * The deviation of a bucket is dev = sum_{i in B} |x_i - mean(B)|; its
 * score is max(dev + noise, 0) + penalty (length-1 buckets have dev = 0
 * and get no noise).  The partition is the one minimising the sum of
 * scores, found by dynamic programming over the end points.
 *
 * The deviations of all intervals of one length come from a sliding
 * window over a Fenwick tree indexed by the rank of each value (count and
 * sum of the values below the window mean): O(n log n) per length, O(n
 * log^2 n) in all, O(n) extra memory besides the scores.
 *
 * Like the rest of the core the functions trust their inputs (lengths,
 * ranks a permutation of 0..n-1 consistent with sorted_vals, sums fit
 * int64) and return status codes of status.h.
 */
#ifndef BF_DAWA_H
#define BF_DAWA_H

#include <stddef.h>
#include <stdint.h>

#include "status.h"

/* Number of candidate intervals of length >= 2: sum over L = 2, 4, ..
 * <= n of (n - L + 1).  The scores array of bf_dawa_partition has this
 * length; the intervals of length L come after those of length L/2, by
 * start. */
size_t bf_dawa_n_intervals(size_t n);

/* x (n): counts.  rank (n): rank of x[i] in ascending order (ties broken
 * by index).  sorted_vals (n): x in ascending order.  scores
 * (bf_dawa_n_intervals(n)): on entry the noise of each interval, on
 * return its score.  fen_cnt, fen_sum (n + 1): scratch.  best (n + 1),
 * back (n + 1): scratch.  starts (n): on return the first index of each
 * bucket in increasing order; *m: the number of buckets.
 * Returns BF_OK. */
int bf_dawa_partition(const int64_t *x, const int64_t *rank,
                      const int64_t *sorted_vals, size_t n, double penalty,
                      double *scores, int64_t *fen_cnt, int64_t *fen_sum,
                      double *best, int64_t *back, int64_t *starts,
                      size_t *m);

/* Deviation sum |x_i - mean| of every interval of length L (n - L + 1
 * values into dev), by the same sliding window.  Scratch as above. */
void bf_dawa_deviations(const int64_t *x, const int64_t *rank,
                        const int64_t *sorted_vals, size_t n, size_t L,
                        int64_t *fen_cnt, int64_t *fen_sum, double *dev);

#endif
