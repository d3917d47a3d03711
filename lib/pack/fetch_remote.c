/*
 * fetch_remote.c - gets the bytes of remote items (S3 objects, files on web servers) to
 * pack's readers, through the store (io/store.h).  Small objects are an
 * HTTP round trip each, so throughput comes only from having many GETs in
 * flight: a fetcher thread walks the items in plan order and keeps up to
 * `concurrency` GETs queued on the store's engine (sk_store_req: one curl
 * multi handle, connections reused), each into a buffer of the object's
 * listed size + 1 (so a grown object is caught without another request).
 *
 * Memory is bounded by a window over the plan: at most WINDOW_SLOTS(c)
 * objects and WINDOW_BYTES bytes are in flight or fetched-but-not-read.
 * The window only advances past an object once a reader has taken it, and
 * readers consume in plan order give or take the ring of pack.c, so the
 * object the oldest unfinished sample needs is always inside the window
 * (no deadlock).  Objects over INLINE_MAX are not prefetched: pack streams
 * such samples itself, piece by piece, and each piece is a ranged GET
 * (the store's read_at).
 *
 * Throttling: the engine retries a 503 SlowDown (or reset, or 500) with
 * its own backoff, but that alone would keep 64 requests hammering a
 * server that asked us to slow down.  So any retry seen by the client
 * halves the fetcher's own limit and pauses new requests for a growing
 * delay (AIMD, like TCP); successes raise the limit again by one per
 * window's worth of objects.
 */
#include "pack/catalog.h"
#include "format/tar.h"

#include <stdlib.h>
#include <time.h>

#define INLINE_MAX (4u << 20)
#define WINDOW_BYTES (256ull << 20)
#define URL_MAX 2100 /* a scheme, a 63-byte bucket and a 1024-byte key, or a URL the store takes */

/* A GET that still fails at the transport level after the engine's own
 * retries (or with an error the engine does not retry, such as a garbled
 * answer from a broken proxy) is sent again by the fetcher this many times,
 * after the whole fetcher has backed off. */
#define FETCH_RETRIES 4

enum { E_EMPTY, E_INFLIGHT, E_READY, E_DONE, E_RETRY };

struct entry {
    sk_store_req *q; /* the item's GET (NULL: it could not start; rc says why) */
    int rc;          /* set when it could not start */
    sk_error err;
    struct sk_fetch *f;
    uint32_t item;
    int state;
    unsigned char *buf;
    uint64_t size, taken;
    int tries;
};

struct sk_fetch {
    sk_catalog *c;
    uint32_t *list; /* items to prefetch, in plan order */
    size_t n;
    size_t head, tail; /* window: list positions [tail, head) */
    struct entry *ring;
    size_t cap;
    uint64_t bytes;
    int inflight, max;
    double limit;      /* current GETs-in-flight limit, 1..max */
    uint64_t oks;      /* successes since the limit last moved */
    uint64_t pause_until, seen_retries;
    int level;         /* backoff exponent */
    int pushback;      /* a GET failed in transit: back off as for a retry */
    uint64_t throttles; /* times the whole fetcher backed off */
    pthread_t thread;
    int started, stop, cancel;
    pthread_mutex_t mu;
    pthread_cond_t wake;   /* the fetcher thread */
    pthread_cond_t ready;  /* readers */
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int is_prefetched(const sk_catalog *c, const sk_item *it)
{
    return c->srcs[it->src].remote && it->size <= INLINE_MAX;
}

static void get_done(sk_store_req *q, void *ud)
{
    struct entry *e = ud;
    struct sk_fetch *f = e->f;
    int rc = sk_store_req_rc(q);
    pthread_mutex_lock(&f->mu);
    f->inflight--;
    if (rc == SK_E_NET && e->tries < FETCH_RETRIES && !f->cancel) {
        e->tries++;
        e->state = E_RETRY;
        f->pushback = 1;
        pthread_cond_signal(&f->wake);
        pthread_cond_broadcast(&f->ready); /* sk_fetch_free may wait on inflight */
        pthread_mutex_unlock(&f->mu);
        return;
    }
    e->state = E_READY;
    if (!rc && ++f->oks >= (uint64_t)f->limit) {
        if (f->limit < f->max) f->limit += 1;
        f->oks = 0;
        if (f->level) f->level--;
    }
    pthread_cond_broadcast(&f->ready);
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->mu);
}

/* Under f->mu: the next object into the window, if the limits allow. */
static int start_next(struct sk_fetch *f)
{
    if (f->head >= f->n || f->head - f->tail >= f->cap || f->inflight >= (int)f->limit)
        return 0;
    const sk_catalog *c = f->c;
    const sk_item *it = &c->items[f->list[f->head]];
    if (f->head > f->tail && f->bytes + it->size + 1 > WINDOW_BYTES) return 0;
    struct entry *e = &f->ring[f->head % f->cap];
    const sk_source *src = &c->srcs[it->src];
    sk_store_req_free(e->q);
    e->q = NULL;
    e->rc = 0;
    e->f = f;
    e->item = f->list[f->head];
    e->size = it->size;
    e->taken = 0;
    e->tries = 0;
    e->buf = malloc(it->size + 1);
    e->state = E_INFLIGHT;
    f->head++;
    f->bytes += it->size + 1;
    char url[URL_MAX];
    if (!e->buf)
        e->rc = sk_error_set(&e->err, SK_E_NOMEM, "out of memory");
    else if (sk_item_url(c, it, url, sizeof url) >= sizeof url)
        e->rc = sk_error_set(&e->err, SK_E_INPUT, "%s...: name too long for a URL", src->label);
    else
        e->rc = sk_store_req_new(&e->q, &f->c->env, url, &e->err);
    if (e->rc) {
        e->state = E_READY;
        pthread_cond_broadcast(&f->ready);
        return 1;
    }
    f->inflight++;
    sk_store_req_get(e->q, e->buf, it->size + 1, get_done, e);
    return 1;
}

static void *fetcher_main(void *arg)
{
    struct sk_fetch *f = arg;
    pthread_mutex_lock(&f->mu);
    while (!f->stop) {
        uint64_t now = now_ms(), retries = sk_store_env_retries(&f->c->env);
        /* one reaction per pause: the retries of requests already in
         * flight when the server pushed back are the same event */
        int pushed = retries > f->seen_retries || f->pushback;
        f->seen_retries = retries;
        f->pushback = 0;
        if (pushed && now >= f->pause_until) {
            /* the server pushed back: everyone slows down, not one request */
            f->limit = f->limit / 2 < 1 ? 1 : f->limit / 2;
            f->oks = 0;
            uint64_t delay = 25ull << f->level;
            if (f->level < 5) f->level++;
            f->pause_until = now + delay;
            f->throttles++;
        }
        if (now >= f->pause_until) {
            for (size_t q = f->tail; q < f->head && !f->cancel; q++) {
                struct entry *e = &f->ring[q % f->cap];
                if (e->state != E_RETRY || f->inflight >= (int)f->limit) continue;
                e->state = E_INFLIGHT;
                f->inflight++;
                sk_store_req_get(e->q, e->buf, e->size + 1, get_done, e);
            }
            while (!f->cancel && start_next(f)) {}
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t wait_ms = f->pause_until > now ? f->pause_until - now : 100;
        if (wait_ms > 100) wait_ms = 100;
        ts.tv_nsec += (long)(wait_ms * 1000000);
        while (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&f->wake, &f->mu, &ts);
    }
    pthread_mutex_unlock(&f->mu);
    return NULL;
}

int sk_fetch_start(sk_catalog *c, const uint32_t *order, const uint64_t *pending, uint64_t npending,
                   sk_error *err)
{
    int any = 0;
    for (size_t i = 0; i < c->nsrcs; i++) any |= c->srcs[i].remote;
    if (!any || !c->env_ready) return SK_OK;
    struct sk_fetch *f = calloc(1, sizeof *f);
    SK_FAIL_IF(!f, err, SK_E_NOMEM, "out of memory");
    f->c = c;
    f->max = c->s3_concurrency > 0 ? c->s3_concurrency : 64;
    f->limit = f->max;
    f->cap = (size_t)f->max * 2 + 16;
    f->seen_retries = sk_store_env_retries(&c->env);
    size_t cap = 1024;
    f->list = malloc(cap * sizeof *f->list);
    f->ring = calloc(f->cap, sizeof *f->ring);
    pthread_mutex_init(&f->mu, NULL);
    pthread_cond_init(&f->wake, NULL);
    pthread_cond_init(&f->ready, NULL);
    c->fetch = f;
    SK_FAIL_IF(!f->list || !f->ring, err, SK_E_NOMEM, "out of memory");
    for (uint64_t q = 0; q < npending; q++) {
        uint32_t s = order[pending[q]];
        size_t first = c->samples[s], k = sk_sample_members(c, s);
        for (size_t m = 0; m < k; m++) {
            if (!is_prefetched(c, &c->items[first + m])) continue;
            if (f->n == cap) {
                uint32_t *l = realloc(f->list, (cap *= 2) * sizeof *l);
                SK_FAIL_IF(!l, err, SK_E_NOMEM, "out of memory");
                f->list = l;
            }
            f->list[f->n++] = (uint32_t)(first + m);
        }
    }
    SK_FAIL_IF(pthread_create(&f->thread, NULL, fetcher_main, f), err, SK_E_NOMEM,
               "cannot start the fetcher thread");
    f->started = 1;
    return SK_OK;
}

/* A ranged GET of [at, at + want (+1 to probe for growth)): the store's
 * read_at, told the listed size and one byte more so that it asks for the
 * probe byte without a HEAD of its own. */
static int read_range(const sk_catalog *c, const sk_item *it, uint64_t at, unsigned char *dst,
                      uint64_t want, int probe, sk_error *err)
{
    const sk_source *src = &c->srcs[it->src];
    char url[URL_MAX];
    SK_FAIL_IF(sk_item_url(c, it, url, sizeof url) >= sizeof url, err, SK_E_INPUT,
               "%s...: name too long for a URL", src->label);
    uint64_t ask = want + (probe ? 1 : 0);
    size_t got = 0;
    if (!ask) return SK_OK;
    sk_store *s;
    SK_GUARD(sk_store_open(&s, url, (sk_store_env *)&c->env, err));
    s->size_hint = it->size + 1;
    sk_error e = SK_ERROR_INIT;
    int rc = s->ops->read_at(s, at, dst, (size_t)ask, &got, &e);
    sk_store_close(s);
    if (rc == SK_E_NOTFOUND)
        return sk_error_set(err, SK_E_NOTFOUND, "%s: object vanished since it was listed", url);
    if (rc && strstr(e.msg, "InvalidRange")) got = 0, rc = SK_OK; /* shrank below at */
    if (rc) return sk_error_set(err, rc, "%s", e.msg);
    SK_FAIL_IF(got != want, err, SK_E_INPUT, "%s: object %s while being packed (listed as %llu bytes)",
               url, got < want ? "shrank" : "grew", (unsigned long long)it->size);
    return SK_OK;
}

/* Under f->mu: forgets entry e once read in full; the window moves on. */
static void retire(struct sk_fetch *f, struct entry *e)
{
    e->state = E_DONE;
    free(e->buf);
    e->buf = NULL;
    f->bytes -= e->size + 1;
    while (f->tail < f->head && f->ring[f->tail % f->cap].state == E_DONE) {
        f->ring[f->tail % f->cap].state = E_EMPTY;
        f->tail++;
    }
    pthread_cond_signal(&f->wake);
}

int sk_fetch_read(const sk_catalog *c, const sk_item *it, const char *name, uint64_t at,
                  unsigned char *dst, uint64_t want, int probe, sk_error *err)
{
    struct sk_fetch *f = c->fetch;
    /* a keyed item's member name is not its object's: messages name the object */
    char shown[URL_MAX];
    const char *label = c->srcs[it->src].label;
    if (c->srcs[it->src].keyed) {
        if (sk_item_url(c, it, shown, sizeof shown) >= sizeof shown) shown[0] = 0;
        name = shown, label = "";
    }
    SK_FAIL_IF(!c->env_ready, err, SK_E_USAGE, "%s%s: no client for it", label, name);
    if (!f || !is_prefetched(c, it)) return read_range(c, it, at, dst, want, probe, err);
    uint32_t idx = (uint32_t)(it - c->items);
    pthread_mutex_lock(&f->mu);
    struct entry *e = NULL;
    for (;;) {
        if (f->cancel) {
            pthread_mutex_unlock(&f->mu);
            return sk_error_set(err, SK_E_IO, "%s%s: fetch cancelled", label, name);
        }
        for (size_t p = f->tail; p < f->head && !e; p++)
            if (f->ring[p % f->cap].item == idx && f->ring[p % f->cap].state != E_DONE)
                e = &f->ring[p % f->cap];
        if (e && e->state == E_READY) break;
        pthread_cond_wait(&f->ready, &f->mu);
        e = NULL;
    }
    uint64_t got = 0;
    sk_error re = SK_ERROR_INIT;
    int rc = e->rc ? (re = e->err, e->rc) : sk_store_req_result(e->q, &got, &re);
    if (rc == SK_E_NOTFOUND) {
        rc = sk_error_set(err, SK_E_NOTFOUND, "%s%s: object vanished since it was listed",
                          label, name);
    } else if (rc == SK_E_MISMATCH) { /* more bytes than listed + 1 */
        rc = sk_error_set(err, SK_E_INPUT, "%s%s: object grew while being packed (listed as "
                          "%llu bytes)", label, name, (unsigned long long)e->size);
    } else if (rc) {
        rc = sk_error_set(err, rc, "%s", re.msg);
    } else if (got != e->size) {
        rc = sk_error_set(err, SK_E_INPUT, "%s%s: object %s while being packed (listed as %llu "
                          "bytes)", label, name, got < e->size ? "shrank" : "grew",
                          (unsigned long long)e->size);
    } else if (at != e->taken || at + want > e->size) {
        rc = sk_error_set(err, SK_E_IO, "%s%s: read out of order", label, name);
    }
    if (rc) {
        retire(f, e);
        pthread_mutex_unlock(&f->mu);
        return rc;
    }
    /* The copy happens under the lock but is a memcpy of a small object;
     * the buffer cannot be retired meanwhile since only its reader does. */
    memcpy(dst, e->buf + at, want);
    e->taken += want;
    if (e->taken == e->size) retire(f, e);
    pthread_mutex_unlock(&f->mu);
    (void)probe;
    return SK_OK;
}

void sk_fetch_cancel(sk_catalog *c)
{
    struct sk_fetch *f = c->fetch;
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->cancel = 1;
    pthread_cond_broadcast(&f->ready);
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->mu);
}

void sk_fetch_free(sk_catalog *c)
{
    struct sk_fetch *f = c->fetch;
    if (!f) return;
    pthread_mutex_lock(&f->mu);
    f->stop = f->cancel = 1;
    pthread_cond_signal(&f->wake);
    pthread_mutex_unlock(&f->mu);
    if (f->started) pthread_join(f->thread, NULL);
    /* requests still in the engine write into the ring: wait them out */
    pthread_mutex_lock(&f->mu);
    while (f->inflight) pthread_cond_wait(&f->ready, &f->mu);
    pthread_mutex_unlock(&f->mu);
    if (f->ring)
        for (size_t i = 0; i < f->cap; i++) {
            free(f->ring[i].buf);
            sk_store_req_free(f->ring[i].q);
        }
    if (getenv("SK_DEBUG_FETCH"))
        fprintf(stderr, "fetch: %zu objects, limit %.0f/%d, backed off %llu times\n", f->n,
                f->limit, f->max, (unsigned long long)f->throttles);
    free(f->ring);
    free(f->list);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->wake);
    pthread_cond_destroy(&f->ready);
    free(f);
    c->fetch = NULL;
}
