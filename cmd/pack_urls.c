/*
 * pack_urls.c - `shardkit pack --from-urls LIST`: a URL list downloaded,
 * resized and written as shards (img2dataset's job).  Parses options with
 * img2dataset's names, calls sk_pack_urls, prints progress on a terminal
 * and the summary.  cmd_pack hands over when it sees --from-urls.
 */
#include "cmd.h"

#include <getopt.h>
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

enum {
    OPT_FROM_URLS = 256, OPT_INPUT_FORMAT, OPT_URL_COL, OPT_CAPTION_COL, OPT_SAVE_COLS,
    OPT_PER_SHARD, OPT_CONCURRENCY, OPT_PER_HOST, OPT_MAX_BYTES, OPT_TIMEOUT, OPT_RETRIES,
    OPT_UA_TOKEN, OPT_DIRECTIVES, OPT_ALLOW_PRIVATE, OPT_HASH, OPT_VERIFY_HASH, OPT_INCREMENTAL,
    OPT_START, OPT_MTIME, OPT_COMPRESS, OPT_PART, OPT_PARTS, OPT_MANIFEST, OPT_JSON,
};

static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"from-urls", required_argument, NULL, OPT_FROM_URLS},
    {"input-format", required_argument, NULL, OPT_INPUT_FORMAT},
    {"url-col", required_argument, NULL, OPT_URL_COL},
    {"caption-col", required_argument, NULL, OPT_CAPTION_COL},
    {"save-additional-columns", required_argument, NULL, OPT_SAVE_COLS},
    {"number-sample-per-shard", required_argument, NULL, OPT_PER_SHARD},
    {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
    {"per-host", required_argument, NULL, OPT_PER_HOST},
    {"max-image-bytes", required_argument, NULL, OPT_MAX_BYTES},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"retries", required_argument, NULL, OPT_RETRIES},
    {"user-agent-token", required_argument, NULL, OPT_UA_TOKEN},
    {"disallowed-header-directives", required_argument, NULL, OPT_DIRECTIVES},
    {"allow-private-addresses", optional_argument, NULL, OPT_ALLOW_PRIVATE},
    {"compute-hash", required_argument, NULL, OPT_HASH},
    {"verify-hash", required_argument, NULL, OPT_VERIFY_HASH},
    {"incremental", no_argument, NULL, OPT_INCREMENTAL},
    {"jobs", required_argument, NULL, 'j'},
    {"start", required_argument, NULL, OPT_START},
    {"mtime", required_argument, NULL, OPT_MTIME},
    {"compress", required_argument, NULL, OPT_COMPRESS},
    {"part", required_argument, NULL, OPT_PART},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"manifest", required_argument, NULL, OPT_MANIFEST},
    {"json", no_argument, NULL, OPT_JSON},
    CMD_S3_CLIENT_OPTIONS,
    CMD_EXISTING_OPTIONS,
    CMD_IMAGE_OPTIONS,
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void on_progress(void *ctx, const sk_urls_stats *st)
{
    cmd_progress_at at = {.unit = "rows", .done = st->rows, .samples = st->success,
                          .shards = st->shards, .bytes = st->bytes, .also = "failed",
                          .also_n = st->failed_to_download + st->failed_to_resize};
    cmd_progress_show(ctx, &at, 0);
}

/* A whole number in lo..hi into *out; 0 on success. */
static int num(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    return cmd_parse_u64(s, out) || *out < lo || *out > hi;
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
    const char *part = NULL;
    uint64_t v, parts = 0;
    int json = 0, quiet = 0, c;
    char *end;
    while ((c = getopt_long(argc, argv, "o:j:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': o.pattern = optarg; break;
        case OPT_FROM_URLS: u.list = optarg; break;
        case OPT_INPUT_FORMAT: u.input_format = optarg; break;
        case OPT_URL_COL: u.url_col = optarg; break;
        case OPT_CAPTION_COL: u.caption_col = optarg; break;
        case OPT_SAVE_COLS: u.save_columns = optarg; break;
        case OPT_UA_TOKEN: u.user_agent_token = optarg; break;
        case OPT_DIRECTIVES: u.disallowed_header_directives = optarg; break;
        case OPT_ALLOW_PRIVATE: u.allow_private = 1; u.allow_addresses = optarg; break;
        case OPT_HASH: u.compute_hash = optarg; break;
        case OPT_VERIFY_HASH: u.verify_hash = optarg; break;
        case OPT_INCREMENTAL: u.incremental = 1; break;
        case OPT_MANIFEST: o.manifest = optarg; break;
        case OPT_PART: part = optarg; break;
        case OPT_JSON: json = 1; break;
        case 'q': quiet = 1; break;
        case 'h': fputs(usage, stdout); return SK_EXIT_OK;
        case OPT_PER_SHARD:
            if (num(optarg, 1, 100000000, &u.per_shard))
                return cmd_usage_error("pack", usage, "--number-sample-per-shard '%s': want 1..100000000", optarg);
            break;
        case OPT_CONCURRENCY:
        case OPT_PER_HOST:
        case OPT_RETRIES:
            if (num(optarg, c == OPT_RETRIES ? 0 : 1, c == OPT_RETRIES ? 100 : 4096, &v))
                return cmd_usage_error("pack", usage, "--%s '%s': want %s", c == OPT_RETRIES ? "retries"
                                       : c == OPT_PER_HOST ? "per-host" : "concurrency", optarg,
                                       c == OPT_RETRIES ? "0..100" : "1..4096");
            *(c == OPT_RETRIES ? &u.retries : c == OPT_PER_HOST ? &u.per_host : &u.concurrency) = (int)v;
            break;
        case OPT_MAX_BYTES:
            if (cmd_parse_size(optarg, &u.max_image_bytes) || !u.max_image_bytes)
                return cmd_usage_error("pack", usage, "--max-image-bytes '%s': want a size such as 32M", optarg);
            break;
        case OPT_TIMEOUT:
            u.timeout = strtod(optarg, &end);
            if (end == optarg || *end || !(u.timeout > 0) || u.timeout > 3600)
                return cmd_usage_error("pack", usage, "--timeout '%s': want seconds, over 0 and up to 3600", optarg);
            break;
        case 'j':
            if (num(optarg, 1, 256, &v)) return cmd_usage_error("pack", usage, "--jobs '%s': want 1..256", optarg);
            o.jobs = (int)v;
            break;
        case OPT_START:
            if (cmd_parse_u64(optarg, &o.start)) return cmd_usage_error("pack", usage, "--start '%s': want an integer", optarg);
            break;
        case OPT_MTIME:
            if (cmd_parse_u64(optarg, &o.mtime)) return cmd_usage_error("pack", usage, "--mtime '%s': want seconds since 1970", optarg);
            break;
        case OPT_COMPRESS:
            if (cmd_parse_compress(optarg, &o.compress_level))
                return cmd_usage_error("pack", usage, "--compress '%s': want zstd, zstd:LEVEL (1..22) or none", optarg);
            break;
        case OPT_PARTS:
            if (num(optarg, 1, SK_PART_MAX, &parts)) return cmd_usage_error("pack", usage, "--parts '%s': want 1..%d", optarg, SK_PART_MAX);
            break;
        default:
            switch (cmd_image_option("pack", usage, c, optarg, &images) ?: cmd_existing_option("pack", usage, c, &o.existing)) {
            case 1: continue;
            case -1: return SK_EXIT_USAGE;
            }
            switch (cmd_s3_option("pack", usage, c, optarg, &s3cfg, NULL)) {
            case 1: break;
            case -1: return SK_EXIT_USAGE;
            default: return cmd_unknown_option("pack", argv);
            }
        }
    }
    if (optind < argc) return cmd_usage_error("pack", usage, "'%s': --from-urls takes no SOURCE", argv[optind]);
    if (!o.pattern) return cmd_usage_error("pack", usage, "no output: give -o PATTERN");
    if (!u.list) return cmd_usage_error("pack", usage, "no list: give --from-urls LIST");
    if (!strcmp(o.pattern, "-")) return cmd_usage_error("pack", usage, "-o -: --from-urls writes shard files (and their status files)");
    const cmd_place pl[] = {{"-o", o.pattern, CMD_W | CMD_S3}, {"--manifest", o.manifest, CMD_W | CMD_S3},
                            {"--from-urls", u.list, CMD_R | CMD_STREAM | CMD_S3}};
    if (cmd_places("pack", pl, sizeof pl / sizeof *pl)) return SK_EXIT_USAGE;
    cmd_check_zst_pattern("pack", o.pattern, &o.compress_level);
    if (parts && !part) return cmd_usage_error("pack", usage, "--parts needs --part");
    sk_error err = SK_ERROR_INIT;
    if (part && sk_part_parse(part, (int)parts, &o.part, &o.parts, &err))
        return cmd_usage_error("pack", usage, "%s", err.msg);
    if (sk_image_options_active(&images) || images.max_pixels) o.images = &images;
    const char *named[] = {o.pattern, o.manifest, u.list};
    sk_s3 *s3 = NULL;
    o.warn = cmd_ui_warn;
    o.ctx = &ui;
    cmd_progress_start(&ui, "pack", quiet);
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
    if (json)
        printf("{\"rows\": %llu, \"success\": %llu, \"failed_to_download\": %llu, \"failed_to_resize\": %llu, "
               "\"bytes\": %llu, \"shards\": %llu, \"shards_kept\": %llu, \"output_bytes\": %llu, "
               "\"seconds\": %.3f}\n",
               (unsigned long long)st.rows, (unsigned long long)st.success,
               (unsigned long long)st.failed_to_download, (unsigned long long)st.failed_to_resize,
               (unsigned long long)st.bytes, (unsigned long long)st.shards,
               (unsigned long long)st.shards_kept, (unsigned long long)st.output_bytes, st.seconds);
    return SK_EXIT_OK;
}
