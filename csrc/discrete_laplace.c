#include "discrete_laplace.h"
#include "int_ops.h"

#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define DLAP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DLAP_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define DLAP_UNLIKELY(x) (x)
#define DLAP_INLINE static __forceinline
#else
#define DLAP_UNLIKELY(x) (x)
#define DLAP_INLINE static inline
#endif

/* One 32-bit uniform draw on [0, 11!) decides the first eleven steps of
 * Algorithm 1 for gamma = 1, because P(A_1 = ... = A_k = 1) = 1/k! and
 * 11!/k! is an integer for every k <= 11.  (11! rather than 12! < 2^32:
 * Lemire's rule then rejects 0.9% of the words instead of 10.8%.) */
#define FACT11 39916800u
/* Lemire's rejection threshold for [0, 11!): 2^32 mod 11!. */
#define FACT11_THRESHOLD 23869696u
static const uint32_t FACT11_OVER_KFACT[12] = {
    39916800u, 39916800u, 19958400u, 6652800u, 1663200u, 332640u,
    55440u, 7920u, 990u, 110u, 11u, 1u
};

/* Exactly uniform on [0, n) for 1 <= n < 2^32 with the precomputed Lemire
 * threshold thr = 2^32 mod n: a 32-bit word w is kept iff the low half of
 * w * n is >= thr, and then the high half is uniform. */
static inline uint32_t uniform32(bf_rng *rng, uint32_t n, uint32_t thr)
{
    uint64_t m = (uint64_t)bf_rng_next32(rng) * n;
    while ((uint32_t)m < thr) m = (uint64_t)bf_rng_next32(rng) * n;
    return (uint32_t)(m >> 32);
}

static inline uint32_t lemire_threshold(uint32_t n)
{
    return (uint32_t)(0u - n) % n;
}

/* Bernoulli(p) for p = num/den rational, 0 <= num <= den. */
static inline int bern_rational(bf_rng *rng, uint64_t num, uint64_t den)
{
    return bf_rng_uniform(rng, den) < num;
}

/* Bernoulli(exp(-1)).  Algorithm 1 with gamma = 1 draws A_k ~ Bern(1/k)
 * until the first failure at step K and returns [K odd]; here the first
 * eleven steps come from one draw W on [0, 11!): steps 1..k all succeed
 * iff W < 11!/k!, so K = 2 + #{2 <= k <= 11 : W < 11!/k!} unless all
 * eleven succeed (W == 0).  The count is branch-free. */
static inline int bern_exp_minus_one(bf_rng *rng)
{
    uint32_t w = uniform32(rng, FACT11, FACT11_THRESHOLD);
    uint32_t k = 2;
    for (int j = 2; j <= 11; j++) k += w < FACT11_OVER_KFACT[j];
    if (k <= 11) return (int)(k & 1u);
    /* W == 0: steps 1..11 succeeded; continue one step at a time. */
    while (bern_rational(rng, 1, k)) k++;
    return (int)(k & 1u);
}

/* Bernoulli(exp(-num/den)) for 0 <= num <= den (gamma in [0, 1]) one
 * step at a time from step k0 on, steps 1..k0-1 having succeeded;
 * kmax = UINT64_MAX / den (den * k must not overflow). */
static int bern_exp_unit_from(bf_rng *rng, uint64_t num, uint64_t den, uint64_t kmax,
                              uint64_t k)
{
    for (;;) {
        /* A_k ~ Bern(gamma / k) = Bern(num / (den * k)). */
        int a;
        if (k <= kmax)
            a = bern_rational(rng, num, den * k);
        else /* product of independent coins: Bern(num/den) * Bern(1/k) */
            a = bern_rational(rng, num, den) && bern_rational(rng, 1, k);
        if (!a) break;
        k++;
    }
    return (int)(k & 1u);
}

static int bern_exp_unit(bf_rng *rng, uint64_t num, uint64_t den, uint64_t kmax)
{
    if (num == 0) return 1;
    if (num == den) return bern_exp_minus_one(rng);
    return bern_exp_unit_from(rng, num, den, kmax, 1);
}

int bf_bernoulli_exp(bf_rng *rng, uint64_t num, uint64_t den)
{
    /* exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))) */
    uint64_t whole = num / den;
    for (uint64_t i = 0; i < whole; i++)
        if (!bern_exp_minus_one(rng)) return 0;
    return bern_exp_unit(rng, num % den, den, UINT64_MAX / den);
}

/* ---- the batched sampler of Algorithm 2 ---------------------------------
 *
 * A bit reader over the generator's keystream buffer.  The unread bits sit
 * in `res`, least significant first, `nb` of them; words are appended at
 * the top as the reader runs low.  The reader works on local copies of the
 * generator's position and spare bits (kept in registers in the loops) and
 * hands both back when the batch ends, so bits it did not consume are the
 * next bits anyone reads: unread keystream bits are fresh uniform bits.
 *
 * Every decision below consumes a window of fixed width, whatever it
 * decides (bits of a window that a decision does not need are discarded,
 * never reused), and the rare continuations read fresh windows after it, so
 * distinct decisions read disjoint sets of independent fair bits.  This
 * reads about half the keystream words of one word per Lemire draw and per
 * step (1.2 words a sample at scale 1, 2.9-3.4 at integer scales 10 to
 * 10^6, 4.2 at 1/0.3), and no loop carries a dependence on what the bits
 * decided. */
typedef struct {
    bf_rng *rng;
    size_t pos;      /* next unread keystream word */
    uint64_t res;    /* unread bits, least significant first */
    unsigned nb;     /* how many (0..63) */
} bitrd;

static inline bitrd rd_open(bf_rng *rng)
{
    bitrd r;
    r.rng = rng;
    r.pos = rng->pos;
    r.res = rng->bits;
    r.nb = (unsigned)rng->nbits;
    return r;
}

static inline void rd_close(const bitrd *r)
{
    r->rng->pos = r->pos;
    r->rng->bits = r->res;
    r->rng->nbits = (int)r->nb;
}

/* At least 32 unread bits afterwards. */
static inline void rd_fill(bitrd *r)
{
    if (r->nb < 32) {
        if (DLAP_UNLIKELY(r->pos >= BF_RNG_BUFWORDS)) {
            bf_rng_refill(r->rng);
            r->pos = r->rng->pos;
        }
        r->res |= (uint64_t)r->rng->buf[r->pos++] << r->nb;
        r->nb += 32;
    }
}

/* The next n bits (1 <= n <= 32; needs n unread bits). */
static inline uint32_t rd_take(bitrd *r, unsigned n)
{
    uint32_t v = (uint32_t)(r->res & (((uint64_t)1 << n) - 1));
    r->res >>= n;
    r->nb -= n;
    return v;
}

static inline uint64_t rd_next64(bitrd *r)
{
    rd_fill(r);
    uint64_t lo = rd_take(r, 32);
    rd_fill(r);
    return lo | ((uint64_t)rd_take(r, 32) << 32);
}

/* Exactly uniform on [0, n), 1 <= n < 2^64 (Lemire's rule on 64 bits). */
static uint64_t rd_uniform(bitrd *r, uint64_t n)
{
    uint64_t lo;
    uint64_t hi = bf_mul64_hi_lo(rd_next64(r), n, &lo);
    if (lo < n) {
        uint64_t thr = (0 - n) % n;
        while (lo < thr) hi = bf_mul64_hi_lo(rd_next64(r), n, &lo);
    }
    return hi;
}

/* Index of the lowest set bit of x != 0. */
static inline unsigned lowest_bit(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(x);
#else
    unsigned i = 0;
    while (!(x & 1u)) { x >>= 1; i++; }
    return i;
#endif
}

/* [a < b] and [a == b] for a, b < 2^31 as arithmetic on the sign bit: a
 * compiler turns the comparison operators into unpredictable branches. */
#define LT(a, b) ((uint32_t)((uint32_t)(a) - (uint32_t)(b)) >> 31)
#define EQ(a, b) ((uint32_t)(((uint32_t)(a) ^ (uint32_t)(b)) - 1u) >> 31)

/* Constants of Algorithm 2 with scale t/s, 1 <= t, s < 2^32. */
typedef struct {
    uint64_t t, s;
    int umode;          /* how U is drawn, see u_stage */
    int merged;         /* t >= 2: V counts the rejections, see u_stage;
                           2: the a-coin reads two fields (t <= 64) */
    uint32_t aT1, aT2;  /* the a-coin's thresholds floor(128 / (t (k+1))) */
    uint32_t uthr;      /* Lemire threshold: 2^L mod t for the L-bit draw */
    uint64_t uthr48;    /* 2^48 mod t, for U_W48 */
    uint32_t rcp;       /* floor(2^32 / t) + 1, for t < 128 */
    /* floor(x / s) = (h + ((x - h) >> 1)) >> sh, h = mulhi(x, smul)
     * (Granlund and Montgomery 1994, Figure 4.1; exact for all x < 2^64) */
    uint64_t smul;
    unsigned ssh;
} dlap_consts;

enum { U_NONE, U_SMALL16, U_MID16, U_Q24, U_W32, U_W48 };

static void dlap_setup(dlap_consts *c, uint64_t t, uint64_t s)
{
    c->t = t;
    c->s = s;
    c->rcp = 0;
    c->uthr = 0;
    c->uthr48 = 0;
    c->merged = t == 1 ? 0 : t <= 64 ? 2 : 1;
    c->aT1 = (uint32_t)(128 / (2 * t));
    c->aT2 = (uint32_t)(128 / (3 * t));
    if (t == 1) {
        c->umode = U_NONE;
    } else if (t <= 2048) {
        /* 16 bits: Lemire rejects (2^16 mod t) / 2^16 < 1/32 of them */
        c->umode = t < 128 ? U_SMALL16 : U_MID16;
        c->uthr = (uint32_t)(65536u % (uint32_t)t);
        if (t < 128) c->rcp = (uint32_t)(((uint64_t)1 << 32) / t + 1);
    } else if ((((uint32_t)1 << 24) % (uint32_t)t) < ((uint32_t)1 << 20)) {
        /* 24 bits, rejecting < 1/16 (t <= 2^20 or so), read with the
         * a-coin's field in one 31-bit window */
        c->umode = U_Q24;
        c->uthr = ((uint32_t)1 << 24) % (uint32_t)t;
    } else {
        uint32_t thr = lemire_threshold((uint32_t)t);
        if (thr < ((uint32_t)1 << 28)) {      /* rejects < 1/16 */
            c->umode = U_W32;
            c->uthr = thr;
        } else {                               /* 48 bits: rejects < 2^-16 */
            c->umode = U_W48;
            c->uthr48 = ((uint64_t)1 << 48) % t;
        }
    }
    c->smul = 0;
    c->ssh = 0;
    if (s > 1) {
        unsigned l = 0;
        while (((uint64_t)1 << l) < s) l++;            /* l = ceil(log2 s) <= 32 */
        uint64_t a = ((uint64_t)1 << l) - s;            /* 0 <= a < s < 2^32 */
        /* floor(a 2^64 / s) in two 32-bit long-division steps */
        uint64_t q1 = (a << 32) / s, r1 = (a << 32) % s;
        uint64_t q0 = (r1 << 32) / s;
        c->smul = (q1 << 32) + q0 + 1;
        c->ssh = l - 1;
    }
}

static inline uint64_t div_s(const dlap_consts *c, uint64_t x)
{
    uint64_t lo;
    uint64_t h = bf_mul64_hi_lo(x, c->smul, &lo);
    return (h + ((x - h) >> 1)) >> c->ssh;
}

/* Step k of Algorithm 1 for gamma = u/t, A_k ~ Bernoulli(u / (k t)), in
 * the form the batch uses: with x7 = floor(128 u / t), T = floor(x7 / k) =
 * floor(128 u / (k t)) and a uniform 7-bit field b, the step passes if
 * b < T, fails if b > T, and on b == T passes with probability r / (k t),
 * r = 128 u - T k t.  In total P(pass) = T/128 + (1/128) r/(k t) = u/(k t).
 * u_tie resolves a tie (b == T) exactly with fresh bits. */
static int u_tie(bitrd *r, uint64_t u, uint64_t t, uint64_t x7, uint64_t k)
{
    if (k >= ((uint64_t)1 << 24)) {
        /* k t might not fit 64 bits.  Here T = floor(x7 / k) = 0 (x7 < 128),
         * so a tie must pass with probability 128 u / (k t): the conjunction
         * of the independent coins Bernoulli(u/t) and Bernoulli(128/k). */
        return rd_uniform(r, t) < u && rd_uniform(r, k) < 128;
    }
    uint64_t T = x7 / k;
    return rd_uniform(r, k * t) < 128 * u - T * k * t;
}

/* Steps k, k+1, ... one at a time (the rare continuation: a tie at step
 * k when `tie`, else all steps before k passed).  Returns K, the first
 * failing step. */
static uint64_t u_steps_slow(bitrd *r, uint64_t u, uint64_t t, uint64_t x7, uint64_t k, int tie)
{
    for (;; k++, tie = 0) {
        int pass;
        if (tie) {
            pass = u_tie(r, u, t, x7, k);
        } else {
            rd_fill(r);
            uint64_t b = rd_take(r, 7), T = x7 / k;
            pass = b < T || (b == T && u_tie(r, u, t, x7, k));
        }
        if (!pass) return k;
    }
}

/* V: Bernoulli(exp(-1)) trials.  A trial is Algorithm 1 with gamma = 1:
 * B_k ~ Bernoulli(1/k) for k = 2, 3, ... until the first failure K, and
 * the trial succeeds iff K is odd.  Each trial consumes a 16-bit window
 * deciding steps 2-5.  For a B-bit field b and T = floor(2^B / k), the step
 * passes if b < T, fails if b > T, and on a tie b == T passes with
 * probability (2^B - T k)/k, drawn afresh: P(pass) = T/2^B + (2^B - T k) /
 * (2^B k) = 1/k.  Step 2 is bit 0 (T = 1 of 2, no tie), step 3 the byte in
 * bits 1-8 (T = 85, a tie passes with probability 1/3), step 4 bits 9-10
 * (T = 1 of 4, no tie) and step 5 bits 11-15 (T = 6 of 32, a tie passes
 * with probability 2/5).  The trial fails (K even) when step 2 fails or
 * steps 2-3 pass and step 4 fails; it succeeds when step 3 or step 5 is
 * the first to fail.  A tie at step 3 or 5, or steps 2-5 all passing (one
 * trial in 120), is finished by v_trial_slow; steps k >= 6 use 7-bit
 * fields (T = floor(128/k)). */
static uint32_t rd_uniform_small(bitrd *r, uint32_t n)
{
    /* exactly uniform on [0, n), 1 <= n < 2^32 (Lemire on 32 bits) */
    uint32_t thr = lemire_threshold(n);
    for (;;) {
        rd_fill(r);
        uint64_t m = (uint64_t)rd_take(r, 32) * n;
        if ((uint32_t)m >= thr) return (uint32_t)(m >> 32);
    }
}

static uint32_t v_trial_slow(bitrd *r, uint32_t w)
{
    /* step 2 passed (bit 0 set) */
    uint32_t b3 = (w >> 1) & 255u, b5 = w >> 11;
    if (b3 > 85u || (b3 == 85u && rd_uniform_small(r, 3) != 0)) return 3;
    if ((w >> 9) & 3u) return 4;
    if (b5 > 6u || (b5 == 6u && rd_uniform_small(r, 5) >= 2)) return 5;
    for (uint32_t k = 6;; k++) {
        rd_fill(r);
        uint32_t b = rd_take(r, 7), T = 128u / k;
        int pass = b < T || (b == T && rd_uniform_small(r, k) < 128u - T * k);
        if (!pass) return k;
    }
}

/* The a-coin of the merged stage (see u_stage): Bernoulli(a), a = t (1 -
 * exp(-1/t)) = sum_n (-1/t)^n / (n+1)!, by Algorithm 1's alternating-series
 * argument: steps A_k ~ Bernoulli(1/(t (k+1))) until the first failure K,
 * and the coin is [K odd], since P(K > n) = 1/(t^n (n+1)!).  Steps 1 and 2
 * read 7-bit fields b against T_k = floor(128 / (t (k+1))): b < T passes,
 * b > T fails, and a tie passes with probability (128 - T t (k+1)) / (t
 * (k+1)), so P(pass) = T/128 + (128 - T t (k+1)) / (128 t (k+1)) =
 * 1/(t (k+1)).  For t >= 65 only step 1 has a field (T_1 = 0: its fast path
 * is b > 0).  This finishes a coin whose fields did not decide it: ties
 * and later steps with fresh uniforms. */
static unsigned a_coin_slow(bitrd *r, uint64_t t, uint32_t b1, uint32_t T1,
                            uint32_t b2, uint32_t T2, int have2)
{
    int pass = b1 < T1 || (b1 == T1 && rd_uniform(r, 2 * t) < 128 - 2 * t * T1);
    if (!pass) return 1;                            /* K = 1 */
    if (have2)
        pass = b2 < T2 || (b2 == T2 && rd_uniform(r, 3 * t) < 128 - 3 * t * T2);
    else
        pass = rd_uniform(r, 3 * t) == 0;
    if (!pass) return 0;                            /* K = 2 */
    for (uint64_t k = 3;; k++)
        if (rd_uniform(r, t * (k + 1)) != 0) return (unsigned)(k & 1u);
}

/* U for t >= 2: u uniform on [0, t) from L bits by Lemire's rule, kept
 * with probability exp(-u/t) (K, the first failing step of Algorithm 1
 * with gamma = u/t, odd).  Each candidate consumes L + 32 fresh bits; the
 * 32 bits decide steps 1-4 at once, four 8-bit lanes whose low 7 bits are
 * the fields b_k of u_tie (the top bit of each lane is not used).  With the
 * lane thresholds T_k packed in TP, (TP | 0x80..) - B - 0x01.. keeps the top
 * bit of lane k iff b_k < T_k and (TP | 0x80..) - B iff b_k <= T_k (no lane
 * borrows: each lane stays >= 0).  The lowest lane that does not pass gives
 * K; a tie there, or four passes (probability (u/t)^4/4!), goes to
 * u_steps_slow.  A rejected Lemire draw discards the candidate.
 *
 * V is the number of candidates rejected before the kept one (no V stage
 * for t >= 2).  A candidate is kept with probability a exp(-u/t), a = t (1
 * - exp(-1/t)) < 1, as the conjunction of the exp(-u/t) coin above and an
 * independent Bernoulli(a) (see a_coin_slow; its 7-bit fields, one for t
 * >= 65 and two for t <= 64, are read with u).  Then P(keep) = (1/t) sum_u a exp(-u/t)
 * = (a/t) (1 - e^-1) / (1 - exp(-1/t)) = 1 - e^-1 exactly, so the number of
 * rejections before a keep is geometric with P(V >= k) = e^-k, V's law; the
 * kept u has P(u) proportional to exp(-u/t); and, as in any rejection
 * sampler, the kept value is independent of the number of trials.  Lemire
 * rejections are not candidates and are not counted.
 *
 * x7 = floor(128 u / t): for t < 128 by the reciprocal rcp (128 u < 2^14,
 * so the product's error is below 2^-18 < 1/t and the floor is exact); for
 * t >= 128 from the draw v itself: u = floor(v t / 2^L) gives v/2^(L-7) -
 * 128/t < 128 u / t <= v / 2^(L-7), so with q = floor(v / 2^(L-7)), x7 is
 * q when q t <= 128 u and q - 1 otherwise. */
/* LANE_T[x] packs floor(x/k) for k = 1..4, step k's threshold, in byte k-1. */
#define LANE_TP(x) ((uint32_t)(x) | (uint32_t)((x) / 2) << 8 | (uint32_t)((x) / 3) << 16 | \
                    (uint32_t)((x) / 4) << 24)
#define LANE_TP8(x) LANE_TP(x), LANE_TP(x + 1), LANE_TP(x + 2), LANE_TP(x + 3), \
                    LANE_TP(x + 4), LANE_TP(x + 5), LANE_TP(x + 6), LANE_TP(x + 7)
static const uint32_t LANE_T[128] = {
    LANE_TP8(0), LANE_TP8(8), LANE_TP8(16), LANE_TP8(24), LANE_TP8(32), LANE_TP8(40),
    LANE_TP8(48), LANE_TP8(56), LANE_TP8(64), LANE_TP8(72), LANE_TP8(80), LANE_TP8(88),
    LANE_TP8(96), LANE_TP8(104), LANE_TP8(112), LANE_TP8(120)
};
#define LANE_TOP 0x80808080u
#define LANE_ONE 0x01010101u
#define LANE_LOW 0x7F7F7F7Fu

DLAP_INLINE size_t
u_stage(bitrd *rp, const dlap_consts *c, uint64_t *ub, uint64_t *vb, size_t want,
        const int mode, const int merged)
{
    bitrd r = *rp;
    const uint64_t t = c->t;
    const uint32_t thr = c->uthr;
    size_t j = 0;
    uint64_t rejected = 0;   /* merged: rejections since the last kept candidate */
    while (j < want) {
        uint64_t u, q;
        unsigned bad, ba = 1, bb = 0;
        rd_fill(&r);
        if (mode == U_SMALL16 || mode == U_MID16) {
            uint32_t v;
            if (merged == 2) {
                uint32_t w = rd_take(&r, 30);
                v = w & 0xFFFFu;
                ba = (w >> 16) & 127u;
                bb = w >> 23;
            } else if (merged) {
                uint32_t w = rd_take(&r, 23);
                v = w & 0xFFFFu;
                ba = w >> 16;
            } else {
                v = rd_take(&r, 16);
            }
            uint32_t m = v * (uint32_t)t;
            bad = (m & 0xFFFFu) < thr;
            u = m >> 16;
            q = v >> 9;
        } else if (mode == U_Q24) {
            uint32_t w = rd_take(&r, 31);
            uint32_t v = w & 0xFFFFFFu;
            ba = w >> 24;
            uint64_t m = (uint64_t)v * t;               /* < 2^56 */
            bad = (uint32_t)(m & 0xFFFFFFu) < thr;
            u = m >> 24;
            q = v >> 17;
        } else if (mode == U_W32) {
            uint32_t v = rd_take(&r, 32);
            uint64_t m = (uint64_t)v * t;
            bad = (uint32_t)m < thr;
            u = m >> 32;
            q = v >> 25;
        } else {
            uint64_t v = rd_take(&r, 32);
            rd_fill(&r);
            uint32_t w = rd_take(&r, merged ? 23 : 16);
            v |= (uint64_t)(w & 0xFFFFu) << 32;
            ba = w >> 16;
            uint64_t lo;
            uint64_t hi = bf_mul64_hi_lo(v, t, &lo);    /* v t < 2^80 */
            u = (hi << 16) | (lo >> 48);
            /* 2^48 mod t < t < 2^32: rejects fewer than 2^-16 */
            bad = (lo & (((uint64_t)1 << 48) - 1)) < c->uthr48;
            q = v >> 41;
        }
        uint32_t x7;
        if (mode == U_SMALL16)
            x7 = (uint32_t)(((uint64_t)(128 * (uint32_t)u) * c->rcp) >> 32);
        else
            x7 = (uint32_t)(q - (q * t > 128 * u));
        uint32_t tp = LANE_T[x7];
        rd_fill(&r);
        uint64_t bl = rd_take(&r, 32) & LANE_LOW;
        uint64_t top = (uint64_t)(tp | LANE_TOP);
        uint64_t lt = (top - bl - LANE_ONE) & LANE_TOP;
        uint64_t le = ((top - bl) & LANE_TOP) | ((uint64_t)1 << 39);
        uint64_t np = (~lt & LANE_TOP) | ((uint64_t)1 << 39);   /* lane 4: all passed */
        uint64_t x = np & (0 - np);                              /* first lane not passing */
        unsigned keep = (x & 0x00800080u) != 0;                  /* K = lane + 1 odd */
        unsigned acoin = 1;
        if (merged) {
            if (mode == U_W32) {
                rd_fill(&r);
                ba = rd_take(&r, 7);
            }
            /* the a-coin: K = 1 (coin 1) when b1 > T1; with two fields, K =
             * 2 (coin 0) when b1 < T1 and b2 > T2; else a_coin_slow */
            const uint32_t T1 = c->aT1, T2 = c->aT2;
            unsigned aslow;
            acoin = LT(T1, ba);
            if (merged == 2) {
                aslow = EQ(ba, T1) | (LT(ba, T1) & LT(bb, T2 + 1));
            } else {
                aslow = acoin ^ 1u;
            }
            if (DLAP_UNLIKELY(aslow & !bad)) {
                bitrd tmp = r;
                acoin = a_coin_slow(&tmp, t, ba, T1, bb, T2, merged == 2);
                r = tmp;
            }
        }
        /* slow: a tie in lane x (b == T: not <, but <=), or lane 4 */
        if (DLAP_UNLIKELY(((le & x) != 0) & !bad & acoin)) {
            unsigned i = lowest_bit(x) >> 3;                     /* lane 0..4 */
            bitrd tmp = r;
            keep = (unsigned)u_steps_slow(&tmp, u, t, x7, (uint64_t)i + 1, i < 4) & 1u;
            r = tmp;
        }
        keep &= acoin & !bad;
        ub[j] = u;
        if (merged) {
            vb[j] = rejected;
            rejected = (rejected + !bad) & (0 - (uint64_t)!keep);
        }
        j += keep;
    }
    *rp = r;
    return j;
}

#define DLAP_BATCH 64

/* A batch of Algorithm 2 in three branch-free stages (accept/reject
 * outcomes are data for the loops; only the rare continuations branch):
 *
 * 1. U (t >= 2): see u_stage; kept values are appended with the number of
 *    rejections before each as its V.
 * 2. V (t = 1): V of a sample is the number of successful
 *    Bernoulli(exp(-1)) trials before its first failure, read off a stream
 *    of trials.
 * 3. Y = floor((U + t V) / s) with a random sign bit; -0 is dropped (it
 *    would double the mass at zero) and drawn again in the next round.
 *
 * Every stage reads fresh bits, so each kept sample has the exact discrete
 * Laplace distribution and the samples are independent. */
static size_t dlap_round(bf_rng *rng, const dlap_consts *c, int64_t *out, size_t want)
{
    uint64_t ub[DLAP_BATCH], vb[DLAP_BATCH];
    const uint64_t t = c->t;
    bitrd r = rd_open(rng);
    /* 1. U */
    if (c->merged) {
        switch (c->umode) {
        case U_SMALL16:
            if (c->merged == 2) u_stage(&r, c, ub, vb, want, U_SMALL16, 2);
            else u_stage(&r, c, ub, vb, want, U_SMALL16, 1);
            break;
        case U_MID16: u_stage(&r, c, ub, vb, want, U_MID16, 1); break;
        case U_Q24: u_stage(&r, c, ub, vb, want, U_Q24, 1); break;
        case U_W32: u_stage(&r, c, ub, vb, want, U_W32, 1); break;
        default: u_stage(&r, c, ub, vb, want, U_W48, 1); break;
        }
    } else {
        memset(ub, 0, want * sizeof(uint64_t));     /* t = 1: U = 0 */
    }
    /* 2. V (t = 1) */
    if (!c->merged) {
        size_t j = 0;
        uint64_t v = 0;
        while (j < want) {
            rd_fill(&r);
            uint32_t w = rd_take(&r, 16);
            uint32_t b3 = (w >> 1) & 255u;
            uint32_t c2 = w & 1u, lt3 = LT(b3, 85u), eq3 = EQ(b3, 85u);
            uint32_t s4 = EQ((w >> 9) & 3u, 0u), le5 = LT(w >> 11, 7u);
            uint32_t fail = (c2 ^ 1u) | (c2 & lt3 & (s4 ^ 1u));     /* K = 2 or 4 */
            if (DLAP_UNLIKELY(c2 & (eq3 | (lt3 & s4 & le5)))) {
                bitrd tmp = r;
                fail = !(v_trial_slow(&tmp, w) & 1u);
                r = tmp;
            }
            vb[j] = v;
            j += fail;
            v = (v + 1) & (0 - (uint64_t)(fail ^ 1u));
        }
    }
    /* 3. Y and sign: 32 sign bits at a time (a window of fixed width) */
    size_t p = 0;
    uint32_t signs = 0;
    for (size_t i = 0; i < want; i++) {
        if ((i & 31u) == 0) {
            rd_fill(&r);
            signs = rd_take(&r, 32);
        }
        uint64_t x = ub[i] + t * vb[i];
        uint64_t y = c->s == 1 ? x : div_s(c, x);
        uint64_t b = signs & 1u;
        signs >>= 1;
        int64_t val = (int64_t)((y ^ (0 - b)) + b);         /* b ? -y : y */
        out[p] = val;
        p += !(b & (y == 0));
    }
    rd_close(&r);
    return p;
}

int64_t bf_discrete_laplace(bf_rng *rng, uint64_t t, uint64_t s)
{
    dlap_consts c;
    int64_t out[1];
    dlap_setup(&c, t, s);
    while (dlap_round(rng, &c, out, 1) == 0) {}
    return out[0];
}

void bf_discrete_laplace_fill(bf_rng *rng, uint64_t t, uint64_t s,
                              int64_t *out, size_t n)
{
    dlap_consts c;
    dlap_setup(&c, t, s);
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < DLAP_BATCH ? n - done : DLAP_BATCH;
        done += dlap_round(rng, &c, out + done, want);
    }
}

int bf_add_int64_checked(const int64_t *a, const int64_t *b, int64_t *out, size_t n)
{
    int status = BF_OK;
    for (size_t i = 0; i < n; i++) {
        int64_t r = 0;
        /* Branch-free on the data: every element is added and checked. */
        status |= bf_add_ovf(a[i], b[i], &r) ? BF_ERR_OVERFLOW : 0;
        out[i] = r;
    }
    return status;
}

int bf_discrete_laplace_add(bf_rng *rng, uint64_t t, uint64_t s,
                            const int64_t *values, int64_t *out, size_t n)
{
    bf_discrete_laplace_fill(rng, t, s, out, n);
    return bf_add_int64_checked(values, out, out, n);
}
