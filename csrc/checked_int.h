/* Checked int64 arithmetic shared by the core: each returns 1 when the
 * exact result does not fit int64 (*r then holds it modulo 2^64). */
#ifndef BF_CHECKED_INT_H
#define BF_CHECKED_INT_H

#include <stdint.h>

static inline int bf_add_ovf(int64_t a, int64_t b, int64_t *r)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_add_overflow(a, b, r);
#else
    uint64_t u = (uint64_t)a + (uint64_t)b;
    *r = (int64_t)u;
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
    return ((a ^ b) & (a ^ *r)) < 0;
#endif
}

#endif
