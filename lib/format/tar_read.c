/*
 * tar_read.c - the tar header walker behind `shardkit index`: it reads every
 * dialect found in shards made by others (POSIX ustar, pax extended headers
 * per member and global, GNU long names and links, v7 regular files) and
 * reports, for each regular member, its name and where its headers and data
 * lie.  It only ever asks its source for header blocks (plus the data, when
 * member checksums are wanted), so over pread it runs at header speed.
 *
 * Every field is parsed from a 512-byte block or a bounded extended-header
 * buffer; numbers are checked for syntax and range, so a corrupt archive
 * gives an error naming the offset, never a wild read.
 */
#include "core/internal.h"
#include "format/tar.h"

#include <stdlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Caps on extended headers: real pax headers and GNU long names are a few
 * hundred bytes; these stop a corrupt size from allocating gigabytes. */
#define PAX_MAX (1u << 20)
#define LONGNAME_MAX (64u << 10)
#define SCRATCH (1u << 20)

void sk_tar_reader_init(sk_tar_reader *r, const sk_tar_src *src, unsigned flags)
{
    memset(r, 0, sizeof *r);
    r->src = *src;
    r->flags = flags;
}

void sk_tar_reader_release(sk_tar_reader *r)
{
    free(r->name);
    free(r->gname);
    free(r->scratch);
    r->name = r->gname = NULL;
    r->scratch = NULL;
}

int sk_tar_is_meta(const char *name, size_t n)
{
    /* webdataset's tar_file_iterator skips names with no '/' that start
     * and end with "__" (meta_prefix / meta_suffix). */
    if (n < 4 || name[0] != '_' || name[1] != '_') return 0; /* most names: one compare */
    return !memcmp(name + n - 2, "__", 2) && !memchr(name, '/', n);
}

/* Reads exactly n bytes at pos; *got tells how many arrived (short = end). */
static int src_read(sk_tar_reader *r, uint64_t pos, void *buf, size_t n, size_t *got,
                    sk_error *err)
{
    *got = 0;
    while (*got < n) {
        size_t k = 0;
        SK_GUARD(r->src.read_at(r->src.ctx, pos + *got, (unsigned char *)buf + *got, n - *got,
                                &k, err));
        if (k == 0) break;
        *got += k;
    }
    return SK_OK;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* Eight octal digits at p, most significant first, as a number; -1 when
 * one is not a digit.  SWAR: digits pair up into 16-bit lanes, then 32,
 * then one value, with no data-dependent branch (two fields are parsed
 * for every header of a header-only scan). */
static int64_t octal8(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, 8);
    if ((x & 0xF8F8F8F8F8F8F8F8u) != 0x3030303030303030u) return -1;
    x &= 0x0707070707070707u;
    x = ((x & 0x00FF00FF00FF00FFu) << 3) + (x >> 8 & 0x00FF00FF00FF00FFu);
    x = ((x & 0x0000FFFF0000FFFFu) << 6) + (x >> 16 & 0x0000FFFF0000FFFFu);
    return (int64_t)(((x & 0xFFFFFFFFu) << 12) + (x >> 32));
}
#endif

int sk_tar_number(const unsigned char *f, size_t w, uint64_t *out)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* The forms nearly every tar writes: a 12-byte size of 11 digits and
     * a terminator; an 8-byte checksum of 6 digits, NUL, space. */
    if (w == 12 && (f[11] == 0 || f[11] == ' ')) {
        int64_t hi = octal8(f);
        unsigned a = f[8] - '0', b = f[9] - '0', c = f[10] - '0';
        if (hi >= 0 && a < 8 && b < 8 && c < 8) {
            *out = (uint64_t)hi << 9 | a << 6 | b << 3 | c;
            return 0;
        }
    } else if (w == 8 && f[6] == 0 && f[7] == ' ') {
        unsigned char d[8] = {'0', '0'};
        memcpy(d + 2, f, 6);
        int64_t x = octal8(d);
        if (x >= 0) {
            *out = (uint64_t)x;
            return 0;
        }
    }
#endif
    if (f[0] & 0x80) {
        if (f[0] == 0xff) return -1; /* negative */
        v = f[0] & 0x7f;
        for (size_t i = 1; i < w; i++) {
            if (v >> 55) return -1;
            v = v << 8 | f[i];
        }
        *out = v;
        return 0;
    }
    /* as GNU tar reads it: one leading NUL (an old tar's overflow from the
     * field before), then leading white space */
    size_t i = f[0] == 0;
    while (i < w && (f[i] == ' ' || (f[i] >= '\t' && f[i] <= '\r'))) i++;
    size_t digits = 0;
    for (; i < w && f[i] >= '0' && f[i] <= '7'; i++, digits++) {
        if (v >> 61) return -1;
        v = v << 3 | (uint64_t)(f[i] - '0');
    }
    for (; i < w; i++)
        if (f[i] != ' ' && f[i] != 0) return -1;
    *out = v;
    return 0;
}

static int zero_block(const unsigned char *b)
{
    for (int i = 0; i < SK_TAR_BLOCK; i++)
        if (b[i]) return 0;
    return 1;
}

/* Bytes >= 128 in the block: each counts 256 less in a signed-char sum. */
static uint32_t high_bytes(const unsigned char *b)
{
    uint32_t n = 0;
    for (int i = 0; i < SK_TAR_BLOCK; i++) n += b[i] >> 7;
    return n;
}

/* Header checksum: the stored value against both the unsigned and the
 * signed byte sum (old Sun and some other tars summed signed chars). */
static int checksum_ok(const unsigned char *b)
{
    uint64_t stored;
    if (sk_tar_number(b + 148, 8, &stored)) return 0;
    /* The hottest loop of a header-only scan.  Nearly every tar sums
     * unsigned bytes, so only the unsigned sum is taken in the loop; the
     * signed one (256 less per byte >= 128) only when that does not match. */
    uint32_t usum;
#if defined(__SSE2__)
    /* psadbw sums 8 bytes at a time; two accumulators halve the chain */
    __m128i zero = _mm_setzero_si128(), a0 = zero, a1 = zero;
    for (int i = 0; i < SK_TAR_BLOCK; i += 32) {
        __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(b + i + 16));
        a0 = _mm_add_epi64(a0, _mm_sad_epu8(v0, zero));
        a1 = _mm_add_epi64(a1, _mm_sad_epu8(v1, zero));
    }
    a0 = _mm_add_epi64(a0, a1);
    usum = (uint32_t)_mm_cvtsi128_si32(a0) + (uint32_t)_mm_cvtsi128_si32(_mm_unpackhi_epi64(a0, a0));
#else
    /* SWAR over 64-bit words: byte pairs add into four 16-bit lanes (each
     * at most 64 * 2 * 255 = 32640, so no carry crosses lanes). */
    const uint64_t lo8 = 0x00ff00ff00ff00ffu;
    uint64_t pairs = 0;
    for (int i = 0; i < SK_TAR_BLOCK; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        pairs += (w & lo8) + (w >> 8 & lo8);
    }
    pairs = (pairs & 0x0000ffff0000ffffu) + (pairs >> 16 & 0x0000ffff0000ffffu);
    usum = (uint32_t)pairs + (uint32_t)(pairs >> 32);
#endif
    /* the checksum field counts as eight spaces */
    uint32_t field = 0, field_high = 0;
    for (int i = 148; i < 156; i++) {
        field += b[i];
        field_high += b[i] >> 7;
    }
    long us = (long)usum - (long)field + 8 * ' ';
    if ((long)stored == us) return 1;
    long ss = us - 256 * (long)(high_bytes(b) - field_high);
    return (long)stored == ss;
}

static int set_name(char **dst, size_t *cap, const char *s, size_t n, size_t *len,
                    sk_error *err)
{
    if (n + 1 > *cap) {
        char *p = sk_xrealloc(*dst, n + 1, err);
        if (!p) return SK_E_NOMEM;
        *dst = p;
        *cap = n + 1;
    }
    memcpy(*dst, s, n);
    (*dst)[n] = 0;
    if (len) *len = n;
    return SK_OK;
}

/* Reads an extended header's content (pax or GNU long name) of size bytes
 * at pos into a fresh buffer, NUL-terminated. */
static int read_ext(sk_tar_reader *r, uint64_t pos, uint64_t size, uint64_t at, size_t cap,
                    const char *what, char **out, sk_error *err)
{
    SK_FAIL_IF(size > cap, err, SK_E_CORRUPT,
               "%s: %s header at offset %llu is %llu bytes (over %zu: corrupt?)", r->src.name,
               what, (unsigned long long)at, (unsigned long long)size, cap);
    char *buf = sk_xmalloc((size_t)size + 1, err);
    if (!buf) return SK_E_NOMEM;
    size_t got;
    int rc = src_read(r, pos, buf, (size_t)size, &got, err);
    if (!rc && got < size)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: truncated in the %s header at offset %llu",
                          r->src.name, what, (unsigned long long)at);
    if (rc) {
        free(buf);
        return rc;
    }
    buf[size] = 0;
    *out = buf;
    return SK_OK;
}

struct pax {
    const char *path;
    size_t path_len;
    uint64_t size;
    int has_path, has_size;
};

/* Parses "LEN key=value\n" records; keeps path and size, refuses GNU
 * sparse files (their data is not the member's bytes). */
static int parse_pax(sk_tar_reader *r, const char *buf, size_t n, uint64_t at, struct pax *p,
                     sk_error *err)
{
    size_t i = 0;
    while (i < n) {
        if (buf[i] == 0) break; /* zero padding some writers leave */
        size_t len = 0, j = i;
        while (j < n && buf[j] >= '0' && buf[j] <= '9' && len < n) len = len * 10 + (size_t)(buf[j++] - '0');
        SK_FAIL_IF(j == i || j >= n || buf[j] != ' ' || len > n - i || len < (j - i) + 3 ||
                       buf[i + len - 1] != '\n',
                   err, SK_E_CORRUPT, "%s: malformed pax record in the header at offset %llu",
                   r->src.name, (unsigned long long)at);
        const char *key = buf + j + 1, *end = buf + i + len - 1;
        const char *eq = memchr(key, '=', (size_t)(end - key));
        SK_FAIL_IF(!eq, err, SK_E_CORRUPT, "%s: pax record without '=' at offset %llu",
                   r->src.name, (unsigned long long)at);
        size_t klen = (size_t)(eq - key), vlen = (size_t)(end - eq - 1);
        const char *val = eq + 1;
        if (klen == 4 && !memcmp(key, "path", 4)) {
            p->path = val;
            p->path_len = vlen;
            p->has_path = 1;
        } else if (klen == 4 && !memcmp(key, "size", 4)) {
            uint64_t v = 0;
            SK_FAIL_IF(vlen == 0 || vlen > 19, err, SK_E_CORRUPT,
                       "%s: bad pax size at offset %llu", r->src.name, (unsigned long long)at);
            for (size_t k = 0; k < vlen; k++) {
                SK_FAIL_IF(val[k] < '0' || val[k] > '9', err, SK_E_CORRUPT,
                           "%s: bad pax size at offset %llu", r->src.name,
                           (unsigned long long)at);
                v = v * 10 + (uint64_t)(val[k] - '0');
            }
            p->size = v;
            p->has_size = 1;
        } else if (klen > 11 && !memcmp(key, "GNU.sparse.", 11)) {
            return sk_error_set(err, SK_E_INPUT,
                                "%s: member at offset %llu is a GNU sparse file (not supported)",
                                r->src.name, (unsigned long long)at);
        }
        /* hdrcharset=BINARY only says the path is raw bytes, which is how
         * names are kept anyway; other keys (mtime, uid...) do not matter. */
        i += len;
    }
    return SK_OK;
}

static int scratch(sk_tar_reader *r, sk_error *err)
{
    if (!r->scratch && !(r->scratch = sk_xmalloc(SCRATCH, err))) return SK_E_NOMEM;
    return SK_OK;
}

/* Reads a member's data through the source, for its CRC32C. */
static int crc_data(sk_tar_reader *r, sk_tar_entry *e, sk_error *err)
{
    SK_GUARD(scratch(r, err));
    uint32_t crc = 0;
    uint64_t left = e->size, pos = e->data_offset;
    while (left) {
        size_t want = left < SCRATCH ? (size_t)left : SCRATCH, got;
        SK_GUARD(src_read(r, pos, r->scratch, want, &got, err));
        crc = sk_crc32c(crc, r->scratch, got);
        SK_FAIL_IF(got < want, err, SK_E_CORRUPT,
                   "%s: truncated at offset %llu, inside member '%s' (header at offset %llu, "
                   "%llu of %llu data bytes present)",
                   r->src.name, (unsigned long long)(pos + got), e->name,
                   (unsigned long long)e->header_offset,
                   (unsigned long long)(pos + got - e->data_offset),
                   (unsigned long long)e->size);
        pos += got;
        left -= got;
    }
    e->crc32c = crc;
    return SK_OK;
}

/* The header block at pos: lent by the source when it can (peek_at), else
 * copied into buf.  *b stays valid until the next read from the source. */
static int header_block(sk_tar_reader *r, uint64_t pos, unsigned char *buf,
                        const unsigned char **b, size_t *got, sk_error *err)
{
    if (!r->src.peek_at) {
        *b = buf;
        return src_read(r, pos, buf, SK_TAR_BLOCK, got, err);
    }
    return r->src.peek_at(r->src.ctx, pos, SK_TAR_BLOCK, b, got, err);
}

int sk_tar_next(sk_tar_reader *r, sk_tar_entry *e, sk_error *err)
{
    unsigned char bbuf[SK_TAR_BLOCK];
    const unsigned char *b;
    char *longname = NULL, *paxbuf = NULL;
    struct pax pax = {0};
    uint64_t first = r->pos;
    int rc = SK_OK;
    memset(e, 0, sizeof *e);
    for (;;) {
        uint64_t at = r->pos;
        size_t got;
        if ((rc = header_block(r, at, bbuf, &b, &got, err))) goto out;
        if (got == 0 && at == first) { /* end of stream without end blocks */
            e->end = 1;
            goto out;
        }
        if (got < SK_TAR_BLOCK) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: truncated at offset %llu, inside a header",
                              r->src.name, (unsigned long long)(at + got));
            goto out;
        }
        if (zero_block(b)) {
            if (at != first) {
                rc = sk_error_set(err, SK_E_CORRUPT,
                                  "%s: extended header at offset %llu is followed by an end block",
                                  r->src.name, (unsigned long long)first);
                goto out;
            }
            if (r->flags & SK_TAR_IGNORE_ZEROS) { /* archives back to back: read on */
                r->pos = first = at + SK_TAR_BLOCK;
                continue;
            }
            e->end = 1;
            goto out;
        }
        if (!checksum_ok(b)) {
            rc = sk_error_set(err, SK_E_CORRUPT,
                              "%s: corrupt tar header at offset %llu (checksum mismatch)",
                              r->src.name, (unsigned long long)at);
            goto out;
        }
        uint64_t size;
        if (sk_tar_number(b + 124, 12, &size)) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: bad size field in the header at offset %llu",
                              r->src.name, (unsigned long long)at);
            goto out;
        }
        char type = (char)b[156];
        uint64_t data = at + SK_TAR_BLOCK;
        if (type == 'x' || type == 'g') {
            char *buf;
            if ((rc = read_ext(r, data, size, at, PAX_MAX, "pax", &buf, err))) goto out;
            struct pax p = {0};
            if ((rc = parse_pax(r, buf, (size_t)size, at, &p, err))) {
                free(buf);
                goto out;
            }
            if (type == 'g') {
                /* A global path would name every following member; honour
                 * it as the default, as POSIX says. */
                if (p.has_path &&
                    (rc = set_name(&r->gname, &r->gname_cap, p.path, p.path_len, &r->gname_len, err))) {
                    free(buf);
                    goto out;
                }
                if (p.has_path) r->gname_set = 1;
                free(buf);
                r->pos = data + sk_tar_pad(size);
                first = r->pos; /* a global header stands alone */
                continue;
            }
            free(paxbuf);
            paxbuf = buf;
            pax = p;
            r->pos = data + sk_tar_pad(size);
            continue;
        }
        if (type == 'L' || type == 'K') {
            char *buf;
            if ((rc = read_ext(r, data, size, at, LONGNAME_MAX, "GNU long name", &buf, err)))
                goto out;
            if (type == 'L') {
                free(longname);
                longname = buf;
            } else {
                free(buf); /* long link target: links are skipped anyway */
            }
            r->pos = data + sk_tar_pad(size);
            continue;
        }
        if (pax.has_size) size = pax.size;
        /* The name: pax path, GNU long name, ustar prefix/name, v7 name. */
        const char *nm;
        size_t nlen;
        char joined[256 + 2];
        if (pax.has_path) {
            nm = pax.path;
            nlen = pax.path_len;
        } else if (longname) {
            nm = longname;
            nlen = strnlen(longname, LONGNAME_MAX);
        } else if (r->gname_set) {
            nm = r->gname;
            nlen = r->gname_len;
        } else {
            size_t n1 = strnlen((const char *)b, 100);
            int posix = !memcmp(b + 257, "ustar\0", 6);
            size_t pl = posix ? strnlen((const char *)b + 345, 155) : 0;
            if (pl) {
                memcpy(joined, b + 345, pl);
                joined[pl] = '/';
                memcpy(joined + pl + 1, b, n1);
                nlen = pl + 1 + n1;
                nm = joined;
            } else {
                nm = (const char *)b; /* set_name copies it out of the block */
                nlen = n1;
            }
        }
        if ((rc = set_name(&r->name, &r->name_cap, nm, nlen, NULL, err))) goto out;
        uint64_t end = data + (type == '1' || type == '2' || type == '5' ? 0 : sk_tar_pad(size));
        int regular = type == '0' || type == '\0' || type == '7';
        if (regular && type == '\0' && nlen && r->name[nlen - 1] == '/') regular = 0; /* v7 dir */
        if (type == '5' || (!regular && type == '\0')) {
            r->dirs++;
        } else if (type == '1' || type == '2') {
            r->links++;
        } else if (type == 'V') {
            /* GNU volume label: no data of its own. */
        } else if (!regular) {
            rc = sk_error_set(err, SK_E_INPUT,
                              "%s: member '%s' at offset %llu has tar type '%c'%s (not supported)",
                              r->src.name, r->name, (unsigned long long)first,
                              type >= 32 && type < 127 ? type : '?',
                              type == 'S' ? ", a GNU sparse file" : "");
            goto out;
        }
        if (!regular) {
            r->pos = end;
            first = r->pos;
            free(longname);
            free(paxbuf);
            longname = paxbuf = NULL;
            memset(&pax, 0, sizeof pax);
            continue;
        }
        size_t skip = 0;
        int strip = sk_name_strip(r->name, nlen, &skip);
        e->unsafe = strip < 0;
        e->stripped = strip > 0;
        if (strip > 0 && skip < nlen) {
            memmove(r->name, r->name + skip, nlen - skip + 1);
            nlen -= skip;
        } else if (strip > 0) { /* nothing left ("/" or "../") */
            e->unsafe = 1;
        }
        e->name = r->name;
        e->name_len = nlen;
        e->header_offset = first;
        e->data_offset = data;
        e->size = size;
        e->header_len = (uint32_t)(data - first);
        r->pos = data + sk_tar_pad(size);
        if (r->src.size != UINT64_MAX && data + size > r->src.size) {
            rc = sk_error_set(err, SK_E_CORRUPT,
                              "%s: truncated at offset %llu, inside member '%s' (header at offset "
                              "%llu, %llu of %llu data bytes present)",
                              r->src.name, (unsigned long long)r->src.size, r->name,
                              (unsigned long long)first,
                              (unsigned long long)(r->src.size > data ? r->src.size - data : 0),
                              (unsigned long long)size);
            goto out;
        }
        if (r->flags & SK_TAR_CRC) rc = crc_data(r, e, err);
        goto out;
    }
out:
    free(longname);
    free(paxbuf);
    return rc;
}
