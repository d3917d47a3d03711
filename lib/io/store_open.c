/*
 * store_open.c - a location opened as the store its scheme names (file or
 * stream, s3://, http(s)://) with the layers a job's environment asks for
 * (the disk cache, read windows), that environment (sk_store_env: the
 * clients and the window pool its stores share), and whole small objects
 * (manifests, indexes) loaded from wherever they live.  Kept apart from store.c, the part
 * every kind uses, so that the kinds sit between the two and nothing
 * calls back up.
 */
#include "io/io.h"
#include "io/store.h"
#include "s3/s3_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A client for http(s):// URLs (sk_s3_config.http_only: the S3 engine's
 * retries, timeouts and bounds, no credentials, no signature); like (may
 * be NULL): the client whose settings (attempts, read timeout, low-speed
 * limit, concurrency, verbose) it copies. */
static int http_client_new(sk_s3 **out, const sk_s3 *like, sk_error *err)
{
    sk_s3_config cfg = SK_S3_CONFIG_INIT;
    cfg.http_only = 1;
    if (like) {
        cfg.concurrency = like->concurrency;
        cfg.max_attempts = like->max_attempts;
        cfg.read_timeout = like->read_timeout;
        cfg.low_speed_limit = like->low_speed_limit;
        cfg.verbose = like->verbose;
    }
    return sk_s3_new(out, &cfg, err);
}

static int need_http(sk_store_env *e, sk_error *err)
{
    pthread_mutex_lock(&e->mu);
    int rc = e->http || (e->s3 && e->s3->plain) ? SK_OK : http_client_new(&e->http, e->s3, err);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static int open_kind(sk_store **out, const char *url, sk_store_env *e, sk_error *err)
{
    sk_loc_kind k;
    *out = NULL;
    SK_GUARD(sk_store_kind(url, &k, err));
    if (k == SK_LOC_S3) {
        SK_FAIL_IF(!e || !e->s3 || e->s3->plain, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client",
                   url);
        return sk_store_s3_open(out, url, e->s3, err);
    }
    if (k == SK_LOC_HTTP) {
        SK_FAIL_IF(!e, err, SK_E_USAGE, "%s: no client for http(s)://", url);
        SK_GUARD(need_http(e, err));
        /* the caller's client when it is a plain one (a tool's --read-timeout) */
        return sk_store_http_open(out, url, e->http ? e->http : e->s3, err);
    }
    return sk_store_file_open(out, url, err);
}

int sk_store_open(sk_store **out, const char *url, sk_store_env *e, sk_error *err)
{
    SK_GUARD(open_kind(out, url, e, err));
    if (!e || !sk_store_is_remote(url)) return SK_OK;
    if (e->cache_dir) {
        sk_store_cache_opts co = {.dir = e->cache_dir, .bound = e->cache_size, .temp = e->cache_temp,
                                  .ahead = e->cache_ahead};
        SK_GUARD(sk_store_cache_open(out, *out, &co, err)); /* takes the store over */
    }
    return e->windows ? sk_store_window_open(out, *out, e->windows, err) : SK_OK;
}

void sk_store_env_init(sk_store_env *e, sk_s3 *s3)
{
    memset(e, 0, sizeof *e);
    e->s3 = s3;
    pthread_mutex_init(&e->mu, NULL);
}

void sk_store_env_release(sk_store_env *e)
{
    sk_s3_free(e->http);
    e->http = NULL;
    if (e->own_s3) sk_s3_free(e->s3);
    e->s3 = NULL, e->own_s3 = 0;
    sk_window_pool_unref(e->windows); /* stores still open keep the pool alive */
    e->windows = NULL;
    pthread_mutex_destroy(&e->mu);
}

int sk_store_env_windows(sk_store_env *e, size_t window, uint64_t memory, sk_error *err)
{
    sk_window_pool *p = NULL;
    if (window) SK_GUARD(sk_window_pool_new(&p, window, memory, err));
    sk_window_pool_unref(e->windows); /* the stores open keep theirs */
    e->windows = p;
    return SK_OK;
}

int sk_store_load(const char *url, sk_store_env *e, size_t max, const char *what, sk_buf *out,
                  sk_error *err)
{
    sk_store *s;
    out->len = 0;
    SK_GUARD(sk_store_open(&s, url, e, err));
    int rc = sk_store_read_whole(s, max, what, out, err);
    sk_store_close(s);
    return rc;
}

int sk_store_load_manifest(const char *url, sk_store_env *e, sk_manifest **m, sk_error *err)
{
    if (!sk_store_is_remote(url)) return sk_manifest_load(m, url, err);
    sk_buf text = {0};
    int rc = sk_store_load(url, e, SK_S3_MANIFEST_MAX, "manifest", &text, err);
    if (!rc) rc = sk_manifest_parse(m, text.p, text.len, url, err);
    sk_buf_free(&text);
    return rc;
}

int sk_store_load_index(const char *url, sk_store_env *e, unsigned flags, sk_index **ix, sk_error *err)
{
    if (!sk_store_is_remote(url)) return sk_index_open(ix, url, flags, err);
    sk_buf blob = {0};
    int rc = sk_store_load(url, e, SK_S3_INDEX_MAX, "shard index", &blob, err);
    if (!rc) return sk_index_adopt(ix, blob.p, blob.len, url, err); /* keeps the bytes */
    sk_buf_free(&blob);
    return rc;
}
