/*
 * upload.c - `shardkit upload SRC... s3://bucket/prefix/`: files, directories
 * and datasets to S3, s3:// objects to another bucket or endpoint.  The work
 * is the library's: sk_upload_plan_each streams (source, key) pairs in a safe
 * order (data, *.idx, manifest.json), sk_s3_xfer moves them; this file
 * parses, sends each item as it comes with a barrier between phases, prints.
 */
#include "cmd.h"

#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: shardkit upload [options] SRC... s3://bucket/prefix/\n"
    "       shardkit upload [options] s3://bucket/key-or-prefix/ s3://bucket2/prefix/\n"
    "\n"
    "Uploads files, directories (their contents go under the prefix) and\n"
    "datasets: data first, then *.idx, then manifest.json last.  Objects at or\n"
    "below the multipart threshold go in one PUT; larger ones in parallel parts.\n"
    "Every object is confirmed: by the server's answer where it names our\n"
    "CRC32C or MD5, else by a HEAD (size, CRC32C).  An s3:// source is\n"
    "copied: server-side on one endpoint, by ranged GETs across endpoints.\n"
    "\n"
    "options:\n"
    CMD_S3_CLIENT_USAGE
    CMD_S3_PART_SIZE_USAGE
    "      --src-endpoint-url URL  endpoint of s3:// sources (default: --endpoint-url)\n"
    "      --src-region NAME    region of s3:// sources\n"
    "      --src-profile NAME   profile for s3:// sources\n"
    "      --path-style         address buckets as endpoint/bucket (default for --endpoint-url)\n"
    "      --concurrency N      requests in flight (default 64)\n"
    "      --multipart-threshold SIZE  largest object sent in one PUT (default 8MiB)\n"
    "      --resume             continue interrupted multipart uploads, keeping matching parts\n"
    "      --sync               skip files the destination already holds (same size and\n"
    "                           ETag: the MD5 of the bytes, or of the parts' MD5s)\n"
    "      --verify             read every object back and compare its CRC32C\n"
    "      --sign-payload       sign bodies with SHA-256 (slow) instead of UNSIGNED-PAYLOAD\n"
    "      --dry-run            print what would be uploaded, send nothing\n"
    "      --json               print a JSON summary on stdout (--dry-run: one object\n"
    "                           per transfer: src, bucket, key, size, parts or 0)\n"
    "  -q, --quiet              print nothing but errors (no line per object)\n"
    "  -v, --verbose            log every request on stderr (never credentials)\n"
    "  -h, --help               this text\n"
    "\n"
    "exit status: 0 all uploaded and confirmed, 1 a transfer failed, 2 usage error\n";

/* What the transfers did, reported as they finish. */
typedef struct run {
    int json, quiet, walked; /* walked: the plan is all queued, its totals known */
    uint64_t ok, failed, bytes, reused, queued, same;
    uint64_t shown_done, shown_total; /* the bytes the progress line last showed */
    sk_upload_sync *sync; /* --sync: what the destination holds */
    json_t *objects; /* --json: one object per transfer */
    cmd_ui ui;
} run;

static void progress(void *ud, uint64_t done, uint64_t total)
{
    run *r = ud;
    r->shown_done = done, r->shown_total = total;
    cmd_progress_at at = {.unit = "objects", .done = r->ok, .total = r->walked ? r->queued : 0,
                          .samples = UINT64_MAX, .shards = UINT64_MAX, .bytes = done,
                          .bytes_total = r->walked ? total : 0};
    cmd_progress_show(&r->ui, &at, 0);
}

static void on_done(void *ud, const sk_s3_xfer_result *res)
{
    run *r = ud;
    cmd_ui_clear(&r->ui);
    if (res->rc) {
        r->failed++;
        const char *m = res->err->msg; /* most messages name the source already */
        if (!strncmp(m, res->src, strlen(res->src))) cmd_eprintf("shardkit upload: %s", m);
        else cmd_eprintf("shardkit upload: %s: %s", res->src, m);
    } else {
        r->ok++;
        r->bytes += res->size;
        r->reused += (uint64_t)res->parts_reused;
        if (!r->json && !r->quiet) printf("upload: %s -> s3://%s/%s\n", res->src, res->bucket, res->key);
    }
    if (r->json) {
        char crc[9];
        snprintf(crc, sizeof crc, "%08x", res->crc32c);
        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:s, s:i, s:i, s:b}", "src", res->src, "bucket",
                              res->bucket, "key", res->key, "size", (json_int_t)res->size, "crc32c",
                              crc, "parts", res->parts, "parts_reused", res->parts_reused, "ok", !res->rc);
        if (o && res->rc) json_object_set_new(o, "error", json_string(res->err->msg));
        if (o) json_array_append_new(r->objects, o);
    }
    /* the line printed above took the progress line's place: draw it again
     * at once, or objects finishing faster than the refresh keep it away */
    progress(r, r->shown_done, r->shown_total);
}

/* --dry-run: each planned transfer, as it would go. */
struct dry { const char *bucket; const sk_s3_xfer_opts *xo; int json; };

static int print_item(void *ud, const sk_upload_item *it, const char *sb, sk_error *err)
{
    const struct dry *d = ud;
    uint64_t ps = d->xo->part_size;
    while ((it->size + ps - 1) / ps > 10000) ps *= 2;
    uint64_t parts = it->size > d->xo->multipart_threshold ? (it->size + ps - 1) / ps : 0;
    if (d->json) { /* --dry-run --json: one object per planned transfer */
        json_t *o = json_pack("{s:s, s:s, s:s, s:I, s:I}", "src", it->src, "bucket", d->bucket, "key",
                              it->key, "size", (json_int_t)it->size, "parts", (json_int_t)parts);
        if (o) json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT), putchar('\n');
        json_decref(o);
        return 0;
    }
    printf("would upload: %s%s%s%s -> s3://%s/%s (%" PRIu64 " bytes, ", sb ? "s3://" : "", sb ? sb : "",
           sb ? "/" : "", it->src, d->bucket, it->key, it->size);
    if (parts) printf("%" PRIu64 " parts)\n", parts);
    else printf("one PUT)\n");
    return 0;
}

/* Sends items as the plan streams them; before the first item of a later
 * phase, waits for everything before it, and stops there if anything
 * failed: a later phase never publishes what points at an object that
 * failed. */
struct send {
    sk_s3_xfer *x;
    sk_s3 *src;
    const char *bucket;
    run *r;
    int phase, first; /* first: the first transfer error, or 0 */
};

static int send_item(void *ud, const sk_upload_item *it, const char *sb, sk_error *err)
{
    struct send *s = ud;
    sk_error xerr = SK_ERROR_INIT;
    if (it->phase != s->phase) {
        int rc = sk_s3_xfer_wait(s->x, progress, s->r, &xerr);
        if (rc && !s->first) s->first = rc;
        s->phase = it->phase;
    }
    if (s->r->failed) return sk_error_set(err, SK_E_REMOTE, "not publishing %s: an object before it failed", it->key);
    int same = !sb && s->r->sync ? sk_upload_sync_same(s->r->sync, it->src, it->key, it->size, &xerr) : 0;
    if (same < 0) return *err = xerr, -same;
    if (same && !s->r->json && !s->r->quiet) printf("same: %s = s3://%s/%s\n", it->src, s->bucket, it->key);
    if (same) return s->r->same++, 0; /* --sync: already there */
    /* the plan knows each source (its listing or HEAD): no second HEAD */
    if (sb ? sk_s3_xfer_add_copy_known(s->x, s->src, sb, it->src, it->obj, s->bucket, it->key, &xerr)
           : sk_s3_xfer_add_file(s->x, it->src, s->bucket, it->key, &xerr)) {
        cmd_eprintf("shardkit upload: %s", xerr.msg);
        s->r->failed++;
        return 0;
    }
    s->r->queued++;
    int rc = sk_s3_xfer_start(s->x, progress, s->r, &xerr);
    if (rc && !s->first) s->first = rc;
    return 0;
}

int cmd_upload(int argc, char **argv)
{
    sk_s3_config cfg = SK_S3_CONFIG_INIT, scfg;
    sk_s3_xfer_opts xo = {.struct_size = sizeof xo, .multipart_threshold = 8ull << 20,
                          .part_size = 8ull << 20};
    const char *src_endpoint = NULL, *src_profile = NULL, *src_region = NULL;
    int dry = 0, sync = 0, conc = 0;
    run r = {0};
    const cmd_opt opts[] = {
        CMD_NUM("concurrency", 0, &conc, 1, 64, "--concurrency takes 1..64"),
        CMD_SET("dry-run", 0, &dry, 1),
        CMD_SET("json", 0, &r.json, 1),
        CMD_SIZE("multipart-threshold", 0, &xo.multipart_threshold, 0, UINT64_MAX,
                 "--multipart-threshold takes a size"),
        CMD_SET("path-style", 0, &cfg.path_style, 1),
        CMD_SET("resume", 0, &xo.resume, 1),
        CMD_SET("sign-payload", 0, &cfg.sign_payload, 1),
        CMD_SET("sync", 0, &sync, 1),
        CMD_STR("src-endpoint-url", 0, &src_endpoint),
        CMD_STR("src-profile", 0, &src_profile),
        CMD_STR("src-region", 0, &src_region),
        CMD_SET("verbose", 'v', &cfg.verbose, 1),
        CMD_SET("verify", 0, &xo.verify, 1),
        CMD_SET("quiet", 'q', &r.quiet, 1),
    };
    cmd_opts os = {.tool = "upload", .usage = usage_text, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &cfg, .part_size = &xo.part_size};
    int op0, done;
    optind = 1;
    if ((done = cmd_getopt(&os, argc, argv, &op0)) >= 0) return done;
    if (!xo.multipart_threshold) xo.multipart_threshold = 1; /* 0: always multipart */
    /* 64, as pack fetches: small objects wait on the server's latency per
     * request; sk_s3_new fits it to the open-file limit (docs/upload.md) */
    cfg.concurrency = conc ? conc : 64;
    int nsrc = argc - op0 - 1;
    if (nsrc < 1) return cmd_usage_error("upload", usage_text, "need at least one source and an s3:// destination");
    const char *dst = argv[argc - 1]; /* an s3:// URL (below); the sources: */
    if (cmd_places_args("upload", argv + op0, nsrc, CMD_R | CMD_STREAM | CMD_S3)) return SK_EXIT_USAGE;
    const char *const *srcs = (const char *const *)argv + op0;
    sk_error err = SK_ERROR_INIT;
    char *bucket = NULL, *prefix = NULL;
    if (sk_s3_parse_url(dst, &bucket, &prefix, &err))
        return cmd_usage_error("upload", usage_text, "the destination must be s3://bucket/prefix: %s", err.msg);
    int s3src = cmd_any_s3(srcs, (size_t)nsrc), rc = 0;
    int dir_dst = !*prefix || prefix[strlen(prefix) - 1] == '/' || nsrc > 1;
    sk_s3 *s3 = NULL, *src = NULL;
    sk_s3_xfer *x = NULL;
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
    if (dry) {
        struct dry d = {bucket, &xo, r.json};
        if ((rc = sk_upload_plan_each(srcs, (size_t)nsrc, src, prefix, dir_dst, print_item, &d, &err))) goto fail;
        goto out;
    }
    cmd_progress_start(&r.ui, "upload", r.quiet);
    if (r.json && !(r.objects = json_array()) && (rc = sk_error_set(&err, SK_E_NOMEM, "out of memory")))
        goto fail;
    if (sync && (rc = sk_upload_sync_open(&r.sync, s3, bucket, prefix, xo.part_size, xo.multipart_threshold, &err)))
        goto fail;
    if ((rc = sk_s3_xfer_new(&x, s3, &xo, on_done, &r, &err))) goto fail;
    struct send snd = {x, src, bucket, &r, 0, 0};
    int walk_rc = sk_upload_plan_each(srcs, (size_t)nsrc, src, prefix, dir_dst, send_item, &snd, &err);
    sk_error werr = SK_ERROR_INIT;
    r.walked = 1;
    int first = sk_s3_xfer_wait(x, progress, &r, &werr); /* what is in flight, even after a failed walk */
    first = snd.first ? snd.first : first;
    cmd_ui_clear(&r.ui);
    if (walk_rc && !r.failed && (rc = walk_rc)) goto fail;
    double el = cmd_progress_elapsed(&r.ui);
    uint64_t nreq = 0, nretry = 0;
    sk_s3_stats(s3, &nreq, &nretry);
    if (r.json) {
        json_t *sum = json_pack("{s:b, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:O}", "ok", !r.failed,
                                "objects_ok", (json_int_t)r.ok, "objects_failed", (json_int_t)r.failed,
                                "bytes", (json_int_t)r.bytes, "seconds", el, "mb_per_s",
                                el > 0 ? r.bytes / el / 1e6 : 0.0, "parts_reused", (json_int_t)r.reused,
                                "objects_same", (json_int_t)r.same, "requests", (json_int_t)nreq,
                                "retries", (json_int_t)nretry, "objects", r.objects);
        if (sum) json_dumpf(sum, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT), putchar('\n');
        json_decref(sum);
    } else {
        r.ui.on |= cfg.verbose && !r.quiet; /* -v: the summary also in a log */
        cmd_progress_summary(&r.ui, UINT64_MAX, r.ok, r.failed ? "objects (some failed)" : "objects", r.bytes, el);
    }
    rc = r.failed || first ? SK_EXIT_PROBLEM : 0;
    goto out;
fail:
    rc = cmd_report("upload", &err);
out:
    json_decref(r.objects);
    sk_upload_sync_free(r.sync);
    sk_s3_xfer_free(x);
    if (src != s3) sk_s3_free(src);
    sk_s3_free(s3);
    free(bucket), free(prefix);
    return rc;
}
