/*
 * main.c - the shardkit command: a table of subcommands and one runner, in
 * the manner of git.c.  Each tool lives in its own cmd/<name>.c and exports
 * cmd_<name>(argc, argv); this file only dispatches and, afterwards, checks
 * that stdout was really written (a full disk on a pipe is an error).
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
};

static const struct command commands[] = {
    {"pack", cmd_pack, "pack many small files into indexed tar shards"},
    {"index", cmd_index, "index existing shards; export DALI/wids; merge manifests"},
    {"get", cmd_get, "fetch one sample by key or #ordinal through the index"},
    {"cat", cmd_cat, "stream the selected samples as one tar (or their keys) to stdout"},
    {"upload", cmd_upload, "upload files and datasets to S3, resumable; copy between buckets"},
    {"shard", cmd_shard, "reshard: other size or count, global shuffle, filters, zstd"},
    {"verify", cmd_verify, "prove shards sound: tar, index, manifest, keys, JPEGs"},
    {"stats", cmd_stats, "what a dataset holds: table, JSON or an HTML page; read rate"},
    {"serve", cmd_serve, "a read-only web viewer of a dataset (samples, images, thumbnails)"},
    {"mount", cmd_mount, "a dataset (local or s3://) as a read-only file tree (FUSE)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: shardkit [--version] [--help] <command> [<args>]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'shardkit <command> --help' describes one command.\n");
}

int main(int argc, char **argv)
{
    opterr = 0; /* every tool reports an unknown option one way: cmd_unknown_option */
    if (argc < 2) {
        usage(stderr);
        return SK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("shardkit %s\n", sk_version());
        return cmd_finish_stdout(0);
    }
    if (!strcmp(argv[1], "help") && argc >= 3) { /* `shardkit help CMD` is `shardkit CMD --help` */
        char *args[] = {argv[2], "--help", NULL};
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (!strcmp(argv[2], commands[i].name))
                return cmd_finish_stdout(commands[i].fn(2, args));
        cmd_eprintf("shardkit: '%s' is not a command; see 'shardkit --help'", argv[2]);
        return SK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return cmd_finish_stdout(0);
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return cmd_finish_stdout(commands[i].fn(argc - 1, argv + 1));
    cmd_eprintf("shardkit: '%s' is not a command; see 'shardkit --help'", argv[1]);
    return SK_EXIT_USAGE;
}
