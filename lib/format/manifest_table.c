/*
 * manifest_table.c - MANIFEST.lookup, a binary copy of what a lookup needs
 * of a manifest with many shards: each shard's URL, index URL, bytes,
 * samples, CRC32C and key range, bound to the manifest's exact bytes by
 * their size and CRC32C.  Parsing a 1000-shard manifest.json with jansson
 * costs a `get` more than all the rest of it (255 KB at ~70 MB/s); reading
 * the table is a CRC32C of each file and a walk of fixed records.  The
 * JSON stays the dataset's description: a table that does not match it,
 * or is damaged, is ignored and the JSON parsed.  Layout: docs/format.md.
 */
#include "core/internal.h"
#include "format/format.h"

#include <sys/stat.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TAB_MAGIC "SKLOOKUP"
#define TAB_VERSION 1u
#define TAB_HEADER 64u
#define TAB_RECORD 56u
#define TAB_NONE 0xffffffffu
#define TAB_RANGES 1u

static int is_plain_path(const char *path)
{
    return strcmp(path, "-") && strncmp(path, "/dev/", 5) && !sk_is_s3_url(path);
}

int sk_manifest_table_write(const sk_manifest *m, const char *path, uint64_t file_len,
                            uint32_t file_crc, int ranges, sk_error *err)
{
    char *tpath = NULL;
    if (m->nshards < SK_MANIFEST_TABLE_MIN || !is_plain_path(path)) return SK_OK;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return SK_OK; /* a FIFO, a device */
    SK_FAIL_IF(asprintf(&tpath, "%s.lookup", path) < 0, err, SK_E_NOMEM, "out of memory");
    size_t S = m->nshards, nstr = 0;
    for (size_t i = 0; i < S; i++) {
        const sk_manifest_shard *s = &m->shards[i];
        nstr += strlen(s->url) + (s->index_url ? strlen(s->index_url) : 0);
        if (ranges && m->key_ranges && m->key_ranges[i].first)
            nstr += m->key_ranges[i].first_len + m->key_ranges[i].last_len;
    }
    unsigned char hdr[TAB_HEADER] = {0};
    unsigned char *rec = calloc(S, TAB_RECORD);
    char *str = malloc(nstr ? nstr : 1);
    int rc = SK_OK;
    if (!rec || !str || nstr > UINT32_MAX) {
        rc = sk_error_set(err, SK_E_NOMEM, "%s: out of memory", tpath);
        goto out;
    }
    uint32_t at = 0;
#define PUT_STR(r, o, p, n)                                                                      \
    do {                                                                                         \
        sk_put_le32((r) + (o), at), sk_put_le32((r) + (o) + 4, (uint32_t)(n));                   \
        memcpy(str + at, (p), (n)), at += (uint32_t)(n);                                          \
    } while (0)
    for (size_t i = 0; i < S; i++) {
        const sk_manifest_shard *s = &m->shards[i];
        unsigned char *r = rec + i * TAB_RECORD;
        sk_put_le64(r, s->bytes);
        sk_put_le64(r + 8, s->samples);
        sk_put_le32(r + 16, s->crc32c);
        PUT_STR(r, 20, s->url, strlen(s->url));
        if (s->index_url) PUT_STR(r, 28, s->index_url, strlen(s->index_url));
        else sk_put_le32(r + 28, 0), sk_put_le32(r + 32, TAB_NONE);
        const sk_key_range *k = ranges && m->key_ranges ? &m->key_ranges[i] : NULL;
        if (k && k->first) {
            PUT_STR(r, 36, k->first, k->first_len);
            PUT_STR(r, 44, k->last, k->last_len);
        } else {
            sk_put_le32(r + 40, TAB_NONE), sk_put_le32(r + 48, TAB_NONE);
        }
    }
#undef PUT_STR
    memcpy(hdr, TAB_MAGIC, 8);
    sk_put_le32(hdr + 8, TAB_VERSION);
    sk_put_le32(hdr + 12, ranges ? TAB_RANGES : 0);
    sk_put_le64(hdr + 16, S);
    sk_put_le64(hdr + 24, file_len);
    sk_put_le32(hdr + 32, file_crc);
    sk_put_le32(hdr + 36, (uint32_t)nstr);
    sk_put_le32(hdr + 48, sk_crc32c(sk_crc32c(0, rec, S * TAB_RECORD), str, nstr));
    sk_put_le32(hdr + 56, sk_crc32c(0, hdr, 56));
    struct iovec iov[] = {{hdr, TAB_HEADER}, {rec, S * TAB_RECORD}, {str, nstr}};
    rc = sk_out_write_iov(tpath, SK_OUT_REGULAR, iov, 3, err);
out:
    free(rec);
    free(str);
    free(tpath);
    return rc;
}

/* Reads a whole small file; 0 when it is not there or not readable. */
int sk_manifest_write_to(sk_manifest *m, const char *path, unsigned flags, sk_error *err)
{
    uint64_t len = 0;
    uint32_t crc = 0;
    int ranges = 0;
    SK_GUARD(sk_manifest_write_json(m, path, flags, &len, &crc, &ranges, err));
    return flags & SK_MANIFEST_TABLE ? sk_manifest_table_write(m, path, len, crc, ranges, err) : SK_OK;
}

int sk_manifest_write(sk_manifest *m, const char *path, sk_error *err)
{
    return sk_manifest_write_to(m, path, SK_MANIFEST_TABLE, err);
}

static int slurp(const char *path, size_t max, unsigned char **out, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    *out = NULL;
    if (fd < 0) return 0;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max ||
        !(*out = malloc(st.st_size ? (size_t)st.st_size : 1))) {
        close(fd);
        return 0;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t r = pread(fd, *out + got, (size_t)st.st_size - got, (off_t)got);
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    if (got != (size_t)st.st_size) {
        free(*out);
        *out = NULL;
        return 0;
    }
    *len = got;
    return 1;
}

sk_manifest *sk_manifest_from_table(const unsigned char *t, size_t n, const char *text,
                                    size_t text_len)
{
    sk_manifest *m = NULL;
    char *scratch = NULL;
    size_t scap = 0;
    const unsigned char *h = t;
    uint64_t S = n >= TAB_HEADER ? sk_get_le64(h + 16) : 0;
    uint32_t nstr = n >= TAB_HEADER ? sk_get_le32(h + 36) : 0;
    if (n < TAB_HEADER || memcmp(h, TAB_MAGIC, 8) || sk_get_le32(h + 8) != TAB_VERSION ||
        sk_get_le32(h + 56) != sk_crc32c(0, h, 56) || sk_get_le64(h + 24) != text_len ||
        sk_get_le32(h + 32) != sk_crc32c(0, text, text_len) || S > (n - TAB_HEADER) / TAB_RECORD ||
        TAB_HEADER + S * TAB_RECORD + nstr != n ||
        sk_get_le32(h + 48) != sk_crc32c(0, t + TAB_HEADER, n - TAB_HEADER))
        goto out;
    const unsigned char *rec = t + TAB_HEADER;
    const char *str = (const char *)rec + S * TAB_RECORD;
    int ranges = (sk_get_le32(h + 12) & TAB_RANGES) != 0;
    if (!(m = sk_manifest_new())) goto out;
    for (uint64_t i = 0; i < S; i++) {
        const unsigned char *r = rec + i * TAB_RECORD;
        const char *p[4] = {NULL};
        uint32_t len[4];
        for (int k = 0; k < 4; k++) { /* url, index, first key, last key */
            uint32_t off = sk_get_le32(r + 20 + 8 * k);
            len[k] = sk_get_le32(r + 24 + 8 * k);
            if (len[k] == TAB_NONE) continue;
            if ((uint64_t)off + len[k] > nstr || (k < 2 && (!len[k] || memchr(str + off, 0, len[k]))))
                goto bad;
            p[k] = str + off;
        }
        if (!p[0] || (!p[2]) != (!p[3]) || (p[2] && !ranges)) goto bad;
        /* NUL-terminated copies in scratch (add_shard copies them again) */
        size_t need = (size_t)len[0] + 1 + (p[1] ? (size_t)len[1] + 1 : 0);
        if (need > scap) {
            char *ns = realloc(scratch, need);
            if (!ns) goto bad;
            scratch = ns, scap = need;
        }
        memcpy(scratch, p[0], len[0]), scratch[len[0]] = 0;
        char *idx = p[1] ? scratch + len[0] + 1 : NULL;
        if (idx) memcpy(idx, p[1], len[1]), idx[len[1]] = 0;
        sk_manifest_shard s = {.url = scratch, .index_url = idx, .bytes = sk_get_le64(r),
                               .samples = sk_get_le64(r + 8), .crc32c = sk_get_le32(r + 16)};
        if (m->samples + s.samples < m->samples || sk_manifest_add_shard(m, &s, NULL) ||
            (p[2] && sk_manifest_set_key_range(m, m->nshards - 1, p[2], len[2], p[3], len[3],
                                               NULL)))
            goto bad;
    }
    goto out;
bad:
    sk_manifest_free(m);
    m = NULL;
out:
    free(scratch);
    return m;
}

int sk_manifest_load_for_lookup(sk_manifest **out, const char *path, sk_error *err)
{
    unsigned char *text;
    size_t len;
    char *tpath = NULL;
    *out = NULL;
    if (!is_plain_path(path) || !slurp(path, (size_t)1 << 30, &text, &len))
        return sk_manifest_load(out, path, err); /* its errors, as before */
    unsigned char *t;
    size_t tlen;
    if (asprintf(&tpath, "%s.lookup", path) >= 0 && slurp(tpath, (size_t)1 << 30, &t, &tlen)) {
        *out = sk_manifest_from_table(t, tlen, (const char *)text, len);
        free(t);
    }
    free(tpath);
    int rc = *out ? SK_OK : sk_manifest_parse(out, (const char *)text, len, path, err);
    free(text);
    return rc;
}
