/*
 * s3_stream.c - the streaming GET (sk_s3_stream): one request per range,
 * its body handed to the reading thread through a small ring (the window).
 *
 * The engine thread must never wait for a reader: it drives every transfer
 * of the client, so a write callback blocked on a full buffer would stall
 * them all (and with the reader's prefetch, the current shard would wait
 * behind a prefetch that waits for the reader: a deadlock).  So when the
 * window is full the push callback says "pause", the engine pauses the
 * transfer, and the reader asks the engine (sk_s3_req_resume: a flag and a
 * curl_multi_wakeup) to continue once it has made room.
 */
#include "s3/s3_internal.h"

#include <stdlib.h>
#include <string.h>

/* Bytes a waiting reader's buffer collects before it is woken (or all it
 * asked for, or the end of the transfer). */
#define STREAM_WAKE_MIN (256u << 10)

struct sk_s3_stream {
    sk_s3_req r;
    char *bucket, *key;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    unsigned char *buf; /* the window: len bytes from rd, wrapping at cap */
    size_t cap, rd, len;
    /* The buffer of a reader waiting on an empty window: the engine writes
     * there directly, so a reader that keeps up pays no extra copy. */
    unsigned char *dst;
    size_t dst_cap, dst_len;
    int paused; /* push refused bytes; no resume asked for since */
    int done;   /* the request's done callback ran */
};

/* Engine thread: takes all n bytes or none. */
static int stream_push(void *ud, const void *p, size_t n)
{
    sk_s3_stream *st = ud;
    pthread_mutex_lock(&st->mu);
    size_t direct = st->dst ? st->dst_cap - st->dst_len : 0;
    if (direct + st->cap - st->len < n) {
        st->paused = 1;
        pthread_mutex_unlock(&st->mu);
        return SK_S3_PUSH_PAUSE;
    }
    if (direct) { /* the window is empty while a reader waits: order holds */
        if (direct > n) direct = n;
        memcpy(st->dst + st->dst_len, p, direct);
        st->dst_len += direct;
        p = (const unsigned char *)p + direct;
        n -= direct;
        /* Wake the reader for a good handful of bytes, not for every piece
         * the socket yields: each wakeup is two context switches, and at
         * these rates they, not the copies, were the reader's CPU. */
        if (st->dst_len >= STREAM_WAKE_MIN || st->dst_len == st->dst_cap)
            pthread_cond_broadcast(&st->cv);
    }
    size_t wr = (st->rd + st->len) % st->cap, k = st->cap - wr < n ? st->cap - wr : n;
    memcpy(st->buf + wr, p, k);
    memcpy(st->buf, (const unsigned char *)p + k, n - k);
    st->len += n; /* a reader only waits with dst set, woken above */
    pthread_mutex_unlock(&st->mu);
    return 0;
}

/* Engine thread, once per stream.  The broadcast is made under the lock:
 * sk_s3_stream_close may free st as soon as it sees done. */
static void stream_done(sk_s3_req *r)
{
    sk_s3_stream *st = r->push_ud;
    pthread_mutex_lock(&st->mu);
    st->done = 1;
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
}

int sk_s3_stream_open(sk_s3_stream **out, sk_s3 *s3, const char *bucket, const char *key,
                      uint64_t offset, uint64_t len, sk_error *err)
{
    *out = NULL;
    sk_s3_stream *st = calloc(1, sizeof *st);
    SK_FAIL_IF(!st, err, SK_E_NOMEM, "out of memory");
    st->cap = SK_S3_STREAM_WINDOW;
    st->buf = malloc(st->cap);
    st->bucket = strdup(bucket);
    st->key = strdup(key);
    if (!st->buf || !st->bucket || !st->key) {
        free(st->buf), free(st->bucket), free(st->key), free(st);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    sk_s3_req_init(&st->r, s3, "GET", st->bucket, st->key);
    st->r.push = stream_push, st->r.push_ud = st;
    st->r.range_off = offset, st->r.range_len = len;
    st->r.done = stream_done;
    sk_s3_submit(&st->r);
    *out = st;
    return SK_OK;
}

int sk_s3_stream_read(sk_s3_stream *st, void *buf, size_t n, size_t *got, sk_error *err)
{
    size_t k;
    *got = 0;
    if (!n) return SK_OK;
    pthread_mutex_lock(&st->mu);
    if (!st->len && !st->done) {
        st->dst = buf, st->dst_cap = n, st->dst_len = 0;
        while (!st->dst_len && !st->done) pthread_cond_wait(&st->cv, &st->mu);
        k = st->dst_len;
        st->dst = NULL;
        if (k) {
            pthread_mutex_unlock(&st->mu);
            *got = k;
            return SK_OK;
        }
    }
    if (!st->len) { /* done, everything read */
        int rc = st->r.rc;
        if (rc && err) *err = st->r.err;
        pthread_mutex_unlock(&st->mu);
        return rc;
    }
    k = n < st->len ? n : st->len;
    size_t a = st->cap - st->rd < k ? st->cap - st->rd : k;
    memcpy(buf, st->buf + st->rd, a);
    memcpy((unsigned char *)buf + a, st->buf, k - a);
    st->rd = (st->rd + k) % st->cap;
    st->len -= k;
    /* Resume at half a window free, not at the first free byte: a pause and
     * resume costs an engine wakeup, so each should move a lot of bytes. */
    int resume = st->paused && !st->done && st->cap - st->len >= st->cap / 2;
    if (resume) st->paused = 0;
    pthread_mutex_unlock(&st->mu);
    if (resume) sk_s3_req_resume(&st->r);
    *got = k;
    return SK_OK;
}

void sk_s3_stream_close(sk_s3_stream *st)
{
    if (!st) return;
    pthread_mutex_lock(&st->mu);
    if (!st->done) {
        pthread_mutex_unlock(&st->mu);
        sk_s3_req_cancel(&st->r);
        pthread_mutex_lock(&st->mu);
        while (!st->done) pthread_cond_wait(&st->cv, &st->mu);
    }
    pthread_mutex_unlock(&st->mu);
    sk_buf_free(&st->r.resp);
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st->buf), free(st->bucket), free(st->key), free(st);
}
