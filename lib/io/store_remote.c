/*
 * store_remote.c - one object behind the S3 engine as a store, shared by
 * the s3:// kind (store_s3.c) and the http(s):// kind (store_http.c), which
 * differ only in the client and in how a location names the object.
 *
 * stat is one HEAD (size, ETag), asked once.  read_at is one ranged GET of
 * exactly the bytes asked for (clamped to the size: a range past the end
 * is S3's error).  open_seq is one streaming GET from the offset to the
 * size HEAD gave: bytes appended since are not this object's, the engine
 * resumes a broken transfer from the byte it reached (If-Match on the
 * first ETag, so a replaced object fails instead of being spliced), and a
 * body that ends early is an error, not a short shard.
 */
#include "io/store_remote.h"

#include <stdio.h>
#include <stdlib.h>

struct remote_seq {
    sk_store_seq q;
    struct sk_remote *r;
    sk_s3_stream *get; /* opened at the first read */
    uint64_t pos;
    int ended; /* the end was confirmed */
};

static int remote_head(struct sk_remote *r, sk_error *err)
{
    if (r->have_head) return SK_OK;
    sk_s3_req q;
    sk_s3_req_init(&q, r->client, "HEAD", r->bucket, r->key);
    if (!r->client->plain) sk_s3_req_header(&q, "x-amz-checksum-mode:ENABLED"); /* its CRC32C too */
    int rc = sk_s3_run(&q);
    if (rc && q.status == 404)
        rc = sk_error_set(err, SK_E_NOTFOUND, "%s: no such %s (HTTP 404)", r->s.url,
                          r->client->plain ? "file" : "object");
    else if (rc && err)
        *err = q.err;
    else if (!rc && !q.has_length)
        rc = sk_error_set(err, SK_E_REMOTE, "%s: the server gives no size for it (no Content-Length)",
                          r->s.url);
    if (!rc) {
        r->size = q.content_length;
        snprintf(r->etag, sizeof r->etag, "%s", q.etag);
        snprintf(r->crc32c, sizeof r->crc32c, "%s", q.crc32c);
        r->have_head = 1;
    }
    sk_buf_free(&q.resp);
    return rc;
}

static int remote_stat(sk_store *s, sk_store_stat *out, sk_error *err)
{
    struct sk_remote *r = (struct sk_remote *)s;
    SK_GUARD(remote_head(r, err));
    memset(out, 0, sizeof *out);
    out->size = r->size;
    snprintf(out->etag, sizeof out->etag, "%s", r->etag);
    snprintf(out->crc32c, sizeof out->crc32c, "%s", r->crc32c);
    return SK_OK;
}

/* The size without a request when the caller already knows it. */
static int remote_size(struct sk_remote *r, uint64_t *size, sk_error *err)
{
    if (!r->have_head && r->s.size_hint != UINT64_MAX) return *size = r->s.size_hint, SK_OK;
    SK_GUARD(remote_head(r, err));
    *size = r->size;
    return SK_OK;
}

static int remote_read_at(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct sk_remote *r = (struct sk_remote *)s;
    uint64_t size;
    *got = 0;
    SK_GUARD(remote_size(r, &size, err));
    if (off >= size || !n) return SK_OK;
    if (n > size - off) n = (size_t)(size - off);
    return sk_s3_get(r->client, r->bucket, r->key, off, n, buf, n, got, err);
}

static int seq_read(sk_store_seq *q, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct remote_seq *sq = (struct remote_seq *)q;
    struct sk_remote *r = sq->r;
    *got = 0;
    if (sq->pos >= r->size) return SK_OK;
    uint64_t left = r->size - sq->pos;
    size_t want = left < n ? (size_t)left : n;
    if (!sq->get) SK_GUARD(sk_s3_stream_open(&sq->get, r->client, r->bucket, r->key, sq->pos, left, err));
    SK_GUARD(sk_s3_stream_read(sq->get, buf, want, got, err));
    SK_FAIL_IF(*got == 0, err, SK_E_REMOTE, "%s: the body ended at offset %llu, before its size %llu",
               r->s.url, (unsigned long long)sq->pos, (unsigned long long)r->size);
    sq->pos += *got;
    /* A web server's body must end where its size said: one that goes on
     * (an endless body) fails the read that brings the last bytes, which
     * a tar reader needs (its end blocks), so the error is seen. */
    if (sq->pos >= r->size && r->client->plain && !sq->ended) {
        unsigned char extra;
        size_t more = 0;
        sq->ended = 1;
        int rc = sk_s3_stream_read(sq->get, &extra, 1, &more, err);
        if (!rc && more)
            rc = sk_error_set(err, SK_E_REMOTE, "%s: the server sent more than its %llu bytes",
                              r->s.url, (unsigned long long)r->size);
        if (rc) *got = 0; /* not handed out: the error is what the reader sees */
        return rc;
    }
    return SK_OK;
}

static void seq_close(sk_store_seq *q)
{
    struct remote_seq *sq = (struct remote_seq *)q;
    sk_s3_stream_close(sq->get);
    free(sq);
}

static int remote_open_seq(sk_store *s, uint64_t off, sk_store_seq **out, sk_error *err)
{
    struct sk_remote *r = (struct sk_remote *)s;
    *out = NULL;
    SK_GUARD(remote_head(r, err)); /* the size to stop at, and the version read */
    struct remote_seq *q = calloc(1, sizeof *q);
    SK_FAIL_IF(!q, err, SK_E_NOMEM, "out of memory");
    *q = (struct remote_seq){{seq_read, seq_close}, r, NULL, off, 0};
    *out = &q->q;
    return SK_OK;
}

static void remote_close(sk_store *s)
{
    struct sk_remote *r = (struct sk_remote *)s;
    free(r->bucket), free(r->key), free(s->url);
    free(r);
}

/* An object read whole stops at a cap: a server that sends an endless
 * body (or a huge object under a manifest's name) gets an error, not all
 * of our memory. */
struct capped {
    sk_buf *buf;
    size_t max;
    int over;
};

static int capped_add(void *ud, const void *data, size_t len)
{
    struct capped *c = ud;
    if (c->buf->len + len > c->max) return c->over = 1; /* stops the transfer */
    return sk_buf_add(c->buf, data, len) ? 1 : 0;
}

static int remote_load(sk_store *s, size_t max, const char *what, sk_buf *out, sk_error *err)
{
    struct sk_remote *r = (struct sk_remote *)s;
    struct capped c = {out, max, 0};
    out->len = 0;
    int rc = sk_s3_get_cb(r->client, r->bucket, r->key, 0, 0, capped_add, &c, err);
    if (c.over)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: a %s is at most %zu MiB; this one is bigger "
                          "(or its body does not end)", s->url, what, max >> 20);
    if (!rc && !out->p && sk_buf_add(out, "", 0)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    return rc;
}

static const struct sk_store_ops remote_ops = {remote_stat, remote_read_at, remote_open_seq,
                                               remote_close, remote_load};

int sk_remote_new(sk_store **out, const char *url, sk_s3 *client, char *bucket, char *key,
                  sk_error *err)
{
    struct sk_remote *r = calloc(1, sizeof *r);
    if (!r || !(r->s.url = strdup(url))) {
        free(r), free(bucket), free(key);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    r->s.ops = &remote_ops;
    r->s.size_hint = UINT64_MAX;
    r->s.cache_state = -1;
    r->client = client, r->bucket = bucket, r->key = key;
    *out = &r->s;
    return SK_OK;
}
