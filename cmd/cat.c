/*
 * cat.c - `shardkit cat`: the samples a reader would give a training
 * process, as one tar stream on stdout (like SageMaker's Pipe mode: the
 * trainer reads a FIFO), or their keys only.  The same split, shuffle and
 * prefetch options as the library's reader (sk_reader_*).
 */
#include "cmd.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "usage: shardkit cat [options] URL...\n"
    "\n"
    "URL is a shard (.tar, .tar.zst), a brace pattern of shards\n"
    "('train-{000000..000099}.tar'), a manifest.json, a directory, or '-' or a\n"
    "FIFO carrying shards back to back (a SageMaker Pipe channel; gzip, zstd\n"
    "or plain, told by the first bytes).\n"
    "Writes the selected samples to stdout as one tar stream, members named\n"
    "KEY.EXT with the headers `shardkit pack` writes.\n"
    "\n"
    "  -k, --keys              print one key per line instead of a tar\n"
    "      --json              print one JSON object per sample instead of a tar:\n"
    "                          key, shard, ordinal (in the shard), offset, members\n"
    "                          (ext, size)\n"
    "  -q, --quiet             print nothing but the samples and errors\n"
    "      --rank N            this node (default $RANK, else 0)\n"
    "      --world-size N      nodes (default $WORLD_SIZE, else 1)\n"
    "      --worker N          this worker (default $WORKER, else 0)\n"
    "      --num-workers N     workers per node (default $NUM_WORKERS, else 1)\n"
    "      --shuffle-shards    shuffle the shard list per epoch\n"
    "      --shuffle N         sample shuffle buffer of N samples\n"
    "      --seed N            seed of both shuffles (default 0)\n"
    "      --global-order      one sample order per epoch whatever the split, read\n"
    "                          through the indexes (docs/reader.md)\n"
    "      --shuffle-window N  with --global-order: shards shuffled together (8)\n"
    "      --epoch N           the epoch to read (default 0)\n"
    "      --epochs N          read N epochs, from --epoch on (default 1)\n"
    "  -n, --limit N           stop after N samples\n"
    "      --prefetch N        shards read ahead in the background (default 2)\n"
    "      --buffer SIZE       ring buffer per shard (default 4M)\n"
    "      --max-sample SIZE   largest sample accepted (default 1G)\n"
    "      --skip-errors       report a corrupt shard and go on with the next\n"
    "      --recordio          the input is RecordIO records, one shard each\n"
    "                          (SageMaker's RecordWrapperType=RecordIO)\n"
    "      --cache-dir DIR     keep s3:// shards here for later epochs\n"
    "      --cache-size SIZE   bound of the cache (default: none)\n"
    "  -h, --help              show this help\n"
    "S3 (for s3:// shards and manifests):\n"
    CMD_S3_CLIENT_USAGE
    "\n"
    "Exit status: 0 done, 1 a shard could not be read, 2 usage.\n";

/* --json: one line per sample; keys and extensions are the shard's bytes */
static int print_json(const sk_reader_sample *s)
{
    json_t *o = json_object(), *ms = json_array();
    json_object_set_new(o, "key", json_stringn_nocheck(s->key, s->key_len));
    json_object_set_new(o, "shard", json_string_nocheck(s->shard_url));
    json_object_set_new(o, "ordinal", json_integer((json_int_t)s->ordinal));
    json_object_set_new(o, "offset", json_integer((json_int_t)s->offset));
    for (size_t i = 0; i < s->nmembers; i++) {
        json_t *m = json_object();
        json_object_set_new(m, "ext", json_stringn_nocheck(s->members[i].ext, s->members[i].ext_len));
        json_object_set_new(m, "size", json_integer((json_int_t)s->members[i].size));
        json_array_append_new(ms, m);
    }
    json_object_set_new(o, "members", ms);
    int rc = json_dumpf(o, stdout, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(o);
    return rc || putchar('\n') == EOF ? -1 : 0;
}

int cmd_cat(int argc, char **argv)
{
    sk_reader_options o;
    sk_reader_options_init(&o);
    sk_s3_config s3cfg = SK_S3_CONFIG_INIT;
    int keys = 0, quiet = 0; /* cat prints nothing but samples and errors */
    uint64_t epochs = 1, limit = UINT64_MAX;
#define BAD "bad value '%s' for %s"
#define SMALL(name, to) CMD_NUM(name, 0, to, 0, 1000000, BAD)
    const cmd_opt opts[] = {
        CMD_SIZE("buffer", 0, &o.buffer_size, 0, SIZE_MAX, BAD),
        CMD_STR("cache-dir", 0, &o.cache_dir),
        CMD_SIZE("cache-size", 0, &o.cache_size, 0, UINT64_MAX, BAD),
        CMD_NUM("epoch", 0, &o.epoch, 0, UINT64_MAX, BAD),
        CMD_NUM("epochs", 0, &epochs, 0, UINT64_MAX, BAD),
        CMD_SET("global-order", 0, &o.global_order, 1),
        CMD_SET("keys", 'k', &keys, 1),
        CMD_NUM("limit", 'n', &limit, 0, UINT64_MAX, BAD),
        CMD_SET("json", 0, &keys, 2),
        CMD_SET("quiet", 'q', &quiet, 1),
        CMD_SIZE("max-sample", 0, &o.max_sample, 0, SIZE_MAX, BAD),
        SMALL("num-workers", &o.num_workers),
        SMALL("prefetch", &o.prefetch),
        SMALL("rank", &o.rank),
        CMD_SET("recordio", 0, &o.recordio, 1),
        CMD_NUM("seed", 0, &o.seed, 0, UINT64_MAX, BAD),
        CMD_NUM("shuffle", 0, &o.shuffle_buffer, 0, SIZE_MAX, BAD),
        CMD_SET("shuffle-shards", 0, &o.shuffle_shards, 1),
        CMD_NUM("shuffle-window", 0, &o.shuffle_window, 1, SIZE_MAX, BAD),
        CMD_SET("skip-errors", 0, &o.skip_errors, 1),
        SMALL("worker", &o.worker),
        SMALL("world-size", &o.world_size),
    };
    cmd_opts os = {.tool = "cat", .usage = usage, .t = opts, .n = sizeof opts / sizeof *opts,
                   .s3 = &s3cfg};
    int first, done = cmd_getopt(&os, argc, argv, &first);
    if (done >= 0) return done;
    if (first == argc) return cmd_usage_error("cat", usage, "no URL given");
    if (cmd_places_args("cat", argv + first, argc - first, CMD_R | CMD_STREAM | CMD_S3 | CMD_HTTP)) return SK_EXIT_USAGE;
    if (!keys && isatty(STDOUT_FILENO))
        return cmd_usage_error("cat", usage,
                               "stdout is a terminal: redirect the tar stream, or use --keys");
    /* cat is the consumer's pipe: read local plain shards on this thread,
     * as `cat` does (no handoff between cores), write from the ring */
    o.read_inline = 1;
    sk_error err = SK_ERROR_INIT;
    sk_reader *r;
    sk_s3 *s3 = NULL;
    if (cmd_any_remote((const char *const *)argv + first, (size_t)(argc - first), &s3cfg)) {
        if (sk_s3_new(&s3, &s3cfg, &err)) return cmd_report("cat", &err);
        o.s3 = s3;
    }
    if (sk_reader_open(&r, (const char *const *)argv + first, (size_t)(argc - first), &o, &err)) {
        sk_s3_free(s3);
        return cmd_report("cat", &err);
    }
    sk_reader_tar_out *out = NULL;
    int rc = keys ? SK_OK : sk_reader_tar_out_open(&out, STDOUT_FILENO, "stdout", &err);
    if (out) sk_reader_tar_out_bind(out, r); /* samples written from the reader's ring */
    uint64_t n = 0;
    for (uint64_t e = 0; !rc && e < epochs && n < limit; e++) {
        if (e && (rc = sk_reader_start_epoch(r, o.epoch + e, &err))) break;
        const sk_reader_sample *s;
        while (n < limit && !(rc = sk_reader_next(r, &s, &err)) && s) {
            if (keys == 2) {
                if (print_json(s)) {
                    rc = sk_error_set(&err, SK_E_IO, "stdout: write failed");
                    break;
                }
            } else if (keys) {
                fwrite(s->key, 1, s->key_len, stdout);
                if (putchar('\n') == EOF) {
                    rc = sk_error_set(&err, SK_E_IO, "stdout: write failed");
                    break;
                }
            } else if ((rc = sk_reader_tar_out_add(out, s, &err))) {
                break;
            }
            n++;
        }
    }
    if (!rc && !keys) rc = sk_reader_tar_out_finish(out, &err);
    sk_reader_tar_out_free(out);
    sk_reader_close(r);
    sk_s3_free(s3);
    return rc ? cmd_report("cat", &err) : SK_EXIT_OK;
}
