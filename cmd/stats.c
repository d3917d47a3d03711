/*
 * stats.c - `shardkit stats`: what a dataset holds (sk_stats_run) as a
 * table, JSON or an HTML page; with --read-rate, how fast this machine
 * reads it (sk_read_rate).
 */
#include "cmd.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: shardkit stats [options] DATASET\n"
    "       shardkit stats --read-rate [--shards N] DATASET\n"
    "\n"
    "DATASET is a manifest.json, a directory, a shard or a brace pattern of\n"
    "shards, local, s3:// or http(s):// (as `shardkit get` takes it).\n"
    "Statistics come from the indexes; --images and --json-keys also read\n"
    "members.\n"
    "\n"
    "      --images         JPEG width/height and aspect ratios from their\n"
    "                       headers (only the first bytes of each JPEG are read)\n"
    "      --image-ext LIST image extensions (default jpg,jpeg)\n"
    "      --json-keys      the keys of .json members and their types\n"
    "      --json           the statistics as JSON on stdout (docs/stats.md)\n"
    "      --html FILE      a self-contained HTML page with plots\n"
    "      --key-mem SIZE   memory of the duplicate-key sort when keys are not\n"
    "                       in order (default 64MiB; then temp files)\n"
    "      --check-index    verify each index's body checksum when opening it\n"
    "      --read-rate      time to first sample, samples/s, MB/s and requests,\n"
    "                       reading as the reader does, without and with a cache\n"
    "      --shards N       with --read-rate: the first N shards (default 4)\n"
    "      --prefetch N     with --read-rate: shards read ahead (reader default)\n"
    "  -q, --quiet          no table (with --html)\n"
    "  -h, --help           show this help\n"
    "S3 (for an s3:// DATASET):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Exit status: 0 done, 1 a problem reading the dataset, 2 usage.\n";

static void print_rate(const char *what, const sk_read_rate_run *r)
{
    double s = r->seconds > 0 ? r->seconds : 1e-9;
    printf("  %-14s %10.3f %12.0f %10.1f %10llu %8llu\n", what, r->first_sample,
           (double)r->samples / s, (double)r->bytes / s / 1e6, (unsigned long long)r->requests,
           (unsigned long long)r->samples);
}

static int read_rate(const char *dataset, const sk_read_rate_options *ro, int json, sk_error *err)
{
    sk_read_rate_run r[3];
    int rc = sk_read_rate(dataset, ro, r, err);
    if (rc) return rc;
    static const char *const names[3] = {"no_cache", "cache_fill", "cache_read"};
    if (json) {
        printf("{\n  \"shards\": %llu,\n", (unsigned long long)r[0].shards);
        for (int i = 0; i < 3; i++)
            printf("  \"%s\": {\"first_sample_seconds\": %.6f, \"seconds\": %.6f, "
                   "\"samples\": %llu, \"bytes\": %llu, \"samples_per_second\": %.1f, "
                   "\"mb_per_second\": %.3f, \"requests\": %llu}%s\n",
                   names[i], r[i].first_sample, r[i].seconds, (unsigned long long)r[i].samples,
                   (unsigned long long)r[i].bytes,
                   (double)r[i].samples / (r[i].seconds > 0 ? r[i].seconds : 1e-9),
                   (double)r[i].bytes / (r[i].seconds > 0 ? r[i].seconds : 1e-9) / 1e6,
                   (unsigned long long)r[i].requests, i < 2 ? "," : "");
        printf("}\n");
        return SK_OK;
    }
    printf("read rate over %llu shard(s), read as the reader reads them\n",
           (unsigned long long)r[0].shards);
    printf("  %-14s %10s %12s %10s %10s %8s\n", "", "first (s)", "samples/s", "MB/s",
           "requests", "samples");
    print_rate("no cache", &r[0]);
    print_rate("cache (fill)", &r[1]);
    print_rate("cache (read)", &r[2]);
    return SK_OK;
}

int cmd_stats(int argc, char **argv)
{
    sk_stats_options so;
    sk_stats_options_init(&so);
    sk_read_rate_options ro;
    sk_read_rate_options_init(&ro);
    const char *html = NULL;
    int json = 0, quiet = 0, rate = 0;
    unsigned flags = SK_INDEX_TRUST_BODY;
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    sk_s3 *s3 = NULL;
    const cmd_opt opts[] = {
        CMD_OR("images", &so.flags, SK_STATS_IMAGES),
        CMD_STR("image-ext", 0, &so.image_ext),
        CMD_OR("json-keys", &so.flags, SK_STATS_JSON_KEYS),
        CMD_SET("json", 0, &json, 1),
        CMD_STR("html", 0, &html),
        CMD_SIZE("key-mem", 0, &so.key_mem, 0, UINT64_MAX, NULL),
        CMD_CLEAR("check-index", &flags, SK_INDEX_TRUST_BODY),
        CMD_SET("read-rate", 0, &rate, 1),
        CMD_NUM("shards", 0, &ro.shards, 1, SIZE_MAX, NULL),
        CMD_NUM("prefetch", 0, &ro.prefetch, 0, 64, NULL),
        CMD_SET("quiet", 'q', &quiet, 1),
    };
    int first, done = cmd_dataset_getopt("stats", usage, opts, sizeof opts / sizeof *opts, &s3cfg,
                                         argc, argv, 1, "need one DATASET", &first);
    if (done >= 0) return done;
    if (rate && (html || so.flags))
        return cmd_usage_error("stats", usage, "--read-rate measures reading only");
    const char *dataset = argv[first];
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    sk_stats *st = NULL;
    int rc;
    /* an http(s):// dataset gets a plain client: --read-rate counts its requests */
    if (cmd_any_remote(&dataset, 1, &s3cfg) && (rc = sk_s3_new(&s3, &s3cfg, &err))) goto out;
    if (rate) {
        ro.s3 = s3;
        rc = read_rate(dataset, &ro, json, &err);
        goto out;
    }
    if ((rc = sk_dataset_open_s3(&ds, dataset, s3, flags, &err))) goto out;
    if ((rc = sk_stats_run(ds, dataset, &so, &st, &err))) goto out;
    if (html && (rc = sk_stats_write_html(st, html, &err))) goto out;
    if (json) {
        char *text = sk_stats_json(st);
        if (!text) {
            rc = sk_error_set(&err, SK_E_NOMEM, "stats: out of memory");
            goto out;
        }
        puts(text);
        free(text);
    } else if (!quiet) {
        rc = sk_stats_print(st, stdout, &err);
    }
out:
    sk_stats_free(st);
    sk_dataset_close(ds);
    sk_s3_free(s3);
    return rc ? cmd_report("stats", &err) : SK_EXIT_OK;
}
