/*
 * reader.c - the sample side of the reader (public API in shardkit.h,
 * "reader"): the shard list, its split across ranks and workers, the
 * per-epoch shard shuffle, tar headers walked in the ring that
 * reader_io.c fills, members grouped into samples by the WebDataset rule,
 * the sample shuffle buffer; the global order's shard list and options
 * (reader_global.c reads it).  Cursors are reader_cursor.c's, saved states
 * reader_state.c's.
 *
 * Determinism is the point of most of this file: the shard order of an
 * epoch depends only on (seed, epoch), a slot's samples on that order, and
 * the shuffle buffer's picks on (seed, epoch, slot) and the sequence of
 * samples entering it.  So a saved state needs only "how many samples were
 * returned" and "where the stream was": the buffer's history is replayed
 * from sample counts without reading data.
 */
#include "reader/reader_int.h"
#include "core/rng.h"
#include "io/io.h"
#include "io/store.h"
#include "format/tar.h"
#include "format/shard_stream.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_BUFFER (4u << 20)
#define DEFAULT_MAX_SAMPLE ((size_t)1 << 30)
#define DEFAULT_READ_AHEAD (8u << 20)
#define TEMP_CACHE_MIN ((uint64_t)256 << 20) /* the private cache's bound, at least */

/* ------------------------------------------------------------- shard list */

static void warnf(sk_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(sk_reader *r, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    if (!sk_vwarnf(r->o.warn, r->o.warn_ctx, fmt, ap)) { /* no callback: stderr */
        fputs("shardkit: warning: ", stderr);
        vfprintf(stderr, fmt, copy);
        fputc('\n', stderr);
    }
    va_end(copy);
    va_end(ap);
}

static int add_shard(sk_reader *r, const char *url, const char *index, int64_t samples,
                     sk_error *err)
{
    SK_GUARD(sk_grow((void **)&r->sh, &r->cap_sh, r->nsh + 1, sizeof *r->sh, err));
    struct shard_ent *s = &r->sh[r->nsh];
    s->url = strdup(url);
    s->index = index ? strdup(index) : NULL;
    s->samples = samples;
    s->bytes = 0;
    s->crc32c = 0, s->crc_known = 0;
    s->dataset = r->url_now;
    if (!s->url || (index && !s->index)) {
        free(s->url);
        free(s->index);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    r->nsh++;
    return SK_OK;
}

/* .tar.gz and the other filters libarchive reads (as index and get do). */
static int is_filtered_name(const char *n)
{
    static const char *const ends[] = {".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz"};
    size_t len = strlen(n);
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t k = strlen(ends[i]);
        if (len > k && !strcmp(n + len - k, ends[i])) return 1;
    }
    return 0;
}

static int is_zstd_name(const char *n)
{
    size_t len = strlen(n);
    return (len > 4 && !strcmp(n + len - 4, ".zst")) || (len > 5 && !strcmp(n + len - 5, ".tzst"));
}

/* One S3 client for the whole list, made when the first s3:// URL needs it
 * (the store says which need one). */
static int need_client(sk_reader *r, const char *url, sk_error *err)
{
    if (r->s3) return SK_OK;
    /* the caller's (sk_reader_options.s3, with all its settings), else one
     * the env makes and frees */
    SK_GUARD(sk_store_env_for(&r->env, url, r->s3_endpoint, err));
    r->s3 = r->env.s3;
    return SK_OK;
}

/* What the user typed, through the one resolver (io/dataset.c): a shard, a
 * brace pattern, a directory, a manifest, an s3:// prefix, '-' or a FIFO. */
static int add_url(sk_reader *r, const char *url, sk_error *err)
{
    SK_GUARD(need_client(r, url, err));
    sk_ds_opts o = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = r->s3, .env = &r->env};
    sk_ds_shard *list = NULL;
    size_t n = 0;
    int rc = sk_ds_resolve(url, &o, &list, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = add_shard(r, list[i].url, list[i].index_url, list[i].known ? (int64_t)list[i].samples : -1,
                       err);
        if (!rc && list[i].known) {
            r->sh[r->nsh - 1].bytes = list[i].bytes;
            r->sh[r->nsh - 1].crc32c = list[i].crc32c;
            r->sh[r->nsh - 1].crc_known = 1;
        }
    }
    sk_ds_free(list, n);
    return rc;
}

/* Takes over st (closing it on failure) to read shard from tar position pos,
 * its ordinal-th sample. */
/* A stream (stdin, a FIFO, a character device) may carry several shards
 * back to back, and so does a RecordIO channel (one shard a record). */
static int is_stream(const sk_reader *r, const char *url)
{
    struct stat sb;
    return r->o.recordio || !strcmp(url, "-") ||
           (!sk_store_is_remote(url) && stat(url, &sb) == 0 && !S_ISREG(sb.st_mode));
}

/* ---------------------------------------------------- positions in shards */

static const char *index_path(sk_reader *r, size_t s, char *buf, size_t cap)
{
    if (r->sh[s].index) return r->sh[s].index;
    snprintf(buf, cap, "%s.idx", r->sh[s].url);
    return buf;
}

/* Where to start reading shard s to get its sample k: through its index
 * when it has one (*skip = 0), else from the start (*skip = k samples to
 * walk past).  *skip_to: a tar position to discard up to (compressed). */
struct start {
    uint64_t raw, tar, skip_to, skip;
    int at_end;
};

static int locate(sk_reader *r, size_t s, uint64_t k, struct start *out, sk_error *err)
{
    memset(out, 0, sizeof *out);
    if (k == 0) return SK_OK;
    char buf[4096];
    const char *ip = index_path(r, s, buf, sizeof buf);
    sk_index *ix = NULL;
    /* RecordIO: an index's offsets are not offsets of the stored bytes */
    if (r->o.recordio || sk_store_is_remote(ip) || access(ip, R_OK) != 0) {
        out->skip = k;
        return SK_OK;
    }
    SK_GUARD(sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, err));
    int rc = SK_OK;
    const sk_index_shard_info *in = sk_index_shard(ix);
    struct stat st;
    if (stat(r->sh[s].url, &st) == 0 && (uint64_t)st.st_size != in->size) {
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (%llu bytes, the index "
                          "says %llu)",
                          r->sh[s].url, ip, (unsigned long long)st.st_size,
                          (unsigned long long)in->size);
        goto out;
    }
    if (k >= sk_index_sample_count(ix)) {
        out->at_end = 1;
        goto out;
    }
    sk_sample_ref ref;
    if ((rc = sk_index_sample(ix, k, &ref, err))) goto out;
    if (!(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP))) {
        out->raw = out->tar = ref.offset;
        goto out;
    }
    /* Compressed: decompress from the frame holding the sample when the
     * seek table says where it starts, else from the beginning. */
    out->skip_to = ref.offset;
    if (ref.stored_offset) {
        sk_range_reader rr;
        if (!sk_range_reader_file(&rr, r->sh[s].url, NULL)) {
            sk_tar_src fs = {.ctx = rr.ctx, .read_at = rr.read_at, .size = rr.size,
                             .name = r->sh[s].url};
            sk_zstd_frame *fr = NULL;
            size_t nf = 0;
            if (!sk_zstd_seek_table(&fs, &fr, &nf, NULL))
                for (size_t i = 0; i < nf; i++)
                    if (fr[i].c_off == ref.stored_offset) {
                        out->raw = fr[i].c_off;
                        out->tar = fr[i].d_off;
                        break;
                    }
            free(fr);
            rr.close(rr.ctx);
        }
    }
out:
    sk_index_close(ix);
    return rc;
}

/* What a local shard file holds, by its first bytes (sk_stream_detect, the
 * one detection every reader uses), whatever its name says: a .tar may be
 * a bzip2 or lzip tar, as index and verify find.  Anything but a regular
 * file (a FIFO must not be opened twice) is left to the stream's sniff. */
static void content_kind(const char *url, int *zstd, int *filtered)
{
    struct stat sb;
    if (sk_store_is_remote(url) || stat(url, &sb) != 0 || !S_ISREG(sb.st_mode)) return;
    int fd = open(url, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return; /* the stream's own open says why */
    unsigned char b[SK_TAR_BLOCK];
    size_t got = 0;
    sk_error e = SK_ERROR_INIT;
    if (!sk_stream_pread(fd, 0, b, sizeof b, &got, url, &e) && got) {
        sk_stream_kind k = sk_stream_detect(b, got);
        *zstd = k == SK_STREAM_ZSTD;
        *filtered = k == SK_STREAM_ARCHIVE;
    }
    close(fd);
}

static int open_stream(sk_reader *r, size_t s, const struct start *at, sk_reader_stream **out,
                       sk_error *err)
{
    const char *url = r->sh[s].url;
    int zstd = is_zstd_name(url), filtered = is_filtered_name(url);
    content_kind(url, &zstd, &filtered);
    /* an object has no first bytes to look at before its GET: its stream
     * looks (not when resuming inside it, where the name must do) */
    int sniff = is_stream(r, url) || (sk_store_is_remote(url) && at->raw == 0 && !zstd);
    sk_reader_stream_opts so = {
        .url = r->sh[s].url,
        .raw_offset = at->raw,
        .tar_base = at->tar,
        .zstd = zstd,
        .filtered = filtered,
        .recordio = r->o.recordio,
        .inline_read = r->o.read_inline,
        .spare = &r->spare,
        .sniff = sniff, /* no name or no bytes to go by */
        .buffer_size = r->o.buffer_size,
        .max_window = r->o.max_sample + 2 * SK_TAR_HEADER_MAX,
        .env = &r->env,
        .cache_dir = r->cache_dir,
        .cache_size = r->o.cache_size,
        .crc32c = r->sh[s].crc32c,
        .crc_known = r->sh[s].crc_known,
    };
    return sk_reader_stream_open(out, &so, err);
}

/* Points c at shard s's sample k (a stream given, or opened here). */
int sk_reader_cursor_at(sk_reader *r, struct cursor *c, size_t s, uint64_t k,
                     sk_reader_stream *given, sk_error *err)
{
    struct start at = {0};
    if (!given) SK_GUARD(locate(r, s, k, &at, err));
    sk_reader_stream *st = given;
    if (!st) SK_GUARD(open_stream(r, s, &at, &st, err));
    sk_reader_cursor_begin(c, st, s, r->sh[s].url, at.tar, k - at.skip, is_stream(r, r->sh[s].url));
    if (at.at_end) {
        c->done = 1;
        c->ordinal = k;
        return SK_OK;
    }
    if (at.skip_to > at.tar) {
        uint64_t reached;
        SK_GUARD(sk_reader_stream_skip_to(st, at.skip_to, &reached, err));
        SK_FAIL_IF(reached < at.skip_to, err, SK_E_CORRUPT,
                   "%s: ends at tar offset %llu, before sample %llu (offset %llu) its index "
                   "names",
                   r->sh[s].url, (unsigned long long)reached, (unsigned long long)k,
                   (unsigned long long)at.skip_to);
        c->tr.pos = at.skip_to;
    }
    for (uint64_t i = 0; i < at.skip; i++) {
        int got;
        SK_GUARD(sk_reader_cursor_next(c, &got, err));
        if (!got) break;
    }
    return SK_OK;
}

/* Samples in shard s: the manifest's count, the index's, or a walk. */
int sk_reader_count_samples(sk_reader *r, size_t s, uint64_t *n, sk_error *err)
{
    if (r->sh[s].samples >= 0) {
        *n = (uint64_t)r->sh[s].samples;
        return SK_OK;
    }
    char buf[4096];
    const char *ip = index_path(r, s, buf, sizeof buf);
    if (!r->o.recordio && !sk_store_is_remote(ip) && access(ip, R_OK) == 0) {
        sk_index *ix;
        SK_GUARD(sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, err));
        *n = sk_index_sample_count(ix);
        sk_index_close(ix);
    } else {
        struct cursor c = {0};
        int rc = sk_reader_cursor_at(r, &c, s, 0, NULL, err), got = 1;
        *n = 0;
        while (!rc && got && !(rc = sk_reader_cursor_next(&c, &got, err))) *n += (uint64_t)got;
        sk_reader_cursor_free(&c);
        SK_GUARD(rc);
    }
    r->sh[s].samples = (int64_t)*n;
    return SK_OK;
}

/* ------------------------------------------------------------ owned copies */

static size_t al16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

struct owned *sk_reader_own(const sk_reader_sample *v, sk_error *err)
{
    size_t need = al16(sizeof(struct owned)) + al16(v->nmembers * sizeof(sk_reader_member)) +
                  al16(v->key_len + 1);
    for (size_t i = 0; i < v->nmembers; i++)
        need += al16(v->members[i].ext_len + 1) + al16((size_t)v->members[i].size);
    unsigned char *p = sk_xmalloc(need, err);
    if (!p) return NULL;
    struct owned *o = (struct owned *)p;
    size_t at = al16(sizeof *o);
    o->s = *v;
    sk_reader_member *m = (sk_reader_member *)(p + at);
    at += al16(v->nmembers * sizeof *m);
    memcpy(p + at, v->key, v->key_len + 1);
    o->s.key = (char *)p + at;
    at += al16(v->key_len + 1);
    for (size_t i = 0; i < v->nmembers; i++) {
        m[i] = v->members[i];
        memcpy(p + at, v->members[i].ext, v->members[i].ext_len + 1);
        m[i].ext = (char *)p + at;
        at += al16(v->members[i].ext_len + 1);
        if (v->members[i].size) memcpy(p + at, v->members[i].data, (size_t)v->members[i].size);
        m[i].data = p + at;
        at += al16((size_t)v->members[i].size);
    }
    o->s.members = m;
    return o;
}

/* ------------------------------------------------------------------ epoch */

void sk_reader_close_streams(sk_reader *r)
{
    sk_reader_cursor_end(&r->cur);
    for (size_t i = 0; i < r->nahead; i++) sk_reader_stream_close(r->ahead[i]);
    r->nahead = 0;
    for (size_t i = 0; i < r->nbuf; i++) free(r->buf[i]);
    r->nbuf = 0;
    free(r->out);
    r->out = NULL;
}

/* The slot's shards for this epoch: the whole list shuffled by (seed,
 * epoch) when asked, then every slots-th from position slot. */
int sk_reader_plan_epoch(sk_reader *r, uint64_t epoch, sk_error *err)
{
    sk_reader_close_streams(r);
    size_t *perm = sk_xmalloc((r->nsh ? r->nsh : 1) * sizeof *perm, err);
    if (!perm) return SK_E_NOMEM;
    for (size_t i = 0; i < r->nsh; i++) perm[i] = i;
    if (r->o.shuffle_shards) {
        uint64_t s = sk_rng_derive(r->o.seed, epoch, 0xffffffffull);
        for (size_t i = r->nsh; i > 1; i--) {
            size_t j = (size_t)(sk_splitmix64(&s) % i), t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
    }
    r->norder = 0;
    for (size_t i = r->slot; i < r->nsh; i += r->slots) perm[r->norder++] = perm[i];
    free(r->order);
    r->order = perm;
    r->epoch = epoch;
    r->pos = 0;
    r->yielded = 0;
    r->rng = sk_rng_derive(r->o.seed, epoch, r->slot);
    r->failed = 0;
    r->opened = 0;
    return SK_OK;
}

/* Opens the stream at order position p, sample k, and the prefetch behind it. */
int sk_reader_reposition(sk_reader *r, size_t p, uint64_t k, sk_error *err)
{
    sk_reader_cursor_end(&r->cur);
    for (size_t i = 0; i < r->nahead; i++) sk_reader_stream_close(r->ahead[i]);
    r->nahead = 0;
    r->pos = p;
    r->opened = 1;
    if (p >= r->norder) return SK_OK;
    SK_GUARD(sk_reader_cursor_at(r, &r->cur, r->order[p], k, NULL, err));
    struct start zero = {0};
    for (size_t q = p + 1; q < r->norder && r->nahead < (size_t)r->o.prefetch; q++)
        SK_GUARD(open_stream(r, r->order[q], &zero, &r->ahead[r->nahead++], err));
    return SK_OK;
}

/* Moves to the next shard of the order: its prefetched stream if any. */
static int advance(sk_reader *r, sk_error *err)
{
    sk_reader_cursor_end(&r->cur);
    r->pos++;
    if (r->pos >= r->norder) return SK_OK;
    if (r->nahead == 0) return sk_reader_reposition(r, r->pos, 0, err);
    sk_reader_stream *st = r->ahead[0];
    memmove(r->ahead, r->ahead + 1, (r->nahead - 1) * sizeof *r->ahead);
    r->nahead--;
    sk_reader_cursor_begin(&r->cur, st, r->order[r->pos], r->sh[r->order[r->pos]].url, 0, 0,
                 is_stream(r, r->sh[r->order[r->pos]].url));
    size_t q = r->pos + 1 + r->nahead;
    struct start zero = {0};
    if (q < r->norder && r->nahead < (size_t)r->o.prefetch)
        SK_GUARD(open_stream(r, r->order[q], &zero, &r->ahead[r->nahead++], err));
    return SK_OK;
}

static int skippable(int rc)
{
    return rc == SK_E_CORRUPT || rc == SK_E_IO || rc == SK_E_INPUT || rc == SK_E_NOTFOUND ||
           rc == SK_E_NET || rc == SK_E_REMOTE || rc == SK_E_MISMATCH;
}

/* A local shard whose size is not the manifest's is cut short (or was
 * replaced): said when it becomes the current shard, before a byte of it
 * is handed out (a prefetched shard's problem is its own, not the one
 * being read). */
static int check_size(sk_reader *r, size_t s, sk_error *err)
{
    struct stat sb;
    struct shard_ent *sh = &r->sh[s];
    if (r->o.recordio || sk_store_is_remote(sh->url) || stat(sh->url, &sb) || !S_ISREG(sb.st_mode))
        return SK_OK;
    SK_FAIL_IF(sh->bytes && (uint64_t)sb.st_size != sh->bytes, err, SK_E_CORRUPT,
               "%s: %llu bytes, its manifest says %llu: the shard is truncated or not the one the "
               "manifest lists", sh->url, (unsigned long long)sb.st_size, (unsigned long long)sh->bytes);
    if (sh->bytes) return SK_OK;
    /* no manifest: its index, when there is one, promises as much (its
     * header alone: O(1)) */
    char buf[4200];
    sk_index *ix;
    const char *ip = index_path(r, s, buf, sizeof buf);
    if (sk_store_is_remote(ip) || sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, NULL)) return SK_OK;
    uint64_t want = sk_index_shard(ix)->size;
    if (sh->samples < 0) sh->samples = (int64_t)sk_index_sample_count(ix);
    sk_index_close(ix);
    SK_FAIL_IF((uint64_t)sb.st_size != want, err, SK_E_CORRUPT,
               "%s: %llu bytes, its index %s says %llu: the shard is truncated or not the one indexed",
               sh->url, (unsigned long long)sb.st_size, ip, (unsigned long long)want);
    return SK_OK;
}

/* The next sample of the slot's stream into *v (the cursor's view), or
 * *v = NULL at the end of the epoch's shards. */
static int pull(sk_reader *r, const sk_reader_sample **v, sk_error *err)
{
    *v = NULL;
    while (r->pos < r->norder) {
        int got = 0, rc = SK_OK;
        sk_error e; /* set by whatever fails; 1 KiB, so not cleared per sample */
        e.code = 0;
        e.msg[0] = 0;
        if (!r->opened) rc = sk_reader_reposition(r, r->pos, 0, &e);
        if (!rc && r->cur.st && !r->cur.size_checked) {
            r->cur.size_checked = 1;
            rc = check_size(r, r->order[r->pos], &e);
        }
        if (!rc && r->cur.st) rc = sk_reader_cursor_next(&r->cur, &got, &e);
        /* the shard ended: as many samples as its manifest or index
         * promised, or it was cut short (a shard shortened at a sample
         * boundary is a valid tar; only the count tells) */
        const struct shard_ent *sh = &r->sh[r->order[r->pos]];
        if (!rc && !got && r->cur.st && sh->samples >= 0 && r->cur.ordinal != (uint64_t)sh->samples)
            rc = sk_error_set(&e, SK_E_CORRUPT, "%s: %llu samples, where its %s promises %lld: the shard "
                              "is truncated or not the one indexed", sh->url,
                              (unsigned long long)r->cur.ordinal, sh->index ? "index" : "manifest",
                              (long long)sh->samples);
        if (rc) {
            if (!r->o.skip_errors || !skippable(rc)) {
                if (err) *err = e;
                return rc;
            }
            warnf(r, "%s; skipping the rest of %s", e.msg, r->sh[r->order[r->pos]].url);
            r->stats.shards_skipped++;
        } else if (got) {
            r->cur.view.position = UINT64_MAX; /* no global order here */
            r->cur.view.dataset = r->sh[r->order[r->pos]].dataset;
            *v = &r->cur.view;
            return SK_OK;
        } else {
            r->stats.shards_done++;
        }
        if (r->cur.st) {
            int cs = sk_reader_stream_cache_state(r->cur.st);
            r->stats.cache_hits += cs == 1;
            r->stats.cache_misses += cs == 0;
            r->stats.ring_grows += sk_reader_stream_grows(r->cur.st);
        }
        SK_GUARD(advance(r, err));
    }
    return SK_OK;
}

/* ------------------------------------------------------------------ public */

static const sk_reader_options reader_defaults = {
    .struct_size = sizeof(sk_reader_options),
    .rank = -1, .world_size = -1, .worker = -1, .num_workers = -1,
    .prefetch = 2, .buffer_size = DEFAULT_BUFFER, .max_sample = DEFAULT_MAX_SAMPLE,
    .shuffle_window = 8, .batch_size = 1, .read_ahead = DEFAULT_READ_AHEAD};

void sk_reader_options_init_sized(sk_reader_options *o, size_t size)
{
    sk_options_init(o, size, &reader_defaults, sizeof reader_defaults);
}

static int env_int(const char *name, int dflt, int *out, sk_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = dflt;
        return SK_OK;
    }
    char *end;
    long x = strtol(v, &end, 10);
    SK_FAIL_IF(*end || x < 0 || x > 1000000, err, SK_E_USAGE,
               "environment variable %s=%s is not a non-negative integer", name, v);
    *out = (int)x;
    return SK_OK;
}

/* The global order over the resolved shard list (reader_global.c). */
static int open_global(sk_reader *r, sk_error *err)
{
    const sk_reader_options *o = &r->o;
    SK_FAIL_IF(o->shuffle_buffer > 1, err, SK_E_USAGE,
               "global_order shuffles samples itself (shuffle_window); shuffle_buffer must be 0");
    SK_FAIL_IF(o->recordio, err, SK_E_USAGE,
               "global_order reads through indexes; a RecordIO channel is read as a stream");
    SK_FAIL_IF(o->batch_size < 0, err, SK_E_USAGE, "batch_size %d is negative", o->batch_size);
    r->gs = calloc(r->nsh, sizeof *r->gs);
    SK_FAIL_IF(!r->gs, err, SK_E_NOMEM, "out of memory");
    int remote = 0;
    for (size_t i = 0; i < r->nsh; i++) {
        SK_FAIL_IF(is_stream(r, r->sh[i].url), err, SK_E_USAGE,
                   "%s: a stream; global_order reads shards at offsets (read it without "
                   "global_order)", r->sh[i].url);
        remote |= sk_store_is_remote(r->sh[i].url);
        r->gs[i] = (sk_gshard){.url = r->sh[i].url, .index = r->sh[i].index,
                               .samples = r->sh[i].samples, .bytes = r->sh[i].bytes,
                               .dataset = r->sh[i].dataset};
    }
    /* The global order reads remote shards at offsets through the env's
     * stores: the disk cache wraps them there (a block each first read,
     * then none), as it wraps the streaming reader's whole-shard reads.
     * Without it a window's samples lie too far apart in their shards for
     * coalesced ranges to help: about one ranged GET a sample. */
    /* No cache named: a private one in $TMPDIR (store_cache.c), removed at close. */
    uint64_t avail = 0;
    if (remote && !r->cache_dir) {
        SK_GUARD(sk_store_cache_temp(&r->cache_dir, &avail, err));
        r->temp_pid = (int)getpid();
        r->env.cache_temp = 1;
    }
    r->env.cache_dir = r->cache_dir;
    r->env.cache_size = o->cache_size;
    /* a window's samples cover its shards: a missing block is fetched with
     * those after it, up to 64 MiB streamed in one GET (moto answered each
     * ranged GET of a 64 MB object in 0.3 s or more whatever its length:
     * 317 GETs of 1 MiB took 92 s, 33 of 16 MiB 16.6 s, against 2.0 s
     * streaming) */
    r->env.cache_ahead = 1;
    sk_gread_opts go = {
        .shards = r->gs, .nshards = r->nsh, .env = &r->env,
        .rank = (uint32_t)o->rank, .ranks = (uint32_t)o->world_size,
        .worker = (uint32_t)o->worker, .workers = (uint32_t)o->num_workers,
        .batch = o->batch_size > 0 ? (uint32_t)o->batch_size : 1,
        .seed = o->seed, .shuffle = o->shuffle_shards,
        .window = o->shuffle_window ? o->shuffle_window : 8,
        .read_ahead = o->read_ahead ? o->read_ahead : DEFAULT_READ_AHEAD,
        .max_gap = o->max_gap ? o->max_gap : remote ? (1u << 20) : (64u << 10),
        .max_sample = o->max_sample,
        .mix = o->proportion || o->repeat || o->choose || o->samples_per_epoch,
        .ndatasets = r->nurls, .proportion = o->proportion, .repeat = o->repeat,
        .choose = o->choose, .samples_per_epoch = o->samples_per_epoch,
    };
    SK_GUARD(sk_gread_open(&r->g, &go, o->epoch, err));
    /* the private cache's bound: two windows of the largest shards (the
     * window being read and the next), so no block is fetched twice,
     * within 90% of the free space there */
    if (r->temp_pid && !o->cache_size) {
        uint64_t want = 2 * (uint64_t)go.window * sk_gread_largest_shard(r->g);
        if (want < TEMP_CACHE_MIN) want = TEMP_CACHE_MIN;
        if (avail && want > avail / 10 * 9) want = avail / 10 * 9;
        r->env.cache_size = want;
    }
    return SK_OK;
}

int sk_reader_open(sk_reader **out, const char *const *urls, size_t n,
                   const sk_reader_options *opts, sk_error *err)
{
    *out = NULL;
    sk_reader *r = calloc(1, sizeof *r);
    SK_FAIL_IF(!r, err, SK_E_NOMEM, "out of memory");
    sk_store_env_init(&r->env, NULL);
    int orc = sk_options_take(&r->o, sizeof r->o, opts, &reader_defaults, "sk_reader_options", err);
    sk_reader_options *o = &r->o;
    r->env.s3 = o->s3; /* the caller's: a plain one serves http(s):// with its settings */
    int rc = orc;
    if (!rc && o->rank < 0) rc = env_int("RANK", 0, &o->rank, err);
    if (!rc && o->world_size < 0) rc = env_int("WORLD_SIZE", 1, &o->world_size, err);
    if (!rc && o->worker < 0) rc = env_int("WORKER", 0, &o->worker, err);
    if (!rc && o->num_workers < 0) rc = env_int("NUM_WORKERS", 1, &o->num_workers, err);
    if (!rc && (o->world_size < 1 || o->rank >= o->world_size))
        rc = sk_error_set(err, SK_E_USAGE, "rank %d is not below world_size %d", o->rank,
                          o->world_size);
    if (!rc && (o->num_workers < 1 || o->worker >= o->num_workers))
        rc = sk_error_set(err, SK_E_USAGE, "worker %d is not below num_workers %d", o->worker,
                          o->num_workers);
    if (!rc && (o->prefetch < 0 || o->prefetch > MAX_PREFETCH))
        rc = sk_error_set(err, SK_E_USAGE, "prefetch %d is outside 0..%d", o->prefetch,
                          MAX_PREFETCH);
    if (!o->buffer_size) o->buffer_size = DEFAULT_BUFFER;
    if (o->buffer_size < 64 * 1024) o->buffer_size = 64 * 1024;
    if (!o->max_sample) o->max_sample = DEFAULT_MAX_SAMPLE;
    if (!rc && o->cache_dir && !(r->cache_dir = strdup(o->cache_dir)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    o->cache_dir = r->cache_dir;
    r->slots = (uint32_t)(o->world_size * o->num_workers);
    r->slot = (uint32_t)(o->rank * o->num_workers + o->worker);
    if (!rc && o->s3_endpoint && !(r->s3_endpoint = strdup(o->s3_endpoint)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    o->s3_endpoint = r->s3_endpoint;
    r->nurls = n;
    for (size_t i = 0; !rc && i < n; i++) {
        r->url_now = i;
        rc = add_url(r, urls[i], err);
    }
    if (!rc && r->nsh == 0) rc = sk_error_set(err, SK_E_USAGE, "no shards to read");
    for (size_t i = 0; !rc && !r->s3 && i < r->nsh; i++)
        rc = need_client(r, r->sh[i].url, err);
    if (!rc) rc = sk_reader_plan_epoch(r, o->epoch, err);
    if (!rc && o->global_order) rc = open_global(r, err);
    if (rc) {
        sk_reader_close(r);
        return rc;
    }
    *out = r;
    return SK_OK;
}

void sk_reader_close(sk_reader *r)
{
    if (!r) return;
    sk_gread_close(r->g);
    free(r->gs);
    sk_reader_close_streams(r); /* a holder writes what it holds here */
    if (r->cur.hold) r->holder.detach(r->holder.ctx);
    r->cur.hold = NULL;
    sk_reader_cursor_free(&r->cur);
    sk_reader_spare_free(&r->spare);
    for (size_t i = 0; i < r->nsh; i++) {
        free(r->sh[i].url);
        free(r->sh[i].index);
    }
    free(r->sh);
    free(r->order);
    free(r->buf);
    /* made by this process (not a parent's, inherited over fork) */
    if (r->temp_pid && r->temp_pid == (int)getpid()) sk_store_cache_temp_remove(r->cache_dir);
    free(r->cache_dir);
    free(r->s3_endpoint);
    sk_store_env_release(&r->env); /* (its clients: the streams are closed) */
    free(r);
}

static int fail(sk_reader *r, int rc, sk_error *err)
{
    r->failed = rc;
    if (err) r->ferr = *err;
    else sk_error_set(&r->ferr, rc, "%s", sk_code_name(rc));
    return rc;
}

int sk_reader_next(sk_reader *r, const sk_reader_sample **out, sk_error *err)
{
    *out = NULL;
    if (r->failed) {
        if (err) *err = r->ferr;
        return r->failed;
    }
    const sk_reader_sample *v;
    int rc;
    if (r->g) {
        if ((rc = sk_gread_next(r->g, out, err))) return fail(r, rc, err);
    } else if (r->o.shuffle_buffer <= 1) {
        if ((rc = pull(r, &v, err))) return fail(r, rc, err);
        *out = v;
    } else {
        free(r->out);
        r->out = NULL;
        if (!r->buf && !(r->buf = sk_xmalloc(r->o.shuffle_buffer * sizeof *r->buf, err)))
            return fail(r, SK_E_NOMEM, err);
        while (r->nbuf < r->o.shuffle_buffer && r->pos < r->norder) {
            if ((rc = pull(r, &v, err))) return fail(r, rc, err);
            if (!v) break;
            struct owned *o = sk_reader_own(v, err);
            if (!o) return fail(r, SK_E_NOMEM, err);
            r->buf[r->nbuf++] = o;
        }
        if (r->nbuf == 0) return SK_OK;
        size_t j = (size_t)(sk_splitmix64(&r->rng) % r->nbuf);
        r->out = r->buf[j];
        r->buf[j] = r->buf[--r->nbuf];
        *out = &r->out->s;
    }
    if (*out) {
        r->yielded++;
        r->stats.samples++;
        for (size_t i = 0; i < (*out)->nmembers; i++) r->stats.bytes += (*out)->members[i].size;
    }
    return SK_OK;
}

int sk_reader_raw_of(const sk_reader *r, const sk_reader_sample *s, sk_reader_raw *raw)
{
    const struct cursor *c = &r->cur;
    if (s != &c->view || !c->view_ok || !c->st || c->nm != s->nmembers) return 0;
    raw->st = c->st;
    raw->p = c->raw;
    raw->pos = c->m[0].hdr;
    raw->len = c->raw_len;
    raw->m = c->m;
    return 1;
}

void sk_reader_set_holder(sk_reader *r, const sk_reader_holder *h)
{
    if (h) r->holder = *h;
    r->cur.hold = h ? &r->holder : NULL;
}

int sk_reader_start_epoch(sk_reader *r, uint64_t epoch, sk_error *err)
{
    SK_GUARD(sk_reader_plan_epoch(r, epoch, err));
    return r->g ? sk_gread_plan(r->g, epoch, err) : SK_OK;
}

size_t sk_reader_shard_count(const sk_reader *r)
{
    return r->nsh;
}

size_t sk_reader_slot_shards(const sk_reader *r)
{
    return r->norder;
}

const char *sk_reader_shard_url(const sk_reader *r, size_t i)
{
    return i < r->nsh ? r->sh[i].url : NULL;
}

void sk_reader_get_stats(const sk_reader *r, sk_reader_stats *st)
{
    *st = r->stats;
}
