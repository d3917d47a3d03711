/*
 * upload_sync.c - `upload --sync`: which objects already hold the bytes of
 * the local file that would be sent, so that a rerun sends nothing it sent
 * before (what `aws s3 sync` and `rclone copy` users expect).
 *
 * The destination prefix is read a listing page at a time, merged with the
 * keys asked about (one request per 1,000 objects, not a HEAD per file):
 * the keys come mostly in key order (trees walked sorted, data, then
 * indexes, then the manifest), so a page answers every key it spans, and
 * a key outside it starts a page just before it (start-after).  Memory is
 * one page whatever the destination holds.  An object is the same when
 * its size is the file's
 * and its ETag is what S3 makes of the file's bytes: the MD5 of them for
 * an object sent in one PUT, the MD5 of the parts' MD5s and "-N" for a
 * multipart one, with the part size upload uses.  Anything else (an
 * encrypted object's opaque ETag, another part size, a file that changed)
 * counts as different, and the file is sent: a doubt costs a PUT, never
 * a stale object.
 */
#include "core/internal.h"
#include "s3/s3_internal.h"
#include "format/shard_stream.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The largest object compared through a single MD5 of its whole bytes
 * (read into memory once): past it the file is sent again. */
#define SYNC_SINGLE_MAX (256ull << 20)

struct entry {
    char *key;
    uint64_t size;
    char etag[80];
};

/* The page held: every object of the prefix with a key in (lo, hi], hi
 * the page's last key when more follow, else past the end. */
struct sk_upload_sync {
    sk_s3 *s3;
    char *bucket, *prefix;
    struct entry *e;
    size_t n, cap;
    char *lo;          /* the page began after this key; NULL: at the start */
    int loaded, truncated;
    int nomem;
    uint64_t part_size, threshold;
};

static void page_clear(sk_upload_sync *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].key);
    s->n = 0;
}

static int add(void *ud, const sk_s3_object *o)
{
    sk_upload_sync *s = ud;
    /* a server that ignores start-after: what lies before it is not this page's */
    if (s->lo && strcmp(o->key, s->lo) <= 0) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct entry *e = realloc(s->e, cap * sizeof *e);
        if (!e) return s->nomem = 1;
        s->e = e, s->cap = cap;
    }
    struct entry *e = &s->e[s->n];
    if (!(e->key = strdup(o->key))) return s->nomem = 1;
    e->size = o->size;
    snprintf(e->etag, sizeof e->etag, "%s", o->etag);
    s->n++;
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

int sk_upload_sync_open(sk_upload_sync **out, sk_s3 *s3, const char *bucket, const char *prefix,
                        uint64_t part_size, uint64_t multipart_threshold, sk_error *err)
{
    sk_upload_sync *s = calloc(1, sizeof *s);
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    s->s3 = s3;
    s->part_size = part_size ? part_size : 8ull << 20;
    s->threshold = multipart_threshold;
    if (!(s->bucket = strdup(bucket)) || !(s->prefix = strdup(prefix ? prefix : ""))) {
        sk_upload_sync_free(s);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *out = s;
    return SK_OK;
}

/* The page that begins after `after` (NULL: the first). */
static int load_page(sk_upload_sync *s, const char *after, sk_error *err)
{
    char *lo = after ? strdup(after) : NULL;
    SK_FAIL_IF(after && !lo, err, SK_E_NOMEM, "out of memory");
    page_clear(s);
    free(s->lo);
    s->lo = lo;
    s->loaded = 0;
    SK_GUARD(sk_s3_list_page(s->s3, s->bucket, s->prefix, lo, add, s, &s->truncated, err));
    SK_FAIL_IF(s->nomem, err, SK_E_NOMEM, "out of memory");
    /* a truncated page with nothing after its start would be asked for
     * again and again: the server does not honour start-after */
    SK_FAIL_IF(s->truncated && !s->n, err, SK_E_REMOTE, "s3://%s/%s: the listing after '%s' is "
               "empty yet says more follows: the server is looping", s->bucket, s->prefix,
               lo ? lo : "");
    if (s->n > 1) qsort(s->e, s->n, sizeof *s->e, by_key); /* S3's order; a server's may differ */
    s->loaded = 1;
    return SK_OK;
}

/* key without its last character (a whole UTF-8 one: S3 takes only valid
 * UTF-8): a key below key with nothing between them but keys that begin
 * with it, so a page after it starts at key (if it exists). */
static char *below(const char *key)
{
    size_t n = strlen(key);
    while (n && ((unsigned char)key[n - 1] & 0xc0) == 0x80) n--; /* continuation bytes */
    if (n) n--;
    return strndup(key, n);
}

/* The object at key (NULL: none), loading pages as the walk needs them. */
static int find(sk_upload_sync *s, const char *key, const struct entry **out, sk_error *err)
{
    *out = NULL;
    for (;;) {
        int after_lo = !s->lo || strcmp(key, s->lo) > 0;
        int past = s->loaded && s->truncated && strcmp(key, s->e[s->n - 1].key) > 0;
        if (s->loaded && after_lo && !past) break;
        /* the next page: after the page's last key when the walk goes on
         * in order, or just below key when it jumps (a later phase, a
         * directory's names out of key order) */
        char *b = below(key);
        SK_FAIL_IF(!b, err, SK_E_NOMEM, "out of memory");
        const char *after = b;
        if (past && strcmp(s->e[s->n - 1].key, b) > 0) after = s->e[s->n - 1].key;
        char *a = strdup(after);
        free(b);
        SK_FAIL_IF(!a, err, SK_E_NOMEM, "out of memory");
        int rc = load_page(s, *a ? a : NULL, err);
        free(a);
        SK_GUARD(rc);
    }
    struct entry k = {.key = (char *)key};
    *out = bsearch(&k, s->e, s->n, sizeof *s->e, by_key);
    return SK_OK;
}

void sk_upload_sync_free(sk_upload_sync *s)
{
    if (!s) return;
    page_clear(s);
    free(s->e);
    free(s->lo), free(s->bucket), free(s->prefix);
    free(s);
}

static void hex(const unsigned char *d, char out[33])
{
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* Reads len bytes at off of fd into buf; SK_E_IO naming path when short. */
static int read_at(int fd, const char *path, unsigned char *buf, size_t len, uint64_t off, sk_error *err)
{
    size_t got;
    SK_GUARD(sk_stream_pread(fd, off, buf, len, &got, path, err));
    SK_FAIL_IF(got != len, err, SK_E_IO, "%s: changed while being compared (short read)", path);
    return SK_OK;
}

/* What S3 makes the ETag of path's size bytes: single MD5, or parts. */
static int file_etag(const sk_upload_sync *s, int fd, const char *path, uint64_t size, int parts,
                     char *out, size_t cap, sk_error *err)
{
    unsigned char d[16], *buf;
    char h[33];
    if (!parts) {
        SK_FAIL_IF(!(buf = malloc(size ? (size_t)size : 1)), err, SK_E_NOMEM, "out of memory");
        int rc = read_at(fd, path, buf, (size_t)size, 0, err);
        if (!rc) sk_s3_md5(buf, (size_t)size, d), hex(d, h), snprintf(out, cap, "%s", h);
        free(buf);
        return rc;
    }
    uint64_t ps = s->part_size;
    while ((size + ps - 1) / ps > 10000) ps *= 2; /* upload's own rule */
    if ((size + ps - 1) / ps != (uint64_t)parts) return *out = 0, SK_OK; /* another part size */
    unsigned char *md5s = malloc((size_t)parts * 16);
    buf = malloc((size_t)ps);
    int rc = md5s && buf ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (int i = 0; !rc && i < parts; i++) {
        uint64_t off = (uint64_t)i * ps, n = size - off < ps ? size - off : ps;
        if (!(rc = read_at(fd, path, buf, (size_t)n, off, err))) sk_s3_md5(buf, (size_t)n, md5s + 16 * i);
    }
    if (!rc) sk_s3_md5(md5s, (size_t)parts * 16, d), hex(d, h), snprintf(out, cap, "%s-%d", h, parts);
    free(md5s), free(buf);
    return rc;
}

int sk_upload_sync_same(sk_upload_sync *s, const char *path, const char *key, uint64_t size, sk_error *err)
{
    const struct entry *e;
    int lrc = find(s, key, &e, err);
    if (lrc) return -lrc;
    if (!e || e->size != size || !e->etag[0]) return 0;
    const char *dash = strchr(e->etag, '-');
    int parts = dash ? atoi(dash + 1) : 0;
    if (dash && (parts < 1 || parts > 10000)) return 0;
    if (!dash && size > SYNC_SINGLE_MAX) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot open: %s", path, strerror(errno));
    char etag[80];
    int rc = file_etag(s, fd, path, size, parts, etag, sizeof etag, err);
    close(fd);
    if (rc) return -rc;
    return etag[0] && !strcasecmp(etag, e->etag);
}
