/*
 * upload_plan.c - what `shardkit upload` sends where: local files and
 * directory trees, or one object or prefix in S3, become (source, key,
 * size) items in a reproducible order (trees walked sorted), data first,
 * then *.idx, then manifest.json, so that a reader never sees a manifest
 * naming objects that are not there yet.  Streamed (sk_upload_plan_each):
 * a million-object copy holds one listing page, not a million items.  An
 * source in S3 is read through the store (one HEAD, or its listing, whose
 * entries carry the size, ETag and CRC32C a server-side copy is checked
 * against).  The transfers themselves are sk_s3_xfer's.
 */
#include "core/internal.h"
#include "io/store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

struct sk_upload_plan {
    sk_upload_item *v;
    size_t n, cap;
    char *sbucket; /* s3 sources: their bucket */
};

/* One pass over the sources, for one phase: items of other phases are
 * passed over by name before any stat, so three passes cost little more
 * than one, and nothing is held but one directory's names or one listing
 * page.  Holding every item and sorting by phase (what this replaced) grew
 * with the object count and sorted in O(n^2). */
struct walk {
    int phase;
    sk_upload_each_fn each;
    void *ud;
    const char *sbucket; /* the copyable source's bucket, or NULL */
    uint64_t found;      /* items of any phase seen in this pass */
    uint64_t later;      /* items of later phases seen in this pass: none, no more passes */
    sk_error *err;
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

static int emit(struct walk *w, const char *src, const char *key, uint64_t size, const sk_s3_object *obj)
{
    w->found++;
    int phase = phase_of(key);
    if (phase > w->phase) w->later++;
    if (phase != w->phase) return SK_OK;
    sk_upload_item it = {src, key, size, phase, obj};
    return w->each(w->ud, &it, w->sbucket, w->err);
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

/* Each name is kept behind one byte of its d_type: the sort skips it, and
 * the walk uses it to pass over files of other phases without an lstat. */
static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a + 1, *(char *const *)b + 1);
}

static int walk_dir(struct walk *w, const char *dir, const char *keyprefix)
{
    DIR *d = opendir(dir);
    SK_FAIL_IF(!d, w->err, SK_E_IO, "%s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = SK_OK;
    for (struct dirent *e; !rc && (e = readdir(d));) {
        if (skip_name(e->d_name)) continue;
        if (!(rc = sk_grow((void **)&names, &cap, n + 1, sizeof *names, w->err)) &&
            asprintf(&names[n], "%c%s", (char)e->d_type, e->d_name) < 0)
            rc = sk_error_set(w->err, SK_E_NOMEM, "out of memory");
        else if (!rc)
            n++;
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof *names, name_cmp); /* sorted: runs are reproducible */
    for (size_t i = 0; i < n; i++) {
        const char *name = names[i] + 1;
        int ph = phase_of(name);
        if (!rc && (unsigned char)names[i][0] == DT_REG && ph != w->phase) {
            w->found++; /* another pass sends it */
            if (ph > w->phase) w->later++;
            free(names[i]);
            continue;
        }
        char *path = rc ? NULL : join(dir, name), *key = rc ? NULL : join(keyprefix, name);
        struct stat st;
        if (!rc && (!path || !key)) rc = sk_error_set(w->err, SK_E_NOMEM, "out of memory");
        if (!rc && !lstat(path, &st)) {
            if (S_ISDIR(st.st_mode)) rc = walk_dir(w, path, key);
            else if (S_ISREG(st.st_mode)) rc = emit(w, path, key, (uint64_t)st.st_size, NULL);
        }
        free(path), free(key), free(names[i]);
    }
    free(names);
    return rc;
}

/* The source as the copy knows it: listed or HEADed, key and all. */
static sk_s3_object known(const char *key, uint64_t size, const char *etag, const char *crc32c)
{
    sk_s3_object o;
    memset(&o, 0, sizeof o);
    o.size = size;
    snprintf(o.etag, sizeof o.etag, "%s", etag);
    snprintf(o.crc32c, sizeof o.crc32c, "%s", crc32c);
    snprintf(o.key, sizeof o.key, "%s", key);
    return o;
}

struct list_ctx {
    struct walk *w;
    const char *src_prefix, *dst_prefix;
    int rc;
};

static int list_page(void *ud, const sk_store_entry *v, size_t n)
{
    struct list_ctx *c = ud;
    for (size_t i = 0; !c->rc && i < n; i++) {
        char *src = join(c->src_prefix, v[i].rel), *key = join(c->dst_prefix, v[i].rel);
        if (!src || !key || strlen(src) >= sizeof ((sk_s3_object *)0)->key) {
            c->rc = sk_error_set(c->w->err, src && key ? SK_E_REMOTE : SK_E_NOMEM, "%s%s",
                                 src && key ? v[i].url : "out of memory",
                                 src && key ? ": a key longer than S3's 1024 bytes" : "");
        } else {
            sk_s3_object o = known(src, v[i].size, v[i].etag, v[i].crc32c);
            c->rc = emit(c->w, src, key, o.size, &o);
        }
        free(src), free(key);
    }
    return c->rc;
}

/* One source url in S3: an object, or a prefix (bucket "b", key "dir" names a
 * prefix when no such object exists); sk is its key (inside url). */
static int walk_s3(struct walk *w, const char *sk, const char *url, sk_store_env *env,
                   const char *prefix, int dir_dst)
{
    sk_error *err = w->err;
    int is_prefix = !*sk || sk[strlen(sk) - 1] == '/', rc = SK_E_NOTFOUND;
    if (!is_prefix) {
        sk_store *st;
        sk_store_stat sb;
        if (!(rc = sk_store_open(&st, url, env, err))) {
            rc = st->ops->stat(st, &sb, err);
            sk_store_close(st);
        }
        if (!rc) {
            const char *base = strrchr(sk, '/') ? strrchr(sk, '/') + 1 : sk;
            char *key = dir_dst ? join(prefix, base) : strdup(prefix);
            sk_s3_object o = known(sk, sb.size, sb.etag, sb.crc32c);
            rc = key ? emit(w, sk, key, o.size, &o) : sk_error_set(err, SK_E_NOMEM, "out of memory");
            free(key);
        }
    }
    if (is_prefix || rc == SK_E_NOTFOUND) {
        /* (join(sk, "/") would be "dir//": a listing of nothing) */
        char *dir = is_prefix ? (char *)sk : NULL, *durl = is_prefix ? (char *)url : NULL;
        if (!is_prefix && asprintf(&dir, "%s/", sk) < 0) dir = NULL;
        if (!is_prefix && asprintf(&durl, "%s/", url) < 0) durl = NULL;
        char dp[2200];
        snprintf(dp, sizeof dp, "%s%s", prefix, dir_dst || !*prefix ? "" : "/");
        struct list_ctx lc = {w, dir ? dir : "", dp, SK_OK};
        rc = dir && durl ? sk_store_list_entries(durl, env, 1, NULL, list_page, &lc, err)
                         : sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc && !w->found) rc = sk_error_set(err, SK_E_NOTFOUND, "%s: no such object or prefix", url);
        if (dir != sk) free(dir);
        if (durl != url) free(durl);
    }
    return rc;
}

int sk_upload_plan_each(const char *const *sources, size_t n, sk_s3 *src_s3, const char *prefix, int dir_dst,
                        sk_upload_each_fn each, void *ud, sk_error *err)
{
    /* the sources are checked before anything is sent: a typo in the
     * last argument must not leave the first ones half uploaded */
    sk_store_where where = {0};
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        SK_GUARD(sk_store_classify(sources[i], &where, err));
        /* a remote source is copied server-side, the bytes never passing
         * here: only a store whose objects can be (where.copyable) */
        SK_FAIL_IF(where.remote && !where.copyable, err, SK_E_USAGE, "%s: upload copies local files "
                   "and objects in S3 (download it first)", sources[i]);
        if (where.copyable) {
            SK_FAIL_IF(n > 1, err, SK_E_USAGE, "a source in S3 must be the only source");
            SK_FAIL_IF(!src_s3, err, SK_E_USAGE, "%s: no S3 client for a source in S3", sources[i]);
        } else if (stat(sources[i], &st)) {
            return sk_error_set(err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: %s", sources[i],
                                strerror(errno));
        }
    }
    /* where: the only source's when it is copyable (its bucket and key) */
    char *sbucket = where.copyable ? strndup(sources[0] + where.host, where.host_len) : NULL;
    const char *skey = sbucket ? sources[0] + where.path : NULL;
    SK_FAIL_IF(where.copyable && !sbucket, err, SK_E_NOMEM, "out of memory");
    sk_store_env env;
    sk_store_env_init(&env, src_s3);
    int rc = SK_OK;
    for (int phase = 0; !rc && phase < 3; phase++) {
        struct walk w = {phase, each, ud, sbucket, 0, 0, err};
        for (size_t i = 0; !rc && i < n; i++) {
            const char *a = sources[i];
            struct stat st;
            if (sbucket) {
                rc = walk_s3(&w, skey, a, &env, prefix, dir_dst);
            } else if (stat(a, &st)) {
                rc = sk_error_set(err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: %s", a, strerror(errno));
            } else if (S_ISDIR(st.st_mode)) {
                rc = walk_dir(&w, a, dir_dst ? prefix : "");
            } else {
                const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
                char *key = dir_dst ? join(prefix, base) : strdup(prefix);
                rc = key ? emit(&w, a, key, (uint64_t)st.st_size, NULL) : sk_error_set(err, SK_E_NOMEM, "out of memory");
                free(key);
            }
        }
        /* nothing of a later phase in this walk: no other walk has work
         * (for a prefix in S3, two listings fewer) */
        if (!w.later) break;
    }
    sk_store_env_release(&env);
    free(sbucket);
    return rc;
}

/* The whole plan in memory, for callers that want to look before sending
 * (a dry run, tests): sk_upload_plan_each collected. */
struct collect {
    sk_upload_plan *p;
};

static int collect_one(void *ud, const sk_upload_item *it, const char *src_bucket, sk_error *err)
{
    sk_upload_plan *p = ((struct collect *)ud)->p;
    if (src_bucket && !p->sbucket && !(p->sbucket = strdup(src_bucket)))
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    SK_GUARD(sk_grow((void **)&p->v, &p->cap, p->n + 1, sizeof *p->v, err));
    char *s = strdup(it->src), *k = strdup(it->key);
    sk_s3_object *c = it->obj ? malloc(sizeof *c) : NULL;
    if (c) *c = *it->obj;
    if (!s || !k || (it->obj && !c)) {
        free(s), free(k), free(c);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    p->v[p->n++] = (sk_upload_item){s, k, it->size, it->phase, c};
    return SK_OK;
}

int sk_upload_plan_make(sk_upload_plan **out, const char *const *sources, size_t n, sk_s3 *src_s3,
                        const char *prefix, int dir_dst, sk_error *err)
{
    *out = NULL;
    sk_upload_plan *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    struct collect c = {p};
    int rc = sk_upload_plan_each(sources, n, src_s3, prefix, dir_dst, collect_one, &c, err);
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
    for (size_t i = 0; i < p->n; i++)
        free((char *)p->v[i].src), free((char *)p->v[i].key), free((sk_s3_object *)p->v[i].obj);
    free(p->v);
    free(p->sbucket);
    free(p);
}
