/*
 * store_window.c - neighbouring bytes of remote objects kept in memory: a
 * store that wraps a remote one (s3://, http(s)://, or the disk cache over
 * one) and serves small reads at an offset from windows of its bytes.
 *
 * Why: a member of a shard is a few KiB, and a ranged GET costs the same
 * few milliseconds whether it brings 5 KiB or 256 KiB.  Files read in
 * order through a mount (the same sample's other members, the next sample)
 * lie next to each other in the shard, so a read smaller than a window
 * fetches the aligned window(s) holding it, one GET, and the reads after
 * it are served from memory without another request.
 *
 * Bounded: the windows of every store opened through one env (a job, a
 * dataset, a mount) share one pool of at most `memory` bytes (window-sized
 * slots, least recently used out first), whatever the number of shards
 * open.  A read of a window's size or more goes to the inner store as is.
 * A store whose windows serve nothing beyond the read that fetched them
 * (random access: a shuffled loader) stops fetching whole windows after
 * a few, and fetches one again every RETRY misses to see whether that
 * changed, so random readers do not pay for bytes they never read.
 *
 * Threads: any number of reads at once (FUSE workers).  The pool's mutex
 * guards the slots; a slot being fetched is marked, its GET runs without
 * the lock, and a reader of the same window waits for it (one GET, not
 * one per thread).  A failed fetch frees its slot; the waiters fetch
 * again themselves, so each returns its own error naming the URL.
 *
 * Every window holds exactly the bytes the inner store returned for it
 * (len may be short at the object's end); a read is served only from
 * those bytes, and *got < n says where they ended, as the inner store
 * would.
 */
#include "io/store.h"

#include <stdlib.h>

#define PROBE 8  /* windows a store fetches before it is judged by its hits */
#define RETRY 16 /* a store judged random still fetches every RETRY-th miss whole */

struct slot {
    uint64_t owner; /* the store's id; 0: free */
    uint64_t index; /* window number: bytes [index * window, + len) */
    unsigned char *data;
    size_t len;
    int loading; /* its GET runs: only the loader writes it */
    uint64_t used; /* the pool's clock at its last use */
};

struct sk_window_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    size_t window, nslots;
    struct slot *slot;
    uint64_t clock, next_id;
    int refs;
    sk_window_stats st;
};

struct win_store {
    sk_store s;
    sk_store *inner;
    sk_window_pool *pool;
    uint64_t id;
    uint64_t fetched, hits, misses; /* under the pool's mutex */
};

int sk_window_pool_new(sk_window_pool **out, size_t window, uint64_t memory, sk_error *err)
{
    *out = NULL;
    SK_FAIL_IF(window < 4096 || window > (64u << 20), err, SK_E_USAGE,
               "read window of %zu bytes: 4 KiB to 64 MiB", window);
    uint64_t n = memory / window;
    SK_FAIL_IF(n < 2 || n > 65536, err, SK_E_USAGE,
               "window memory of %llu bytes: 2 to 65,536 windows of %zu bytes",
               (unsigned long long)memory, window);
    sk_window_pool *p = calloc(1, sizeof *p);
    if (p) p->slot = calloc((size_t)n, sizeof *p->slot);
    if (!p || !p->slot) {
        free(p);
        return sk_error_set(err, SK_E_NOMEM, "out of memory for the read windows");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->window = window, p->nslots = (size_t)n;
    p->refs = 1, p->next_id = 1;
    *out = p;
    return SK_OK;
}

void sk_window_pool_unref(sk_window_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    int last = --p->refs == 0;
    pthread_mutex_unlock(&p->mu);
    if (!last) return;
    for (size_t i = 0; i < p->nslots; i++) free(p->slot[i].data);
    free(p->slot);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void sk_window_pool_stats(sk_window_pool *p, sk_window_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->st;
    out->held = 0;
    for (size_t i = 0; i < p->nslots; i++)
        if (p->slot[i].data) out->held += p->window;
    pthread_mutex_unlock(&p->mu);
}

/* ------------------------------------------------------------------ reads */

static struct slot *find(sk_window_pool *p, uint64_t owner, uint64_t index)
{
    for (size_t i = 0; i < p->nslots; i++)
        if (p->slot[i].owner == owner && p->slot[i].index == index) return &p->slot[i];
    return NULL;
}

/* A slot to fetch into: a free one, else the least recently used one not
 * being fetched; NULL when every slot is being fetched (the caller waits). */
static struct slot *victim(sk_window_pool *p)
{
    struct slot *v = NULL;
    for (size_t i = 0; i < p->nslots; i++) {
        struct slot *s = &p->slot[i];
        if (!s->owner) return s;
        if (!s->loading && (!v || s->used < v->used)) v = s;
    }
    return v;
}

/* The size the caller set on this store (after opening it) is the inner
 * store's too, so that it need not ask with a HEAD.  Under the pool's
 * mutex: every thread's first use goes through here. */
static void pass_hint(struct win_store *w)
{
    if (w->inner->size_hint == UINT64_MAX) w->inner->size_hint = w->s.size_hint;
}

static void pass_hint_locked(struct win_store *w)
{
    pthread_mutex_lock(&w->pool->mu);
    pass_hint(w);
    pthread_mutex_unlock(&w->pool->mu);
}

/* Copies window `index`'s bytes [from, from + n) (as far as it holds) into
 * dst, fetching the window when it is not held; *copied: how many.  The
 * caller holds the pool's mutex; it is released during a fetch. */
static int window_copy(struct win_store *w, uint64_t index, size_t from, unsigned char *dst,
                       size_t n, size_t *copied, sk_error *err)
{
    sk_window_pool *p = w->pool;
    *copied = 0;
    for (;;) {
        struct slot *s = find(p, w->id, index);
        if (s && s->loading) { /* another thread fetches it: wait for its bytes */
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        if (s) {
            s->used = ++p->clock;
            w->hits++, p->st.hits++;
            if (from < s->len) {
                *copied = s->len - from < n ? s->len - from : n;
                memcpy(dst, s->data + from, *copied);
            }
            return SK_OK;
        }
        if (!(s = victim(p))) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        if (!s->data && !(s->data = malloc(p->window)))
            return sk_error_set(err, SK_E_NOMEM, "out of memory for a read window");
        *s = (struct slot){w->id, index, s->data, 0, 1, ++p->clock};
        w->fetched++, p->st.fetched++;
        pthread_mutex_unlock(&p->mu);
        size_t got = 0;
        int rc = w->inner->ops->read_at(w->inner, index * p->window, s->data, p->window, &got, err);
        if (got > p->window) got = p->window;
        pthread_mutex_lock(&p->mu);
        s->loading = 0;
        if (rc) s->owner = 0; /* nothing kept; waiters fetch it themselves */
        else s->len = got;
        pthread_cond_broadcast(&p->cv);
        if (rc) return rc;
        if (from < got) {
            *copied = got - from < n ? got - from : n;
            memcpy(dst, s->data + from, *copied);
        }
        return SK_OK;
    }
}

/* Whether this store's misses should fetch whole windows: yes until it has
 * fetched PROBE, then while at least one read in two is a hit, and every
 * RETRY-th miss regardless. */
static int wants_window(struct win_store *w)
{
    return w->fetched < PROBE || w->hits >= w->fetched || w->misses % RETRY == 0;
}

static int win_read_at(sk_store *st, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct win_store *w = (struct win_store *)st;
    sk_window_pool *p = w->pool;
    sk_store *in = w->inner;
    *got = 0;
    SK_FAIL_IF(!in->ops->read_at, err, SK_E_USAGE, "%s: cannot be read at an offset", st->url);
    if (!n) return SK_OK;
    if (n >= p->window || off > UINT64_MAX - n) {
        pthread_mutex_lock(&p->mu);
        pass_hint(w);
        p->st.direct++;
        pthread_mutex_unlock(&p->mu);
        return in->ops->read_at(in, off, buf, n, got, err);
    }
    uint64_t first = off / p->window, last = (off + n - 1) / p->window;
    pthread_mutex_lock(&p->mu);
    pass_hint(w);
    int held = find(p, w->id, first) && find(p, w->id, last);
    if (!held) w->misses++;
    if (!held && !wants_window(w)) { /* random access: the bytes asked for alone */
        p->st.direct++;
        pthread_mutex_unlock(&p->mu);
        return in->ops->read_at(in, off, buf, n, got, err);
    }
    int rc = SK_OK;
    for (uint64_t i = first; !rc && i <= last; i++) {
        size_t from = i == first ? (size_t)(off - first * p->window) : 0, c = 0;
        size_t want = n - *got < p->window - from ? n - *got : p->window - from;
        rc = window_copy(w, i, from, (unsigned char *)buf + *got, want, &c, err);
        *got += c;
        if (c < want) break; /* the object ends in this window */
    }
    pthread_mutex_unlock(&p->mu);
    if (rc) *got = 0;
    return rc;
}

/* ------------------------------------------------------------ the rest */

static int win_stat(sk_store *st, sk_store_stat *out, sk_error *err)
{
    struct win_store *w = (struct win_store *)st;
    pass_hint_locked(w);
    return w->inner->ops->stat(w->inner, out, err);
}

static int win_open_seq(sk_store *st, uint64_t off, sk_store_seq **out, sk_error *err)
{
    struct win_store *w = (struct win_store *)st;
    pass_hint_locked(w);
    int rc = w->inner->ops->open_seq(w->inner, off, out, err);
    st->cache_state = w->inner->cache_state; /* the disk cache's answer, for the reader */
    return rc;
}

static int win_load(sk_store *st, size_t max, const char *what, sk_buf *out, sk_error *err)
{
    return sk_store_read_whole(((struct win_store *)st)->inner, max, what, out, err);
}

static void win_close(sk_store *st)
{
    struct win_store *w = (struct win_store *)st;
    sk_window_pool *p = w->pool;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->nslots; i++) /* its windows go now, not by age */
        if (p->slot[i].owner == w->id && !p->slot[i].loading) p->slot[i].owner = 0;
    pthread_mutex_unlock(&p->mu);
    sk_window_pool_unref(p);
    sk_store_close(w->inner);
    free(st->url);
    free(w);
}

static const struct sk_store_ops win_ops = {win_stat, win_read_at, win_open_seq, win_close, win_load};

int sk_store_window_open(sk_store **out, sk_store *inner, sk_window_pool *pool, sk_error *err)
{
    struct win_store *w = calloc(1, sizeof *w);
    *out = NULL;
    if (!w || !(w->s.url = strdup(inner->url))) {
        free(w);
        sk_store_close(inner);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    w->s.ops = &win_ops;
    w->s.size_hint = inner->size_hint;
    w->s.cache_state = inner->cache_state;
    w->inner = inner;
    w->pool = pool;
    pthread_mutex_lock(&pool->mu);
    pool->refs++;
    w->id = pool->next_id++;
    pthread_mutex_unlock(&pool->mu);
    *out = &w->s;
    return SK_OK;
}
