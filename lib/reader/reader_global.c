/*
 * reader_global.c - the reader's global-order mode (reader_global.h): a
 * slot reads its share of the epoch's global sequence (order.c) through
 * the shards' indexes, in batches.  A batch is planned on the caller's
 * thread (positions -> shard and ordinal -> the index's byte range), its
 * samples sorted by shard and offset and neighbours coalesced into one
 * read (one pread, one ranged GET) when the gap between them is small,
 * then read by a thread while the caller consumes the batch before it:
 * the read-ahead.  Every read goes through the store interface (io/store.h),
 * so local files, s3:// and http(s):// read the same way; when every shard
 * is local a batch is read on the caller's thread instead, its reads
 * submitted together (io/read_batch.h: one io_uring_enter for up to 32).
 *
 * A .tar.zst with a seek table is read the same way: a sample's range is
 * the stored bytes of the frames holding it, decompressed in memory
 * (global_zstd.c) into the batch's second buffer, whole and in one call
 * when they hold little past the sample (zstd decodes whole blocks anyway).
 *
 * The index is untrusted like the shard: every range it gives is checked
 * against the shard's size and the sample's span before it is read, and
 * every member's bytes against the CRC32C it records.
 */
#include "reader/reader_global.h"
#include "reader/order.h"
#include "reader/mix.h"
#include "core/rng.h"
#include "io/io.h"
#include "io/store.h"
#include "io/read_batch.h"
#include "io/read_many.h"
#include "format/format.h"
#include "format/tar.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAX_ITEMS 4096     /* samples a batch holds at most */
#define MAX_INDEXES_MIN 64 /* indexes kept loaded, at least (else 2 windows) */
#define MAX_STORES 64      /* shards kept open by the read thread */
/* Bytes a batch of local shards holds at most: read on the caller's
 * thread, a batch hides no latency, and a smaller buffer is fewer fresh
 * pages (a fault each) and stays in the CPU's cache: 256 KiB took 19%
 * less CPU than 1 MiB over 20,000 samples from the page cache (a batch
 * is still ~15 samples, under SK_RBATCH_MAX reads of one submission). */
#define LOCAL_BATCH (256u << 10)
/* Remote shards: a batch's ranges are read by this many threads at once
 * (the read thread is one of them; io/read_many.c).  One at a
 * time, every first touch of a cache block waited for its GET: 0.73x the
 * streaming reader from a RADOS gateway, which keeps two GETs streaming. */
#define FETCHERS 8

/* Samples located (position -> shard and ordinal) ahead of planning, and
 * how far ahead their index records are fetched into the CPU's cache: a
 * window's samples are far apart in their indexes, so each one's record,
 * key and member records were cache misses, a tenth of the global order's
 * CPU from the page cache. */
#define LOOKAHEAD 16 /* a power of two, over PF_RECORD */
#define PF_RECORD 8  /* the sample's record */
#define PF_REST 4    /* its key and members' records (its record read by then) */

/* Tar bytes past a compressed sample its frames may hold and still be
 * decompressed whole (a frame of shardkit's ends at a sample's end, at
 * least SK_ZFRAME_MIN from its start: about that much at most) */
#define ZWHOLE_SLACK (128u << 10)

struct located {
    uint64_t pos, ord;
    size_t s;
};

/* A planned sample: where it is, where its bytes land in the batch. */
struct item {
    uint64_t pos, k; /* global position, slot-local index */
    size_t shard;
    uint64_t ordinal, off, span;
    uint64_t soff, sspan;      /* the stored bytes read: off, span unless compressed */
    uint64_t skip;             /* compressed: tar bytes of its frame before off */
    size_t zat;                /* compressed: where its frame's bytes from the frame's start land, in zdata */
    uint64_t zlen;             /* compressed: the tar bytes decompressed, from its frame's start */
    int zwhole;                /* compressed: its frames decompressed whole, in one call */
    int z;                     /* from a .tar.zst */
    const unsigned char *p;    /* its tar bytes (from off) once read */
    size_t at;                 /* of soff, in the batch's data */
    size_t rg;                 /* the range it is read with */
    size_t key_off, key_len;   /* in names */
    size_t mem, nmem;          /* in the batch's members */
    int crc;                   /* members carry real CRC32Cs */
};

struct mem {
    uint64_t data_offset, size;
    uint32_t crc32c;
    size_t ext_off, ext_len;
};

struct range {
    size_t shard;
    uint64_t off, len;
    size_t at;
};

struct batch {
    struct item *it;
    size_t n, cap_it, next; /* next: the item to hand out */
    struct mem *m;
    size_t nm, cap_m;
    char *names;
    size_t names_len, names_cap;
    struct range *rg;
    size_t nr, cap_rg;
    size_t *sorted;
    size_t cap_sorted;
    unsigned char *data;
    size_t data_len, data_cap;
    unsigned char *zdata; /* decompressed samples */
    size_t zdata_len, zdata_cap;
    int rc;
    sk_error err;
};

struct gsh {
    sk_index *ix;
    uint64_t used; /* clock of its last use, for eviction */
    uint64_t size; /* the shard's bytes, as its index says */
    sk_zstd_frame *frames; /* a .tar.zst's seek table, with the index */
    size_t nframes;
};

struct open_store {
    size_t shard;
    sk_store *st;
    uint64_t used;
};

struct sk_gread {
    sk_gread_opts o;
    uint64_t *counts; /* per shard */
    sk_mix mix;       /* with o.mix: the epoch's units (order.c permutes them) */
    size_t *first;    /* ndatasets + 1: each dataset's first shard */
    uint64_t *ucounts;
    size_t *ustreams; /* each unit's dataset: the order mixes them evenly */
    size_t ustreams_cap;
    size_t ucap;
    struct gsh *sh;
    size_t nloaded, max_loaded;
    uint64_t clock;
    sk_order ord;
    sk_split split;
    uint64_t base;             /* positions consumed before this run (a seek) */
    uint64_t count, k, handed; /* the slot's samples, next to plan, handed out */
    uint64_t fingerprint;
    struct located la[LOOKAHEAD]; /* samples la_next - LOOKAHEAD.. la_next - 1 */
    uint64_t la_next;             /* the next sample to locate: from k on */
    size_t batch_bytes; /* a batch's bytes: read_ahead, or LOCAL_BATCH when smaller */
    struct batch b[2];
    int inline_io; /* every shard local: batches read on the caller's thread */
    int cur;     /* the batch being handed out */
    int pending; /* the other batch is with the read thread */
    /* the read thread */
    pthread_t th;
    int th_ok;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int job, done[2], quit;
    struct open_store stores[MAX_STORES];
    size_t nstores;
    uint64_t sclock; /* the stores' clock (the thread's own) */
    uint64_t reads;
    ZSTD_DCtx *zd; /* the thread's (global_zstd.c) */
    sk_rbatch *rb;  /* local shards: their reads made together */
    sk_rmany *fx; /* remote shards: their reads made at once (made on first use) */
    sk_rmany_job *jobs;
    size_t cap_jobs;
    /* the view handed out */
    sk_reader_sample view;
    sk_reader_member *mv;
    size_t mv_cap;
};

/* ---------------------------------------------------------------- indexes */

static const char *index_url(const sk_gshard *s, char *buf, size_t cap)
{
    if (s->index) return s->index;
    snprintf(buf, cap, "%s.idx", s->url);
    return buf;
}

/* Forgets the least recently used index when too many are loaded. */
static void evict_index(sk_gread *g)
{
    size_t victim = SIZE_MAX;
    for (size_t i = 0; i < g->o.nshards; i++)
        if (g->sh[i].ix && (victim == SIZE_MAX || g->sh[i].used < g->sh[victim].used)) victim = i;
    if (victim == SIZE_MAX) return;
    sk_index_close(g->sh[victim].ix);
    g->sh[victim].ix = NULL;
    free(g->sh[victim].frames);
    g->sh[victim].frames = NULL;
    g->nloaded--;
}

static int load_index(sk_gread *g, size_t s, sk_error *err)
{
    struct gsh *h = &g->sh[s];
    h->used = ++g->clock;
    if (h->ix) return SK_OK;
    const sk_gshard *d = &g->o.shards[s];
    char buf[4200];
    const char *ip = index_url(d, buf, sizeof buf);
    if (g->nloaded >= g->max_loaded) evict_index(g);
    if (sk_store_is_remote(ip)) {
        sk_buf blob = {0};
        int rc = sk_store_load(ip, g->o.env, SK_S3_INDEX_MAX, "shard index", &blob, err);
        if (rc) return sk_buf_free(&blob), rc;
        SK_GUARD(sk_index_adopt(&h->ix, blob.p, blob.len, ip, err));
    } else {
        int rc = sk_index_open(&h->ix, ip, SK_INDEX_TRUST_BODY, err);
        if (rc == SK_E_IO || rc == SK_E_NOTFOUND)
            return sk_error_set(err, rc, "%s: the global order reads through shard indexes (%s; "
                                "`shardkit index` makes them, or read without global_order)",
                                d->url, err ? err->msg : "no index");
        SK_GUARD(rc);
    }
    g->nloaded++;
    const sk_index_shard_info *in = sk_index_shard(h->ix);
    int rc = SK_OK;
    struct stat sb;
    if (in->flags & SK_INDEX_GZIP)
        rc = sk_error_set(err, SK_E_USAGE, "%s: gzip, bzip2 or xz: no sample can be reached "
                          "without decompressing the shard from its start; the global order "
                          "reads plain .tar and seekable .tar.zst shards (read it without "
                          "global_order)", d->url);
    else if (d->bytes && d->bytes != in->size)
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: index %s says %llu bytes, the manifest %llu",
                          d->url, ip, (unsigned long long)in->size, (unsigned long long)d->bytes);
    else if (!sk_store_is_remote(d->url) && stat(d->url, &sb) == 0 && (uint64_t)sb.st_size != in->size)
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: %llu bytes, its index %s says %llu: not the "
                          "shard indexed", d->url, (unsigned long long)sb.st_size, ip,
                          (unsigned long long)in->size);
    else if (d->samples >= 0 && (uint64_t)d->samples != sk_index_sample_count(h->ix))
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: index %s has %llu samples, the manifest %lld",
                          d->url, ip, (unsigned long long)sk_index_sample_count(h->ix),
                          (long long)d->samples);
    if (rc) {
        sk_index_close(h->ix);
        h->ix = NULL;
        g->nloaded--;
        return rc;
    }
    h->size = in->size;
    if ((in->flags & SK_INDEX_ZSTD) &&
        (rc = sk_gzstd_frames(d->url, g->o.env, in->size, &h->frames, &h->nframes, err))) {
        sk_index_close(h->ix);
        h->ix = NULL;
        g->nloaded--;
        return rc;
    }
    return SK_OK;
}

/* ---------------------------------------------------------- read thread */

static int store_of(sk_gread *g, size_t s, sk_store **out, sk_error *err)
{
    size_t lru = 0;
    for (size_t i = 0; i < g->nstores; i++) {
        if (g->stores[i].shard == s) {
            g->stores[i].used = ++g->sclock;
            *out = g->stores[i].st;
            return SK_OK;
        }
        if (g->stores[i].used < g->stores[lru].used) lru = i;
    }
    sk_store *st;
    SK_GUARD(sk_store_open(&st, g->o.shards[s].url, g->o.env, err));
    /* its size is known (the index proved it against the manifest or the
     * file): a remote store need not ask with a HEAD */
    if (g->sh[s].size) st->size_hint = g->sh[s].size;
    SK_FAIL_IF(!st->ops->read_at, err, SK_E_USAGE,
               "%s: a stream cannot be read in the global order (read it without global_order)",
               g->o.shards[s].url);
    if (g->nstores == MAX_STORES) sk_store_close(g->stores[lru].st);
    else lru = g->nstores++;
    g->stores[lru] = (struct open_store){.shard = s, .st = st, .used = ++g->sclock};
    *out = st;
    return SK_OK;
}

/* A sample's members against the CRC32Cs its index records. */
static int check_item(sk_gread *g, const struct batch *b, const struct item *it, sk_error *err)
{
    for (size_t j = 0; it->crc && j < it->nmem; j++) {
        const struct mem *m = &b->m[it->mem + j];
        uint32_t c = sk_crc32c(0, it->p + (m->data_offset - it->off), (size_t)m->size);
        SK_FAIL_IF(c != m->crc32c, err, SK_E_MISMATCH,
                   "%s: member '%s.%s' (sample %llu) has CRC32C %08x, its index says %08x",
                   g->o.shards[it->shard].url, b->names + it->key_off, b->names + m->ext_off,
                   (unsigned long long)it->ordinal, c, m->crc32c);
    }
    return SK_OK;
}

/* Reads ranges [i, i + n) of b into its data: the batch reader's (local
 * shards) at once, else one read_at each (the read thread's remote ones). */
static int read_ranges(sk_gread *g, struct batch *b, size_t i, size_t n, sk_error *err)
{
    size_t got[SK_RBATCH_MAX], q[SK_RBATCH_MAX], nq = 0;
    for (size_t j = 0; j < n; j++) {
        const struct range *r = &b->rg[i + j];
        sk_store *st = NULL;
        SK_GUARD(store_of(g, r->shard, &st, err));
        int fd = g->rb ? sk_store_file_fd(st) : -1;
        q[j] = SIZE_MAX;
        if (fd >= 0) {
            sk_rbatch_add(g->rb, fd, st->url, r->off, b->data + r->at, (size_t)r->len);
            q[j] = nq++;
        } else {
            SK_GUARD(st->ops->read_at(st, r->off, b->data + r->at, (size_t)r->len, &got[j], err));
        }
    }
    size_t qgot[SK_RBATCH_MAX];
    if (nq) SK_GUARD(sk_rbatch_run(g->rb, qgot, err));
    __atomic_add_fetch(&g->reads, n, __ATOMIC_RELAXED);
    for (size_t j = 0; j < n; j++) {
        const struct range *r = &b->rg[i + j];
        size_t k = q[j] == SIZE_MAX ? got[j] : qgot[q[j]];
        SK_FAIL_IF(k < r->len, err, SK_E_CORRUPT,
                   "%s: ends at offset %llu, inside bytes %llu..%llu its index names: truncated",
                   g->o.shards[r->shard].url, (unsigned long long)(r->off + k),
                   (unsigned long long)r->off, (unsigned long long)(r->off + r->len));
    }
    return SK_OK;
}

/* Reads a batch's ranges (remote shards, or local ones beside them),
 * FETCHERS at once (io/read_many.c), in rounds of at most MAX_STORES / 2
 * shards (the read thread alone opens and evicts stores; those a round
 * uses stay open through it).  Two ranges in one cache block cost one
 * GET: the cache makes a read wait for a block another is fetching. */
static int read_parallel(sk_gread *g, struct batch *b, sk_error *err)
{
    if (!g->fx) SK_GUARD(sk_rmany_open(&g->fx, FETCHERS, err));
    SK_GUARD(sk_grow((void **)&g->jobs, &g->cap_jobs, b->nr + 1, sizeof *g->jobs, err));
    for (size_t i = 0, start; i < b->nr;) {
        start = i;
        for (size_t ns = 0; i < b->nr && ns < MAX_STORES / 2; ns++) {
            sk_store *st;
            sk_store_stat sst;
            size_t shard = b->rg[i].shard;
            SK_GUARD(store_of(g, shard, &st, err));
            SK_GUARD(st->ops->stat(st, &sst, err)); /* here: a remote store asks once, no race */
            for (; i < b->nr && b->rg[i].shard == shard; i++)
                g->jobs[i] = (sk_rmany_job){.st = st, .off = b->rg[i].off, .len = (size_t)b->rg[i].len,
                                            .dst = b->data + b->rg[i].at};
        }
        SK_GUARD(sk_rmany_run(g->fx, g->jobs + start, i - start, err));
        __atomic_add_fetch(&g->reads, i - start, __ATOMIC_RELAXED);
    }
    return SK_OK;
}

/* Reads a planned batch's ranges and checks its members (the thread's, or
 * the caller's for local shards), a group of ranges at a time (one read
 * each, remote; up to SK_RBATCH_MAX in one submission, local: a local
 * batch is at most LOCAL_BATCH bytes), each group's samples right after
 * it is read, while its bytes are still in the CPU's
 * cache: checked after the whole batch, they came back from memory, and
 * that was a quarter of the time of a batch read from the page cache. */
static int fill(sk_gread *g, struct batch *b, sk_error *err)
{
    size_t k = 0; /* b->sorted's next item: in the ranges' order */
    if (!g->rb) SK_GUARD(read_parallel(g, b, err)); /* the read thread's: all at once */
    for (size_t i = 0, n; i < b->nr; i += n) {
        n = g->rb ? (b->nr - i < SK_RBATCH_MAX ? b->nr - i : SK_RBATCH_MAX) : b->nr - i;
        if (g->rb) SK_GUARD(read_ranges(g, b, i, n, err));
        for (; k < b->n && b->it[b->sorted[k]].rg < i + n; k++) {
            struct item *it = &b->it[b->sorted[k]];
            if (it->z) {
                unsigned char *dst = b->zdata + it->zat;
                SK_GUARD(sk_gzstd_decompress(&g->zd, b->data + it->at, (size_t)it->sspan, dst,
                                             (size_t)it->zlen, it->zwhole,
                                             g->o.shards[it->shard].url, it->soff, err));
                it->p = dst + it->skip;
            } else {
                it->p = b->data + it->at;
            }
            SK_GUARD(check_item(g, b, it, err));
        }
    }
    return SK_OK;
}

static void *io_main(void *arg)
{
    sk_gread *g = arg;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (!g->quit && g->job < 0) pthread_cond_wait(&g->cv, &g->mu);
        if (g->quit) break;
        int j = g->job;
        pthread_mutex_unlock(&g->mu);
        struct batch *b = &g->b[j];
        b->err.code = 0;
        b->err.msg[0] = 0;
        b->rc = fill(g, b, &b->err);
        pthread_mutex_lock(&g->mu);
        g->job = -1;
        g->done[j] = 1;
        pthread_cond_broadcast(&g->cv);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static void submit(sk_gread *g, int j)
{
    pthread_mutex_lock(&g->mu);
    g->done[j] = 0;
    g->job = j;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
    g->pending = 1;
}

static void wait_done(sk_gread *g, int j)
{
    if (g->inline_io) {
        g->pending = 0;
        return;
    }
    pthread_mutex_lock(&g->mu);
    while (!g->done[j]) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    g->pending = 0;
}

/* ---------------------------------------------------------------- planning */

static int names_put(struct batch *b, const char *s, size_t n, size_t *off, sk_error *err)
{
    SK_GUARD(sk_grow((void **)&b->names, &b->names_cap, b->names_len + n + 1, 1, err));
    *off = b->names_len;
    memcpy(b->names + b->names_len, s, n);
    b->names[b->names_len + n] = 0;
    b->names_len += n + 1;
    return SK_OK;
}

/* The slot's sample k: its global position, shard and ordinal. */
static int locate(sk_gread *g, uint64_t k, struct located *l, sk_error *err)
{
    l->pos = g->base + sk_split_position(&g->split, g->o.rank, g->o.worker, k);
    SK_GUARD(sk_order_at(&g->ord, l->pos, &l->s, &l->ord, err));
    if (g->o.mix) { /* a unit: a shard, whole or a subset of its ordinals */
        const sk_mix_unit *u = &g->mix.units[l->s];
        l->s = u->shard;
        if (u->pick != SIZE_MAX) l->ord = g->mix.picks[u->pick + l->ord];
    }
    return SK_OK;
}

/* Locates the samples up to PF_RECORD after k and fetches their index
 * records (and k + PF_REST's key and members) into the CPU's cache, where
 * their indexes are loaded.  A sample it cannot locate is left to
 * plan_item, which says why when its turn comes. */
static void look_ahead(sk_gread *g)
{
    uint64_t want = g->k + PF_RECORD + 1 < g->count ? g->k + PF_RECORD + 1 : g->count;
    if (g->la_next < g->k) g->la_next = g->k;
    for (; g->la_next < want; g->la_next++) {
        struct located *l = &g->la[g->la_next % LOOKAHEAD];
        if (locate(g, g->la_next, l, NULL)) break;
        if (g->sh[l->s].ix) sk_index_prefetch(g->sh[l->s].ix, l->ord, 0);
    }
    if (g->k + PF_REST < g->la_next) {
        const struct located *l = &g->la[(g->k + PF_REST) % LOOKAHEAD];
        if (g->sh[l->s].ix) sk_index_prefetch(g->sh[l->s].ix, l->ord, 1);
    }
}

/* Adds the slot's sample k to b, from its index record. */
static int plan_item(sk_gread *g, struct batch *b, uint64_t k, sk_error *err)
{
    struct located l;
    if (k < g->la_next) l = g->la[k % LOOKAHEAD];
    else SK_GUARD(locate(g, k, &l, err));
    uint64_t pos = l.pos, ord = l.ord;
    size_t s = l.s;
    SK_GUARD(load_index(g, s, err));
    const sk_index *ix = g->sh[s].ix;
    const char *url = g->o.shards[s].url;
    sk_sample_ref ref;
    SK_GUARD(sk_index_sample(ix, ord, &ref, err));
    const struct gsh *h = &g->sh[s];
    int z = h->frames != NULL;
    uint64_t soff = z ? ref.stored_offset : ref.offset, sspan = z ? ref.stored_span : ref.span;
    uint64_t d_off = ref.offset;
    SK_FAIL_IF(ref.span > g->o.max_sample || soff > h->size || sspan > h->size - soff ||
                   (z && sspan > g->o.max_sample + (1u << 20)),
               err, SK_E_CORRUPT, "%s: sample %llu: bytes %llu+%llu its index names are %s", url,
               (unsigned long long)ord, (unsigned long long)soff, (unsigned long long)sspan,
               soff <= h->size && sspan <= h->size - soff ? "over max_sample" : "past the shard's end");
    /* the tar bytes of its first frame before it are decompressed too:
     * at most max_sample of them */
    SK_FAIL_IF(z && (!sk_gzstd_frame_at(h->frames, h->nframes, soff, &d_off) ||
                     d_off > ref.offset || ref.offset - d_off > g->o.max_sample),
               err, SK_E_CORRUPT, "%s: sample %llu: its index says it starts in the zstd frame at "
               "offset %llu, %s", url, (unsigned long long)ord, (unsigned long long)soff,
               !sk_gzstd_frame_at(h->frames, h->nframes, soff, &d_off) ? "where no frame starts"
                                                                        : "which does not hold it");
    SK_GUARD(sk_grow((void **)&b->it, &b->cap_it, b->n + 1, sizeof *b->it, err));
    struct item *it = &b->it[b->n];
    *it = (struct item){.pos = pos, .k = k, .shard = s, .ordinal = ord, .off = ref.offset,
                        .span = ref.span, .soff = soff, .sspan = sspan, .z = z,
                        .skip = ref.offset - d_off, .mem = b->nm, .nmem = ref.member_count,
                        .crc = !(sk_index_shard(ix)->flags & SK_INDEX_NO_CRC)};
    if (z) {
        /* its frames decompressed whole, in one call straight into the
         * batch, when they tile its stored bytes and hold little past it:
         * zstd decodes a block at a time anyway, and one stopped inside a
         * block is decoded into the context's own buffer and copied out */
        uint64_t want = it->skip + it->span, whole = 0;
        it->zwhole = sk_gzstd_frames_span(h->frames, h->nframes, soff, sspan, &whole) &&
                     whole >= want && whole - want <= ZWHOLE_SLACK;
        it->zlen = it->zwhole ? whole : want;
    }
    SK_GUARD(names_put(b, ref.key, ref.key_len, &it->key_off, err));
    it->key_len = ref.key_len;
    SK_GUARD(sk_grow((void **)&b->m, &b->cap_m, b->nm + ref.member_count, sizeof *b->m, err));
    for (uint32_t i = 0; i < ref.member_count; i++) {
        sk_member_ref mr;
        SK_GUARD(sk_index_member(ix, (uint64_t)ref.first_member + i, &mr, err));
        SK_FAIL_IF(mr.data_offset < ref.offset || mr.size > ref.span ||
                       mr.data_offset - ref.offset > ref.span - mr.size,
                   err, SK_E_CORRUPT, "%s: sample %llu: a member its index names lies outside the "
                   "sample's bytes", url, (unsigned long long)ord);
        struct mem *m = &b->m[b->nm++];
        m->data_offset = mr.data_offset;
        m->size = mr.size;
        m->crc32c = mr.crc32c;
        m->ext_len = mr.ext_len;
        SK_GUARD(names_put(b, mr.ext, mr.ext_len, &m->ext_off, err));
    }
    b->n++;
    return SK_OK;
}

static int by_place(const void *a, const void *b, void *items)
{
    const struct item *it = items, *x = &it[*(const size_t *)a], *y = &it[*(const size_t *)b];
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->soff < y->soff ? -1 : x->soff > y->soff;
}

/* A buffer of a batch grown to hold n bytes, at least doubling, and kept:
 * a new buffer each batch would be fresh pages, a page fault every 4 KiB.
 * Grown by realloc, which moves a large buffer's pages (mremap) rather
 * than copying them: freed and allocated anew, every page already touched
 * faulted again (the global order from S3 took 29,000 minor faults for
 * 20,000 samples against 6,800 streaming, 7% of its CPU in them). */
static int hold(unsigned char **p, size_t *cap, uint64_t n, sk_error *err)
{
    SK_FAIL_IF(n > SIZE_MAX / 2, err, SK_E_NOMEM, "a batch of %llu bytes", (unsigned long long)n);
    if (n <= *cap) return SK_OK;
    size_t c = *cap * 2 > (64u << 10) ? *cap * 2 : (64u << 10);
    if (c < n) c = (size_t)n;
    unsigned char *q = realloc(*p, c);
    SK_FAIL_IF(!q, err, SK_E_NOMEM, "out of memory for a batch of %zu bytes", c);
    *p = q;
    *cap = c;
    return SK_OK;
}

/* The next batch of the slot into b: items, then ranges of stored bytes
 * (neighbours in a shard joined when the gap is at most max_gap and the
 * batch's bytes stay within twice batch_bytes), then where each lands in
 * data, and a compressed one's tar bytes in zdata. */
static int plan(sk_gread *g, struct batch *b, sk_error *err)
{
    b->n = b->nm = b->names_len = b->nr = b->next = b->data_len = b->zdata_len = 0;
    uint64_t bytes = 0, ztotal = 0;
    while (g->k < g->count && b->n < MAX_ITEMS && (b->n == 0 || bytes < g->batch_bytes)) {
        look_ahead(g);
        SK_GUARD(plan_item(g, b, g->k, err));
        struct item *it = &b->it[b->n - 1];
        if (it->z) {
            it->zat = (size_t)ztotal;
            ztotal += it->zlen;
        }
        bytes += it->z ? it->sspan + it->zlen : it->span;
        g->k++;
    }
    SK_GUARD(sk_grow((void **)&b->sorted, &b->cap_sorted, b->n + 1, sizeof *b->sorted, err));
    for (size_t i = 0; i < b->n; i++) b->sorted[i] = i;
    qsort_r(b->sorted, b->n, sizeof *b->sorted, by_place, b->it);
    uint64_t total = 0;
    for (size_t i = 0; i < b->n; i++) {
        struct item *it = &b->it[b->sorted[i]];
        struct range *r = b->nr ? &b->rg[b->nr - 1] : NULL;
        uint64_t end = r ? r->off + r->len : 0;
        int join = r && r->shard == it->shard && it->soff >= r->off &&
                   (it->soff <= end ||
                    (it->soff - end <= g->o.max_gap && total + (it->soff - end) <= 2 * g->batch_bytes));
        if (!join) {
            SK_GUARD(sk_grow((void **)&b->rg, &b->cap_rg, b->nr + 1, sizeof *b->rg, err));
            r = &b->rg[b->nr++];
            *r = (struct range){.shard = it->shard, .off = it->soff, .len = 0, .at = (size_t)total};
            end = it->soff;
        }
        if (it->soff + it->sspan > end) {
            total += it->soff + it->sspan - end;
            r->len = it->soff + it->sspan - r->off;
        }
        it->at = r->at + (size_t)(it->soff - r->off);
        it->rg = (size_t)(r - b->rg);
    }
    SK_GUARD(hold(&b->data, &b->data_cap, total, err));
    SK_GUARD(hold(&b->zdata, &b->zdata_cap, ztotal, err));
    b->data_len = (size_t)total;
    b->zdata_len = (size_t)ztotal;
    return SK_OK;
}

/* ------------------------------------------------------------------ public */

static uint64_t fingerprint(const sk_gread *g)
{
    uint64_t h = sk_rng_derive(g->o.seed, g->o.window, (uint64_t)g->o.shuffle);
    for (size_t i = 0; i < g->o.nshards; i++) {
        const char *u = g->o.shards[i].url, *slash = strrchr(u, '/');
        const char *base = slash ? slash + 1 : u; /* the place may change, not the shards */
        h = sk_rng_derive(h, sk_fnv1a64(base, strlen(base)), g->counts[i]);
        h = sk_rng_derive(h, g->o.shards[i].dataset, 0);
    }
    for (size_t d = 0; g->o.mix && d < g->mix.nstreams; d++)
        h = sk_rng_derive(h, d, g->mix.take[d]);
    /* the mixed order changed (session 12: units placed by their share,
     * order.c): a position saved by an older build is refused, not
     * resumed into another sequence */
    if (g->o.mix) h = sk_rng_derive(h, 2, 0);
    return h;
}

/* The streams: each dataset's shards (they come in dataset order). */
static int mix_init(sk_gread *g, sk_error *err)
{
    size_t n = g->o.ndatasets;
    SK_FAIL_IF(!(g->first = calloc(n + 1, sizeof *g->first)), err, SK_E_NOMEM, "out of memory");
    size_t s = 0;
    for (size_t d = 0; d < n; d++) {
        g->first[d] = s;
        while (s < g->o.nshards && g->o.shards[s].dataset == d) s++;
    }
    g->first[n] = s;
    g->mix = (sk_mix){.nstreams = n, .first = g->first, .counts = g->counts,
                      .proportion = g->o.proportion, .repeat = g->o.repeat,
                      .choose = g->o.choose, .samples_per_epoch = g->o.samples_per_epoch,
                      .seed = g->o.seed};
    return sk_mix_init(&g->mix, err);
}

static void drain(sk_gread *g)
{
    if (g->pending) wait_done(g, 1 - g->cur);
}

int sk_gread_plan(sk_gread *g, uint64_t epoch, sk_error *err)
{
    drain(g);
    if (g->o.mix) {
        SK_GUARD(sk_mix_epoch(&g->mix, epoch, err));
        SK_GUARD(sk_grow((void **)&g->ucounts, &g->ucap, g->mix.nunits + 1, sizeof *g->ucounts,
                         err));
        SK_GUARD(sk_grow((void **)&g->ustreams, &g->ustreams_cap, g->mix.nunits + 1,
                         sizeof *g->ustreams, err));
        for (size_t i = 0; i < g->mix.nunits; i++) {
            g->ucounts[i] = g->mix.units[i].count;
            g->ustreams[i] = g->o.shards[g->mix.units[i].shard].dataset;
        }
        g->ord.stream = g->ustreams;
        g->ord.nshards = g->mix.nunits;
        g->ord.counts = g->ucounts;
    }
    SK_GUARD(sk_order_plan(&g->ord, epoch, err));
    g->base = 0;
    g->split.m = g->ord.total;
    g->count = sk_split_count(&g->split, g->o.rank, g->o.worker);
    g->k = g->handed = g->la_next = 0;
    g->b[0].n = g->b[0].next = g->b[1].n = g->b[1].next = 0;
    g->cur = 0;
    return SK_OK;
}

int sk_gread_open(sk_gread **out, const sk_gread_opts *o, uint64_t epoch, sk_error *err)
{
    *out = NULL;
    sk_gread *g = calloc(1, sizeof *g);
    SK_FAIL_IF(!g, err, SK_E_NOMEM, "out of memory");
    g->o = *o;
    if (!g->o.window) g->o.window = 1;
    if (!g->o.batch) g->o.batch = 1;
    g->job = -1;
    g->max_loaded = 2 * g->o.window + 2 > MAX_INDEXES_MIN ? 2 * g->o.window + 2 : MAX_INDEXES_MIN;
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    int rc = SK_OK;
    g->counts = calloc(o->nshards ? o->nshards : 1, sizeof *g->counts);
    g->sh = calloc(o->nshards ? o->nshards : 1, sizeof *g->sh);
    if (!g->counts || !g->sh) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    /* counts: the manifest's, else each index's (loaded once, kept while
     * there is room: the first window reads them again) */
    for (size_t i = 0; !rc && i < o->nshards; i++) {
        if (o->shards[i].samples >= 0) {
            g->counts[i] = (uint64_t)o->shards[i].samples;
        } else if (!(rc = load_index(g, i, err))) {
            g->counts[i] = sk_index_sample_count(g->sh[i].ix);
        }
    }
    g->ord = (sk_order){.nshards = o->nshards, .counts = g->counts, .seed = o->seed,
                        .window = g->o.window, .shuffle = o->shuffle, .held = SIZE_MAX};
    g->split = (sk_split){.ranks = o->ranks, .workers = o->workers, .batch = g->o.batch};
    if (!rc && o->mix) rc = mix_init(g, err);
    if (!rc) g->fingerprint = fingerprint(g);
    if (!rc) rc = sk_gread_plan(g, epoch, err);
    g->inline_io = 1;
    for (size_t i = 0; i < o->nshards; i++) g->inline_io &= !sk_store_is_remote(o->shards[i].url);
    g->batch_bytes = g->inline_io && g->o.read_ahead > LOCAL_BATCH ? LOCAL_BATCH : g->o.read_ahead;
    /* local shards: a batch's reads in one submission (io_uring; pread
     * where the kernel refuses it) */
    if (!rc && g->inline_io) rc = sk_rbatch_open(&g->rb, err);
    if (!rc && !g->inline_io && pthread_create(&g->th, NULL, io_main, g))
        rc = sk_error_set(err, SK_E_NOMEM, "cannot start the read-ahead thread");
    else if (!rc && !g->inline_io) g->th_ok = 1;
    if (rc) {
        sk_gread_close(g);
        return rc;
    }
    *out = g;
    return SK_OK;
}

void sk_gread_close(sk_gread *g)
{
    if (!g) return;
    if (g->th_ok) {
        drain(g);
        pthread_mutex_lock(&g->mu);
        g->quit = 1;
        pthread_cond_broadcast(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->th, NULL);
    }
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
    for (size_t i = 0; g->sh && i < g->o.nshards; i++) {
        sk_index_close(g->sh[i].ix);
        free(g->sh[i].frames);
    }
    ZSTD_freeDCtx(g->zd);
    sk_rbatch_close(g->rb);
    sk_rmany_close(g->fx);
    free(g->jobs);
    for (size_t i = 0; i < g->nstores; i++) sk_store_close(g->stores[i].st);
    for (int j = 0; j < 2; j++) {
        struct batch *b = &g->b[j];
        free(b->it), free(b->m), free(b->names), free(b->rg), free(b->sorted), free(b->data);
        free(b->zdata);
    }
    sk_order_free(&g->ord);
    sk_mix_free(&g->mix);
    free(g->first);
    free(g->ucounts);
    free(g->ustreams);
    free(g->counts);
    free(g->sh);
    free(g->mv);
    free(g);
}

/* Plans the batch after the current one and gives it to the thread; with
 * local shards only, reads it here and now (a pread from the page cache
 * costs less than handing the batch to another thread and back, which on
 * a loaded machine waits for the scheduler twice). */
static int read_ahead(sk_gread *g, sk_error *err)
{
    if (g->pending || g->k >= g->count) return SK_OK;
    struct batch *b = &g->b[1 - g->cur];
    SK_GUARD(plan(g, b, err));
    if (g->inline_io) {
        b->err.code = 0;
        b->err.msg[0] = 0;
        b->rc = fill(g, b, &b->err);
        g->done[1 - g->cur] = 1;
        g->pending = 1;
        return SK_OK;
    }
    submit(g, 1 - g->cur);
    return SK_OK;
}

int sk_gread_next(sk_gread *g, const sk_reader_sample **out, sk_error *err)
{
    *out = NULL;
    struct batch *b = &g->b[g->cur];
    if (b->next >= b->n) {
        SK_GUARD(read_ahead(g, err));
        if (!g->pending) return SK_OK; /* the share is done */
        wait_done(g, 1 - g->cur);
        g->cur = 1 - g->cur;
        b = &g->b[g->cur];
        if (b->rc) {
            if (err) *err = b->err;
            return b->rc;
        }
        SK_GUARD(read_ahead(g, err));
        if (b->n == 0) return SK_OK;
    }
    const struct item *it = &b->it[b->next++];
    SK_GUARD(sk_grow((void **)&g->mv, &g->mv_cap, it->nmem + 1, sizeof *g->mv, err));
    for (size_t j = 0; j < it->nmem; j++) {
        const struct mem *m = &b->m[it->mem + j];
        g->mv[j] = (sk_reader_member){.ext = b->names + m->ext_off, .ext_len = m->ext_len,
                                      .data = it->p + (m->data_offset - it->off),
                                      .size = m->size};
    }
    const sk_gshard *d = &g->o.shards[it->shard];
    g->view = (sk_reader_sample){.key = b->names + it->key_off, .key_len = it->key_len,
                                 .shard_url = d->url, .shard = it->shard, .ordinal = it->ordinal,
                                 .offset = it->off, .nmembers = it->nmem, .members = g->mv,
                                 .position = it->pos, .dataset = d->dataset};
    g->handed = it->k + 1;
    *out = &g->view;
    return SK_OK;
}

void sk_gread_position(const sk_gread *g, int have_rank_samples, uint64_t rank_samples,
                       sk_reader_position *p)
{
    memset(p, 0, sizeof *p);
    p->magic = SK_READER_POSITION_MAGIC;
    p->version = 1;
    p->epoch = g->ord.epoch;
    p->samples = g->ord.total;
    p->fingerprint = g->fingerprint;
    if (!have_rank_samples)
        rank_samples = g->handed ? sk_split_rank_index(&g->split, g->o.rank, g->o.worker,
                                                       g->handed - 1) + 1 : 0;
    p->consumed = g->base + sk_split_consumed(&g->split, g->o.rank, rank_samples);
}

int sk_gread_seek(sk_gread *g, const sk_reader_position *p, sk_error *err)
{
    SK_FAIL_IF(p->magic != SK_READER_POSITION_MAGIC || p->version != 1, err, SK_E_USAGE,
               "not a reader position (magic %08x, version %u)", p->magic, p->version);
    SK_FAIL_IF(p->fingerprint != g->fingerprint, err, SK_E_MISMATCH,
               "the saved reader position belongs to other datasets or another seed, window or "
               "shuffle (fingerprint %016llx, this reader's %016llx)",
               (unsigned long long)p->fingerprint, (unsigned long long)g->fingerprint);
    SK_GUARD(sk_gread_plan(g, p->epoch, err));
    SK_FAIL_IF(p->samples != g->ord.total || p->consumed > g->ord.total, err, SK_E_MISMATCH,
               "the saved reader position (%llu of %llu samples) does not fit this epoch's %llu",
               (unsigned long long)p->consumed, (unsigned long long)p->samples,
               (unsigned long long)g->ord.total);
    g->base = p->consumed;
    g->split.m = g->ord.total - g->base;
    g->count = sk_split_count(&g->split, g->o.rank, g->o.worker);
    return SK_OK;
}

uint64_t sk_gread_epoch_samples(const sk_gread *g)
{
    return g->ord.total;
}

uint64_t sk_gread_slot_left(const sk_gread *g)
{
    return g->count - g->handed;
}

uint64_t sk_gread_reads(const sk_gread *g)
{
    return __atomic_load_n(&g->reads, __ATOMIC_RELAXED);
}

uint64_t sk_gread_largest_shard(const sk_gread *g)
{
    uint64_t m = 0;
    for (size_t i = 0; i < g->o.nshards; i++) {
        uint64_t b = g->sh[i].size ? g->sh[i].size : g->o.shards[i].bytes;
        if (b > m) m = b;
    }
    return m;
}
