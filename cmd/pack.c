/*
 * pack.c - `shardkit pack`: many small files into indexed tar shards.
 * Parses options, hands the sources to the library, prints progress on a
 * terminal and a summary with --json.
 */
#include "cmd.h"

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
/* --files-from, --from-archive, --from-manifest: each appended to the
 * sources in the order given (kind: which) */
struct sources {
    struct source *s;
    size_t n;
};
struct adder {
    struct sources *to;
    int kind;
};

static int add_source(void *ctx, char *path)
{
    struct adder *a = ctx;
    a->to->s[a->to->n++] = (struct source){a->kind, path};
    return 0;
}

int cmd_pack(int argc, char **argv)
{
    sk_pack_options o = {0};
    o.compress_level = -1; /* not given: the names' suffix decides */
    cmd_ui ui = {.tool = "pack"};
    cmd_sagemaker sm = {0};
    const char *root = NULL;
    int nul = 0, first;
    uint64_t part_size = 0, concurrency = 64;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_image_options images;
    sk_image_options_init(&images);
    for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
        if (!strncmp(argv[i], "--from-urls", 11) && (!argv[i][11] || argv[i][11] == '='))
            return cmd_pack_urls(argc, argv);
    struct sources src = {calloc((size_t)argc + 1, sizeof *src.s), 0};
    if (!src.s) return SK_EXIT_PROBLEM;
    struct adder lists = {&src, SRC_LIST}, archives = {&src, SRC_ARCHIVE}, manifests = {&src, SRC_MANIFEST};
    cmd_writer w = {.tool = "pack", .usage = usage, .images = &images, .sm = &sm, .existing = &o.existing};
    const cmd_opt opts[] = {
        CMD_WRITER_ROWS(&o, &w),
        CMD_RESHAPE_ROWS(&o),
        CMD_FN("files-from", 0, add_source, &lists),
        CMD_STR("root", 0, &root),
        CMD_SET("null", '0', &nul, 1),
        CMD_FN("from-archive", 0, add_source, &archives),
        CMD_FN("from-manifest", 0, add_source, &manifests),
        CMD_CHECK("on-error", 0, &o.skip_errors, cmd_check_on_error, "--on-error '%s': want fail or skip"),
        CMD_SET("follow-symlinks", 0, &o.follow_symlinks, 1),
        CMD_NUM("concurrency", 0, &concurrency, 1, 256, "--concurrency '%s': want 1..256"),
    };
    cmd_opts os = {.tool = "pack", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg, .part_size = &part_size, CMD_WRITER_MORE(&w)};
    int done = cmd_getopt(&os, argc, argv, &first);
    struct source *srcs = src.s;
    size_t nsrcs = src.n;
    if (done >= 0) return free(srcs), done;
    const char *named[] = {o.pattern, o.manifest, root, sm.out};
    int need_s3 = cmd_any_s3(named, 4);
    for (size_t i = 0; i < nsrcs; i++) need_s3 |= srcs[i].kind == SRC_MANIFEST || cmd_any_s3(&srcs[i].path, 1);
    for (int i = first; i < argc; i++) {
        int s3 = !strncmp(argv[i], "s3://", 5);
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
    if (cmd_writer_part(&w, &o.part, &o.parts)) return free(srcs), SK_EXIT_USAGE;
    if (cmd_sagemaker_check(&sm, usage, o.pattern, o.part, o.parts)) return free(srcs), SK_EXIT_USAGE;

    if (sk_image_options_active(&images)) o.images = &images;
    o.warn = cmd_ui_warn;
    cmd_progress_start(&ui, "pack", w.quiet);
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
    if (o.dry_run && !w.json)
        printf("would write: %llu shards, %llu samples, %llu bytes of tar from %llu files\n",
               (unsigned long long)st.shards, (unsigned long long)st.samples,
               (unsigned long long)st.output_bytes, (unsigned long long)st.files_total);
    else if (w.json) /* with -o -, stdout is the tar stream */
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
