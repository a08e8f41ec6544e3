#include "discrete_laplace.h"
#include "int_ops.h"

#include <string.h>

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

/* Constants of one batch of Algorithm 2 with scale t/s, 1 <= t, s < 2^32.
 *
 * U is uniform on [0, t), kept with probability exp(-U/t) (Algorithm 1
 * with gamma = U/t: keep iff the first failing step K is odd).  The first
 * m steps come from one 32-bit draw W on [0, m! t^m) (m the largest
 * <= 12 with m! t^m <= 2^28, so that Lemire's rule rejects at most 1/16 of
 * the words; m = 1 for t > 2^28): steps 1..j all succeed with probability
 * U^j / (j! t^j) = c_j / (m! t^m) with the integer c_j = U^j t^(m-j) m!/j!,
 * i.e. iff W < c_j; c_j decreases in j, so K = 1 + #{j <= m : W < c_j}
 * unless all m succeed, when the steps go on one at a time. */
typedef struct {
    uint64_t t, s, kmax;
    uint32_t t_thr;        /* Lemire threshold of [0, t) */
    int m;                 /* steps per draw (>= 1) */
    uint32_t span, span_thr;
    int wide;              /* W is 64-bit: span64 = m! t^m <= 2^60 */
    uint64_t span64, span64_thr;
    uint64_t tm[13];       /* tm[j] = t^(m-j) m!/j!, j = 1..m */
} dlap_consts;

static void dlap_setup(dlap_consts *c, uint64_t t, uint64_t s)
{
    c->t = t;
    c->s = s;
    c->kmax = UINT64_MAX / t;
    c->t_thr = t > 1 ? lemire_threshold((uint32_t)t) : 0;
    /* m! t^m <= 2^28 (m = 1 always: t < 2^32). */
    uint64_t span = t;
    int m = 1;
    while (m < 12 && span <= ((uint64_t)1 << 28) / t / (uint64_t)(m + 1)) {
        span = span * t * (uint64_t)(m + 1);
        m++;
    }
    c->m = m;
    c->span = (uint32_t)span;
    c->span_thr = t > 1 ? lemire_threshold((uint32_t)span) : 0;
    c->wide = 0;
    c->span64 = span;
    c->span64_thr = 0;
    if (m == 1 && t > 1 && t <= ((uint64_t)1 << 30)) {
        /* Large t (e.g. a rounded rational scale): a 64-bit W decides
         * m >= 2 steps, so the one-at-a-time tail (a data-dependent branch
         * taken with probability U/t) becomes rare. */
        while (m < 12 && span <= ((uint64_t)1 << 60) / t / (uint64_t)(m + 1)) {
            span = span * t * (uint64_t)(m + 1);
            m++;
        }
        c->m = m;
        c->wide = 1;
        c->span64 = span;
        c->span64_thr = (0 - span) % span;
    }
    /* tm[m] = 1; tm[j] = tm[j+1] * t * (j+1). */
    c->tm[m] = 1;
    for (int j = m - 1; j >= 1; j--) c->tm[j] = c->tm[j + 1] * t * (uint64_t)(j + 1);
    c->tm[0] = span;
}

/* Slow path of one U candidate whose first m steps all succeeded:
 * steps m+1, m+2, ... one at a time. */
static int u_tail(bf_rng *rng, const dlap_consts *c, uint64_t u)
{
    return bern_exp_unit_from(rng, u, c->t, c->kmax, (uint64_t)c->m + 1);
}

/* A batch of Algorithm 2, stage by stage, with branch-free inner loops
 * (the accept/reject outcomes are data for the loops, not branches):
 *
 * 1. U: a candidate is two or three words (u uniform on [0, t), W uniform
 *    on [0, m! t^m) from 32 or 64 bits, each by Lemire's rule); a word Lemire rejects discards
 *    the pair (u and W stay independent and exactly uniform).  Accepted
 *    values are appended branch-free.
 * 2. V: one word per trial of Bernoulli(exp(-1)) (W on [0, 11!), K =
 *    2 + #{k : W < 11!/k!}, success iff K odd); V of a sample is the
 *    number of successes before its failure, read off a stream of trials.
 * 3. Y = (U + t V) / s with a random sign; -0 is dropped (it would double
 *    the mass at zero) and the sample drawn again in the next round.
 *
 * Every stage uses fresh independent words, so each kept sample has the
 * exact discrete Laplace distribution and samples are independent. */
#define DLAP_BATCH 64

static size_t dlap_round(bf_rng *rng, const dlap_consts *c, int64_t *out, size_t want)
{
    uint64_t ub[DLAP_BATCH + 1], vb[DLAP_BATCH + 1];
    const uint64_t t = c->t;
    /* 1. U */
    if (t > 1) {
        const uint32_t tt = (uint32_t)t, tthr = c->t_thr, span = c->span, sthr = c->span_thr;
        const int m = c->m;
        size_t j = 0;
        while (j < want) {
            uint64_t m1 = (uint64_t)bf_rng_next32(rng) * tt;
            uint64_t u = m1 >> 32, w;
            unsigned bad;
            if (c->wide) {
                uint64_t lo;
                w = bf_mul64_hi_lo(bf_rng_next64(rng), c->span64, &lo);
                bad = ((uint32_t)m1 < tthr) | (lo < c->span64_thr);
            } else {
                uint64_t m2 = (uint64_t)bf_rng_next32(rng) * span;
                w = m2 >> 32;
                bad = ((uint32_t)m1 < tthr) | ((uint32_t)m2 < sthr);
            }
            uint64_t uj = 1;
            int passed = 0;
            for (int k = 1; k <= m; k++) {
                uj *= u;
                passed += w < uj * c->tm[k];
            }
            unsigned keep;
            if (__builtin_expect(bad | (passed == m), 0)) {
                if (bad) continue;
                keep = (unsigned)u_tail(rng, c, u);
            } else {
                keep = !(passed & 1);   /* K = passed + 1 odd */
            }
            ub[j] = u;
            j += keep;
        }
    }
    /* 2. V */
    {
        size_t j = 0;
        uint64_t v = 0;
        while (j < want) {
            uint64_t mm = (uint64_t)bf_rng_next32(rng) * FACT11;
            uint32_t w = (uint32_t)(mm >> 32);
            unsigned invalid = (uint32_t)mm < FACT11_THRESHOLD;
            uint32_t k = 2;
            for (int q = 2; q <= 11; q++) k += w < FACT11_OVER_KFACT[q];
            unsigned success;
            if (__builtin_expect(k > 11, 0) && !invalid) {
                while (bern_rational(rng, 1, k)) k++;
            }
            success = k & 1u;
            unsigned fail = !success & !invalid;
            unsigned succ = success & !invalid;
            vb[j] = v;
            j += fail;
            v = (v + succ) & (0 - (uint64_t)!fail);
        }
    }
    /* 3. Y and sign */
    size_t p = 0;
    for (size_t i = 0; i < want; i++) {
        uint64_t x = (t > 1 ? ub[i] : 0) + t * vb[i];
        uint64_t y = c->s == 1 ? x : x / c->s;
        unsigned b = bf_rng_bit(rng);
        int64_t val = b ? -(int64_t)y : (int64_t)y;
        out[p] = val;
        p += !(b & (y == 0));
    }
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
    int64_t buf[DLAP_BATCH];
    dlap_setup(&c, t, s);
    size_t done = 0;
    while (done < n) {
        size_t want = n - done < DLAP_BATCH ? n - done : DLAP_BATCH;
        size_t got = dlap_round(rng, &c, buf, want);
        memcpy(out + done, buf, got * sizeof(int64_t));
        done += got;
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
