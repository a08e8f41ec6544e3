#include "dawa.h"

#include <string.h>

#include "csprng.h"
#include "discrete_laplace.h"

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

/* ---- Streaming partition (see dawa.h) ---------------------------------- */

unsigned bf_dawa_n_levels(size_t n)
{
    unsigned k = 0;
    for (size_t L = 2; L <= n; L <<= 1)
        k++;
    return k;
}

/* Tier sizes: tier 0 has D entries, tier j ceil(D / 64^j), up to the
 * first tier of at most 64 entries. */
static unsigned tier_sizes(size_t D, size_t *sizes)
{
    unsigned nt = 1;
    sizes[0] = D;
    while (sizes[nt - 1] > ((size_t)1 << BF_DAWA_FAN_BITS) && nt < BF_DAWA_TIERS) {
        sizes[nt] = (sizes[nt - 1] + ((size_t)1 << BF_DAWA_FAN_BITS) - 1) >> BF_DAWA_FAN_BITS;
        nt++;
    }
    return nt;
}

void bf_dawa_level_words(size_t D, size_t L, size_t *cnt_words, size_t *sum_words)
{
    size_t sizes[BF_DAWA_TIERS];
    *cnt_words = *sum_words = 0;
    if (L <= BF_DAWA_DIRECT)
        return;
    unsigned nt = tier_sizes(D, sizes);
    for (unsigned j = 0; j < nt; j++) {
        *cnt_words += sizes[j];
        if (j > 0)
            *sum_words += sizes[j];
    }
}

void bf_dawa_level_init(const bf_dawa_ctx *ctx, bf_dawa_level *lv, unsigned k,
                        uint32_t *cnt, int64_t *sum, int64_t *nbuf)
{
    memset(lv, 0, sizeof(*lv));
    lv->k = k;
    lv->len = (size_t)1 << k;
    size_t off = 0;
    for (size_t L = 2; L < lv->len; L <<= 1)
        off += ctx->n - L + 1;
    lv->off = off;
    lv->next_end = 0;
    lv->q = -1;
    lv->nbuf = nbuf;
    lv->nchunk = SIZE_MAX;
    if (lv->len <= BF_DAWA_DIRECT)
        return;
    size_t sizes[BF_DAWA_TIERS];
    lv->ntiers = tier_sizes(ctx->D, sizes);
    for (unsigned j = 0; j < lv->ntiers; j++) {
        lv->cnt[j] = cnt;
        memset(cnt, 0, sizes[j] * sizeof(uint32_t));
        cnt += sizes[j];
        if (j > 0) {
            lv->sum[j] = sum;
            memset(sum, 0, sizes[j] * sizeof(int64_t));
            sum += sizes[j];
        }
    }
}

static inline void tier_add(bf_dawa_level *lv, size_t d, int64_t v)
{
    lv->cnt[0][d]++;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t b = d >> (BF_DAWA_FAN_BITS * j);
        lv->cnt[j][b]++;
        lv->sum[j][b] += v;
    }
}

static inline void tier_remove(bf_dawa_level *lv, size_t d, int64_t v)
{
    lv->cnt[0][d]--;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t b = d >> (BF_DAWA_FAN_BITS * j);
        lv->cnt[j][b]--;
        lv->sum[j][b] -= v;
    }
}

/* Count and sum of the window's values with distinct index in [a, b). */
static void tier_range(const bf_dawa_level *lv, const int64_t *u, size_t a, size_t b,
                       int64_t *c, int64_t *s)
{
    const size_t fan = (size_t)1 << BF_DAWA_FAN_BITS;
    int64_t cc = 0, ss = 0;
    unsigned j = 0;
    for (;;) {
        if (a >= b)
            break;
        if (j + 1 < lv->ntiers && b - a >= 2 * fan) {
            size_t A = (a + fan - 1) >> BF_DAWA_FAN_BITS, B = b >> BF_DAWA_FAN_BITS;
            /* the partial blocks at both ends, on this tier */
            for (size_t i = a; i < (A << BF_DAWA_FAN_BITS); i++) {
                cc += lv->cnt[j][i];
                ss += j == 0 ? (int64_t)lv->cnt[0][i] * u[i] : lv->sum[j][i];
            }
            for (size_t i = B << BF_DAWA_FAN_BITS; i < b; i++) {
                cc += lv->cnt[j][i];
                ss += j == 0 ? (int64_t)lv->cnt[0][i] * u[i] : lv->sum[j][i];
            }
            a = A;
            b = B;
            j++;
            continue;
        }
        for (size_t i = a; i < b; i++) {
            cc += lv->cnt[j][i];
            ss += j == 0 ? (int64_t)lv->cnt[0][i] * u[i] : lv->sum[j][i];
        }
        break;
    }
    *c = cc;
    *s = ss;
}

/* Number of distinct values <= q, searched from the previous answer t. */
static size_t count_le(const int64_t *u, size_t D, int64_t q, size_t t)
{
    size_t lo, hi;             /* answer in [lo, hi] */
    if (t < D && u[t] <= q) {  /* move up: u[t] <= q */
        size_t step = 1;
        lo = t + 1;
        while (lo + step - 1 < D && u[lo + step - 1] <= q) {
            lo += step;
            step <<= 1;
        }
        hi = lo + step - 1 < D ? lo + step - 1 : D;
    } else if (t > 0 && u[t - 1] > q) {  /* move down */
        size_t step = 1;
        hi = t - 1;
        while (hi >= step && u[hi - step] > q) {
            hi -= step;
            step <<= 1;
        }
        lo = hi >= step ? hi - step + 1 : 0;
    } else {
        return t;
    }
    /* u[lo - 1] <= q (or lo == 0) and u[hi] > q (or hi == D) */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (u[mid] <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The noise of flat index f (streamed: loading its child chunk). */
static inline double noise_at(const bf_dawa_ctx *ctx, bf_dawa_level *lv, size_t f)
{
    if (ctx->noise)
        return ctx->noise[f];
    size_t j = f / ctx->chunk;
    if (j != lv->nchunk) {
        size_t total = bf_dawa_n_intervals(ctx->n);
        size_t len = total - j * ctx->chunk;
        if (len > ctx->chunk)
            len = ctx->chunk;
        uint8_t seed[32];
        for (int w = 0; w < 8; w++) {
            uint32_t word = ctx->keys[8 * j + (size_t)w];
            for (int b = 0; b < 4; b++)
                seed[4 * w + b] = (uint8_t)(word >> (8 * b));
        }
        bf_rng rng;
        bf_rng_init_seeded(&rng, seed);
        bf_discrete_laplace_fill(&rng, ctx->t, ctx->s, lv->nbuf, len);
        memset(&rng, 0, sizeof(rng));
        memset(seed, 0, sizeof(seed));
        lv->nchunk = j;
    }
    return (double)lv->nbuf[f - j * ctx->chunk];
}

static inline double window_score(const bf_dawa_ctx *ctx, int64_t S, int64_t c, int64_t sb,
                                  size_t L, double z)
{
    /* As bf_dawa_deviations and bf_dawa_partition, operation for operation. */
    double dev = (double)((S - sb) - sb) + (double)(2 * c - (int64_t)L) * ((double)S / (double)L);
    if (dev < 0)
        dev = 0;
    double v = dev + z;
    return (v > 0 ? v : 0) + ctx->penalty;
}

int bf_dawa_level_scores(const bf_dawa_ctx *ctx, bf_dawa_level *lv,
                         size_t e0, size_t e1, double *row)
{
    const size_t L = lv->len;
    const unsigned k = lv->k;
    const int64_t *x = ctx->x;
    size_t e = e0 > L ? e0 : L;
    if (e >= e1) {
        lv->next_end = e1;
        return BF_OK;
    }
    if (!lv->primed) {
        for (size_t i = 0; i + 1 < L; i++) {
            lv->S += x[i];
            if (lv->ntiers)
                tier_add(lv, (size_t)ctx->g[i], x[i]);
        }
        lv->primed = 1;
    }
    int64_t S = lv->S;
    if (lv->ntiers == 0) {
        for (; e < e1; e++) {
            size_t s = e - L;
            S += x[e - 1];
            int64_t q = S > 0 ? (S - 1) >> k : -1;
            int64_t c = 0, sb = 0;
            for (size_t i = s; i < e; i++) {
                int64_t v = x[i];
                int64_t m = -(int64_t)(v <= q);
                c -= m;
                sb += v & m;
            }
            row[e - e0] = window_score(ctx, S, c, sb, L, noise_at(ctx, lv, lv->off + s));
            S -= x[s];
        }
        lv->S = S;
        lv->next_end = e1;
        return BF_OK;
    }
    const int32_t *g = ctx->g;
    const int64_t *u = ctx->u;
    int64_t c = lv->c, sb = lv->sb, qc = lv->q;
    size_t t = lv->t;
    for (; e < e1; e++) {
        size_t s = e - L;
        size_t d = (size_t)g[e - 1];
        int64_t v = x[e - 1];
        tier_add(lv, d, v);
        S += v;
        if (d < t) {
            c++;
            sb += v;
        }
        int64_t q = S > 0 ? (S - 1) >> k : -1;
        if (q != qc) {
            size_t t2 = count_le(u, ctx->D, q, t);
            int64_t dc, ds;
            if (t2 > t) {
                tier_range(lv, u, t, t2, &dc, &ds);
                c += dc;
                sb += ds;
            } else if (t2 < t) {
                tier_range(lv, u, t2, t, &dc, &ds);
                c -= dc;
                sb -= ds;
            }
            t = t2;
            qc = q;
        }
        row[e - e0] = window_score(ctx, S, c, sb, L, noise_at(ctx, lv, lv->off + s));
        d = (size_t)g[s];
        v = x[s];
        tier_remove(lv, d, v);
        S -= v;
        if (d < t) {
            c--;
            sb -= v;
        }
    }
    lv->S = S;
    lv->c = c;
    lv->sb = sb;
    lv->q = qc;
    lv->t = t;
    lv->next_end = e1;
    return BF_OK;
}

void bf_dawa_dp(const bf_dawa_ctx *ctx, const double *rows, size_t stride,
                size_t e0, size_t e1, double *best, uint8_t *back)
{
    const double pen = ctx->penalty;
    for (size_t e = e0; e < e1; e++) {
        /* As bf_dawa_partition: ties go to the longer last bucket. */
        double b = best[e - 1] + pen;
        unsigned code = 0;
        const double *r = rows + (e - e0);
        for (unsigned k = 1; ((size_t)1 << k) <= e; k++, r += stride) {
            double v = best[e - ((size_t)1 << k)] + *r;
            int better = v <= b;   /* selects, not branches: the outcome is data-dependent */
            b = better ? v : b;
            code = better ? k : code;
        }
        best[e] = b;
        back[e] = (uint8_t)code;
    }
}

size_t bf_dawa_backtrack(size_t n, const uint8_t *back, int64_t *starts)
{
    size_t k = 0;
    for (size_t e = n; e > 0;) {
        e -= (size_t)1 << back[e];
        starts[k++] = (int64_t)e;
    }
    for (size_t i = 0; i < k / 2; i++) {
        int64_t t = starts[i];
        starts[i] = starts[k - 1 - i];
        starts[k - 1 - i] = t;
    }
    return k;
}
