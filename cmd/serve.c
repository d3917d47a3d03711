/*
 * serve.c - `shardkit serve`: a read-only web viewer of a dataset
 * (sk_serve) on 127.0.0.1 unless told otherwise, until Ctrl-C.
 */
#include "cmd.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: shardkit serve [options] DATASET\n"
    "\n"
    "A read-only web viewer of DATASET (a manifest.json, a directory, a shard\n"
    "or a brace pattern, local or s3://): its statistics and shards, a shard's\n"
    "samples, each sample's members, a grid of thumbnails, search by key\n"
    "prefix, jump to an ordinal.  Runs until interrupted.\n"
    "\n"
    "      --bind ADDR        address to listen on (default 127.0.0.1; 0.0.0.0\n"
    "                         exposes the dataset to the network)\n"
    "  -p, --port N           port (default 8080; 0: any free port)\n"
    "      --max-connections N  connections at once (default 64)\n"
    "      --threads N        request threads (default 4)\n"
    "      --thumb-cache SIZE thumbnail cache (default 64MiB)\n"
    "      --thumb-size N     a thumbnail's larger side (default 160)\n"
    "      --trust-index      skip the index body checksum (open in O(1))\n"
    "      --json             say the URL as {\"url\": \"http://...\"} on stdout\n"
    "  -q, --quiet            print nothing once listening, only errors\n"
    "  -h, --help             show this help\n"
    "S3 (for an s3:// DATASET):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Prints the URL on stdout once listening.  Exit status: 0 stopped by a\n"
    "signal, 1 the dataset or the port could not be opened, 2 usage.\n";

static void ready(void *ctx, const char *url)
{
    int mode = *(int *)ctx; /* 0 text, 1 --json, 2 -q */
    if (mode == 1) printf("{\"url\": \"%s\"}\n", url); /* ours: no byte to escape */
    else if (mode == 0) printf("serving %s\n", url);
    fflush(stdout);
}

int cmd_serve(int argc, char **argv)
{
    sk_serve_options so;
    sk_serve_options_init(&so);
    so.port = 8080;
    so.ready = ready;
    int mode = 0;
    so.ctx = &mode;
    unsigned flags = 0;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    const cmd_opt opts[] = {
        CMD_STR("bind", 0, &so.bind),
        CMD_NUM("port", 'p', &so.port, 0, 65535, NULL),
        CMD_NUM("max-connections", 0, &so.max_connections, 1, 100000, NULL),
        CMD_NUM("threads", 0, &so.threads, 1, 256, NULL),
        CMD_SIZE("thumb-cache", 0, &so.thumb_cache, 1, SIZE_MAX, NULL),
        CMD_NUM("thumb-size", 0, &so.thumb_size, 1, 1024, NULL),
        CMD_TRUST_INDEX(&flags),
        CMD_SET("json", 0, &mode, 1),
        CMD_SET("quiet", 'q', &mode, 2),
    };
    int first, done = cmd_dataset_getopt("serve", usage, opts, sizeof opts / sizeof *opts, &s3cfg,
                                         argc, argv, 1, "need one DATASET", &first);
    if (done >= 0) return done;
    const char *dataset = argv[first];
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    int rc;
    if (!(cmd_any_s3(&dataset, 1) && (rc = sk_s3_new(&s3, &s3cfg, &err))) &&
        !(rc = sk_dataset_open_s3(&ds, dataset, s3, flags, &err)))
        rc = sk_serve(ds, dataset, &so, &err);
    sk_dataset_close(ds);
    sk_s3_free(s3);
    return rc ? cmd_report("serve", &err) : SK_EXIT_OK;
}
