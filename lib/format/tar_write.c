/*
 * tar_write.c - deterministic POSIX tar headers for shard members.
 *
 * A member gets a plain ustar header when its name fits (100 bytes, or a
 * prefix of up to 155 bytes split at a '/') and is ASCII, and its size fits
 * 11 octal digits; otherwise a pax extended header ('x') carrying path=
 * (and hdrcharset=BINARY for names that are not UTF-8) and/or size= comes
 * first.  Mode 0644, uid/gid 0, empty uname/gname, fixed mtime: the same
 * member always gives the same bytes.
 */
#include "core/internal.h"
#include "format/tar.h"

#include <stdio.h>
#include <stdlib.h>

#define USTAR_MAX_SIZE 077777777777ULL

static int is_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80 || s[i] == 0) return 0;
    return 1;
}

int sk_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p++;
        int more = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
        if (more < 0 || c == 0xc0 || c == 0xc1 || c > 0xf4 || end - p < more) return 0;
        uint32_t cp = more == 0 ? c : c & (0x3f >> more);
        for (int k = 0; k < more; k++) {
            if ((*p & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (*p++ & 0x3f);
        }
        if ((more == 1 && cp < 0x80) || (more == 2 && cp < 0x800) ||
            (more == 3 && cp < 0x10000) || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
            return 0;
    }
    return 1;
}

/* Where to cut name into ustar prefix/name, or -1 when it cannot be. */
static long ustar_split(const char *name, size_t n)
{
    if (n <= 100) return 0;
    if (n > 256) return -1;
    for (size_t p = 1; p < n && p <= 155; p++)
        if (name[p] == '/' && n - p - 1 <= 100 && n - p - 1 > 0) return (long)p;
    return -1;
}

static void octal(unsigned char *field, size_t width, uint64_t v)
{
    /* width-1 digits, zero padded, then NUL; by hand because snprintf
     * showed up in profiles at a million headers a second */
    field[width - 1] = 0;
    for (size_t i = width - 1; i-- > 0; v >>= 3) field[i] = (unsigned char)('0' + (v & 7));
}

static void ustar_block(unsigned char *b, const char *name, size_t n, long split,
                        uint64_t size, uint64_t mtime, char type)
{
    memset(b, 0, SK_TAR_BLOCK);
    if (split > 0) {
        memcpy(b + 345, name, (size_t)split);
        memcpy(b, name + split + 1, n - (size_t)split - 1);
    } else {
        memcpy(b, name, n < 100 ? n : 100);
    }
    memcpy(b + 100, "0000644", 8);
    memcpy(b + 108, "0000000", 8);
    memcpy(b + 116, "0000000", 8);
    octal(b + 124, 12, size > USTAR_MAX_SIZE ? 0 : size);
    octal(b + 136, 12, mtime & 077777777777ULL);
    b[156] = (unsigned char)type;
    memcpy(b + 257, "ustar", 6);
    memcpy(b + 263, "00", 2);
    memset(b + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < SK_TAR_BLOCK; i++) sum += b[i];
    octal(b + 148, 7, sum); /* six digits, NUL, then the space below */
    b[155] = ' ';
}

/* Appends one pax record "LEN key=value\n", where LEN counts itself. */
static size_t pax_record(unsigned char *dst, const char *key, const char *val, size_t vlen)
{
    size_t body = 1 + strlen(key) + 1 + vlen + 1; /* ' ' key '=' val '\n' */
    size_t digits = 1, len;
    for (;;) {
        len = body + digits;
        size_t d = 1;
        for (size_t t = len; t >= 10; t /= 10) d++;
        if (d == digits) break;
        digits = d;
    }
    if (dst) {
        int k = sprintf((char *)dst, "%zu %s=", len, key);
        memcpy(dst + k, val, vlen);
        dst[k + vlen] = '\n';
    }
    return len;
}

static size_t pax_records(unsigned char *dst, const char *name, size_t n,
                          int need_path, uint64_t size)
{
    size_t len = 0;
    if (need_path && !sk_utf8_valid(name, n))
        len += pax_record(dst ? dst + len : NULL, "hdrcharset", "BINARY", 6);
    if (need_path) len += pax_record(dst ? dst + len : NULL, "path", name, n);
    if (size > USTAR_MAX_SIZE) {
        char num[24];
        int k = snprintf(num, sizeof num, "%llu", (unsigned long long)size);
        len += pax_record(dst ? dst + len : NULL, "size", num, (size_t)k);
    }
    return len;
}

static int needs_pax_path(const char *name, size_t n)
{
    return !is_ascii(name, n) || ustar_split(name, n) < 0;
}

size_t sk_tar_header_size(const char *name, size_t n, uint64_t size)
{
    int need_path = needs_pax_path(name, n);
    if (!need_path && size <= USTAR_MAX_SIZE) return SK_TAR_BLOCK;
    size_t rec = pax_records(NULL, name, n, need_path, size);
    return SK_TAR_BLOCK + sk_tar_pad(rec) + SK_TAR_BLOCK;
}

size_t sk_tar_header(unsigned char *dst, const char *name, size_t n,
                     uint64_t size, uint64_t mtime)
{
    int need_path = needs_pax_path(name, n);
    if (!need_path && size <= USTAR_MAX_SIZE) {
        ustar_block(dst, name, n, ustar_split(name, n), size, mtime, '0');
        return SK_TAR_BLOCK;
    }
    size_t rec = pax_records(NULL, name, n, need_path, size);
    size_t padded = sk_tar_pad(rec);
    /* The extended header's own name, as Python's tarfile writes it. */
    static const char pax_name[] = "././@PaxHeader";
    ustar_block(dst, pax_name, sizeof pax_name - 1, 0, rec, mtime, 'x');
    memset(dst + SK_TAR_BLOCK, 0, padded);
    pax_records(dst + SK_TAR_BLOCK, name, n, need_path, size);
    /* The ustar header after it holds what fits of the name: readers that
     * ignore pax still see a plausible, ASCII-safe name. */
    char fallback[100];
    size_t fl = 0;
    for (size_t i = 0; i < n && fl < sizeof fallback; i++)
        fallback[fl++] = (unsigned char)name[i] < 0x80 && name[i] ? name[i] : '_';
    ustar_block(dst + SK_TAR_BLOCK + padded, fallback, fl, 0, size, mtime, '0');
    return SK_TAR_BLOCK + padded + SK_TAR_BLOCK;
}

int sk_tar_header_matches(const unsigned char *stored, size_t len, const char *name, size_t n,
                          uint64_t size, uint64_t mtime)
{
    if (n > 100 || size > USTAR_MAX_SIZE || !is_ascii(name, n)) { /* pax, or a split name */
        unsigned char *h = malloc(SK_TAR_HEADER_MAX);
        int same = h && sk_tar_header(h, name, n, size, mtime) == len && !memcmp(h, stored, len);
        free(h);
        return same;
    }
    /* ustar_block's fields: name, mode, uid, gid, size, mtime, the
     * checksum, type '0', an empty link name, magic "ustar\0" "00", and
     * nothing else (empty uname, gname, devices, prefix) */
    static const unsigned char zeros[SK_TAR_BLOCK];
    static const char ids[24] = "0000644\0" "0000000\0" "0000000";
    unsigned char num[24], sum_f[8];
    if (len != SK_TAR_BLOCK || memcmp(stored, name, n) || memcmp(stored + n, zeros, 100 - n) ||
        memcmp(stored + 100, ids, 24))
        return 0;
    octal(num, 12, size);
    octal(num + 12, 12, mtime & 077777777777ULL);
    if (memcmp(stored + 124, num, 24) || stored[156] != '0' || memcmp(stored + 157, zeros, 100) ||
        memcmp(stored + 257, "ustar\0" "00", 8) || memcmp(stored + 265, zeros, SK_TAR_BLOCK - 265))
        return 0;
    unsigned sum = 8 * ' ' + '0' + 'u' + 's' + 't' + 'a' + 'r' + '0' + '0';
    for (size_t i = 0; i < n; i++) sum += (unsigned char)name[i];
    for (size_t i = 0; i < 24; i++) sum += (unsigned char)ids[i] + num[i];
    octal(sum_f, 7, sum);
    sum_f[7] = ' ';
    return !memcmp(stored + 148, sum_f, 8);
}
