/*
 * lookup.c - random access to one sample of a dataset through the sidecar
 * indexes: find by key or by global ordinal, then read a member with one
 * ranged read and verify it against its CRC32C.  Indexes are mapped, never
 * parsed; each is opened when first needed, so a lookup by ordinal in a
 * dataset with a manifest touches one index and one shard, and so does a
 * lookup by key when the manifest gives each shard's key range (sorted
 * datasets): a binary search over the ranges names the one shard whose
 * index can hold the key.  Without ranges (shuffled datasets, older
 * manifests, a directory of shards) every index is searched in turn.
 *
 * Shard bytes come through an sk_range_reader: pread for a local file,
 * one ranged GET per read for a remote one (s3://, http(s)://: a view of
 * its store, io/store.h; its index is fetched whole, once, and kept).  Before the first read from a shard, its size and
 * first-block CRC32C are compared with the index header, so an index never
 * serves offsets into another file; except for a plain remote shard listed
 * by a manifest, where each member's GET brings its own tar header, checked
 * against the index instead (read_remote_member): one request per member.
 *
 * Threads: every lookup and read may run at once on one dataset.  What is
 * opened lazily (an index, a shard's range reader, a .tar.zst seek table,
 * the sample counts) is opened under the dataset's mutex and published
 * through a flag stored with release order; a reader that loads the flag
 * (acquire) and sees it set uses the object without the lock, so a warm
 * dataset takes no lock at all.  Everything else a lookup touches (index
 * maps, the shard table) is read-only once opened.
 */
#include "core/internal.h"
#include "io/io.h"
#include "io/store.h"
#include "format/format.h"
#include "format/tar.h"

#include "format/libarchive.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ range reader */

static int default_open(void *ctx, sk_range_reader *rr, const char *url, sk_error *err)
{
    (void)ctx;
    return sk_range_reader_file(rr, url, err);
}

/* A remote shard (s3://, http(s)://) as a range reader: a view of its
 * store (io/store.h), one ranged GET per read.  Its size is known (size !=
 * UINT64_MAX: what the manifest says, which the index confirmed) or asked
 * for with a HEAD. */
static int remote_range_open(sk_store_env *env, sk_range_reader *rr, const char *url,
                             uint64_t size, sk_error *err)
{
    sk_store *st;
    sk_store_stat sst = {.size = size};
    memset(rr, 0, sizeof *rr);
    SK_GUARD(sk_store_open(&st, url, env, err));
    st->size_hint = size;
    if (size == UINT64_MAX) {
        int rc = st->ops->stat(st, &sst, err);
        if (rc) {
            sk_store_close(st);
            return rc;
        }
    }
    sk_store_range_view(st, sst.size, rr);
    return SK_OK;
}

/* ----------------------------------------------------------------- dataset */

struct shard {
    char *path, *index_path;
    uint64_t first_ordinal, samples, bytes;
    uint32_t crc;
    int known;         /* first_ordinal/samples known (manifest or opened) */
    int from_manifest; /* bytes/crc come from a manifest */
    /* the flags below are set once, under the dataset's mutex, with
     * release order, after what they announce is complete (see the top) */
    sk_index *ix;
    int ix_ok;         /* ix is open and agrees with the manifest */
    sk_range_reader rr;
    int rr_open;       /* rr is open (and, but for read_remote_member's shards, proven) */
    sk_zstd_frame *frames;
    size_t nframes;
    int frames_loaded;
    sk_key_range keys; /* the manifest's claim (first == NULL: none) */
    int keys_checked;  /* the claim equals the index's first and last key */
};

#define LOAD(flag) __atomic_load_n(&(flag), __ATOMIC_ACQUIRE)
#define PUBLISH(flag) __atomic_store_n(&(flag), 1, __ATOMIC_RELEASE)

struct sk_dataset {
    struct shard *s;
    size_t n, cap;
    unsigned flags;
    pthread_mutex_t mu; /* taken only to open something lazily */
    int counted;        /* every shard's first_ordinal and samples known */
    sk_s3 *s3; /* the caller's, for s3:// manifests, indexes and shards */
    sk_store_env env; /* remote shards' and indexes' stores (s3, the HTTP client) */
    sk_range_open_fn range_open; /* local shards (NULL: default_open) */
    void *range_open_ctx;
    size_t *ranged; /* shards with a key range, in key order; NULL: search every index */
    size_t nranged;
};

void sk_dataset_set_range_open(sk_dataset *ds, sk_range_open_fn open, void *ctx)
{
    ds->range_open = open;
    ds->range_open_ctx = ctx;
}

void sk_dataset_set_cache(sk_dataset *ds, const char *dir, uint64_t bytes)
{
    ds->env.cache_dir = dir; /* the stores opened from now on (io/store_open.c) */
    ds->env.cache_size = bytes;
}

/* Takes path and index_path (malloc'd; index_path NULL: PATH.idx), even
 * on failure: the resolver's strings are not copied again. */
static int add_shard(sk_dataset *ds, char *path, char *index_path, sk_error *err)
{
    if (sk_grow((void **)&ds->s, &ds->cap, ds->n + 1, sizeof *ds->s, err)) {
        free(path), free(index_path);
        return SK_E_NOMEM;
    }
    struct shard *s = &ds->s[ds->n];
    memset(s, 0, sizeof *s);
    s->path = path;
    if (index_path) s->index_path = index_path;
    else if (asprintf(&s->index_path, "%s.idx", path) < 0) s->index_path = NULL;
    if (!s->path || !s->index_path) {
        free(s->path);
        free(s->index_path);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    ds->n++;
    return SK_OK;
}

/* A shard of a listed directory: a tar, compressed or not, with an index. */
static int keep_indexed_shard(const char *name, const char *path)
{
    char *ip;
    if (!sk_is_shard_name(name) || asprintf(&ip, "%s.idx", path) < 0) return 0;
    int has = access(ip, F_OK) == 0;
    free(ip);
    return has;
}

void sk_dataset_close(sk_dataset *ds)
{
    if (!ds) return;
    for (size_t i = 0; i < ds->n; i++) {
        struct shard *s = &ds->s[i];
        free(s->path);
        free(s->index_path);
        sk_index_close(s->ix);
        if (s->rr_open && s->rr.close) s->rr.close(s->rr.ctx);
        free(s->frames);
        free(s->keys.first);
        free(s->keys.last);
    }
    free(ds->ranged);
    free(ds->s);
    sk_store_env_release(&ds->env);
    pthread_mutex_destroy(&ds->mu);
    free(ds);
}

/* Key ranges are used only when the manifest's are ordered (each shard's
 * keys above the last shard's); otherwise, whatever the reason (a shuffled
 * dataset's overlap, or a manifest that lies), they are ignored and keys
 * are searched for index by index, as without them. */
static int use_key_ranges(sk_dataset *ds, sk_error *err)
{
    if (!ds->n) return SK_OK;
    sk_key_range *r = sk_xmalloc(ds->n * sizeof *r, err);
    uint64_t *samples = sk_xmalloc(ds->n * sizeof *samples, err);
    int rc = r && samples ? SK_OK : SK_E_NOMEM;
    for (size_t i = 0; !rc && i < ds->n; i++) r[i] = ds->s[i].keys, samples[i] = ds->s[i].samples;
    if (!rc && sk_key_ranges_ordered(r, samples, ds->n)) {
        if (!(ds->ranged = sk_xmalloc(ds->n * sizeof *ds->ranged, err))) rc = SK_E_NOMEM;
        for (size_t i = 0; !rc && i < ds->n; i++)
            if (ds->s[i].keys.first) ds->ranged[ds->nranged++] = i;
    }
    free(r);
    free(samples);
    return rc;
}

int sk_dataset_open(sk_dataset **out, const char *path, unsigned flags, sk_error *err)
{
    return sk_dataset_open_s3(out, path, NULL, flags, err);
}

int sk_dataset_open_s3(sk_dataset **out, const char *path, sk_s3 *s3, unsigned flags,
                       sk_error *err)
{
    *out = NULL;
    sk_loc_kind kind;
    SK_GUARD(sk_store_kind(path, &kind, err)); /* an unknown scheme, by name */
    int remote = kind != SK_LOC_LOCAL;
    SK_FAIL_IF(kind == SK_LOC_S3 && !s3, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client", path);
    struct stat st = {0};
    SK_FAIL_IF(!remote && !strchr(path, '{') && stat(path, &st) != 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
               "%s: %s", path, strerror(errno));
    sk_dataset *ds = calloc(1, sizeof *ds);
    SK_FAIL_IF(!ds, err, SK_E_NOMEM, "out of memory");
    ds->flags = flags;
    ds->s3 = s3;
    sk_store_env_init(&ds->env, s3);
    pthread_mutex_init(&ds->mu, NULL);
    /* the one resolver (io/dataset.c): an s3:// prefix means its manifest
     * (a listing would not say which objects are shards of one dataset) */
    sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX | SK_DS_LOOKUP, .s3 = s3, .env = &ds->env,
                     .keep = keep_indexed_shard, .dir_wants = "no shards with an index (.idx) in it"};
    sk_ds_shard *list = NULL;
    size_t n = 0;
    int rc = sk_ds_resolve(path, &ro, &list, &n, err);
    int counted = 1;
    for (size_t i = 0; !rc && i < n; i++) {
        const sk_ds_shard *d = &list[i];
        rc = add_shard(ds, list[i].url, list[i].index_url, err); /* taken over */
        list[i].url = list[i].index_url = NULL;
        if (!rc && d->known) {
            struct shard *sh = &ds->s[ds->n - 1];
            sh->first_ordinal = d->first_ordinal;
            sh->samples = d->samples;
            sh->bytes = d->bytes;
            sh->crc = d->crc32c;
            sh->known = sh->from_manifest = 1;
            sh->keys = d->keys; /* taken over */
            list[i].keys = (sk_key_range){0};
        }
        counted &= d->known;
    }
    sk_ds_free(list, n);
    if (!rc && counted) ds->counted = 1;
    if (!rc && counted) rc = use_key_ranges(ds, err);
    if (rc) {
        sk_dataset_close(ds);
        return rc;
    }
    *out = ds;
    return SK_OK;
}

/* Opens the shard's index; the caller holds ds->mu. */
static int open_index(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (s->ix_ok) return SK_OK;
    if (sk_store_is_remote(s->index_path)) {
        sk_buf blob = {0};
        int rc = sk_store_load(s->index_path, &ds->env, SK_S3_INDEX_MAX, "shard index", &blob, err);
        if (rc) return sk_buf_free(&blob), rc;
        SK_GUARD(sk_index_adopt(&s->ix, blob.p, blob.len, s->index_path, err)); /* keeps the bytes */
    } else {
        SK_GUARD(sk_index_open(&s->ix, s->index_path, ds->flags, err));
    }
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    if (s->from_manifest) {
        int bad = in->size != s->bytes || sk_index_sample_count(s->ix) != s->samples ||
                  (!(in->flags & SK_INDEX_NO_CRC) && s->crc && in->crc32c != s->crc);
        if (bad) {
            int rc = sk_error_set(err, SK_E_MISMATCH,
                                  "%s: index disagrees with the manifest (index: %llu bytes, "
                                  "%llu samples, crc32c %08x; manifest: %llu bytes, %llu "
                                  "samples, crc32c %08x)",
                                  s->index_path, (unsigned long long)in->size,
                                  (unsigned long long)sk_index_sample_count(s->ix), in->crc32c,
                                  (unsigned long long)s->bytes, (unsigned long long)s->samples,
                                  s->crc);
            sk_index_close(s->ix);
            s->ix = NULL;
            return rc;
        }
    }
    PUBLISH(s->ix_ok);
    return SK_OK;
}

static int ensure_index(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (LOAD(s->ix_ok)) return SK_OK;
    pthread_mutex_lock(&ds->mu);
    int rc = open_index(ds, s, err);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

/* Opens the shard and proves the index was built from it; the caller
 * holds ds->mu. */
static int open_shard(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (s->rr_open) return SK_OK;
    SK_GUARD(sk_store_is_remote(s->path) ? remote_range_open(&ds->env, &s->rr, s->path, UINT64_MAX, err)
                                   : (ds->range_open ? ds->range_open : default_open)(
                                         ds->range_open_ctx, &s->rr, s->path, err));
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    unsigned char b[SK_TAR_BLOCK];
    size_t got = 0;
    int rc = SK_OK;
    /* A shard shorter than its index whose first block is the index's was
     * cut short (an interrupted copy): it is opened, and what lies before
     * the cut is served; a read past it is an error (sk_dataset_read_at). */
    if (s->rr.size > in->size || (s->rr.size < in->size && s->rr.size < SK_TAR_BLOCK))
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (shard is %llu bytes, the "
                          "index was built from %llu)",
                          s->path, s->index_path, (unsigned long long)s->rr.size,
                          (unsigned long long)in->size);
    else if (!(rc = s->rr.read_at(s->rr.ctx, 0, b, sizeof b, &got, err)) &&
             sk_crc32c(0, b, got) != in->first_block_crc32c)
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (first-block CRC32C "
                          "differs)",
                          s->path, s->index_path);
    if (rc) {
        if (s->rr.close) s->rr.close(s->rr.ctx);
        memset(&s->rr, 0, sizeof s->rr);
        return rc;
    }
    PUBLISH(s->rr_open);
    return SK_OK;
}

static int ensure_shard(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (LOAD(s->rr_open)) return SK_OK;
    pthread_mutex_lock(&ds->mu);
    int rc = open_shard(ds, s, err);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

int sk_dataset_samples(sk_dataset *ds, uint64_t *count, sk_error *err)
{
    if (!LOAD(ds->counted)) {
        int rc = SK_OK;
        pthread_mutex_lock(&ds->mu);
        uint64_t total = 0;
        for (size_t i = 0; !ds->counted && !rc && i < ds->n; i++) {
            if ((rc = open_index(ds, &ds->s[i], err))) break;
            ds->s[i].first_ordinal = total;
            ds->s[i].samples = sk_index_sample_count(ds->s[i].ix);
            ds->s[i].known = 1;
            total += ds->s[i].samples;
        }
        if (!rc) PUBLISH(ds->counted);
        pthread_mutex_unlock(&ds->mu);
        if (rc) return rc;
    }
    *count = ds->n ? ds->s[ds->n - 1].first_ordinal + ds->s[ds->n - 1].samples : 0;
    return SK_OK;
}

static int hit_at(sk_dataset *ds, size_t i, uint64_t local, sk_hit *out, sk_error *err)
{
    struct shard *s = &ds->s[i];
    SK_GUARD(sk_index_sample(s->ix, local, &out->sample, err));
    out->shard = i;
    out->shard_path = s->path;
    out->global_ordinal = s->first_ordinal + local;
    return SK_OK;
}

/* The manifest's key range for a shard is a claim about its index: it
 * must name the index's own first and last key, else the manifest is not
 * this dataset's (or lies) and no answer drawn from it is given. */
static int check_key_range(struct shard *s, sk_error *err)
{
    const char *f, *l;
    size_t fl, ll;
    if (LOAD(s->keys_checked)) return SK_OK; /* a pure check: racing threads agree */
    SK_GUARD(sk_index_key_bounds(s->ix, &f, &fl, &l, &ll, err));
    SK_FAIL_IF(sk_key_cmp(f, fl, s->keys.first, s->keys.first_len) ||
                   sk_key_cmp(l, ll, s->keys.last, s->keys.last_len),
               err, SK_E_MISMATCH,
               "%s: index disagrees with the manifest's key range (index: '%.*s' to '%.*s'; "
               "manifest: '%.*s' to '%.*s')",
               s->index_path, (int)(fl > 200 ? 200 : fl), f, (int)(ll > 200 ? 200 : ll), l,
               (int)(s->keys.first_len > 200 ? 200 : s->keys.first_len), s->keys.first,
               (int)(s->keys.last_len > 200 ? 200 : s->keys.last_len), s->keys.last);
    PUBLISH(s->keys_checked);
    return SK_OK;
}

static int not_found(const sk_dataset *ds, const char *key, size_t key_len, sk_error *err)
{
    return sk_error_set(err, SK_E_NOTFOUND, "no sample with key '%.*s' in %zu shard(s)",
                        (int)(key_len > 200 ? 200 : key_len), key, ds->n);
}

/* Sorted datasets: the one shard whose range can hold the key, by a binary
 * search over the ranges; its index alone is opened and searched. */
static int find_in_ranges(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out,
                          sk_error *err)
{
    size_t lo = 0, hi = ds->nranged; /* first range starting after key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sk_key_range *r = &ds->s[ds->ranged[mid]].keys;
        if (sk_key_cmp(r->first, r->first_len, key, key_len) <= 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return not_found(ds, key, key_len, err);
    size_t i = ds->ranged[lo - 1];
    struct shard *s = &ds->s[i];
    if (sk_key_cmp(key, key_len, s->keys.last, s->keys.last_len) > 0)
        return not_found(ds, key, key_len, err);
    uint64_t ord;
    SK_GUARD(ensure_index(ds, s, err));
    SK_GUARD(check_key_range(s, err));
    int rc = sk_index_find(s->ix, key, key_len, &ord, NULL);
    if (rc == SK_E_NOTFOUND) return not_found(ds, key, key_len, err);
    if (rc) return sk_index_find(s->ix, key, key_len, &ord, err);
    return hit_at(ds, i, ord, out, err);
}

int sk_dataset_find(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out, sk_error *err)
{
    if (ds->ranged) return find_in_ranges(ds, key, key_len, out, err);
    for (size_t i = 0; i < ds->n; i++) {
        struct shard *s = &ds->s[i];
        uint64_t ord;
        SK_GUARD(ensure_index(ds, s, err));
        int rc = sk_index_find(s->ix, key, key_len, &ord, NULL);
        if (rc == SK_E_NOTFOUND) continue;
        if (rc) return sk_index_find(s->ix, key, key_len, &ord, err);
        if (!LOAD(ds->counted)) {
            uint64_t n;
            SK_GUARD(sk_dataset_samples(ds, &n, err));
        }
        return hit_at(ds, i, ord, out, err);
    }
    return not_found(ds, key, key_len, err);
}

int sk_dataset_at(sk_dataset *ds, uint64_t ordinal, sk_hit *out, sk_error *err)
{
    uint64_t total;
    SK_GUARD(sk_dataset_samples(ds, &total, err));
    SK_FAIL_IF(ordinal >= total, err, SK_E_NOTFOUND, "no sample #%llu (the dataset holds %llu)",
               (unsigned long long)ordinal, (unsigned long long)total);
    size_t lo = 0, hi = ds->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (ds->s[mid].first_ordinal <= ordinal) lo = mid;
        else hi = mid;
    }
    while (lo + 1 < ds->n && ds->s[lo].samples == 0) lo++; /* empty shards share ordinals */
    SK_GUARD(ensure_index(ds, &ds->s[lo], err));
    return hit_at(ds, lo, ordinal - ds->s[lo].first_ordinal, out, err);
}

int sk_dataset_member(sk_dataset *ds, const sk_hit *h, uint32_t i, sk_member_ref *out,
                      sk_error *err)
{
    SK_FAIL_IF(h->shard >= ds->n || i >= h->sample.member_count, err, SK_E_USAGE,
               "member %u of a sample with %u", i, h->sample.member_count);
    struct shard *s = &ds->s[h->shard];
    SK_GUARD(ensure_index(ds, s, err));
    return sk_index_member(s->ix, (uint64_t)h->sample.first_member + i, out, err);
}

/* ---------------------------------------------------- compressed shards */

struct cread { /* sequential reads of the stored bytes through the range reader */
    struct shard *s;
    uint64_t pos, end;
    unsigned char *in;
    sk_error *err;
    int rc;
};

#define CBUF (256u << 10)

static int cread(void *ctx, void *dst, size_t cap, size_t *got, sk_error *err)
{
    struct cread *c = ctx;
    size_t want = c->end - c->pos < cap ? (size_t)(c->end - c->pos) : cap;
    *got = 0;
    if (want) SK_GUARD(c->s->rr.read_at(c->s->rr.ctx, c->pos, dst, want, got, err));
    c->pos += *got;
    return SK_OK;
}

static la_ssize_t cread_cb(struct archive *a, void *ctx, const void **out)
{
    struct cread *c = ctx;
    size_t got = 0;
    (void)a;
    if ((c->rc = cread(c, c->in, CBUF, &got, c->err))) return -1;
    *out = c->in;
    return (la_ssize_t)got;
}

/* Reads n bytes at tar position off of a compressed shard: decompress from
 * the stored range's start (d_start in the tar stream), discarding up to off. */
static int read_compressed(sk_dataset *ds, struct shard *s, const sk_sample_ref *sr, uint64_t off,
                           void *buf, size_t n, sk_error *err)
{
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    uint64_t d = 0;
    struct cread c = {.s = s, .pos = sr->stored_offset, .end = sr->stored_offset + sr->stored_span,
                      .err = err};
    SK_FAIL_IF(c.end > s->rr.size || c.end < c.pos, err, SK_E_CORRUPT,
               "%s: index points past the end of the shard", s->index_path);
    if ((in->flags & SK_INDEX_ZSTD) && sr->stored_offset != 0) {
        if (!LOAD(s->frames_loaded)) {
            sk_tar_src f = {.ctx = s->rr.ctx, .read_at = s->rr.read_at, .size = s->rr.size,
                            .name = s->path};
            int rc = SK_OK;
            pthread_mutex_lock(&ds->mu);
            if (!s->frames_loaded && !(rc = sk_zstd_seek_table(&f, &s->frames, &s->nframes, err)))
                PUBLISH(s->frames_loaded);
            pthread_mutex_unlock(&ds->mu);
            SK_GUARD(rc);
        }
        size_t lo = 0, hi = s->nframes;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->frames[mid].c_off < sr->stored_offset) lo = mid + 1;
            else hi = mid;
        }
        SK_FAIL_IF(lo == s->nframes || s->frames[lo].c_off != sr->stored_offset, err,
                   SK_E_CORRUPT, "%s: index stored offset %llu is not a zstd frame start",
                   s->index_path, (unsigned long long)sr->stored_offset);
        d = s->frames[lo].d_off;
    }
    unsigned char *out = sk_xmalloc(CBUF, err);
    int rc = !out ? SK_E_NOMEM : SK_OK;
    size_t copied = 0;
    struct archive *a = NULL;
    sk_zdec z = {0};
    int zstd = (in->flags & SK_INDEX_ZSTD) != 0;
    if (!rc && zstd) {
        rc = sk_zdec_init(&z, s->path, sr->stored_offset, err);
    } else if (!rc && !(c.in = sk_xmalloc(CBUF, err))) {
        rc = SK_E_NOMEM;
    } else if (!rc) {
        struct archive_entry *ae;
        if (!(rc = sk_la_new(&a, err))) {
            sk_la.read_support_filter_all(a);
            sk_la.read_support_format_raw(a);
            if (sk_la.read_open(a, &c, NULL, cread_cb, NULL) != ARCHIVE_OK ||
                sk_la.read_next_header(a, &ae) != ARCHIVE_OK)
                rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", s->path,
                                                sk_la.error_string(a));
        }
    }
    while (!rc && copied < n) {
        size_t got = 0;
        if (zstd) {
            if ((rc = sk_zdec_read(&z, cread, &c, out, CBUF, &got, err)) || got == 0) break;
        } else {
            la_ssize_t k = sk_la.read_data(a, out, CBUF);
            if (k < 0) {
                rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", s->path,
                                                sk_la.error_string(a));
                break;
            }
            if (k == 0) break;
            got = (size_t)k;
        }
        /* out holds tar bytes [d, d+got) */
        uint64_t want = off + copied;
        if (want < d + got) {
            size_t from = (size_t)(want - d), k = got - from;
            if (k > n - copied) k = n - copied;
            memcpy((unsigned char *)buf + copied, out + from, k);
            copied += k;
        }
        d += got;
    }
    if (!rc && copied < n)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: stream ends before tar offset %llu (truncated?)",
                          s->path, (unsigned long long)(off + n));
    if (a) sk_la.read_free(a);
    sk_zdec_free(&z);
    free(out);
    free(c.in);
    return rc;
}

/* ------------------------------------------------- one GET per sample */

struct mem_src {
    const unsigned char *p;
    uint64_t off, len; /* p holds stream bytes [off, off + len) */
};

static int mem_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    const struct mem_src *m = ctx;
    (void)err;
    *got = 0;
    if (pos < m->off || pos >= m->off + m->len) return SK_OK;
    uint64_t left = m->off + m->len - pos;
    *got = n < left ? n : (size_t)left;
    memcpy(buf, m->p + (pos - m->off), *got);
    return SK_OK;
}

/* A remote plain shard whose size the manifest gave (and its index
 * confirmed): a member is one ranged GET of its tar header(s) and data, and
 * the header must name the sample's key with the size and data offset the
 * index gives: the proof, for this member, that the index was built from
 * this object, in the same request as the data (instead of a HEAD and a
 * GET of the first block before the first read).  Its CRC32C is checked
 * by the caller.  Nothing of the dataset changes but the shard's range
 * reader on its first read, so reads from an opened shard may run at once
 * (the Python Dataset relies on it). */
static int read_remote_member(sk_dataset *ds, struct shard *s, const sk_sample_ref *sr,
                          const sk_member_ref *m, void *buf, sk_error *err)
{
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    uint64_t off = m->data_offset - m->header_len, len = m->header_len + m->size;
    SK_FAIL_IF(m->header_len > m->data_offset || m->data_offset > in->size ||
                   m->size > in->size - m->data_offset || len > SIZE_MAX,
               err, SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
               s->index_path, (unsigned long long)m->data_offset);
    if (!LOAD(s->rr_open)) {
        int rc = SK_OK;
        pthread_mutex_lock(&ds->mu);
        if (!s->rr_open && !(rc = remote_range_open(&ds->env, &s->rr, s->path, in->size, err)))
            PUBLISH(s->rr_open);
        pthread_mutex_unlock(&ds->mu);
        SK_GUARD(rc);
    }
    unsigned char *b = sk_xmalloc(len ? (size_t)len : 1, err);
    if (!b) return SK_E_NOMEM;
    size_t got = 0;
    int rc = s->rr.read_at(s->rr.ctx, off, b, (size_t)len, &got, err);
    if (!rc && got < len)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                          (unsigned long long)(off + got));
    struct mem_src ms = {b, off, got};
    sk_tar_src src = {.ctx = &ms, .read_at = mem_read_at, .size = off + got, .name = s->path};
    sk_tar_reader tr;
    sk_tar_entry e;
    sk_tar_reader_init(&tr, &src, 0);
    tr.pos = off;
    if (!rc && !(rc = sk_tar_next(&tr, &e, err)) &&
        (e.end || e.data_offset != m->data_offset || e.size != m->size ||
         e.name_len <= sr->key_len || memcmp(e.name, sr->key, sr->key_len) ||
         e.name[sr->key_len] != '.'))
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (no member of '%.*s' with "
                          "%llu bytes at offset %llu)",
                          s->path, s->index_path, (int)(sr->key_len > 200 ? 200 : sr->key_len),
                          sr->key, (unsigned long long)m->size,
                          (unsigned long long)m->data_offset);
    sk_tar_reader_release(&tr);
    if (!rc) memcpy(buf, b + m->header_len, (size_t)m->size);
    free(b);
    return rc;
}

int sk_dataset_read(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t cap,
                    sk_error *err)
{
    sk_member_ref m;
    SK_GUARD(sk_dataset_member(ds, h, i, &m, err));
    struct shard *s = &ds->s[h->shard];
    SK_FAIL_IF(cap < m.size, err, SK_E_USAGE, "buffer of %zu bytes for a member of %llu", cap,
               (unsigned long long)m.size);
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    int plain = !(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP));
    if (plain && s->from_manifest && sk_store_is_remote(s->path)) {
        SK_GUARD(read_remote_member(ds, s, &h->sample, &m, buf, err));
    } else if (!plain) {
        SK_GUARD(ensure_shard(ds, s, err));
        SK_GUARD(read_compressed(ds, s, &h->sample, m.data_offset, buf, (size_t)m.size, err));
    } else {
        SK_GUARD(ensure_shard(ds, s, err));
        SK_FAIL_IF(m.data_offset > s->rr.size || m.size > s->rr.size - m.data_offset, err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
                   s->index_path, (unsigned long long)m.data_offset);
        size_t got;
        SK_GUARD(s->rr.read_at(s->rr.ctx, m.data_offset, buf, (size_t)m.size, &got, err));
        SK_FAIL_IF(got < m.size, err, SK_E_CORRUPT, "%s: short read at offset %llu",
                   s->path, (unsigned long long)(m.data_offset + got));
    }
    if (!(in->flags & SK_INDEX_NO_CRC)) {
        uint32_t crc = sk_crc32c(0, buf, (size_t)m.size);
        SK_FAIL_IF(crc != m.crc32c, err, SK_E_MISMATCH,
                   "%s: member '%.*s.%.*s' at offset %llu: CRC32C %08x, the index says %08x",
                   s->path, (int)h->sample.key_len, h->sample.key, (int)m.ext_len, m.ext,
                   (unsigned long long)m.data_offset, crc, m.crc32c);
    }
    return SK_OK;
}

/* The members of a sample of a plain shard read through its range reader
 * (a local file, or a remote object not served by read_remote_member) lie in
 * [offset, offset + span): one read of the span into buf, then each
 * member's data moved down to its place (left, so memmove never overwrites
 * bytes still to move) and checked.  1 when it applies and was done, 0
 * when it does not apply (the caller reads member by member), or -rc. */
static int read_span(sk_dataset *ds, struct shard *s, const sk_hit *h, unsigned char *buf,
                     size_t cap, const sk_member_ref *members, sk_error *err)
{
    const sk_sample_ref *sr = &h->sample;
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    if ((in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) || sr->span > cap ||
        (s->from_manifest && sk_store_is_remote(s->path)))
        return 0;
    for (uint32_t i = 0; i < sr->member_count; i++) {
        const sk_member_ref *m = &members[i];
        if (m->data_offset < sr->offset || m->data_offset - sr->offset > sr->span ||
            m->size > sr->span - (m->data_offset - sr->offset))
            return 0; /* an odd index: let the member path judge it */
    }
    int rc = ensure_shard(ds, s, err);
    if (rc) return -rc;
    if (sr->offset > s->rr.size || sr->span > s->rr.size - sr->offset)
        return -sk_error_set(err, SK_E_CORRUPT,
                             "%s: index points past the end of the shard (sample at %llu)",
                             s->index_path, (unsigned long long)sr->offset);
    size_t got = 0;
    if ((rc = s->rr.read_at(s->rr.ctx, sr->offset, buf, (size_t)sr->span, &got, err))) return -rc;
    if (got < sr->span)
        return -sk_error_set(err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                             (unsigned long long)(sr->offset + got));
    size_t pos = 0;
    for (uint32_t i = 0; i < sr->member_count; i++) {
        const sk_member_ref *m = &members[i];
        memmove(buf + pos, buf + (m->data_offset - sr->offset), (size_t)m->size);
        if (!(in->flags & SK_INDEX_NO_CRC)) {
            uint32_t crc = sk_crc32c(0, buf + pos, (size_t)m->size);
            if (crc != m->crc32c)
                return -sk_error_set(err, SK_E_MISMATCH,
                                     "%s: member '%.*s.%.*s' at offset %llu: CRC32C %08x, the "
                                     "index says %08x",
                                     s->path, (int)sr->key_len, sr->key, (int)m->ext_len, m->ext,
                                     (unsigned long long)m->data_offset, crc, m->crc32c);
        }
        pos += (size_t)m->size;
    }
    return 1;
}

int sk_dataset_read_sample(sk_dataset *ds, const sk_hit *h, void *buf, size_t cap,
                           sk_member_ref *members, size_t max_members, sk_error *err)
{
    uint32_t n = h->sample.member_count;
    SK_FAIL_IF(n > max_members, err, SK_E_USAGE, "room for %zu members; sample '%.*s' has %u",
               max_members, (int)h->sample.key_len, h->sample.key, n);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        SK_GUARD(sk_dataset_member(ds, h, i, &members[i], err));
        total += members[i].size;
        SK_FAIL_IF(members[i].size > cap || total > cap, err, SK_E_USAGE,
                   "buffer of %zu bytes for the members of sample '%.*s'", cap,
                   (int)h->sample.key_len, h->sample.key);
    }
    int r = read_span(ds, &ds->s[h->shard], h, buf, cap, members, err);
    if (r < 0) return -r;
    if (r > 0) return SK_OK;
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        SK_GUARD(sk_dataset_read(ds, h, i, (unsigned char *)buf + pos, (size_t)members[i].size, err));
        pos += (size_t)members[i].size;
    }
    return SK_OK;
}

/* ------------------------------------------- lookup and read in one call */

void sk_get_result_init_sized(sk_get_result *f, size_t size)
{
    memset(f, 0, size);
    f->struct_size = size;
}

#define ROUND8(n) (((n) + 7) & ~(uint64_t)7)

struct get_sizes {
    uint64_t total; /* the members' data */
    uint64_t whole; /* one read of the span (0: that path does not apply) */
    uint64_t exts;  /* the extensions, each with a NUL */
};

/* The sample's member records (into table when it is not NULL) and what
 * they need (read_span's test decides `whole`).  A plain shard's members
 * must lie inside the shard the index describes, and no extension may
 * hold a NUL (the names are NUL-separated in buf): a lying record is
 * SK_E_CORRUPT here, before any caller sizes a buffer from it. */
static int get_sizes(sk_dataset *ds, const sk_hit *h, sk_member_ref *table, struct get_sizes *z,
                     sk_error *err)
{
    struct shard *s = &ds->s[h->shard];
    const sk_sample_ref *sr = &h->sample;
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    int plain = !(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP));
    int span_ok = plain && !(s->from_manifest && sk_store_is_remote(s->path));
    int kl = (int)(sr->key_len > 200 ? 200 : sr->key_len);
    memset(z, 0, sizeof *z);
    SK_FAIL_IF(plain && (sr->offset > in->size || sr->span > in->size - sr->offset), err,
               SK_E_CORRUPT, "%s: index points past the end of the shard (sample '%.*s' at %llu, "
               "%llu bytes; the shard has %llu)", s->index_path, kl, sr->key,
               (unsigned long long)sr->offset, (unsigned long long)sr->span,
               (unsigned long long)in->size);
    for (uint32_t i = 0; i < sr->member_count; i++) {
        sk_member_ref m;
        SK_GUARD(sk_index_member(s->ix, (uint64_t)sr->first_member + i, &m, err));
        SK_FAIL_IF(plain && (m.data_offset > in->size || m.size > in->size - m.data_offset), err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member '%.*s.%.*s' "
                   "at %llu, %llu bytes; the shard has %llu)", s->index_path, kl, sr->key,
                   (int)m.ext_len, m.ext, (unsigned long long)m.data_offset,
                   (unsigned long long)m.size, (unsigned long long)in->size);
        SK_FAIL_IF(m.size > UINT64_MAX / 2 - z->total, err, SK_E_CORRUPT,
                   "%s: member sizes of sample '%.*s' overflow", s->index_path, kl, sr->key);
        SK_FAIL_IF(memchr(m.ext, 0, m.ext_len) != NULL, err, SK_E_CORRUPT,
                   "%s: an extension of sample '%.*s' holds a NUL byte", s->index_path, kl,
                   sr->key);
        z->total += m.size;
        z->exts += (uint64_t)m.ext_len + 1;
        if (m.data_offset < sr->offset || m.data_offset - sr->offset > sr->span ||
            m.size > sr->span - (m.data_offset - sr->offset))
            span_ok = 0; /* an odd index: the member path judges it */
        if (table) table[i] = m;
    }
    z->whole = span_ok ? sr->span : 0;
    return SK_OK;
}

int sk_dataset_get(sk_dataset *ds, const char *key, size_t key_len, uint64_t ordinal, void *buf,
                   size_t cap, sk_get_result *out, sk_error *err)
{
    size_t have = out->struct_size ? out->struct_size : sizeof *out;
    SK_FAIL_IF(have < offsetof(sk_get_result, data) + sizeof out->data, err, SK_E_USAGE,
               "sk_get_result of %zu bytes (struct_size); this library needs %zu at least", have,
               offsetof(sk_get_result, data) + sizeof out->data);
    if (have > sizeof *out) have = sizeof *out;
    SK_FAIL_IF((!buf && cap) || ((uintptr_t)buf % alignof(sk_member_ref)), err, SK_E_USAGE,
               "sk_dataset_get: the buffer must be aligned as malloc aligns");
    sk_get_result f;
    memset(&f, 0, sizeof f);
    f.struct_size = out->struct_size;
    if (key && !key_len) key_len = strlen(key); /* NUL-terminated, as sk_sample_writer_add */
    int rc = key ? sk_dataset_find(ds, key, key_len, &f.hit, err)
                 : sk_dataset_at(ds, ordinal, &f.hit, err);
    const sk_sample_ref *sr = &f.hit.sample;
    /* buf: the member records; the key and a NUL; each extension and a NUL;
     * zeros to a multiple of 8; the data */
    uint64_t table = (uint64_t)sr->member_count * sizeof(sk_member_ref);
    struct get_sizes z = {0, 0, 0};
    if (!rc) rc = get_sizes(ds, &f.hit, table <= cap ? (sk_member_ref *)buf : NULL, &z, err);
    uint64_t names = table + sr->key_len + 1, data_off = ROUND8(names + z.exts);
    if (!rc) {
        uint64_t best = data_off + (z.whole > z.total ? z.whole : z.total);
        f.need = best > SIZE_MAX ? SIZE_MAX : (size_t)best;
        if (data_off > cap || z.total > cap - data_off)
            rc = sk_error_set(err, SK_E_USAGE,
                              "buffer of %zu bytes for sample '%.*s' (it needs %zu)", cap,
                              (int)(sr->key_len > 200 ? 200 : sr->key_len), sr->key, f.need);
    }
    if (!rc) {
        unsigned char *b = buf, *data = b + data_off;
        sk_member_ref *ms = (sk_member_ref *)buf;
        memcpy(b + table, sr->key, sr->key_len);
        b[table + sr->key_len] = 0;
        unsigned char *e = b + names;
        for (uint32_t i = 0; i < sr->member_count; i++) {
            memcpy(e, ms[i].ext, ms[i].ext_len); /* the records then point here */
            e[ms[i].ext_len] = 0;
            ms[i].ext = (const char *)e;
            e += ms[i].ext_len + 1;
        }
        memset(e, 0, (size_t)(data - e));
        int r = z.whole && z.whole <= cap - data_off
                    ? read_span(ds, &ds->s[f.hit.shard], &f.hit, data, cap - data_off, ms, err)
                    : 0;
        if (r < 0) rc = -r;
        size_t pos = 0;
        for (uint32_t i = 0; !rc && !r && i < sr->member_count; i++) {
            rc = sk_dataset_read(ds, &f.hit, i, data + pos, (size_t)ms[i].size, err);
            pos += (size_t)ms[i].size;
        }
        if (!rc) {
            f.members = ms;
            f.key = (const char *)b + table;
            f.data = data;
        }
    }
    memcpy(out, &f, have);
    out->struct_size = f.struct_size;
    return rc;
}

int sk_dataset_get_many(sk_dataset *ds, const uint64_t *ordinals, size_t n, void *buf,
                        size_t cap, sk_get_result *out, size_t *done, sk_error *err)
{
    SK_FAIL_IF(!done || (n && (!ordinals || !out)), err, SK_E_USAGE,
               "sk_dataset_get_many: no %s", !done ? "done count" : !ordinals ? "ordinals"
                                                                            : "results");
    *done = 0;
    if (!n) return SK_OK;
    size_t stride = out->struct_size ? out->struct_size : sizeof *out, pos = 0;
    SK_FAIL_IF(stride < offsetof(sk_get_result, data) + sizeof out->data || stride % 8, err,
               SK_E_USAGE, "sk_get_result of %zu bytes (struct_size); this library needs %zu at "
               "least", stride, offsetof(sk_get_result, data) + sizeof out->data);
    cap &= ~(size_t)7; /* so every sample starts aligned, however little is left */
    for (size_t i = 0; i < n; i++) {
        sk_get_result *r = (sk_get_result *)((char *)out + i * stride);
        r->struct_size = stride;
        SK_GUARD(sk_dataset_get(ds, NULL, 0, ordinals[i], (char *)buf + pos, cap - pos, r, err));
        /* the sample used its records, names and data; the rest of a
         * span read (headers) is free again */
        uint64_t end = (uint64_t)(r->data - (const unsigned char *)buf);
        for (uint32_t m = 0; m < r->hit.sample.member_count; m++) end += r->members[m].size;
        pos = ROUND8(end) < cap ? (size_t)ROUND8(end) : cap;
        *done = i + 1;
    }
    return SK_OK;
}

int sk_dataset_write_tar(sk_dataset *ds, const sk_hit *h, int fd, const char *fd_name,
                         sk_error *err)
{
    int rc = SK_OK;
    unsigned char *data = NULL, *hdr = NULL;
    char *name = NULL;
    static const unsigned char zeros[2 * SK_TAR_BLOCK];
    for (uint32_t i = 0; !rc && i < h->sample.member_count; i++) {
        sk_member_ref m;
        if ((rc = sk_dataset_member(ds, h, i, &m, err))) break;
        free(data);
        if (!(data = malloc(m.size ? (size_t)m.size : 1))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory for a member of %llu bytes",
                              (unsigned long long)m.size);
            break;
        }
        if ((rc = sk_dataset_read(ds, h, i, data, (size_t)m.size, err))) break;
        size_t nlen = h->sample.key_len + 1 + m.ext_len;
        free(name);
        if (!(name = malloc(nlen + 1))) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        memcpy(name, h->sample.key, h->sample.key_len);
        name[h->sample.key_len] = '.';
        memcpy(name + h->sample.key_len + 1, m.ext, m.ext_len);
        name[nlen] = 0;
        free(hdr);
        if (!(hdr = malloc(sk_tar_header_size(name, nlen, m.size)))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            break;
        }
        size_t hl = sk_tar_header(hdr, name, nlen, m.size, 0);
        if ((rc = sk_write_all(fd, hdr, hl, fd_name, err)) ||
            (rc = sk_write_all(fd, data, (size_t)m.size, fd_name, err)) ||
            (rc = sk_write_all(fd, zeros, (size_t)(sk_tar_pad(m.size) - m.size), fd_name, err)))
            break;
    }
    if (!rc) rc = sk_write_all(fd, zeros, sizeof zeros, fd_name, err);
    free(data);
    free(hdr);
    free(name);
    return rc;
}

/* ----------------------------------------- the shard table, a member's head */

size_t sk_dataset_shard_count(const sk_dataset *ds)
{
    return ds->n;
}

int sk_dataset_shard(sk_dataset *ds, size_t i, sk_dataset_shard_info *out, sk_error *err)
{
    uint64_t total;
    SK_FAIL_IF(i >= ds->n, err, SK_E_USAGE, "shard %zu of a dataset of %zu", i, ds->n);
    SK_GUARD(sk_dataset_samples(ds, &total, err)); /* every first ordinal known */
    struct shard *s = &ds->s[i];
    SK_GUARD(ensure_index(ds, s, err));
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    *out = (sk_dataset_shard_info){.path = s->path, .index_path = s->index_path,
                                   .bytes = in->size, .samples = s->samples,
                                   .members = sk_index_member_count(s->ix),
                                   .first_ordinal = s->first_ordinal, .flags = in->flags};
    return SK_OK;
}

int sk_dataset_read_head(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t n,
                         size_t *got, sk_error *err)
{
    sk_member_ref m;
    *got = 0;
    SK_GUARD(sk_dataset_member(ds, h, i, &m, err));
    if (n >= m.size) {
        SK_GUARD(sk_dataset_read(ds, h, i, buf, n, err));
        *got = (size_t)m.size;
        return SK_OK;
    }
    struct shard *s = &ds->s[h->shard];
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    SK_GUARD(ensure_shard(ds, s, err));
    if (in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) {
        SK_GUARD(read_compressed(ds, s, &h->sample, m.data_offset, buf, n, err));
    } else {
        SK_FAIL_IF(m.data_offset > s->rr.size || m.size > s->rr.size - m.data_offset, err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
                   s->index_path, (unsigned long long)m.data_offset);
        size_t g = 0;
        SK_GUARD(s->rr.read_at(s->rr.ctx, m.data_offset, buf, n, &g, err));
        SK_FAIL_IF(g < n, err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                   (unsigned long long)(m.data_offset + g));
    }
    *got = n;
    return SK_OK;
}

/* --------------------------------------------- byte ranges (shardkit mount) */

/* The .tar.zst seek table, read once per shard (read_compressed does the same). */
static int load_frames(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (LOAD(s->frames_loaded)) return SK_OK;
    sk_tar_src f = {.ctx = s->rr.ctx, .read_at = s->rr.read_at, .size = s->rr.size, .name = s->path};
    int rc = SK_OK;
    pthread_mutex_lock(&ds->mu);
    if (!s->frames_loaded && !(rc = sk_zstd_seek_table(&f, &s->frames, &s->nframes, err)))
        PUBLISH(s->frames_loaded);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

/* A part of a sample's tar bytes: a FUSE read of a large member asks for
 * one window of it at a time, so a plain shard's part is one read through
 * the range reader (one pread, one ranged GET) and a .tar.zst's is
 * decompressed from the frame holding its first byte, not from the
 * sample's first frame.  A shard shorter than the index says (cut short
 * after it was opened) is SK_E_CORRUPT for the bytes past the cut. */
int sk_dataset_read_at(sk_dataset *ds, const sk_hit *h, uint64_t off, void *buf, size_t n,
                       sk_error *err)
{
    SK_FAIL_IF(h->shard >= ds->n, err, SK_E_USAGE, "shard %zu of a dataset of %zu", h->shard,
               ds->n);
    const sk_sample_ref *sr = &h->sample;
    struct shard *s = &ds->s[h->shard];
    SK_FAIL_IF(off < sr->offset || off - sr->offset > sr->span || n > sr->span - (off - sr->offset),
               err, SK_E_USAGE, "%s: bytes %llu..+%zu are not in sample '%.*s'", s->path,
               (unsigned long long)off, n, (int)(sr->key_len > 200 ? 200 : sr->key_len), sr->key);
    if (!n) return SK_OK;
    SK_GUARD(ensure_index(ds, s, err));
    SK_GUARD(ensure_shard(ds, s, err));
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    if (in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) {
        sk_sample_ref part = *sr;
        if ((in->flags & SK_INDEX_ZSTD) && sr->stored_offset != 0) {
            SK_GUARD(load_frames(ds, s, err));
            size_t lo = 0, hi = s->nframes; /* the last frame starting at or before off */
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->frames[mid].d_off <= off) lo = mid + 1;
                else hi = mid;
            }
            uint64_t end = sr->stored_offset + sr->stored_span;
            if (lo > 0 && s->frames[lo - 1].c_off >= sr->stored_offset &&
                s->frames[lo - 1].c_off < end) {
                part.stored_offset = s->frames[lo - 1].c_off;
                part.stored_span = end - part.stored_offset;
            }
        }
        return read_compressed(ds, s, &part, off, buf, n, err);
    }
    SK_FAIL_IF(off > s->rr.size || n > s->rr.size - off, err, SK_E_CORRUPT,
               "%s: shard cut short: %llu bytes, its index %s says %llu (byte %llu asked for)",
               s->path, (unsigned long long)s->rr.size, s->index_path,
               (unsigned long long)in->size, (unsigned long long)(off + n));
    size_t got = 0;
    SK_GUARD(s->rr.read_at(s->rr.ctx, off, buf, n, &got, err));
    SK_FAIL_IF(got < n, err, SK_E_CORRUPT, "%s: shard cut short: %zu of %zu bytes at offset %llu",
               s->path, got, n, (unsigned long long)off);
    return SK_OK;
}
