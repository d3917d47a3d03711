/*
 * outq.c - appends to an sk_shard_out on a second thread (see outq.h).
 * A small ring of ranges under one mutex: the producer hands over a range
 * per megabyte or more, so the handoffs cost nothing next to the copies.
 */
#include "core/internal.h"
#include "io/outq.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/uio.h>

#define SLOTS 16

struct range {
    const void *p;
    size_t len;
    uint32_t crc;
};

struct sk_outq {
    sk_shard_out *out;
    int threaded, started, stop, rc;
    sk_error err;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct range ring[SLOTS];
    uint64_t head, tail; /* next to write, next to fill (sequence numbers from 1 = tail + 1) */
};

static int write_range(sk_outq *q, const struct range *r, sk_error *err)
{
    struct iovec iov = {(void *)r->p, r->len};
    return sk_shard_out_writev(q->out, &iov, 1, r->len, r->crc, err);
}

static void *writer(void *arg)
{
    sk_outq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && q->head == q->tail) pthread_cond_wait(&q->cv, &q->mu);
        if (q->stop) break;
        struct range r = q->ring[q->head % SLOTS];
        int failed = q->rc;
        pthread_mutex_unlock(&q->mu);
        sk_error e = SK_ERROR_INIT;
        int rc = failed ? SK_OK : write_range(q, &r, &e); /* after a failure: drain only */
        pthread_mutex_lock(&q->mu);
        if (rc && !q->rc) q->rc = rc, q->err = e;
        q->head++;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int sk_outq_new(sk_outq **out, sk_shard_out *o, int threaded, sk_error *err)
{
    sk_outq *q = calloc(1, sizeof *q);
    SK_FAIL_IF(!q, err, SK_E_NOMEM, "out of memory");
    q->out = o;
    q->threaded = threaded;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    if (threaded) {
        int e = pthread_create(&q->th, NULL, writer, q);
        if (e) {
            sk_outq_free(q);
            return sk_error_set(err, SK_E_NOMEM, "cannot start the writer thread: %s", strerror(e));
        }
        q->started = 1;
    }
    *out = q;
    return SK_OK;
}

static int failed(sk_outq *q, sk_error *err)
{
    *err = q->err;
    return q->rc;
}

int sk_outq_put(sk_outq *q, const void *p, size_t len, uint32_t crc, uint64_t *seq, sk_error *err)
{
    struct range r = {p, len, crc};
    if (!q->threaded) {
        SK_GUARD(write_range(q, &r, err));
        q->head = ++q->tail;
        if (seq) *seq = q->tail;
        return SK_OK;
    }
    pthread_mutex_lock(&q->mu);
    while (!q->rc && q->tail - q->head == SLOTS) pthread_cond_wait(&q->cv, &q->mu);
    int rc = q->rc;
    if (rc) {
        rc = failed(q, err);
    } else {
        q->ring[q->tail % SLOTS] = r;
        q->tail++;
        if (seq) *seq = q->tail;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

int sk_outq_wait(sk_outq *q, uint64_t seq, sk_error *err)
{
    if (!q->threaded) return SK_OK;
    pthread_mutex_lock(&q->mu);
    if (!seq) seq = q->tail;
    while (q->head < seq) pthread_cond_wait(&q->cv, &q->mu);
    int rc = q->rc ? failed(q, err) : SK_OK;
    pthread_mutex_unlock(&q->mu);
    return rc;
}

void sk_outq_free(sk_outq *q)
{
    if (!q) return;
    if (q->started) {
        pthread_mutex_lock(&q->mu);
        q->stop = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
        pthread_join(q->th, NULL);
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    free(q);
}
