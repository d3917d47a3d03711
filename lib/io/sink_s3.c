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
#include "io/s3io.h"
#include "s3/s3_internal.h"
#include "io/writer.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define PARTS_IN_FLIGHT 4

struct sk_sink_s3 {
    char *bucket, *key;
    sk_s3_writer *w;
};

static void sink_free(struct sk_sink_s3 *s)
{
    if (!s) return;
    free(s->bucket), free(s->key);
    free(s);
}

/* ------------------------------------------------------- small objects */

static int put_file(sk_s3 *s3, const char *path, const char *bucket, const char *key,
                    sk_error *err)
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
    if (!rc) rc = sk_s3_put(s3, bucket, key, buf, got, err);
    free(buf);
    return rc;
}

/* A local scratch name for an index or manifest on its way up. */
static void scratch_name(char *buf, size_t cap, const char *what)
{
    static unsigned counter;
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    snprintf(buf, cap, "%s/shardkit-%s-%ld-%u", dir, what, (long)getpid(),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
}

static int buf_sink(void *ud, const void *data, size_t len)
{
    return sk_s3_buf_add(ud, data, len) ? 1 : 0;
}

/* ---------------------------------------------------- the shard stream */

int sk_sink_s3_begin(sk_shard_out *o, sk_error *err)
{
    SK_FAIL_IF(!o->s3, err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", o->path);
    struct sk_sink_s3 *s = calloc(1, sizeof *s);
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    int rc = sk_s3_parse_url(o->path, &s->bucket, &s->key, err);
    if (!rc && !*s->key) rc = sk_error_set(err, SK_E_USAGE, "%s: no object key", o->path);
    sk_s3_writer_opts wo = {o->s3_part_size, PARTS_IN_FLIGHT};
    if (!rc) rc = sk_s3_writer_open(&s->w, o->s3, s->bucket, s->key, &wo, err);
    if (rc) {
        sink_free(s);
        return rc;
    }
    o->sink = s;
    return SK_OK;
}

int sk_sink_s3_write(sk_shard_out *o, const struct iovec *iov, int iovcnt, sk_error *err)
{
    struct sk_sink_s3 *s = o->sink;
    for (int i = 0; i < iovcnt; i++)
        if (iov[i].iov_len) SK_GUARD(sk_s3_writer_write(s->w, iov[i].iov_base, iov[i].iov_len, err));
    return SK_OK;
}

int sk_sink_s3_finish(sk_shard_out *o, sk_index_shard_info *info, sk_error *err)
{
    struct sk_sink_s3 *s = o->sink;
    uint64_t size = 0;
    uint32_t crc = 0;
    o->sink = NULL;
    int rc = sk_s3_writer_finish(s->w, &size, &crc, err); /* frees the writer, aborts on failure */
    s->w = NULL;
    /* info (file size, CRC32C, flags) was filled in by sk_shard_out_finish */
    if (!rc && (size != info->size || crc != info->crc32c))
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: uploaded %llu bytes with CRC32C %08x, wrote %llu "
                          "with %08x", o->path, (unsigned long long)size, crc,
                          (unsigned long long)info->size, info->crc32c);
    if (!rc) {
        /* the index goes up after the shard: a shard without its index is
         * simply redone by --resume */
        char tmp[4200], ikey[2048];
        scratch_name(tmp, sizeof tmp, "idx");
        snprintf(ikey, sizeof ikey, "%s.idx", s->key);
        rc = sk_index_builder_write(o->index, tmp, info, err);
        if (!rc) rc = put_file(o->s3, tmp, s->bucket, ikey, err);
        unlink(tmp);
    }
    sink_free(s);
    return rc;
}

void sk_sink_s3_abort(sk_shard_out *o)
{
    struct sk_sink_s3 *s = o->sink;
    if (!s) return;
    o->sink = NULL;
    sk_s3_writer_abort(s->w); /* AbortMultipartUpload: no orphaned parts */
    sink_free(s);
}

/* ------------------------------------------------------- before a run */

struct orphans {
    sk_s3 *s3;
    const char *bucket, *pattern; /* pattern: the key part of the s3:// pattern */
    uint64_t start, end;          /* shard numbers this run may write */
    void (*warn)(void *, const char *);
    void *warn_ctx;
};

/* The number n for which the pattern gives name, if any: the name must be
 * the pattern's text before and after its integer field around a run of
 * digits, and formatting n must give the name back (widths, zeros). */
static int pattern_number(const char *pattern, const char *name, uint64_t *n)
{
    char pre[2048], post[2048], back[2100];
    size_t pl = 0, ql = 0;
    const char *p = pattern;
    for (; *p && pl + 1 < sizeof pre; p++) { /* the text before the field */
        if (*p == '%' && p[1] != '%') break;
        pre[pl++] = *p;
        if (*p == '%') p++;
    }
    if (*p != '%') return 0;
    p += strspn(p + 1, "0123456789l") + 2; /* past "%", flags, width, 'l's and the conversion */
    int hex = p[-1] == 'x';
    for (; *p && ql + 1 < sizeof post; p++) {
        post[ql++] = *p;
        if (*p == '%') p++;
    }
    size_t nl = strlen(name);
    if (nl <= pl + ql || memcmp(name, pre, pl) || memcmp(name + nl - ql, post, ql)) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(name + pl, &end, hex ? 16 : 10);
    if (errno || end != name + nl - ql || name[pl] == '-' || name[pl] == '+') return 0;
    if (sk_shard_name(pattern, v, back, sizeof back, NULL) || strcmp(back, name)) return 0;
    *n = v;
    return 1;
}

static int on_upload(void *ud, const char *key, const char *upload_id)
{
    struct orphans *o = ud;
    uint64_t n;
    if (!pattern_number(o->pattern, key, &n) || n < o->start || n >= o->end) return 0;
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

/* ------------------------------------------- manifests and indexes as objects */

static int get_object(sk_s3 *s3, const char *bucket, const char *key, sk_s3_buf *out, sk_error *err)
{
    out->len = 0;
    return sk_s3_get_cb(s3, bucket, key, 0, 0, buf_sink, out, err);
}

static int crc_sink(void *ud, const void *data, size_t len)
{
    uint32_t *crc = ud;
    *crc = sk_crc32c(*crc, data, len);
    return 0;
}

int sk_s3_load_index(sk_s3 *s3, const char *url, sk_index **out, sk_error *err)
{
    char *bucket = NULL, *key = NULL;
    sk_s3_buf blob = {0};
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = get_object(s3, bucket, key, &blob, err);
    if (!rc && !blob.p && !(blob.p = malloc(1))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) { /* the index keeps the bytes */
        rc = sk_index_adopt(out, blob.p, blob.len, url, err);
        blob.p = NULL;
    }
    sk_s3_buf_free(&blob);
    free(bucket), free(key);
    return rc;
}

int sk_s3_shard_sound(sk_s3 *s3, const char *url, sk_index **out)
{
    char *bucket = NULL, *key = NULL, iurl[4200];
    sk_index *ix = NULL;
    sk_s3_object head;
    int ok = 0;
    *out = NULL;
    if (!s3 || sk_s3_parse_url(url, &bucket, &key, NULL)) goto out;
    snprintf(iurl, sizeof iurl, "%s.idx", url);
    if (sk_s3_head(s3, bucket, key, &head, NULL) || sk_s3_load_index(s3, iurl, &ix, NULL)) goto out;
    const sk_index_shard_info *in = sk_index_shard(ix);
    if (in->size != head.size || !sk_index_sample_count(ix)) goto out;
    /* A single-PUT object's HEAD carries its full CRC32C; a multipart
     * one's (ETag "...-N") a composite, or with some servers neither. */
    if (head.crc32c[0] && !strchr(head.crc32c, '-') && !strchr(head.etag, '-')) {
        char b64[9];
        sk_s3_crc32c_b64(in->crc32c, b64);
        ok = !strcmp(b64, head.crc32c);
    }
    if (!ok) {
        uint32_t crc = 0;
        ok = !sk_s3_get_cb(s3, bucket, key, 0, 0, crc_sink, &crc, NULL) && crc == in->crc32c;
    }
out:
    if (ok) *out = ix;
    else sk_index_close(ix);
    free(bucket), free(key);
    return ok;
}

int sk_sink_s3_matches(sk_s3 *s3, const char *url, uint64_t count, const char *first_key,
                       size_t first_len, const char *last_key, size_t last_len,
                       sk_index_shard_info *info)
{
    sk_index *ix;
    sk_sample_ref first, last;
    if (!sk_s3_shard_sound(s3, url, &ix)) return 0;
    int ok = sk_index_sample_count(ix) == count && !sk_index_sample(ix, 0, &first, NULL) &&
             !sk_index_sample(ix, count - 1, &last, NULL) && first.key_len == first_len &&
             !memcmp(first.key, first_key, first_len) && last.key_len == last_len &&
             !memcmp(last.key, last_key, last_len);
    if (ok) *info = *sk_index_shard(ix);
    sk_index_close(ix);
    return ok;
}

int sk_sink_s3_count_exts(sk_s3 *s3, const char *url, sk_manifest *man, sk_error *err)
{
    char iurl[4200];
    sk_index *ix = NULL;
    snprintf(iurl, sizeof iurl, "%s.idx", url);
    int rc = sk_s3_load_index(s3, iurl, &ix, err);
    for (uint64_t i = 0; !rc && i < sk_index_member_count(ix); i++) {
        sk_member_ref m;
        if (!(rc = sk_index_member(ix, i, &m, err))) rc = sk_manifest_count_ext(man, m.ext, m.ext_len, 1, err);
    }
    sk_index_close(ix);
    return rc;
}

int sk_sink_s3_put_manifest(sk_s3 *s3, sk_manifest *man, const char *url, sk_error *err)
{
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    char *bucket = NULL, *key = NULL, tmp[4200];
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    scratch_name(tmp, sizeof tmp, "manifest");
    int rc = sk_manifest_write(man, tmp, err);
    if (!rc) rc = put_file(s3, tmp, bucket, key, err);
    unlink(tmp);
    free(bucket), free(key);
    return rc;
}

int sk_s3_load_manifest(sk_s3 *s3, const char *url, sk_manifest **m, sk_error *err)
{
    char *bucket = NULL, *key = NULL;
    sk_s3_buf text = {0};
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = get_object(s3, bucket, key, &text, err);
    if (!rc) rc = sk_manifest_parse(m, text.p ? text.p : "", text.len, url, err);
    sk_s3_buf_free(&text);
    free(bucket), free(key);
    return rc;
}
