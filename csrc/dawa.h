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

/* The ranks of x (n values >= 0, n < 2^31) by a stable sort: sv (n) the
 * values in non-decreasing order, rank (n) the position of x[i] in sv
 * (ties by index).  LSD radix sort on 11-bit digits, as many passes as
 * the largest value needs (at most 6).  key (n int64) and idx, idx2 (n
 * int32): scratch. */
void bf_dawa_ranks(const int64_t *x, size_t n, int32_t *rank, int64_t *sv,
                   int64_t *key, int32_t *idx, int32_t *idx2);

/* x (n): counts.  rank (n): rank of x[i] in ascending order (ties broken
 * by index).  sorted_vals (n): x in ascending order.  scores
 * (bf_dawa_n_intervals(n)): on entry the noise of each interval, on
 * return its score.  fen_cnt, fen_sum (n + 1): scratch.  best (n + 1),
 * back (n + 1): scratch.  starts (n): on return the first index of each
 * bucket in increasing order; *m: the number of buckets.  single (n): the
 * score of the one-value bucket [i, i + 1) (its deviation is 0: the
 * clipped noise plus the penalty), or NULL for the penalty alone.
 * Returns BF_OK. */
int bf_dawa_partition(const int64_t *x, const int64_t *rank,
                      const int64_t *sorted_vals, size_t n, double penalty,
                      double *scores, const double *single, int64_t *fen_cnt,
                      int64_t *fen_sum, double *best, int64_t *back,
                      int64_t *starts, size_t *m);

/* Deviation sum |x_i - mean| of every interval of length L (n - L + 1
 * values into dev), by the same sliding window.  Scratch as above. */
void bf_dawa_deviations(const int64_t *x, const int64_t *rank,
                        const int64_t *sorted_vals, size_t n, size_t L,
                        int64_t *fen_cnt, int64_t *fen_sum, double *dev);

/* ---- Streaming partition: the dynamic program in chunks of end points ----
 *
 * Same scores, same dynamic program and same result as bf_dawa_partition,
 * without the scores of every interval in memory.  The end points are
 * processed in chunks; for every length L = 2^k (a "level") the scores of
 * the intervals [e - L, e) ending in the chunk are computed into one row
 * by a sliding window whose state persists from chunk to chunk, then the
 * dynamic program runs over the chunk.
 *
 * A window's deviation needs c and sb, the number and sum of its values
 * <= q = floor((S - 1) / L) (below the mean S / L).  Lengths up to
 * BF_DAWA_DIRECT scan the window.  Longer ones keep the window as a set
 * of ranks (rank[i]: the position of x[i] in the sorted values sv, ties in
 * any order; each rank is one bit) in a 64-ary bit tree: tier 0 has one
 * bit per rank, tier j + 1 one bit per word of tier j (set when that word
 * is not zero), and every word of every tier is stored with the sum (and
 * above tier 0 the count; a tier-0 word counts by popcount) of the values
 * under it, in the same cache line.  An insertion or removal is O(tiers),
 * about n / 4 bytes a level whatever the values.  c and sb are those of the
 * ranks below a boundary t (every counted rank below it, every other one
 * above); a change of q walks the set from t across at most
 * BF_DAWA_WALK values (O(tiers) each), and beyond that finds the exact
 * boundary by a galloping search over sv and adds the ranks in between
 * through the tiers, reading only non-empty entries (O(64 tiers) at
 * most).  So a window step costs O(tiers) plus the values the threshold
 * crosses, whatever the number of distinct values.
 *
 * With few distinct values (ctx->g given, D <= BF_DAWA_FEW) a level
 * instead counts the window's values per distinct value (tier 0) and in
 * blocks of 64^j distinct values (count and sum, tier j >= 1); c and sb
 * are those of the first t distinct values, t the number of distinct
 * values <= q, found by a galloping search over u; a change of q adds the
 * counts in between through the tiers (at most 64 per tier and side, two
 * tiers).  Lengths up to BF_DAWA_DIRECT_FEW scan.  O(D) memory a level.
 *
 * The noise of interval (L, s) is entry off_L + s of the flat noise
 * vector (lengths in order, starts in order, as bf_dawa_partition).  It
 * comes from `noise` (the whole vector, as doubles) or, when `noise` is
 * NULL, from child streams: entries [j chunk, (j + 1) chunk) are
 * bf_discrete_laplace_fill of the stream seeded by keys[8 j .. 8 j + 8)
 * (little-endian words), as blowfish_privacy.noise draws a large batch, so
 * the noise is the same as drawing the whole vector at once.  A level
 * holds one chunk of its noise at a time. */

#define BF_DAWA_DIRECT 64       /* lengths <= this scan the window */
#define BF_DAWA_FAN_BITS 6      /* bit-tree fan-out 64 */
#define BF_DAWA_TIERS 7         /* enough for 2^42 ranks (n < 2^31 here) */
#define BF_DAWA_WALK 8          /* values crossed one by one before a range query */
#define BF_DAWA_FEW 4096        /* at most this many distinct values: counts per value */
#define BF_DAWA_DIRECT_FEW 16   /* lengths <= this scan the window (few values) */

typedef struct bf_dawa_ctx {
    const int64_t *x;           /* n counts >= 0, total fits int64 */
    const int32_t *rank;        /* n: a permutation of 0..n-1 with sv[rank[i]] == x[i] */
    const int64_t *sv;          /* n: x sorted, non-decreasing */
    const int32_t *g;           /* few values: n indices into u with u[g[i]] == x[i]; else NULL */
    const int64_t *u;           /* few values: the D <= BF_DAWA_FEW distinct values, increasing */
    size_t n, D;
    double penalty;
    const double *noise;        /* bf_dawa_n_intervals(n) values, or NULL */
    const double *single;       /* n scores of the one-value buckets, or NULL: the penalty */
    const uint32_t *keys;       /* 8 words per child chunk when noise == NULL */
    size_t chunk;               /* child chunk length (>= 1) */
    uint64_t t, s;              /* noise scale t/s (trusted: 1 <= t, s <= BF_DLAP_MAX) */
} bf_dawa_ctx;

typedef struct bf_dawa_level {
    size_t len;                 /* L = 2^k */
    unsigned k;
    size_t off;                 /* flat noise index of the interval [0, L) */
    size_t next_end;            /* the next end point this level expects */
    int primed;                 /* elements [0, L - 1) inserted */
    int64_t S, c, sb, q;
    size_t t;                   /* rank boundary of the counted values */
    unsigned ntiers;            /* 0 for a direct level */
    size_t size[BF_DAWA_TIERS]; /* bits of each tier */
    int64_t *blk[BF_DAWA_TIERS]; /* per word of bits: word, sum (, count) */
    int64_t *nbuf;              /* `chunk` noise values (streamed noise) */
    size_t nchunk;              /* child chunk in nbuf, or SIZE_MAX */
} bf_dawa_level;

/* Number of levels: lengths 2, 4, .. <= n. */
unsigned bf_dawa_n_levels(size_t n);

/* int64 words of storage a level of length L needs (0 for a direct
 * level): about n / 32 for the rank set, about D with few values. */
size_t bf_dawa_level_words(const bf_dawa_ctx *ctx, size_t L);

/* Prepare level k (L = 2^k <= n).  words: bf_dawa_level_words(ctx, L)
 * int64 (zeroed here); nbuf: ctx->chunk int64 when ctx->noise is NULL. */
void bf_dawa_level_init(const bf_dawa_ctx *ctx, bf_dawa_level *lv, unsigned k,
                        int64_t *words, int64_t *nbuf);

/* Scores of the intervals [e - L, e) for the end points e in [e0, e1)
 * with e >= L, into row[e - e0] (other entries untouched).  Calls must
 * cover the end points in order: e0 == the previous call's e1 (the first
 * call any e0 <= L).  Returns BF_OK. */
int bf_dawa_level_scores(const bf_dawa_ctx *ctx, bf_dawa_level *lv,
                         size_t e0, size_t e1, double *row);

/* The dynamic program over the end points e in [e0, e1) (1 <= e0, e1 <=
 * n + 1, in order from e0 = 1): rows[(k - 1) * stride + e - e0] holds
 * the score of [e - 2^k, e) for 2^k <= e.  best (n + 1, best[0] = 0 set
 * by the caller), back (n + 1): log2 of the last bucket's length. */
void bf_dawa_dp(const bf_dawa_ctx *ctx, const double *rows, size_t stride,
                size_t e0, size_t e1, double *best, uint8_t *back);

/* Bucket starts from back (after the dynamic program over all of 1..n),
 * increasing, into starts (n); returns their number. */
size_t bf_dawa_backtrack(size_t n, const uint8_t *back, int64_t *starts);

#endif
