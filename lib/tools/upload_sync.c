/*
 * upload_sync.c - `upload --sync`: which objects already hold the bytes of
 * the local file that would be sent, so that a rerun sends nothing it sent
 * before (what `aws s3 sync` and `rclone copy` users expect).
 *
 * The destination prefix is listed once (one request per 1,000 objects,
 * not a HEAD per file); an object is the same when its size is the file's
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

struct sk_upload_sync {
    struct entry *e;
    size_t n, cap;
    uint64_t part_size, threshold;
};

static int add(void *ud, const sk_s3_object *o)
{
    sk_upload_sync *s = ud;
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        struct entry *e = realloc(s->e, cap * sizeof *e);
        if (!e) return 1;
        s->e = e, s->cap = cap;
    }
    struct entry *e = &s->e[s->n];
    if (!(e->key = strdup(o->key))) return 1;
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
    s->part_size = part_size ? part_size : 8ull << 20;
    s->threshold = multipart_threshold;
    int rc = sk_s3_list(s3, bucket, prefix, add, s, err);
    if (!rc && s->n && !s->e[s->n - 1].key) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) {
        sk_upload_sync_free(s);
        return rc;
    }
    qsort(s->e, s->n, sizeof *s->e, by_key);
    *out = s;
    return SK_OK;
}

void sk_upload_sync_free(sk_upload_sync *s)
{
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) free(s->e[i].key);
    free(s->e);
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
    struct entry k = {.key = (char *)key}, *e = bsearch(&k, s->e, s->n, sizeof *s->e, by_key);
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
