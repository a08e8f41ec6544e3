#include "dawa.h"

#include <string.h>

size_t bf_dawa_n_intervals(size_t n)
{
    size_t total = 0;
    for (size_t L = 2; L <= n; L <<= 1)
        total += n - L + 1;
    return total;
}

static void fen_add(int64_t *cnt, int64_t *sum, size_t n, size_t pos,
                    int64_t dc, int64_t ds)
{
    for (size_t i = pos + 1; i <= n; i += i & (~i + 1)) {
        cnt[i] += dc;
        sum[i] += ds;
    }
}

static void fen_prefix(const int64_t *cnt, const int64_t *sum, size_t end,
                       int64_t *c, int64_t *s)
{
    int64_t cc = 0, ss = 0;
    for (size_t i = end; i > 0; i -= i & (~i + 1)) {
        cc += cnt[i];
        ss += sum[i];
    }
    *c = cc;
    *s = ss;
}

/* Number of sorted values v with v * L < S (v below the mean S/L), for
 * S >= 0 and L >= 1, without forming v * L: v * L < S iff v <= (S - 1) / L
 * when S > 0, iff v < 0 when S == 0. */
static size_t below_mean(const int64_t *sorted_vals, size_t n, int64_t S,
                         int64_t L)
{
    int64_t q = S > 0 ? (S - 1) / L : -1;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sorted_vals[mid] <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void bf_dawa_deviations(const int64_t *x, const int64_t *rank,
                        const int64_t *sorted_vals, size_t n, size_t L,
                        int64_t *fen_cnt, int64_t *fen_sum, double *dev)
{
    memset(fen_cnt, 0, (n + 1) * sizeof(int64_t));
    memset(fen_sum, 0, (n + 1) * sizeof(int64_t));
    int64_t S = 0;
    for (size_t i = 0; i + 1 < L; i++) {
        fen_add(fen_cnt, fen_sum, n, (size_t)rank[i], 1, x[i]);
        S += x[i];
    }
    for (size_t s = 0; s + L <= n; s++) {
        size_t e = s + L - 1;
        fen_add(fen_cnt, fen_sum, n, (size_t)rank[e], 1, x[e]);
        S += x[e];
        /* Values below the mean all have ranks below p (ranks follow the
         * sorted order), so the window's values below the mean are its
         * elements with rank < p. */
        size_t p = below_mean(sorted_vals, n, S, (int64_t)L);
        int64_t c, sb;
        fen_prefix(fen_cnt, fen_sum, p, &c, &sb);
        /* sum_{v<m} (m - v) + sum_{v>=m} (v - m), m = S/L:
         * = S - 2 sb + (2c - L) S / L */
        dev[s] = (double)((S - sb) - sb) + (double)(2 * c - (int64_t)L) * ((double)S / (double)L);
        if (dev[s] < 0)
            dev[s] = 0;
        fen_add(fen_cnt, fen_sum, n, (size_t)rank[s], -1, -x[s]);
        S -= x[s];
    }
}

int bf_dawa_partition(const int64_t *x, const int64_t *rank,
                      const int64_t *sorted_vals, size_t n, double penalty,
                      double *scores, int64_t *fen_cnt, int64_t *fen_sum,
                      double *best, int64_t *back, int64_t *starts,
                      size_t *m)
{
    /* Scores of every interval of length >= 2, in place over the noise.
     * The deviations of one length are computed into `best` (n + 1 >=
     * n - L + 1 slots) before being combined with that length's noise. */
    size_t off = 0;
    for (size_t L = 2; L <= n; L <<= 1) {
        size_t cnt = n - L + 1;
        bf_dawa_deviations(x, rank, sorted_vals, n, L, fen_cnt, fen_sum, best);
        for (size_t s = 0; s < cnt; s++) {
            double v = best[s] + scores[off + s];
            scores[off + s] = (v > 0 ? v : 0) + penalty;
        }
        off += cnt;
    }
    /* best[e]: least total score of a partition of [0, e).  Ties go to
     * the longer last bucket. */
    best[0] = 0;
    back[0] = -1;
    for (size_t e = 1; e <= n; e++) {
        best[e] = best[e - 1] + penalty;
        back[e] = (int64_t)(e - 1);
        size_t lo = 0;
        for (size_t L = 2; L <= e; L <<= 1) {
            size_t s = e - L;
            double v = best[s] + scores[lo + s];
            if (v <= best[e]) {
                best[e] = v;
                back[e] = (int64_t)s;
            }
            lo += n - L + 1;
        }
    }
    size_t k = 0;
    for (int64_t e = (int64_t)n; e > 0; e = back[e])
        starts[k++] = back[e];
    for (size_t i = 0; i < k / 2; i++) {
        int64_t t = starts[i];
        starts[i] = starts[k - 1 - i];
        starts[k - 1 - i] = t;
    }
    *m = k;
    return BF_OK;
}
