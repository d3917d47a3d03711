/*
 * upload_plan.c - what `shardkit upload` sends where: local files and
 * directory trees, or one s3:// object or prefix, become (source, key,
 * size) items in a reproducible order (trees walked sorted), data first,
 * then *.idx, then manifest.json, so that a reader never sees a manifest
 * naming objects that are not there yet.  The transfers themselves are
 * sk_s3_xfer's.
 */
#include "core/internal.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

struct sk_upload_plan {
    sk_upload_item *v;
    size_t n, cap;
    char *sbucket; /* s3 sources: their bucket */
};

static int phase_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t n = strlen(base);
    if (!strcmp(base, "manifest.json")) return 2;
    if (n > 4 && !strcmp(base + n - 4, ".idx")) return 1;
    return 0;
}

static int add(sk_upload_plan *p, const char *src, const char *key, uint64_t size, sk_error *err)
{
    SK_GUARD(sk_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v, err));
    sk_upload_item *j = &p->v[p->n];
    char *s = strdup(src), *k = strdup(key);
    if (!s || !k) {
        free(s), free(k);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *j = (sk_upload_item){s, k, size, phase_of(key)};
    p->n++;
    return SK_OK;
}

/* a + "/" + b (no slash when a is empty or already ends in one); NULL when out of memory */
static char *join(const char *a, const char *b)
{
    char *s;
    int slash = *a && a[strlen(a) - 1] != '/' && *b;
    return asprintf(&s, "%s%s%s", a, slash ? "/" : "", b) < 0 ? NULL : s;
}

/* Temporary names of unfinished shards (".NAME.tmp", ".NAME.PID.N.tmp")
 * and the run locks (".NAME.lock") are not part of a dataset. */
static int skip_name(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, ".") || !strcmp(name, "..") ||
           (name[0] == '.' && n > 4 && (!strcmp(name + n - 4, ".tmp") || !strcmp(name + n - 5, ".lock")));
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(sk_upload_plan *p, const char *dir, const char *keyprefix, sk_error *err)
{
    DIR *d = opendir(dir);
    SK_FAIL_IF(!d, err, SK_E_IO, "%s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = SK_OK;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (skip_name(e->d_name)) continue;
        if (!(rc = sk_grow((void **)&names, &cap, n + 1, sizeof *names, err)) &&
            !(names[n] = strdup(e->d_name)))
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else if (!rc)
            n++;
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof *names, name_cmp); /* sorted: runs are reproducible */
    for (size_t i = 0; i < n; i++) {
        char *path = join(dir, names[i]), *key = join(keyprefix, names[i]);
        struct stat st;
        if (!rc && (!path || !key)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc && !lstat(path, &st)) {
            if (S_ISDIR(st.st_mode)) rc = walk(p, path, key, err);
            else if (S_ISREG(st.st_mode)) rc = add(p, path, key, (uint64_t)st.st_size, err);
        }
        free(path), free(key), free(names[i]);
    }
    free(names);
    return rc;
}

struct list_ctx {
    sk_upload_plan *p;
    const char *src_prefix, *dst_prefix;
    sk_error *err;
    int rc;
};

static int list_cb(void *ud, const sk_s3_object *o)
{
    struct list_ctx *c = ud;
    char *key = join(c->dst_prefix, o->key + strlen(c->src_prefix));
    c->rc = key ? add(c->p, o->key, key, o->size, c->err) : sk_error_set(c->err, SK_E_NOMEM, "out of memory");
    free(key);
    return c->rc;
}

/* One s3:// source: an object, or a prefix ("s3://b/dir" names a prefix
 * when no such object exists). */
static int add_s3(sk_upload_plan *p, const char *url, sk_s3 *s3, const char *prefix, int dir_dst,
                  sk_error *err)
{
    char *sk = NULL;
    SK_GUARD(sk_s3_parse_url(url, &p->sbucket, &sk, err));
    sk_s3_object o;
    int is_prefix = !*sk || sk[strlen(sk) - 1] == '/', rc = SK_E_NOTFOUND;
    if (!is_prefix && !(rc = sk_s3_head(s3, p->sbucket, sk, &o, err))) {
        const char *base = strrchr(sk, '/') ? strrchr(sk, '/') + 1 : sk;
        char *key = dir_dst ? join(prefix, base) : strdup(prefix);
        rc = key ? add(p, sk, key, o.size, err) : sk_error_set(err, SK_E_NOMEM, "out of memory");
        free(key);
    } else if (is_prefix || rc == SK_E_NOTFOUND) {
        char *dir = is_prefix ? sk : join(sk, "/");
        char dp[2200];
        snprintf(dp, sizeof dp, "%s%s", prefix, dir_dst || !*prefix ? "" : "/");
        struct list_ctx lc = {p, dir ? dir : "", dp, err, SK_OK};
        rc = dir ? sk_s3_list(s3, p->sbucket, dir, list_cb, &lc, err) : sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc) rc = lc.rc;
        if (!rc && !p->n) rc = sk_error_set(err, SK_E_NOTFOUND, "%s: no such object or prefix", url);
        if (dir != sk) free(dir);
    }
    free(sk);
    return rc;
}

static int item_phase_cmp(const sk_upload_item *a, const sk_upload_item *b)
{
    return a->phase - b->phase;
}

int sk_upload_plan_make(sk_upload_plan **out, const char *const *sources, size_t n, sk_s3 *src_s3,
                        const char *prefix, int dir_dst, sk_error *err)
{
    *out = NULL;
    sk_upload_plan *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    int rc = SK_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        const char *a = sources[i];
        struct stat st;
        if (sk_is_s3_url(a)) {
            rc = n > 1 ? sk_error_set(err, SK_E_USAGE, "an s3:// source must be the only source")
                 : !src_s3 ? sk_error_set(err, SK_E_USAGE, "%s: no S3 client for an s3:// source", a)
                           : add_s3(p, a, src_s3, prefix, dir_dst, err);
        } else if (stat(a, &st)) {
            rc = sk_error_set(err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: %s", a, strerror(errno));
        } else if (S_ISDIR(st.st_mode)) {
            rc = walk(p, a, dir_dst ? prefix : "", err);
        } else {
            const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
            char *key = dir_dst ? join(prefix, base) : strdup(prefix);
            rc = key ? add(p, a, key, (uint64_t)st.st_size, err) : sk_error_set(err, SK_E_NOMEM, "out of memory");
            free(key);
        }
    }
    /* stable: data, then indexes, then manifests */
    for (size_t i = 1; !rc && i < p->n; i++)
        for (size_t j = i; j > 0 && item_phase_cmp(&p->v[j - 1], &p->v[j]) > 0; j--) {
            sk_upload_item t = p->v[j];
            p->v[j] = p->v[j - 1], p->v[j - 1] = t;
        }
    if (rc) {
        sk_upload_plan_free(p);
        return rc;
    }
    *out = p;
    return SK_OK;
}

size_t sk_upload_plan_count(const sk_upload_plan *p) { return p->n; }

const sk_upload_item *sk_upload_plan_item(const sk_upload_plan *p, size_t i)
{
    return i < p->n ? &p->v[i] : NULL;
}

const char *sk_upload_plan_source_bucket(const sk_upload_plan *p) { return p->sbucket; }

void sk_upload_plan_free(sk_upload_plan *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n; i++) free((char *)p->v[i].src), free((char *)p->v[i].key);
    free(p->v);
    free(p->sbucket);
    free(p);
}
