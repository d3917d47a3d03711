/*
 * sample_write.c - drives the streaming sample writer (sk_sample_writer_*)
 * for tests/e2e/writer_api.sh: the same deterministic samples either go
 * from memory through the writer, or are written out as files, so that
 * `shardkit pack` of those files can be compared with the writer's output
 * byte for byte.
 *
 *   sample_write [OPTIONS] SEED N PATTERN      write N samples through the API
 *   sample_write [OPTIONS] --files DIR SEED N  the same samples as files
 *   sample_write --hostile DIR                 every refusal, one line each
 *
 * OPTIONS: --max-size B --max-count N --compress LEVEL --start N --mtime T
 * --big (two members over 4 and 8 MiB) --resume --s3 ENDPOINT (s3:// pattern;
 * credentials from the environment).  The samples: keys in bytewise order
 * (as pack sorts them), in and out of directories, long (pax), UTF-8 and
 * non-UTF-8 names, a directory with a dot in it, one to five members each, handed
 * over in a scrambled order with an uppercase extension among them.
 * Exit status: 0 success, 1 error (message on stderr), 2 usage.
 */
#include "shardkit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rng;
static uint64_t next(void)
{
    uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

struct sample {
    char key[400];
    size_t n;
    sk_sample_member m[5];
};

static const char *exts[] = {"jpg", "cls", "json", "seg.png", "TXT"};

static int cmp_key(const void *a, const void *b)
{
    return strcmp(((const struct sample *)a)->key, ((const struct sample *)b)->key);
}

static struct sample *make(uint64_t seed, size_t n, int big)
{
    struct sample *s = calloc(n ? n : 1, sizeof *s);
    if (!s) return NULL;
    rng = seed;
    for (size_t i = 0; i < n; i++) {
        char dir[64] = "", base[300];
        if (i % 4) snprintf(dir, sizeof dir, "c%02zu/", i % 5);
        if (i % 13 == 5) snprintf(dir, sizeof dir, "v1.2/deep/");
        if (i % 7 == 3) /* a basename past ustar's 100 bytes: a pax header */
            snprintf(base, sizeof base, "long-%06zu-%0120d", i, 0);
        else if (i % 11 == 4)
            snprintf(base, sizeof base, "\xc3\xa9t\xc3\xa9-%06zu", i);
        else if (i % 17 == 8) /* not UTF-8: pax hdrcharset=BINARY */
            snprintf(base, sizeof base, "bin\xff-%06zu", i);
        else
            snprintf(base, sizeof base, "s%06zu", i);
        snprintf(s[i].key, sizeof s[i].key, "%s%s", dir, base);
        /* a non-empty subset of the extensions, in a scrambled order */
        unsigned mask = (unsigned)(next() % 31) + 1;
        size_t k = 0;
        for (int e = 4; e >= 0; e--)
            if (mask & (1u << e)) s[i].m[k++].ext = exts[e];
        for (size_t j = k; j > 1; j--) {
            size_t r = (size_t)(next() % j);
            sk_sample_member t = s[i].m[j - 1];
            s[i].m[j - 1] = s[i].m[r];
            s[i].m[r] = t;
        }
        s[i].n = k;
        for (size_t j = 0; j < k; j++) {
            uint64_t size = next() % 5 == 0 ? 0 : next() % 20000;
            if (big && i == 3 && j == 0) size = (5u << 20) + 123;
            if (big && i == n / 2 && j == 0) size = (9u << 20) + 77;
            unsigned char *d = malloc(size ? size : 1);
            if (!d) return NULL;
            /* compressible and not: text runs and noise */
            for (uint64_t b = 0; b < size; b++) d[b] = (b / 64) % 2 ? (unsigned char)next() : (unsigned char)('a' + b % 26);
            s[i].m[j].data = d;
            s[i].m[j].size = size;
        }
    }
    qsort(s, n, sizeof *s, cmp_key);
    return s;
}

static void free_samples(struct sample *s, size_t n)
{
    for (size_t k = 0; k < n; k++)
        for (size_t j = 0; j < s[k].n; j++) free((void *)s[k].m[j].data);
    free(s);
}

static int mkdirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc && errno != EEXIST) return -1;
    }
    return 0;
}

static int write_files(const char *dir, struct sample *s, size_t n)
{
    char path[4200];
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < s[i].n; j++) {
            snprintf(path, sizeof path, "%s/%s.%s", dir, s[i].key, s[i].m[j].ext);
            FILE *f = mkdirs(path) ? NULL : fopen(path, "wb");
            if (!f || fwrite(s[i].m[j].data, 1, s[i].m[j].size, f) != s[i].m[j].size || fclose(f)) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return 1;
            }
        }
    return 0;
}

/* Each hostile call must be refused; prints "refused: MESSAGE" for each. */
static int hostile(const char *dir)
{
    char pattern[4200], longkey[5000];
    snprintf(pattern, sizeof pattern, "%s/h-%%04d.tar", dir);
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    sk_sample_writer *w;
    sk_error err = SK_ERROR_INIT;
    if (sk_sample_writer_open(&w, &o, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    sk_sample_member ok = {"jpg", 0, "x", 1}, slash = {"a/b", 0, "x", 1}, empty = {"", 0, "x", 1};
    sk_sample_member dup[2] = {{"jpg", 0, "x", 1}, {"JPG", 0, "y", 1}};
    memset(longkey, 'k', 4095);
    for (int i = 200; i < 4095; i += 201) longkey[i] = '/';
    longkey[4095] = 0;
    char longpart[300];
    memset(longpart, 'p', 299);
    longpart[299] = 0;
    struct { const char *key; size_t kl; const sk_sample_member *m; size_t n; } cases[] = {
        {"../escape", 0, &ok, 1}, {"a/../b", 0, &ok, 1}, {"/abs", 0, &ok, 1},
        {"a//b", 0, &ok, 1},      {"a/b/", 0, &ok, 1},    {"dot.key", 0, &ok, 1},
        {"nul\0key", 7, &ok, 1},  {"k", 0, &slash, 1},    {"k", 0, &empty, 1},
        {"k", 0, dup, 2},         {longkey, 0, &ok, 1},   {"k", 0, &ok, 0},
        {longpart, 0, &ok, 1},
    };
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        err = (sk_error)SK_ERROR_INIT;
        int rc = sk_sample_writer_add(w, cases[i].key, cases[i].kl, cases[i].m, cases[i].n, &err);
        if (rc != SK_E_INPUT) {
            fprintf(stderr, "case %zu: expected SK_E_INPUT, got %d (%s)\n", i, rc, err.msg);
            bad = 1;
        } else {
            printf("refused: %s\n", err.msg);
        }
    }
    /* still usable after refusals; the same key twice in a row is refused */
    if (sk_sample_writer_add(w, "good", 0, &ok, 1, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    if (sk_sample_writer_add(w, "good", 0, &ok, 1, &err) != SK_E_INPUT) bad = 1;
    else printf("refused: %s\n", err.msg);
    if (sk_sample_writer_finish(w, NULL, &err)) return fprintf(stderr, "%s\n", err.msg), 1;
    if (sk_sample_writer_add(w, "late", 0, &ok, 1, &err) != SK_E_USAGE) bad = 1;
    else printf("refused: %s\n", err.msg);
    if (sk_sample_writer_finish(w, NULL, &err) != SK_E_USAGE) bad = 1;
    else printf("refused: %s\n", err.msg);
    sk_sample_writer_close(w);
    return bad;
}

int main(int argc, char **argv)
{
    sk_pack_options o;
    sk_pack_options_init(&o);
    const char *files = NULL, *endpoint = NULL;
    int big = 0, i = 1;
    for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--big")) { big = 1; continue; }
        if (!strcmp(a, "--resume")) { o.resume = 1; continue; }
        if (!strcmp(a, "--hostile") && v) return hostile(v);
        if (!v) break;
        i++;
        if (!strcmp(a, "--max-size")) o.max_size = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--max-count")) o.max_count = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--compress")) o.compress_level = atoi(v);
        else if (!strcmp(a, "--start")) o.start = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--mtime")) o.mtime = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--files")) files = v;
        else if (!strcmp(a, "--s3")) endpoint = v;
        else return fprintf(stderr, "sample_write: unknown option %s\n", a), 2;
    }
    if (argc - i != (files ? 2 : 3)) {
        fprintf(stderr, "usage: sample_write [OPTIONS] SEED N PATTERN | --files DIR SEED N | "
                        "--hostile DIR\n");
        return 2;
    }
    size_t n = strtoull(argv[i + 1], NULL, 10);
    struct sample *s = make(strtoull(argv[i], NULL, 10), n, big);
    if (!s) return fprintf(stderr, "out of memory\n"), 1;
    if (files) {
        int frc = write_files(files, s, n);
        free_samples(s, n);
        return frc;
    }
    o.pattern = argv[i + 2];
    sk_error err = SK_ERROR_INIT;
    sk_sample_writer *w = NULL;
    sk_s3 *s3 = NULL;
    sk_pack_stats st;
    int rc = sk_sample_writer_open(&w, &o, &err);
    if (!rc && endpoint) {
        sk_s3_config cfg = SK_S3_CONFIG_INIT;
        cfg.endpoint_url = endpoint;
        cfg.path_style = 1;
        if (!(rc = sk_s3_new(&s3, &cfg, &err))) rc = sk_sample_writer_set_s3(w, s3, 0, &err);
    }
    for (size_t k = 0; k < n && !rc; k++) rc = sk_sample_writer_add(w, s[k].key, 0, s[k].m, s[k].n, &err);
    if (!rc) rc = sk_sample_writer_finish(w, &st, &err);
    sk_sample_writer_close(w);
    sk_s3_free(s3);
    free_samples(s, n);
    if (rc) return fprintf(stderr, "sample_write: %s\n", err.msg), 1;
    printf("samples=%llu shards=%llu resumed=%llu bytes=%llu\n", (unsigned long long)st.samples,
           (unsigned long long)st.shards, (unsigned long long)st.shards_resumed,
           (unsigned long long)st.output_bytes);
    return 0;
}
