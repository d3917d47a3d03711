/*
 * mount.c - `shardkit mount`: a dataset (local or s3://) as a read-only
 * file tree through FUSE.  Parses the options, says how to open the
 * dataset (with an S3 client for s3://, as get does) and calls
 * sk_mount_run, which does the rest (lib/tools/mount_*.c).
 */
#include "cmd.h"

#include <getopt.h>
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
    "      --json          print {\"dataset\", \"mountpoint\"} on stdout once mounted\n"
    "                      (with -f: once unmounted cleanly)\n"
    "  -q, --quiet         no warnings (members skipped for their names, failed reads)\n"
    "  -h, --help          show this help\n"
    "S3 (for an s3:// DATASET):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Exit status: 0 mounted (and, with -f, unmounted cleanly), 1 the mount\n"
    "failed (the reason is printed), 2 usage.\n";

enum { OPT_BY_SHARD = 256, OPT_VERIFY, OPT_THREADS, OPT_TRUST, OPT_JSON, OPT_CACHE, OPT_CACHE_SIZE };

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

static void close_ds(void *ctx, sk_dataset *ds)
{
    struct opener *op = ctx;
    sk_dataset_close(ds);
    sk_s3_free(op->s3);
    op->s3 = NULL;
}

int cmd_mount(int argc, char **argv)
{
    static const struct option opts[] = {
        {"foreground", no_argument, NULL, 'f'},
        {"help", no_argument, NULL, 'h'},
        {"by-shard", no_argument, NULL, OPT_BY_SHARD},
        {"verify", no_argument, NULL, OPT_VERIFY},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"trust-index", no_argument, NULL, OPT_TRUST},
        {"json", no_argument, NULL, OPT_JSON},
        {"cache-dir", required_argument, NULL, OPT_CACHE},
        {"cache-size", required_argument, NULL, OPT_CACHE_SIZE},
        {"quiet", no_argument, NULL, 'q'},
        CMD_S3_CLIENT_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    struct opener op = {.cfg = SK_S3_CONFIG_INIT};
    sk_mount_options o;
    sk_mount_options_init(&o);
    char fuse_opts[1024] = "";
    uint64_t v;
    int c, json = 0;
    while ((c = getopt_long(argc, argv, "fhqo:", opts, NULL)) != -1) {
        switch (c) {
        case 'f': o.foreground = 1; break;
        case 'h': fputs(usage, stdout); return SK_EXIT_OK;
        case 'o':
            /* allow_other is ours to pass; the rest goes to libfuse as given */
            for (char *t = strtok(optarg, ","); t; t = strtok(NULL, ",")) {
                if (!strcmp(t, "allow_other")) o.allow_other = 1;
                else if (strlen(fuse_opts) + strlen(t) + 2 < sizeof fuse_opts)
                    strcat(strcat(fuse_opts, fuse_opts[0] ? "," : ""), t);
                else return cmd_usage_error("mount", usage, "-o: too many options");
            }
            break;
        case OPT_BY_SHARD: o.by_shard = 1; break;
        case OPT_VERIFY: o.verify = 1; break;
        case OPT_THREADS:
            if (cmd_parse_u64(optarg, &v) || v < 1 || v > 1024)
                return cmd_usage_error("mount", usage, "--threads: '%s' is not 1..1024", optarg);
            o.threads = (int)v;
            break;
        case OPT_TRUST: op.flags |= SK_INDEX_TRUST_BODY; break;
        case OPT_JSON: json = 1; break;
        case OPT_CACHE: o.cache_dir = optarg; break;
        case OPT_CACHE_SIZE:
            if (cmd_parse_size(optarg, &o.cache_size))
                return cmd_usage_error("mount", usage, "--cache-size: '%s' is not a size", optarg);
            break;
        case 'q': o.warn = no_warning; break;
        default:
            switch (cmd_s3_option("mount", usage, c, optarg, &op.cfg, NULL)) {
            case 1: break;
            case -1: return SK_EXIT_USAGE;
            default: return cmd_unknown_option("mount", argv);
            }
        }
    }
    if (argc - optind != 2) return cmd_usage_error("mount", usage, "need DATASET and MOUNTPOINT");
    if (o.cache_size && !o.cache_dir)
        return cmd_usage_error("mount", usage, "--cache-size needs --cache-dir");
    op.dataset = argv[optind];
    o.fuse_opts = fuse_opts[0] ? fuse_opts : NULL;
    o.open = open_ds;
    o.close = close_ds;
    o.ctx = &op;
    sk_error err = SK_ERROR_INIT;
    if (sk_mount_run(op.dataset, argv[optind + 1], &o, &err)) return cmd_report("mount", &err);
    json_t *j = json ? json_pack("{s:s, s:s}", "dataset", op.dataset, "mountpoint", argv[optind + 1]) : NULL;
    if (j) json_dumpf(j, stdout, JSON_COMPACT), putchar('\n');
    json_decref(j);
    return SK_EXIT_OK;
}
