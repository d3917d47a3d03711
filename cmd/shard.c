/*
 * shard.c - `shardkit shard`: existing shards into new shards (other size
 * or count, seeded global shuffle, filters, compression).  Parses options,
 * calls sk_reshard, prints progress on a terminal and --json.
 */
#include "cmd.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit shard [options] INPUT... -o PATTERN\n"
    "\n"
    "Rewrites existing shards into new ones named by PATTERN (e.g.\n"
    "out/train-%06d.tar), each with its index (.idx), plus manifest.json.\n"
    "An INPUT is a shard (tar, .tar.gz/.bz2/.xz/.zst, zip, 7z), a brace\n"
    "pattern ('train-{000..099}.tar'), a manifest.json, or '-' for one archive\n"
    "on stdin; inputs, PATTERN and --manifest may be s3:// URLs (shards stream\n"
    "from GETs and into multipart uploads, no local copy), and inputs may be\n"
    "http(s):// URLs (a web server's shards).  Samples keep their input order\n"
    "unless --shuffle.\n"
    "\n"
    "  -o, --output PATTERN     shard names: a printf pattern with one integer\n"
    "                           field; '-' writes one tar stream to stdout\n"
    "      --max-size SIZE      roll over before a shard passes SIZE (default 512M)\n"
    "      --max-count N        at most N samples per shard\n"
    "      --num-shards N       exactly N shards, sample counts within one of even\n"
    "      --start N            number of the first shard (default 0)\n"
    "      --select EXT,...     keep only members with these extensions\n"
    "      --drop EXT,...       drop members with these extensions\n"
    "      --rename OLD=NEW     rename an extension (repeatable)\n"
    "      --keys FILE          keep only the samples whose keys FILE lists (local,\n"
    "                           s3:// or http(s)://)\n"
    "      --shuffle            uniform random order of all samples across all\n"
    "                           output shards, in bounded memory\n"
    "      --seed N             seed for --shuffle (default 0)\n"
    "      --tmp-dir DIR        shuffle buckets go there (default $TMPDIR or /tmp)\n"
    "      --shuffle-mem SIZE   memory the shuffle may hold (default 256M)\n"
    "      --compress zstd[:L]  .tar.zst shards (zstd seekable format, one frame\n"
    "                           per sample or run of small samples; level 1..22,\n"
    "                           default 3); 'none' for plain tar\n"
    "      --mtime N            modification time in every header (default 0)\n"
    "      --manifest PATH      write the manifest there (default: beside the shards)\n"
    "      --resume             keep complete shards of an earlier run of the same job\n"
    CMD_EXISTING_USAGE
    "      --part I/N|auto      write only part I of 0..N-1 (by a hash of each sample\n"
    "                           key; auto reads Slurm, Kubernetes or AWS Batch array\n"
    "                           variables); PATTERN must then hold {part}\n"
    "      --parts N            the number of parts, for --part auto\n"
    "      --json               print a JSON summary on stdout\n"
    "  -j, --jobs N             threads for image work (default: one per core)\n"
    "Images (JPEG members resized while resharding, as img2dataset does):\n"
    CMD_IMAGE_USAGE
    "  -q, --quiet              no progress line\n"
    "  -h, --help               this text\n"
    CMD_SAGEMAKER_USAGE
    "S3 (for s3:// inputs or outputs):\n"
    CMD_S3_CLIENT_USAGE
    CMD_S3_PART_SIZE_USAGE
    "\n"
    "Exit status: 0 done, 1 an input or output problem, 2 usage error.\n";

enum {
    OPT_MAX_SIZE = 256, OPT_MAX_COUNT, OPT_NUM_SHARDS, OPT_START, OPT_SELECT, OPT_DROP,
    OPT_RENAME, OPT_KEYS, OPT_SHUFFLE, OPT_SEED, OPT_TMP_DIR, OPT_SHUFFLE_MEM, OPT_COMPRESS,
    OPT_MTIME, OPT_MANIFEST, OPT_RESUME, OPT_PART, OPT_PARTS, OPT_JSON,
};

static const struct option options[] = {
    {"output", required_argument, NULL, 'o'},
    {"max-size", required_argument, NULL, OPT_MAX_SIZE},
    {"max-count", required_argument, NULL, OPT_MAX_COUNT},
    {"num-shards", required_argument, NULL, OPT_NUM_SHARDS},
    {"start", required_argument, NULL, OPT_START},
    {"select", required_argument, NULL, OPT_SELECT},
    {"drop", required_argument, NULL, OPT_DROP},
    {"rename", required_argument, NULL, OPT_RENAME},
    {"keys", required_argument, NULL, OPT_KEYS},
    {"shuffle", no_argument, NULL, OPT_SHUFFLE},
    {"seed", required_argument, NULL, OPT_SEED},
    {"tmp-dir", required_argument, NULL, OPT_TMP_DIR},
    {"shuffle-mem", required_argument, NULL, OPT_SHUFFLE_MEM},
    {"compress", required_argument, NULL, OPT_COMPRESS},
    {"mtime", required_argument, NULL, OPT_MTIME},
    {"manifest", required_argument, NULL, OPT_MANIFEST},
    {"resume", no_argument, NULL, OPT_RESUME},
    {"part", required_argument, NULL, OPT_PART},
    {"parts", required_argument, NULL, OPT_PARTS},
    {"json", no_argument, NULL, OPT_JSON},
    {"jobs", required_argument, NULL, 'j'},
    CMD_S3_CLIENT_OPTIONS,
    CMD_SAGEMAKER_OPTIONS,
    CMD_EXISTING_OPTIONS,
    CMD_S3_PART_SIZE_OPTION,
    CMD_IMAGE_OPTIONS,
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void on_progress(void *ctx, const sk_shard_stats *st)
{
    /* reading: inputs and input bytes; a shuffle's second half writes
     * what it read, counted in samples */
    cmd_progress_at at = {.unit = "inputs", .done = st->inputs_done, .total = st->inputs,
                          .samples = st->samples_in, .shards = st->shards, .bytes = st->bytes_in,
                          .bytes_total = st->bytes_in_total};
    if (st->inputs && st->inputs_done == st->inputs && st->samples < st->samples_in)
        at.unit = "samples written", at.done = st->samples, at.total = st->samples_in,
        at.samples = UINT64_MAX, at.bytes = st->output_bytes, at.bytes_total = 0;
    cmd_progress_show(ctx, &at, 0);
}

/* Appends the comma-separated items of s to *list. */
static int split_list(char *s, const char ***list, size_t *n)
{
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char **l = realloc(*list, (*n + 1) * sizeof *l);
        if (!l) return -1;
        *list = l;
        l[(*n)++] = t[0] == '.' ? t + 1 : t;
    }
    return 0;
}

int cmd_shard(int argc, char **argv)
{
    sk_shard_options o = {0};
    o.compress_level = -1; /* not given: the names' suffix decides */
    const char *part = NULL;
    uint64_t parts = 0;
    cmd_ui ui = {.tool = "shard"};
    cmd_sagemaker sm = {0};
    const char **sel = NULL, **drop = NULL, **from = NULL, **to = NULL;
    size_t nren = 0;
    int json = 0, quiet = 0, c, rc = SK_EXIT_OK;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    sk_image_options images;
    sk_image_options_init(&images);

#define BAD(...) do { rc = cmd_usage_error("shard", usage, __VA_ARGS__); goto out; } while (0)
    while ((c = getopt_long(argc, argv, "o:j:qh", options, NULL)) != -1) {
        switch (c) {
        case 'o': o.pattern = optarg; break;
        case OPT_MAX_SIZE:
            if (cmd_parse_size(optarg, &o.max_size) || o.max_size < 4096)
                BAD("--max-size '%s': want a size of at least 4K such as 512M", optarg);
            break;
        case OPT_MAX_COUNT:
            if (cmd_parse_u64(optarg, &o.max_count) || !o.max_count)
                BAD("--max-count '%s': want a positive integer", optarg);
            break;
        case OPT_NUM_SHARDS:
            if (cmd_parse_u64(optarg, &o.num_shards) || !o.num_shards || o.num_shards > 10000000)
                BAD("--num-shards '%s': want a positive integer", optarg);
            break;
        case OPT_START:
            if (cmd_parse_u64(optarg, &o.start)) BAD("--start '%s': want an integer", optarg);
            break;
        case OPT_SELECT:
            if (split_list(optarg, &sel, &o.nselect)) BAD("out of memory");
            break;
        case OPT_DROP:
            if (split_list(optarg, &drop, &o.ndrop)) BAD("out of memory");
            break;
        case OPT_RENAME: {
            char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg || !eq[1]) BAD("--rename '%s': want OLD=NEW", optarg);
            *eq = 0;
            const char **f = realloc(from, (nren + 1) * sizeof *f);
            if (f) from = f;
            const char **t = realloc(to, (nren + 1) * sizeof *t);
            if (t) to = t;
            if (!f || !t) BAD("out of memory");
            from[nren] = optarg[0] == '.' ? optarg + 1 : optarg;
            to[nren++] = eq[1] == '.' ? eq + 2 : eq + 1;
            break;
        }
        case OPT_KEYS: o.keys_file = optarg; break;
        case OPT_SHUFFLE: o.shuffle = 1; break;
        case OPT_SEED:
            if (cmd_parse_u64(optarg, &o.seed)) BAD("--seed '%s': want an integer", optarg);
            break;
        case OPT_TMP_DIR: o.tmp_dir = optarg; break;
        case OPT_SHUFFLE_MEM:
            if (cmd_parse_size(optarg, &o.shuffle_mem) || !o.shuffle_mem)
                BAD("--shuffle-mem '%s': want a size such as 256M", optarg);
            break;
        case OPT_COMPRESS:
            if (cmd_parse_compress(optarg, &o.compress_level))
                BAD("--compress '%s': want zstd, zstd:LEVEL (1..22) or none", optarg);
            break;
        case OPT_MTIME:
            if (cmd_parse_u64(optarg, &o.mtime)) BAD("--mtime '%s': want seconds since 1970", optarg);
            break;
        case OPT_MANIFEST: o.manifest = optarg; break;
        case OPT_RESUME: o.resume = 1; break;
        case OPT_PART: part = optarg; break;
        case OPT_PARTS:
            if (cmd_parse_u64(optarg, &parts) || !parts || parts > SK_PART_MAX)
                BAD("--parts '%s': want 1..%d", optarg, SK_PART_MAX);
            break;
        case OPT_JSON: json = 1; break;
        case 'j': {
            uint64_t j;
            if (cmd_parse_u64(optarg, &j) || !j || j > 256) BAD("--jobs '%s': want 1..256", optarg);
            o.jobs = (int)j;
            break;
        }
        case 'q': quiet = 1; break;
        case 'h': fputs(usage, stdout); goto out;
        default:
            switch (cmd_image_option("shard", usage, c, optarg, &images) ?: cmd_sagemaker_option("shard", usage, c, optarg, &sm)
                    ?: cmd_existing_option("shard", usage, c, &o.existing)) {
            case 1: continue;
            case -1: rc = SK_EXIT_USAGE; goto out;
            }
            switch (cmd_s3_option("shard", usage, c, optarg, &s3cfg, &o.s3_part_size)) {
            case 1: break;
            case -1: rc = SK_EXIT_USAGE; goto out;
            default: rc = cmd_unknown_option("shard", argv); goto out;
            }
        }
    }
    if (!o.pattern) BAD("no output: give -o PATTERN");
    if (optind >= argc) BAD("no INPUT shards");
    const cmd_place pl[] = {{"-o", o.pattern, CMD_W | CMD_STREAM | CMD_S3}, {"--manifest", o.manifest, CMD_W | CMD_S3},
                            {"--keys", o.keys_file, CMD_R | CMD_S3 | CMD_HTTP}, {"--tmp-dir", o.tmp_dir, CMD_W}, {"--sagemaker-manifest", sm.out, CMD_W | CMD_S3}};
    if (cmd_places("shard", pl, sizeof pl / sizeof *pl) ||
        cmd_places_args("shard", argv + optind, argc - optind, CMD_R | CMD_STREAM | CMD_S3 | CMD_HTTP)) { rc = SK_EXIT_USAGE; goto out; }
    if (sm.out && !strcmp(o.pattern, "-")) BAD("--sagemaker-manifest: -o - writes no shards to list");
    if (parts && !part) BAD("--parts needs --part");
    if (part) {
        sk_error perr = SK_ERROR_INIT;
        if (sk_part_parse(part, (int)parts, &o.part, &o.parts, &perr)) BAD("%s", perr.msg);
    }
    if (cmd_sagemaker_check(&sm, usage, o.pattern, o.part, o.parts)) { rc = SK_EXIT_USAGE; goto out; }
    if (!!o.max_count + !!o.max_size + !!o.num_shards > 1 && o.num_shards)
        BAD("--num-shards does not combine with --max-size or --max-count");
    cmd_check_zst_pattern("shard", o.pattern, &o.compress_level);
    o.select = sel;
    o.drop = drop;
    o.rename_from = from;
    o.rename_to = to;
    o.nrename = nren;
    if (sk_image_options_active(&images)) o.images = &images;
    o.warn = cmd_ui_warn;
    cmd_progress_start(&ui, "shard", quiet);
    o.progress = ui.on ? on_progress : NULL;
    o.ctx = &ui;

    sk_error err = SK_ERROR_INIT;
    sk_shard_stats st = {0};
    const char *outs[] = {o.pattern, o.manifest, sm.out, o.keys_file};
    if ((cmd_any_s3(outs, 4) || cmd_any_s3((const char *const *)argv + optind, (size_t)(argc - optind))) &&
        sk_s3_new(&s3, &s3cfg, &err)) {
        rc = cmd_report("shard", &err);
        goto out;
    }
    o.s3 = s3;
    int r = sk_reshard((const char *const *)argv + optind, (size_t)(argc - optind), &o, &st, &err);
    if (!r) r = cmd_sagemaker_write(&sm, o.manifest, o.pattern, o.part, o.parts, s3, &err);
    if (r) cmd_ui_end(&ui);
    else cmd_progress_summary(&ui, st.shards, st.samples, "samples", st.bytes_in, st.seconds);
    if (r) {
        rc = cmd_report("shard", &err);
        goto out;
    }
    if (json)
        fprintf(strcmp(o.pattern, "-") ? stdout : stderr,
                "{\"inputs\": %llu, \"samples_in\": %llu, \"samples\": %llu, \"members\": %llu, "
                "\"dropped\": %llu, \"skipped\": %llu, \"shards\": %llu, \"shards_resumed\": %llu, "
                "\"bytes_in\": %llu, \"output_bytes\": %llu, \"images\": %llu, "
                "\"image_skips\": %llu, \"bad_images\": %llu, \"seconds\": %.3f}\n",
                (unsigned long long)st.inputs, (unsigned long long)st.samples_in,
                (unsigned long long)st.samples, (unsigned long long)st.members,
                (unsigned long long)st.dropped, (unsigned long long)st.skipped,
                (unsigned long long)st.shards, (unsigned long long)st.shards_resumed,
                (unsigned long long)st.bytes_in, (unsigned long long)st.output_bytes,
                (unsigned long long)st.images, (unsigned long long)st.image_skips,
                (unsigned long long)st.bad_images, st.seconds);
out:
    sk_s3_free(s3);
    free(sel);
    free(drop);
    free(from);
    free(to);
    return rc;
#undef BAD
}
