/*
 * pack_urls.c - `shardkit pack --from-urls LIST`: a URL list downloaded,
 * resized and written as shards (img2dataset's job).  Parses options with
 * img2dataset's names, calls sk_pack_urls, prints progress on a terminal
 * and the summary.  cmd_pack hands over when it sees --from-urls.
 */
#include "cmd.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit pack --from-urls LIST [options] -o PATTERN\n"
    "\n"
    "Downloads each row's URL of LIST (a file, '-' for stdin, or s3://; txt: one URL\n"
    "a line, csv, tsv with a header row, or jsonl) and writes the images as samples\n"
    "(.jpg, .txt caption, .json) in list order to shards named by PATTERN: rows\n"
    "[k*N, (k+1)*N) make shard k, keys are img2dataset's (shard, row: 000010042).\n"
    "Every row's outcome is a line of the shard's status file (PATTERN's name without\n"
    ".tar, then .status.jsonl); counts go to stats.json beside the manifest.\n"
    "\n"
    "  -o, --output PATTERN     shard names: a printf pattern with one integer field\n"
    "      --from-urls LIST     the URL list (see docs/urls.md)\n"
    "      --input-format F     txt, csv, tsv or jsonl (default: LIST's extension)\n"
    "      --url-col NAME       the URL's column (default url)\n"
    "      --caption-col NAME   the caption's column, written as .txt\n"
    "      --save-additional-columns A,B  columns copied into each .json\n"
    "      --number-sample-per-shard N  rows a shard (default 10000)\n"
    "      --concurrency N      downloads at once (default 64)\n"
    "      --per-host N         connections to one host at once (default 16)\n"
    "      --max-image-bytes SIZE  a larger body fails as it arrives (default 32MiB)\n"
    "      --timeout S          seconds one attempt may take (default 10)\n"
    "      --retries N          further attempts after 5xx, 429, timeout (default 0);\n"
    "                           Retry-After is honoured up to 60 s\n"
    "      --user-agent-token T named in User-Agent and obeyed in X-Robots-Tag\n"
    "      --disallowed-header-directives D,...  X-Robots-Tag directives that forbid\n"
    "                           taking an image (default noai,noimageai,noindex,\n"
    "                           noimageindex; '' takes every image)\n"
    "      --allow-private-addresses[=CIDR,...]  also fetch from loopback, private,\n"
    "                           link-local and multicast addresses (all, or only those\n"
    "                           in the ranges given: tests, on-premise mirrors)\n"
    "      --compute-hash H     sha256 (default), md5 or none: of the bytes served\n"
    "      --verify-hash COL    fail rows whose hash differs from column COL\n"
    "      --incremental        keep the shards an earlier run finished\n"
    "  -j, --jobs N             image threads (default: number of cores)\n"
    "      --start N            number of the first shard (default 0)\n"
    "      --mtime N            modification time in every header (default 0)\n"
    "      --compress zstd[:L]  .tar.zst shards (level 1..22, default 3)\n"
    "      --part I/N|auto      only the shards k with k mod N = I; PATTERN needs {part}\n"
    "      --parts N            the number of parts, for --part auto\n"
    "      --manifest PATH      write the manifest there (default: beside the shards)\n"
    CMD_EXISTING_USAGE
    "      --json               print the run's counts as JSON on stdout\n"
    "  -q, --quiet              no progress line\n"
    "Images (each body must be a JPEG; without --image-size it is kept as served):\n"
    "      --image-size N, --resize-mode MODE, --resize-only-if-bigger,\n"
    "      --encode-quality Q, --min-image-size N, --max-aspect-ratio R,\n"
    "      --max-pixels N, --image-memory SIZE   as for pack (shardkit pack --help)\n"
    "S3 (for an s3:// LIST or PATTERN):\n"
    CMD_S3_CLIENT_USAGE
    "  -h, --help               this text\n"
    "\n"
    "Exit status: 0 done (failed rows are counted, not errors), 1 the list or an\n"
    "output failed, 2 usage error.\n";

static void on_progress(void *ctx, const sk_urls_stats *st)
{
    cmd_progress_at at = {.unit = "rows", .done = st->rows, .samples = st->success,
                          .shards = st->shards, .bytes = st->bytes, .also = "failed",
                          .also_n = st->failed_to_download + st->failed_to_resize};
    cmd_progress_show(ctx, &at, 0);
}

/* --allow-private-addresses[=CIDR,...] */
static int allow_private(void *ctx, char *ranges)
{
    sk_urls_options *u = ctx;
    u->allow_private = 1;
    u->allow_addresses = ranges;
    return 0;
}

int cmd_pack_urls(int argc, char **argv)
{
    sk_pack_options o;
    sk_urls_options u;
    sk_pack_options_init(&o);
    sk_urls_options_init(&u);
    o.compress_level = -1;
    sk_image_options images;
    sk_image_options_init(&images);
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    cmd_ui ui = {.tool = "pack"};
    int first;
    cmd_writer w = {.tool = "pack", .usage = usage, .images = &images, .existing = &o.existing};
    const cmd_opt opts[] = {
        CMD_WRITER_ROWS(&o, &w),
        CMD_STR("from-urls", 0, &u.list),
        CMD_STR("input-format", 0, &u.input_format),
        CMD_STR("url-col", 0, &u.url_col),
        CMD_STR("caption-col", 0, &u.caption_col),
        CMD_STR("save-additional-columns", 0, &u.save_columns),
        CMD_NUM("number-sample-per-shard", 0, &u.per_shard, 1, 100000000,
                "--number-sample-per-shard '%s': want 1..100000000"),
        CMD_NUM("concurrency", 0, &u.concurrency, 1, 4096, "--concurrency '%s': want 1..4096"),
        CMD_NUM("per-host", 0, &u.per_host, 1, 4096, "--per-host '%s': want 1..4096"),
        CMD_SIZE("max-image-bytes", 0, &u.max_image_bytes, 1, UINT64_MAX,
                 "--max-image-bytes '%s': want a size such as 32M"),
        CMD_CHECK("timeout", 0, &u.timeout, cmd_check_seconds,
                  "--timeout '%s': want seconds, over 0 and up to 3600"),
        CMD_NUM("retries", 0, &u.retries, 0, 100, "--retries '%s': want 0..100"),
        CMD_STR("user-agent-token", 0, &u.user_agent_token),
        CMD_STR("disallowed-header-directives", 0, &u.disallowed_header_directives),
        CMD_FN_OPT("allow-private-addresses", allow_private, &u),
        CMD_STR("compute-hash", 0, &u.compute_hash),
        CMD_STR("verify-hash", 0, &u.verify_hash),
        CMD_SET("incremental", 0, &u.incremental, 1),
    };
    cmd_opts os = {.tool = "pack", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg, CMD_WRITER_MORE(&w)};
    int done = cmd_getopt(&os, argc, argv, &first);
    if (done >= 0) return done;
    if (first < argc) return cmd_usage_error("pack", usage, "'%s': --from-urls takes no SOURCE", argv[first]);
    if (!o.pattern) return cmd_usage_error("pack", usage, "no output: give -o PATTERN");
    if (!u.list) return cmd_usage_error("pack", usage, "no list: give --from-urls LIST");
    if (!strcmp(o.pattern, "-")) return cmd_usage_error("pack", usage, "-o -: --from-urls writes shard files (and their status files)");
    const cmd_place pl[] = {{"-o", o.pattern, CMD_W | CMD_S3}, {"--manifest", o.manifest, CMD_W | CMD_S3},
                            {"--from-urls", u.list, CMD_R | CMD_STREAM | CMD_S3}};
    if (cmd_places("pack", pl, sizeof pl / sizeof *pl)) return SK_EXIT_USAGE;
    cmd_check_zst_pattern("pack", o.pattern, &o.compress_level);
    if (cmd_writer_part(&w, &o.part, &o.parts)) return SK_EXIT_USAGE;
    sk_error err = SK_ERROR_INIT;
    if (sk_image_options_active(&images) || images.max_pixels) o.images = &images;
    const char *named[] = {o.pattern, o.manifest, u.list};
    sk_s3 *s3 = NULL;
    o.warn = cmd_ui_warn;
    o.ctx = &ui;
    cmd_progress_start(&ui, "pack", w.quiet);
    u.progress = ui.on ? on_progress : NULL;
    u.ctx = &ui;
    sk_urls_stats st = {0};
    int rc = cmd_any_s3(named, 3) ? sk_s3_new(&s3, &s3cfg, &err) : SK_OK;
    if (!rc) rc = sk_pack_urls(&o, &u, s3, &st, &err);
    sk_s3_free(s3);
    if (rc) {
        cmd_ui_end(&ui);
        return cmd_report("pack", &err);
    }
    cmd_progress_summary(&ui, st.shards, st.success, "samples", st.bytes, st.seconds);
    if (ui.on) /* the counts by status; stats.json and --json hold them for scripts */
        cmd_eprintf("pack: %llu rows: %llu success, %llu failed_to_download, %llu failed_to_resize; "
                    "%llu shards written, %llu kept",
                    (unsigned long long)st.rows, (unsigned long long)st.success,
                    (unsigned long long)st.failed_to_download, (unsigned long long)st.failed_to_resize,
                    (unsigned long long)st.shards, (unsigned long long)st.shards_kept);
    if (w.json)
        printf("{\"rows\": %llu, \"success\": %llu, \"failed_to_download\": %llu, \"failed_to_resize\": %llu, "
               "\"bytes\": %llu, \"shards\": %llu, \"shards_kept\": %llu, \"output_bytes\": %llu, "
               "\"seconds\": %.3f}\n",
               (unsigned long long)st.rows, (unsigned long long)st.success,
               (unsigned long long)st.failed_to_download, (unsigned long long)st.failed_to_resize,
               (unsigned long long)st.bytes, (unsigned long long)st.shards,
               (unsigned long long)st.shards_kept, (unsigned long long)st.output_bytes, st.seconds);
    return SK_EXIT_OK;
}
