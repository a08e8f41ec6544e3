#include "chacha20.h"

#define ROTL32(v, n) (((v) << (n)) | ((v) >> (32 - (n))))

#define QR(a, b, c, d)                                  \
    do {                                                \
        a += b; d ^= a; d = ROTL32(d, 16);              \
        c += d; b ^= c; b = ROTL32(b, 12);              \
        a += b; d ^= a; d = ROTL32(d, 8);               \
        c += d; b ^= c; b = ROTL32(b, 7);               \
    } while (0)

void bf_chacha20_init(uint32_t state[16], const uint32_t key[8],
                      uint64_t counter, uint32_t nonce0, uint32_t nonce1)
{
    /* "expand 32-byte k" */
    state[0] = 0x61707865u;
    state[1] = 0x3320646eu;
    state[2] = 0x79622d32u;
    state[3] = 0x6b206574u;
    for (int i = 0; i < 8; i++) state[4 + i] = key[i];
    state[12] = (uint32_t)counter;
    state[13] = (uint32_t)(counter >> 32);
    state[14] = nonce0;
    state[15] = nonce1;
}

void bf_chacha20_block(const uint32_t input[16], uint32_t out[16])
{
    uint32_t x[16];
    for (int i = 0; i < 16; i++) x[i] = input[i];
    for (int r = 0; r < 10; r++) {
        QR(x[0], x[4], x[8], x[12]);
        QR(x[1], x[5], x[9], x[13]);
        QR(x[2], x[6], x[10], x[14]);
        QR(x[3], x[7], x[11], x[15]);
        QR(x[0], x[5], x[10], x[15]);
        QR(x[1], x[6], x[11], x[12]);
        QR(x[2], x[7], x[8], x[13]);
        QR(x[3], x[4], x[9], x[14]);
    }
    for (int i = 0; i < 16; i++) out[i] = x[i] + input[i];
}

/* `out` = `input` with its 64-bit block counter (words 12-13) advanced by
 * `blocks`. */
static void advance(const uint32_t input[16], uint32_t out[16], uint64_t blocks)
{
    uint64_t c = ((uint64_t)input[12] | ((uint64_t)input[13] << 32)) + blocks;
    for (int i = 0; i < 16; i++) out[i] = input[i];
    out[12] = (uint32_t)c;
    out[13] = (uint32_t)(c >> 32);
}

/* Sixteen blocks as two calls of the eight-block kernel. */
static void blocks16_pair(const uint32_t input[16], uint32_t out[256])
{
    uint32_t second[16];
    advance(input, second, 8);
    bf_chacha20_blocks8(input, out);
    bf_chacha20_blocks8(second, out + 128);
}

/* Several blocks at once, one vector lane per block: word w of every block
 * sits in one vector, so each step of the quarter round is one SIMD add,
 * xor or shift-or rotation.  GCC/Clang vector extensions keep this portable
 * (SSE2, AVX2, NEON); other compilers take the scalar path. */
#if defined(__GNUC__) || defined(__clang__)

#define VQR(a, b, c, d)                                  \
    do {                                                 \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = (x[d] << 16) | (x[d] >> 16); \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = (x[b] << 12) | (x[b] >> 20); \
        x[a] += x[b]; x[d] ^= x[a]; x[d] = (x[d] << 8) | (x[d] >> 24);  \
        x[c] += x[d]; x[b] ^= x[c]; x[b] = (x[b] << 7) | (x[b] >> 25);  \
    } while (0)

#define DEFINE_LANES(NAME, LANES, ATTR)                                       \
    ATTR static void NAME(const uint32_t input[16], uint32_t *out)            \
    {                                                                         \
        typedef uint32_t vec __attribute__((vector_size(4 * LANES)));         \
        vec x[16], s[16];                                                     \
        uint64_t c0 = (uint64_t)input[12] | ((uint64_t)input[13] << 32);      \
        for (int w = 0; w < 16; w++)                                          \
            for (int l = 0; l < LANES; l++) s[w][l] = input[w];              \
        for (int l = 0; l < LANES; l++) {                                     \
            uint64_t c = c0 + (uint64_t)l;                                    \
            s[12][l] = (uint32_t)c;                                           \
            s[13][l] = (uint32_t)(c >> 32);                                   \
        }                                                                     \
        for (int w = 0; w < 16; w++) x[w] = s[w];                             \
        for (int r = 0; r < 10; r++) {                                        \
            VQR(0, 4, 8, 12);                                                 \
            VQR(1, 5, 9, 13);                                                 \
            VQR(2, 6, 10, 14);                                                \
            VQR(3, 7, 11, 15);                                                \
            VQR(0, 5, 10, 15);                                                \
            VQR(1, 6, 11, 12);                                                \
            VQR(2, 7, 8, 13);                                                 \
            VQR(3, 4, 9, 14);                                                 \
        }                                                                     \
        for (int w = 0; w < 16; w++) {                                        \
            vec v = x[w] + s[w];                                              \
            for (int l = 0; l < LANES; l++) out[l * 16 + w] = v[l];           \
        }                                                                     \
    }

DEFINE_LANES(blocks4_vec, 4, )

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_AVX2_PATH 1
DEFINE_LANES(blocks8_avx2, 8, __attribute__((target("avx2"))))
DEFINE_LANES(blocks16_avx512, 16, __attribute__((target("avx512f"))))
#endif

static void blocks8_portable(const uint32_t input[16], uint32_t out[128])
{
    uint32_t second[16];
    advance(input, second, 4);
    blocks4_vec(input, out);
    blocks4_vec(second, out + 64);
}

typedef void (*blocks_fn)(const uint32_t *, uint32_t *);

/* The kernels for this processor, chosen once; concurrent first calls
 * store the same pointers. */
static blocks_fn impl8 = 0, impl16 = 0;

static void select_kernels(void)
{
    blocks_fn k8 = blocks8_portable, k16 = blocks16_pair;
#ifdef HAVE_AVX2_PATH
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) k8 = blocks8_avx2;
    if (__builtin_cpu_supports("avx512f")) k16 = blocks16_avx512;
#endif
    impl8 = k8;
    impl16 = k16;
}

void bf_chacha20_blocks8(const uint32_t input[16], uint32_t out[8 * 16])
{
    if (!impl8) select_kernels();
    impl8(input, out);
}

void bf_chacha20_blocks16(const uint32_t input[16], uint32_t out[16 * 16])
{
    if (!impl16) select_kernels();
    impl16(input, out);
}

#else /* scalar fallback */

void bf_chacha20_blocks8(const uint32_t input[16], uint32_t out[8 * 16])
{
    uint32_t st[16];
    for (int b = 0; b < 8; b++) {
        advance(input, st, (uint64_t)b);
        bf_chacha20_block(st, out + 16 * b);
    }
}

void bf_chacha20_blocks16(const uint32_t input[16], uint32_t out[16 * 16])
{
    blocks16_pair(input, out);
}

#endif
