#include "discrete_laplace.h"
#include "checked_int.h"

/* 20! < 2^63: one uniform draw on [0, 20!) decides the first twenty steps
 * of Algorithm 1 for gamma = 1, because P(A_1 = ... = A_k = 1) = 1/k! and
 * 20!/k! is an integer for every k <= 20. */
static const uint64_t FACT20 = 2432902008176640000ull;
static const uint64_t FACT20_OVER_KFACT[21] = {
    2432902008176640000ull, /* k = 0 */
    2432902008176640000ull, /* k = 1 */
    1216451004088320000ull,
    405483668029440000ull,
    101370917007360000ull,
    20274183401472000ull,
    3379030566912000ull,
    482718652416000ull,
    60339831552000ull,
    6704425728000ull,
    670442572800ull,
    60949324800ull,
    5079110400ull,
    390700800ull,
    27907200ull,
    1860480ull,
    116280ull,
    6840ull,
    380ull,
    20ull,
    1ull /* k = 20 */
};

/* Bernoulli(p) for p = num/den rational, 0 <= num <= den. */
static inline int bern_rational(bf_rng *rng, uint64_t num, uint64_t den)
{
    return bf_rng_uniform(rng, den) < num;
}

/* Bernoulli(exp(-1)).  Algorithm 1 with gamma = 1 draws A_k ~ Bern(1/k)
 * until the first failure at step K and returns [K odd]; here the first
 * twenty steps come from one draw W on [0, 20!): steps 1..k all succeed
 * iff W < 20!/k!. */
static int bern_exp_minus_one(bf_rng *rng)
{
    uint64_t w = bf_rng_uniform(rng, FACT20);
    uint64_t k = 2; /* A_1 = Bern(1) always succeeds */
    while (k <= 20 && w < FACT20_OVER_KFACT[k]) k++;
    if (k <= 20) return (int)(k & 1u);
    /* W == 0: steps 1..20 succeeded; continue one step at a time. */
    while (bern_rational(rng, 1, k)) k++;
    return (int)(k & 1u);
}

/* Bernoulli(exp(-num/den)) for 0 <= num <= den (gamma in [0, 1]);
 * kmax = UINT64_MAX / den, computed once by the caller (den * k must not
 * overflow). */
static int bern_exp_unit(bf_rng *rng, uint64_t num, uint64_t den, uint64_t kmax)
{
    if (num == 0) return 1;
    if (num == den) return bern_exp_minus_one(rng);
    uint64_t k = 1;
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

int bf_bernoulli_exp(bf_rng *rng, uint64_t num, uint64_t den)
{
    /* exp(-gamma) = exp(-1)^floor(gamma) * exp(-(gamma - floor(gamma))) */
    uint64_t whole = num / den;
    for (uint64_t i = 0; i < whole; i++)
        if (!bern_exp_minus_one(rng)) return 0;
    return bern_exp_unit(rng, num % den, den, UINT64_MAX / den);
}

/* Algorithm 2 with kmax = UINT64_MAX / t precomputed: a batch divides once,
 * not once per sample. */
static inline int64_t discrete_laplace(bf_rng *rng, uint64_t t, uint64_t s, uint64_t kmax)
{
    for (;;) {
        /* U uniform on [0, t), kept with probability exp(-U/t): U then has
         * P(U = u) proportional to exp(-u/t) on [0, t). */
        uint64_t u = 0;
        if (t > 1) {
            u = bf_rng_uniform(rng, t);
            if (!bern_exp_unit(rng, u, t, kmax)) continue;
        }
        /* V geometric: P(V >= v) = exp(-v). */
        uint64_t v = 0;
        while (bern_exp_minus_one(rng)) v++;
        /* X = U + t V has P(X = x) proportional to exp(-x/t); Y = X / s has
         * P(Y = y) proportional to exp(-y s/t). */
        uint64_t x = u + t * v;
        uint64_t y = s == 1 ? x : x / s;
        unsigned b = bf_rng_bit(rng);
        if (b && y == 0) continue;   /* -0 would double the mass at zero */
        return b ? -(int64_t)y : (int64_t)y;
    }
}

int64_t bf_discrete_laplace(bf_rng *rng, uint64_t t, uint64_t s)
{
    return discrete_laplace(rng, t, s, UINT64_MAX / t);
}

void bf_discrete_laplace_fill(bf_rng *rng, uint64_t t, uint64_t s,
                              int64_t *out, size_t n)
{
    uint64_t kmax = UINT64_MAX / t;
    for (size_t i = 0; i < n; i++) out[i] = discrete_laplace(rng, t, s, kmax);
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
