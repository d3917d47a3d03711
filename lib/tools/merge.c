/*
 * merge.c - joining the manifests of parallel runs (`shardkit index merge`)
 * and exporting a manifest as wids' shard-index JSON.
 *
 * A merged manifest lists every shard once, with ordinals continuing from
 * one input to the next and URLs rewritten relative to where the merged
 * manifest is written.  Parallel runs must be disjoint: a shard listed
 * twice, a key present in two shards (found through their indexes), or
 * --part slices missing or repeated are errors that name them, since a
 * silent overlap would train on samples twice.
 *
 * Manifests, indexes and the merged manifest may be objects in S3 as well
 * as local files, and the manifests and indexes read may be on a web
 * server, http(s):// (each read whole through the store, as a dataset
 * reads them; the merged one written by the sinks' sk_sink_put_manifest).
 * A remote manifest's entries are held to the readers' rule: nothing
 * outside its own directory (or, in a bucket, other objects of it).  A
 * URL is rewritten relative only within one bucket, and only below the
 * merged manifest's prefix there (readers refuse ".." in a remote
 * manifest); else, and between a bucket and a local directory, it stays
 * absolute.
 */
#include "core/internal.h"
#include "format/format.h"
#include "io/io.h"
#include "io/store.h"
#include "tools/merge_stats.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------------ paths */

/* The length of p's root: scheme and bucket (or host) for a URL, 0 for a
 * local path. */
static size_t root_len(const char *p)
{
    sk_store_where w;
    return sk_store_classify(p, &w, NULL) || !w.remote ? 0 : w.host + w.host_len;
}

/* A URL or an absolute path: taken as it is, never joined to a directory
 * (a manifest's "s3:x.tar" is a local name beside it, as readers take it). */
static int absolute(const char *u)
{
    return u[0] == '/' || sk_store_is_remote(u);
}

/* Absolute, lexically normalised ("." and ".." folded, never above the
 * root: "/" or a URL's bucket) form of p. */
static char *abs_path(const char *p)
{
    char *full;
    size_t root = root_len(p);
    if (root || p[0] == '/') full = strdup(p + root);
    else {
        char *cwd = getcwd(NULL, 0);
        if (!cwd) return NULL;
        if (asprintf(&full, "%s/%s", cwd, p) < 0) full = NULL;
        free(cwd);
    }
    if (!full) return NULL;
    char *out = malloc(root + strlen(full) + 2), *o = out + root;
    if (!out) { free(full); return NULL; }
    memcpy(out, p, root);
    *o = 0;
    sk_store_lower_scheme(out);
    for (char *save = NULL, *c = strtok_r(full, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, ".")) continue;
        if (!strcmp(c, "..")) {
            char *sl = strrchr(out + root, '/');
            if (sl) { *sl = 0; o = sl; }
            continue;
        }
        o += sprintf(o, "/%s", c);
    }
    if (!root && out[0] == 0) strcpy(out, "/");
    free(full);
    return out;
}

/* target relative to dir (both absolute, normalised). */
static char *rel_path(const char *dir, const char *target)
{
    size_t i = 0, common = 0, ups = 0;
    const char *rest;
    while (dir[i] && dir[i] == target[i]) {
        i++;
        if (dir[i - 1] == '/') common = i;
    }
    if (!dir[i] && (target[i] == '/' || !target[i])) {
        rest = target + i + (target[i] == '/'); /* target lies under dir */
    } else {
        rest = target + common;
        const char *p = dir + common;
        if (*p) ups = 1;
        for (; *p; p++) ups += *p == '/';
    }
    char *out = malloc(ups * 3 + strlen(rest) + 1), *o = out;
    if (!out) return NULL;
    for (size_t k = 0; k < ups; k++) o += sprintf(o, "../");
    strcpy(o, rest);
    return out;
}

/* URL of an entry of the manifest at mpath, as seen from out_dir: relative
 * when both lie under one root (the file system, or one bucket), else
 * the absolute URL. */
static char *rebase(const char *mpath, const char *url, const char *out_dir_abs)
{
    if (absolute(url)) return strdup(url);
    char *md = sk_dir_of(mpath), *joined = NULL, *abs = NULL, *rel = NULL;
    size_t r = root_len(out_dir_abs);
    if (md && asprintf(&joined, "%s/%s", md, url) >= 0 && (abs = abs_path(joined)))
        rel = r == root_len(abs) && !strncmp(abs, out_dir_abs, r) ? rel_path(out_dir_abs + r, abs + r)
                                                                  : strdup(abs);
    /* a bucket's manifest names what lies beside or below it only: readers
     * refuse a ".." in a remote manifest (it could leave the prefix) */
    if (rel && r && !strncmp(rel, "../", 3)) {
        free(rel);
        rel = strdup(abs);
    }
    free(md);
    free(joined);
    free(abs);
    return rel;
}

/* ------------------------------------------------------------------ merge */

/* A shard of the remote manifest at mpath (on a web server or in S3): its URL and
 * index URL by the readers' rule (sk_manifest_resolve), SK_E_CORRUPT naming
 * the manifest and the name when it points outside. */
static int check_remote_entry(const char *mpath, const sk_manifest_shard *s, sk_error *err)
{
    char *u = NULL;
    SK_GUARD(sk_manifest_resolve(mpath, s->url, &u, err));
    free(u);
    if (s->index_url) SK_GUARD(sk_manifest_resolve(mpath, s->index_url, &u, err));
    free(u);
    return SK_OK;
}


struct keyref {
    const char *key;
    uint32_t len;
    uint32_t shard;
};

static int keyref_cmp(const void *a, const void *b)
{
    const struct keyref *x = a, *y = b;
    int d = memcmp(x->key, y->key, x->len < y->len ? x->len : y->len);
    if (d) return d;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return (x->shard > y->shard) - (x->shard < y->shard);
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(**(char *const *const *)a, **(char *const *const *)b);
}

/* The parts' stats, in part order. */
static int merge_part_stats(const char *const *paths, sk_manifest **in, const size_t *order, size_t n,
                            sk_s3 *s3, json_t **stats, sk_error *err)
{
    const char **p = calloc(n, sizeof *p);
    int *part = calloc(n, sizeof *part);
    int rc = p && part ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        p[i] = paths[order[i]];
        part[i] = in[order[i]]->part;
    }
    if (!rc) rc = sk_part_stats_merge(p, part, n, s3, stats, err);
    free(p);
    free(part);
    return rc;
}

int sk_manifest_merge(const char *const *paths, size_t n, const char *out_path, sk_error *err)
{
    return sk_manifest_merge_s3(paths, n, out_path, NULL, err);
}

int sk_manifest_merge_s3(const char *const *paths, size_t n, const char *out_path, sk_s3 *s3,
                         sk_error *err)
{
    SK_FAIL_IF(n == 0, err, SK_E_USAGE, "no manifests to merge");
    /* the merged manifest is written: a web server is read only */
    SK_GUARD(sk_place_check(out_path, SK_PLACE_WRITE | SK_PLACE_S3_OK, "index merge -o", NULL, err));
    sk_store_where w;
    for (size_t i = 0; i < n + 1; i++) {
        const char *p = i < n ? paths[i] : out_path;
        SK_GUARD(sk_store_classify(p, &w, err)); /* another scheme: refused by name */
        SK_GUARD(sk_store_reach(p, s3, "manifest", err)); /* S3 without a client */
    }
    int remote_out = w.remote; /* w: out_path's, the last asked: an object store */
    sk_store_env env;
    sk_store_env_init(&env, s3);
    sk_manifest **in = calloc(n ? n : 1, sizeof *in);
    sk_manifest *out = sk_manifest_new();
    size_t *order = calloc(n ? n : 1, sizeof *order);
    char *out_dir = sk_dir_of(out_path), *out_dir_abs = out_dir ? abs_path(out_dir) : NULL;
    char **abs_urls = NULL, ***sorted = NULL;
    sk_index **ix = NULL;
    struct keyref *keys = NULL;
    json_t *stats = NULL; /* the parts' stats-I.json summed (merge_stats.c) */
    size_t nshards = 0;
    int rc = SK_OK;
    if (!in || !out || !order || !out_dir_abs) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = sk_store_load_manifest(paths[i], &env, &in[i], err))) goto cleanup;
        order[i] = i;
    }
    /* --part slices: all or none, each exactly once, in part order. */
    int parts = in[0]->parts;
    for (size_t i = 0; i < n; i++)
        if ((in[i]->parts > 0) != (parts > 0) || (parts && in[i]->parts != parts)) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: says parts=%d, %s says parts=%d", paths[i],
                              in[i]->parts, paths[0], parts);
            goto cleanup;
        }
    if (parts > 0) {
        int base = 0;
        for (size_t i = 0; i < n; i++)
            if (in[i]->part == parts) base = 1; /* 1-based numbering */
        for (size_t i = 1; i < n; i++) /* insertion sort by part */
            for (size_t j = i; j > 0 && in[order[j]]->part < in[order[j - 1]]->part; j--) {
                size_t t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        for (size_t i = 1; i < n; i++)
            if (in[order[i]]->part == in[order[i - 1]]->part) {
                rc = sk_error_set(err, SK_E_INPUT, "part %d/%d appears twice (%s and %s)",
                                  in[order[i]]->part, parts, paths[order[i - 1]], paths[order[i]]);
                goto cleanup;
            }
        for (int p = base, k = 0; p < parts + base; p++) {
            if (k < (int)n && in[order[k]]->part == p) { k++; continue; }
            rc = sk_error_set(err, SK_E_INPUT, "part %d/%d is missing from the manifests given",
                              p, parts);
            goto cleanup;
        }
        if ((int)n != parts) {
            rc = sk_error_set(err, SK_E_INPUT, "%zu manifests for %d parts", n, parts);
            goto cleanup;
        }
    }
    if (in[0]->options_json && !(out->options_json = strdup(in[0]->options_json))) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    for (size_t i = 0; i < n; i++) nshards += in[i]->nshards;
    abs_urls = calloc(nshards + 1, sizeof *abs_urls);
    sorted = calloc(nshards + 1, sizeof *sorted);
    ix = calloc(nshards + 1, sizeof *ix);
    if (!abs_urls || !sorted || !ix) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    size_t k = 0, nkeys = 0;
    for (size_t oi = 0; oi < n; oi++) {
        size_t i = order[oi];
        const sk_manifest *m = in[i];
        for (size_t j = 0; j < m->nshards; j++, k++) {
            const sk_manifest_shard *s = &m->shards[j];
            sk_manifest_shard ns = *s;
            /* a remote manifest is someone else's bytes: it names what lies
             * under its own directory (or, in a bucket, its objects),
             * never "..", another host or a local file; readers hold it to
             * that (sk_manifest_resolve), and so does the merge */
            if (sk_store_is_remote(paths[i]) && (rc = check_remote_entry(paths[i], s, err)))
                goto cleanup;
            char *url = rebase(paths[i], s->url, out_dir_abs);
            char *iurl = s->index_url ? rebase(paths[i], s->index_url, out_dir_abs) : NULL;
            char *joined = NULL;
            if (url && asprintf(&joined, "%s/%s", out_dir_abs, url) >= 0)
                abs_urls[k] = absolute(url) ? strdup(url) : abs_path(joined);
            free(joined);
            if (!url || (s->index_url && !iurl) || !abs_urls[k]) {
                free(url);
                free(iurl);
                rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
                goto cleanup;
            }
            /* a bucket's manifest that names local files (or files on a
             * web server) would be read nowhere but here (readers take
             * URLs in S3 only from it): refused, naming them */
            sk_store_where uw; /* in a bucket: remote and writable */
            int in_bucket = !sk_store_classify(abs_urls[k], &uw, NULL) && uw.remote && uw.writable;
            if (remote_out && !in_bucket) {
                rc = sk_error_set(err, SK_E_USAGE, "%s: shard %s of %s is %s: upload the "
                                  "parts first, then merge their manifests in S3", out_path,
                                  abs_urls[k], paths[i],
                                  uw.remote ? "on a web server, not in S3" : "a local file");
                free(url), free(iurl);
                goto cleanup;
            }
            ns.url = url;
            ns.index_url = iurl;
            ns.part = 0;
            rc = sk_manifest_add_shard(out, &ns, err);
            free(url);
            free(iurl);
            if (rc) goto cleanup;
            sorted[k] = &abs_urls[k];
            /* keys come from the shard's index */
            char *ipath = NULL;
            const char *iu = out->shards[k].index_url;
            if (iu) {
                if (asprintf(&ipath, "%s/%s", out_dir_abs, iu) < 0) ipath = NULL;
                if (ipath && absolute(iu)) { free(ipath); ipath = strdup(iu); }
            } else if (asprintf(&ipath, "%s.idx", abs_urls[k]) < 0) ipath = NULL;
            if (ipath) { /* "../" folded: an object key never holds one */
                char *norm = abs_path(ipath);
                free(ipath);
                ipath = norm;
            }
            if (!ipath) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
            rc = sk_store_load_index(ipath, &env, 0, &ix[k], err);
            free(ipath);
            if (rc) goto cleanup;
            if (sk_index_sample_count(ix[k]) != s->samples) {
                rc = sk_error_set(err, SK_E_MISMATCH, "%s: shard %s has %llu samples in its "
                                  "index, %llu in the manifest", paths[i], s->url,
                                  (unsigned long long)sk_index_sample_count(ix[k]),
                                  (unsigned long long)s->samples);
                goto cleanup;
            }
            nkeys += s->samples;
        }
        for (size_t e = 0; e < m->nexts; e++)
            if ((rc = sk_manifest_count_ext(out, m->exts[e].ext, strlen(m->exts[e].ext),
                                            m->exts[e].count, err)))
                goto cleanup;
    }
    qsort(sorted, nshards, sizeof *sorted, str_cmp);
    for (size_t i = 1; i < nshards; i++)
        if (!strcmp(*sorted[i], *sorted[i - 1])) {
            rc = sk_error_set(err, SK_E_INPUT, "shard %s is listed twice in the manifests",
                              *sorted[i]);
            goto cleanup;
        }
    keys = malloc((nkeys ? nkeys : 1) * sizeof *keys);
    if (!keys) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
    size_t q = 0;
    for (size_t i = 0; i < nshards; i++)
        for (uint64_t o = 0; o < sk_index_sample_count(ix[i]); o++) {
            sk_sample_ref r;
            if ((rc = sk_index_sample(ix[i], o, &r, err))) goto cleanup;
            keys[q].key = r.key;
            keys[q].len = (uint32_t)r.key_len;
            keys[q].shard = (uint32_t)i;
            q++;
        }
    qsort(keys, q, sizeof *keys, keyref_cmp);
    for (size_t i = 1; i < q; i++)
        if (keys[i].len == keys[i - 1].len && keys[i].shard != keys[i - 1].shard &&
            !memcmp(keys[i].key, keys[i - 1].key, keys[i].len)) {
            rc = sk_error_set(err, SK_E_INPUT, "key '%.*s' is in two shards: %s and %s",
                              (int)(keys[i].len > 200 ? 200 : keys[i].len), keys[i].key,
                              out->shards[keys[i - 1].shard].url, out->shards[keys[i].shard].url);
            goto cleanup;
        }
    /* each shard's key range from its own index (not the parts' claims);
     * sk_manifest_write keeps them when they rise from shard to shard */
    for (size_t i = 0; i < nshards; i++) {
        const char *f, *l;
        size_t fl, ll;
        if (!sk_index_sample_count(ix[i])) continue;
        if ((rc = sk_index_key_bounds(ix[i], &f, &fl, &l, &ll, err)) ||
            (rc = sk_manifest_set_key_range(out, i, f, fl, l, ll, err)))
            goto cleanup;
    }
    if (parts > 0 && (rc = merge_part_stats(paths, in, order, n, s3, &stats, err))) goto cleanup;
    rc = sk_sink_put_manifest(s3, out, out_path, SK_MANIFEST_TABLE, err);
    if (!rc && stats) rc = sk_part_stats_write(stats, out_path, s3, err);
cleanup:
    json_decref(stats);
    sk_store_env_release(&env);
    for (size_t i = 0; in && i < n; i++) sk_manifest_free(in[i]);
    for (size_t i = 0; abs_urls && i < nshards; i++) free(abs_urls[i]);
    for (size_t i = 0; ix && i < nshards; i++) sk_index_close(ix[i]);
    free(in);
    free(order);
    free(abs_urls);
    free(sorted);
    free(ix);
    free(keys);
    free(out_dir);
    free(out_dir_abs);
    sk_manifest_free(out);
    return rc;
}

/* ------------------------------------------------------------------- wids */

int sk_manifest_write_wids(const sk_manifest *m, const char *manifest_path, const char *out_path,
                           sk_error *err)
{
    char *od = sk_dir_of(out_path), *oda = od ? abs_path(od) : NULL;
    json_t *root = json_object(), *list = json_array();
    int rc = SK_OK;
    char *text = NULL;
    if (!oda || !root || !list) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
    json_object_set_new(root, "__kind__", json_string("wids-shard-index-v1"));
    json_object_set_new(root, "wids_version", json_integer(1));
    for (size_t i = 0; i < m->nshards; i++) {
        char *url = rebase(manifest_path, m->shards[i].url, oda);
        if (!url) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
        json_t *o = json_object(), *u = json_string(url); /* NULL: not UTF-8 */
        if (o && !u)
            rc = sk_error_set(err, SK_E_INPUT, "%s: %s: the name is not UTF-8, which wids' JSON "
                              "cannot hold: not written", out_path, url);
        free(url);
        if (!o || !u) {
            json_decref(o);
            json_decref(u);
            if (!rc) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            goto cleanup;
        }
        json_object_set_new(o, "url", u);
        json_object_set_new(o, "nsamples", json_integer((json_int_t)m->shards[i].samples));
        json_object_set_new(o, "filesize", json_integer((json_int_t)m->shards[i].bytes));
        json_array_append_new(list, o);
    }
    json_object_set_new(root, "shardlist", list);
    list = NULL;
    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    struct iovec iov[2] = {{text, strlen(text)}, {(void *)"\n", 1}};
    rc = sk_out_write_iov(out_path, 0, iov, 2, err);
cleanup:
    json_decref(list);
    json_decref(root);
    free(text);
    free(od);
    free(oda);
    return rc;
}
