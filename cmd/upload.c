/*
 * upload.c - `shardkit upload SRC... s3://bucket/prefix/`: files, directories
 * and whole datasets to S3, and s3:// objects to another bucket or endpoint.
 * The work is the library's (sk_s3_xfer); this file turns arguments into
 * (source, key) pairs in a safe order (data, then *.idx, then manifest.json,
 * so a reader never sees a manifest naming a missing object) and prints.
 */
#include "cmd.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: shardkit upload [options] SRC... s3://bucket/prefix/\n"
    "       shardkit upload [options] s3://bucket/key-or-prefix/ s3://bucket2/prefix/\n"
    "\n"
    "Uploads files, directories (their contents go under the prefix) and\n"
    "datasets: data first, then *.idx, then manifest.json last.  Objects at or\n"
    "below the multipart threshold go in one PUT; larger ones in parallel parts.\n"
    "Every object is confirmed by a HEAD (size, CRC32C).  An s3:// source is\n"
    "copied: server-side on one endpoint, by ranged GETs across endpoints.\n"
    "\n"
    "options:\n"
    "  --endpoint-url URL         S3-compatible endpoint (default AWS_ENDPOINT_URL, else AWS)\n"
    "  --region NAME              region (default AWS_REGION, profile, us-east-1)\n"
    "  --profile NAME             credentials/config profile (default AWS_PROFILE)\n"
    "  --src-endpoint-url URL     endpoint of s3:// sources (default: --endpoint-url)\n"
    "  --src-region NAME          region of s3:// sources\n"
    "  --src-profile NAME         profile for s3:// sources\n"
    "  --path-style               address buckets as endpoint/bucket (default for --endpoint-url)\n"
    "  --concurrency N            requests in flight (default 16)\n"
    "  --part-size SIZE           multipart part size (default 8MiB; raised to keep <= 10000 parts)\n"
    "  --multipart-threshold SIZE largest object sent in one PUT (default 8MiB)\n"
    "  --max-attempts N           tries per request, first included (default 8)\n"
    "  --read-timeout SECONDS     a request with no progress for this long is retried (default 30)\n"
    "  --resume                   continue interrupted multipart uploads, keeping matching parts\n"
    "  --verify                   read every object back and compare its CRC32C\n"
    "  --sign-payload             sign bodies with SHA-256 (slow) instead of UNSIGNED-PAYLOAD\n"
    "  --dry-run                  print what would be uploaded, send nothing\n"
    "  --json                     print a JSON summary on stdout\n"
    "  -v, --verbose              log every request on stderr (never credentials)\n"
    "  -h, --help                 this text\n"
    "\n"
    "exit status: 0 all uploaded and confirmed, 1 a transfer failed, 2 usage error\n";

enum opt {
    O_ENDPOINT = 256, O_REGION, O_PROFILE, O_SRC_ENDPOINT, O_SRC_REGION, O_SRC_PROFILE,
    O_PATH_STYLE, O_CONCURRENCY, O_PART_SIZE, O_THRESHOLD, O_MAX_ATTEMPTS, O_READ_TIMEOUT,
    O_RESUME, O_VERIFY, O_SIGN_PAYLOAD, O_DRY_RUN, O_JSON,
};

static const struct option options[] = {
    {"concurrency", required_argument, NULL, O_CONCURRENCY},
    {"dry-run", no_argument, NULL, O_DRY_RUN},
    {"endpoint-url", required_argument, NULL, O_ENDPOINT},
    {"help", no_argument, NULL, 'h'},
    {"json", no_argument, NULL, O_JSON},
    {"max-attempts", required_argument, NULL, O_MAX_ATTEMPTS},
    {"multipart-threshold", required_argument, NULL, O_THRESHOLD},
    {"part-size", required_argument, NULL, O_PART_SIZE},
    {"path-style", no_argument, NULL, O_PATH_STYLE},
    {"profile", required_argument, NULL, O_PROFILE},
    {"read-timeout", required_argument, NULL, O_READ_TIMEOUT},
    {"region", required_argument, NULL, O_REGION},
    {"resume", no_argument, NULL, O_RESUME},
    {"sign-payload", no_argument, NULL, O_SIGN_PAYLOAD},
    {"src-endpoint-url", required_argument, NULL, O_SRC_ENDPOINT},
    {"src-profile", required_argument, NULL, O_SRC_PROFILE},
    {"src-region", required_argument, NULL, O_SRC_REGION},
    {"verbose", no_argument, NULL, 'v'},
    {"verify", no_argument, NULL, O_VERIFY},
    {NULL, 0, NULL, 0},
};

/* One planned transfer. */
typedef struct job {
    char *src;  /* local path, or the source key for s3 sources */
    char *key;
    int phase;  /* 0 data, 1 *.idx, 2 manifest.json */
    uint64_t size;
} job;

typedef struct plan {
    job *v;
    size_t n, cap;
    char *sbucket; /* s3 sources: their bucket */
} plan;

typedef struct run {
    int json, tty, verbose;
    uint64_t ok, failed, bytes, reused;
    FILE *objs; /* JSON array body, built as results come */
    char *objs_buf;
    size_t objs_len;
    time_t last_print;
    double t0;
} run;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int phase_of(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    size_t n = strlen(base);
    if (!strcmp(base, "manifest.json")) return 2;
    if (n > 4 && !strcmp(base + n - 4, ".idx")) return 1;
    return 0;
}

static int plan_add(plan *p, const char *src, const char *key, uint64_t size)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        job *v = realloc(p->v, cap * sizeof *v);
        if (!v) return -1;
        p->v = v, p->cap = cap;
    }
    job *j = &p->v[p->n];
    j->src = strdup(src), j->key = strdup(key);
    if (!j->src || !j->key) return -1;
    j->phase = phase_of(key);
    j->size = size;
    p->n++;
    return 0;
}

static void plan_free(plan *p)
{
    for (size_t i = 0; i < p->n; i++) free(p->v[i].src), free(p->v[i].key);
    free(p->v);
    free(p->sbucket);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, *a && a[strlen(a) - 1] != '/' && *b ? "/" : "", b);
    return s;
}

/* Skips temporary names of unfinished shards (".NAME.tmp"). */
static int skip_name(const char *name)
{
    size_t n = strlen(name);
    return !strcmp(name, ".") || !strcmp(name, "..") ||
           (name[0] == '.' && n > 4 && !strcmp(name + n - 4, ".tmp"));
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(plan *p, const char *dir, const char *keyprefix)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "shardkit upload: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    /* sorted order makes runs reproducible */
    char **names = NULL;
    size_t n = 0, cap = 0;
    while ((e = readdir(d))) {
        if (skip_name(e->d_name)) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            char **nn = realloc(names, cap * sizeof *nn);
            if (!nn) { rc = -1; break; }
            names = nn;
        }
        if (!(names[n++] = strdup(e->d_name))) { rc = -1; break; }
    }
    closedir(d);
    if (n > 1) qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        char *path = join(dir, names[i]), *key = join(keyprefix, names[i]);
        struct stat st;
        if (!rc && path && key && !lstat(path, &st)) {
            if (S_ISDIR(st.st_mode)) rc = walk(p, path, key);
            else if (S_ISREG(st.st_mode)) rc = plan_add(p, path, key, (uint64_t)st.st_size);
        }
        free(path), free(key), free(names[i]);
    }
    free(names);
    return rc;
}

typedef struct list_ctx {
    plan *p;
    const char *src_prefix, *dst_prefix;
    int fail;
} list_ctx;

static int list_cb(void *ud, const sk_s3_object *o)
{
    list_ctx *c = ud;
    char *key = join(c->dst_prefix, o->key + strlen(c->src_prefix));
    if (!key || plan_add(c->p, o->key, key, o->size)) c->fail = 1;
    free(key);
    return c->fail;
}

static char *human(uint64_t b, char *out, size_t cap)
{
    if (b >= (1ull << 30)) snprintf(out, cap, "%.2f GiB", b / 1073741824.0);
    else if (b >= (1ull << 20)) snprintf(out, cap, "%.1f MiB", b / 1048576.0);
    else snprintf(out, cap, "%" PRIu64 " B", b);
    return out;
}

static void progress(void *ud, uint64_t done, uint64_t total)
{
    run *r = ud;
    if (!r->tty) return;
    double el = now_s() - r->t0, rate = el > 0 ? done / el : 0;
    char a[32], b[32];
    double eta = rate > 0 && total > done ? (total - done) / rate : 0;
    fprintf(stderr, "\r%s / %s  %.1f MB/s  ETA %.0fs   ", human(done, a, sizeof a),
            human(total, b, sizeof b), rate / 1e6, eta);
    fflush(stderr);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

static void on_done(void *ud, const sk_s3_xfer_result *res)
{
    run *r = ud;
    if (r->tty) fprintf(stderr, "\r\033[K");
    if (res->rc) {
        r->failed++;
        fprintf(stderr, "shardkit upload: %s: %s\n", res->src, res->err->msg);
    } else {
        r->ok++;
        r->bytes += res->size;
        r->reused += (uint64_t)res->parts_reused;
        if (!r->json) printf("upload: %s -> s3://%s/%s\n", res->src, res->bucket, res->key);
    }
    if (r->json) {
        if (r->ok + r->failed > 1) fputc(',', r->objs);
        fprintf(r->objs, "{\"src\":");
        json_str(r->objs, res->src);
        fprintf(r->objs, ",\"bucket\":");
        json_str(r->objs, res->bucket);
        fprintf(r->objs, ",\"key\":");
        json_str(r->objs, res->key);
        fprintf(r->objs, ",\"size\":%" PRIu64 ",\"crc32c\":\"%08x\",\"parts\":%d,\"parts_reused\":%d,\"ok\":%s",
                res->size, res->crc32c, res->parts, res->parts_reused, res->rc ? "false" : "true");
        if (res->rc) {
            fprintf(r->objs, ",\"error\":");
            json_str(r->objs, res->err->msg);
        }
        fputc('}', r->objs);
    }
}

static int job_cmp(const void *a, const void *b)
{
    const job *x = a, *y = b;
    return x->phase - y->phase;
}

int cmd_upload(int argc, char **argv)
{
    sk_s3_config cfg = SK_S3_CONFIG_INIT, scfg;
    sk_s3_xfer_opts xo = {.struct_size = sizeof xo, .multipart_threshold = 8ull << 20,
                          .part_size = 8ull << 20};
    const char *src_endpoint = NULL, *src_profile = NULL, *src_region = NULL;
    int dry = 0;
    run r = {0};
    uint64_t v;
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", options, NULL)) != -1) {
        switch (c) {
        case O_ENDPOINT: cfg.endpoint_url = optarg; break;
        case O_REGION: cfg.region = optarg; break;
        case O_PROFILE: cfg.profile = optarg; break;
        case O_SRC_ENDPOINT: src_endpoint = optarg; break;
        case O_SRC_REGION: src_region = optarg; break;
        case O_SRC_PROFILE: src_profile = optarg; break;
        case O_PATH_STYLE: cfg.path_style = 1; break;
        case O_CONCURRENCY:
            if (cmd_parse_u64(optarg, &v) || !v || v > 64)
                return cmd_usage_error("upload", usage_text, "--concurrency takes 1..64");
            cfg.concurrency = (int)v;
            break;
        case O_PART_SIZE:
            if (cmd_parse_size(optarg, &xo.part_size) || xo.part_size < (5u << 20))
                return cmd_usage_error("upload", usage_text, "--part-size takes a size of at least 5MiB");
            break;
        case O_THRESHOLD:
            if (cmd_parse_size(optarg, &xo.multipart_threshold))
                return cmd_usage_error("upload", usage_text, "--multipart-threshold takes a size");
            break;
        case O_MAX_ATTEMPTS:
            if (cmd_parse_u64(optarg, &v) || !v || v > 100)
                return cmd_usage_error("upload", usage_text, "--max-attempts takes 1..100");
            cfg.max_attempts = (int)v;
            break;
        case O_READ_TIMEOUT:
            if (cmd_parse_u64(optarg, &v) || !v || v > 3600)
                return cmd_usage_error("upload", usage_text, "--read-timeout takes 1..3600 seconds");
            cfg.read_timeout = (int)v;
            break;
        case O_RESUME: xo.resume = 1; break;
        case O_VERIFY: xo.verify = 1; break;
        case O_SIGN_PAYLOAD: cfg.sign_payload = 1; break;
        case O_DRY_RUN: dry = 1; break;
        case O_JSON: r.json = 1; break;
        case 'v': cfg.verbose = 1; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return cmd_unknown_option("upload", argv);
        }
    }
    if (!xo.multipart_threshold) xo.multipart_threshold = 1; /* 0: always multipart */
    int nsrc = argc - optind - 1;
    if (nsrc < 1) return cmd_usage_error("upload", usage_text, "need at least one source and an s3:// destination");
    const char *dst = argv[argc - 1];
    sk_error err = SK_ERROR_INIT;
    char *bucket = NULL, *prefix = NULL;
    if (sk_s3_parse_url(dst, &bucket, &prefix, &err))
        return cmd_usage_error("upload", usage_text, "the destination must be s3://bucket/prefix: %s", err.msg);
    int s3src = 0, localsrc = 0;
    for (int i = optind; i < argc - 1; i++) *(!strncmp(argv[i], "s3://", 5) ? &s3src : &localsrc) += 1;
    int rc = 0;
    plan p = {0};
    sk_s3 *s3 = NULL, *src = NULL;
    sk_s3_xfer *x = NULL;
    if (s3src && (localsrc || nsrc > 1)) {
        rc = cmd_usage_error("upload", usage_text, "an s3:// source must be the only source");
        goto out;
    }
    int dir_dst = !*prefix || prefix[strlen(prefix) - 1] == '/' || nsrc > 1;

    if (!dry || s3src) {
        if ((rc = sk_s3_new(&s3, &cfg, &err))) goto fail;
        src = s3;
        if (s3src && (src_endpoint || src_profile || src_region)) {
            scfg = cfg;
            if (src_endpoint) scfg.endpoint_url = src_endpoint;
            if (src_profile) scfg.profile = src_profile;
            if (src_region) scfg.region = src_region;
            if ((rc = sk_s3_new(&src, &scfg, &err))) goto fail;
        }
    }

    /* the plan: (source, key) pairs */
    for (int i = optind; i < argc - 1; i++) {
        const char *a = argv[i];
        if (s3src) {
            char *sk = NULL;
            if ((rc = sk_s3_parse_url(a, &p.sbucket, &sk, &err))) goto fail;
            sk_s3_object o;
            int is_prefix = !*sk || sk[strlen(sk) - 1] == '/';
            if (!is_prefix && !(rc = sk_s3_head(src, p.sbucket, sk, &o, &err))) {
                const char *base = strrchr(sk, '/') ? strrchr(sk, '/') + 1 : sk;
                char *key = dir_dst ? join(prefix, base) : strdup(prefix);
                if (!key || plan_add(&p, sk, key, o.size)) rc = SK_E_NOMEM;
                free(key);
            } else if (is_prefix || rc == SK_E_NOTFOUND) {
                if (!is_prefix) {
                    /* "s3://b/dir" names a prefix when no such object exists */
                    char *sk2 = join(sk, "");
                    size_t n = strlen(sk2);
                    char *t = realloc(sk2, n + 2);
                    if (t) strcpy(t + n, "/");
                    free(sk), sk = t;
                }
                list_ctx lc = {&p, sk, dir_dst ? prefix : "", 0};
                char dp[2048];
                if (!dir_dst) {
                    snprintf(dp, sizeof dp, "%s/", prefix);
                    lc.dst_prefix = dp;
                }
                rc = sk_s3_list(src, p.sbucket, sk, list_cb, &lc, &err);
                if (!rc && lc.fail) rc = sk_error_set(&err, SK_E_NOMEM, "out of memory");
                if (!rc && !p.n) rc = sk_error_set(&err, SK_E_NOTFOUND, "%s: no such object or prefix", a);
            }
            free(sk);
            if (rc) goto fail;
            continue;
        }
        struct stat st;
        if (stat(a, &st)) {
            fprintf(stderr, "shardkit upload: %s: %s\n", a, strerror(errno));
            rc = 1;
            goto out;
        }
        if (S_ISDIR(st.st_mode)) {
            if (walk(&p, a, dir_dst ? prefix : (char[]){0})) { rc = 1; goto out; }
        } else {
            const char *base = strrchr(a, '/') ? strrchr(a, '/') + 1 : a;
            char *key = dir_dst ? join(prefix, base) : strdup(prefix);
            if (!key || plan_add(&p, a, key, (uint64_t)st.st_size)) {
                free(key);
                rc = sk_error_set(&err, SK_E_NOMEM, "out of memory");
                goto fail;
            }
            free(key);
        }
    }
    /* stable: data, then indexes, then manifests */
    for (size_t i = 1; i < p.n; i++)
        for (size_t j = i; j > 0 && job_cmp(&p.v[j - 1], &p.v[j]) > 0; j--) {
            job t = p.v[j];
            p.v[j] = p.v[j - 1], p.v[j - 1] = t;
        }

    if (dry) {
        for (size_t i = 0; i < p.n; i++) {
            uint64_t ps = xo.part_size;
            while ((p.v[i].size + ps - 1) / ps > 10000) ps *= 2;
            if (p.v[i].size > xo.multipart_threshold)
                printf("would upload: %s%s%s -> s3://%s/%s (%" PRIu64 " bytes, %" PRIu64 " parts)\n",
                       s3src ? "s3://" : "", s3src ? p.sbucket : "", s3src ? "/" : "", bucket,
                       p.v[i].key, p.v[i].size, (p.v[i].size + ps - 1) / ps);
            else
                printf("would upload: %s%s%s%s -> s3://%s/%s (%" PRIu64 " bytes, one PUT)\n",
                       s3src ? "s3://" : "", s3src ? p.sbucket : "", s3src ? "/" : "", p.v[i].src,
                       bucket, p.v[i].key, p.v[i].size);
        }
        goto out;
    }

    r.tty = isatty(2);
    r.t0 = now_s();
    if (r.json && !(r.objs = open_memstream(&r.objs_buf, &r.objs_len))) {
        rc = sk_error_set(&err, SK_E_NOMEM, "out of memory");
        goto fail;
    }
    if ((rc = sk_s3_xfer_new(&x, s3, &xo, on_done, &r, &err))) goto fail;
    int first = 0;
    for (int phase = 0; phase < 3; phase++) {
        int any = 0;
        for (size_t i = 0; i < p.n; i++) {
            if (p.v[i].phase != phase) continue;
            any = 1;
            int rc2 = s3src ? sk_s3_xfer_add_copy(x, src, p.sbucket, p.v[i].src, bucket, p.v[i].key, &err)
                            : sk_s3_xfer_add_file(x, p.v[i].src, bucket, p.v[i].key, &err);
            if (rc2) {
                fprintf(stderr, "shardkit upload: %s\n", err.msg);
                r.failed++;
            }
        }
        if (!any) continue;
        sk_error werr = SK_ERROR_INIT;
        int rc2 = sk_s3_xfer_wait(x, progress, &r, &werr);
        if (rc2 && !first) first = rc2;
        /* a later phase must not publish what points at a failed object */
        if (r.failed) break;
    }
    if (r.tty) fprintf(stderr, "\r\033[K");
    double el = now_s() - r.t0;
    uint64_t nreq = 0, nretry = 0;
    sk_s3_stats(s3, &nreq, &nretry);
    if (r.json) {
        fclose(r.objs);
        r.objs = NULL;
        printf("{\"ok\":%s,\"objects_ok\":%" PRIu64 ",\"objects_failed\":%" PRIu64 ",\"bytes\":%" PRIu64
               ",\"seconds\":%.3f,\"mb_per_s\":%.1f,\"parts_reused\":%" PRIu64 ",\"requests\":%" PRIu64
               ",\"retries\":%" PRIu64 ",\"objects\":[%s]}\n",
               r.failed ? "false" : "true", r.ok, r.failed, r.bytes, el, el > 0 ? r.bytes / el / 1e6 : 0,
               r.reused, nreq, nretry, r.objs_buf ? r.objs_buf : "");
    } else if (r.tty || cfg.verbose) {
        char h[32];
        fprintf(stderr, "%" PRIu64 " objects, %s in %.1fs (%.1f MB/s)%s\n", r.ok, human(r.bytes, h, sizeof h),
                el, el > 0 ? r.bytes / el / 1e6 : 0, r.failed ? ", some failed" : "");
    }
    rc = r.failed || first ? SK_EXIT_PROBLEM : 0;
    goto out;
fail:
    rc = cmd_report("upload", &err);
out:
    if (r.objs) fclose(r.objs);
    free(r.objs_buf);
    sk_s3_xfer_free(x);
    if (src != s3) sk_s3_free(src);
    sk_s3_free(s3);
    plan_free(&p);
    free(bucket), free(prefix);
    return rc;
}
