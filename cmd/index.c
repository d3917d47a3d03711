/*
 * index.c - `shardkit index`: build the sidecar index and a manifest for
 * shards anyone made, optionally DALI and wids exports; and
 * `shardkit index merge`, which joins the manifests of parallel runs.
 * Thin: options, then sk_index_dataset (or sk_manifest_merge), and the
 * results printed in shard order.
 */
#include "cmd.h"

#include <jansson.h>

#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit index [options] SHARD...\n"
    "       shardkit index merge MANIFEST... -o OUT.json\n"
    "\n"
    "Writes SHARD.idx beside each shard (.tar, .tar.gz, .tar.zst; brace\n"
    "patterns like train-{000000..000099}.tar expand) and a manifest.json.\n"
    "s3:// shards are indexed in place (one streaming GET each, no local copy):\n"
    "SHARD.idx goes up beside each, the manifest to their common prefix; an\n"
    "s3://bucket/prefix/ means the shard objects listed directly under it.\n"
    "http(s):// shards are read in place too, but a web server takes no writes:\n"
    "their SHARD.idx go beside the manifest, which must then be local (-o).\n"
    "\n"
    "  -o, --manifest PATH  manifest to write (default: manifest.json in the\n"
    "                       shards' common directory)\n"
    "      --no-manifest    write the indexes only\n"
    "      --overwrite      replace a manifest that lists shards not indexed now\n"
    "      --fast           plain .tar: read headers only, never data; member and\n"
    "                       shard CRC32C are left unknown (0)\n"
    "      --dali           also write DALI's wds2idx v1.2 index, SHARD.dali.idx\n"
    "      --wids[=PATH]    also write wids' shard index JSON (default: wids.json\n"
    "                       beside the manifest; a local path): local and\n"
    "                       http(s):// shards, not s3://\n"
    "  -j, --jobs N         index N shards at once (default: the number of cores);\n"
    "                       output and manifest are the same for any N\n"
    "      --resume         s3:// shards: keep those whose index object is sound and\n"
    "                       records the object's size and CRC32C\n"
    "      --json           print, instead of a line per shard, one JSON object:\n"
    "                       shards, failed, samples, members, bytes, seconds and\n"
    "                       results (per shard: shard, samples, members, or error)\n"
    "  -q, --quiet          print nothing but errors and warnings\n"
    "  -h, --help           show this help\n"
    "\n"
    CMD_SAGEMAKER_USAGE
    "S3 (for s3:// shards, and merge's s3:// manifests):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "merge: -o, --output PATH  the merged manifest (required), a file or s3://;\n"
    "                       MANIFESTs local, s3:// or http(s):// (read only);\n"
    "                       the SageMaker and S3 options above\n"
    "\n"
    "Exit status: 0 all indexed, 1 a shard could not be (fully) indexed, 2 usage.\n";


struct out {
    int quiet, fast, status;
    json_t *json; /* --json: the results array */
    cmd_ui ui;
    uint64_t bytes;
};

static void on_progress(void *ctx, uint64_t done, uint64_t total, uint64_t samples, uint64_t bytes)
{
    struct out *o = ctx;
    cmd_progress_at at = {.unit = "shards", .done = done, .total = total, .samples = samples,
                          .shards = UINT64_MAX, .bytes = bytes};
    o->bytes = bytes;
    cmd_progress_show(&o->ui, &at, !o->ui.progress_shown); /* at once after a result line */
}

static void on_warn(void *ctx, const char *msg)
{
    struct out *o = ctx;
    if (o) cmd_ui_clear(&o->ui);
    cmd_eprintf("shardkit index: warning: %s", msg);
}

static void on_done(void *ctx, const char *shard, const sk_build_stats *st, const sk_error *err)
{
    struct out *o = ctx;
    cmd_ui_clear(&o->ui);
    if (err) {
        int rc = cmd_report("index", err);
        if (rc > o->status) o->status = rc;
        if (o->json)
            json_array_append_new(o->json, json_pack("{s:o, s:o}", "shard", json_string_nocheck(shard),
                                                     "error", json_string_nocheck(err->msg)));
        return;
    }
    if (o->json)
        json_array_append_new(o->json, json_pack("{s:o, s:I, s:I}", "shard", json_string_nocheck(shard),
                                                 "samples", (json_int_t)st->samples, "members",
                                                 (json_int_t)st->members));
    if (o->quiet || o->json) return;
    printf("%s: %llu samples, %llu members%s\n", shard, (unsigned long long)st->samples,
           (unsigned long long)st->members,
           st->kept ? " (kept: its index object matches)"
           : st->flags & SK_INDEX_NO_CRC ? " (headers only)" : "");
    if (st->meta || st->links || st->unkeyed)
        cmd_eprintf("shardkit index: %s: skipped %llu metadata, %llu link and %llu unkeyed members",
                shard, (unsigned long long)st->meta, (unsigned long long)st->links,
                (unsigned long long)st->unkeyed);
}

static int sagemaker_option(void *ctx, int c, char *value)
{
    cmd_sagemaker *sm = ctx;
    return cmd_sagemaker_option(sm->tool, usage, c, value, sm);
}

static const struct option sagemaker_rows[] = {CMD_SAGEMAKER_OPTIONS};
#define SAGEMAKER_ROWS(sm) .more = sagemaker_rows, .nmore = sizeof sagemaker_rows / sizeof *sagemaker_rows, \
                           .more_fn = sagemaker_option, .more_ctx = sm

static int run_merge(int argc, char **argv)
{
    const char *out = NULL;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    cmd_sagemaker sm = {.tool = "index merge"};
    const cmd_opt opts[] = {CMD_STR("output", 'o', &out), CMD_STR("manifest", 0, &out)};
    cmd_opts os = {.tool = "index merge", .usage = usage, .t = opts, .n = 2, .s3 = &s3cfg, SAGEMAKER_ROWS(&sm)};
    int first, done;
    optind = 1;
    if ((done = cmd_getopt(&os, argc, argv, &first)) >= 0) return done;
    if (!out) return cmd_usage_error("index merge", usage, "-o OUT.json is required");
    if (first >= argc) return cmd_usage_error("index merge", usage, "no manifests given");
    if (cmd_places("index merge", &(cmd_place){"-o", out, CMD_W | CMD_S3}, 1) ||
        cmd_places_args("index merge", argv + first, argc - first, CMD_R | CMD_S3 | CMD_HTTP))
        return SK_EXIT_USAGE;
    sk_error err = SK_ERROR_INIT;
    const char *const *ins = (const char *const *)argv + first;
    int rc = ((cmd_any_s3(&out, 1) || cmd_any_s3(ins, (size_t)(argc - first))) && sk_s3_new(&s3, &s3cfg, &err)) ||
             sk_manifest_merge_s3(ins, (size_t)(argc - first), out, s3, &err) ||
             cmd_sagemaker_write(&sm, out, NULL, 0, 0, s3, &err);
    sk_s3_free(s3);
    return rc ? cmd_report("index merge", &err) : SK_EXIT_OK;
}

/* --fast, --json and --wids[=PATH]: more than one field each */
struct index_opts {
    sk_index_dataset_opts *o;
    struct out *out;
};

static int fast(void *ctx, char *value)
{
    struct index_opts *io = ctx;
    io->o->flags |= SK_BUILD_FAST, io->out->fast = 1;
    return 0;
}

static int json(void *ctx, char *value)
{
    struct index_opts *io = ctx;
    return !io->out->json && !(io->out->json = json_array()) ? SK_EXIT_PROBLEM : 0;
}

static int wids(void *ctx, char *value)
{
    ((struct index_opts *)ctx)->o->wids = value ? value : "";
    return 0;
}

int cmd_index(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "merge")) return run_merge(argc - 1, argv + 1);
    cmd_sagemaker sm = {.tool = "index"};
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    sk_index_dataset_opts o;
    sk_index_dataset_opts_init(&o);
    struct out out = {0};
    uint64_t njobs = 0; /* 0: one per core */
    struct index_opts io = {&o, &out};
    const cmd_opt opts[] = {
        CMD_SET("dali", 0, &o.dali, 1),
        CMD_DO("fast", 0, fast, &io),
        CMD_NUM("jobs", 'j', &njobs, 1, 1024, "-j needs a number of jobs from 1 to 1024"),
        CMD_DO("json", 0, json, &io),
        CMD_STR("manifest", 'o', &o.manifest),
        CMD_SET("no-manifest", 0, &o.no_manifest, 1),
        CMD_SET("overwrite", 0, &o.overwrite, 1),
        CMD_SET("quiet", 'q', &out.quiet, 1),
        CMD_SET("resume", 0, &o.resume, 1),
        CMD_FN_OPT("wids", wids, &io),
    };
    cmd_opts os = {.tool = "index", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg, SAGEMAKER_ROWS(&sm)};
    int first, done = cmd_getopt(&os, argc, argv, &first);
    if (done >= 0) return done;
    if (first >= argc) return cmd_usage_error("index", usage, "no shards given");
    const cmd_place pl[] = {{"-o", o.manifest, CMD_W | CMD_S3}, {"--wids", o.wids && *o.wids ? o.wids : NULL, CMD_W},
                            {"--sagemaker-manifest", sm.out, CMD_W | CMD_S3}};
    if (cmd_places("index", pl, 3) || cmd_places_args("index", argv + first, argc - first, CMD_R | CMD_S3 | CMD_HTTP))
        return SK_EXIT_USAGE;
    if (o.no_manifest && (o.manifest || o.wids || sm.out))
        return cmd_usage_error("index", usage, "--no-manifest conflicts with -o, --wids and --sagemaker-manifest");
#ifdef __GLIBC__
    /* Each shard's build allocates a few MB of records and frees them; by
     * default glibc gives such blocks back to the kernel (mmap/munmap, heap
     * trimming), and the next shard pays a page fault for every page again:
     * 5,000 faults over the 8 benchmark shards, a few percent of a --fast
     * run.  Kept in the heap, they are reused by the next shard. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
    o.jobs = (int)njobs;
    o.warn = on_warn;
    o.done = on_done;
    o.ctx = &out;
    cmd_progress_start(&out.ui, "index", out.quiet);
    o.progress = on_progress; /* also counts the bytes for --json */
    sk_error err = SK_ERROR_INIT;
    sk_index_dataset_stats st = {0};
    const char *const *args = (const char *const *)argv + first;
    o.sagemaker = sm.out;
    o.sagemaker_opts = &sm.o;
    sm.o.warn = on_warn; /* (sk_index_dataset hands it its client) */
    if ((cmd_any_s3(args, (size_t)(argc - first)) || cmd_any_s3(&o.manifest, 1) || cmd_any_s3(&sm.out, 1)) &&
        sk_s3_new(&s3, &s3cfg, &err))
        return cmd_report("index", &err);
    o.s3 = s3;
    int rc = sk_index_dataset(args, (size_t)(argc - first), &o, &st, &err);
    sk_s3_free(s3);
    if (rc) cmd_ui_end(&out.ui);
    else cmd_progress_summary(&out.ui, st.shards, st.samples, "samples", out.bytes, cmd_progress_elapsed(&out.ui));
    if (out.json) {
        json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:I, s:f, s:o}", "shards", (json_int_t)st.shards,
                              "failed", (json_int_t)st.failed, "samples", (json_int_t)st.samples,
                              "members", (json_int_t)st.members, "bytes", (json_int_t)out.bytes,
                              "seconds", cmd_progress_elapsed(&out.ui), "results", out.json);
        if (j) json_dumpf(j, stdout, JSON_PRESERVE_ORDER), putchar('\n');
        json_decref(j);
    }
    if (rc) {
        if (!st.failed) return cmd_report("index", &err); /* not a shard's fault: say why */
        if (!o.no_manifest)
            fprintf(stderr, "shardkit index: manifest not written because of the errors above\n");
        return out.status ? out.status : SK_EXIT_PROBLEM;
    }
    return SK_EXIT_OK;
}
