/*
 * detect.c - a shard stream's kind from its first bytes (detect.h), by the
 * rules of libarchive's own bidders for every filter it decodes in-process.
 */
#include "format/detect.h"
#include "core/internal.h"

/* lzma's "alone" format has no magic: libarchive's bidder goes by its
 * properties byte, a dictionary size LZMA utils write (2^n or 2^n + 2^(n-1),
 * 4 KiB to 1 GiB), a plausible uncompressed size and a zero first byte of
 * the range coder; so does this. */
static int lzma_alone(const unsigned char *m, size_t n)
{
    if (n < 14 || m[0] > (4 * 5 + 4) * 9 + 8 || m[13] != 0) return 0;
    uint32_t dict = sk_get_le32(m + 1);
    int ok = 0;
    for (int b = 12; b <= 30 && !ok; b++)
        ok = dict == 1u << b || (b < 30 && dict == (1u << b) + (1u << (b - 1)));
    uint64_t size = (uint64_t)sk_get_le32(m + 5) | (uint64_t)sk_get_le32(m + 9) << 32;
    return ok && (size == UINT64_MAX || size < (1ull << 38));
}

sk_stream_kind sk_stream_detect(const unsigned char *m, size_t n)
{
    if (n >= 4) {
        uint32_t v = sk_get_le32(m);
        if (v == 0xFD2FB528u || (v & 0xFFFFFFF0u) == 0x184D2A50u) return SK_STREAM_ZSTD;
    }
    /* every filter sk_la_support_filters enables, by libarchive's bidders'
     * rules */
    if (n >= 3 && m[0] == 0x1f && m[1] == 0x8b && m[2] == 8) return SK_STREAM_ARCHIVE; /* gzip */
    if (n >= 10 && !memcmp(m, "BZh", 3) && m[3] >= '1' && m[3] <= '9' &&
        (!memcmp(m + 4, "\x31\x41\x59\x26\x53\x59", 6) || !memcmp(m + 4, "\x17\x72\x45\x38\x50\x90", 6)))
        return SK_STREAM_ARCHIVE;                                                      /* bzip2 */
    if (n >= 3 && m[0] == 0x1f && m[1] == 0x9d) return SK_STREAM_ARCHIVE;              /* compress */
    if (n >= 6 && !memcmp(m, "\xfd" "7zXZ\0", 6)) return SK_STREAM_ARCHIVE;             /* xz */
    if (n >= 6 && !memcmp(m, "LZIP", 4) && m[4] <= 1) return SK_STREAM_ARCHIVE;        /* lzip */
    if (n >= 4 && (!memcmp(m, "\x04\x22\x4d\x18", 4) || !memcmp(m, "\x02\x21\x4c\x18", 4)))
        return SK_STREAM_ARCHIVE;                                                      /* lz4 */
    if (lzma_alone(m, n)) return SK_STREAM_ARCHIVE;                                    /* lzma */
    return SK_STREAM_PLAIN;
}
