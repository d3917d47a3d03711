/*
 * serve.c - `shardkit serve`: a read-only web viewer of a dataset
 * (sk_serve) on 127.0.0.1 unless told otherwise, until Ctrl-C.
 */
#include "cmd.h"

#include <getopt.h>
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
    "  -h, --help             show this help\n"
    "S3 (for an s3:// DATASET):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Prints the URL on stdout once listening.  Exit status: 0 stopped by a\n"
    "signal, 1 the dataset or the port could not be opened, 2 usage.\n";

enum { OPT_BIND = 256, OPT_MAXC, OPT_THREADS, OPT_TCACHE, OPT_TSIZE, OPT_TRUST };

static void ready(void *ctx, const char *url)
{
    (void)ctx;
    printf("serving %s\n", url);
    fflush(stdout);
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"bind", required_argument, NULL, OPT_BIND},
        {"port", required_argument, NULL, 'p'},
        {"max-connections", required_argument, NULL, OPT_MAXC},
        {"threads", required_argument, NULL, OPT_THREADS},
        {"thumb-cache", required_argument, NULL, OPT_TCACHE},
        {"thumb-size", required_argument, NULL, OPT_TSIZE},
        {"trust-index", no_argument, NULL, OPT_TRUST},
        {"help", no_argument, NULL, 'h'},
        CMD_S3_CLIENT_OPTIONS,
        {NULL, 0, NULL, 0},
    };
    sk_serve_options so;
    sk_serve_options_init(&so);
    so.port = 8080;
    so.ready = ready;
    unsigned flags = 0;
    uint64_t v;
    int c;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    while ((c = getopt_long(argc, argv, "hp:", opts, NULL)) != -1) {
        switch (c) {
        case OPT_BIND: so.bind = optarg; break;
        case 'p':
            if (cmd_parse_u64(optarg, &v) || v > 65535)
                return cmd_usage_error("serve", usage, "bad --port '%s'", optarg);
            so.port = (unsigned)v;
            break;
        case OPT_MAXC:
            if (cmd_parse_u64(optarg, &v) || !v || v > 100000)
                return cmd_usage_error("serve", usage, "bad --max-connections '%s'", optarg);
            so.max_connections = (unsigned)v;
            break;
        case OPT_THREADS:
            if (cmd_parse_u64(optarg, &v) || !v || v > 256)
                return cmd_usage_error("serve", usage, "bad --threads '%s'", optarg);
            so.threads = (unsigned)v;
            break;
        case OPT_TCACHE:
            if (cmd_parse_size(optarg, &v) || !v)
                return cmd_usage_error("serve", usage, "bad --thumb-cache '%s'", optarg);
            so.thumb_cache = (size_t)v;
            break;
        case OPT_TSIZE:
            if (cmd_parse_u64(optarg, &v) || !v || v > 1024)
                return cmd_usage_error("serve", usage, "bad --thumb-size '%s'", optarg);
            so.thumb_size = (unsigned)v;
            break;
        case OPT_TRUST: flags |= SK_INDEX_TRUST_BODY; break;
        case 'h': fputs(usage, stdout); return SK_EXIT_OK;
        default:
            switch (cmd_s3_option("serve", usage, c, optarg, &s3cfg, NULL)) {
            case 1: break;
            case -1: return SK_EXIT_USAGE;
            default: return cmd_unknown_option("serve", argv);
            }
        }
    }
    if (argc - optind != 1) return cmd_usage_error("serve", usage, "need one DATASET");
    if (cmd_places_args("serve", argv + optind, 1, CMD_R | CMD_S3 | CMD_HTTP)) return SK_EXIT_USAGE;
    const char *dataset = argv[optind];
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
