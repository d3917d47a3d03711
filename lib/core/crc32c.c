/*
 * crc32c.c - CRC32C (Castagnoli), the checksum of members, shards and S3's
 * x-amz-checksum-crc32c.
 *
 * Written by hand because no maintained C library for it ships in Debian
 * (Google's crc32c is C++ and not packaged); zlib only has CRC-32/IEEE and
 * OpenSSL has no CRC at all.  On x86-64 with SSE4.2 the crc32 instruction
 * runs three independent streams at once to hide its 3-cycle latency (in
 * rounds of 3 x 4096, 3 x 1024 and 3 x 256 bytes, so members of a few KB
 * get them too), and the streams are joined with a carry-less "shift" by
 * multiplication in GF(2) (one pclmul where there is one); where the CPU
 * multiplies carry-less on 512-bit registers (VPCLMULQDQ), 512 bytes and
 * more are folded 256 bytes a round instead, about twice as fast; elsewhere
 * a slicing-by-8 table is used.  The same shift joins
 * CRCs of adjacent pieces computed by different threads (sk_crc32c_combine).
 */
#include "shardkit.h"

#include <pthread.h>
#include <string.h>

#define POLY 0x82f63b78u /* reflected Castagnoli polynomial */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
        table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            table[t][n] = (table[t - 1][n] >> 8) ^ table[0][table[t - 1][n] & 0xff];
}

static uint32_t crc_soft(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len && ((uintptr_t)p & 7)) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
        len--;
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^
              table[5][(w >> 16) & 0xff] ^ table[4][(w >> 24) & 0xff] ^
              table[3][(w >> 32) & 0xff] ^ table[2][(w >> 40) & 0xff] ^
              table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

/* Multiply a (bit-reflected) by x^(8*len) mod P: what running crc over len
 * zero bytes does to it, used to join the three streams. */
static uint32_t gf2_multiply(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) { /* branch-free: the bits are data */
        prod ^= a & (uint32_t)-(int32_t)(b >> 31);
        b <<= 1;
        a = (a >> 1) ^ (POLY & (uint32_t)-(int32_t)(a & 1));
    }
    return prod;
}

#if defined(__x86_64__)
#include <nmmintrin.h>
#include <wmmintrin.h>
#include <immintrin.h>

/* The same product with one carry-less multiply: the 63-bit product,
 * shifted to align x^0, reduced by the crc32 instruction.  Joining the
 * CRCs of many small members (pack) is then a few cycles per set bit of
 * the length instead of a 32-step loop. */
__attribute__((target("sse4.2,pclmul")))
static uint32_t gf2_multiply_hw(uint32_t a, uint32_t b)
{
    __m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0);
    uint64_t v = (uint64_t)_mm_cvtsi128_si64(p) << 1;
    return _mm_crc32_u32(0, (uint32_t)v) ^ (uint32_t)(v >> 32);
}
#endif

static uint32_t gf2_mul(uint32_t a, uint32_t b)
{
#if defined(__x86_64__)
    if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.2"))
        return gf2_multiply_hw(a, b);
#endif
    return gf2_multiply(a, b);
}

/* pow2_table[k] = x^(8 * 2^k) mod P: with it, shifting by n bytes costs one
 * multiplication per set bit of n instead of a square-and-multiply chain. */
static uint32_t pow2_table[64];
static pthread_once_t pow2_once = PTHREAD_ONCE_INIT;

static void pow2_init(void)
{
    uint32_t base = 0x00800000u; /* x^8 */
    for (int k = 0; k < 64; k++) {
        pow2_table[k] = base;
        base = gf2_multiply(base, base);
    }
}

static uint32_t x_pow_8n(uint64_t n) /* x^(8n) mod P, reflected */
{
    uint32_t result = 0x80000000u; /* x^0 */
    pthread_once(&pow2_once, pow2_init);
    for (int k = 0; n; k++, n >>= 1)
        if (n & 1) result = gf2_mul(result, pow2_table[k]);
    return result;
}

#if defined(__x86_64__)
/* Bytes per stream per round, largest first: a member of a few KB (most
 * of a WebDataset shard's bytes) runs three streams too, not one at a
 * third of the speed; below 3 x 256 bytes the joins would cost more than
 * they save. */
static const size_t strides[3] = {4096, 1024, 256};
static uint32_t shift1[3], shift2[3]; /* x^(8 * stride), x^(8 * 2 * stride) */
static int have_clmul;

static void shifts_init(void)
{
    for (int t = 0; t < 3; t++) {
        shift1[t] = x_pow_8n(strides[t]);
        shift2[t] = x_pow_8n(2 * strides[t]);
    }
    have_clmul = __builtin_cpu_supports("pclmul");
}
static pthread_once_t shifts_once = PTHREAD_ONCE_INIT;

/* Three streams of stride bytes each, as long as 3 x stride bytes remain.
 * always_inline: the stride is a constant in each copy, so the inner loop
 * is unrolled with fixed offsets. */
__attribute__((target("sse4.2,pclmul"), always_inline))
static inline uint64_t crc_3way(uint64_t c0, const unsigned char **pp, size_t *plen,
                                size_t stride, uint32_t s1, uint32_t s2, int clmul)
{
    const unsigned char *p = *pp;
    size_t len = *plen;
    while (len >= 3 * stride) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < stride; i += 8) {
            uint64_t a, b, c;
            memcpy(&a, p + i, 8);
            memcpy(&b, p + stride + i, 8);
            memcpy(&c, p + 2 * stride + i, 8);
            c0 = _mm_crc32_u64(c0, a);
            c1 = _mm_crc32_u64(c1, b);
            c2 = _mm_crc32_u64(c2, c);
        }
        /* crc(A|B|C) = shift(crc(A), 2S) ^ shift(crc(B), S) ^ crc(C) when
         * B and C were started from zero. */
        if (clmul)
            c0 = gf2_multiply_hw((uint32_t)c0, s2) ^ gf2_multiply_hw((uint32_t)c1, s1) ^ (uint32_t)c2;
        else
            c0 = gf2_multiply((uint32_t)c0, s2) ^ gf2_multiply((uint32_t)c1, s1) ^ (uint32_t)c2;
        p += 3 * stride;
        len -= 3 * stride;
    }
    *pp = p;
    *plen = len;
    return c0;
}

/* x^e mod P, reflected, for any e (the folding constants below). */
static uint32_t x_pow(uint64_t e)
{
    uint32_t result = 0x80000000u, base = 0x40000000u; /* x^0, x^1 */
    for (; e; e >>= 1) {
        if (e & 1) result = gf2_multiply(result, base);
        base = gf2_multiply(base, base);
    }
    return result;
}

/* Folding, where the CPU multiplies 4 x 128 bits carry-less at once
 * (VPCLMULQDQ on 512-bit registers): the crc32 instruction gives 8 bytes
 * a cycle at best (three streams, above), folding 64 bytes a
 * multiply-pair, so a member's check costs a fraction as much.  A 16-byte
 * block A (reflected: its low 8 bytes, A_lo, are the higher-degree half)
 * that F bytes of data follow is worth A x^(8F) = A_lo x^(8F+64) + A_hi
 * x^(8F) mod P, a 96-bit value: two carry-less products with 32-bit
 * constants, xor-ed into the block F bytes on.  A 64 x 32-bit product of
 * reflected operands lands 33 bits off the 128-bit block's alignment, so
 * the constants are x^(8F+64-33) and x^(8F-33).  The last block left is
 * the message's remainder mod P: the crc32 instruction finishes it. */
enum { FOLD_256, FOLD_192, FOLD_128, FOLD_64, FOLD_48, FOLD_32, FOLD_16, FOLD_N };
static const unsigned fold_bytes[FOLD_N] = {256, 192, 128, 64, 48, 32, 16};
static uint64_t fold_k[FOLD_N][2]; /* {for A_lo, for A_hi} */
static int have_fold;
/* below it the four blocks' joining costs more than folding saves */
#define FOLD_MIN 512
static pthread_once_t fold_once = PTHREAD_ONCE_INIT;

static void fold_init(void)
{
    for (int i = 0; i < FOLD_N; i++) {
        fold_k[i][0] = x_pow(8 * (uint64_t)fold_bytes[i] + 64 - 33);
        fold_k[i][1] = x_pow(8 * (uint64_t)fold_bytes[i] - 33);
    }
    have_fold = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
                __builtin_cpu_supports("pclmul");
}

__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2"), always_inline))
static inline __m512i fold512(__m512i a, __m512i k, __m512i next)
{
    /* 0x96: a three-way xor */
    return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
                                     _mm512_clmulepi64_epi128(a, k, 0x11), next, 0x96);
}

__attribute__((target("pclmul,sse4.2"), always_inline))
static inline __m128i fold128(__m128i a, int i, __m128i next)
{
    __m128i k = _mm_set_epi64x((long long)fold_k[i][1], (long long)fold_k[i][0]);
    return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00),
                                       _mm_clmulepi64_si128(a, k, 0x11)), next);
}

/* At least 256 bytes: all but the last len % 16 of them (left in *pp,
 * *plen for the caller's crc32 loop). */
__attribute__((target("avx512f,vpclmulqdq,pclmul,sse4.2")))
static uint64_t crc_fold(uint64_t c0, const unsigned char **pp, size_t *plen)
{
    const unsigned char *p = *pp;
    size_t len = *plen;
    __m512i k[4];
    for (int i = 0; i < 4; i++)
        k[i] = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)fold_k[i][1],
                                                     (long long)fold_k[i][0]));
    /* the running CRC enters as an xor into the first 4 bytes */
    __m512i x0 = _mm512_xor_si512(_mm512_loadu_si512(p),
                                  _mm512_inserti32x4(_mm512_setzero_si512(),
                                                     _mm_cvtsi32_si128((int)(uint32_t)c0), 0));
    __m512i x1 = _mm512_loadu_si512(p + 64), x2 = _mm512_loadu_si512(p + 128),
            x3 = _mm512_loadu_si512(p + 192);
    p += 256;
    len -= 256;
    for (; len >= 256; p += 256, len -= 256) {
        x0 = fold512(x0, k[FOLD_256], _mm512_loadu_si512(p));
        x1 = fold512(x1, k[FOLD_256], _mm512_loadu_si512(p + 64));
        x2 = fold512(x2, k[FOLD_256], _mm512_loadu_si512(p + 128));
        x3 = fold512(x3, k[FOLD_256], _mm512_loadu_si512(p + 192));
    }
    x3 = fold512(x0, k[FOLD_192], x3);
    x3 = fold512(x1, k[FOLD_128], x3);
    x3 = fold512(x2, k[FOLD_64], x3);
    for (; len >= 64; p += 64, len -= 64) x3 = fold512(x3, k[FOLD_64], _mm512_loadu_si512(p));
    __m128i v = _mm512_extracti32x4_epi32(x3, 3);
    v = fold128(_mm512_extracti32x4_epi32(x3, 0), FOLD_48, v);
    v = fold128(_mm512_extracti32x4_epi32(x3, 1), FOLD_32, v);
    v = fold128(_mm512_extracti32x4_epi32(x3, 2), FOLD_16, v);
    for (; len >= 16; p += 16, len -= 16) v = fold128(v, FOLD_16, _mm_loadu_si128((const void *)p));
    c0 = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
    c0 = _mm_crc32_u64(c0, (uint64_t)_mm_extract_epi64(v, 1));
    *pp = p;
    *plen = len;
    return c0;
}

__attribute__((target("sse4.2,pclmul")))
static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
    uint64_t c0 = crc;
    if (len >= FOLD_MIN) {
        pthread_once(&fold_once, fold_init);
        if (have_fold) c0 = crc_fold(c0, &p, &len);
    }
    while (len && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        len--;
    }
    if (len >= 3 * strides[2]) {
        pthread_once(&shifts_once, shifts_init);
        int m = have_clmul;
        c0 = crc_3way(c0, &p, &len, 4096, shift1[0], shift2[0], m);
        c0 = crc_3way(c0, &p, &len, 1024, shift1[1], shift2[1], m);
        c0 = crc_3way(c0, &p, &len, 256, shift1[2], shift2[2], m);
    }
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        len -= 8;
    }
    while (len--) c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}
#endif

uint32_t sk_crc32c(uint32_t crc, const void *data, size_t len)
{
    crc = ~crc;
#if defined(__x86_64__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(crc, data, len);
#endif
    pthread_once(&table_once, table_init);
    return ~crc_soft(crc, data, len);
}

uint32_t sk_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    if (len_b == 0) return crc_a;
    /* The register after A|B is A's register advanced over len_b zero bytes,
     * xor B's register started from zero; the pre/post inversions cancel. */
    return gf2_mul(crc_a, x_pow_8n(len_b)) ^ crc_b;
}
