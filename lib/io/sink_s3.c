/*
 * sink_s3.c - output shards straight into S3, no local copy.  A shard
 * streams into sk_s3_writer as it is written (parts of part_size go up in
 * the background, at most PARTS_IN_FLIGHT at a time, so memory stays at
 * about PARTS_IN_FLIGHT x part_size whatever the shard size).  S3 shows an
 * object only once its upload completes, which gives the same guarantee as
 * the local temporary-name-and-rename: no reader ever sees half a shard.
 * Its index object follows, the manifest comes last of all, and a failure
 * aborts the open multipart upload.
 *
 * A SIGKILL cannot abort anything, so every run first aborts the multipart
 * uploads left in progress under the names it is about to write; with
 * --resume a shard is kept when its object and index object agree (size
 * from a HEAD, CRC32C from the HEAD for a single-PUT object; a multipart
 * object's checksum is a composite of its parts, which the index cannot
 * reproduce, so that one is read back and summed - still no upload).
 */
#include "io/io.h"
#include "s3/s3_internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PARTS_IN_FLIGHT 4

/* ------------------------------------------------------- small objects */

static int put_file(sk_s3 *s3, const char *path, const char *bucket, const char *key,
                    const char *meta_etag, sk_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    unsigned char *buf = NULL;
    int rc = fstat(fd, &st) ? sk_error_set(err, SK_E_IO, "%s: %s", path, strerror(errno)) : SK_OK;
    if (!rc && !(buf = malloc((size_t)st.st_size + 1))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    size_t got = 0;
    while (!rc && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) rc = sk_error_set(err, SK_E_IO, "%s: read failed", path);
        else got += (size_t)r;
    }
    close(fd);
    if (!rc) rc = sk_s3_put_meta(s3, bucket, key, buf, got, meta_etag, err);
    free(buf);
    return rc;
}

/* A local scratch name for an index or manifest on its way up. */
int sk_s3_scratch(char *buf, size_t cap, const char *what, sk_error *err)
{
    /* created here with mkstemp (O_EXCL, mode 0600): a name in a shared
     * /tmp that someone else made first (a symlink to a file of the user's,
     * a FIFO) is never written through; the file is ours to unlink */
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    SK_FAIL_IF(snprintf(buf, cap, "%s/shardkit-%s-XXXXXX", dir, what) >= (int)cap, err, SK_E_USAGE,
               "%s: TMPDIR too long", dir);
    int fd = mkstemp(buf);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot create a scratch file: %s", buf, strerror(errno));
    close(fd);
    return SK_OK;
}

int sk_s3_put_file(sk_s3 *s3, const char *path, const char *url, const char *meta_etag,
                   sk_error *err)
{
    char *bucket = NULL, *key = NULL;
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = *key ? put_file(s3, path, bucket, key, meta_etag, err)
                  : sk_error_set(err, SK_E_USAGE, "%s: no object key", url);
    free(bucket), free(key);
    return rc;
}

/* ---------------------------------------------------- the shard stream */

struct s3_sink {
    sk_sink base;
    sk_s3 *s3;
    char *url, *bucket, *key;
    sk_s3_writer *w;
};

static void s3_sink_free(struct s3_sink *s)
{
    free(s->url), free(s->bucket), free(s->key);
    free(s);
}

static int s3_sink_write(sk_sink *base, const struct iovec *iov, int iovcnt, uint64_t len,
                         sk_error *err)
{
    struct s3_sink *s = (struct s3_sink *)base;
    for (int i = 0; i < iovcnt; i++)
        if (iov[i].iov_len) SK_GUARD(sk_s3_writer_write(s->w, iov[i].iov_base, iov[i].iov_len, err));
    return SK_OK;
}

static int s3_sink_publish(sk_sink *base, sk_index_builder *index, const sk_index_shard_info *info,
                           sk_error *err)
{
    struct s3_sink *s = (struct s3_sink *)base;
    uint64_t size = 0;
    uint32_t crc = 0;
    int rc = sk_s3_writer_finish(s->w, &size, &crc, err); /* frees the writer, aborts on failure */
    s->w = NULL;
    /* info (file size, CRC32C, flags) comes from what the writer wrote */
    if (!rc && (size != info->size || crc != info->crc32c))
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: uploaded %llu bytes with CRC32C %08x, wrote %llu "
                          "with %08x", s->url, (unsigned long long)size, crc,
                          (unsigned long long)info->size, info->crc32c);
    if (!rc && index) {
        /* the index goes up after the shard: a shard without its index is
         * simply redone by --resume */
        char tmp[4200], ikey[2048];
        snprintf(ikey, sizeof ikey, "%s.idx", s->key);
        rc = sk_s3_scratch(tmp, sizeof tmp, "idx", err);
        if (!rc) {
            rc = sk_index_builder_write(index, tmp, info, err);
            if (!rc) rc = put_file(s->s3, tmp, s->bucket, ikey, NULL, err);
            unlink(tmp);
        }
    }
    s3_sink_free(s);
    return rc;
}

static void s3_sink_abort(sk_sink *base)
{
    struct s3_sink *s = (struct s3_sink *)base;
    if (s->w) sk_s3_writer_abort(s->w); /* AbortMultipartUpload: no orphaned parts */
    s3_sink_free(s);
}

/* No positional writes, no truncation: parts already sent cannot be
 * taken back. */
static const struct sk_sink_ops s3_ops = {s3_sink_write, NULL, NULL, s3_sink_publish,
                                          s3_sink_abort};

int sk_sink_s3_open(sk_sink **out, const char *url, const sk_sink_opts *o, sk_error *err)
{
    SK_FAIL_IF(!o || !o->s3, err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", url);
    struct s3_sink *s = calloc(1, sizeof *s);
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    s->s3 = o->s3;
    int rc = (s->url = strdup(url)) ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) rc = sk_s3_parse_url(url, &s->bucket, &s->key, err);
    if (!rc && !*s->key) rc = sk_error_set(err, SK_E_USAGE, "%s: no object key", url);
    sk_s3_writer_opts wo = {.struct_size = sizeof wo, .part_size = o->s3_part_size,
                            .max_parts_in_flight = PARTS_IN_FLIGHT};
    if (!rc) rc = sk_s3_writer_open(&s->w, o->s3, s->bucket, s->key, &wo, err);
    if (rc) {
        s3_sink_free(s);
        return rc;
    }
    s->base.ops = &s3_ops;
    s->base.where = s->url;
    *out = &s->base;
    return SK_OK;
}

/* ------------------------------------------------------- before a run */

struct orphans {
    sk_s3 *s3;
    const char *bucket, *pattern; /* pattern: the key part of the s3:// pattern */
    uint64_t start, end;          /* shard numbers this run may write */
    void (*warn)(void *, const char *);
    void *warn_ctx;
};

static int on_upload(void *ud, const char *key, const char *upload_id)
{
    struct orphans *o = ud;
    uint64_t n;
    if (!sk_shard_number(o->pattern, key, &n) || n < o->start || n >= o->end) return 0;
    /* a killed run's upload of one of our shards: never completed, never
     * will be; its parts would be billed forever */
    sk_error e = SK_ERROR_INIT;
    if (sk_s3_abort_upload(o->s3, o->bucket, key, upload_id, &e) && o->warn) {
        char msg[SK_ERROR_MAX + 100];
        snprintf(msg, sizeof msg, "cannot abort an unfinished upload: %s", e.msg);
        o->warn(o->warn_ctx, msg);
    }
    return 0;
}

int sk_sink_s3_prepare(sk_s3 *s3, const char *pattern, uint64_t start, size_t nshards,
                       void (*warn)(void *, const char *), void *warn_ctx, sk_error *err)
{
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", pattern);
    char *bucket = NULL, *key = NULL;
    SK_GUARD(sk_s3_parse_url(pattern, &bucket, &key, err));
    char *slash = strrchr(key, '/');
    char prefix[2048];
    snprintf(prefix, sizeof prefix, "%.*s", slash ? (int)(slash - key + 1) : 0, key);
    struct orphans o = {s3, bucket, key, start, nshards ? start + nshards : UINT64_MAX, warn,
                        warn_ctx};
    sk_error e = SK_ERROR_INIT;
    if (sk_s3_list_uploads(s3, bucket, prefix, on_upload, &o, &e) && warn) {
        /* not fatal: the run itself does not need it */
        char msg[SK_ERROR_MAX + 100];
        snprintf(msg, sizeof msg, "s3://%s/%s: cannot list unfinished uploads: %s", bucket, prefix, e.msg);
        warn(warn_ctx, msg);
    }
    free(bucket), free(key);
    return SK_OK;
}

/* ------------------------------------------------------ the manifest */

int sk_sink_s3_put_manifest(sk_s3 *s3, sk_manifest *man, const char *url, sk_error *err)
{
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    char *bucket = NULL, *key = NULL, tmp[4200];
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = sk_s3_scratch(tmp, sizeof tmp, "manifest", err);
    if (!rc) {
        rc = sk_manifest_write_to(man, tmp, SK_OUT_REGULAR, err); /* no .lookup beside a scratch file */
        if (!rc) rc = put_file(s3, tmp, bucket, key, NULL, err);
        unlink(tmp);
    }
    free(bucket), free(key);
    return rc;
}
