/*
 * dataset.c - the one dataset resolver: from what a user typed (a shard, a
 * brace pattern, a directory, a manifest.json, an s3:// object, an s3://
 * prefix ending in '/', an http(s):// shard, manifest or directory URL
 * ending in '/' (its manifest.json: a web server has no listing), a FIFO,
 * '-' or /dev/stdin) to the list of shards,
 * each with what its manifest promises (bytes, samples, first ordinal,
 * CRC32C, index URL) when there is one.  Tools pick which forms they take
 * with flags, so that each tool keeps its own rules about what it accepts.
 */
#include "io/io.h"
#include "io/store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct out {
    sk_ds_shard *v;
    size_t n, cap;
};

/* Appends a shard that takes url and index_url (malloc'd, or index_url
 * NULL) whatever happens; a manifest of thousands of shards is opened per
 * lookup, so its strings are not copied twice. */
static int push_owned(struct out *o, char *url, char *index_url, const char *manifest,
                      sk_error *err)
{
    if (sk_grow((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v, err)) {
        free(url), free(index_url);
        return SK_E_NOMEM;
    }
    sk_ds_shard *s = &o->v[o->n];
    memset(s, 0, sizeof *s);
    s->url = url;
    s->index_url = index_url;
    s->manifest = manifest ? strdup(manifest) : NULL;
    if (!s->url || (manifest && !s->manifest)) {
        free(s->url);
        free(s->index_url);
        free(s->manifest);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    o->n++;
    return SK_OK;
}

static int push(struct out *o, const char *url, const char *index_url, const char *manifest,
                sk_error *err)
{
    char *u = strdup(url), *ix = index_url ? strdup(index_url) : NULL;
    if (!u || (index_url && !ix)) {
        free(u), free(ix);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    return push_owned(o, u, ix, manifest, err);
}

static int ends_with(const char *s, const char *sfx)
{
    size_t a = strlen(s), b = strlen(sfx);
    return a > b && !strcmp(s + a - b, sfx);
}

static int add_manifest(struct out *o, const char *path, const sk_ds_opts *opt, sk_error *err)
{
    sk_manifest *m;
    SK_FAIL_IF(sk_is_s3_url(path) && !opt->s3, err, SK_E_USAGE,
               "%s: an s3:// dataset needs an S3 client", path);
    sk_error le = SK_ERROR_INIT;
    int rc;
    if (sk_store_is_http(path)) {
        sk_buf text = {0};
        rc = sk_store_load(path, opt->env, SK_S3_MANIFEST_MAX, "manifest", &text, &le);
        if (!rc) rc = sk_manifest_parse(&m, text.p, text.len, path, &le);
        sk_buf_free(&text);
    } else {
        rc = sk_is_s3_url(path)           ? sk_s3_load_manifest(opt->s3, path, &m, &le)
             : opt->flags & SK_DS_LOOKUP ? sk_manifest_load_for_lookup(&m, path, &le)
                                         : sk_manifest_load(&m, path, &le);
    }
    if (rc && opt->bad_manifest && (rc == SK_E_CORRUPT || rc == SK_E_INPUT || rc == SK_E_MISMATCH)) {
        opt->bad_manifest(opt->ctx, path, &le); /* verify: a finding, not a failure to run */
        return SK_OK;
    }
    if (rc) return *err = le, rc;
    for (size_t i = 0; !rc && i < m->nshards; i++) {
        const sk_manifest_shard *ms = &m->shards[i];
        char *u = NULL, *ix = NULL;
        rc = sk_manifest_resolve(path, ms->url, &u, err);
        if (!rc && ms->index_url) rc = sk_manifest_resolve(path, ms->index_url, &ix, err);
        if (rc) {
            free(u), free(ix);
        } else if (!(rc = push_owned(o, u, ix, path, err))) {
            sk_ds_shard *s = &o->v[o->n - 1];
            s->bytes = ms->bytes;
            s->samples = ms->samples;
            s->first_ordinal = ms->first_ordinal;
            s->crc32c = ms->crc32c;
            s->known = 1;
            if (m->key_ranges && m->key_ranges[i].first) { /* taken over */
                s->keys = m->key_ranges[i];
                m->key_ranges[i] = (sk_key_range){0};
            }
        }
    }
    sk_manifest_free(m);
    return rc;
}

static int keep_shard_name(const char *name, const char *path)
{
    (void)path;
    return sk_is_shard_name(name);
}

static int add_dir(struct out *o, const char *dir, const sk_ds_opts *opt, sk_error *err)
{
    char *mf, **names;
    size_t n;
    SK_GUARD(sk_shard_list_dir(dir, opt->keep ? opt->keep : keep_shard_name, &mf, &names, &n, err));
    if (mf) {
        int rc = add_manifest(o, mf, opt, err);
        free(mf);
        return rc;
    }
    int rc = SK_OK;
    if (n == 0)
        rc = sk_error_set(err, SK_E_NOTFOUND, "%s: no manifest.json and %s", dir,
                          opt->dir_wants ? opt->dir_wants
                                         : "no .tar, .tar.zst, .tar.gz, .tgz, .tar.bz2 or .tar.xz in it");
    for (size_t i = 0; !rc && i < n; i++) rc = push(o, names[i], NULL, NULL, err);
    sk_shard_list_free(names, n);
    return rc;
}

/* An s3:// prefix: its manifest.json, else (or with SK_DS_LISTING
 * always) the shard objects its listing shows directly under it, as a
 * local directory's files. */
static int add_prefix(struct out *o, const char *u, const sk_ds_opts *opt, sk_error *err)
{
    SK_FAIL_IF(!opt->s3, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client", u);
    if (!(opt->flags & SK_DS_LISTING)) {
        char *mf;
        SK_FAIL_IF(asprintf(&mf, "%smanifest.json", u) < 0, err, SK_E_NOMEM, "out of memory");
        sk_error le = SK_ERROR_INIT;
        int rc = add_manifest(o, mf, opt, &le);
        free(mf);
        if (rc != SK_E_NOTFOUND) return rc ? (*err = le, rc) : SK_OK;
    }
    char **urls;
    size_t n;
    sk_error le = SK_ERROR_INIT;
    int rc = sk_store_list_shards(opt->s3, u, &urls, &n, &le);
    if (rc)
        return sk_error_set(err, rc, "%s: %scannot list its shards: %s", u,
                            opt->flags & SK_DS_LISTING ? "" : "no manifest.json, and ", le.msg);
    if (n == 0)
        rc = sk_error_set(err, SK_E_NOTFOUND, "%s: %sno .tar, .tar.zst, .tar.gz, .tgz, .tar.bz2 or .tar.xz objects under it", u,
                          opt->flags & SK_DS_LISTING ? "" : "no manifest.json and ");
    for (size_t i = 0; !rc && i < n; i++) rc = push(o, urls[i], NULL, NULL, err);
    sk_shard_list_free(urls, n);
    return rc;
}

/* An http(s):// directory URL: its manifest.json (a web server's index
 * page is no listing to trust). */
static int add_http_dir(struct out *o, const char *u, const sk_ds_opts *opt, sk_error *err)
{
    SK_FAIL_IF(opt->flags & SK_DS_LISTING, err, SK_E_USAGE, "%s: a web server has no listing: "
               "name its shards (a brace pattern of URLs)", u);
    char *mf;
    SK_FAIL_IF(asprintf(&mf, "%smanifest.json", u) < 0, err, SK_E_NOMEM, "out of memory");
    int rc = add_manifest(o, mf, opt, err);
    free(mf);
    return rc;
}

static int add_one(struct out *o, const char *u, const sk_ds_opts *opt, sk_error *err)
{
    sk_loc_kind kind;
    SK_GUARD(sk_store_kind(u, &kind, err)); /* an unknown scheme, by name */
    SK_FAIL_IF(kind == SK_LOC_HTTP && !opt->env, err, SK_E_USAGE,
               "%s: http(s):// is not taken here (a web server takes no writes; cat, get and "
               "verify read from one)", u);
    if ((opt->flags & SK_DS_PREFIX) && kind == SK_LOC_HTTP && u[strlen(u) - 1] == '/')
        return add_http_dir(o, u, opt, err);
    if ((opt->flags & SK_DS_PREFIX) && kind == SK_LOC_S3 && u[strlen(u) - 1] == '/')
        return add_prefix(o, u, opt, err);
    if ((opt->flags & SK_DS_MANIFEST) && ends_with(u, ".json")) return add_manifest(o, u, opt, err);
    struct stat st;
    if ((opt->flags & SK_DS_DIR) && kind == SK_LOC_LOCAL && strcmp(u, "-") && stat(u, &st) == 0 &&
        S_ISDIR(st.st_mode))
        return add_dir(o, u, opt, err);
    return push(o, u, NULL, NULL, err);
}

int sk_ds_resolve(const char *typed, const sk_ds_opts *opt, sk_ds_shard **list, size_t *count,
                  sk_error *err)
{
    struct out o = {*list, *count, *count};
    char **ex = NULL;
    size_t k = 0;
    int rc = sk_brace_expand(typed, &ex, &k, err);
    for (size_t j = 0; !rc && j < k; j++) rc = add_one(&o, ex[j], opt, err);
    if (ex) sk_brace_free(ex);
    *list = o.v;
    *count = o.n;
    return rc;
}

void sk_ds_free(sk_ds_shard *list, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(list[i].url);
        free(list[i].index_url);
        free(list[i].manifest);
        free(list[i].keys.first);
        free(list[i].keys.last);
    }
    free(list);
}
