/* Cryptographically secure random bits: a ChaCha20 keystream generator.
 *
 * The generator keeps a buffer of keystream words and refills it eight
 * blocks at a time (never one system call per sample).  Each refill first
 * replaces the key with keystream words that are never handed out
 * ("fast key erasure"), so a captured state does not reveal earlier output.
 * A secure generator is keyed from the operating system (getrandom,
 * getentropy or BCryptGenRandom) and re-keys itself when it notices it is
 * running in a forked child; a seeded generator derives its key from a
 * caller-supplied 256-bit seed and is reproducible.
 *
 * Like numpy's bit generators, the functions trust their inputs: the
 * caller validates arguments and serialises access to one generator.
 */
#ifndef BF_CSPRNG_H
#define BF_CSPRNG_H

#include <stddef.h>
#include <stdint.h>

#include "chacha20.h"
#include "status.h"

/* Words per refill: 2 calls of the 8-block kernel, 16 words each block. */
#define BF_RNG_BUFWORDS (2 * 8 * 16)
/* Words of every refill consumed by the next key (never output). */
#define BF_RNG_KEYWORDS 8


typedef struct bf_rng {
    uint32_t key[8];
    uint64_t counter;            /* next block counter under `key` */
    uint32_t buf[BF_RNG_BUFWORDS];
    size_t pos;                  /* next unread word in buf */
    uint64_t bits;               /* spare bits for single-bit draws */
    int nbits;
    int secure;                  /* 1: keyed from the OS, re-keyed on fork */
    long pid;                    /* process that keyed a secure generator */
} bf_rng;

/* Read n bytes of operating-system entropy.  Returns BF_OK or
 * BF_ERR_ENTROPY. */
int bf_os_entropy(void *out, size_t n);

/* Key from the operating system; marks the generator secure. */
int bf_rng_init_secure(bf_rng *rng);

/* Key from a 256-bit seed (32 bytes, little-endian words); marks the
 * generator seeded.  The same seed always gives the same stream. */
void bf_rng_init_seeded(bf_rng *rng, const uint8_t seed[32]);

/* For a secure generator in a process other than the one that keyed it
 * (a fork), discard all state and re-key from the OS.  Call at the start
 * of every batch entry point.  Returns BF_OK or BF_ERR_ENTROPY. */
int bf_rng_check_fork(bf_rng *rng);

/* An independent generator for stream `index` (< 2^63) of the 256-bit
 * `key`, for kernels that cut a release's noise into streams: its seed is
 * the first 8 words of the ChaCha20 block of `key` at counter 0 with the
 * nonce words (index mod 2^32, index / 2^32 + 2^31), so the generator is
 * exactly bf_rng_init_seeded of those 32 bytes (little-endian words).  The
 * top bit of nonce word 15 separates these blocks from every refill of a
 * generator keyed by `key` (whose nonce word 15 is 0x68736966).  Streams
 * live within one kernel call: they are never re-keyed after a fork. */
void bf_rng_init_stream(bf_rng *rng, const uint32_t key[8], uint64_t index);

/* Erase a generator's state (a store the compiler cannot drop). */
void bf_rng_wipe(bf_rng *rng);

/* Refill the buffer (internal; exposed for the inline readers). */
void bf_rng_refill(bf_rng *rng);

static inline uint32_t bf_rng_next32(bf_rng *rng)
{
    if (rng->pos >= BF_RNG_BUFWORDS) bf_rng_refill(rng);
    return rng->buf[rng->pos++];
}

static inline uint64_t bf_rng_next64(bf_rng *rng)
{
    uint64_t lo = bf_rng_next32(rng);
    uint64_t hi = bf_rng_next32(rng);
    return lo | (hi << 32);
}

static inline unsigned bf_rng_bit(bf_rng *rng)
{
    if (rng->nbits == 0) {
        rng->bits = bf_rng_next64(rng);
        rng->nbits = 64;
    }
    unsigned b = (unsigned)(rng->bits & 1u);
    rng->bits >>= 1;
    rng->nbits--;
    return b;
}

static inline uint64_t bf_mul64_hi_lo(uint64_t a, uint64_t b, uint64_t *lo)
{
#if defined(__SIZEOF_INT128__)
    unsigned __int128 m = (unsigned __int128)a * b;
    *lo = (uint64_t)m;
    return (uint64_t)(m >> 64);
#else
    uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
    *lo = (mid << 32) | (uint32_t)p00;
    return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* Exactly uniform integer in [0, n), n >= 1 (Lemire's multiply-and-reject:
 * unbiased, a division only on the rare rejection path).  Ranges below
 * 2^32 use one 32-bit word: half the keystream per draw. */
static inline uint64_t bf_rng_uniform(bf_rng *rng, uint64_t n)
{
    if (n <= 0xFFFFFFFFu) {
        uint64_t m = (uint64_t)bf_rng_next32(rng) * n;
        uint32_t l = (uint32_t)m;
        if (l < (uint32_t)n) {
            uint32_t t = (uint32_t)(-(uint32_t)n) % (uint32_t)n;
            while (l < t) {
                m = (uint64_t)bf_rng_next32(rng) * n;
                l = (uint32_t)m;
            }
        }
        return m >> 32;
    }
    uint64_t lo;
    uint64_t hi = bf_mul64_hi_lo(bf_rng_next64(rng), n, &lo);
    if (lo < n) {
        uint64_t t = (0 - n) % n;
        while (lo < t) hi = bf_mul64_hi_lo(bf_rng_next64(rng), n, &lo);
    }
    return hi;
}

/* Fill out[0..n) with raw keystream words (tests, reproducibility checks). */
void bf_rng_fill_u32(bf_rng *rng, uint32_t *out, size_t n);

#endif
