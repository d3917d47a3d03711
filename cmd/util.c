/* util.c - argument parsing and reporting shared by the tools in cmd/. */
#include "cmd.h"

#include <getopt.h>

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cmd_finish_stdout(int rc)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "shardkit: writing to stdout failed: %s\n", strerror(errno));
        fclose(stdout);
        return rc ? rc : SK_EXIT_PROBLEM;
    }
    if (fclose(stdout) != 0) {
        fprintf(stderr, "shardkit: closing stdout failed: %s\n", strerror(errno));
        return rc ? rc : SK_EXIT_PROBLEM;
    }
    return rc;
}

int cmd_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s)) return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

int cmd_parse_size(const char *s, uint64_t *out)
{
    static const struct { const char *suffix; double mult; } units[] = {
        {"", 1}, {"b", 1},
        {"k", 1024.0}, {"kb", 1e3}, {"kib", 1024.0},
        {"m", 1048576.0}, {"mb", 1e6}, {"mib", 1048576.0},
        {"g", 1073741824.0}, {"gb", 1e9}, {"gib", 1073741824.0},
        {"t", 1099511627776.0}, {"tb", 1e12}, {"tib", 1099511627776.0},
    };
    char *end;
    if (!s || !(isdigit((unsigned char)*s) || *s == '.')) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || v < 0) return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (!strcasecmp(end, units[i].suffix)) {
            double bytes = v * units[i].mult;
            if (bytes >= 1.8e19) return -1;
            *out = (uint64_t)llround(bytes);
            return 0;
        }
    }
    return -1;
}



int cmd_parse_compress(const char *s, int *level)
{
    uint64_t v;
    if (!strcmp(s, "none")) return *level = 0, 0;
    if (!strcmp(s, "zstd")) return *level = 3, 0;
    if (strncmp(s, "zstd:", 5) || cmd_parse_u64(s + 5, &v) || v < 1 || v > 22) return -1;
    *level = (int)v;
    return 0;
}

void cmd_check_zst_pattern(const char *tool, const char *pattern, int *level)
{
    size_t n = strlen(pattern);
    int zst_name = n >= 4 && !strcmp(pattern + n - 4, ".zst");
    if (*level < 0) {
        *level = zst_name ? 3 : 0;
        return;
    }
    if (*level && strcmp(pattern, "-") && !zst_name)
        fprintf(stderr, "shardkit %s: warning: --compress zstd writes zstd data, but the "
                "shard names (%s) do not end in .zst\n", tool, pattern);
}

void cmd_ui_clear(cmd_ui *ui)
{
    if (ui->progress_shown) fputs("\r\033[K", stderr);
    ui->progress_shown = 0;
    /* redrawn at the next update, under the line printed now: a tool that
     * prints a line an object more often than the refresh would else keep
     * its progress line off the screen */
    ui->last = 0;
}

void cmd_ui_warn(void *ctx, const char *msg)
{
    cmd_ui *ui = ctx;
    cmd_ui_clear(ui);
    cmd_eprintf("shardkit %s: warning: %s", ui->tool, msg);
}

void cmd_ui_status(cmd_ui *ui, const char *fmt, ...)
{
    va_list ap;
    fputs("\r\033[K", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    ui->progress_shown = 1;
}

void cmd_ui_end(cmd_ui *ui)
{
    if (ui->progress_shown) fputs("\n", stderr);
    ui->progress_shown = 0;
}

int cmd_s3_option(const char *tool, const char *usage, int c, const char *arg, sk_s3_config *cfg,
                  uint64_t *part_size)
{
    uint64_t v;
    switch (c) {
    case CMD_OPT_ENDPOINT: cfg->endpoint_url = arg; return 1;
    case CMD_OPT_REGION: cfg->region = arg; return 1;
    case CMD_OPT_PROFILE: cfg->profile = arg; return 1;
    case CMD_OPT_MAX_ATTEMPTS:
        if (cmd_parse_u64(arg, &v) || !v || v > 100)
            return cmd_usage_error(tool, usage, "--max-attempts '%s': want 1..100", arg), -1;
        cfg->max_attempts = (int)v;
        return 1;
    case CMD_OPT_READ_TIMEOUT:
        if (cmd_parse_u64(arg, &v) || !v || v > 3600)
            return cmd_usage_error(tool, usage, "--read-timeout '%s': want 1..3600 seconds", arg), -1;
        cfg->read_timeout = (int)v;
        return 1;
    case CMD_OPT_LOW_SPEED:
        if (cmd_parse_size(arg, &v) || !v || v > (1ull << 30))
            return cmd_usage_error(tool, usage, "--low-speed-limit '%s': want bytes per second, 1..1G", arg), -1;
        cfg->low_speed_limit = (long)v;
        return 1;
    case CMD_OPT_PART_SIZE:
        if (!part_size) return 0;
        if (cmd_parse_size(arg, part_size) || *part_size < (5u << 20) || *part_size > (5ull << 30))
            return cmd_usage_error(tool, usage, "--part-size '%s': want 5MiB..5GiB", arg), -1;
        return 1;
    default: return 0;
    }
}

/* What s names by the library's one grammar (SK_PLACE_*; a refused name
 * is none: the check that refuses it names it). */
int cmd_place_kind(const char *s)
{
    int k = SK_PLACE_FILE;
    unsigned any = SK_PLACE_READ | SK_PLACE_STREAM | SK_PLACE_S3_OK | SK_PLACE_HTTP_OK;
    return s && !sk_place_check(s, any, NULL, &k, NULL) ? k : SK_PLACE_FILE;
}

int cmd_any_s3(const char *const *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (cmd_place_kind(s[i]) == SK_PLACE_S3) return 1;
    return 0;
}

int cmd_pack_add_list(sk_pack *p, const char *path, const char *root, int nul, sk_s3 *s3, sk_error *err)
{
    sk_place_in *in;
    if (sk_place_in_open(&in, path, s3, err)) return err->code;
    FILE *f = sk_place_in_file(in);
    const char *name = strcmp(path, "-") ? path : "stdin";
    int kind = cmd_place_kind(root), remote = kind == SK_PLACE_S3 || kind == SK_PLACE_HTTP;
    int rc = remote ? sk_pack_add_s3_list(p, f, name, root, nul, err) : sk_pack_add_list(p, f, name, root, nul, err);
    return sk_place_in_close(in, rc, err);
}

int cmd_any_remote(const char *const *s, size_t n, sk_s3_config *cfg)
{
    for (size_t i = 0; i < n && !cmd_any_s3(s, n); i++) /* http(s) only: no credentials */
        if (cmd_place_kind(s[i]) == SK_PLACE_HTTP) return cfg->http_only = 1;
    return cmd_any_s3(s, n);
}

int cmd_image_option(const char *tool, const char *usage, int c, const char *arg,
                     sk_image_options *io)
{
    uint64_t v;
    char *end;
    switch (c) {
    case CMD_OPT_IMAGE_SIZE:
        if (cmd_parse_u64(arg, &v) || !v || v > 65500)
            return cmd_usage_error(tool, usage, "--image-size '%s': want 1..65500 pixels", arg), -1;
        io->image_size = (unsigned)v;
        return 1;
    case CMD_OPT_RESIZE_MODE:
        if ((io->resize_mode = sk_image_mode_parse(arg)) < 0)
            return cmd_usage_error(tool, usage, "--resize-mode '%s': want border, keep_ratio, "
                                   "keep_ratio_largest, center_crop or no", arg), -1;
        return 1;
    case CMD_OPT_RESIZE_ONLY_IF_BIGGER: io->resize_only_if_bigger = 1; return 1;
    case CMD_OPT_ENCODE_QUALITY:
        if (cmd_parse_u64(arg, &v) || !v || v > 100)
            return cmd_usage_error(tool, usage, "--encode-quality '%s': want 1..100", arg), -1;
        io->encode_quality = (int)v;
        return 1;
    case CMD_OPT_MIN_IMAGE_SIZE:
        if (cmd_parse_u64(arg, &v) || v > 65500)
            return cmd_usage_error(tool, usage, "--min-image-size '%s': want 0..65500 pixels", arg), -1;
        io->min_image_size = (unsigned)v;
        return 1;
    case CMD_OPT_MAX_ASPECT_RATIO:
        io->max_aspect_ratio = strtod(arg, &end);
        if (*end || end == arg || !(io->max_aspect_ratio >= 1))
            return cmd_usage_error(tool, usage, "--max-aspect-ratio '%s': want a number >= 1", arg), -1;
        return 1;
    case CMD_OPT_IMAGE_EXT: io->image_ext = arg; return 1;
    case CMD_OPT_IMAGE_META: io->image_meta = 1; return 1;
    case CMD_OPT_BAD_IMAGE:
        if ((io->bad_image = sk_image_bad_parse(arg)) < 0)
            return cmd_usage_error(tool, usage, "--bad-image '%s': want skip, keep or fail", arg), -1;
        return 1;
    case CMD_OPT_MAX_PIXELS:
        if (cmd_parse_u64(arg, &io->max_pixels) || !io->max_pixels)
            return cmd_usage_error(tool, usage, "--max-pixels '%s': want a positive integer", arg), -1;
        return 1;
    case CMD_OPT_IMAGE_MEMORY:
        if (cmd_parse_size(arg, &io->memory) || io->memory < ((uint64_t)1 << 20))
            return cmd_usage_error(tool, usage, "--image-memory '%s': want a size of 1MiB or more", arg), -1;
        return 1;
    default: return 0;
    }
}

static void sm_warn(void *ctx, const char *msg)
{
    cmd_eprintf("shardkit %s: warning: %s", ((cmd_sagemaker *)ctx)->tool, msg);
}

int cmd_sagemaker_option(const char *tool, const char *usage, int c, const char *arg,
                         cmd_sagemaker *sm)
{
    uint64_t v;
    sm->tool = tool;
    switch (c) {
    case CMD_OPT_SM_MANIFEST: sm->out = arg; return 1;
    case CMD_OPT_SM_PREFIX:
        if (cmd_place_kind(arg) != SK_PLACE_S3)
            return cmd_usage_error(tool, usage, "--sagemaker-prefix '%s': want s3://BUCKET/PREFIX/", arg), -1;
        sm->o.prefix = arg;
        return 1;
    case CMD_OPT_SM_INSTANCES:
        if (cmd_parse_u64(arg, &v) || !v || v > 100000)
            return cmd_usage_error(tool, usage, "--sagemaker-instances '%s': want 1..100000", arg), -1;
        sm->o.instances = (unsigned)v;
        return 1;
    default: return 0;
    }
}

int cmd_sagemaker_write(cmd_sagemaker *sm, const char *manifest, const char *pattern, int part,
                        int parts, sk_s3 *s3, sk_error *err)
{
    if (!sm->out) return SK_OK;
    char path[8192], *pat = NULL, *man = NULL, *out = NULL;
    int rc = pattern ? sk_part_output_names(pattern, manifest, part, parts, &pat, &man, err) : SK_OK;
    if (!rc) rc = sk_part_name(sm->out, part, parts, 1, &out, err);
    if (!rc && pattern && !man) { /* pack's and shard's rule: manifest.json beside the shards */
        const char *slash = strrchr(pat, '/');
        snprintf(path, sizeof path, "%.*s%smanifest.json", slash ? (int)(slash - pat) : 0, pat,
                 slash ? "/" : "");
    }
    sm->o.struct_size = sizeof sm->o;
    sm->o.s3 = s3;
    sm->o.warn = sm_warn;
    sm->o.ctx = sm;
    if (!rc) rc = sk_sagemaker_manifest_write(man ? man : pattern ? path : manifest, out, &sm->o, err);
    free(pat), free(man), free(out);
    return rc;
}

/* Before the run, not after it: the ManifestFile's name must take this
 * part (one per part when --part is given), and local shards need the
 * prefix SageMaker will read them under. */
int cmd_sagemaker_check(const cmd_sagemaker *sm, const char *usage, const char *pattern, int part, int parts)
{
    if (!sm->out) return 0;
    char *name = NULL;
    sk_error err = SK_ERROR_INIT;
    if (sk_part_name(sm->out, part, parts, 1, &name, &err))
        return cmd_usage_error(sm->tool, usage, "--sagemaker-manifest: %s", err.msg);
    free(name);
    if (sm->o.prefix || cmd_place_kind(pattern) == SK_PLACE_S3) return 0;
    return cmd_usage_error(sm->tool, usage, "--sagemaker-manifest: the shards are local and SageMaker "
                           "reads S3: give --sagemaker-prefix s3://BUCKET/PREFIX/ where they will be "
                           "uploaded");
}
