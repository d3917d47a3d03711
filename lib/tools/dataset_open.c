/*
 * dataset_open.c - the dataset API's open: from what a user typed (through
 * the one resolver, io/dataset.c) to a table of shards, each with its
 * index and range reader opened when first needed, never parsed (indexes
 * are mapped).  A dataset with a manifest knows every shard's ordinals
 * and, when its keys are sorted, each shard's key range, so a lookup
 * touches one index and one shard (dataset_find.c).
 *
 * Shard bytes come through an sk_range_reader: pread for a local file,
 * one ranged GET per read for a remote one (s3://, http(s)://: a view of
 * its store, io/store.h; its index is fetched whole, once, and kept).
 * Before the first read from a shard, its size and first-block CRC32C are
 * compared with the index header, so an index never serves offsets into
 * another file; except for a plain remote shard listed by a manifest,
 * where each member's GET brings its own tar header, checked against the
 * index instead (dataset_read.c): one request per member.  The locking
 * rule is in dataset_int.h.
 */
#include "tools/dataset_int.h"

#include <fcntl.h>
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
int sk_dsa_remote_range_open(sk_store_env *env, sk_range_reader *rr, const char *url,
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

int sk_dataset_set_read_window(sk_dataset *ds, size_t window, uint64_t memory, sk_error *err)
{
    return sk_store_env_windows(&ds->env, window, memory, err); /* io/store_window.c */
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
    sk_store_where w;
    SK_GUARD(sk_store_classify(path, &w, err)); /* an unknown scheme, by name */
    int remote = w.remote;
    SK_GUARD(sk_store_reach(path, s3, "dataset", err));
    struct stat st = {0};
    SK_FAIL_IF(!remote && !strchr(path, '{') && stat(path, &st) != 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
               "%s: %s", path, strerror(errno));
    sk_dataset *ds = calloc(1, sizeof *ds);
    SK_FAIL_IF(!ds, err, SK_E_NOMEM, "out of memory");
    ds->flags = flags;
    ds->s3 = s3;
    sk_store_env_init(&ds->env, s3);
    pthread_mutex_init(&ds->mu, NULL);
    int wrc = sk_store_env_windows(&ds->env, SK_READ_WINDOW, SK_READ_WINDOW_MEMORY, err);
    if (wrc) {
        sk_dataset_close(ds);
        return wrc;
    }
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

/* Opens the shard and proves the index was built from it; the caller
 * holds ds->mu. */
static int open_shard(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (s->rr_open) return SK_OK;
    SK_GUARD(sk_store_is_remote(s->path) ? sk_dsa_remote_range_open(&ds->env, &s->rr, s->path, UINT64_MAX, err)
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

/* Opens what *flag announces (open publishes it) once, under the
 * dataset's mutex; a set flag costs one load and no lock (dataset_int.h). */
static int once(sk_dataset *ds, struct shard *s, int *flag,
                int (*open)(sk_dataset *, struct shard *, sk_error *), sk_error *err)
{
    if (LOAD(*flag)) return SK_OK;
    pthread_mutex_lock(&ds->mu);
    int rc = open(ds, s, err);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

int sk_dsa_ensure_index(sk_dataset *ds, struct shard *s, sk_error *err)
{
    return once(ds, s, &s->ix_ok, open_index, err);
}

int sk_dsa_ensure_shard(sk_dataset *ds, struct shard *s, sk_error *err)
{
    return once(ds, s, &s->rr_open, open_shard, err);
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
    SK_GUARD(sk_dsa_ensure_index(ds, s, err));
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    *out = (sk_dataset_shard_info){.path = s->path, .index_path = s->index_path,
                                   .bytes = in->size, .samples = s->samples,
                                   .members = sk_index_member_count(s->ix),
                                   .first_ordinal = s->first_ordinal, .flags = in->flags};
    return SK_OK;
}
