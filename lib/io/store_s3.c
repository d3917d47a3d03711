/*
 * store_s3.c - a dataset's own objects read back from S3: index objects
 * (loaded whole and adopted by the index), manifests, and the check that
 * lets --resume keep a shard object (its index object agrees with it);
 * and the s3:// store kind (an object read by HEAD, ranged and streaming
 * GETs: store_remote.c).
 */
#include "io/io.h"
#include "io/store_remote.h"

#include <stdlib.h>
#include <string.h>

/* An object read whole into memory stops at a cap: a server that sends an
 * endless body (or a huge object under a manifest's name) gets an error,
 * not all of our memory.  The caps are documented in docs/s3.md. */
struct capped {
    sk_buf *buf;
    size_t max;
    int over;
};

static int buf_sink(void *ud, const void *data, size_t len)
{
    struct capped *c = ud;
    if (c->buf->len + len > c->max) {
        c->over = 1;
        return 1; /* stops the transfer */
    }
    return sk_buf_add(c->buf, data, len) ? 1 : 0;
}

static int get_object(sk_s3 *s3, const char *bucket, const char *key, sk_buf *out, size_t max,
                      const char *what, sk_error *err)
{
    struct capped c = {out, max, 0};
    out->len = 0;
    int rc = sk_s3_get_cb(s3, bucket, key, 0, 0, buf_sink, &c, err);
    if (c.over)
        rc = sk_error_set(err, SK_E_CORRUPT, "s3://%s/%s: a %s is at most %zu MiB; this one is "
                          "bigger (or its body does not end)", bucket, key, what, max >> 20);
    return rc;
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
    sk_buf blob = {0};
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = get_object(s3, bucket, key, &blob, SK_S3_INDEX_MAX, "shard index", err);
    if (!rc && !blob.p && !(blob.p = malloc(1))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) { /* the index keeps the bytes */
        rc = sk_index_adopt(out, blob.p, blob.len, url, err);
        blob.p = NULL;
    }
    sk_buf_free(&blob);
    free(bucket), free(key);
    return rc;
}

int sk_s3_index_tagged(sk_s3 *s3, const char *url, sk_index **out)
{
    char *bucket = NULL, *key = NULL, *ikey = NULL, tag[80] = "";
    sk_s3_object head, ihead;
    sk_index *ix = NULL;
    int ok = 0;
    *out = NULL;
    if (!s3 || sk_s3_parse_url(url, &bucket, &key, NULL) || asprintf(&ikey, "%s.idx", key) < 0) {
        ikey = NULL;
        goto out;
    }
    if (sk_s3_head(s3, bucket, key, &head, NULL) ||
        sk_s3_head_meta(s3, bucket, ikey, &ihead, tag, sizeof tag, NULL) || !tag[0] ||
        strcmp(tag, head.etag))
        goto out;
    char iurl[4200];
    snprintf(iurl, sizeof iurl, "%s.idx", url);
    if (sk_s3_load_index(s3, iurl, &ix, NULL)) goto out;
    ok = sk_index_shard(ix)->size == head.size && sk_index_sample_count(ix) > 0;
out:
    if (ok) *out = ix;
    else sk_index_close(ix);
    free(bucket), free(key), free(ikey);
    return ok;
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

int sk_s3_load_manifest(sk_s3 *s3, const char *url, sk_manifest **m, sk_error *err)
{
    char *bucket = NULL, *key = NULL;
    sk_buf text = {0};
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: no S3 client", url);
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = get_object(s3, bucket, key, &text, SK_S3_MANIFEST_MAX, "manifest", err);
    if (!rc) rc = sk_manifest_parse(m, text.p ? text.p : "", text.len, url, err);
    sk_buf_free(&text);
    free(bucket), free(key);
    return rc;
}

int sk_store_index_kept(sk_store_env *e, const char *url, sk_index **ix)
{
    *ix = NULL;
    if (!e || !e->s3 || !sk_is_s3_url(url)) return 0;
    /* the ETag the index object was built from, else size and CRC32C */
    return sk_s3_index_tagged(e->s3, url, ix) || sk_s3_shard_sound(e->s3, url, ix);
}

/* ------------------------------------------------------ the store kind */

int sk_store_s3_open(sk_store **out, const char *url, sk_s3 *s3, sk_error *err)
{
    char *bucket = NULL, *key = NULL;
    *out = NULL;
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client", url);
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    return sk_remote_new(out, url, s3, bucket, key, err);
}
