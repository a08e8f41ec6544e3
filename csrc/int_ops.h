/* Checked int64 arithmetic and 64-bit word helpers, the one definition the
 * core uses.  Each arithmetic helper returns 1 when the exact result does
 * not fit int64 (*r then holds it modulo 2^64), 0 otherwise.  GCC and
 * Clang use their builtins; other compilers compute in uint64_t
 * (wrap-around is defined there) and test the signs. */
#ifndef BF_INT_OPS_H
#define BF_INT_OPS_H

#include <stdint.h>

static inline int bf_add_ovf(int64_t a, int64_t b, int64_t *r)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, r);
#else
    uint64_t u = (uint64_t)a + (uint64_t)b;
    *r = (int64_t)u;
    /* overflow iff a and b share a sign that the result does not have */
    return ((a ^ *r) & (b ^ *r)) < 0;
#endif
}

static inline int bf_sub_ovf(int64_t a, int64_t b, int64_t *r)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_sub_overflow(a, b, r);
#else
    uint64_t u = (uint64_t)a - (uint64_t)b;
    *r = (int64_t)u;
    /* overflow iff a and b differ in sign and the result's sign is b's */
    return ((a ^ b) & (a ^ *r)) < 0;
#endif
}

static inline int bf_mul_ovf(int64_t a, int64_t b, int64_t *r)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_mul_overflow(a, b, r);
#else
    uint64_t u = (uint64_t)a * (uint64_t)b;
    *r = (int64_t)u;
    if (a == 0 || b == 0) return 0;
    if ((a == -1 && b == INT64_MIN) || (b == -1 && a == INT64_MIN)) return 1;
    /* no overflow iff dividing back gives the other factor */
    return *r / b != a;
#endif
}

/* Bit helpers on 64-bit words (w != 0 for the first two). */
static inline unsigned bf_ctz64(uint64_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_ctzll(w);
#else
    unsigned i = 0;
    while (!(w & 1)) {
        w >>= 1;
        i++;
    }
    return i;
#endif
}

/* Index of the top set bit. */
static inline unsigned bf_msb64(uint64_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return 63u - (unsigned)__builtin_clzll(w);
#else
    unsigned i = 0;
    while (w >>= 1)
        i++;
    return i;
#endif
}

static inline unsigned bf_popcount64(uint64_t w)
{
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_popcountll(w);
#else
    unsigned c = 0;
    for (; w; w &= w - 1)
        c++;
    return c;
#endif
}

#endif
