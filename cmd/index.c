/*
 * index.c - `shardkit index`: build the sidecar index and a manifest for
 * shards anyone made, optionally DALI and wids exports; and
 * `shardkit index merge`, which joins the manifests of parallel runs.
 * Thin: options, then sk_index_build / sk_manifest_* per shard.
 */
#include "cmd.h"

#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit index [options] SHARD...\n"
    "       shardkit index merge MANIFEST... -o OUT.json\n"
    "\n"
    "Writes SHARD.idx beside each shard (.tar, .tar.gz, .tar.zst; brace\n"
    "patterns like train-{000000..000099}.tar expand) and a manifest.json.\n"
    "\n"
    "  -o, --manifest PATH  manifest to write (default: manifest.json in the\n"
    "                       shards' common directory)\n"
    "      --no-manifest    write the indexes only\n"
    "      --fast           plain .tar: read headers only, never data; member and\n"
    "                       shard CRC32C are left unknown (0)\n"
    "      --dali           also write DALI's wds2idx v1.2 index, SHARD.dali.idx\n"
    "      --wids[=PATH]    also write wids' shard index JSON (default: wids.json\n"
    "                       beside the manifest)\n"
    "  -j, --jobs N         index N shards at once (default: the number of cores);\n"
    "                       output and manifest are the same for any N\n"
    "  -q, --quiet          print nothing but errors and warnings\n"
    "  -h, --help           show this help\n"
    "\n"
    "merge: -o, --output PATH  the merged manifest (required)\n"
    "\n"
    "Exit status: 0 all indexed, 1 a shard could not be (fully) indexed, 2 usage.\n";

enum { OPT_FAST = 256, OPT_DALI, OPT_WIDS, OPT_NO_MANIFEST };

static void warn_cb(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "shardkit index: warning: %s\n", msg);
}

/* One shard's build.  With several jobs, shards are built by worker threads
 * in any order, but everything a build reports (warnings, errors, the
 * summary line, the manifest entry) is emitted by the main thread in shard
 * order, so the output does not depend on -j or on scheduling. */
struct job {
    const char *shard;
    char *idx, *dpath;
    sk_build_stats st;
    sk_error err;
    int rc, done;
    sk_manifest *exts; /* the shard's extension counts, for the manifest */
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

static void warn_buffer(void *ctx, const char *msg)
{
    struct job *j = ctx;
    if (!j->wf) j->wf = open_memstream(&j->warns, &j->wlen);
    if (j->wf) fprintf(j->wf, "shardkit index: warning: %s\n", msg);
    else warn_cb(NULL, msg); /* out of memory: out of order beats lost */
}

static int add_exts(sk_manifest *m, const char *idx_path, sk_error *err)
{
    /* A shard has a handful of extensions and as many members as samples
     * times that: tally them here (the index keeps the strings mapped),
     * then add one count per extension. */
    struct { const char *ext; size_t len; uint64_t n; } seen[16];
    size_t nseen = 0;
    sk_index *ix;
    int rc = sk_index_open(&ix, idx_path, SK_INDEX_TRUST_BODY, err);
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
    if (ix) sk_index_close(ix);
    return rc;
}

static void run_job(struct job *j, unsigned flags, int buffered, int count_exts)
{
    sk_build_opts bo = {.flags = flags, .index_path = j->idx, .dali_path = j->dpath,
                        .warn = buffered ? warn_buffer : warn_cb, .warn_ctx = j};
    j->err = (sk_error)SK_ERROR_INIT;
    j->rc = sk_index_build(j->shard, &bo, &j->st, &j->err);
    if (j->wf) {
        fclose(j->wf);
        j->wf = NULL;
    }
    /* Counting extensions reads the whole member table: done here, on the
     * job's thread, not serially by the main thread.  The counts are
     * merged in shard order; the manifest sorts them anyway. */
    if (!j->rc && count_exts) {
        j->exts_err = (sk_error)SK_ERROR_INIT;
        if (!(j->exts = sk_manifest_new()))
            j->exts_rc = sk_error_set(&j->exts_err, SK_E_NOMEM, "out of memory");
        else
            j->exts_rc = add_exts(j->exts, j->idx, &j->exts_err);
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

/* p relative to dir when it lies under it, else p itself. */
static const char *under(const char *p, const char *dir)
{
    size_t n = strlen(dir);
    if (!strcmp(dir, ".")) return p;
    if (!strncmp(p, dir, n) && p[n] == '/') return p + n + 1;
    return p;
}

static int run_merge(int argc, char **argv)
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'},
        {"output", required_argument, NULL, 'o'},
        {"manifest", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0},
    };
    const char *out = NULL;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage, stdout); return SK_EXIT_OK;
        case 'o': out = optarg; break;
        default: return cmd_unknown_option("index merge", argv);
        }
    }
    if (!out) return cmd_usage_error("index merge", usage, "-o OUT.json is required");
    if (optind >= argc) return cmd_usage_error("index merge", usage, "no manifests given");
    sk_error err = SK_ERROR_INIT;
    if (sk_manifest_merge((const char *const *)argv + optind, (size_t)(argc - optind), out, &err))
        return cmd_report("index merge", &err);
    return SK_EXIT_OK;
}

int cmd_index(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "merge")) return run_merge(argc - 1, argv + 1);
    static const struct option opts[] = {
        {"dali", no_argument, NULL, OPT_DALI},
        {"fast", no_argument, NULL, OPT_FAST},
        {"help", no_argument, NULL, 'h'},
        {"jobs", required_argument, NULL, 'j'},
        {"manifest", required_argument, NULL, 'o'},
        {"no-manifest", no_argument, NULL, OPT_NO_MANIFEST},
        {"quiet", no_argument, NULL, 'q'},
        {"wids", optional_argument, NULL, OPT_WIDS},
        {NULL, 0, NULL, 0},
    };
    const char *manifest_path = NULL, *wids_path = NULL;
    int fast = 0, dali = 0, wids = 0, quiet = 0, no_manifest = 0, c;
    uint64_t njobs = 0; /* 0: one per core */
    while ((c = getopt_long(argc, argv, "hj:o:q", opts, NULL)) != -1) {
        switch (c) {
        case 'h': fputs(usage, stdout); return SK_EXIT_OK;
        case 'j':
            if (cmd_parse_u64(optarg, &njobs) || njobs < 1 || njobs > 1024)
                return cmd_usage_error("index", usage, "-j needs a number of jobs from 1 to 1024");
            break;
        case 'o': manifest_path = optarg; break;
        case 'q': quiet = 1; break;
        case OPT_FAST: fast = 1; break;
        case OPT_DALI: dali = 1; break;
        case OPT_WIDS: wids = 1; wids_path = optarg; break;
        case OPT_NO_MANIFEST: no_manifest = 1; break;
        default: return cmd_unknown_option("index", argv);
        }
    }
    if (optind >= argc) return cmd_usage_error("index", usage, "no shards given");
    if (no_manifest && (manifest_path || wids))
        return cmd_usage_error("index", usage, "--no-manifest conflicts with -o and --wids");
#ifdef __GLIBC__
    /* Each shard's build allocates a few MB of records and frees them; by
     * default glibc gives such blocks back to the kernel (mmap/munmap, heap
     * trimming), and the next shard pays a page fault for every page again:
     * 5,000 faults over the 8 benchmark shards, a few percent of a --fast
     * run.  Kept in the heap, they are reused by the next shard. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif

    sk_error err = SK_ERROR_INIT;
    char **shards = NULL;
    size_t nshards = 0;
    for (int i = optind; i < argc; i++) { /* expand brace patterns */
        char **list;
        size_t n;
        if (sk_brace_expand(argv[i], &list, &n, &err)) return cmd_report("index", &err);
        char **p = realloc(shards, (nshards + n + 1) * sizeof *p);
        if (!p) { sk_brace_free(list); fprintf(stderr, "shardkit index: out of memory\n"); return SK_EXIT_PROBLEM; }
        shards = p;
        for (size_t k = 0; k < n; k++) shards[nshards++] = list[k];
        free(list); /* strings moved */
    }
    sk_manifest *m = sk_manifest_new();
    char *mdir = NULL, *mpath = NULL;
    int status = SK_EXIT_OK;
    if (!m) { fprintf(stderr, "shardkit index: out of memory\n"); status = SK_EXIT_PROBLEM; goto done; }
    if (manifest_path) mpath = strdup(manifest_path);
    else {
        mdir = dirname_of(shards[0]);
        for (size_t i = 1; i < nshards; i++) {
            char *d = dirname_of(shards[i]);
            common_dir(mdir, d);
            free(d);
        }
        if (asprintf(&mpath, "%s/manifest.json", mdir) < 0) mpath = NULL;
        free(mdir);
    }
    mdir = mpath ? dirname_of(mpath) : NULL;
    if (!mpath || !mdir) { fprintf(stderr, "shardkit index: out of memory\n"); status = SK_EXIT_PROBLEM; goto done; }
    m->options_json = strdup(fast ? "{\"index\":{\"fast\":true}}" : "{\"index\":{\"fast\":false}}");

    struct job *jobs = calloc(nshards, sizeof *jobs);
    if (!jobs) { fprintf(stderr, "shardkit index: out of memory\n"); status = SK_EXIT_PROBLEM; goto done; }
    size_t njob = 0; /* jobs set up; fewer than nshards only when out of memory */
    for (; njob < nshards; njob++) {
        struct job *j = &jobs[njob];
        j->shard = shards[njob];
        if (asprintf(&j->idx, "%s.idx", j->shard) < 0) j->idx = NULL; /* else undefined */
        if (j->idx && dali && asprintf(&j->dpath, "%s.dali.idx", j->shard) < 0) j->dpath = NULL;
        if (!j->idx || (dali && !j->dpath)) {
            fprintf(stderr, "shardkit index: out of memory\n");
            status = SK_EXIT_PROBLEM;
            free(j->idx);
            j->idx = NULL;
            break;
        }
    }
    if (!njobs) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        njobs = cores > 0 ? (uint64_t)cores : 1;
    }
    if (njobs > njob) njobs = njob;
    unsigned flags = fast ? SK_BUILD_FAST : 0;
    struct pool pool = {.jobs = jobs, .n = njob, .flags = flags, .count_exts = !no_manifest};
    pthread_t *tids = NULL;
    size_t nthreads = 0;
    if (njobs > 1 && (tids = calloc(njobs, sizeof *tids))) {
        pthread_mutex_init(&pool.mu, NULL);
        pthread_cond_init(&pool.cv, NULL);
        while (nthreads < njobs && !pthread_create(&tids[nthreads], NULL, worker, &pool))
            nthreads++; /* a thread that cannot start is one job fewer */
        if (!nthreads) {
            pthread_mutex_destroy(&pool.mu);
            pthread_cond_destroy(&pool.cv);
        }
    }
    for (size_t i = 0; i < njob; i++) {
        struct job *j = &jobs[i];
        const char *shard = j->shard, *idx = j->idx;
        if (nthreads) {
            pthread_mutex_lock(&pool.mu);
            while (!j->done) pthread_cond_wait(&pool.cv, &pool.mu);
            pthread_mutex_unlock(&pool.mu);
        } else {
            run_job(j, flags, 0, !no_manifest); /* one job: build here, warnings as they come */
        }
        if (j->warns) fwrite(j->warns, 1, j->wlen, stderr);
        if (j->rc) {
            int rc = cmd_report("index", &j->err);
            if (rc > status) status = rc;
        } else {
            const sk_build_stats st = j->st;
            if (!quiet)
                printf("%s: %llu samples, %llu members%s\n", shard, (unsigned long long)st.samples,
                       (unsigned long long)st.members, fast ? " (headers only)" : "");
            if (!quiet && (st.meta || st.links || st.unkeyed))
                fprintf(stderr, "shardkit index: %s: skipped %llu metadata, %llu link and %llu "
                        "unkeyed members\n", shard, (unsigned long long)st.meta,
                        (unsigned long long)st.links, (unsigned long long)st.unkeyed);
            sk_manifest_shard ms = {.url = (char *)under(shard, mdir),
                                    .index_url = (char *)under(idx, mdir), .bytes = st.bytes,
                                    .samples = st.samples, .crc32c = st.crc32c};
            err = (sk_error)SK_ERROR_INIT;
            if (!no_manifest && (sk_manifest_add_shard(m, &ms, &err) || merge_exts(m, j, &err))) {
                cmd_report("index", &err);
                status = SK_EXIT_PROBLEM;
            }
        }
    }
    for (size_t t = 0; t < nthreads; t++) pthread_join(tids[t], NULL);
    if (nthreads) {
        pthread_mutex_destroy(&pool.mu);
        pthread_cond_destroy(&pool.cv);
    }
    free(tids);
    for (size_t i = 0; i < njob; i++) {
        free(jobs[i].idx);
        free(jobs[i].dpath);
        free(jobs[i].warns);
        sk_manifest_free(jobs[i].exts);
    }
    free(jobs);
    if (status == SK_EXIT_OK && !no_manifest) {
        err = (sk_error)SK_ERROR_INIT;
        if (sk_manifest_write(m, mpath, &err)) status = cmd_report("index", &err);
        else if (wids) {
            char *wp = NULL;
            if (wids_path) wp = strdup(wids_path);
            else if (asprintf(&wp, "%s/wids.json", mdir) < 0) wp = NULL;
            if (!wp || sk_manifest_write_wids(m, mpath, wp, &err)) status = cmd_report("index", &err);
            free(wp);
        }
    } else if (status != SK_EXIT_OK && !no_manifest) {
        fprintf(stderr, "shardkit index: manifest not written because of the errors above\n");
    }
done:
    for (size_t i = 0; i < nshards; i++) free(shards[i]);
    free(shards);
    free(mpath);
    free(mdir);
    sk_manifest_free(m);
    return status;
}
