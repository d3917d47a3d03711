/*
 * mount.c - `shardkit mount`: a dataset (local or s3://) as a read-only
 * file tree through FUSE.  Parses the options, says how to open the
 * dataset (with an S3 client for s3://, as get does) and calls
 * sk_mount_run, which does the rest (lib/tools/mount_*.c).
 */
#include "cmd.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: shardkit mount [options] DATASET MOUNTPOINT\n"
    "\n"
    "Mounts DATASET (a manifest.json, a directory of indexed shards, one shard,\n"
    "a brace pattern, or s3://bucket/prefix/) read-only on MOUNTPOINT, an empty\n"
    "directory: every member is a file KEY.EXT (the tree that was packed).\n"
    "Unmount with 'fusermount3 -u MOUNTPOINT' (or SIGINT/SIGTERM with -f).\n"
    "\n"
    "  -f, --foreground    stay in the foreground (messages on stderr)\n"
    "  -o OPT[,OPT...]     mount options (allow_other, and libfuse's own)\n"
    "      --by-shard      one directory per shard holding that shard's members\n"
    "      --verify        check each member's CRC32C on its first read (EIO on\n"
    "                      a mismatch, logged with the shard and offset)\n"
    "      --threads N     FUSE worker threads kept idle at most (default 10)\n"
    "      --trust-index   skip the index body checksums (open in O(1))\n"
    "      --cache-dir DIR keep what is read of remote shards and indexes here,\n"
    "                      by 1 MiB block (reused by later mounts; found by ETag)\n"
    "      --cache-size SIZE  bound of the cache (e.g. 10G; default: none)\n"
    "      --read-window SIZE  a small read of a remote shard fetches the aligned\n"
    "                      window of SIZE holding it, kept in memory for the\n"
    "                      files beside it (default 256K; 0: none)\n"
    "      --window-memory SIZE  memory for those windows in all (default 32M)\n"
    "      --json          print {\"dataset\", \"mountpoint\"} on stdout once mounted\n"
    "                      (with -f: once unmounted cleanly)\n"
    "  -q, --quiet         no warnings (members skipped for their names, failed reads)\n"
    "  -h, --help          show this help\n"
    "S3 (for an s3:// DATASET):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Exit status: 0 mounted (and, with -f, unmounted cleanly), 1 the mount\n"
    "failed (the reason is printed), 2 usage.\n";

struct opener {
    const char *dataset;
    unsigned flags;
    sk_s3_config cfg;
    sk_s3 *s3;
};

static int open_ds(void *ctx, sk_dataset **ds, sk_error *err)
{
    struct opener *op = ctx;
    int rc = cmd_any_s3(&op->dataset, 1) ? sk_s3_new(&op->s3, &op->cfg, err) : SK_OK;
    return rc ? rc : sk_dataset_open_s3(ds, op->dataset, op->s3, op->flags, err);
}

static void no_warning(void *ctx, const char *msg)
{
    (void)ctx, (void)msg;
}

/* -q */
static int quiet(void *ctx, char *value)
{
    ((sk_mount_options *)ctx)->warn = no_warning;
    return 0;
}

/* -o: allow_other is ours to pass; the rest goes to libfuse as given */
struct fuse_opts {
    sk_mount_options *o;
    char buf[1024];
};

static int fuse_opt(void *ctx, char *value)
{
    struct fuse_opts *f = ctx;
    for (char *t = strtok(value, ","); t; t = strtok(NULL, ",")) {
        if (!strcmp(t, "allow_other")) f->o->allow_other = 1;
        else if (strlen(f->buf) + strlen(t) + 2 < sizeof f->buf)
            strcat(strcat(f->buf, f->buf[0] ? "," : ""), t);
        else return cmd_usage_error("mount", usage, "-o: too many options");
    }
    return 0;
}

static void close_ds(void *ctx, sk_dataset *ds)
{
    struct opener *op = ctx;
    sk_dataset_close(ds);
    sk_s3_free(op->s3);
    op->s3 = NULL;
}

int cmd_mount(int argc, char **argv)
{
    struct opener op = {.cfg = SK_S3_CONFIG_INIT};
    sk_mount_options o;
    sk_mount_options_init(&o);
    struct fuse_opts fo = {.o = &o};
    int json = 0;
    uint64_t window = UINT64_MAX;
    const cmd_opt opts[] = {
        CMD_SET("foreground", 'f', &o.foreground, 1),
        CMD_SET("by-shard", 0, &o.by_shard, 1),
        CMD_SET("verify", 0, &o.verify, 1),
        CMD_NUM("threads", 0, &o.threads, 1, 1024, "--threads: '%s' is not 1..1024"),
        CMD_TRUST_INDEX(&op.flags),
        CMD_SET("json", 0, &json, 1),
        CMD_STR("cache-dir", 0, &o.cache_dir),
        CMD_SIZE("cache-size", 0, &o.cache_size, 0, UINT64_MAX, "--cache-size: '%s' is not a size"),
        CMD_SIZE("read-window", 0, &window, 0, 64u << 20, "--read-window: '%s' is not 0 or a size up to 64M"),
        CMD_SIZE("window-memory", 0, &o.window_memory, 8192, UINT64_MAX, "--window-memory: '%s' is not a size"),
        CMD_DO("quiet", 'q', quiet, &o),
        CMD_FN(NULL, 'o', fuse_opt, &fo),
    };
    cmd_opts os = {.tool = "mount", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &op.cfg};
    int first, done = cmd_getopt(&os, argc, argv, &first);
    if (done >= 0) return done;
    if (argc - first != 2) return cmd_usage_error("mount", usage, "need DATASET and MOUNTPOINT");
    if (o.cache_size && !o.cache_dir)
        return cmd_usage_error("mount", usage, "--cache-size needs --cache-dir");
    if (window != UINT64_MAX) o.read_window = window ? (size_t)window : SIZE_MAX;
    op.dataset = argv[first];
    o.fuse_opts = fo.buf[0] ? fo.buf : NULL;
    o.open = open_ds;
    o.close = close_ds;
    o.ctx = &op;
    sk_error err = SK_ERROR_INIT;
    if (sk_mount_run(op.dataset, argv[first + 1], &o, &err)) return cmd_report("mount", &err);
    json_t *j = json ? json_pack("{s:s, s:s}", "dataset", op.dataset, "mountpoint", argv[first + 1]) : NULL;
    if (j) json_dumpf(j, stdout, JSON_COMPACT), putchar('\n');
    json_decref(j);
    return SK_EXIT_OK;
}
