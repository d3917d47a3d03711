/*
 * shard.c - `shardkit shard`: existing shards into new shards (other size
 * or count, seeded global shuffle, filters, compression).  Parses options,
 * calls sk_reshard, prints progress on a terminal and --json.
 */
#include "cmd.h"

#include <jansson.h>
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
    "      --dry-run            read the inputs and make every shard as a run would,\n"
    "                           but write nothing: print each shard's name, samples\n"
    "                           and bytes, then the totals\n"
    "      --json               print a JSON summary on stdout (--dry-run: with the\n"
    "                           plan, one object per shard)\n"
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

/* --select, --drop: the comma-separated extensions appended (a leading
 * dot dropped) */
struct exts {
    const char **l;
    size_t n;
};

static int add_exts(void *ctx, char *s)
{
    struct exts *e = ctx;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        const char **l = realloc(e->l, (e->n + 1) * sizeof *l);
        if (!l) return fputs("shardkit shard: out of memory\n", stderr), SK_EXIT_PROBLEM;
        e->l = l;
        l[e->n++] = t[0] == '.' ? t + 1 : t;
    }
    return 0;
}

/* --rename OLD=NEW (repeatable) */
struct renames {
    const char **from, **to;
    size_t n;
};

static int add_rename(void *ctx, char *v)
{
    struct renames *r = ctx;
    char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return -1;
    *eq = 0;
    const char **f = realloc(r->from, (r->n + 1) * sizeof *f);
    if (f) r->from = f;
    const char **t = realloc(r->to, (r->n + 1) * sizeof *t);
    if (t) r->to = t;
    if (!f || !t) return fputs("shardkit shard: out of memory\n", stderr), SK_EXIT_PROBLEM;
    r->from[r->n] = v[0] == '.' ? v + 1 : v;
    r->to[r->n++] = eq[1] == '.' ? eq + 2 : eq + 1;
    return 0;
}

/* --dry-run: each planned shard, as the library completes it (text: a
 * line now; --json: kept for the summary) */
struct plan {
    cmd_ui ui;
    json_t *shards; /* --json */
};

static void on_shard(void *ctx, const char *name, uint64_t samples, uint64_t bytes)
{
    struct plan *p = ctx;
    if (p->shards) {
        json_array_append_new(p->shards, json_pack("{s:s, s:I, s:I}", "name", name, "samples",
                                                   (json_int_t)samples, "bytes", (json_int_t)bytes));
        return;
    }
    cmd_ui_clear(&p->ui);
    printf("would write %s: %llu samples, %llu bytes\n", name, (unsigned long long)samples,
           (unsigned long long)bytes);
}

/* --json: the run's counts (a dry run's: what a run would write, and plan,
 * its shards) */
static void print_json(FILE *f, const sk_shard_stats *st, json_t *plan)
{
    json_t *o = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f}",
                          "inputs", (json_int_t)st->inputs, "samples_in", (json_int_t)st->samples_in,
                          "samples", (json_int_t)st->samples, "members", (json_int_t)st->members,
                          "dropped", (json_int_t)st->dropped, "skipped", (json_int_t)st->skipped,
                          "shards", (json_int_t)st->shards, "shards_resumed", (json_int_t)st->shards_resumed,
                          "bytes_in", (json_int_t)st->bytes_in, "output_bytes", (json_int_t)st->output_bytes,
                          "images", (json_int_t)st->images, "image_skips", (json_int_t)st->image_skips,
                          "bad_images", (json_int_t)st->bad_images, "seconds", st->seconds);
    if (o && plan) json_object_set(o, "plan", plan);
    if (o) json_dumpf(o, f, JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    fputc('\n', f);
    json_decref(o);
}

int cmd_shard(int argc, char **argv)
{
    sk_shard_options o = {0};
    o.compress_level = -1; /* not given: the names' suffix decides */
    struct plan plan = {.ui = {.tool = "shard"}};
    cmd_sagemaker sm = {0};
    struct exts sel = {0}, drop = {0};
    struct renames ren = {0};
    int rc = SK_EXIT_OK;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    sk_image_options images;
    sk_image_options_init(&images);
    cmd_writer w = {.tool = "shard", .usage = usage, .images = &images, .sm = &sm, .existing = &o.existing};
    const cmd_opt opts[] = {
        CMD_WRITER_ROWS(&o, &w),
        CMD_RESHAPE_ROWS(&o),
        CMD_NUM("num-shards", 0, &o.num_shards, 1, 10000000, "--num-shards '%s': want a positive integer"),
        CMD_FN("select", 0, add_exts, &sel),
        CMD_FN("drop", 0, add_exts, &drop),
        CMD_CHECK("rename", 0, &ren, add_rename, "--rename '%s': want OLD=NEW"),
        CMD_STR("keys", 0, &o.keys_file),
        CMD_SIZE("shuffle-mem", 0, &o.shuffle_mem, 1, UINT64_MAX, "--shuffle-mem '%s': want a size such as 256M"),
    };
    cmd_opts os = {.tool = "shard", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg, .part_size = &o.s3_part_size, CMD_WRITER_MORE(&w)};
    int first;

#define BAD(...) do { rc = cmd_usage_error("shard", usage, __VA_ARGS__); goto out; } while (0)
    if ((rc = cmd_getopt(&os, argc, argv, &first)) >= 0) goto out;
    rc = SK_EXIT_OK;
    if (!o.pattern) BAD("no output: give -o PATTERN");
    if (first >= argc) BAD("no INPUT shards");
    const cmd_place pl[] = {{"-o", o.pattern, CMD_W | CMD_STREAM | CMD_S3}, {"--manifest", o.manifest, CMD_W | CMD_S3},
                            {"--keys", o.keys_file, CMD_R | CMD_S3 | CMD_HTTP}, {"--tmp-dir", o.tmp_dir, CMD_W}, {"--sagemaker-manifest", sm.out, CMD_W | CMD_S3}};
    if (cmd_places("shard", pl, sizeof pl / sizeof *pl) ||
        cmd_places_args("shard", argv + first, argc - first, CMD_R | CMD_STREAM | CMD_S3 | CMD_HTTP)) { rc = SK_EXIT_USAGE; goto out; }
    if (sm.out && !strcmp(o.pattern, "-")) BAD("--sagemaker-manifest: -o - writes no shards to list");
    if (sm.out && o.dry_run) BAD("--sagemaker-manifest: --dry-run writes no manifest to list");
    if ((rc = cmd_writer_part(&w, &o.part, &o.parts)) || (rc = cmd_sagemaker_check(&sm, usage, o.pattern, o.part, o.parts))) goto out;
    if (!!o.max_count + !!o.max_size + !!o.num_shards > 1 && o.num_shards)
        BAD("--num-shards does not combine with --max-size or --max-count");
    cmd_check_zst_pattern("shard", o.pattern, &o.compress_level);
    o.select = sel.l, o.nselect = sel.n;
    o.drop = drop.l, o.ndrop = drop.n;
    o.rename_from = ren.from, o.rename_to = ren.to, o.nrename = ren.n;
    if (sk_image_options_active(&images)) o.images = &images;
    o.warn = cmd_ui_warn;
    cmd_progress_start(&plan.ui, "shard", w.quiet);
    o.progress = plan.ui.on ? on_progress : NULL;
    o.ctx = &plan; /* its first member is the ui the callbacks draw on */
    if (o.dry_run) o.on_shard = on_shard;
    if (o.dry_run && w.json && !(plan.shards = json_array())) BAD("out of memory");

    sk_error err = SK_ERROR_INIT;
    sk_shard_stats st = {0};
    const char *outs[] = {o.pattern, o.manifest, sm.out, o.keys_file};
    if ((cmd_any_s3(outs, 4) || cmd_any_s3((const char *const *)argv + first, (size_t)(argc - first))) &&
        sk_s3_new(&s3, &s3cfg, &err)) {
        rc = cmd_report("shard", &err);
        goto out;
    }
    o.s3 = s3;
    int r = sk_reshard((const char *const *)argv + first, (size_t)(argc - first), &o, &st, &err);
    if (!r) r = cmd_sagemaker_write(&sm, o.manifest, o.pattern, o.part, o.parts, s3, &err);
    if (r || o.dry_run) cmd_ui_end(&plan.ui);
    else cmd_progress_summary(&plan.ui, st.shards, st.samples, "samples", st.bytes_in, st.seconds);
    if (r) {
        rc = cmd_report("shard", &err);
        goto out;
    }
    if (o.dry_run && !w.json)
        printf("would write: %llu shards, %llu samples, %llu bytes from %llu inputs\n",
               (unsigned long long)st.shards, (unsigned long long)st.samples,
               (unsigned long long)st.output_bytes, (unsigned long long)st.inputs);
    else if (w.json)
        print_json(strcmp(o.pattern, "-") || o.dry_run ? stdout : stderr, &st, plan.shards);
out:
    json_decref(plan.shards);
    sk_s3_free(s3);
    free(sel.l);
    free(drop.l);
    free(ren.from);
    free(ren.to);
    return rc;
#undef BAD
}
