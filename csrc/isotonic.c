#include "isotonic.h"

#include <stdint.h>
#include <string.h>

#include "int_ops.h"

/* Validation scans on the IEEE 754 bit patterns: integer adds and ORs the
 * compiler vectorises.  Bit 63 of the flag is set iff the value fails. */
static inline uint64_t bits_of(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* Exponent all ones (infinity or NaN): adding one exponent unit carries
 * into bit 63 exactly then. */
static inline uint64_t nonfinite_flag(double x)
{
    return (bits_of(x) & 0x7FF0000000000000ull) + 0x0010000000000000ull;
}

/* Pools the top block (S, W) with the blocks below it while the one just
 * below has the larger mean; returns how many blocks stay below. */
static inline size_t pool_below(const double *block_sum, const double *block_weight, size_t below,
                                double *S, double *W)
{
    while (below > 0 && block_sum[below - 1] * *W > *S * block_weight[below - 1]) {
        below--;
        *S += block_sum[below];
        *W += block_weight[below];
    }
    return below;
}

/* Pool adjacent violators.
 *
 * The blocks found so far form a stack with strictly increasing means.  A
 * block is kept as (S, W) = (sum of w*y, sum of w), so the means compare
 * without a division: S0/W0 > S1/W1 iff S0*W1 > S1*W0 (weights are
 * positive).  The top block lives in registers (S, W); the blocks below it
 * are stored with sums in block_sum[j], weights in block_weight[j] and, for
 * explicit weights, the end index in block_end[j] (with unit weights the
 * weight is the block's length).  block_sum may be y itself: block j
 * starts at an index >= j, so the stack never overtakes the input
 * position.  Returns the number of blocks; `unit` is a constant after
 * inlining. */
static inline size_t pava_stack(const double *y, const double *w, double *block_sum,
                                double *block_weight, size_t *block_end, size_t n, int unit)
{
    if (n == 0) return 0;
    size_t below = 0; /* blocks stored below the top one */
    double S = unit ? y[0] : y[0] * w[0];
    double W = unit ? 1.0 : w[0];
    for (size_t i = 1; i < n; i++) {
        double wi = unit ? 1.0 : w[i];
        double si = unit ? y[i] : y[i] * wi;
        if (!(S * wi > si * W)) {
            /* In order: the top block is final for now; i starts a block. */
            block_sum[below] = S;
            block_weight[below] = W;
            if (!unit) block_end[below] = i;
            below++;
            S = si;
            W = wi;
            continue;
        }
        /* Violation: pool i into the top block, then pool the blocks below
         * while they are out of order with it. */
        S += si;
        W += wi;
        below = pool_below(block_sum, block_weight, below, &S, &W);
    }
    block_sum[below] = S;
    block_weight[below] = W;
    if (!unit) block_end[below] = n;
    return below + 1;
}

/* Expand the weighted stack from the last block down: block j covers
 * indices >= j, so writing it never overwrites the sums of the blocks below
 * it (out may be block_sum).  A single element keeps its value y exactly
 * (y*w/w may round).  The unit-weight expansion is pava_unit_expand. */
static inline void pava_expand(const double *y, const double *block_sum, const double *block_weight,
                               const size_t *block_end, size_t nblocks, double *out,
                               double lower, double upper)
{
    size_t end = nblocks ? block_end[nblocks - 1] : 0;
    for (size_t j = nblocks; j-- > 0;) {
        size_t start = j > 0 ? block_end[j - 1] : 0;
        double v = end - start == 1 ? y[start] : block_sum[j] / block_weight[j];
        v = v < lower ? lower : (v > upper ? upper : v);
        for (size_t i = start; i < end; i++) out[i] = v;
        end = start;
    }
}

/* The serial unit-weight path (bf_isotonic_unit_inplace): the compact
 * stack of y[0..n) in place, block j's sum in y[j] and its length in
 * block_weight[j]; returns the number of blocks. */
static size_t pava_unit_stack(double *y, double *block_weight, size_t n)
{
    return pava_stack(y, NULL, y, block_weight, NULL, n, 1);
}

/* Block j's clipped mean (unit weights: a single element's sum is itself). */
static inline double unit_mean(const double *y, const double *block_weight, size_t j,
                               double lower, double upper)
{
    double v = y[j] / block_weight[j];
    return v < lower ? lower : (v > upper ? upper : v);
}

/* Most blocks are one or two elements long, so a loop per block
 * mispredicts often: every block writes its last four places
 * unconditionally (lower places belong to blocks below, written later),
 * and only longer blocks loop.  Those four stores reach down to index
 * j - 3, so the means of blocks j-1..j-3 are read before them (a window
 * of four in registers). */
static void pava_unit_expand(double *y, const double *block_weight, size_t nblocks, size_t n,
                             double lower, double upper)
{
    if (nblocks == 0) return;
    double w[4];
    for (size_t q = 0; q < 4; q++)
        w[q] = q < nblocks ? unit_mean(y, block_weight, nblocks - 1 - q, lower, upper) : 0.0;
    size_t end = n;
    for (size_t j = nblocks; j-- > 0;) {
        size_t start = end - (size_t)block_weight[j];
        double v = w[0];
        if (end >= 4) {
            y[end - 1] = v;
            y[end - 2] = v;
            y[end - 3] = v;
            y[end - 4] = v;
            for (size_t i = start; i + 4 < end; i++) y[i] = v;
        } else {
            for (size_t i = start; i < end; i++) y[i] = v;
        }
        w[0] = w[1];
        w[1] = w[2];
        w[2] = w[3];
        w[3] = j >= 4 ? unit_mean(y, block_weight, j - 4, lower, upper) : 0.0;
        end = start;
    }
}

/* ---- Chunked form: block starts in a bitmap --------------------------
 *
 * Pooling inside a chunk never splits a pool of the whole sequence (the
 * pools of a stretch are unions of the pools of the whole), so the blocks
 * of consecutive chunks, joined left to right with the same rule, give the
 * isotonic regression; the result depends on the chunk boundaries only
 * through floating-point rounding of the block sums (none while they stay
 * integers below 2^53).
 *
 * Block [p, e) keeps its sum in y[p]; bit p of `bits` is set; when e - p
 * >= 2 its length is in y[e - 1] (a place no other block uses), so the
 * block ending at e starts at e - 1 if that bit is set, else at
 * e - y[e - 1].  Finding the block below is O(1), and the scratch is one
 * bit per place instead of a length per block. */

static inline int bit_at(const uint64_t *bits, size_t i)
{
    return (int)((bits[i >> 6] >> (i & 63)) & 1u);
}

/* Start of the block that ends at e (e > 0, a block boundary). */
static inline size_t block_below(const double *y, const uint64_t *bits, size_t e)
{
    size_t q = e - 1;
    return bit_at(bits, q) ? q : e - (size_t)y[q];
}

/* The first block start in (p, stop), or stop. */
static inline size_t next_start(const uint64_t *bits, size_t p, size_t stop)
{
    size_t q = p + 1;
    if (q >= stop) return stop;
    size_t w = q >> 6, last = (stop - 1) >> 6;
    uint64_t m = bits[w] & (~(uint64_t)0 << (q & 63));
    while (!m) {
        if (++w > last) return stop;
        m = bits[w];
    }
    size_t r = (w << 6) + bf_ctz64(m);
    return r < stop ? r : stop;
}

/* Pools the top block [p, ...) (sum *S, length *W) with the blocks below
 * it, down to place lo, while they are out of order: pool_below's rule and
 * order of additions, on the bitmap form; returns the new top's start. */
static inline size_t bits_pool_below(const double *y, uint64_t *bits, size_t lo, size_t p,
                                     double *S, double *W)
{
    while (p > lo) {
        size_t pb = block_below(y, bits, p);
        double Wb = (double)(p - pb);
        if (!(y[pb] * *W > *S * Wb)) break;
        *S += y[pb];
        *W += Wb;
        bits[p >> 6] &= ~((uint64_t)1 << (p & 63));
        p = pb;
    }
    return p;
}

void bf_pava_bits_stack(double *y, uint64_t *bits, size_t c0, size_t c1, int *nonfinite)
{
    if (c1 <= c0) return;
    uint64_t flags = nonfinite ? nonfinite_flag(y[c0]) : 0;
    size_t s = c0;               /* the top block is [s, i): sum S, length W */
    double S = y[c0], W = 1.0;
    bits[c0 >> 6] |= (uint64_t)1 << (c0 & 63);
    for (size_t i = c0 + 1; i < c1; i++) {
        double si = y[i];
        if (nonfinite) flags |= nonfinite_flag(si);
        /* the comparisons and additions of pava_stack, in its order */
        if (!(S > si * W)) {
            y[s] = S;
            if (i - s >= 2) y[i - 1] = W;
            s = i;
            S = si;
            W = 1.0;
            bits[i >> 6] |= (uint64_t)1 << (i & 63);
            continue;
        }
        S += si;
        W += 1.0;
        s = bits_pool_below(y, bits, c0, s, &S, &W);
    }
    y[s] = S;
    if (c1 - s >= 2) y[c1 - 1] = W;
    if (nonfinite) *nonfinite = (int)(flags >> 63);
}

size_t bf_pava_bits_join(double *y, uint64_t *bits, size_t n, size_t chunk, size_t *heads)
{
    size_t nheads = 0;
    heads[nheads++] = 0;
    for (size_t cs = chunk; cs < n; cs += chunk) {
        size_t ce = n - cs < chunk ? n : cs + chunk;
        size_t q = cs;
        while (q < ce) {
            /* the chunk's next block, pooled with the blocks below it while
             * they are out of order (pool_below's rule and order) */
            size_t qe = next_start(bits, q, ce);
            double S = y[q], W = (double)(qe - q);
            size_t p = bits_pool_below(y, bits, 0, q, &S, &W);
            if (p == q) break;   /* in order: so is the rest of the chunk */
            y[p] = S;
            y[qe - 1] = W;       /* qe - p >= 2: something was pooled */
            /* heads inside the new block are no block starts any more */
            while (nheads > 1 && heads[nheads - 1] > p) nheads--;
            q = qe;
        }
        /* q is the first block start at or after cs (or n) */
        if (q < n && q > heads[nheads - 1]) heads[nheads++] = q;
    }
    return nheads;
}

/* Block p's clipped mean (it ends at e). */
static inline double bits_mean(const double *y, size_t p, size_t e, double lower, double upper)
{
    double v = y[p] / (double)(e - p);
    return v < lower ? lower : (v > upper ? upper : v);
}

void bf_pava_bits_fill(double *y, const uint64_t *bits, size_t start, size_t stop,
                       double lower, double upper)
{
    /* Forward, with the starts and means of the next three blocks read
     * ahead: the four unconditional stores at a block's start reach at
     * most into those three (every block is at least one place long), and
     * only longer blocks loop. */
    size_t p0, p1, p2, p3, e = start, f;
    double v0, v1, v2, v3;
#define BF_NEXT(p, v)                                   \
    do {                                                \
        p = e;                                          \
        f = next_start(bits, e, stop);                  \
        v = bits_mean(y, e, f, lower, upper);           \
        e = f;                                          \
    } while (0)
    if (e < stop) BF_NEXT(p0, v0); else return;
    if (e < stop) BF_NEXT(p1, v1); else { p1 = e; goto tail1; }
    if (e < stop) BF_NEXT(p2, v2); else { p2 = e; goto tail2; }
    if (e < stop) BF_NEXT(p3, v3); else { p3 = e; goto tail3; }
    for (;;) {
        /* four blocks from p0 on: p0 + 4 <= p3 + 1 <= stop */
        y[p0] = v0;
        y[p0 + 1] = v0;
        y[p0 + 2] = v0;
        y[p0 + 3] = v0;
        for (size_t i = p0 + 4; i < p1; i++) y[i] = v0;
        p0 = p1, v0 = v1;
        p1 = p2, v1 = v2;
        p2 = p3, v2 = v3;
        if (e < stop) BF_NEXT(p3, v3);
        else break;
    }
    p3 = e;
tail3:   /* three blocks left: [p0, p1), [p1, p2), [p2, p3) */
    for (size_t i = p2; i < p3; i++) y[i] = v2;
tail2:
    for (size_t i = p1; i < p2; i++) y[i] = v1;
tail1:
    for (size_t i = p0; i < p1; i++) y[i] = v0;
#undef BF_NEXT
}

void bf_isotonic(const double *y, const double *w, double *out,
                 double *block_weight, size_t *block_end, size_t n,
                 double lower, double upper)
{
    if (w == NULL) {
        if (n) memcpy(out, y, n * sizeof(double));
        bf_isotonic_unit_inplace(out, block_weight, n, lower, upper);
        return;
    }
    size_t nb = pava_stack(y, w, out, block_weight, block_end, n, 0);
    pava_expand(y, out, block_weight, block_end, nb, out, lower, upper);
}

void bf_isotonic_unit_inplace(double *y, double *block_weight, size_t n,
                              double lower, double upper)
{
    size_t nb = pava_unit_stack(y, block_weight, n);
    pava_unit_expand(y, block_weight, nb, n, lower, upper);
}

/* Positive finite doubles are exactly the patterns 1 .. 0x7FEFFFFFFFFFFFFF;
 * t = bits - 1 fails iff t >= 0x7FEFFFFFFFFFFFFF, i.e. iff bit 63 of t or
 * of t + (2^63 - 0x7FEFFFFFFFFFFFFF) is set. */
static inline uint64_t nonpositive_flag(double x)
{
    uint64_t t = bits_of(x) - 1;
    return t | (t + 0x0010000000000001ull);
}

#define SCAN_CHUNK 1024

/* Index of the first x[i] whose flag has bit 63 set, n if none: chunks are
 * OR-ed branch-free and only a failing chunk is searched.  Inlined with a
 * constant flag, so each caller gets its own vectorised loop. */
static inline size_t first_flagged(const double *x, size_t n, uint64_t (*flag)(double))
{
    for (size_t i0 = 0; i0 < n; i0 += SCAN_CHUNK) {
        size_t i1 = n - i0 < SCAN_CHUNK ? n : i0 + SCAN_CHUNK;
        uint64_t bad = 0;
        for (size_t i = i0; i < i1; i++) bad |= flag(x[i]);
        if (bad >> 63)
            for (size_t i = i0; i < i1; i++)
                if (flag(x[i]) >> 63) return i;
    }
    return n;
}

size_t bf_first_nonfinite(const double *x, size_t n)
{
    return first_flagged(x, n, nonfinite_flag);
}

size_t bf_first_nonpositive(const double *x, size_t n)
{
    return first_flagged(x, n, nonpositive_flag);
}
