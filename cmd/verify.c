/*
 * verify.c - `shardkit verify`: proves shards sound.  Parses options, calls
 * sk_verify, prints each problem (human or --json lines) and the summary.
 */
#include "cmd.h"

#include <getopt.h>
#include <jansson.h>

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: shardkit verify [options] SHARD|MANIFEST|DIR|s3://PREFIX/...\n"
    "\n"
    "Checks shards (brace patterns allowed) or every shard of a manifest.json\n"
    "(a directory or an s3:// prefix: its manifest.json, else its shards):\n"
    "tar structure (header checksums, sizes, end-of-archive, trailing garbage),\n"
    "truncation, agreement with the index sidecar (.idx) and the manifest (bytes,\n"
    "sample counts, CRC32C), samples whose members are not adjacent, duplicate\n"
    "keys within and across shards, missing required extensions, empty members\n"
    "(a warning).  Each problem is reported with its shard, offset and key.\n"
    "s3:// shards and manifests are read whole through streaming GETs, so every\n"
    "object's size and CRC32C is checked against its index and the manifest.\n"
    "\n"
    "      --deep               read all data: CRC32C of every member against the\n"
    "                           index, and of every shard against index and manifest\n"
    "      --jpeg               decode every .jpg/.jpeg member with libjpeg-turbo\n"
    "                           (warnings such as premature end count as corrupt)\n"
    "      --require EXT,...    every sample must have these extensions\n"
    "      --image-size N       every image member must have a size the resize rule\n"
    "                           gives (with --resize-mode, --resize-only-if-bigger,\n"
    "                           --image-ext as pack/shard took them); implies --jpeg\n"
    "  -j, --jobs N             JPEG decoding threads (default: number of cores)\n"
    "      --json               one JSON object per problem, then a summary object\n"
    "      --key-mem SIZE       memory for the duplicate-key check (default 64M); past\n"
    "                           it, sorted key runs go to temp files in $TMPDIR\n"
    "  -q, --quiet              print problems only, no summary line\n"
    "  -h, --help               this text\n"
    "S3 (for s3:// targets):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Exit status: 0 sound (warnings allowed), 1 a problem was found, 2 usage or\n"
    "I/O error.\n";

/* --require EXT,...: each extension (a leading dot dropped) appended */
struct required {
    sk_verify_options *o;
    const char **req;
};

static int require(void *ctx, char *value)
{
    struct required *r = ctx;
    for (char *save = NULL, *t = strtok_r(value, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char **n = realloc(r->req, (r->o->nrequire + 1) * sizeof *n);
        if (!n) return SK_EXIT_USAGE;
        r->req = n;
        r->req[r->o->nrequire++] = t[0] == '.' ? t + 1 : t;
    }
    return 0;
}

static int image_option(void *ctx, int c, char *value)
{
    return cmd_image_option("verify", usage, c, value, ctx);
}

struct vctx {
    int json;
    cmd_ui ui;
    unsigned flags;
};

static void on_problem(void *ctx, const sk_verify_problem *p)
{
    struct vctx *c = ctx;
    int json = c->json;
    cmd_ui_clear(&c->ui);
    if (json) { /* one object a line; names are whatever bytes the shard holds */
        json_t *o = json_object();
        json_object_set_new(o, "severity", json_string(p->warning ? "warning" : "error"));
        json_object_set_new(o, "kind", json_string_nocheck(p->kind));
        json_object_set_new(o, "shard", json_string_nocheck(p->shard));
        json_object_set_new(o, "offset", json_integer((json_int_t)p->offset));
        json_object_set_new(o, "key", p->key ? json_string_nocheck(p->key) : json_null());
        json_object_set_new(o, "message", json_string_nocheck(p->msg));
        json_dumpf(o, stdout, JSON_PRESERVE_ORDER);
        putchar('\n');
        json_decref(o);
    } else {
        printf("%s:%llu: %s: %s", p->shard, (unsigned long long)p->offset,
               p->warning ? "warning" : "error", p->kind);
        if (p->key) printf(" (key %s)", p->key);
        printf(": %s\n", p->msg);
    }
}

static void on_progress(void *ctx, const sk_verify_progress *p)
{
    struct vctx *c = ctx;
    cmd_progress_at at = {"shards", p->shards_done, p->shards_total, p->samples, UINT64_MAX,
                          p->bytes_done, p->bytes_total, NULL, 0};
    if (c->flags & SK_VERIFY_JPEG) at.also = "jpegs", at.also_n = p->jpegs_done;
    cmd_progress_show(&c->ui, &at, 0);
}

int cmd_verify(int argc, char **argv)
{
    sk_verify_options o = {0};
    sk_image_options images;
    sk_image_options_init(&images);
    struct required rq = {&o, NULL};
    int json = 0, quiet = 0, rc = SK_EXIT_OK;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    static const struct option image_rows[] = {CMD_IMAGE_OPTIONS};
    const cmd_opt opts[] = {
        CMD_OR("deep", &o.flags, SK_VERIFY_DEEP),
        CMD_OR("jpeg", &o.flags, SK_VERIFY_JPEG),
        CMD_FN("require", 0, require, &rq),
        CMD_NUM("jobs", 'j', &o.jobs, 1, 256, "--jobs '%s': want 1..256"),
        CMD_SET("json", 0, &json, 1),
        CMD_SIZE("key-mem", 0, &o.key_mem, 1, UINT64_MAX, "--key-mem '%s': want a size such as 64M"),
        CMD_SET("quiet", 'q', &quiet, 1),
    };
    cmd_opts os = {.tool = "verify", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg, .more = image_rows, .nmore = sizeof image_rows / sizeof *image_rows,
                   .more_fn = image_option, .more_ctx = &images};
    int first, done = cmd_getopt(&os, argc, argv, &first);
    const char **req = rq.req;
    if (done >= 0) return free(req), done;
    if (first >= argc) {
        free(req);
        return cmd_usage_error("verify", usage, "nothing to verify: give a SHARD or MANIFEST");
    }
    o.require = req;
    o.report = on_problem;
    if (images.image_size) o.images = &images;
    struct vctx vc = {json, {.tool = "verify"}, o.flags};
    cmd_progress_start(&vc.ui, "verify", quiet);
    if (vc.ui.on) o.progress = on_progress;
    o.ctx = &vc;
    sk_error err = SK_ERROR_INIT;
    sk_verify_stats st = {0};
    if (cmd_places_args("verify", argv + first, argc - first, CMD_R | CMD_S3 | CMD_HTTP)) return free(req), SK_EXIT_USAGE;
    const char *const *targets = (const char *const *)argv + first;
    int r = cmd_any_remote(targets, (size_t)(argc - first), &s3cfg) ? sk_s3_new(&s3, &s3cfg, &err) : SK_OK;
    o.s3 = s3;
    if (!r) r = sk_verify(targets, (size_t)(argc - first), &o, &st, &err);
    sk_s3_free(s3);
    free(req);
    if (r) cmd_ui_end(&vc.ui);
    else cmd_progress_summary(&vc.ui, st.shards, st.samples, "samples", st.bytes, cmd_progress_elapsed(&vc.ui));
    if (r) {
        fflush(stdout);
        cmd_eprintf("shardkit verify: %s", err.msg[0] ? err.msg : sk_code_name(err.code));
        return SK_EXIT_USAGE; /* usage or I/O error: 2, as documented */
    }
    if (json)
        printf("{\"summary\": true, \"shards\": %llu, \"samples\": %llu, \"members\": %llu, "
               "\"bytes\": %llu, \"jpegs\": %llu, \"errors\": %llu, \"warnings\": %llu}\n",
               (unsigned long long)st.shards, (unsigned long long)st.samples,
               (unsigned long long)st.members, (unsigned long long)st.bytes,
               (unsigned long long)st.jpegs, (unsigned long long)st.errors,
               (unsigned long long)st.warnings);
    else if (!quiet)
        printf("%s: %llu shards, %llu samples, %llu members, %llu bytes%s: %llu errors, "
               "%llu warnings\n", st.errors ? "PROBLEMS" : "sound",
               (unsigned long long)st.shards, (unsigned long long)st.samples,
               (unsigned long long)st.members, (unsigned long long)st.bytes,
               (o.flags & SK_VERIFY_JPEG) ? "" : "", (unsigned long long)st.errors,
               (unsigned long long)st.warnings);
    if (st.errors) rc = SK_EXIT_PROBLEM;
    return rc;
}
