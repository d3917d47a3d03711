/*
 * store_batch.c - many small remote objects at once, for the jobs whose
 * inputs are thousands of objects rather than a few big shards (pack's
 * s3:// and http(s):// inputs).  One blocking request per object would
 * make throughput one round trip at a time; here a request is queued on
 * the client's engine (one curl multi handle, connections reused) and its
 * callback runs when it ends, so a caller keeps as many in flight as it
 * likes and paces them itself.  The location decides the client as
 * sk_store_open does (store_open.c), so the kinds stay behind the store.
 */
#include "io/store.h"
#include "s3/s3_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sk_store_req {
    sk_s3_req r; /* first: the engine's done callback gets &r */
    sk_store_req_fn done;
    void *ud;
    sk_s3 *client;
    char *url, *bucket, *key; /* plain HTTP: "" and the whole URL */
    int head;
};

int sk_store_req_new(sk_store_req **out, sk_store_env *e, const char *url, sk_error *err)
{
    sk_loc_kind k;
    *out = NULL;
    SK_GUARD(sk_store_kind(url, &k, err));
    SK_FAIL_IF(k == SK_LOC_LOCAL, err, SK_E_USAGE, "%s: not a remote location", url);
    /* the client as sk_store_open chooses it; opening checks the URL too */
    sk_store *probe;
    SK_GUARD(sk_store_open(&probe, url, e, err));
    sk_store_close(probe);
    sk_store_req *q = calloc(1, sizeof *q);
    SK_FAIL_IF(!q, err, SK_E_NOMEM, "out of memory");
    int rc = SK_OK;
    if (k == SK_LOC_S3) {
        q->client = e->s3;
        rc = sk_s3_parse_url(url, &q->bucket, &q->key, err);
    } else {
        q->client = e->http ? e->http : e->s3;
        q->bucket = strdup(""), q->key = strdup(url);
        if (!q->bucket || !q->key) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    if (!rc && !(q->url = strdup(url))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) {
        sk_store_req_free(q);
        return rc;
    }
    *out = q;
    return SK_OK;
}

static void req_done(sk_s3_req *r)
{
    sk_store_req *q = (sk_store_req *)r;
    q->done(q, q->ud);
}

static void start(sk_store_req *q, int head, void *dst, size_t cap, sk_store_req_fn done, void *ud)
{
    sk_buf_free(&q->r.resp);
    sk_s3_req_init(&q->r, q->client, head ? "HEAD" : "GET", q->bucket, q->key);
    q->head = head;
    q->r.dst = dst, q->r.dst_cap = cap;
    q->done = done, q->ud = ud;
    q->r.done = req_done;
    sk_s3_submit(&q->r);
}

void sk_store_req_head(sk_store_req *q, sk_store_req_fn done, void *ud)
{
    start(q, 1, NULL, 0, done, ud);
}

void sk_store_req_get(sk_store_req *q, void *dst, size_t cap, sk_store_req_fn done, void *ud)
{
    start(q, 0, dst, cap, done, ud);
}

int sk_store_req_result(const sk_store_req *q, uint64_t *len, sk_error *err)
{
    const sk_s3_req *r = &q->r;
    *len = q->head ? r->content_length : r->dst_len;
    if (r->rc == SK_E_NOTFOUND || (r->rc && r->status == 404))
        return sk_error_set(err, SK_E_NOTFOUND, "%s: no such %s", q->url,
                            q->client->plain ? "file" : "object");
    if (r->rc == SK_E_MISMATCH) /* the body did not fit: more bytes than asked for */
        return sk_error_set(err, SK_E_MISMATCH, "%s: more bytes than expected", q->url);
    if (r->rc) return sk_error_set(err, r->rc, "%s", r->err.msg);
    SK_FAIL_IF(q->head && !r->has_length, err, SK_E_REMOTE,
               "%s: the server gives no size for it (no Content-Length)", q->url);
    return SK_OK;
}

int sk_store_req_rc(const sk_store_req *q)
{
    return q->r.rc;
}

void sk_store_req_free(sk_store_req *q)
{
    if (!q) return;
    sk_buf_free(&q->r.resp);
    free(q->url), free(q->bucket), free(q->key);
    free(q);
}

uint64_t sk_store_env_retries(sk_store_env *e)
{
    uint64_t a = 0, b = 0;
    if (e->s3) sk_s3_stats(e->s3, NULL, &a);
    if (e->http) sk_s3_stats(e->http, NULL, &b);
    return a + b;
}
