/* ChaCha20 block function (RFC 8439, section 2.3).
 *
 * The state is the RFC's 16 words: 4 constants, 8 key words, then words
 * 12..15.  RFC 8439 uses word 12 as a 32-bit block counter and words 13..15
 * as a 96-bit nonce; the generator in csprng.h uses words 12..13 as one
 * 64-bit counter (the original ChaCha layout), which agrees with the RFC for
 * every counter below 2^32.
 */
#ifndef BF_CHACHA20_H
#define BF_CHACHA20_H

#include <stdint.h>

#define BF_CHACHA20_WORDS 16   /* 32-bit words per 64-byte block */
#define BF_CHACHA20_LANES 8    /* blocks computed together by blocks8 */

/* One block.  `input` is the 16-word initial state; `out` receives the
 * 16 keystream words (little-endian words, as the RFC serialises them). */
void bf_chacha20_block(const uint32_t input[16], uint32_t out[16]);

/* Eight consecutive blocks for counters c, c+1, ..., c+7, where c is the
 * 64-bit counter formed by words 12 (low) and 13 (high) of `input`.
 * out[b * 16 + w] is word w of block b.  Written lane-wise so that the
 * compiler vectorises it with the baseline SIMD of the target. */
void bf_chacha20_blocks8(const uint32_t input[16], uint32_t out[8 * 16]);

/* Sixteen consecutive blocks (counters c .. c+15), laid out as two calls
 * of bf_chacha20_blocks8 would lay them out; one AVX-512 pass where the
 * processor has it. */
void bf_chacha20_blocks16(const uint32_t input[16], uint32_t out[16 * 16]);

/* Fill a 16-word initial state from a 256-bit key, a 64-bit counter split
 * as words 12..13 and two nonce words 14..15. */
void bf_chacha20_init(uint32_t state[16], const uint32_t key[8],
                      uint64_t counter, uint32_t nonce0, uint32_t nonce1);

#endif
