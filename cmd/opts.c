/*
 * opts.c - the tools' option parser: a tool lists its options as a table
 * (cmd_opt rows: where each value goes and how it is checked) and one
 * getopt_long loop here takes them, with -h/--help and, where the tool
 * reads remote datasets, the S3 client options; so no tool hand-rolls the
 * loop, the range checks or the usage errors.
 */
#include "cmd.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_MAX 64
#define CODE0 256 /* getopt codes of the table's rows: CODE0 + row */

/* no_argument, required_argument or optional_argument */
static int takes_arg(int kind)
{
    return kind == CMD_O_FN_OPT ? optional_argument
           : kind == CMD_O_STR || kind == CMD_O_NUM || kind == CMD_O_SIZE || kind == CMD_O_FN ||
                   kind == CMD_O_CHECK
               ? required_argument
               : no_argument;
}

/* Stores v (which fits: at most o->hi) in an integer of o->width bytes. */
static void store(const cmd_opt *o, uint64_t v)
{
    if (o->width == sizeof(uint64_t)) {
        uint64_t w = v;
        memcpy(o->to, &w, sizeof w);
    } else {
        uint32_t w = (uint32_t)v;
        memcpy(o->to, &w, sizeof w);
    }
}

/* Takes one option's value; 0, or the exit code after the error. */
static int take(const char *tool, const char *usage, const cmd_opt *o, char *arg,
                const char *typed)
{
    uint64_t v = 0;
    unsigned u;
    switch (o->kind) {
    case CMD_O_SET: *(int *)o->to = (int)o->lo; return 0;
    case CMD_O_OR: memcpy(&u, o->to, sizeof u); u |= (unsigned)o->lo; memcpy(o->to, &u, sizeof u); return 0;
    case CMD_O_CLEAR: memcpy(&u, o->to, sizeof u); u &= ~(unsigned)o->lo; memcpy(o->to, &u, sizeof u); return 0;
    case CMD_O_STR: *(const char **)o->to = arg; return 0;
    case CMD_O_FN:
    case CMD_O_FN_OPT:
    case CMD_O_DO: return o->fn(o->ctx, arg);
    case CMD_O_CHECK: {
        int rc = o->fn(o->to, arg);
        if (rc != -1) return rc;
        return o->bad ? cmd_usage_error(tool, usage, o->bad, arg, typed)
                      : cmd_usage_error(tool, usage, "bad --%s '%s'", o->name, arg);
    }
    }
    int bad = o->kind == CMD_O_SIZE ? cmd_parse_size(arg, &v) : cmd_parse_u64(arg, &v);
    if (!bad && v >= o->lo && v <= o->hi) {
        store(o, v);
        return 0;
    }
    if (o->bad) { /* the row's own words: given the value, then the option as typed */
        return cmd_usage_error(tool, usage, o->bad, arg, typed);
    }
    return cmd_usage_error(tool, usage, "bad --%s '%s'", o->name, arg);
}

int cmd_getopt(const cmd_opts *os, int argc, char **argv, int *first)
{
    static const struct option s3rows[] = {CMD_S3_CLIENT_OPTIONS, CMD_S3_PART_SIZE_OPTION};
    size_t ns3 = sizeof s3rows / sizeof *s3rows - !os->part_size;
    struct option lo[2 * ROWS_MAX + 1 + sizeof s3rows / sizeof *s3rows + 1];
    char shorts[3 * ROWS_MAX + 2] = "h";
    size_t k = 0, sl = 1;
    if (os->n > ROWS_MAX || os->nmore > ROWS_MAX) return cmd_usage_error(os->tool, os->usage, "internal: too many options");
    for (size_t i = 0; i < os->n; i++) {
        const cmd_opt *o = &os->t[i];
        if (o->name) /* NULL: a short option only */
            lo[k++] = (struct option){o->name, takes_arg(o->kind), NULL, CODE0 + (int)i};
        if (o->letter) {
            shorts[sl++] = (char)o->letter;
            if (takes_arg(o->kind) != no_argument) shorts[sl++] = ':';
            if (takes_arg(o->kind) == optional_argument) shorts[sl++] = ':';
        }
    }
    shorts[sl] = 0;
    lo[k++] = (struct option){"help", no_argument, NULL, 'h'};
    for (size_t i = 0; i < os->nmore; i++) lo[k++] = os->more[i];
    for (size_t i = 0; os->s3 && i < ns3; i++) lo[k++] = s3rows[i];
    lo[k] = (struct option){NULL, 0, NULL, 0};
    int c;
    while ((c = getopt_long(argc, argv, shorts, lo, NULL)) != -1) {
        if (c == 'h') {
            fputs(os->usage, stdout);
            return SK_EXIT_OK;
        }
        const cmd_opt *o = c >= CODE0 && c < CODE0 + (int)os->n ? &os->t[c - CODE0] : NULL;
        for (size_t i = 0; !o && c != '?' && c != ':' && i < os->n; i++)
            if (os->t[i].letter == c) o = &os->t[i];
        if (o) {
            /* the option as typed: "--limit" of "--limit 5", "--limit=5", "-n5" */
            char typed[64];
            const char *t = optarg && optind >= 2 && argv[optind - 1] == optarg ? argv[optind - 2] : argv[optind - 1];
            size_t tl = strcspn(t, "=");
            if (t[0] == '-' && t[1] != '-' && tl > 2) tl = 2;
            snprintf(typed, sizeof typed, "%.*s", (int)tl, t);
            int rc = take(os->tool, os->usage, o, optarg, typed);
            if (rc) return rc;
            continue;
        }
        switch (os->more_fn && c != '?' && c != ':' ? os->more_fn(os->more_ctx, c, optarg) : 0) {
        case 1: continue;
        case -1: return SK_EXIT_USAGE;
        }
        switch (os->s3 ? cmd_s3_option(os->tool, os->usage, c, optarg, os->s3, os->part_size) : 0) {
        case 1: break;
        case -1: return SK_EXIT_USAGE;
        default: return cmd_unknown_option(os->tool, argv);
        }
    }
    *first = optind;
    return -1;
}

int cmd_dataset_getopt(const char *tool, const char *usage, const cmd_opt *t, size_t n,
                       sk_s3_config *s3, int argc, char **argv, int nargs, const char *what,
                       int *first)
{
    cmd_opts os = {.tool = tool, .usage = usage, .t = t, .n = n, .s3 = s3};
    int done = cmd_getopt(&os, argc, argv, first);
    if (done >= 0) return done;
    if (argc - *first != nargs) return cmd_usage_error(tool, usage, "%s", what);
    if (cmd_places_args(tool, argv + *first, 1, CMD_R | CMD_S3 | CMD_HTTP)) return SK_EXIT_USAGE;
    return -1;
}

/* ------------------------------------------------------------ CMD_CHECK */

int cmd_check_compress(void *to, char *value)
{
    return cmd_parse_compress(value, to) ? -1 : 0;
}

int cmd_check_on_error(void *to, char *value)
{
    int skip = !strcmp(value, "skip");
    if (!skip && strcmp(value, "fail")) return -1;
    *(int *)to = skip;
    return 0;
}

int cmd_check_seconds(void *to, char *value)
{
    char *end;
    double s = strtod(value, &end);
    if (end == value || *end || !(s > 0) || s > 3600) return -1;
    *(double *)to = s;
    return 0;
}

/* ------------------------------------------------------ the shard writers */

/* the families' rows: SageMaker's last, left out where a tool has none */
static const struct option writer_rows[] = {CMD_IMAGE_OPTIONS, CMD_EXISTING_OPTIONS, CMD_SAGEMAKER_OPTIONS};
enum { SAGEMAKER_ROWS = 3 };

const struct option *cmd_writer_rows(void)
{
    return writer_rows;
}

size_t cmd_writer_nrows(const cmd_writer *w)
{
    return sizeof writer_rows / sizeof *writer_rows - (w->sm ? 0 : SAGEMAKER_ROWS);
}

int cmd_writer_option(void *ctx, int c, char *value)
{
    cmd_writer *w = ctx;
    int r = cmd_image_option(w->tool, w->usage, c, value, w->images);
    if (!r) r = cmd_existing_option(w->tool, w->usage, c, w->existing);
    if (!r && w->sm) r = cmd_sagemaker_option(w->tool, w->usage, c, value, w->sm);
    return r;
}

int cmd_writer_part(const cmd_writer *w, int *part, int *parts)
{
    sk_error err = SK_ERROR_INIT;
    if (w->parts && !w->part) return cmd_usage_error(w->tool, w->usage, "--parts needs --part");
    if (w->part && sk_part_parse(w->part, (int)w->parts, part, parts, &err))
        return cmd_usage_error(w->tool, w->usage, "%s", err.msg);
    return 0;
}
