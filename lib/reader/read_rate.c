/*
 * read_rate.c - `shardkit stats --read-rate`: what this machine gets from
 * where a dataset lives, measured the way training reads it: the public
 * reader (sk_reader: a producer thread per shard, prefetch, the disk cache)
 * over the dataset's first shards, whole, in order.  Three runs: without
 * a cache, then through a fresh cache directory twice (filling it, then
 * reading it back), so a user sees the cold-scan latency, the steady
 * rate and what the cache buys, to compare with what the GPUs consume.
 * The dataset may be local, s3:// or http(s):// (the requests counted are
 * those of the client in the options: S3, or a plain one for a web server).
 * The cache directory is made here: a job's private one under $TMPDIR
 * (swept by a later start if this run is killed), or a new directory under
 * the one named; only its own cache files are removed with it.
 */
#include "core/internal.h"
#include "io/io.h"
#include "io/store.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static uint64_t requests(sk_s3 *s3)
{
    uint64_t r = 0, retries = 0;
    if (s3) sk_s3_stats(s3, &r, &retries); /* a counter, not a read */
    return r;
}

static int run(const char *const *urls, size_t n, const sk_read_rate_options *o,
               const char *cache, sk_read_rate_run *out, sk_error *err)
{
    sk_reader_options ro;
    sk_reader_options_init(&ro);
    ro.rank = 0, ro.world_size = 1, ro.worker = 0, ro.num_workers = 1;
    if (o->prefetch > 0) ro.prefetch = o->prefetch;
    ro.s3 = o->s3;
    ro.cache_dir = cache;
    memset(out, 0, sizeof *out);
    uint64_t req0 = requests(o->s3);
    double t0 = now();
    sk_reader *r;
    SK_GUARD(sk_reader_open(&r, urls, n, &ro, err));
    const sk_reader_sample *s;
    int rc;
    while (!(rc = sk_reader_next(r, &s, err)) && s) {
        if (!out->samples) out->first_sample = now() - t0;
        out->samples++;
        for (size_t i = 0; i < s->nmembers; i++) out->bytes += s->members[i].size;
    }
    sk_reader_close(r);
    out->seconds = now() - t0;
    out->shards = n;
    out->requests = requests(o->s3) - req0;
    return rc;
}

/* Removes the cache directory made here: its *.skc files (the reader's
 * cache names) and then the directory, which fails if anything else is in
 * it - that is then left alone. */
static void remove_cache(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            size_t l = strlen(de->d_name);
            if (l > 4 && !strcmp(de->d_name + l - 4, ".skc")) unlinkat(dirfd(d), de->d_name, 0);
        }
        closedir(d);
    }
    rmdir(dir);
}

void sk_read_rate_options_init_sized(sk_read_rate_options *o, size_t size)
{
    static const sk_read_rate_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_read_rate(const char *dataset, const sk_read_rate_options *opts, sk_read_rate_run runs[3],
                 sk_error *err)
{
    sk_read_rate_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_read_rate_options", err));
    /* an env for an http(s):// manifest (the reader's runs open their own;
     * with a plain client in o.s3, their requests are counted there) */
    sk_store_env env;
    sk_store_env_init(&env, o.s3);
    sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = o.s3, .env = &env};
    sk_ds_shard *list = NULL;
    size_t n = 0;
    int rrc = sk_ds_resolve(dataset, &ro, &list, &n, err);
    sk_store_env_release(&env);
    if (rrc) {
        sk_ds_free(list, n);
        return rrc;
    }
    size_t want = o.shards ? o.shards : 4;
    if (want > n) want = n;
    const char **urls = calloc(want ? want : 1, sizeof *urls);
    int rc = !want ? sk_error_set(err, SK_E_USAGE, "read rate: %s has no shards", dataset)
             : !urls ? sk_error_set(err, SK_E_NOMEM, "out of memory")
                     : SK_OK;
    for (size_t i = 0; !rc && i < want; i++) urls[i] = list[i].url;
    /* Under $TMPDIR the cache is a job's private one, marked live, so the
     * one a killed run leaves is swept by a later start; under a directory
     * the user names, a directory of our own there, removed at the end. */
    char *tmpl = NULL;
    uint64_t avail;
    int made = 0; /* tmpl is a directory made here: only then is it removed */
    if (!rc && !o.cache_dir) {
        rc = sk_store_cache_temp(&tmpl, &avail, err);
        made = !rc;
    } else if (!rc) {
        if (asprintf(&tmpl, "%s/shardkit-read-rate.XXXXXX", o.cache_dir) < 0)
            tmpl = NULL, rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else if (!(made = mkdtemp(tmpl) != NULL))
            rc = sk_error_set(err, SK_E_IO, "%s: cannot make the cache directory: %s", tmpl,
                              strerror(errno));
    }
    if (!rc) {
        rc = run(urls, want, &o, NULL, &runs[0], err);
        if (!rc) rc = run(urls, want, &o, tmpl, &runs[1], err);
        if (!rc) rc = run(urls, want, &o, tmpl, &runs[2], err);
    }
    if (made && !o.cache_dir) sk_store_cache_temp_remove(tmpl);
    else if (made) remove_cache(tmpl);
    free(tmpl);
    free(urls);
    sk_ds_free(list, n);
    return rc;
}
