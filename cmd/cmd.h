/*
 * cmd.h - what the tools in cmd/ share: their entry points, exit codes and
 * small argument helpers.  Tools include only the public shardkit.h besides.
 */
#ifndef SK_CMD_H
#define SK_CMD_H

#include "shardkit.h"
#include <stdint.h>
#include <stdio.h>

enum { SK_EXIT_OK = 0, SK_EXIT_PROBLEM = 1, SK_EXIT_USAGE = 2 };

int cmd_pack(int argc, char **argv);
int cmd_pack_urls(int argc, char **argv); /* pack --from-urls (pack_urls.c) */
int cmd_index(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_cat(int argc, char **argv);
int cmd_upload(int argc, char **argv);
int cmd_shard(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_mount(int argc, char **argv);

/* Flush and close stdout; a failed write (full disk, closed pipe) turns a
 * success into exit 1 with a message. */
int cmd_finish_stdout(int rc);

/* Parses "512M", "1.5GiB", "100000" into bytes; 0 on success. */
int cmd_parse_size(const char *s, uint64_t *out);
/* Parses a non-negative decimal integer; 0 on success. */
int cmd_parse_u64(const char *s, uint64_t *out);

/* Parses --compress: "none" (0), "zstd" (level 3) or "zstd:LEVEL" (1..22)
 * into *level; 0 on success. */
int cmd_parse_compress(const char *s, int *level);
/* Warns on stderr when compressing to a pattern not ending in .zst. */
/* --compress not given (*level < 0): zstd (level 3) when the names end in
 * .zst, as tar -a reads a suffix, else none; given: warns when zstd data
 * gets names without .zst (the library refuses the reverse). */
void cmd_check_zst_pattern(const char *tool, const char *pattern, int *level);

/* The S3 options of the tools that read or write s3:// URLs (pack, shard,
 * verify): rows for a getopt table, usage lines, and one parser, so that
 * every tool spells and checks them alike. */
enum { CMD_OPT_ENDPOINT = 900, CMD_OPT_REGION, CMD_OPT_PROFILE, CMD_OPT_MAX_ATTEMPTS,
       CMD_OPT_PART_SIZE, CMD_OPT_READ_TIMEOUT, CMD_OPT_LOW_SPEED };
#define CMD_S3_CLIENT_OPTIONS                                          \
    {"endpoint-url", required_argument, NULL, CMD_OPT_ENDPOINT},       \
    {"region", required_argument, NULL, CMD_OPT_REGION},               \
    {"profile", required_argument, NULL, CMD_OPT_PROFILE},             \
    {"max-attempts", required_argument, NULL, CMD_OPT_MAX_ATTEMPTS},   \
    {"read-timeout", required_argument, NULL, CMD_OPT_READ_TIMEOUT},   \
    {"low-speed-limit", required_argument, NULL, CMD_OPT_LOW_SPEED}
#define CMD_S3_PART_SIZE_OPTION {"part-size", required_argument, NULL, CMD_OPT_PART_SIZE}
#define CMD_S3_CLIENT_USAGE                                                                   \
    "      --endpoint-url URL   S3-compatible endpoint (default AWS_ENDPOINT_URL, else AWS)\n" \
    "      --region NAME        region (default AWS_REGION, profile, us-east-1)\n"            \
    "      --profile NAME       credentials/config profile (default AWS_PROFILE)\n"           \
    "      --max-attempts N     tries per request, first included (default\n"              \
    "                           AWS_MAX_ATTEMPTS, the profile's max_attempts, else 8)\n"   \
    "      --read-timeout S     seconds a transfer may stay under --low-speed-limit\n"     \
    "                           before it is retried (default 30)\n"                       \
    "      --low-speed-limit B  bytes per second a transfer must keep up (default 1024)\n"
#define CMD_S3_PART_SIZE_USAGE \
    "      --part-size SIZE     multipart part size of shard uploads (default 8MiB)\n"
/* 1: c is one of those options, taken into cfg (and *part_size, which may
 * be NULL where the tool has no --part-size); 0: another option; -1: a bad
 * value, reported with the usage (exit 2). */
int cmd_s3_option(const char *tool, const char *usage, int c, const char *arg, sk_s3_config *cfg,
                  uint64_t *part_size);
/* The image options of pack and shard (img2dataset's names; sk_image_options). */
enum { CMD_OPT_IMAGE_SIZE = 950, CMD_OPT_RESIZE_MODE, CMD_OPT_RESIZE_ONLY_IF_BIGGER,
       CMD_OPT_ENCODE_QUALITY, CMD_OPT_MIN_IMAGE_SIZE, CMD_OPT_MAX_ASPECT_RATIO, CMD_OPT_IMAGE_EXT,
       CMD_OPT_IMAGE_META, CMD_OPT_BAD_IMAGE, CMD_OPT_MAX_PIXELS, CMD_OPT_IMAGE_MEMORY };
#define CMD_IMAGE_OPTIONS                                                        \
    {"image-size", required_argument, NULL, CMD_OPT_IMAGE_SIZE},                 \
    {"resize-mode", required_argument, NULL, CMD_OPT_RESIZE_MODE},               \
    {"resize-only-if-bigger", no_argument, NULL, CMD_OPT_RESIZE_ONLY_IF_BIGGER}, \
    {"encode-quality", required_argument, NULL, CMD_OPT_ENCODE_QUALITY},         \
    {"min-image-size", required_argument, NULL, CMD_OPT_MIN_IMAGE_SIZE},         \
    {"max-aspect-ratio", required_argument, NULL, CMD_OPT_MAX_ASPECT_RATIO},     \
    {"image-ext", required_argument, NULL, CMD_OPT_IMAGE_EXT},                   \
    {"image-meta", no_argument, NULL, CMD_OPT_IMAGE_META},                       \
    {"bad-image", required_argument, NULL, CMD_OPT_BAD_IMAGE},                   \
    {"max-pixels", required_argument, NULL, CMD_OPT_MAX_PIXELS},                 \
    {"image-memory", required_argument, NULL, CMD_OPT_IMAGE_MEMORY}
#define CMD_IMAGE_USAGE                                                                        \
    "      --image-size N       resize JPEG members so that their side is N pixels\n"            \
    "      --resize-mode MODE   border (default: largest side N, black borders to NxN),\n"       \
    "                           keep_ratio (smaller side N), keep_ratio_largest,\n"             \
    "                           center_crop (smaller side N, centre NxN), or no\n"              \
    "      --resize-only-if-bigger  leave images not bigger than N as they are\n"             \
    "      --encode-quality Q   JPEG quality of resized images, 1..100 (default 95)\n"         \
    "      --min-image-size N   skip samples with an image whose smaller side is under N\n"    \
    "      --max-aspect-ratio R skip samples with an image more elongated than R\n"           \
    "      --image-ext EXT,...  which members are images (default jpg,jpeg)\n"                \
    "      --image-meta         add width, height, original_width and original_height\n"     \
    "                           to each sample's .json (created when absent)\n"             \
    "      --bad-image POLICY   an image that does not decode: skip (default) the\n"          \
    "                           sample, keep the member as it is, or fail\n"                  \
    "      --max-pixels N       images with more pixels are bad (default 89478485)\n"          \
    "      --image-memory SIZE  memory all image threads share for decoding; an image\n"    \
    "                           needing more is bad (default: 1/4 of RAM, 256MiB..2GiB)\n"
/* 1: c is an image option, taken into io; 0: another option; -1: a bad
 * value, reported with the usage (exit 2). */
int cmd_image_option(const char *tool, const char *usage, int c, const char *arg,
                     sk_image_options *io);

/* --sagemaker-manifest and its companions (pack, shard, index, index
 * merge): a SageMaker ManifestFile of the shards, after the manifest. */
enum { CMD_OPT_SM_MANIFEST = 980, CMD_OPT_SM_PREFIX, CMD_OPT_SM_INSTANCES };
#define CMD_SAGEMAKER_OPTIONS                                          \
    {"sagemaker-manifest", required_argument, NULL, CMD_OPT_SM_MANIFEST}, \
    {"sagemaker-prefix", required_argument, NULL, CMD_OPT_SM_PREFIX},     \
    {"sagemaker-instances", required_argument, NULL, CMD_OPT_SM_INSTANCES}
#define CMD_SAGEMAKER_USAGE                                                                    \
    "      --sagemaker-manifest PATH  also write a SageMaker ManifestFile (S3DataType=\n"       \
    "                           ManifestFile) listing the shards only (local or s3://)\n"      \
    "      --sagemaker-prefix URL  the s3:// prefix local shards are uploaded to\n"           \
    "      --sagemaker-instances N  warn unless the shards divide among N instances\n"        \
    "                           (ShardedByS3Key gives each whole shards)\n"
typedef struct cmd_sagemaker {
    const char *out; /* NULL: none */
    sk_sagemaker_opts o;
    const char *tool;
} cmd_sagemaker;
/* 1: c is one of those options, taken into sm; 0: another; -1: a bad
 * value, reported with the usage (exit 2). */
int cmd_sagemaker_option(const char *tool, const char *usage, int c, const char *arg,
                         cmd_sagemaker *sm);
/* Writes sm->out (when set) from the dataset manifest that pack or shard
 * wrote for pattern, manifest (NULL: its default) and --part part/parts
 * (parts 0: none); {part} in sm->out is expanded like theirs (and needed
 * with parts, as the parts' files would collide). */
int cmd_sagemaker_write(cmd_sagemaker *sm, const char *manifest, const char *pattern, int part,
                        int parts, sk_s3 *s3, sk_error *err);
/* Before a run that writes local shards (pattern): 0, or the usage error
 * (exit 2) for a ManifestFile without --sagemaker-prefix. */
int cmd_sagemaker_check(const cmd_sagemaker *sm, const char *usage, const char *pattern, int part, int parts);

/* --append and --overwrite (pack, shard): what to do with a manifest
 * already where the run writes one (SK_EXISTING_*; places.c). */
enum { CMD_OPT_APPEND = 990, CMD_OPT_OVERWRITE };
#define CMD_EXISTING_OPTIONS                              \
    {"append", no_argument, NULL, CMD_OPT_APPEND},        \
    {"overwrite", no_argument, NULL, CMD_OPT_OVERWRITE}
#define CMD_EXISTING_USAGE                                                                    \
    "      --append             add to the dataset already there: numbers after its last\n"   \
    "                           shard, its options, its manifest grown (docs/pack.md)\n"      \
    "      --overwrite          replace a manifest that lists shards this run does not\n"    \
    "                           write (refused without it, exit 2)\n"
/* 1: c is one of those options, taken into *existing; 0: another; -1:
 * both given, reported with the usage (exit 2). */
int cmd_existing_option(const char *tool, const char *usage, int c, int *existing);

/* The places a tool was given, each checked against the library's one
 * grammar (sk_place_check, SK_PLACE_* flags): 0, or exit 2 after the
 * message naming the option.  A NULL place is skipped. */
typedef struct cmd_place {
    const char *opt, *place;
    unsigned flags;
} cmd_place;
#define CMD_R SK_PLACE_READ
#define CMD_W SK_PLACE_WRITE
#define CMD_STREAM SK_PLACE_STREAM
#define CMD_S3 SK_PLACE_S3_OK
#define CMD_HTTP SK_PLACE_HTTP_OK
int cmd_places(const char *tool, const cmd_place *p, size_t n);
/* The same for n positional arguments that take the same flags. */
int cmd_places_args(const char *tool, char *const *args, int n, unsigned flags);

/* pack --files-from PLACE ("-": stdin; s3:// and http(s):// streamed,
 * s3 the client): the list added, s3:// keys when --root is an s3://
 * prefix, local paths otherwise. */
int cmd_pack_add_list(sk_pack *p, const char *path, const char *root, int nul, sk_s3 *s3, sk_error *err);
/* What s names (SK_PLACE_*) by sk_place_check's grammar; FILE when refused. */
int cmd_place_kind(const char *s);
/* 1 when any of the n strings is an s3:// URL. */
int cmd_any_s3(const char *const *s, size_t n);
/* Whether any of s needs a client: 1 with an s3:// one among them, else
 * 1 with cfg->http_only set when an http(s):// one is (a plain client,
 * taking --read-timeout and the other transfer options). */
int cmd_any_remote(const char *const *s, size_t n, sk_s3_config *cfg);

/* The one status line a tool keeps on a terminal's stderr: warnings clear
 * it before they print, and the tool ends it with cmd_ui_end. */
typedef struct cmd_ui {
    const char *tool;
    int progress_shown;
    /* cmd_progress_*: set by cmd_progress_start */
    int on;                   /* stderr is a terminal and -q was not given */
    double t0, last;          /* start and last drawing, monotonic seconds */
    uint64_t total, bytes_total; /* the largest totals shown: never shown shrinking */
    const char *unit;         /* what total counts (a new unit starts a new total) */
} cmd_ui;
/* Clears the status line before a line is printed; the next update draws
 * it again at once. */
void cmd_ui_clear(cmd_ui *ui);
/* A library warn callback (ctx is a cmd_ui): "shardkit TOOL: warning: MSG". */
void cmd_ui_warn(void *ctx, const char *msg);
/* Starts (or redraws) the status line. */
void cmd_ui_status(cmd_ui *ui, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the status line, if one was shown. */
void cmd_ui_end(cmd_ui *ui);

/* Prints one line on stderr, its control characters escaped (msg.c). */
void cmd_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The one progress line of every long-running tool (cmd/progress.c), with
 * the same units everywhere (binary: KiB, MiB, GiB; MiB/s; seconds):
 *   "pack: 1200/5000 files  3 shards  12.0 MiB  4.1 MiB/s  3s  ETA 9s"
 * A total of 0 is unknown: done and rate only, no ETA.  Shown only when
 * stderr is a terminal and -q was not given; nothing otherwise. */
typedef struct cmd_progress_at {
    const char *unit;          /* what done/total count: "files", "shards", ... */
    uint64_t done, total;      /* total 0: not known yet */
    uint64_t samples;          /* UINT64_MAX: not shown */
    uint64_t shards;           /* shards written; UINT64_MAX: not shown */
    uint64_t bytes, bytes_total; /* bytes done (and of all, 0: unknown) */
    const char *also;          /* one more count, "jpegs" (NULL: none) */
    uint64_t also_n;
} cmd_progress_at;
/* Starts the clock; on when stderr is a terminal and !quiet. */
void cmd_progress_start(cmd_ui *ui, const char *tool, int quiet);
/* Redraws the line (at most 5 times a second unless force). */
void cmd_progress_show(cmd_ui *ui, const cmd_progress_at *at, int force);
/* Clears the line and, when on, prints the one summary line:
 *   "pack: 12 shards, 5000 samples, 120.0 MiB in 3.2s (37.5 MiB/s)"
 * (shards UINT64_MAX: a tool that does not count shards; unit: what n
 * counts, "samples" or "objects"). */
void cmd_progress_summary(cmd_ui *ui, uint64_t shards, uint64_t n, const char *unit,
                          uint64_t bytes, double seconds);
/* Seconds since cmd_progress_start. */
double cmd_progress_elapsed(const cmd_ui *ui);
/* "12.0 MiB": the unit every tool prints bytes in. */
const char *cmd_bytes(uint64_t b, char *out, size_t cap);

/* Prints "shardkit <tool>: <message>" for a library error and maps its code
 * to an exit code (usage errors give 2, everything else 1). */
int cmd_report(const char *tool, const sk_error *err);

/* A tool's options as a table (opts.c): each row names an option and says
 * where its value goes and how it is checked; cmd_getopt runs the one
 * getopt_long loop over them.  Kinds: */
enum {
    CMD_O_SET,   /* no value: *(int *)to = lo */
    CMD_O_OR,    /* no value: *(unsigned *)to |= lo */
    CMD_O_CLEAR, /* no value: *(unsigned *)to &= ~lo */
    CMD_O_STR,   /* *(const char **)to = the value */
    CMD_O_NUM,   /* a decimal integer in [lo, hi], into an integer of `width` bytes */
    CMD_O_SIZE,  /* a size ("512M") in [lo, hi], likewise */
    CMD_O_FN,    /* fn(ctx, value): 0, or the tool's exit code (2 after a usage error) */
    CMD_O_FN_OPT, /* the same, the value optional (NULL when not given) */
    CMD_O_DO,    /* no value: fn(ctx, NULL), as CMD_O_FN */
    CMD_O_CHECK, /* fn(to, value): 0 taken, -1 a bad value (the row's `bad` message),
                  * else the tool's exit code */
};
struct option;
typedef struct cmd_opt {
    const char *name; /* the long name, without "--" (NULL: none) */
    int letter;       /* the short form (0: none) */
    int kind;
    void *to;
    size_t width;     /* sizeof *to (4 or 8) for CMD_O_NUM and CMD_O_SIZE */
    uint64_t lo, hi;
    const char *bad;  /* a bad number's message: a format given the value and the
                       * option as typed (NULL: "bad --NAME 'VALUE'") */
    int (*fn)(void *ctx, char *value);
    void *ctx;
} cmd_opt;
#define CMD_SET(name, letter, to, v) {name, letter, CMD_O_SET, to, sizeof *(to), (uint64_t)(v), 0, NULL, NULL, NULL}
#define CMD_OR(name, to, bits) {name, 0, CMD_O_OR, to, sizeof *(to), (uint64_t)(bits), 0, NULL, NULL, NULL}
#define CMD_CLEAR(name, to, bits) {name, 0, CMD_O_CLEAR, to, sizeof *(to), (uint64_t)(bits), 0, NULL, NULL, NULL}
#define CMD_STR(name, letter, to) {name, letter, CMD_O_STR, (void *)(to), 0, 0, 0, NULL, NULL, NULL}
#define CMD_NUM(name, letter, to, lo, hi, bad) {name, letter, CMD_O_NUM, to, sizeof *(to), lo, hi, bad, NULL, NULL}
#define CMD_SIZE(name, letter, to, lo, hi, bad) {name, letter, CMD_O_SIZE, to, sizeof *(to), lo, hi, bad, NULL, NULL}
#define CMD_FN(name, letter, fn, ctx) {name, letter, CMD_O_FN, NULL, 0, 0, 0, NULL, fn, ctx}
#define CMD_FN_OPT(name, fn, ctx) {name, 0, CMD_O_FN_OPT, NULL, 0, 0, 0, NULL, fn, ctx}
#define CMD_DO(name, letter, fn, ctx) {name, letter, CMD_O_DO, NULL, 0, 0, 0, NULL, fn, ctx}
#define CMD_CHECK(name, letter, to, fn, bad) {name, letter, CMD_O_CHECK, to, 0, 0, 0, bad, fn, NULL}
typedef struct cmd_opts {
    const char *tool, *usage;
    const cmd_opt *t; /* the rows (at most 64) */
    size_t n;
    sk_s3_config *s3; /* not NULL: the S3 client options too (CMD_S3_CLIENT_OPTIONS) */
    uint64_t *part_size; /* not NULL (with s3): --part-size too */
    /* A family of options shared with other tools (CMD_IMAGE_OPTIONS, ...):
     * its getopt rows, and the function taking them (1 taken, 0 not one of
     * them, -1 a bad value, reported). */
    const struct option *more;
    size_t nmore;
    int (*more_fn)(void *ctx, int c, char *value);
    void *more_ctx;
} cmd_opts;
/* CMD_CHECK parsers: --compress (into an int level), --on-error fail|skip
 * (into an int, 1 for skip), seconds over 0 and up to an hour (a double). */
int cmd_check_compress(void *to, char *value);
int cmd_check_on_error(void *to, char *value);
int cmd_check_seconds(void *to, char *value);

/* What the shard writers (pack, pack --from-urls, shard) take alike: the
 * rows CMD_WRITER_ROWS (into o, an sk_pack_options or sk_shard_options,
 * and w) and CMD_RESHAPE_ROWS (pack and shard), and the option families
 * (images, --append/--overwrite and, with sm, SageMaker) as cmd_opts.more
 * through CMD_WRITER_MORE(w). */
typedef struct cmd_writer {
    const char *tool, *usage;
    const char *part;      /* --part I/N|auto, parsed by cmd_writer_part */
    uint64_t parts;
    int json, quiet;
    sk_image_options *images;
    cmd_sagemaker *sm;     /* NULL: no SageMaker options */
    int *existing;
} cmd_writer;
#define CMD_QUOTE_(x) #x
#define CMD_QUOTE(x) CMD_QUOTE_(x)
#define CMD_WRITER_ROWS(o, w)                                                                   \
    CMD_STR("output", 'o', &(o)->pattern),                                                      \
    CMD_NUM("start", 0, &(o)->start, 0, UINT64_MAX, "--start '%s': want an integer"),           \
    CMD_NUM("mtime", 0, &(o)->mtime, 0, UINT64_MAX, "--mtime '%s': want seconds since 1970"),   \
    CMD_CHECK("compress", 0, &(o)->compress_level, cmd_check_compress,                          \
              "--compress '%s': want zstd, zstd:LEVEL (1..22) or none"),                        \
    CMD_NUM("jobs", 'j', &(o)->jobs, 1, 256, "--jobs '%s': want 1..256"),                      \
    CMD_STR("manifest", 0, &(o)->manifest),                                                     \
    CMD_STR("part", 0, &(w)->part),                                                             \
    CMD_NUM("parts", 0, &(w)->parts, 1, SK_PART_MAX, "--parts '%s': want 1.." CMD_QUOTE(SK_PART_MAX)), \
    CMD_SET("json", 0, &(w)->json, 1),                                                          \
    CMD_SET("quiet", 'q', &(w)->quiet, 1)
#define CMD_RESHAPE_ROWS(o)                                                                     \
    CMD_SIZE("max-size", 0, &(o)->max_size, 4096, UINT64_MAX,                                   \
             "--max-size '%s': want a size of at least 4K such as 512M"),                       \
    CMD_NUM("max-count", 0, &(o)->max_count, 1, UINT64_MAX, "--max-count '%s': want a positive integer"), \
    CMD_SET("shuffle", 0, &(o)->shuffle, 1),                                                    \
    CMD_NUM("seed", 0, &(o)->seed, 0, UINT64_MAX, "--seed '%s': want an integer"),              \
    CMD_STR("tmp-dir", 0, &(o)->tmp_dir),                                                       \
    CMD_SET("resume", 0, &(o)->resume, 1),                                                      \
    CMD_SET("dry-run", 0, &(o)->dry_run, 1)
const struct option *cmd_writer_rows(void);
size_t cmd_writer_nrows(const cmd_writer *w);
int cmd_writer_option(void *w, int c, char *value);
#define CMD_WRITER_MORE(w) \
    .more = cmd_writer_rows(), .nmore = cmd_writer_nrows(w), .more_fn = cmd_writer_option, .more_ctx = (w)
/* --part and --parts into *part and *parts: 0, or exit 2 after the message. */
int cmd_writer_part(const cmd_writer *w, int *part, int *parts);

/* Takes the options of argv, -h/--help included (the usage on stdout).
 * -1: done, the operands are argv[*first..argc); else the tool's exit
 * code (0 after --help, 2 after a usage error, reported). */
int cmd_getopt(const cmd_opts *os, int argc, char **argv, int *first);

/* The start of a tool that reads one DATASET (get, serve, stats): its
 * rows and the S3 client options taken, then exactly nargs operands (else
 * `what` as the usage error), the first a place to read (local, s3://,
 * http(s)://).  -1: go on, the operands at argv[*first]; else the exit code. */
int cmd_dataset_getopt(const char *tool, const char *usage, const cmd_opt *t, size_t n,
                       sk_s3_config *s3, int argc, char **argv, int nargs, const char *what,
                       int *first);
/* --trust-index: skip the index body checksum (open in O(1)) */
#define CMD_TRUST_INDEX(flags) CMD_OR("trust-index", flags, SK_INDEX_TRUST_BODY)

/* The one message for an option getopt does not know, or one missing its
 * value (optind, optopt as getopt left them); returns 2. */
int cmd_unknown_option(const char *tool, char **argv);

/* Prints the usage text to stderr after a message and returns 2. */
int cmd_usage_error(const char *tool, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
