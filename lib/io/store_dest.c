/*
 * store_dest.c - what a job writing to a store asks of the place it
 * writes, so that no job asks which kind the place is: the shards'
 * directory, a run's preparation, positional writes and a kept shard's
 * counts (sk_sink_*), a small output put beside a shard (sk_beside_*: an
 * index, a DALI index), and whether an object already there holds a local
 * file's bytes (upload --sync).
 * Each answer is the kind's: a local file is renamed into place, an S3
 * object is PUT and compared by its ETag, a web server takes no writes.
 */
#include "io/emit.h"
#include "io/io.h"
#include "io/store.h"
#include "s3/s3_internal.h"
#include "format/shard_stream.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* ------------------------------------------------ a writer's place */

int sk_sink_make_dir(const char *pattern, sk_error *err)
{
    const char *slash = strrchr(pattern, '/');
    if (!slash || slash == pattern || sk_store_is_remote(pattern)) return SK_OK;
    char dir[4200];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - pattern), pattern);
    return sk_mkdirs(dir, err);
}

int sk_sink_prepare(sk_s3 *s3, const char *pattern, uint64_t start, size_t nshards,
                    void (*warn)(void *, const char *), void *warn_ctx, sk_error *err)
{
    if (!sk_store_is_s3(pattern)) return SK_OK;
    return sk_sink_s3_prepare(s3, pattern, start, nshards, warn, warn_ctx, err);
}

int sk_sink_positional(const char *path)
{
    return !sk_store_is_remote(path);
}

int sk_sink_count_exts(sk_s3 *s3, const char *path, sk_manifest *man, sk_error *err)
{
    if (sk_store_is_s3(path)) return sk_sink_s3_count_exts(s3, path, man, err);
    char ipath[4200];
    sk_index *ix;
    SK_FAIL_IF(sk_emit_index_path(path, ipath, sizeof ipath), err, SK_E_USAGE, "%s: name too long", path);
    SK_GUARD(sk_index_open(&ix, ipath, 0, err));
    int rc = SK_OK;
    for (uint64_t i = 0; i < sk_index_member_count(ix) && !rc; i++) {
        sk_member_ref m;
        if (!(rc = sk_index_member(ix, i, &m, err))) rc = sk_manifest_count_ext(man, m.ext, m.ext_len, 1, err);
    }
    sk_index_close(ix);
    return rc;
}

/* ------------------------------------------------ a small output beside */

int sk_beside_begin(sk_beside *b, sk_store_env *e, const char *url, const char *tag_shard,
                    const char *what, sk_error *err)
{
    memset(b, 0, sizeof *b);
    b->url = b->path = url;
    sk_store_where w;
    SK_GUARD(sk_store_classify(url, &w, err));
    SK_FAIL_IF(!w.writable, err, SK_E_USAGE, "%s: a web server takes no writes", url);
    if (!w.remote) return SK_OK; /* built under its final name (temporary name, rename) */
    if (tag_shard) {
        /* the shard's ETag now, before it is read: kept on its index
         * object.  Replaced in between, the index describes the new object
         * under the old ETag, which --resume then finds stale: redone,
         * never trusted. */
        sk_store *s = NULL;
        sk_store_stat head = {.size = 0};
        int rc = sk_store_open(&s, tag_shard, e, err);
        if (!rc) rc = s->ops->stat(s, &head, err);
        sk_store_close(s);
        SK_GUARD(rc);
        snprintf(b->etag, sizeof b->etag, "%s", head.etag);
        b->tagged = 1;
    }
    SK_GUARD(sk_s3_scratch(b->scratch, sizeof b->scratch, what, err));
    b->path = b->scratch;
    return SK_OK;
}

int sk_beside_put(sk_beside *b, sk_store_env *e, sk_error *err)
{
    if (!b->scratch[0]) return SK_OK;
    SK_FAIL_IF(!e || !e->s3, err, SK_E_USAGE, "%s: an s3:// index needs an S3 client", b->url);
    return sk_s3_put_file(e->s3, b->scratch, b->url, b->tagged ? b->etag : NULL, err);
}

void sk_beside_end(sk_beside *b)
{
    if (b->scratch[0]) unlink(b->scratch);
    b->scratch[0] = 0;
}

/* ------------------------------------------- is it there already (S3) */

/* The largest object compared through a single MD5 of its bytes: past
 * it the file is sent again (a larger single PUT is rare; hashing it
 * would cost more than it saves). */
#define SAME_SINGLE_MAX (256ull << 20)
#define PIECE (1u << 20) /* the bytes in memory at once while hashing */

static void hex(const unsigned char *d, char out[33])
{
    for (int i = 0; i < 16; i++) snprintf(out + 2 * i, 3, "%02x", d[i]);
}

/* MD5 of len bytes at off of fd, read PIECE at a time into buf; SK_E_IO
 * naming path when the file is shorter than it was. */
static int md5_range(int fd, const char *path, unsigned char *buf, uint64_t off, uint64_t len,
                     unsigned char d[16], sk_error *err)
{
    void *ctx = sk_s3_md5_begin();
    SK_FAIL_IF(!ctx, err, SK_E_NOMEM, "out of memory");
    int rc = SK_OK;
    for (uint64_t done = 0; !rc && done < len;) {
        size_t want = len - done < PIECE ? (size_t)(len - done) : PIECE, got;
        rc = sk_stream_pread(fd, off + done, buf, want, &got, path, err);
        if (!rc && got != want)
            rc = sk_error_set(err, SK_E_IO, "%s: changed while being compared (short read)", path);
        if (!rc) sk_s3_md5_add(ctx, buf, want), done += want;
    }
    sk_s3_md5_end(ctx, d);
    return rc;
}

/* What S3 makes the ETag of path's size bytes: single MD5, or parts. */
static int file_etag(uint64_t part_size, int fd, const char *path, uint64_t size, int parts, char *out,
                     size_t cap, sk_error *err)
{
    unsigned char d[16];
    char h[33];
    uint64_t ps = part_size;
    if (parts) {
        while ((size + ps - 1) / ps > 10000) ps *= 2; /* upload's own rule */
        if ((size + ps - 1) / ps != (uint64_t)parts) return *out = 0, SK_OK; /* another part size */
    }
    unsigned char *md5s = malloc(parts ? (size_t)parts * 16 : 1), *buf = malloc(PIECE);
    int rc = md5s && buf ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc && !parts && !(rc = md5_range(fd, path, buf, 0, size, d, err)))
        hex(d, h), snprintf(out, cap, "%s", h);
    for (int i = 0; !rc && i < parts; i++) {
        uint64_t off = (uint64_t)i * ps, n = size - off < ps ? size - off : ps;
        rc = md5_range(fd, path, buf, off, n, md5s + 16 * i, err);
    }
    if (!rc && parts) sk_s3_md5(md5s, (size_t)parts * 16, d), hex(d, h), snprintf(out, cap, "%s-%d", h, parts);
    free(md5s), free(buf);
    return rc;
}

int sk_store_entry_same(const sk_store_entry *v, const char *path, uint64_t size, uint64_t part_size,
                        sk_error *err)
{
    if (!v || v->size != size || !v->etag || !v->etag[0] || !part_size) return 0;
    const char *dash = strchr(v->etag, '-');
    int parts = dash ? atoi(dash + 1) : 0;
    if (dash && (parts < 1 || parts > 10000)) return 0;
    if (!dash && size > SAME_SINGLE_MAX) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -sk_error_set(err, SK_E_IO, "%s: cannot open: %s", path, strerror(errno));
    char etag[80];
    int rc = file_etag(part_size, fd, path, size, parts, etag, sizeof etag, err);
    close(fd);
    if (rc) return -rc;
    return etag[0] && !strcasecmp(etag, v->etag);
}
