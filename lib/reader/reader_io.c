/*
 * reader_io.c - the byte side of the reader: one producer thread per shard
 * being read (the current one and the `prefetch` next) streams the shard's
 * bytes, decompressing .tar.zst on the way, into a ring buffer that the
 * consumer reads in place.
 *
 * The ring is mapped twice, back to back (a memfd mapped at A and at
 * A + cap), so the bytes at ring offset o .. o+n are contiguous at A + o for
 * any n <= cap: a tar member that wraps around the end of the ring is still
 * one pointer, and read()/ZSTD_decompressStream write straight into it.
 * That is the only copy a sample's bytes go through.
 *
 * Memory is bounded by cap per open stream.  A sample wider than cap makes
 * its stream's ring grow (up to max_window) while the producer is parked;
 * the ring goes away with the stream at the end of the shard.
 */
#include "format/format.h"
#include "format/shard_stream.h"
#include "format/unpack.h"
#include "io/store.h"
#include "reader/reader_io.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ source */
/* A source hands out the stored bytes of a shard sequentially from an
 * offset: a store's sequential reader (io/store.h: a local file, a pipe,
 * an S3 object or a file on a web server through one streaming GET, or
 * any of them through the disk cache), or a wrapper over another source. */

typedef struct src {
    void *ctx;
    int (*read)(void *ctx, void *buf, size_t n, size_t *got, sk_error *err); /* 0 = end */
    void (*close)(void *ctx);
} src;

struct store_src {
    sk_store *store;
    sk_store_seq *seq;
};

static int store_read(void *ctx, void *buf, size_t n, size_t *got, sk_error *err)
{
    sk_store_seq *q = ((struct store_src *)ctx)->seq;
    return q->read(q, buf, n, got, err);
}

static void store_src_close(void *ctx)
{
    struct store_src *s = ctx;
    if (s->seq) s->seq->close(s->seq);
    sk_store_close(s->store);
    free(s);
}

static int src_open(src *s, const sk_reader_stream_opts *o, int *cache_state, sk_error *err)
{
    memset(s, 0, sizeof *s);
    *cache_state = -1;
    struct store_src *ss = calloc(1, sizeof *ss);
    SK_FAIL_IF(!ss, err, SK_E_NOMEM, "out of memory");
    int rc = sk_store_open(&ss->store, o->url, o->env, err);
    if (!rc && o->cache_dir && sk_store_is_remote(o->url)) {
        sk_store_cache_opts co = {o->cache_dir, o->cache_size, o->crc32c, o->crc_known, 0, 0};
        rc = sk_store_cache_open(&ss->store, ss->store, &co, err); /* takes the store over */
    }
    if (!rc) rc = ss->store->ops->open_seq(ss->store, o->raw_offset, &ss->seq, err);
    if (rc) {
        store_src_close(ss);
        return rc;
    }
    *cache_state = ss->store->cache_state;
    *s = (src){ss, store_read, store_src_close};
    return SK_OK;
}

/* A source over another: RecordIO records unwrapped (format/recordio.c). */
struct rio_src {
    src in;
    sk_recordio r;
};

static int rio_read(void *ctx, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct rio_src *w = ctx;
    return sk_recordio_read(&w->r, w->in.read, w->in.ctx, buf, n, got, err);
}

static void rio_close(void *ctx)
{
    struct rio_src *w = ctx;
    w->in.close(w->in.ctx);
    free(w);
}

static int wrap_recordio(src *s, const char *url, sk_error *err)
{
    struct rio_src *w = calloc(1, sizeof *w);
    SK_FAIL_IF(!w, err, SK_E_NOMEM, "out of memory");
    w->in = *s;
    sk_recordio_init(&w->r, url);
    *s = (src){w, rio_read, rio_close};
    return SK_OK;
}

/* A source whose first bytes were read to tell its kind, handed out again
 * before the rest. */
struct peek_src {
    src in;
    unsigned char head[512]; /* enough for every detection rule (sk_stream_detect) */
    size_t len, off;
};

static int peek_read(void *ctx, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct peek_src *p = ctx;
    if (p->off < p->len) {
        size_t k = p->len - p->off < n ? p->len - p->off : n;
        memcpy(buf, p->head + p->off, k);
        p->off += k;
        *got = k;
        return SK_OK;
    }
    return p->in.read(p->in.ctx, buf, n, got, err);
}

static void peek_close(void *ctx)
{
    struct peek_src *p = ctx;
    p->in.close(p->in.ctx);
    free(p);
}

/* Reads the first bytes of a stream to choose zstd, a libarchive filter
 * (gzip: SageMaker's CompressionType=Gzip) or plain tar. */
static int sniff(src *s, const char *url, int recordio, int *zstd, int *filtered, sk_error *err)
{
    struct peek_src *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    p->in = *s;
    *s = (src){p, peek_read, peek_close};
    while (p->len < sizeof p->head) {
        size_t k = 0;
        SK_GUARD(p->in.read(p->in.ctx, p->head + p->len, sizeof p->head - p->len, &k, err));
        if (!k) break;
        p->len += k;
    }
    /* the RecordIO magic (ce d7 23 0a, little-endian) can start no tar */
    SK_FAIL_IF(!recordio && p->len >= 4 && sk_get_le32(p->head) == 0xced7230au, err, SK_E_INPUT,
               "%s: starts with the RecordIO magic: a RecordIO-wrapped channel is read with "
               "--recordio (sk_reader_options.recordio)", url);
    sk_stream_kind kind = sk_stream_detect(p->head, p->len);
    *zstd = kind == SK_STREAM_ZSTD;
    *filtered = kind == SK_STREAM_ARCHIVE;
    return SK_OK;
}

/* -------------------------------------------------------------------- ring */

static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

/* cap bytes mapped twice back to back; NULL on failure (errno set). */
static unsigned char *ring_map(size_t cap)
{
    int fd = memfd_create("shardkit-reader", MFD_CLOEXEC);
    if (fd < 0) return NULL;
    unsigned char *p = NULL;
    if (ftruncate(fd, (off_t)cap) == 0) {
        void *base = mmap(NULL, 2 * cap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base != MAP_FAILED) {
            p = base;
            if (mmap(p, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
                mmap(p + cap, cap, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
                    MAP_FAILED) {
                munmap(base, 2 * cap);
                p = NULL;
            }
        }
    }
    int e = errno;
    close(fd);
    errno = e;
    return p;
}

/* ------------------------------------------------------------------ stream */

#define ZIN (256u << 10)

struct sk_reader_stream {
    sk_reader_stream_opts o;
    char *url;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    unsigned char *ring;
    size_t cap;
    uint64_t base, head; /* tar positions: released up to, filled up to */
    int eof, rc, stop, writing;
    int pwait, cwait; /* the producer waits for room, the consumer for bytes */
    sk_error err;
    uint64_t grows;
    int cache_state;
    int remote; /* a stream: take whatever it has, up to the ring's room */
    int inl;    /* no producer thread: need reads (opts.inline_read) */
    int inl_opened;
    /* producer-only */
    src s;
    sk_zdec zd;
    int zstd; /* zd is in use */
    sk_unpack up; /* o.filtered: libarchive's filters, and whatever follows them */
    int up_on;
};

/* Produces up to n bytes at dst: a plain read, or decompression. */
static int produce(sk_reader_stream *st, unsigned char *dst, size_t n, size_t *got,
                   sk_error *err)
{
    if (st->up_on) return sk_unpack_read(&st->up, dst, n, got, err);
    if (!st->zstd) return st->s.read(st->s.ctx, dst, n, got, err);
    return sk_zdec_read(&st->zd, st->s.read, st->s.ctx, dst, n, got, err);
}

static void *producer(void *arg)
{
    sk_reader_stream *st = arg;
    sk_error err = SK_ERROR_INIT;
    int cache_state;
    int rc = src_open(&st->s, &st->o, &cache_state, &err);
    if (!rc && st->o.recordio) rc = wrap_recordio(&st->s, st->url, &err);
    if (!rc && st->o.sniff) rc = sniff(&st->s, st->url, st->o.recordio, &st->o.zstd, &st->o.filtered, &err);
    if (!rc && st->o.zstd) {
        rc = sk_zdec_init(&st->zd, st->url, st->o.raw_offset, &err);
        st->zstd = !rc;
    } else if (!rc && st->o.filtered) {
        /* gzip, bzip2, xz... read whole: a stream may go on after the
         * filter's own end with more shards (unpack.c) */
        st->up_on = 1;
        rc = sk_unpack_open(&st->up, st->s.read, st->s.ctx, st->url, ZIN, &err);
    }
    pthread_mutex_lock(&st->mu);
    st->cache_state = cache_state;
    while (!rc) {
        if (st->stop) break;
        size_t used = (size_t)(st->head - st->base), free_ = st->cap - used;
        /* Refill in chunks of a quarter ring: large reads, and the consumer
         * gets the first bytes before the ring is full. */
        size_t chunk = st->remote ? st->cap : st->cap / 4;
        /* A full ring is refilled once a quarter of it is free, not after
         * every sample the consumer releases: one wakeup and one large read
         * per quarter instead of a futex handoff and a small read per
         * sample.  Sooner only when the consumer waits for bytes. */
        if (free_ == 0 || (free_ < st->cap / 4 && !st->cwait)) {
            st->pwait = 1;
            pthread_cond_wait(&st->cv, &st->mu);
            st->pwait = 0;
            continue;
        }
        size_t n = free_ < chunk ? free_ : chunk;
        unsigned char *dst = st->ring + (size_t)(st->head % st->cap);
        st->writing = 1;
        pthread_mutex_unlock(&st->mu);
        size_t got = 0;
        rc = produce(st, dst, n, &got, &err);
        pthread_mutex_lock(&st->mu);
        st->writing = 0;
        if (!rc && got == 0) st->eof = 1;
        st->head += got;
        pthread_cond_broadcast(&st->cv);
        if (st->eof) break;
    }
    if (rc) {
        st->rc = rc;
        st->err = err;
        st->eof = 1;
    }
    pthread_cond_broadcast(&st->cv);
    pthread_mutex_unlock(&st->mu);
    return NULL;
}

/* Inline reading: the consumer's own thread reads, in chunks small enough
 * that the bytes are still in its cache when they are parsed and written
 * out (a thread reading a quarter ring ahead hands them over from another
 * core's cache, or from memory: the copies then cost twice what `cat`'s
 * do).  Called with the lock held; nothing else touches the stream. */
#ifndef INL_CHUNK
#define INL_CHUNK (256u << 10)
#endif
static unsigned char *ring_take(sk_reader_stream *st);

static void inl_fill(sk_reader_stream *st, uint64_t end)
{
    /* A prefetched shard gets its ring when it is first read: by then the
     * shard before it has left its ring, already faulted in, as the spare. */
    if (!st->ring && !(st->ring = ring_take(st))) {
        st->rc = sk_error_set(&st->err, SK_E_NOMEM, "%s: cannot map a %zu-byte ring buffer: %s",
                              st->url, st->cap, strerror(errno));
        st->eof = 1;
        return;
    }
    if (st->head >= end || st->eof) return; /* the common case: bytes there */
    sk_error err; /* set by whatever fails (1 KiB: not cleared per call) */
    err.code = 0;
    int rc = SK_OK, cache_state;
    if (!st->inl_opened) {
        st->inl_opened = 1;
        rc = src_open(&st->s, &st->o, &cache_state, &err);
    }
    while (!rc && !st->eof && st->head < end) {
        size_t used = (size_t)(st->head - st->base), free_ = st->cap - used;
        if (!free_) return; /* need and skip_to ask for no more than the ring */
        size_t n = free_ < INL_CHUNK ? free_ : INL_CHUNK, got = 0;
        rc = produce(st, st->ring + (size_t)(st->head % st->cap), n, &got, &err);
        if (!rc && !got) st->eof = 1;
        st->head += got;
    }
    if (rc) {
        st->rc = rc;
        st->err = err;
        st->eof = 1;
    }
}

/* A ring of st->cap bytes: the spare one when it has that size (the last
 * shard's), else a new mapping. */
static unsigned char *ring_take(sk_reader_stream *st)
{
    sk_reader_spare *sp = st->o.spare;
    if (sp && sp->ring && sp->cap == st->cap) {
        unsigned char *r = sp->ring;
        sp->ring = NULL;
        return r;
    }
    return ring_map(st->cap);
}

int sk_reader_stream_open(sk_reader_stream **out, const sk_reader_stream_opts *o, sk_error *err)
{
    *out = NULL;
    sk_reader_stream *st = calloc(1, sizeof *st);
    SK_FAIL_IF(!st, err, SK_E_NOMEM, "out of memory");
    st->o = *o;
    st->url = strdup(o->url);
    st->o.url = st->url;
    st->cap = page_round(o->buffer_size ? o->buffer_size : (4u << 20));
    st->base = st->head = o->tar_base;
    st->cache_state = -1;
    st->remote = sk_store_is_remote(o->url);
    st->inl = o->inline_read && !st->remote && !o->zstd && !o->filtered && !o->recordio &&
              !o->sniff;
    if (st->url && !st->inl) st->ring = ring_take(st); /* inline: at the first read */
    if (!st->url || (!st->inl && !st->ring)) {
        int e = errno;
        if (st->ring) munmap(st->ring, 2 * st->cap);
        free(st->url);
        free(st);
        return sk_error_set(err, SK_E_NOMEM, "%s: cannot map a %zu-byte ring buffer: %s", o->url,
                            page_round(o->buffer_size), strerror(e));
    }
    pthread_mutex_init(&st->mu, NULL);
    pthread_cond_init(&st->cv, NULL);
    if (st->inl) {
        *out = st;
        return SK_OK;
    }
    int e = pthread_create(&st->th, NULL, producer, st);
    if (e) {
        munmap(st->ring, 2 * st->cap);
        pthread_mutex_destroy(&st->mu);
        pthread_cond_destroy(&st->cv);
        free(st->url);
        free(st);
        return sk_error_set(err, SK_E_NOMEM, "%s: cannot start a reader thread: %s", o->url,
                            strerror(e));
    }
    *out = st;
    return SK_OK;
}

void sk_reader_stream_close(sk_reader_stream *st)
{
    if (!st) return;
    if (!st->inl) {
        pthread_mutex_lock(&st->mu);
        st->stop = 1;
        pthread_cond_broadcast(&st->cv);
        pthread_mutex_unlock(&st->mu);
        pthread_join(st->th, NULL);
    }
    if (st->s.close) st->s.close(st->s.ctx);
    sk_zdec_free(&st->zd);
    if (st->up_on) sk_unpack_close(&st->up);
    sk_reader_spare *sp = st->o.spare;
    if (!st->ring) {
        /* an inline stream never read */
    } else if (sp && !sp->ring &&
               st->cap == page_round(st->o.buffer_size ? st->o.buffer_size : (4u << 20))) {
        sp->ring = st->ring; /* not a grown one: that size was one sample's */
        sp->cap = st->cap;
    } else {
        munmap(st->ring, 2 * st->cap);
    }
    pthread_mutex_destroy(&st->mu);
    pthread_cond_destroy(&st->cv);
    free(st->url);
    free(st);
}

void sk_reader_spare_free(sk_reader_spare *sp)
{
    if (sp->ring) munmap(sp->ring, 2 * sp->cap);
    sp->ring = NULL;
}

/* Regrows the ring to hold want bytes from base, keeping what it holds.
 * Called with the lock held; waits until the producer is not writing. */
static int grow(sk_reader_stream *st, size_t want, sk_error *err)
{
    while (st->writing) pthread_cond_wait(&st->cv, &st->mu);
    size_t cap = st->cap;
    while (cap < want) cap *= 2;
    cap = page_round(cap);
    unsigned char *r = ring_map(cap);
    SK_FAIL_IF(!r, err, SK_E_NOMEM, "%s: cannot grow the ring buffer to %zu bytes: %s", st->url,
               cap, strerror(errno));
    size_t used = (size_t)(st->head - st->base);
    if (st->ring) { /* (an inline stream not read yet has none) */
        memcpy(r + (size_t)(st->base % cap), st->ring + (size_t)(st->base % st->cap), used);
        munmap(st->ring, 2 * st->cap);
    }
    st->ring = r;
    st->cap = cap;
    st->grows++;
    pthread_cond_broadcast(&st->cv);
    return SK_OK;
}

int sk_reader_stream_need(sk_reader_stream *st, uint64_t pos, size_t n, const unsigned char **p,
                          size_t *avail, sk_error *err)
{
    int rc = SK_OK;
    pthread_mutex_lock(&st->mu);
    if (pos < st->base) {
        rc = sk_error_set(err, SK_E_USAGE, "%s: reader asked for released bytes at %llu", st->url,
                          (unsigned long long)pos);
        goto out;
    }
    uint64_t want = pos + n - st->base;
    if (want > st->cap) {
        if (want > st->o.max_window) {
            rc = sk_error_set(err, SK_E_INPUT,
                              "%s: a sample at offset %llu needs %llu bytes of buffer, over the "
                              "largest sample allowed (%zu bytes; raise max_sample)",
                              st->url, (unsigned long long)st->base, (unsigned long long)want,
                              st->o.max_window);
            goto out;
        }
        if ((rc = grow(st, (size_t)want, err))) goto out;
    }
    if (st->inl) inl_fill(st, pos + n);
    while (st->head < pos + n && !st->eof) {
        st->cwait = 1;
        if (st->pwait) pthread_cond_broadcast(&st->cv);
        pthread_cond_wait(&st->cv, &st->mu);
    }
    st->cwait = 0;
    if ((st->head < pos + n || !st->ring) && st->rc) {
        rc = st->rc;
        if (err) *err = st->err;
        goto out;
    }
    *p = st->ring + (size_t)(pos % st->cap);
    *avail = st->head <= pos ? 0 : (st->head - pos < n ? (size_t)(st->head - pos) : n);
out:
    pthread_mutex_unlock(&st->mu);
    return rc;
}

void sk_reader_stream_peek(sk_reader_stream *st, uint64_t pos, size_t n, const unsigned char **p,
                           size_t *avail)
{
    pthread_mutex_lock(&st->mu);
    *p = st->ring + (size_t)(pos % st->cap);
    *avail = pos < st->base || st->head <= pos ? 0
             : st->head - pos < n                ? (size_t)(st->head - pos)
                                                 : n;
    pthread_mutex_unlock(&st->mu);
}

/* Only the consumer's thread changes cap (grow, from need), so it reads it
 * without the lock. */
size_t sk_reader_stream_cap(const sk_reader_stream *st)
{
    return st->cap;
}

void sk_reader_stream_release(sk_reader_stream *st, uint64_t pos)
{
    pthread_mutex_lock(&st->mu);
    if (pos > st->head) pos = st->head;
    if (pos > st->base) {
        st->base = pos;
        /* the producer waits for a quarter of the ring (see producer) */
        if (st->pwait && st->cap - (size_t)(st->head - st->base) >= st->cap / 4)
            pthread_cond_broadcast(&st->cv);
    }
    pthread_mutex_unlock(&st->mu);
}

int sk_reader_stream_skip_to(sk_reader_stream *st, uint64_t pos, uint64_t *reached,
                             sk_error *err)
{
    int rc = SK_OK;
    pthread_mutex_lock(&st->mu);
    while (st->base < pos) {
        if (st->inl && st->head == st->base) inl_fill(st, pos);
        while (st->head == st->base && !st->eof) pthread_cond_wait(&st->cv, &st->mu);
        if (st->head == st->base) {
            if (st->rc) {
                rc = st->rc;
                if (err) *err = st->err;
            }
            break;
        }
        st->base = st->head < pos ? st->head : pos;
        pthread_cond_broadcast(&st->cv);
    }
    *reached = st->base;
    pthread_mutex_unlock(&st->mu);
    return rc;
}

uint64_t sk_reader_stream_grows(const sk_reader_stream *st)
{
    return st->grows;
}

int sk_reader_stream_cache_state(sk_reader_stream *st)
{
    pthread_mutex_lock(&st->mu);
    int c = st->cache_state;
    pthread_mutex_unlock(&st->mu);
    return c;
}
