/*
 * existing.c - the manifest a run finds where it is about to write one: what
 * pack, shard and the sample writer may do with it.  A dataset is never
 * shrunk by accident (docs/pack.md, "Adding to a dataset"):
 *
 *   - by default (SK_EXISTING_REFUSE) a manifest that lists a shard this
 *     run will not write itself is refused before any shard is written,
 *     naming it: a second pack with another pattern, or with --start 3,
 *     would otherwise drop the earlier shards out of the dataset;
 *   - SK_EXISTING_APPEND continues the dataset: numbering after its last
 *     shard, the options it was written with (all but "start"), the
 *     manifest rewritten with the old shards first (first ordinals
 *     continue), through a temporary name and a rename under the run's
 *     lock (one PUT for an s3:// manifest);
 *   - SK_EXISTING_OVERWRITE replaces it on purpose.
 *
 * Kept apart from the writers so that the three of them share one rule.
 */
#include "io/io.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* The pattern as the manifest names its shards: relative to its directory
 * when under it (pack_out.c's rule for shard URLs). */
static char *relative_pattern(const char *pattern, const char *mdir)
{
    size_t dl = strlen(mdir);
    const char *rel = pattern;
    if (dl && !strncmp(pattern, mdir, dl) && pattern[dl] == '/') rel = pattern + dl + 1;
    else if (!dl && !strncmp(pattern, "./", 2)) rel = pattern + 2;
    return strdup(rel);
}

/* The manifest at mpath, or *out = NULL when there is none. */
static int load_existing(sk_s3 *s3, const char *mpath, sk_manifest **out, sk_error *err)
{
    *out = NULL;
    int rc;
    if (sk_is_s3_url(mpath)) {
        SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", mpath);
        sk_error e = SK_ERROR_INIT;
        rc = sk_s3_load_manifest(s3, mpath, out, &e);
        if (rc == SK_E_NOTFOUND) return SK_OK;
        if (rc) *err = e;
        return rc;
    }
    struct stat st;
    int found = stat(mpath, &st) == 0;
    if (!found && errno == ENOENT) return SK_OK;
    /* a device or FIFO the user named (/dev/null, a pipe to a consumer)
     * holds no dataset, and reading one could block: what may be written
     * there is the writer's rule (core/fsutil.c) */
    if (found && !S_ISREG(st.st_mode)) return SK_OK;
    rc = sk_manifest_load(out, mpath, err);
    return rc == SK_E_NOTFOUND ? SK_OK : rc;
}

/* The first difference between the options two runs recorded, "start"
 * aside (an append starts where the dataset ends); "" when none.  path:
 * where in the JSON (e.g. "max_size", "images.image_size"). */
static int options_differ(json_t *a, json_t *b, const char *path, char *buf, size_t cap)
{
    if (json_is_object(a) && json_is_object(b)) {
        const char *k;
        json_t *v;
        for (int pass = 0; pass < 2; pass++) {
            json_t *x = pass ? b : a, *y = pass ? a : b;
            json_object_foreach(x, k, v) {
                if (!strcmp(k, "start")) continue;
                char sub[256];
                snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", k);
                json_t *w = json_object_get(y, k);
                json_t *old = pass ? w : v, *new = pass ? v : w;
                if (!w) {
                    char *o = old ? json_dumps(old, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                    char *n = new ? json_dumps(new, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
                    snprintf(buf, cap, "%s: the dataset's %s, this run's %s", sub, o ? o : "(none)",
                             n ? n : "(none)");
                    free(o), free(n);
                    return 1;
                }
                if (options_differ(old, new, sub, buf, cap)) return 1;
            }
        }
        return 0;
    }
    if (json_equal(a, b)) return 0;
    char *o = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    char *n = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(buf, cap, "%s: the dataset's %s, this run's %s", path[0] ? path : "options",
             o ? o : "?", n ? n : "?");
    free(o), free(n);
    return 1;
}

static int check_append(sk_existing *g, const char *options_json, uint64_t *start, sk_error *err)
{
    const sk_manifest *m = g->old;
    const char *mp = g->mpath;
    SK_FAIL_IF(g->parts || m->parts, err, SK_E_USAGE,
               "%s: --append adds to a whole dataset, not to one --part's manifest "
               "(append to the merged manifest instead)", mp);
    SK_FAIL_IF(!m->options_json, err, SK_E_USAGE,
               "%s records no options (written by index or merge?): --append cannot tell "
               "whether this run's shards match; --overwrite replaces it", mp);
    json_error_t je;
    json_t *a = json_loads(m->options_json, 0, &je), *b = json_loads(options_json, 0, &je);
    char diff[1024] = "";
    int differ = !a || !b || options_differ(a, b, "", diff, sizeof diff);
    json_decref(a), json_decref(b);
    SK_FAIL_IF(differ, err, SK_E_USAGE,
               "%s: --append with other options than the dataset was written with (%s): "
               "give the same ones, or write a new dataset", mp, diff[0] ? diff : "unreadable");
    uint64_t last;
    const char *lu = m->shards[m->nshards - 1].url;
    SK_FAIL_IF(!sk_shard_number(g->relpat, lu, &last), err, SK_E_USAGE,
               "%s: --append: its last shard %s is not one of the names %s gives; give the "
               "dataset's pattern", mp, lu, g->relpat);
    for (size_t i = 0; i + 1 < m->nshards; i++) { /* none of them may be written over */
        uint64_t n;
        if (sk_shard_number(g->relpat, m->shards[i].url, &n) && n > last) last = n;
    }
    SK_FAIL_IF(*start && *start <= last, err, SK_E_USAGE,
               "%s: --append --start %llu would write over the dataset's shards (its last is "
               "number %llu): leave --start out to continue after it", mp,
               (unsigned long long)*start, (unsigned long long)last);
    if (!*start) *start = last + 1;
    g->start = *start;
    return SK_OK;
}

/* Refuses when the manifest lists a shard this run's pattern does not name
 * at start or after.  Not by the run's count (n): a rerun of the same job
 * into its own names that ends with fewer shards (a changed plan, fewer
 * inputs) replaces the manifest, and sk_existing_commit names what it no
 * longer lists; a writer that cuts as it goes could not tell sooner. */
static int check_replace(sk_existing *g, uint64_t start, uint64_t n, sk_error *err)
{
    (void)n;
    n = UINT64_MAX;
    const sk_manifest *m = g->old;
    size_t dropped = 0;
    const char *first = NULL;
    for (size_t i = 0; i < m->nshards; i++) {
        uint64_t k;
        if (sk_shard_number(g->relpat, m->shards[i].url, &k) && k >= start &&
            (n == UINT64_MAX || k - start < n))
            continue;
        if (!dropped++) first = m->shards[i].url;
    }
    SK_FAIL_IF(dropped, err, SK_E_USAGE,
               "%s lists %zu shard%s this run would not write (%s%s): --append adds this run's "
               "shards to that dataset, --overwrite replaces its manifest", g->mpath, dropped,
               dropped == 1 ? "" : "s", first, dropped > 1 ? ", ..." : "");
    return SK_OK;
}

int sk_existing_begin(sk_existing *g, sk_s3 *s3, const char *pattern, const char *mpath, const char *mdir,
                  const char *options_json, uint64_t *start, uint64_t nshards, sk_error *err)
{
    g->began = 1;
    if (g->mode == SK_EXISTING_OVERWRITE) return SK_OK;
    SK_FAIL_IF(g->mode != SK_EXISTING_REFUSE && g->mode != SK_EXISTING_APPEND, err, SK_E_USAGE,
               "%s: existing = %d is not SK_EXISTING_REFUSE, _APPEND or _OVERWRITE", mpath, g->mode);
    free(g->mpath), free(g->relpat);
    g->mpath = strdup(mpath);
    g->relpat = relative_pattern(pattern, mdir);
    SK_FAIL_IF(!g->mpath || !g->relpat, err, SK_E_NOMEM, "out of memory");
    sk_manifest_free(g->old);
    g->old = NULL;
    sk_error le = SK_ERROR_INIT;
    int rc = load_existing(s3, mpath, &g->old, &le);
    if (rc == SK_E_USAGE) return *err = le, rc; /* no client: nothing about the manifest to add */
    SK_FAIL_IF(rc, err, rc, "%s (the manifest already there: %s; --overwrite replaces it)",
               le.msg, g->mode == SK_EXISTING_APPEND ? "--append needs it read"
                                                     : "this run cannot tell what it lists");
    if (!g->old || !g->old->nshards) {
        sk_manifest_free(g->old);
        g->old = NULL;
        g->start = *start;
        return SK_OK;
    }
    if (g->mode == SK_EXISTING_APPEND) return check_append(g, options_json, start, err);
    g->start = *start;
    return check_replace(g, *start, nshards, err);
}

static int same_shards(const sk_manifest *a, const sk_manifest *b)
{
    if (a->nshards != b->nshards) return 0;
    for (size_t i = 0; i < a->nshards; i++)
        if (strcmp(a->shards[i].url, b->shards[i].url) || a->shards[i].crc32c != b->shards[i].crc32c ||
            a->shards[i].bytes != b->shards[i].bytes)
            return 0;
    return 1;
}

static int add_all(sk_manifest *to, const sk_manifest *from, sk_error *err)
{
    for (size_t i = 0; i < from->nshards; i++) {
        sk_manifest_shard s = from->shards[i];
        s.part = 0;
        SK_GUARD(sk_manifest_add_shard(to, &s, err));
        const char *f, *l;
        size_t fl, ll;
        if (sk_manifest_key_range(from, i, &f, &fl, &l, &ll))
            SK_GUARD(sk_manifest_set_key_range(to, to->nshards - 1, f, fl, l, ll, err));
    }
    for (size_t i = 0; i < from->nexts; i++)
        SK_GUARD(sk_manifest_count_ext(to, from->exts[i].ext, strlen(from->exts[i].ext),
                                       from->exts[i].count, err));
    return SK_OK;
}

int sk_existing_commit(sk_existing *g, sk_s3 *s3, sk_manifest *man, const char *mpath,
                       unsigned flags, void (*warn)(void *, const char *), void *ctx, sk_error *err)
{
    if (!g->old || g->mode == SK_EXISTING_OVERWRITE) return sk_sink_put_manifest(s3, man, mpath, flags, err);
    if (g->mode == SK_EXISTING_REFUSE) {
        /* the same names rewritten, fewer of them (a writer that cuts as it
         * goes could not tell before): the rest stay on disk, named */
        size_t gone = 0;
        const char *first = NULL;
        for (size_t i = 0; i < g->old->nshards; i++) {
            size_t k = 0;
            while (k < man->nshards && strcmp(man->shards[k].url, g->old->shards[i].url)) k++;
            if (k == man->nshards && !gone++) first = g->old->shards[i].url;
        }
        /* nothing written over: the earlier manifest still tells the truth */
        SK_FAIL_IF(gone && !man->nshards, err, SK_E_USAGE,
                   "%s lists %zu shard%s and this run wrote none: left as it is (--overwrite "
                   "replaces it)", mpath, gone, gone == 1 ? "" : "s");
        if (gone && warn) {
            char msg[SK_ERROR_MAX + 128];
            snprintf(msg, sizeof msg, "%s no longer lists %zu shard%s of the earlier run (%s%s): "
                     "this run wrote fewer; their files are left as they are", mpath, gone,
                     gone == 1 ? "" : "s", first, gone > 1 ? ", ..." : "");
            warn(ctx, msg);
        }
        return sk_sink_put_manifest(s3, man, mpath, flags, err);
    }
    /* append: read again (under the run's lock for a local one) and grow
     * what is there now, which must still be what the run started from */
    sk_manifest *now = NULL, *all = NULL;
    int rc = load_existing(s3, mpath, &now, err);
    if (!rc && (!now || !same_shards(now, g->old)))
        rc = sk_error_set(err, SK_E_MISMATCH, "%s changed while this run appended to it (another "
                          "writer?): its shards are not the ones the run started from; the "
                          "new shards are written, the manifest is not", mpath);
    if (!rc && !(all = sk_manifest_new())) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc && !(all->options_json = strdup(now->options_json)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) rc = add_all(all, now, err);
    if (!rc) rc = add_all(all, man, err);
    if (!rc) rc = sk_sink_put_manifest(s3, all, mpath, flags, err);
    sk_manifest_free(now);
    sk_manifest_free(all);
    return rc;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sk_existing_listed(sk_s3 *s3, const char *mpath, const sk_manifest *man, const char *verb,
                       sk_error *err)
{
    sk_manifest *old = NULL;
    sk_error le = SK_ERROR_INIT;
    int rc = load_existing(s3, mpath, &old, &le);
    if (rc == SK_E_USAGE) return *err = le, rc; /* no client: nothing about the manifest to add */
    SK_FAIL_IF(rc, err, rc, "%s (the manifest already there: this run cannot tell what it lists; "
               "--overwrite replaces it)", le.msg);
    if (!old) return SK_OK;
    const char **urls = calloc(man->nshards + 1, sizeof *urls);
    if (!urls) {
        sk_manifest_free(old);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < man->nshards; i++) urls[i] = man->shards[i].url;
    qsort(urls, man->nshards, sizeof *urls, str_cmp);
    size_t missing = 0;
    const char *first = NULL;
    for (size_t i = 0; i < old->nshards; i++) {
        const char *u = old->shards[i].url;
        if (!bsearch(&u, urls, man->nshards, sizeof *urls, str_cmp) && !missing++) first = u;
    }
    if (missing)
        rc = sk_error_set(err, SK_E_USAGE, "%s lists %zu shard%s this run did not %s (%s%s): "
                          "--overwrite replaces it, or give -o another manifest", mpath, missing,
                          missing == 1 ? "" : "s", verb, first, missing > 1 ? ", ..." : "");
    free(urls);
    sk_manifest_free(old);
    return rc;
}

void sk_existing_release(sk_existing *g)
{
    sk_manifest_free(g->old);
    free(g->mpath);
    free(g->relpat);
    g->old = NULL;
    g->mpath = g->relpat = NULL;
}
