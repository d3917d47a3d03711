/*
 * pack.c - `shardkit pack`: many small files into indexed tar shards.
 * Parses options, hands the sources to the library, prints progress on a
 * terminal and a summary with --json.
 */
#include "cmd.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit pack [options] SOURCE... -o PATTERN\n"
    "\n"
    "Packs the files under each SOURCE directory (and any --files-from list or\n"
    "--from-archive archive) into tar shards named by PATTERN, e.g.\n"
    "out/train-%06d.tar, each with an index beside it (.idx), plus manifest.json.\n"
    "Files group into samples by WebDataset key: a/b.seg.png is key a/b, ext seg.png.\n"
    "A SOURCE may be an s3://bucket/prefix/ (every object under it, named by its\n"
    "key relative to the prefix), and PATTERN s3://bucket/prefix/train-%06d.tar\n"
    "(each shard streams into a multipart upload; no local copy).\n"
    "\n"
    "  -o, --output PATTERN     shard names: a printf pattern with one integer field\n"
    "      --files-from FILE    also pack the paths listed in FILE ('-' = stdin;\n"
    "                           s3:// and http(s):// are read as a stream)\n"
    "      --root DIR           directory the listed paths are relative to (default .)\n"
    "  -0, --null               the list is NUL-separated (find -print0)\n"
    "      --from-archive FILE  also pack each member of FILE (tar, zip, 7z, ...;\n"
    "                           local, s3:// or http(s)://)\n"
    "      --from-urls LIST     download a URL list instead (docs/urls.md)\n"
    "      --from-manifest M    also pack what SageMaker manifest M names (a file or\n"
    "                           s3:// object: ManifestFile or augmented manifest)\n"
    "      --max-size SIZE      roll over before a shard passes SIZE (default 512M)\n"
    "      --max-count N        at most N samples per shard\n"
    "      --start N            number of the first shard (default 0)\n"
    "      --shuffle            seeded random sample order instead of key order\n"
    "      --seed N             seed for --shuffle (default 0)\n"
    "      --mtime N            modification time in every header (default 0)\n"
    "      --compress zstd[:L]  .tar.zst shards (zstd seekable format, one frame per\n"
    "                           sample or run of small samples; level 1..22, default 3)\n"
    "  -j, --jobs N             worker threads (default: number of cores)\n"
    "      --resume             keep complete shards of an earlier run of the same job\n"
    CMD_EXISTING_USAGE
    "      --part I/N|auto      pack only part I of 0..N-1 (chosen by a hash of each\n"
    "                           sample key); auto reads SLURM_ARRAY_TASK_ID,\n"
    "                           JOB_COMPLETION_INDEX or AWS_BATCH_JOB_ARRAY_INDEX;\n"
    "                           PATTERN must then hold {part} (see docs/scale-out.md)\n"
    "      --parts N            the number of parts, for --part auto\n"
    "      --on-error fail|skip stop at an unreadable input (default) or skip it\n"
    "      --follow-symlinks    pack what symbolic links point to\n"
    "      --manifest PATH      write the manifest there (default: beside the shards)\n"
    "      --tmp-dir DIR        spool archive members there (default $TMPDIR)\n"
    "      --dry-run            print the plan (shards, samples, bytes), write nothing\n"
    "      --json               print a JSON summary on stdout (--dry-run: the plan)\n"
    "  -q, --quiet              no progress line\n"
    "Images (JPEG members resized while packing, as img2dataset does):\n"
    CMD_IMAGE_USAGE
    CMD_SAGEMAKER_USAGE
    "S3 (for s3:// sources, --root or outputs):\n"
    CMD_S3_CLIENT_USAGE
    "      --concurrency N      GETs in flight when fetching sources (default 64)\n"
    CMD_S3_PART_SIZE_USAGE
    "  -h, --help               this text\n"
    "\n"
    "Exit status: 0 done, 1 an input or output problem, 2 usage error.\n";

enum {
    OPT_FILES_FROM = 256, OPT_ROOT, OPT_FROM_ARCHIVE, OPT_MAX_SIZE, OPT_MAX_COUNT, OPT_START,
    OPT_SHUFFLE, OPT_SEED, OPT_MTIME, OPT_RESUME, OPT_ON_ERROR, OPT_FOLLOW, OPT_MANIFEST,
    OPT_TMP_DIR, OPT_JSON, OPT_COMPRESS, OPT_PART, OPT_PARTS, OPT_CONCURRENCY, OPT_FROM_MANIFEST, OPT_DRY_RUN,
};

static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"files-from", required_argument, NULL, OPT_FILES_FROM},
    {"root", required_argument, NULL, OPT_ROOT},
    {"null", no_argument, NULL, '0'},
    {"from-archive", required_argument, NULL, OPT_FROM_ARCHIVE},
    {"from-manifest", required_argument, NULL, OPT_FROM_MANIFEST},
    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
    {"max-count", required_argument, NULL, OPT_MAX_COUNT},
    {"start", required_argument, NULL, OPT_START},
    {"shuffle", no_argument, NULL, OPT_SHUFFLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"mtime", required_argument, NULL, OPT_MTIME},
    {"jobs", required_argument, NULL, 'j'},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"part", required_argument, NULL, OPT_PART},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"on-error", required_argument, NULL, OPT_ON_ERROR},
    {"follow-symlinks", no_argument, NULL, OPT_FOLLOW},
    {"manifest", required_argument, NULL, OPT_MANIFEST},
    {"tmp-dir", required_argument, NULL, OPT_TMP_DIR},
    {"json", no_argument, NULL, OPT_JSON},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"compress", required_argument, NULL, OPT_COMPRESS},
    CMD_S3_CLIENT_OPTIONS,
    CMD_SAGEMAKER_OPTIONS,
    CMD_EXISTING_OPTIONS,
    CMD_IMAGE_OPTIONS,
    CMD_S3_PART_SIZE_OPTION,
    {"concurrency", required_argument, NULL, OPT_CONCURRENCY},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void on_progress(void *ctx, const sk_pack_stats *st)
{
    /* files_total is 0 while a key-order run still lists its sources */
    cmd_progress_at at = {.unit = "files", .done = st->files_done, .total = st->files_total,
                          .samples = st->samples, .shards = st->shards, .bytes = st->bytes_done,
                          .bytes_total = st->bytes_total};
    cmd_progress_show(ctx, &at, 0);
}

struct source { int kind; const char *path; };
enum { SRC_DIR, SRC_LIST, SRC_ARCHIVE, SRC_S3, SRC_MANIFEST };

int cmd_pack(int argc, char **argv)
{
    sk_pack_options o = {0};
    o.compress_level = -1; /* not given: the names' suffix decides */
    cmd_ui ui = {.tool = "pack"};
    cmd_sagemaker sm = {0};
    const char *root = NULL, *part = NULL;
    uint64_t parts = 0;
    int nul = 0, json = 0, quiet = 0, c;
    uint64_t v, part_size = 0, concurrency = 64;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_image_options images;
    sk_image_options_init(&images);
    struct source *srcs = calloc((size_t)argc + 1, sizeof *srcs);
    size_t nsrcs = 0;
    if (!srcs) return SK_EXIT_PROBLEM;
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strncmp(argv[i], "--from-urls", 11) && (!argv[i][11] || argv[i][11] == '='))
            return free(srcs), cmd_pack_urls(argc, argv);

    while ((c = getopt_long(argc, argv, "o:0j:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': o.pattern = optarg; break;
        case OPT_FILES_FROM: srcs[nsrcs++] = (struct source){SRC_LIST, optarg}; break;
        case OPT_ROOT: root = optarg; break;
        case '0': nul = 1; break;
        case OPT_FROM_ARCHIVE: srcs[nsrcs++] = (struct source){SRC_ARCHIVE, optarg}; break;
        case OPT_FROM_MANIFEST: srcs[nsrcs++] = (struct source){SRC_MANIFEST, optarg}; break;
        case OPT_MAX_SIZE:
            if (cmd_parse_size(optarg, &o.max_size) || o.max_size < 4096)
                return free(srcs), cmd_usage_error("pack", usage, "--max-size '%s': want a size of at least 4K such as 512M", optarg);
            break;
        case OPT_MAX_COUNT:
            if (cmd_parse_u64(optarg, &o.max_count) || !o.max_count)
                return free(srcs), cmd_usage_error("pack", usage, "--max-count '%s': want a positive integer", optarg);
            break;
        case OPT_START:
            if (cmd_parse_u64(optarg, &o.start))
                return free(srcs), cmd_usage_error("pack", usage, "--start '%s': want an integer", optarg);
            break;
        case OPT_SHUFFLE: o.shuffle = 1; break;
        case OPT_SEED:
            if (cmd_parse_u64(optarg, &o.seed))
                return free(srcs), cmd_usage_error("pack", usage, "--seed '%s': want an integer", optarg);
            break;
        case OPT_MTIME:
            if (cmd_parse_u64(optarg, &o.mtime))
                return free(srcs), cmd_usage_error("pack", usage, "--mtime '%s': want seconds since 1970", optarg);
            break;
        case 'j':
            if (cmd_parse_u64(optarg, &v) || !v || v > 256)
                return free(srcs), cmd_usage_error("pack", usage, "--jobs '%s': want 1..256", optarg);
            o.jobs = (int)v;
            break;
        case OPT_RESUME: o.resume = 1; break;
        case OPT_PART: part = optarg; break;
        case OPT_PARTS:
            if (cmd_parse_u64(optarg, &parts) || !parts || parts > SK_PART_MAX)
                return free(srcs), cmd_usage_error("pack", usage, "--parts '%s': want 1..%d", optarg, SK_PART_MAX);
            break;
        case OPT_ON_ERROR:
            if (!strcmp(optarg, "skip")) o.skip_errors = 1;
            else if (strcmp(optarg, "fail"))
                return free(srcs), cmd_usage_error("pack", usage, "--on-error '%s': want fail or skip", optarg);
            break;
        case OPT_FOLLOW: o.follow_symlinks = 1; break;
        case OPT_MANIFEST: o.manifest = optarg; break;
        case OPT_TMP_DIR: o.tmp_dir = optarg; break;
        case OPT_JSON: json = 1; break;
        case OPT_DRY_RUN: o.dry_run = 1; break;
        case OPT_COMPRESS:
            if (cmd_parse_compress(optarg, &o.compress_level))
                return free(srcs), cmd_usage_error("pack", usage, "--compress '%s': want zstd, zstd:LEVEL (1..22) or none", optarg);
            break;
        case OPT_CONCURRENCY:
            if (cmd_parse_u64(optarg, &concurrency) || !concurrency || concurrency > 256)
                return free(srcs), cmd_usage_error("pack", usage, "--concurrency '%s': want 1..256", optarg);
            break;
        case 'q': quiet = 1; break;
        case 'h': free(srcs); fputs(usage, stdout); return SK_EXIT_OK;
        default:
            switch (cmd_image_option("pack", usage, c, optarg, &images) ?: cmd_sagemaker_option("pack", usage, c, optarg, &sm)
                    ?: cmd_existing_option("pack", usage, c, &o.existing)) {
            case 1: continue;
            case -1: free(srcs); return SK_EXIT_USAGE;
            }
            switch (cmd_s3_option("pack", usage, c, optarg, &s3cfg, &part_size)) {
            case 1: break;
            case -1: free(srcs); return SK_EXIT_USAGE;
            default: free(srcs); return cmd_unknown_option("pack", argv);
            }
        }
    }
    const char *named[] = {o.pattern, o.manifest, root, sm.out};
    int need_s3 = cmd_any_s3(named, 4);
    for (size_t i = 0; i < nsrcs; i++) need_s3 |= srcs[i].kind == SRC_MANIFEST || cmd_any_s3(&srcs[i].path, 1);
    for (int i = optind; i < argc; i++) {
        int s3 = cmd_place_kind(argv[i]) == SK_PLACE_S3;
        srcs[nsrcs++] = (struct source){s3 ? SRC_S3 : SRC_DIR, argv[i]}, need_s3 |= s3;
    }
    if (!need_s3 && cmd_any_remote(&root, 1, &s3cfg)) need_s3 = 1; /* an http(s):// --root */
    if (!o.pattern) return free(srcs), cmd_usage_error("pack", usage, "no output: give -o PATTERN");
    if (!nsrcs) return free(srcs), cmd_usage_error("pack", usage, "no SOURCE to pack");
    static const cmd_place by_kind[] = {{NULL, 0, CMD_R | CMD_S3}, {"--files-from", 0, CMD_R | CMD_STREAM | CMD_S3 | CMD_HTTP}, {"--from-archive", 0, CMD_R | CMD_S3 | CMD_HTTP}, {NULL, 0, CMD_R | CMD_S3}, {"--from-manifest", 0, CMD_R | CMD_STREAM | CMD_S3}};
    const cmd_place pl[] = {{"-o", o.pattern, CMD_W | CMD_STREAM | CMD_S3}, {"--manifest", o.manifest, CMD_W | CMD_S3}, {"--root", root, CMD_R | CMD_S3 | CMD_HTTP},
                            {"--tmp-dir", o.tmp_dir, CMD_W}, {"--sagemaker-manifest", sm.out, CMD_W | CMD_S3}};
    int bad = cmd_places("pack", pl, sizeof pl / sizeof *pl);
    for (size_t i = 0; i < nsrcs && !bad; i++)
        bad = cmd_places("pack", &(cmd_place){by_kind[srcs[i].kind].opt, srcs[i].path, by_kind[srcs[i].kind].flags}, 1);
    if (bad) return free(srcs), SK_EXIT_USAGE;
    if (!strcmp(o.pattern, "-") && isatty(STDOUT_FILENO))
        return free(srcs), cmd_usage_error("pack", usage, "stdout is a terminal: redirect the tar stream");
    cmd_check_zst_pattern("pack", o.pattern, &o.compress_level);
    if (parts && !part) return free(srcs), cmd_usage_error("pack", usage, "--parts needs --part");
    if (part) {
        sk_error perr = SK_ERROR_INIT;
        if (sk_part_parse(part, (int)parts, &o.part, &o.parts, &perr))
            return free(srcs), cmd_usage_error("pack", usage, "%s", perr.msg);
    }
    if (cmd_sagemaker_check(&sm, usage, o.pattern, o.part, o.parts)) return free(srcs), SK_EXIT_USAGE;

    if (sk_image_options_active(&images)) o.images = &images;
    o.warn = cmd_ui_warn;
    cmd_progress_start(&ui, "pack", quiet);
    o.progress = ui.on ? on_progress : NULL;
    o.ctx = &ui;
    sk_error err = SK_ERROR_INIT;
    sk_pack *p = NULL;
    sk_pack_stats st = {0};
    sk_s3 *s3 = NULL;
    int rc = sk_pack_new(&p, &o, &err);
    if (!rc && need_s3) {
        /* one client for sources and shard uploads: a few connections more
         * than the fetcher's GETs so parts never queue behind them */
        s3cfg.concurrency = (int)concurrency + 8;
        rc = sk_s3_new(&s3, &s3cfg, &err);
        if (!rc) rc = sk_pack_set_s3(p, s3, (int)concurrency, part_size, &err);
    }
    if (!rc) rc = sk_pack_add_output(p, sm.out, "--sagemaker-manifest", &err);
    for (size_t i = 0; !rc && i < nsrcs; i++) {
        const char *path = srcs[i].path;
        struct stat sb;
        switch (srcs[i].kind) {
        case SRC_DIR:
            if (stat(path, &sb) == 0 && !S_ISDIR(sb.st_mode))
                rc = sk_error_set(&err, SK_E_USAGE, "%s: not a directory (an archive goes after "
                                  "--from-archive, a list after --files-from)", path);
            else
                rc = sk_pack_add_dir(p, path, &err);
            break;
        case SRC_ARCHIVE: rc = sk_pack_add_archive(p, path, &err); break;
        case SRC_S3: rc = sk_pack_add_s3(p, path, &err); break;
        case SRC_MANIFEST: rc = sk_pack_add_sagemaker_manifest(p, path, &err); break;
        case SRC_LIST: rc = cmd_pack_add_list(p, path, root, nul, s3, &err); break;
        }
    }
    if (!rc) rc = sk_pack_run(p, &st, &err);
    if (!rc) rc = cmd_sagemaker_write(&sm, o.manifest, o.pattern, o.part, o.parts, s3, &err);
    if (rc || o.dry_run) cmd_ui_end(&ui);
    else cmd_progress_summary(&ui, st.shards, st.samples, "samples", st.bytes_done, st.seconds);
    sk_pack_free(p);
    sk_s3_free(s3);
    free(srcs);
    if (rc) return cmd_report("pack", &err);
    if (o.dry_run && !json)
        printf("would write: %llu shards, %llu samples, %llu bytes of tar from %llu files\n",
               (unsigned long long)st.shards, (unsigned long long)st.samples,
               (unsigned long long)st.output_bytes, (unsigned long long)st.files_total);
    else if (json) /* with -o -, stdout is the tar stream */
        fprintf(strcmp(o.pattern, "-") ? stdout : stderr, "{\"shards\": %llu, \"shards_resumed\": %llu, \"samples\": %llu, \"files\": %llu, "
               "\"bytes\": %llu, \"output_bytes\": %llu, \"seconds\": %.3f, \"skipped\": %llu, "
               "\"images\": %llu, \"image_skips\": %llu, \"bad_images\": %llu}\n",
               (unsigned long long)st.shards, (unsigned long long)st.shards_resumed,
               (unsigned long long)st.samples, (unsigned long long)(o.dry_run ? st.files_total : st.files_done),
               (unsigned long long)(o.dry_run ? st.bytes_total : st.bytes_done), (unsigned long long)st.output_bytes,
               st.seconds, (unsigned long long)st.skipped, (unsigned long long)st.images,
               (unsigned long long)st.image_skips, (unsigned long long)st.bad_images);
    return SK_EXIT_OK;
}
