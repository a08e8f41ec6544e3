#include "dawa.h"

#include <string.h>

#include "csprng.h"
#include "discrete_laplace.h"
#include "int_ops.h"

size_t bf_dawa_n_intervals(size_t n)
{
    size_t total = 0;
    for (size_t L = 2; L <= n; L <<= 1)
        total += n - L + 1;
    return total;
}

#define RADIX_BITS 11
#define RADIX ((size_t)1 << RADIX_BITS)

void bf_dawa_ranks(const int64_t *x, size_t n, int32_t *rank, int64_t *sv,
                   int64_t *key, int32_t *idx, int32_t *idx2)
{
    int64_t *v = sv, *v2 = key;
    int64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = x[i];
        idx[i] = (int32_t)i;
        top |= x[i];
    }
    /* (v, idx): the pairs sorted by the digits below `shift`; each pass
     * scatters them stably into (v2, idx2) by the next digit. */
    size_t count[RADIX];
    for (unsigned shift = 0; shift < 63 && (top >> shift) != 0; shift += RADIX_BITS) {
        memset(count, 0, sizeof(count));
        for (size_t i = 0; i < n; i++)
            count[(size_t)(v[i] >> shift) & (RADIX - 1)]++;
        size_t pos = 0;
        for (size_t d = 0; d < RADIX; d++) {
            size_t c = count[d];
            count[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t p = count[(size_t)(v[i] >> shift) & (RADIX - 1)]++;
            v2[p] = v[i];
            idx2[p] = idx[i];
        }
        int64_t *tv = v;
        v = v2;
        v2 = tv;
        int32_t *ti = idx;
        idx = idx2;
        idx2 = ti;
    }
    if (v != sv)
        memcpy(sv, v, n * sizeof(int64_t));
    for (size_t j = 0; j < n; j++)
        rank[idx[j]] = (int32_t)j;
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

/* First index in [lo, hi) whose value exceeds q, for a non-decreasing
 * array a with a[lo - 1] <= q (or lo == 0) and a[hi] > q (or hi == the
 * array's end): the number of values <= q. */
static size_t upper_bound(const int64_t *a, size_t lo, size_t hi, int64_t q)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= q)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Number of sorted values v with v * L < S (v below the mean S/L), for
 * S >= 0 and L >= 1, without forming v * L: v * L < S iff v <= (S - 1) / L
 * when S > 0, iff v < 0 when S == 0. */
static size_t below_mean(const int64_t *sorted_vals, size_t n, int64_t S,
                         int64_t L)
{
    return upper_bound(sorted_vals, 0, n, S > 0 ? (S - 1) / L : -1);
}

static void reverse_starts(int64_t *starts, size_t k)
{
    for (size_t i = 0; i < k / 2; i++) {
        int64_t t = starts[i];
        starts[i] = starts[k - 1 - i];
        starts[k - 1 - i] = t;
    }
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
                      double *scores, const double *single, int64_t *fen_cnt,
                      int64_t *fen_sum, double *best, int64_t *back,
                      int64_t *starts, size_t *m)
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
        best[e] = best[e - 1] + (single ? single[e - 1] : penalty);
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
    reverse_starts(starts, k);
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

#define FAN ((size_t)1 << BF_DAWA_FAN_BITS)
#define WORDS(bits) (((bits) + 63) >> 6)
#define NONE SIZE_MAX

/* Bit counts per tier of the rank set: tier 0 one bit per rank, tier j one
 * bit per word of tier j - 1, up to the first tier of one word. */
static unsigned tier_sizes(size_t n, size_t *sizes)
{
    unsigned nt = 1;
    sizes[0] = n;
    while (sizes[nt - 1] > FAN && nt < BF_DAWA_TIERS) {
        sizes[nt] = WORDS(sizes[nt - 1]);
        nt++;
    }
    return nt;
}

/* Each tier is an array of blocks, one per 64-bit word of its bits: the
 * word, then the sum of the values under the block (and, above tier 0,
 * their count; a tier-0 block counts by popcount).  Block w of tier j is
 * bit w of tier j + 1; a block's word and totals share a cache line. */
static size_t stride_of(unsigned j)
{
    return j == 0 ? 2 : 3;
}

/* Few distinct values (ctx->g given): tier 0 counts each distinct value,
 * tier j >= 1 counts and sums blocks of 64^j of them (stride 2). */
static size_t few_stride(unsigned j)
{
    return j == 0 ? 1 : 2;
}

static int few_mode(const bf_dawa_ctx *ctx)
{
    return ctx->g != NULL;
}

static size_t direct_max(const bf_dawa_ctx *ctx)
{
    return few_mode(ctx) ? BF_DAWA_DIRECT_FEW : BF_DAWA_DIRECT;
}

size_t bf_dawa_level_words(const bf_dawa_ctx *ctx, size_t L)
{
    size_t sizes[BF_DAWA_TIERS], words = 0;
    if (L <= direct_max(ctx))
        return 0;
    int few = few_mode(ctx);
    unsigned nt = tier_sizes(few ? ctx->D : ctx->n, sizes);
    for (unsigned j = 0; j < nt; j++)
        words += few ? sizes[j] * few_stride(j) : WORDS(sizes[j]) * stride_of(j);
    return words;
}

void bf_dawa_level_init(const bf_dawa_ctx *ctx, bf_dawa_level *lv, unsigned k,
                        int64_t *words, int64_t *nbuf)
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
    if (lv->len <= direct_max(ctx))
        return;
    int few = few_mode(ctx);
    lv->ntiers = tier_sizes(few ? ctx->D : ctx->n, lv->size);
    memset(words, 0, bf_dawa_level_words(ctx, lv->len) * sizeof(int64_t));
    for (unsigned j = 0; j < lv->ntiers; j++) {
        lv->blk[j] = words;
        words += few ? lv->size[j] * few_stride(j) : WORDS(lv->size[j]) * stride_of(j);
    }
}

#define FCNT(lv, j, e) ((lv)->blk[j][(e) * few_stride(j)])
#define FSUM(lv, j, e) ((lv)->blk[j][(e) * 2 + 1])

static inline void few_add(bf_dawa_level *lv, size_t d, int64_t v)
{
    FCNT(lv, 0, d)++;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t b = d >> (BF_DAWA_FAN_BITS * j);
        FCNT(lv, j, b)++;
        FSUM(lv, j, b) += v;
    }
}

static inline void few_remove(bf_dawa_level *lv, size_t d, int64_t v)
{
    FCNT(lv, 0, d)--;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t b = d >> (BF_DAWA_FAN_BITS * j);
        FCNT(lv, j, b)--;
        FSUM(lv, j, b) -= v;
    }
}

/* Count and sum of the window's values with distinct index in [a, b):
 * the partial blocks of each tier, then the whole blocks one tier up. */
static void few_range(const bf_dawa_ctx *ctx, const bf_dawa_level *lv, size_t a, size_t b,
                      int64_t *c, int64_t *s)
{
    int64_t cc = 0, ss = 0;
    for (unsigned j = 0;; j++) {
        size_t A = (a + FAN - 1) >> BF_DAWA_FAN_BITS, B = b >> BF_DAWA_FAN_BITS;
        int up = j + 1 < lv->ntiers && A < B;
        size_t ends[2][2] = {{a, up ? A << BF_DAWA_FAN_BITS : b}, {up ? B << BF_DAWA_FAN_BITS : b, b}};
        for (int side = 0; side < 2; side++)
            for (size_t i = ends[side][0]; i < ends[side][1]; i++) {
                cc += FCNT(lv, j, i);
                ss += j == 0 ? FCNT(lv, 0, i) * ctx->u[i] : FSUM(lv, j, i);
            }
        if (!up)
            break;
        a = A;
        b = B;
    }
    *c = cc;
    *s = ss;
}

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch((p), 1, 3)
#else
#define PREFETCH(p) ((void)0)
#endif
#define BF_DAWA_PREFETCH 16     /* window steps ahead */

/* Word w of tier j's bits (int64 storage read as uint64, its unsigned
 * type), and the sum and count of the values under it. */
#define BITS(lv, j, w) (((uint64_t *)(lv)->blk[j])[(w) * stride_of(j)])
#define BSUM(lv, j, w) ((lv)->blk[j][(w) * stride_of(j) + 1])
#define BCNT(lv, j, w) ((lv)->blk[j][(w) * 3 + 2])


/* The window's ranks as a set: insertion and removal are O(tiers). */
static inline void rs_insert(bf_dawa_level *lv, size_t r, int64_t v)
{
    BITS(lv, 0, r >> 6) |= (uint64_t)1 << (r & 63);
    BSUM(lv, 0, r >> 6) += v;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t e = r >> (BF_DAWA_FAN_BITS * j);
        BITS(lv, j, e >> 6) |= (uint64_t)1 << (e & 63);
        BSUM(lv, j, e >> 6) += v;
        BCNT(lv, j, e >> 6)++;
    }
}

static inline void rs_remove(bf_dawa_level *lv, size_t r, int64_t v)
{
    BITS(lv, 0, r >> 6) &= ~((uint64_t)1 << (r & 63));
    BSUM(lv, 0, r >> 6) -= v;
    int empty = BITS(lv, 0, r >> 6) == 0;
    for (unsigned j = 1; j < lv->ntiers; j++) {
        size_t e = r >> (BF_DAWA_FAN_BITS * j);
        if (empty) {
            BITS(lv, j, e >> 6) &= ~((uint64_t)1 << (e & 63));
            empty = BITS(lv, j, e >> 6) == 0;
        }
        BSUM(lv, j, e >> 6) -= v;
        BCNT(lv, j, e >> 6)--;
    }
}

/* Least rank >= p in the set, or NONE. */
static size_t rs_next(const bf_dawa_level *lv, size_t p)
{
    unsigned j = 0;
    size_t i = p;
    for (;;) {
        if (i >= lv->size[j])
            return NONE;
        uint64_t m = BITS(lv, j, i >> 6) & (~(uint64_t)0 << (i & 63));
        if (m) {
            i = (i & ~(size_t)63) + bf_ctz64(m);
            break;
        }
        if (j + 1 == lv->ntiers)
            return NONE;
        i = (i >> 6) + 1;
        j++;
    }
    while (j > 0) {
        j--;
        i = (i << 6) + bf_ctz64(BITS(lv, j, i));
    }
    return i;
}

/* Greatest rank < p in the set, or NONE. */
static size_t rs_prev(const bf_dawa_level *lv, size_t p)
{
    if (p == 0)
        return NONE;
    unsigned j = 0;
    size_t i = p - 1;
    for (;;) {
        uint64_t m = BITS(lv, j, i >> 6) & (~(uint64_t)0 >> (63 - (i & 63)));
        if (m) {
            i = (i & ~(size_t)63) + bf_msb64(m);
            break;
        }
        if ((i >> 6) == 0 || j + 1 == lv->ntiers)
            return NONE;
        i = (i >> 6) - 1;
        j++;
    }
    while (j > 0) {
        j--;
        i = (i << 6) + bf_msb64(BITS(lv, j, i));
    }
    return i;
}

/* Count and sum of the entries of tier j marked in m (word w of its
 * bits): ranks on tier 0, blocks of tier j - 1 above. */
static inline void rs_word(const bf_dawa_ctx *ctx, const bf_dawa_level *lv, unsigned j,
                           size_t w, uint64_t m, int64_t *c, int64_t *s)
{
    if (!m)
        return;
    size_t base = w << 6;
    if (j == 0) {
        const int64_t *sv = ctx->sv + base;
        int64_t cnt = (int64_t)bf_popcount64(m);
        *c += cnt;
        if (sv[bf_ctz64(m)] == sv[bf_msb64(m)]) {   /* one value: a run of ties */
            *s += cnt * sv[bf_ctz64(m)];
            return;
        }
        for (; m; m &= m - 1)
            *s += sv[bf_ctz64(m)];
        return;
    }
    for (; m; m &= m - 1) {
        size_t e = base + bf_ctz64(m);
        *c += j == 1 ? (int64_t)bf_popcount64(BITS(lv, 0, e)) : BCNT(lv, j - 1, e);
        *s += BSUM(lv, j - 1, e);
    }
}

/* Mask of the bits [a, b) of one word (0 <= a < b <= 64). */
static inline uint64_t bit_range(unsigned a, unsigned b)
{
    uint64_t hi = b == 64 ? ~(uint64_t)0 : (((uint64_t)1 << b) - 1);
    return hi & (~(uint64_t)0 << a);
}

/* Count and sum of the window's values with rank in [a, b): the partial
 * words of each tier, then the whole blocks one tier up; only the marked
 * (non-empty) entries are read. */
static void rs_range(const bf_dawa_ctx *ctx, const bf_dawa_level *lv, size_t a, size_t b,
                     int64_t *c, int64_t *s)
{
    int64_t cc = 0, ss = 0;
    for (unsigned j = 0; a < b; j++) {
        size_t A = (a + 63) >> 6, B = b >> 6;
        if (j + 1 < lv->ntiers && A < B) {
            if (a & 63)
                rs_word(ctx, lv, j, a >> 6, BITS(lv, j, a >> 6) & bit_range((unsigned)(a & 63), 64), &cc, &ss);
            if (b & 63)
                rs_word(ctx, lv, j, B, BITS(lv, j, B) & bit_range(0, (unsigned)(b & 63)), &cc, &ss);
            a = A;
            b = B;
            continue;
        }
        for (size_t w = a >> 6; w <= (b - 1) >> 6; w++) {
            unsigned lo = w == (a >> 6) ? (unsigned)(a & 63) : 0;
            unsigned hi = w == ((b - 1) >> 6) ? (unsigned)((b - 1) & 63) + 1 : 64;
            rs_word(ctx, lv, j, w, BITS(lv, j, w) & bit_range(lo, hi), &cc, &ss);
        }
        break;
    }
    *c = cc;
    *s = ss;
}

/* Number of sorted values <= q, searched from the previous answer t. */
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
    return upper_bound(u, lo, hi, q);
}

/* Move the level's threshold to q (from lv->q): c and sb become the count
 * and sum of the window's values <= q, lv->t a rank boundary with them
 * below it and the others above.  A few values at a time by walking the
 * set; past BF_DAWA_WALK of them, the exact boundary by a galloping search
 * and the ranks in between through the tiers. */
/* A window's running state (kept in locals by the loops, not in the level). */
typedef struct win {
    int64_t S, c, sb, q;
    size_t t;
} win;

static inline void move_threshold(const bf_dawa_ctx *ctx, const bf_dawa_level *lv, win *w, int64_t q)
{
    const int64_t *sv = ctx->sv;
    size_t t = w->t;
    int64_t c = w->c, sb = w->sb;
    if (q > w->q) {
        for (int i = 0; i < BF_DAWA_WALK; i++) {
            size_t r = rs_next(lv, t);
            if (r == NONE || sv[r] > q)
                goto done;
            c++;
            sb += sv[r];
            t = r + 1;
        }
    } else {
        for (int i = 0; i < BF_DAWA_WALK; i++) {
            size_t r = rs_prev(lv, t);
            if (r == NONE || sv[r] <= q)
                goto done;
            c--;
            sb -= sv[r];
            t = r;
        }
    }
    {
        size_t t2 = count_le(sv, ctx->n, q, t);
        int64_t dc, ds;
        if (t2 > t) {
            rs_range(ctx, lv, t, t2, &dc, &ds);
            c += dc;
            sb += ds;
        } else if (t2 < t) {
            rs_range(ctx, lv, t2, t, &dc, &ds);
            c -= dc;
            sb -= ds;
        }
        t = t2;
    }
done:
    w->t = t;
    w->c = c;
    w->sb = sb;
    w->q = q;
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

/* inv_L = 1 / L for L = 2^k: S * inv_L is exactly S / L (a power of two),
 * without the division. */
static inline double window_score(const bf_dawa_ctx *ctx, int64_t S, int64_t c, int64_t sb,
                                  size_t L, double inv_L, double z)
{
    /* As bf_dawa_deviations and bf_dawa_partition, operation for operation. */
    double dev = (double)((S - sb) - sb) + (double)(2 * c - (int64_t)L) * ((double)S * inv_L);
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
    const double inv_L = 1.0 / (double)L;
    const int64_t *x = ctx->x;
    size_t e = e0 > L ? e0 : L;
    if (e >= e1) {
        lv->next_end = e1;
        return BF_OK;
    }
    if (!lv->primed) {
        /* threshold q = -1: no value counted, boundary t = 0 */
        for (size_t i = 0; i + 1 < L; i++) {
            lv->S += x[i];
            if (lv->ntiers && few_mode(ctx))
                few_add(lv, (size_t)ctx->g[i], x[i]);
            else if (lv->ntiers)
                rs_insert(lv, (size_t)ctx->rank[i], x[i]);
        }
        lv->primed = 1;
    }
    if (lv->ntiers == 0) {
        int64_t S = lv->S;
        for (; e < e1; e++) {
            size_t s = e - L;
            S += x[e - 1];
            int64_t q = S > 0 ? (S - 1) >> k : -1;
            /* the values above q: the sign of q - v (no overflow: both
             * lie in [-1, 2^63)), in unsigned arithmetic that vectorises */
            uint64_t above = 0, sa = 0;
            for (size_t i = s; i < e; i++) {
                uint64_t v = (uint64_t)x[i];
                uint64_t gt = ((uint64_t)q - v) >> 63;
                above += gt;
                sa += v & (0 - gt);
            }
            int64_t c = (int64_t)L - (int64_t)above, sb = S - (int64_t)sa;
            row[e - e0] = window_score(ctx, S, c, sb, L, inv_L, noise_at(ctx, lv, lv->off + s));
            S -= x[s];
        }
        lv->S = S;
        lv->next_end = e1;
        return BF_OK;
    }
    win w = {lv->S, lv->c, lv->sb, lv->q, lv->t};
    if (few_mode(ctx)) {
        const int32_t *g = ctx->g;
        for (; e < e1; e++) {
            size_t s = e - L;
            size_t d = (size_t)g[e - 1];
            int64_t v = x[e - 1];
            few_add(lv, d, v);
            w.S += v;
            if (d < w.t) {      /* t: the number of distinct values <= q */
                w.c++;
                w.sb += v;
            }
            int64_t q = w.S > 0 ? (w.S - 1) >> k : -1;
            if (q != w.q) {
                size_t t2 = count_le(ctx->u, ctx->D, q, w.t);
                int64_t dc, ds;
                if (t2 > w.t) {
                    few_range(ctx, lv, w.t, t2, &dc, &ds);
                    w.c += dc;
                    w.sb += ds;
                } else if (t2 < w.t) {
                    few_range(ctx, lv, t2, w.t, &dc, &ds);
                    w.c -= dc;
                    w.sb -= ds;
                }
                w.t = t2;
                w.q = q;
            }
            row[e - e0] = window_score(ctx, w.S, w.c, w.sb, L, inv_L, noise_at(ctx, lv, lv->off + s));
            d = (size_t)g[s];
            v = x[s];
            few_remove(lv, d, v);
            w.S -= v;
            if (d < w.t) {
                w.c--;
                w.sb -= v;
            }
        }
    } else {
        const int32_t *rank = ctx->rank;
        for (; e < e1; e++) {
            size_t s = e - L;
            if (e + BF_DAWA_PREFETCH < ctx->n) {
                /* the blocks of later insertions and removals (random ranks) */
                PREFETCH(&BITS(lv, 0, (size_t)rank[e + BF_DAWA_PREFETCH] >> 6));
                PREFETCH(&BITS(lv, 0, (size_t)rank[s + BF_DAWA_PREFETCH] >> 6));
            }
            size_t r = (size_t)rank[e - 1];
            int64_t v = x[e - 1];
            rs_insert(lv, r, v);
            w.S += v;
            /* Counted iff v <= q; the boundary moves past r when needed
             * (no other value of the window lies between: ranks follow
             * values). */
            if (v <= w.q) {
                w.c++;
                w.sb += v;
                if (r >= w.t)
                    w.t = r + 1;
            } else if (r < w.t) {
                w.t = r;
            }
            int64_t q = w.S > 0 ? (w.S - 1) >> k : -1;
            if (q != w.q)
                move_threshold(ctx, lv, &w, q);
            row[e - e0] = window_score(ctx, w.S, w.c, w.sb, L, inv_L, noise_at(ctx, lv, lv->off + s));
            r = (size_t)rank[s];
            v = x[s];
            rs_remove(lv, r, v);
            w.S -= v;
            if (v <= w.q) {
                w.c--;
                w.sb -= v;
            }
        }
    }
    lv->S = w.S;
    lv->c = w.c;
    lv->sb = w.sb;
    lv->q = w.q;
    lv->t = w.t;
    lv->next_end = e1;
    return BF_OK;
}

void bf_dawa_dp(const bf_dawa_ctx *ctx, const double *rows, size_t stride,
                size_t e0, size_t e1, double *best, uint8_t *back)
{
    const double pen = ctx->penalty;
    for (size_t e = e0; e < e1; e++) {
        /* As bf_dawa_partition: ties go to the longer last bucket. */
        double b = best[e - 1] + (ctx->single ? ctx->single[e - 1] : pen);
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
    reverse_starts(starts, k);
    return k;
}
