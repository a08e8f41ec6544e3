#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif

#include "csprng.h"

#include <errno.h>
#include <string.h>

#if defined(_WIN32)
#include <windows.h>
#include <bcrypt.h>
#else
#include <fcntl.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif
#if defined(__APPLE__) || defined(__OpenBSD__) || defined(__FreeBSD__)
#include <sys/random.h>
#endif
#endif

/* ---- operating-system entropy ------------------------------------------ */

#if !defined(_WIN32)
static int read_urandom(unsigned char *p, size_t n)
{
    int fd;
    do {
        fd = open("/dev/urandom", O_RDONLY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return BF_ERR_ENTROPY;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0) {
            if (errno == EINTR) continue;
            close(fd);
            return BF_ERR_ENTROPY;
        }
        if (r == 0) {
            close(fd);
            return BF_ERR_ENTROPY;
        }
        p += r;
        n -= (size_t)r;
    }
    close(fd);
    return BF_OK;
}
#endif

int bf_os_entropy(void *out, size_t n)
{
    unsigned char *p = (unsigned char *)out;
#if defined(_WIN32)
    while (n > 0) {
        ULONG chunk = n > 0x10000000u ? 0x10000000u : (ULONG)n;
        if (BCryptGenRandom(NULL, p, chunk, BCRYPT_USE_SYSTEM_PREFERRED_RNG) != 0)
            return BF_ERR_ENTROPY;
        p += chunk;
        n -= chunk;
    }
    return BF_OK;
#elif defined(__linux__) && defined(SYS_getrandom)
    while (n > 0) {
        long r = syscall(SYS_getrandom, p, n, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            if (errno == ENOSYS) return read_urandom(p, n); /* old kernel */
            return BF_ERR_ENTROPY;
        }
        p += r;
        n -= (size_t)r;
    }
    return BF_OK;
#elif defined(__APPLE__) || defined(__OpenBSD__) || defined(__FreeBSD__)
    while (n > 0) {
        size_t chunk = n > 256 ? 256 : n;   /* getentropy's limit */
        if (getentropy(p, chunk) != 0) return BF_ERR_ENTROPY;
        p += chunk;
        n -= chunk;
    }
    return BF_OK;
#else
    return read_urandom(p, n);
#endif
}

static long current_pid(void)
{
#if defined(_WIN32)
    return (long)GetCurrentProcessId();
#else
    return (long)getpid();
#endif
}

/* ---- generator ---------------------------------------------------------- */

static void wipe(void *p, size_t n)
{
    volatile unsigned char *v = (volatile unsigned char *)p;
    while (n--) *v++ = 0;
}

static void load_key(bf_rng *rng, const uint8_t bytes[32])
{
    for (int i = 0; i < 8; i++) {
        rng->key[i] = (uint32_t)bytes[4 * i] | ((uint32_t)bytes[4 * i + 1] << 8) |
                      ((uint32_t)bytes[4 * i + 2] << 16) |
                      ((uint32_t)bytes[4 * i + 3] << 24);
    }
    rng->counter = 0;
    rng->pos = BF_RNG_BUFWORDS;   /* empty: the first read refills */
    rng->bits = 0;
    rng->nbits = 0;
}

void bf_rng_refill(bf_rng *rng)
{
    uint32_t state[16];
    /* Nonce words 0x626c6f77 0x66697368 ("blowfish") separate this stream
     * from any other use of the same key. */
    bf_chacha20_init(state, rng->key, rng->counter, 0x776f6c62u, 0x68736966u);
    bf_chacha20_blocks16(state, rng->buf);
    /* Fast key erasure: the first words become the next key and are never
     * output, so the counter restarts under the new key. */
    memcpy(rng->key, rng->buf, sizeof(rng->key));
    wipe(rng->buf, sizeof(rng->key));
    rng->counter = 0;
    rng->pos = BF_RNG_KEYWORDS;
    wipe(state, sizeof(state));
}

int bf_rng_init_secure(bf_rng *rng)
{
    uint8_t seed[32];
    if (bf_os_entropy(seed, sizeof(seed)) != BF_OK) return BF_ERR_ENTROPY;
    load_key(rng, seed);
    wipe(seed, sizeof(seed));
    rng->secure = 1;
    rng->pid = current_pid();
    return BF_OK;
}

void bf_rng_init_seeded(bf_rng *rng, const uint8_t seed[32])
{
    load_key(rng, seed);
    rng->secure = 0;
    rng->pid = current_pid();
}

void bf_rng_init_stream(bf_rng *rng, const uint32_t key[8], uint64_t index)
{
    uint32_t state[16], block[16];
    bf_chacha20_init(state, key, 0, (uint32_t)index, (uint32_t)(index >> 32) | 0x80000000u);
    bf_chacha20_block(state, block);
    memcpy(rng->key, block, sizeof(rng->key));
    rng->counter = 0;
    rng->pos = BF_RNG_BUFWORDS;
    rng->bits = 0;
    rng->nbits = 0;
    rng->secure = 0;
    rng->pid = current_pid();
    wipe(state, sizeof(state));
    wipe(block, sizeof(block));
}

void bf_rng_wipe(bf_rng *rng)
{
    wipe(rng, sizeof(*rng));
}

int bf_rng_check_fork(bf_rng *rng)
{
    if (!rng->secure) return BF_OK;
    if (rng->pid == current_pid()) return BF_OK;
    wipe(rng->buf, sizeof(rng->buf));
    return bf_rng_init_secure(rng);
}

void bf_rng_fill_u32(bf_rng *rng, uint32_t *out, size_t n)
{
    while (n > 0) {
        if (rng->pos >= BF_RNG_BUFWORDS) bf_rng_refill(rng);
        size_t avail = BF_RNG_BUFWORDS - rng->pos;
        size_t k = n < avail ? n : avail;
        memcpy(out, rng->buf + rng->pos, k * sizeof(uint32_t));
        rng->pos += k;
        out += k;
        n -= k;
    }
}
