#include "tree.h"

#include <math.h>
#include <string.h>

#include "discrete_laplace.h"
#include "int_ops.h"

/* ------------------------------------------------------------------------
 * Integer sums
 * ---------------------------------------------------------------------- */

int bf_prefix_sum_i64(const int64_t *x, int64_t *out, size_t n)
{
    int64_t s = 0;
    int overflow = 0;
    for (size_t i = 0; i < n; i++) {
        overflow |= bf_add_ovf(s, x[i], &s);
        out[i] = s;
    }
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_sum_i64(const int64_t *x, size_t n, int64_t *out)
{
    int64_t s = 0;
    int overflow = 0;
    for (size_t i = 0; i < n; i++) overflow |= bf_add_ovf(s, x[i], &s);
    *out = s;
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_noisy_cumulative(const int64_t *x, const int64_t *noise, size_t m, double *out)
{
    /* one pass: out[i] = (x[0] + ... + x[i]) + noise[i], each exact in
     * int64 before the conversion; out may be noise's storage, so every
     * noise value is read before its place is written (memcpy: the store
     * of a double where an int64 was read) */
    int64_t s = 0;
    int overflow = 0;
    for (size_t i = 0; i < m; i++) {
        int64_t r;
        overflow |= bf_add_ovf(s, x[i], &s);
        overflow |= bf_add_ovf(s, noise[i], &r);
        double d = (double)r;
        memcpy(out + i, &d, sizeof d);
    }
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

int bf_noisy_cumulative_streams(const int64_t *x, size_t m, size_t chunk, const uint32_t key[8],
                                uint64_t t, uint64_t s, size_t g0, size_t g1,
                                const int64_t *base, double *out)
{
    int overflow = 0;
    bf_rng rng;
    for (size_t g = g0; g < g1; g++) {
        size_t i0 = g * chunk, len = m - i0 < chunk ? m - i0 : chunk;
        /* the chunk's noise first, in the place of its output */
        int64_t *noise = (int64_t *)(void *)(out + i0);
        bf_rng_init_stream(&rng, key, g);
        bf_discrete_laplace_fill(&rng, t, s, noise, len);
        int64_t acc = base[g];
        for (size_t i = i0; i < i0 + len; i++) {
            int64_t r, z;
            memcpy(&z, out + i, sizeof z);
            overflow |= bf_add_ovf(acc, x[i], &acc);
            overflow |= bf_add_ovf(acc, z, &r);
            double d = (double)r;
            memcpy(out + i, &d, sizeof d);
        }
    }
    bf_rng_wipe(&rng);
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

/* Counts per chunk of the fast path below: small enough that the chunk's
 * sum cannot wrap twice, large enough to keep the loop vectorised. */
#define COUNT_CHUNK 2048

/* When every value of a chunk is non-negative, the OR of the chunk bounds
 * each value from above, so the chunk's sum is at most COUNT_CHUNK * OR:
 * if that and the running sum fit int64 together, the plain (vectorised)
 * sum is exact.  Otherwise the chunk is summed with a check per element. */
int bf_sum_counts_i64(const int64_t *x, size_t n, int64_t *out, int *negative)
{
    int64_t s = 0;
    uint64_t sign = 0;
    int overflow = 0;
    for (size_t i0 = 0; i0 < n; i0 += COUNT_CHUNK) {
        size_t i1 = n - i0 < COUNT_CHUNK ? n : i0 + COUNT_CHUNK;
        uint64_t any = 0, sum = 0;
        for (size_t i = i0; i < i1; i++) {
            any |= (uint64_t)x[i];
            sum += (uint64_t)x[i];
        }
        sign |= any;
        /* the bound COUNT_CHUNK * any, not the wrapped sum, decides */
        if (!(any >> 63) && !overflow && s >= 0 &&
            any <= (uint64_t)(INT64_MAX - s) / COUNT_CHUNK) {
            s += (int64_t)sum;
            continue;
        }
        for (size_t i = i0; i < i1; i++) overflow |= bf_add_ovf(s, x[i], &s);
    }
    *out = s;
    *negative = (int)(sign >> 63);
    return overflow ? BF_ERR_OVERFLOW : BF_OK;
}

/* Outputs per chunk of the level sums: the range check below runs once per
 * chunk, and a chunk of children (CHUNK * f words) stays in L1/L2 for the
 * rare exact recheck. */
#define LEVEL_CHUNK 256

/* Exact sum of f int64 values: 1 if it does not fit int64.  Additions wrap
 * modulo 2^64 and `wraps` counts them with their direction, so the exact
 * sum is s + wraps * 2^64 and fits iff wraps == 0. */
static int exact_sum(const int64_t *c, size_t f, int64_t *out)
{
    uint64_t s = 0;
    int64_t wraps = 0;
    for (size_t j = 0; j < f; j++) {
        uint64_t x = (uint64_t)c[j];
        uint64_t r = s + x;
        if (((s ^ r) & (x ^ r)) >> 63) wraps += (x >> 63) ? -1 : 1;
        s = r;
    }
    *out = (int64_t)s;
    return wraps != 0;
}

/* Sums of one chunk of parents [g0, g1) with wrapping unsigned arithmetic
 * (vectorised by the compiler; `f` is a constant after inlining).  Returns
 * the OR of (child + bias) over the chunk: every child lies in
 * [-bias, bias) iff the result is below 2 * bias. */
static inline uint64_t sums_chunk(const int64_t *child, int64_t *out,
                                  size_t g0, size_t g1, size_t f, uint64_t bias)
{
    const uint64_t *c = (const uint64_t *)child;
    uint64_t range = 0;
    for (size_t g = g0; g < g1; g++) {
        const uint64_t *cg = c + g * f;
        uint64_t s = 0;
        for (size_t j = 0; j < f; j++) {
            s += cg[j];
            range |= cg[j] + bias;
        }
        out[g] = (int64_t)s;
    }
    return range;
}

static inline int level_sums(const int64_t *child, int64_t *out, size_t m, size_t f,
                             int log2f)
{
    /* With every child in [-2^b, 2^b) and f <= 2^(63 - b), no sum of f
     * children can leave [-2^63, 2^63). */
    int b = 63 - log2f;
    uint64_t bias = b >= 1 ? (uint64_t)1 << b : 0;
    for (size_t g0 = 0; g0 < m; g0 += LEVEL_CHUNK) {
        size_t g1 = m - g0 < LEVEL_CHUNK ? m : g0 + LEVEL_CHUNK;
        uint64_t range = sums_chunk(child, out, g0, g1, f, bias);
        if (bias == 0 || (range >> b) > 1) {
            /* Some child is large: recheck this chunk exactly. */
            for (size_t g = g0; g < g1; g++)
                if (exact_sum(child + g * f, f, out + g)) return BF_ERR_OVERFLOW;
        }
    }
    return BF_OK;
}

int bf_level_sums_i64(const int64_t *child, int64_t *out, size_t m, size_t f)
{
    if (f == 16) return level_sums(child, out, m, 16, 4);
    if (f == 2) return level_sums(child, out, m, 2, 1);
    int log2f = 0; /* ceil(log2(f)) */
    while (log2f < 64 && ((uint64_t)1 << log2f) < (uint64_t)f) log2f++;
    return level_sums(child, out, m, f, log2f);
}

/* ------------------------------------------------------------------------
 * Weighted least squares
 * ---------------------------------------------------------------------- */

/* Sum of f >= 1 doubles in a fixed order with four interleaved partial
 * sums: with f a constant after inlining the compiler keeps them in vector
 * registers (no reassociation of floating point is needed). */
static inline double sum_f(const double *c, size_t f)
{
    if (f < 4) {
        double s = c[0];
        for (size_t j = 1; j < f; j++) s += c[j];
        return s;
    }
    double a0 = c[0], a1 = c[1], a2 = c[2], a3 = c[3];
    size_t j = 4;
    for (; j + 4 <= f; j += 4) {
        a0 += c[j];
        a1 += c[j + 1];
        a2 += c[j + 2];
        a3 += c[j + 3];
    }
    for (; j < f; j++) a0 += c[j];
    return (a0 + a1) + (a2 + a3);
}

/* The combination rule of tree.h for (a, va) and (b, vb). */
static inline void combine(double a, double va, double b, double vb,
                           double *x, double *vx)
{
    if (va == INFINITY) {
        *x = b;
        *vx = vb;
    } else if (vb == INFINITY) {
        *x = a;
        *vx = va;
    } else if (va == 0.0) {
        *x = a;
        *vx = 0.0;
    } else if (vb == 0.0) {
        *x = b;
        *vx = 0.0;
    } else {
        double pa = 1.0 / va, pb = 1.0 / vb, p = pa + pb;
        *x = (a * pa + b * pb) / p;
        *vx = 1.0 / p;
    }
}

static inline void up_level(const double *zc, const double *vc, double *z, double *v,
                            size_t m, size_t f)
{
    for (size_t g = 0; g < m; g++) {
        double s = sum_f(zc + g * f, f);
        double vs = sum_f(vc + g * f, f);
        combine(z[g], v[g], s, vs, &z[g], &v[g]);
    }
}

void bf_wls_up_level(const double *zc, const double *vc, double *z, double *v,
                     size_t m, size_t f)
{
    if (f == 16) up_level(zc, vc, z, v, m, 16);
    else if (f == 2) up_level(zc, vc, z, v, m, 2);
    else up_level(zc, vc, z, v, m, f);
}

/* Distribute d over the f children c (variances vc, summing to vs). */
static inline void distribute(double *c, const double *vc, double vs, double d, size_t f)
{
    if (vs == INFINITY) {
        size_t unobserved = 0;
        for (size_t j = 0; j < f; j++) unobserved += vc[j] == INFINITY;
        if (unobserved > 0) {
            double share = d / (double)unobserved;
            for (size_t j = 0; j < f; j++)
                if (vc[j] == INFINITY) c[j] += share;
            return;
        }
    }
    if (vs > 0.0) {
        double r = d / vs;
        for (size_t j = 0; j < f; j++) c[j] += vc[j] * r;
    }
}

static inline void down_level(const double *xp, double *zc, const double *vc,
                              size_t m, size_t f)
{
    for (size_t g = 0; g < m; g++) {
        double *c = zc + g * f;
        const double *w = vc + g * f;
        double d = xp[g] - sum_f(c, f);
        distribute(c, w, sum_f(w, f), d, f);
    }
}

void bf_wls_down_level(const double *xp, double *zc, const double *vc,
                       size_t m, size_t f)
{
    if (f == 16) down_level(xp, zc, vc, m, 16);
    else if (f == 2) down_level(xp, zc, vc, m, 2);
    else down_level(xp, zc, vc, m, f);
}

void bf_wls_chain(const double *ys, const double *vs, double *zr,
                  const double *vr, double *xs, double *work, size_t k)
{
    if (k == 0) return;
    /* Up: xs[i] = Z_i, work[i] = V_i (the estimate of s_i from its own
     * observation and everything below it). */
    combine(ys[0], vs[0], zr[0], vr[0], &xs[0], &work[0]);
    for (size_t i = 1; i < k; i++)
        combine(ys[i], vs[i], xs[i - 1] + zr[i], work[i - 1] + vr[i], &xs[i], &work[i]);
    /* Down: xs[k-1] = Z_k is final.  Node s_i (i >= 1, 0-based) has the
     * two children s_{i-1} (xs[i-1] still holds Z_{i-1}) and r_i. */
    for (size_t i = k - 1; i > 0; i--) {
        double c[2] = {xs[i - 1], zr[i]};
        double w[2] = {work[i - 1], vr[i]};
        double d = xs[i] - (c[0] + c[1]);
        distribute(c, w, w[0] + w[1], d, 2);
        xs[i - 1] = c[0];
        zr[i] = c[1];
    }
    zr[0] = xs[0];
}

/* ------------------------------------------------------------------------
 * Fused ordered hierarchical estimate
 * ---------------------------------------------------------------------- */

/* Nodes of one block's tree at level L (level 0: the root). */
static size_t oh_per(size_t c, size_t f, int L)
{
    size_t p = 1;
    if (L == 0) return 1;
    p = c;
    for (int i = 1; i < L; i++) p *= f;
    return p;
}

static size_t oh_block_nodes(size_t c, size_t f, int h)
{
    size_t tot = 0;
    for (int L = 0; L <= h; L++) tot += oh_per(c, f, L);
    return tot;
}

typedef struct {
    const int64_t *hist;
    size_t block, f, c, k, last;
    int h;
    const int64_t *noise_h;
    double var_h;
    size_t off[65];        /* node offset of level L in the block arrays */
    size_t per[65];
    size_t nwidth[65];     /* bins per node at level L */
    size_t noff[65];       /* offset of level L in noise_h */
    size_t rfull[65];      /* real nodes of a full block at level L */
    double *z, *v;
    int64_t *t;
} oh_ctx;

/* Build block b's observations and run the upward pass; returns the
 * block's total and status through *status. */
static int64_t oh_block_up(oh_ctx *x, size_t b, int *status, const int64_t *bn)
{
    const int h = x->h;
    const size_t f = x->f;
    size_t len = b + 1 < x->k ? x->block : x->last;
    const int64_t *src = x->hist + b * x->block;
    int64_t *tl = x->t + x->off[h];
    size_t width = x->per[h];
    for (size_t j = 0; j < len; j++) tl[j] = src[j];
    for (size_t j = len; j < width; j++) tl[j] = 0;
    /* integer sums: non-negative counts whose total fits int64 */
    for (int L = h - 1; L >= 1; L--) {
        const int64_t *ch = x->t + x->off[L + 1];
        int64_t *pa = x->t + x->off[L];
        for (size_t g = 0; g < x->per[L]; g++) {
            int64_t sum = 0;
            for (size_t j = 0; j < f; j++) sum += ch[g * f + j];
            pa[g] = sum;
        }
    }
    int64_t total = 0;
    for (size_t j = 0; j < x->per[1]; j++) total += x->t[x->off[1] + j];
    /* observations */
    int ovf = 0;
    for (int L = 1; L <= h; L++) {
        size_t real = (len + x->nwidth[L] - 1) / x->nwidth[L];
        const int64_t *tv = x->t + x->off[L];
        double *z = x->z + x->off[L], *v = x->v + x->off[L];
        /* the block's noise: level-major in noise_h, or this block's own
         * (bn: level 1 first, each level's real nodes) */
        const int64_t *nz = bn != NULL ? bn : x->noise_h + x->noff[L] + b * x->rfull[L];
        if (bn != NULL) bn += real;
        for (size_t j = 0; j < real; j++) {
            int64_t r;
            ovf |= bf_add_ovf(tv[j], nz[j], &r);
            z[j] = (double)r;
            v[j] = x->var_h;
        }
        for (size_t j = real; j < x->per[L]; j++) {
            z[j] = 0.0;
            v[j] = 0.0;
        }
    }
    if (ovf) *status = BF_ERR_OVERFLOW;
    x->z[0] = 0.0;
    x->v[0] = INFINITY;
    for (int L = h - 1; L >= 0; L--)
        bf_wls_up_level(x->z + x->off[L + 1], x->v + x->off[L + 1], x->z + x->off[L],
                        x->v + x->off[L], x->per[L], L == 0 ? x->c : f);
    return total;
}

/* The block-independent part of the context: level offsets and widths. */
static void oh_ctx_init(oh_ctx *x, const int64_t *hist, size_t N, size_t block, size_t f, int h,
                        size_t c, const int64_t *noise_h, double var_h, double *scratch)
{
    x->hist = hist;
    x->block = block;
    x->f = f;
    x->c = c;
    x->h = h;
    x->k = (N + block - 1) / block;
    x->last = N - block * (x->k - 1);
    x->noise_h = noise_h;
    x->var_h = var_h;
    size_t off = 0;
    for (int L = 0; L <= h; L++) {
        x->per[L] = oh_per(c, f, L);
        x->off[L] = off;
        off += x->per[L];
    }
    size_t w = 1;
    for (int L = h; L >= 0; L--) {
        x->nwidth[L] = w;
        if (L > 0) w *= f;
    }
    size_t noff = 0;
    for (int L = 1; L <= h; L++) {
        x->rfull[L] = (block + x->nwidth[L] - 1) / x->nwidth[L];
        x->noff[L] = noff;
        noff += (x->k - 1) * x->rfull[L] + (x->last + x->nwidth[L] - 1) / x->nwidth[L];
    }
    x->z = scratch;
    x->v = scratch + off;
    x->t = (int64_t *)(scratch + 2 * off);
}

size_t bf_oh_range_scratch_doubles(size_t c, size_t f, int h)
{
    return 3 * oh_block_nodes(c, f, h);
}

size_t bf_oh_inner_doubles(size_t c, size_t f, int h)
{
    return 2 * (oh_block_nodes(c, f, h) - oh_per(c, f, h));
}

/* What the later phases need of block b after its upward pass: its
 * total, root estimate and variance, its inner nodes, and its leaves'
 * observations (the upward pass leaves them as they are) in the output, so
 * the downward pass reads neither hist nor the noise. */
static void oh_block_done(const oh_ctx *x, size_t b, int64_t total, double *zr, double *vr,
                          int64_t *tot, double *inner, double *cum)
{
    const size_t m = x->off[x->h];   /* nodes above the leaves */
    tot[b] = total;
    zr[b] = x->z[0];
    vr[b] = x->v[0];
    double *in = inner + b * 2 * m;
    for (size_t j = 0; j < m; j++) {
        in[j] = x->z[j];
        in[m + j] = x->v[j];
    }
    /* memcpy, not a loop of double stores: cum may be the storage of
     * noise_h (the leaves' noise, read as int64 just above) */
    size_t len = b + 1 < x->k ? x->block : x->last;
    memcpy(cum + b * x->block, x->z + m, len * sizeof(double));
}

int bf_oh_up_range(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                   const int64_t *noise_h, double var_h, size_t b0, size_t b1,
                   double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch)
{
    oh_ctx x;
    int status = BF_OK;
    oh_ctx_init(&x, hist, N, block, f, h, c, noise_h, var_h, scratch);
    for (size_t b = b0; b < b1; b++) oh_block_done(&x, b, oh_block_up(&x, b, &status, NULL),
                                                   zr, vr, tot, inner, cum);
    return status;
}

size_t bf_oh_stream_noise_words(size_t c, size_t f, int h, size_t group)
{
    return group * (oh_block_nodes(c, f, h) - 1);
}

int bf_oh_up_streams(const int64_t *hist, size_t N, size_t block, size_t f, int h, size_t c,
                     const bf_oh_noise *noise, double var_h, size_t g0, size_t g1, int64_t *noise_s,
                     double *zr, double *vr, int64_t *tot, double *inner, double *cum, double *scratch,
                     int64_t *noise_buf)
{
    oh_ctx x;
    int status = BF_OK;
    bf_rng rng;
    oh_ctx_init(&x, hist, N, block, f, h, c, NULL, var_h, scratch);
    size_t full = 0, lastn = 0;   /* real nodes of a full block and of the last */
    for (int L = 1; L <= h; L++) {
        full += x.rfull[L];
        lastn += (x.last + x.nwidth[L] - 1) / x.nwidth[L];
    }
    for (size_t g = g0; g < g1; g++) {
        size_t b0 = g * noise->group, b1 = x.k - b0 < noise->group ? x.k : b0 + noise->group;
        size_t s1 = b1 < x.k - 1 ? b1 : x.k - 1;   /* S nodes: blocks b < k - 1 */
        size_t count = (b1 - b0) * full - (b1 == x.k ? full - lastn : 0);
        /* the stream's noise before its blocks' counts: two fills (a fill's
         * set-up is not repeated per block) */
        bf_rng_init_stream(&rng, noise->key, g);
        if (s1 > b0) bf_discrete_laplace_fill(&rng, noise->t_s, noise->s_s, noise_s + b0, s1 - b0);
        bf_discrete_laplace_fill(&rng, noise->t_h, noise->s_h, noise_buf, count);
        const int64_t *bn = noise_buf;
        for (size_t b = b0; b < b1; b++) {
            oh_block_done(&x, b, oh_block_up(&x, b, &status, bn), zr, vr, tot, inner, cum);
            bn += full;   /* the last block is the stream's last */
        }
    }
    bf_rng_wipe(&rng);
    return status;
}

int bf_oh_chain(const int64_t *tot, const int64_t *noise_s, double var_s, size_t k,
                double *zr, const double *vr, double *xs, double *work)
{
    double *ys = work, *vs = work + k, *w = work + 2 * k;
    int64_t s_true = 0;
    int status = BF_OK;
    for (size_t b = 0; b < k; b++) {
        s_true += tot[b];   /* partial sums of a total that fits int64 */
        if (b + 1 < k) {
            int64_t r;
            if (bf_add_ovf(s_true, noise_s[b], &r)) status = BF_ERR_OVERFLOW;
            ys[b] = (double)r;
            vs[b] = var_s;
        } else {
            ys[b] = (double)s_true;   /* s_k = n is public */
            vs[b] = 0.0;
        }
    }
    if (status != BF_OK) return status;
    bf_wls_chain(ys, vs, zr, vr, xs, w, k);
    return BF_OK;
}

void bf_oh_down_range(size_t N, size_t block, size_t f, int h, size_t c, double var_h,
                      size_t b0, size_t b1, const double *inner, const double *zr,
                      const double *xs, double *cum, double *scratch)
{
    oh_ctx x;
    oh_ctx_init(&x, NULL, N, block, f, h, c, NULL, var_h, scratch);
    const size_t k = x.k, m = x.off[h], width = x.per[h];
    for (size_t b = b0; b < b1; b++) {
        size_t len = b + 1 < k ? block : x.last;
        const double *in = inner + b * 2 * m;
        for (size_t j = 0; j < m; j++) {
            x.z[j] = in[j];
            x.v[j] = in[m + j];
        }
        double *o = cum + b * block;
        double *lz = x.z + m, *lv = x.v + m;
        for (size_t j = 0; j < len; j++) {
            lz[j] = o[j];
            lv[j] = var_h;
        }
        for (size_t j = len; j < width; j++) {
            lz[j] = 0.0;
            lv[j] = 0.0;
        }
        x.z[0] = zr[b];
        for (int L = 0; L < h; L++)
            bf_wls_down_level(x.z + x.off[L], x.z + x.off[L + 1], x.v + x.off[L + 1],
                              x.per[L], L == 0 ? c : f);
        double p = 0.0;
        if (b == 0) {
            for (size_t j = 0; j < len; j++) {
                p += lz[j];
                o[j] = p;
            }
        } else {
            double base = xs[b - 1];
            for (size_t j = 0; j < len; j++) {
                p += lz[j];
                o[j] = p + base;
            }
        }
    }
}
