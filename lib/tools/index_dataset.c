/*
 * index_dataset.c - `shardkit index` as a library call: the sidecar index
 * of every shard (brace patterns expanded), built on several threads, and
 * the dataset's manifest (and wids' index) once all are built.  Shards are
 * built in any order, but everything a build reports - warnings, its
 * result, its manifest entry - is handed on in shard order, so output and
 * manifest never depend on --jobs or on scheduling.
 */
#include "core/internal.h"
#include "format/format.h"
#include "format/tar.h"
#include "io/io.h"
#include "io/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* One shard's build.  With several jobs, shards are built by worker threads
 * in any order, but everything a build reports (warnings, errors, the
 * summary line, the manifest entry) is emitted by the main thread in shard
 * order, so the output does not depend on -j or on scheduling. */
struct job {
    const sk_index_dataset_opts *o;
    const char *shard;
    char *idx, *dpath; /* where its index and DALI index go: beside it, local or remote */
    int remote;        /* the shard is in an object store: its outputs are objects beside it */
    sk_build_stats st;
    sk_error err;
    int rc, done;
    sk_manifest *exts; /* the shard's extension counts, for the manifest */
    sk_key_range keys; /* its smallest and largest key, for the manifest (first NULL: none) */
    int exts_rc;
    sk_error exts_err;
    char *warns; /* the build's warnings, held back until the shard's turn */
    size_t wlen;
    FILE *wf;
};

struct pool {
    struct job *jobs;
    size_t n, next;
    unsigned flags;
    int count_exts;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a job is done */
};

/* A build's warnings, held back until the shard's turn (NUL-separated). */
static void warn_buffer(void *ctx, const char *msg)
{
    struct job *j = ctx;
    if (!j->wf) j->wf = open_memstream(&j->warns, &j->wlen);
    if (j->wf) fprintf(j->wf, "%s%c", msg, 0);
    else if (j->o->warn) j->o->warn(j->o->ctx, msg); /* out of memory: out of order beats lost */
}

static int add_exts(sk_manifest *m, const sk_index *ix, sk_key_range *keys, sk_error *err)
{
    /* A shard has a handful of extensions and as many members as samples
     * times that: tally them here (the index keeps the strings mapped),
     * then add one count per extension. */
    struct { const char *ext; size_t len; uint64_t n; } seen[16];
    size_t nseen = 0;
    int rc = SK_OK;
    for (uint64_t i = 0; !rc && i < sk_index_member_count(ix); i++) {
        sk_member_ref r;
        if ((rc = sk_index_member(ix, i, &r, err))) break;
        size_t k = 0;
        while (k < nseen && !(seen[k].len == r.ext_len && !memcmp(seen[k].ext, r.ext, r.ext_len))) k++;
        if (k < nseen) {
            seen[k].n++;
        } else if (nseen < sizeof seen / sizeof *seen && !memchr(r.ext, 0, r.ext_len)) {
            seen[nseen].ext = r.ext;
            seen[nseen].len = r.ext_len;
            seen[nseen++].n = 1;
        } else {
            /* many extensions, or one with a NUL (counted as before) */
            rc = sk_manifest_count_ext(m, r.ext, r.ext_len, 1, err);
        }
    }
    for (size_t k = 0; !rc && k < nseen; k++)
        rc = sk_manifest_count_ext(m, seen[k].ext, seen[k].len, seen[k].n, err);
    const char *f, *l; /* the key range, while the index is open */
    if (!rc && sk_index_sample_count(ix) &&
        !(rc = sk_index_key_bounds(ix, &f, &keys->first_len, &l, &keys->last_len, err))) {
        keys->first = malloc(keys->first_len + 1);
        keys->last = malloc(keys->last_len + 1);
        if (!keys->first || !keys->last) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else memcpy(keys->first, f, keys->first_len), memcpy(keys->last, l, keys->last_len);
    }
    return rc;
}

/* kept: an index already there; else the one just built at path */
static int count_exts(struct job *j, const sk_index *kept, const char *path)
{
    j->exts_err = (sk_error)SK_ERROR_INIT;
    if (!(j->exts = sk_manifest_new()))
        return sk_error_set(&j->exts_err, SK_E_NOMEM, "out of memory");
    if (kept) return add_exts(j->exts, kept, &j->keys, &j->exts_err);
    sk_index *ix;
    int rc = sk_index_open(&ix, path, SK_INDEX_TRUST_BODY, &j->exts_err);
    if (!rc) {
        rc = add_exts(j->exts, ix, &j->keys, &j->exts_err);
        sk_index_close(ix);
    }
    return rc;
}

/* --resume of a remote shard: its index object is the shard's (the
 * store's check) and, with --dali, the DALI index exists. */
static int kept_index(struct job *j, sk_index **ix)
{
    *ix = NULL;
    if (!j->o->resume || !j->remote) return 0;
    sk_store_env env;
    sk_store *s = NULL;
    sk_store_stat st;
    sk_store_env_init(&env, j->o->s3);
    int ok = sk_store_index_kept(&env, j->shard, ix);
    if (ok && j->dpath) ok = !sk_store_open(&s, j->dpath, &env, NULL) && !s->ops->stat(s, &st, NULL);
    sk_store_close(s);
    sk_store_env_release(&env);
    if (!ok) {
        sk_index_close(*ix);
        *ix = NULL;
    }
    return ok;
}

/* Builds the shard's index (and DALI index) beside it, wherever it is:
 * the store's beside-outputs say how (a local file renamed into place, or
 * a scratch file PUT as an object keeping the shard's ETag). */
static void build_job(struct job *j, sk_build_opts *bo, int count)
{
    sk_error *e = &j->err;
    sk_store_env env;
    sk_beside bi, bd;
    memset(&bd, 0, sizeof bd);
    sk_store_env_init(&env, j->o->s3);
    j->rc = sk_beside_begin(&bi, &env, j->idx, j->shard, "idx", e);
    if (!j->rc && j->dpath) j->rc = sk_beside_begin(&bd, &env, j->dpath, NULL, "dali", e);
    if (!j->rc) {
        bo->index_path = bi.path;
        bo->dali_path = j->dpath ? bd.path : NULL;
        j->rc = sk_index_build(j->shard, bo, &j->st, e);
        /* Counting extensions reads the whole member table: done here, on
         * the job's thread, not serially by the main thread.  The counts
         * are merged in shard order; the manifest sorts them anyway. */
        if (!j->rc && count) j->exts_rc = count_exts(j, NULL, bi.path);
    }
    /* the DALI index first: an index object beside a shard then means the
     * shard's whole job was done (what --resume checks) */
    if (!j->rc && j->dpath) j->rc = sk_beside_put(&bd, &env, e);
    if (!j->rc) j->rc = sk_beside_put(&bi, &env, e);
    sk_beside_end(&bi);
    sk_beside_end(&bd);
    sk_store_env_release(&env);
}

static void run_job(struct job *j, unsigned flags, int buffered, int count_exts_too)
{
    sk_build_opts bo = {.struct_size = sizeof bo, .flags = flags, .index_path = j->idx,
                        .dali_path = j->dpath, .warn = buffered ? warn_buffer : j->o->warn,
                        .warn_ctx = buffered ? (void *)j : j->o->ctx, .s3 = j->o->s3};
    j->err = (sk_error)SK_ERROR_INIT;
    sk_index *kept;
    if (kept_index(j, &kept)) {
        const sk_index_shard_info *in = sk_index_shard(kept);
        j->st = (sk_build_stats){.samples = sk_index_sample_count(kept),
                                 .members = sk_index_member_count(kept), .bytes = in->size,
                                 .crc32c = in->crc32c, .flags = in->flags, .kept = 1};
        if (count_exts_too) j->exts_rc = count_exts(j, kept, NULL);
        sk_index_close(kept);
        return;
    }
    build_job(j, &bo, count_exts_too);
    if (j->wf) {
        fclose(j->wf);
        j->wf = NULL;
    }
}

/* Adds a job's extension counts to the dataset's. */
static int merge_exts(sk_manifest *m, const struct job *j, sk_error *err)
{
    if (j->exts_rc) {
        *err = j->exts_err;
        return j->exts_rc;
    }
    int rc = SK_OK;
    for (size_t i = 0; !rc && i < j->exts->nexts; i++) {
        const sk_manifest_ext *e = &j->exts->exts[i];
        rc = sk_manifest_count_ext(m, e->ext, strlen(e->ext), e->count, err);
    }
    return rc;
}

static void *worker(void *arg)
{
    struct pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i == p->n) return NULL;
        run_job(&p->jobs[i], p->flags, 1, p->count_exts);
        pthread_mutex_lock(&p->mu);
        p->jobs[i].done = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

/* Directory part of p ("." when none). */
static char *dirname_of(const char *p)
{
    const char *sl = strrchr(p, '/');
    if (!sl) return strdup(".");
    if (sl == p) return strdup("/");
    return strndup(p, (size_t)(sl - p));
}

/* Longest common directory of two directories, in place in a. */
static void common_dir(char *a, const char *b)
{
    int abs = a[0] == '/';
    size_t i = 0;
    while (a[i] && a[i] == b[i]) i++;
    if (!((a[i] == 0 || a[i] == '/') && (b[i] == 0 || b[i] == '/'))) {
        while (i > 0 && a[i - 1] != '/') i--;
        if (i > 0) i--;
    }
    a[i] = 0;
    if (!a[0]) strcpy(a, abs ? "/" : ".");
}


static const sk_index_dataset_opts no_opts = {.struct_size = sizeof no_opts};

void sk_index_dataset_opts_init_sized(sk_index_dataset_opts *o, size_t size)
{
    sk_options_init(o, size, &no_opts, sizeof no_opts);
}

/* The shard list: every pattern brace-expanded, through the one resolver
 * (io/dataset.c); a manifest or a local directory is not an input of
 * index. */
static int expand(const char *const *patterns, size_t n, sk_s3 *s3, char ***out, size_t *count,
                  sk_error *err)
{
    /* a prefix in S3: the shard objects listed under it (the manifest
     * there, if any, is what this run replaces) */
    sk_store_env env; /* http(s):// shards are taken (a web server's: no listing) */
    sk_store_env_init(&env, s3);
    sk_ds_opts ro = {.flags = SK_DS_PREFIX | SK_DS_LISTING, .s3 = s3, .env = &env};
    sk_ds_shard *list = NULL;
    size_t k = 0;
    int rc = SK_OK;
    for (size_t i = 0; !rc && i < n; i++) rc = sk_ds_resolve(patterns[i], &ro, &list, &k, err);
    sk_store_env_release(&env);
    char **shards = rc ? NULL : calloc(k + 1, sizeof *shards);
    if (!rc && !shards) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < k; i++) {
        shards[i] = list[i].url; /* moved */
        list[i].url = NULL;
    }
    sk_ds_free(list, k);
    if (rc) return rc;
    *out = shards;
    *count = k;
    return SK_OK;
}

/* Hands a job's held-back warnings on, in order. */
static void emit_warnings(const sk_index_dataset_opts *o, const struct job *j)
{
    for (size_t at = 0; j->warns && at < j->wlen; at += strlen(j->warns + at) + 1)
        if (o->warn) o->warn(o->ctx, j->warns + at);
}

static int sagemaker(const sk_index_dataset_opts *o, const char *mpath, sk_error *err)
{
    sk_sagemaker_opts so;
    sk_sagemaker_opts_init(&so);
    if (o->sagemaker_opts)
        SK_GUARD(sk_options_take(&so, sizeof so, o->sagemaker_opts, NULL, "sk_sagemaker_opts", err));
    if (!so.s3) so.s3 = o->s3;
    if (!so.warn) so.warn = o->warn, so.ctx = o->ctx;
    return sk_sagemaker_manifest_write(mpath, o->sagemaker, &so, err);
}

/* Before anything is written: no output of the run (the manifest, the wids
 * JSON, an index or DALI sidecar) is one of its input shards, by identity
 * ("index a.tar -o a.tar" would replace the shard with JSON). */
static int refuse_inputs(const sk_index_dataset_opts *o, char *const *shards, size_t n,
                         const struct job *jobs, const char *mpath, const char *mdir, sk_error *err)
{
    sk_fileids ids = {0};
    int rc = SK_OK;
    char *wp = NULL;
    for (size_t i = 0; i < n && !rc; i++) rc = sk_fileids_add(&ids, shards[i], err);
    if (!rc && !o->no_manifest) rc = sk_fileids_refuse(&ids, mpath, "the manifest", err);
    if (!rc && !o->no_manifest && o->wids) {
        if (*o->wids) rc = sk_fileids_refuse(&ids, o->wids, "--wids", err);
        else if (asprintf(&wp, "%s/wids.json", mdir) < 0) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else rc = sk_fileids_refuse(&ids, wp, "--wids", err);
    }
    if (!rc && !o->no_manifest && o->sagemaker)
        rc = sk_fileids_refuse(&ids, o->sagemaker, "--sagemaker-manifest", err);
    for (size_t i = 0; i < n && !rc; i++) {
        if (jobs[i].remote) continue; /* objects: no local file to be */
        if (jobs[i].idx) rc = sk_fileids_refuse(&ids, jobs[i].idx, "its index", err);
        if (!rc && jobs[i].dpath) rc = sk_fileids_refuse(&ids, jobs[i].dpath, "its DALI index", err);
    }
    free(wp);
    sk_fileids_free(&ids);
    return rc;
}

/* Where the shards are, counted before anything is read. */
struct places {
    size_t remote, s3, ro;      /* ro: on a web server, which takes no writes */
    const char *first_s3, *first_ro;
};

/* The run's places agree, before anything is read or written: what wids
 * reads (local files and http(s):// URLs, never S3), where the indexes
 * of shards on a web server go (the manifest's directory, which must then
 * be local), and where the manifest goes.  SK_E_USAGE naming why. */
static int check_places(const sk_index_dataset_opts *o, char *const *shards, size_t n, struct places *p,
                        sk_error *err)
{
    for (size_t i = 0; i < n; i++) SK_GUARD(sk_store_reach(shards[i], o->s3, "shard", err));
    for (size_t i = 0; i < n; i++) {
        sk_store_where w;
        SK_GUARD(sk_store_classify(shards[i], &w, err));
        p->remote += w.remote;
        if (!w.writable && !p->ro++) p->first_ro = shards[i];
        /* remote and writable: an object store's (S3), which wids has
         * no client for (it opens paths and http(s):// URLs) */
        if (w.remote && w.writable && !p->s3++) p->first_s3 = shards[i];
    }
    int mremote = o->manifest && sk_store_is_remote(o->manifest);
    for (size_t i = 0; o->wids && i < n; i++) /* JSON holds UTF-8 text only */
        SK_FAIL_IF(!sk_utf8_valid(shards[i], strlen(shards[i])), err, SK_E_USAGE, "--wids: %s: the "
                   "name is not UTF-8, which wids' JSON cannot hold", shards[i]);
    SK_FAIL_IF(o->wids && p->first_s3, err, SK_E_USAGE, "--wids: %s is an object in S3, and wids reads "
               "local files and http(s):// URLs only", p->first_s3);
    sk_store_where ww = {.remote = 0};
    if (o->wids && *o->wids) SK_GUARD(sk_store_classify(o->wids, &ww, err));
    SK_FAIL_IF(ww.remote, err, SK_E_USAGE, "--wids '%s': wids' index is written to a local path only "
               "(%s)", o->wids, ww.writable ? "write it here, then `shardkit upload` it"
                                            : "a web server takes no writes");
    SK_FAIL_IF(o->wids && !*o->wids && mremote, err, SK_E_USAGE, "--wids: wids.json goes beside the "
               "manifest, and %s is not local: give --wids=PATH", o->manifest);
    SK_FAIL_IF(p->ro && (o->no_manifest || !o->manifest || mremote), err, SK_E_USAGE,
               "%s: a web server takes no writes, so the index of an http(s):// shard goes into the "
               "manifest's directory, which must be local: give -o DIR/manifest.json%s", p->first_ro,
               o->no_manifest ? " instead of --no-manifest" : "");
    SK_FAIL_IF(p->remote && p->remote < n && !o->no_manifest && !o->manifest, err, SK_E_USAGE,
               "local and remote (S3, http(s)://) shards have no common place for a manifest: give "
               "-o or --no-manifest");
    SK_FAIL_IF(mremote && p->remote < n, err, SK_E_USAGE, "%s: a manifest in S3 cannot name local shards",
               o->manifest);
    SK_FAIL_IF(o->resume && p->s3 < n, err, SK_E_USAGE, "--resume applies to shards in S3 only");
    return SK_OK;
}

/* The index (suffix ".idx") or DALI index (".dali.idx") of a shard on a
 * web server, which takes no writes: in the manifest's directory mdir,
 * named by the URL's last path segment as written (no query, no
 * fragment), which must be a plain file name. */
static int index_in(const char *shard, const char *mdir, const char *suffix, char **out, sk_error *err)
{
    sk_store_where w;
    SK_GUARD(sk_store_classify(shard, &w, err));
    const char *p = shard + w.path, *end = p + strcspn(p, "?#"), *b = end;
    while (b > p && b[-1] != '/') b--;
    sk_error e = SK_ERROR_INIT;
    if (sk_name_check(b, (size_t)(end - b), "its file name", &e))
        return sk_error_set(err, SK_E_USAGE, "%s: %s, and its index would be named by it", shard, e.msg);
    SK_FAIL_IF(asprintf(out, "%s/%.*s%s", mdir, (int)(end - b), b, suffix) < 0, err, SK_E_NOMEM, "out of memory");
    return SK_OK;
}

/* An index file by where it lands: its directory's real path and its
 * name, so that "out/a.tar.idx" and "./out/a.tar.idx" are one file. */
struct landing {
    char *at;
    const struct job *j;
};

static int by_landing(const void *a, const void *b)
{
    const struct landing *x = a, *y = b;
    int c = strcmp(x->at, y->at);
    return c ? c : (x->j > y->j) - (x->j < y->j); /* the first given first */
}

/* Shards on web servers have their indexes named by the URL's file name in
 * one directory: two shards of that name (from two hosts or folders, or a
 * local shard there) would write one file.  Refused, naming both. */
static int refuse_shared_index(const struct job *jobs, size_t n, sk_error *err)
{
    struct landing *v = calloc(n ? n : 1, sizeof *v);
    size_t k = 0;
    int rc = v ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        if (jobs[i].remote) continue; /* an object beside a shard in S3 */
        const char *idx = jobs[i].idx, *base = strrchr(idx, '/');
        char *dir = dirname_of(idx), *real = dir ? realpath(dir, NULL) : NULL;
        v[k].j = &jobs[i];
        if (!real ? !(v[k].at = strdup(idx)) : asprintf(&v[k].at, "%s/%s", real, base ? base + 1 : idx) < 0)
            v[k].at = NULL, rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else k++;
        free(dir);
        free(real);
    }
    if (!rc) qsort(v, k, sizeof *v, by_landing);
    for (size_t i = 1; !rc && i < k; i++)
        if (!strcmp(v[i - 1].at, v[i].at) && strcmp(v[i - 1].j->shard, v[i].j->shard))
            rc = sk_error_set(err, SK_E_USAGE, "%s and %s would both have their index at %s: index "
                              "them in separate runs, with -o in separate directories",
                              v[i - 1].j->shard, v[i].j->shard, v[i].j->idx);
    for (size_t i = 0; i < k; i++) free(v[i].at);
    free(v);
    return rc;
}

int sk_index_dataset(const char *const *patterns, size_t npatterns, const sk_index_dataset_opts *opts,
                     sk_index_dataset_stats *stats, sk_error *err)
{
    sk_index_dataset_opts o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_index_dataset_opts", err));
    sk_index_dataset_stats st_all = {0};
    char **shards = NULL, *mdir = NULL, *mpath = NULL;
    size_t nshards = 0, njob = 0, nthreads = 0;
    struct job *jobs = NULL;
    pthread_t *tids = NULL;
    sk_manifest *m = NULL;
    struct pool pool = {0};
    int rc = expand(patterns, npatterns, o.s3, &shards, &nshards, err);
    if (!rc && !nshards) {
        free(shards);
        rc = sk_error_set(err, SK_E_USAGE, "no shards given");
    }
    struct places pl = {0};
    if (!rc) rc = check_places(&o, shards, nshards, &pl, err);
    size_t nremote = pl.remote;
    if (rc) {
        for (size_t i = 0; shards && i < nshards; i++) free(shards[i]);
        free(shards);
        return rc;
    }
    if (!(m = sk_manifest_new())) goto nomem;
    if (o.manifest) {
        mpath = strdup(o.manifest);
    } else {
        mdir = dirname_of(shards[0]);
        for (size_t i = 1; mdir && i < nshards; i++) {
            char *d = dirname_of(shards[i]);
            if (d) common_dir(mdir, d);
            free(d);
        }
        sk_store_where w;
        if (mdir && nremote && (sk_store_classify(mdir, &w, NULL) || !w.remote)) {
            /* the shards' common directory is a bare scheme, or a scheme
             * with a lost slash (refused): they are in several buckets */
            free(mdir);
            mdir = NULL;
            rc = sk_error_set(err, SK_E_USAGE, "the shards are in several buckets: give -o");
            goto done;
        }
        if (!mdir || asprintf(&mpath, "%s/manifest.json", mdir) < 0) mpath = NULL;
        free(mdir);
    }
    mdir = mpath ? dirname_of(mpath) : NULL;
    if (!mpath || !mdir) goto nomem;
    m->options_json = strdup(o.flags & SK_BUILD_FAST ? "{\"index\":{\"fast\":true}}" : "{\"index\":{\"fast\":false}}");
    if (!m->options_json || !(jobs = calloc(nshards, sizeof *jobs))) goto nomem;
    for (; njob < nshards; njob++) {
        struct job *j = &jobs[njob];
        j->o = &o;
        j->shard = shards[njob];
        char **ip = &j->idx, **dp = &j->dpath;
        sk_store_where w;
        if ((rc = sk_store_classify(j->shard, &w, err))) goto done;
        j->remote = w.remote && w.writable; /* its index is an object beside it */
        if (!w.writable) { /* a web server's: its index goes beside the manifest */
            if ((rc = index_in(j->shard, mdir, ".idx", ip, err)) ||
                (o.dali && (rc = index_in(j->shard, mdir, ".dali.idx", dp, err)))) {
                free(*ip), free(*dp);
                *ip = *dp = NULL;
                goto done;
            }
            continue;
        }
        if (asprintf(ip, "%s.idx", j->shard) < 0) *ip = NULL;
        if (*ip && o.dali && asprintf(dp, "%s.dali.idx", j->shard) < 0) *dp = NULL;
        if (!*ip || (o.dali && !*dp)) {
            free(*ip);
            *ip = NULL;
            goto nomem;
        }
    }
    if (pl.ro && (rc = refuse_shared_index(jobs, njob, err))) goto done;
    if ((rc = refuse_inputs(&o, shards, nshards, jobs, mpath, mdir, err))) goto done;
    size_t want = o.jobs > 0 ? (size_t)o.jobs : 0;
    if (!want) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        want = cores > 0 ? (size_t)cores : 1;
    }
    if (want > njob) want = njob;
    pool = (struct pool){.jobs = jobs, .n = njob, .flags = o.flags, .count_exts = !o.no_manifest};
    if (want > 1 && (tids = calloc(want, sizeof *tids))) {
        pthread_mutex_init(&pool.mu, NULL);
        pthread_cond_init(&pool.cv, NULL);
        while (nthreads < want && !pthread_create(&tids[nthreads], NULL, worker, &pool))
            nthreads++; /* a thread that cannot start is one job fewer */
        if (!nthreads) {
            pthread_mutex_destroy(&pool.mu);
            pthread_cond_destroy(&pool.cv);
        }
    }
    uint64_t bytes_done = 0;
    for (size_t i = 0; i < njob; i++) {
        struct job *j = &jobs[i];
        if (nthreads) {
            pthread_mutex_lock(&pool.mu);
            while (!j->done) pthread_cond_wait(&pool.cv, &pool.mu);
            pthread_mutex_unlock(&pool.mu);
        } else {
            run_job(j, o.flags, 0, !o.no_manifest); /* one job: built here, warnings as they come */
        }
        emit_warnings(&o, j);
        if (j->rc) {
            st_all.failed++;
            if (o.done) o.done(o.ctx, j->shard, NULL, &j->err);
            if (o.progress) o.progress(o.ctx, i + 1, njob, st_all.samples, bytes_done);
            continue;
        }
        st_all.shards++;
        st_all.samples += j->st.samples;
        st_all.members += j->st.members;
        bytes_done += j->st.bytes;
        if (o.done) o.done(o.ctx, j->shard, &j->st, NULL);
        if (o.progress) o.progress(o.ctx, i + 1, njob, st_all.samples, bytes_done);
        char url[4200], iurl[4200]; /* relative to the manifest's directory */
        if (sk_path_rel(j->shard, mdir, url, sizeof url) || sk_path_rel(j->idx, mdir, iurl, sizeof iurl))
            snprintf(url, sizeof url, "%s", j->shard), snprintf(iurl, sizeof iurl, "%s", j->idx);
        sk_manifest_shard ms = {.url = url, .index_url = iurl,
                                .bytes = j->st.bytes,
                                .samples = j->st.samples, .crc32c = j->st.crc32c};
        sk_error e = SK_ERROR_INIT;
        if (!o.no_manifest &&
            (sk_manifest_add_shard(m, &ms, &e) || merge_exts(m, j, &e) ||
             (j->keys.first &&
              sk_manifest_set_key_range(m, m->nshards - 1, j->keys.first, j->keys.first_len,
                                        j->keys.last, j->keys.last_len, &e)))) {
            st_all.failed++;
            if (o.done) o.done(o.ctx, j->shard, NULL, &e);
        }
    }
    /* wids maps plain tars: a wids.json naming a compressed shard would
     * fail inside wids, and one leaving it out would be a smaller dataset
     * than the manifest's; so none is written */
    const struct job *packed = NULL;
    for (size_t i = 0; o.wids && !st_all.failed && !packed && i < njob; i++)
        if (jobs[i].st.flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) packed = &jobs[i];
    if (st_all.failed) {
        rc = sk_error_set(err, SK_E_CORRUPT, "%llu of %zu shards could not be indexed%s",
                          (unsigned long long)st_all.failed, nshards,
                          o.no_manifest ? "" : ": manifest not written");
    } else if (!o.no_manifest && !o.overwrite && (rc = sk_existing_listed(o.s3, mpath, m, "index", err))) {
        /* (said in err: a manifest of other shards is not replaced) */
    } else if (!o.no_manifest &&
               (rc = sk_sink_put_manifest(o.s3, m, mpath,
                                          SK_MANIFEST_TABLE | (o.manifest ? 0 : SK_OUT_REGULAR), err))) {
        /* (said in err: an object in one PUT, or a local file) */
    } else if (packed) {
        rc = sk_error_set(err, SK_E_INPUT, "--wids: %s is %s-compressed, and wids reads "
                          "uncompressed .tar shards only: wids.json not written (the indexes and "
                          "%s are)", packed->shard, packed->st.flags & SK_INDEX_ZSTD ? "zstd" : "gzip",
                          mpath);
    } else if (!o.no_manifest && o.wids) {
        char *wp = NULL;
        if (*o.wids) wp = strdup(o.wids);
        else if (asprintf(&wp, "%s/wids.json", mdir) < 0) wp = NULL;
        if (!wp) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else if (!*o.wids) rc = sk_out_check_regular(wp, err); /* a name the run chose */
        if (!rc) rc = sk_manifest_write_wids(m, mpath, wp, err);
        free(wp);
    }
    if (!rc && !o.no_manifest && o.sagemaker) rc = sagemaker(&o, mpath, err);
    goto done;
nomem:
    rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
done:
    for (size_t t = 0; t < nthreads; t++) pthread_join(tids[t], NULL);
    if (nthreads) {
        pthread_mutex_destroy(&pool.mu);
        pthread_cond_destroy(&pool.cv);
    }
    free(tids);
    for (size_t i = 0; jobs && i < njob; i++) {
        free(jobs[i].idx);
        free(jobs[i].dpath);
        free(jobs[i].warns);
        sk_manifest_free(jobs[i].exts);
        free(jobs[i].keys.first);
        free(jobs[i].keys.last);
    }
    free(jobs);
    for (size_t i = 0; i < nshards; i++) free(shards[i]);
    free(shards);
    free(mpath);
    free(mdir);
    sk_manifest_free(m);
    if (stats) *stats = st_all;
    return rc;
}
