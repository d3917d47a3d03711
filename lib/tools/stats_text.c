/*
 * stats_text.c - a stats document (stats.c) as a table for a terminal:
 * totals, shard balance, extensions with their member sizes, a small
 * text histogram per extension, missing extensions, keys, images and
 * JSON keys.  Names from the dataset are printed with control bytes
 * replaced by '?', so a key cannot drive the terminal.
 */
#include "tools/stats.h"

#include <stdio.h>

/* Untrusted text, terminal-safe. */
static void safe(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
    }
}

static void bar(FILE *f, uint64_t v, uint64_t max, int width)
{
    int n = max ? (int)((v * (uint64_t)width + max - 1) / max) : 0;
    for (int i = 0; i < width; i++) fputc(i < n ? '#' : ' ', f);
}

static void balance(FILE *f, const json_t *doc)
{
    const json_t *bal = json_object_get(doc, "balance");
    const json_t *bs = json_object_get(bal, "samples"), *bb = json_object_get(bal, "bytes");
    fprintf(f, "\nshard balance        min       median          max\n");
    fprintf(f, "  samples   %12llu %12llu %12llu\n", (unsigned long long)sk_stats_num(bs, "min"),
            (unsigned long long)sk_stats_num(bs, "median"), (unsigned long long)sk_stats_num(bs, "max"));
    fprintf(f, "  bytes     %12llu %12llu %12llu\n", (unsigned long long)sk_stats_num(bb, "min"),
            (unsigned long long)sk_stats_num(bb, "median"), (unsigned long long)sk_stats_num(bb, "max"));
    fprintf(f, "  %llu shard(s) off the median by more than 10%%\n",
            (unsigned long long)sk_stats_num(bal, "off_count"));
    size_t i;
    json_t *o;
    json_array_foreach(json_object_get(bal, "off"), i, o) {
        if (i == 10) {
            fprintf(f, "    ...\n");
            break;
        }
        const char *u = json_string_value(json_object_get(o, "url"));
        fprintf(f, "    ");
        safe(f, u ? u : "", u ? strlen(u) : 0);
        fprintf(f, ": %llu samples (%+.1f%%), %llu bytes (%+.1f%%)%s\n",
                (unsigned long long)sk_stats_num(o, "samples"),
                json_real_value(json_object_get(o, "samples_off_pct")),
                (unsigned long long)sk_stats_num(o, "bytes"),
                json_real_value(json_object_get(o, "bytes_off_pct")),
                json_is_true(json_object_get(o, "last")) ? " (the last shard)" : "");
    }
}

static void extensions(FILE *f, const json_t *doc, uint64_t samples)
{
    const json_t *exts = json_object_get(doc, "extensions");
    fprintf(f, "\n%-12s %10s %8s %12s %9s %9s %9s %9s %9s\n", "extension", "samples", "missing",
            "bytes", "min", "p50", "p90", "p99", "max");
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)exts, k, e) {
        const json_t *sz = json_object_get(e, "size");
        fputs("  ", f);
        safe(f, k, strlen(k));
        fprintf(f, "%*s", strlen(k) < 10 ? (int)(10 - strlen(k)) : 0, "");
        fprintf(f, " %10llu %8llu %12llu %9llu %9llu %9llu %9llu %9llu\n",
                (unsigned long long)sk_stats_num(e, "samples"),
                (unsigned long long)(samples - sk_stats_num(e, "samples")),
                (unsigned long long)sk_stats_num(e, "bytes"), (unsigned long long)sk_stats_num(sz, "min"),
                (unsigned long long)sk_stats_num(sz, "p50"), (unsigned long long)sk_stats_num(sz, "p90"),
                (unsigned long long)sk_stats_num(sz, "p99"), (unsigned long long)sk_stats_num(sz, "max"));
    }
    json_object_foreach((json_t *)exts, k, e) {
        fprintf(f, "\nmember sizes of .");
        safe(f, k, strlen(k));
        fputc('\n', f);
        uint64_t v[SK_STATS_BINS], max;
        char lab[SK_STATS_BINS][24];
        size_t n = sk_stats_bins(json_object_get(e, "histogram"), v, lab, &max);
        for (size_t i = 0; i < n; i++) {
            fprintf(f, "  < %-9s ", lab[i]);
            bar(f, v[i], max, 40);
            fprintf(f, " %llu\n", (unsigned long long)v[i]);
        }
    }
    const json_t *miss = json_object_get(doc, "missing");
    json_object_foreach((json_t *)miss, k, e) {
        fprintf(f, "\n%llu sample(s) without .", (unsigned long long)sk_stats_num(e, "samples"));
        safe(f, k, strlen(k));
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(e, "examples"), i, x) {
            fputs(i ? ", " : ", e.g. ", f);
            safe(f, json_string_value(x), json_string_length(x));
        }
        fputc('\n', f);
    }
}

static void images(FILE *f, const json_t *im)
{
    fprintf(f, "\nimages: %llu JPEG(s), %llu unreadable; %llu of %llu bytes read (headers)\n",
            (unsigned long long)sk_stats_num(im, "count"), (unsigned long long)sk_stats_num(im, "bad"),
            (unsigned long long)sk_stats_num(im, "bytes_read"), (unsigned long long)sk_stats_num(im, "bytes"));
    const json_t *w = json_object_get(im, "width"), *h = json_object_get(im, "height");
    if (!json_is_object(w)) return;
    fprintf(f, "  %-8s %8s %8s %8s %8s %8s\n", "", "min", "p10", "p50", "p90", "max");
    for (int k = 0; k < 2; k++) {
        const json_t *d = k ? h : w;
        fprintf(f, "  %-8s %8llu %8llu %8llu %8llu %8llu\n", k ? "height" : "width",
                (unsigned long long)sk_stats_num(d, "min"), (unsigned long long)sk_stats_num(d, "p10"),
                (unsigned long long)sk_stats_num(d, "p50"), (unsigned long long)sk_stats_num(d, "p90"),
                (unsigned long long)sk_stats_num(d, "max"));
    }
    fprintf(f, "  aspect ratio (width / height)\n");
    uint64_t max = 0;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(im, "aspect"), i, x)
        max = sk_stats_num(x, "count") > max ? sk_stats_num(x, "count") : max;
    json_array_foreach(json_object_get(im, "aspect"), i, x) {
        const json_t *le = json_object_get(x, "le");
        if (json_is_number(le)) fprintf(f, "    <= %-5.2f ", json_number_value(le));
        else fprintf(f, "    more     ");
        bar(f, sk_stats_num(x, "count"), max, 40);
        fprintf(f, " %llu\n", (unsigned long long)sk_stats_num(x, "count"));
    }
    fprintf(f, "  commonest sizes:");
    json_array_foreach(json_object_get(im, "sizes"), i, x) {
        if (i == 5) break;
        fprintf(f, " %llux%llu (%llu)", (unsigned long long)sk_stats_num(x, "width"),
                (unsigned long long)sk_stats_num(x, "height"), (unsigned long long)sk_stats_num(x, "count"));
    }
    fputc('\n', f);
}

static void jkeys(FILE *f, const json_t *jk)
{
    fprintf(f, "\njson keys: %llu .json member(s), %llu not JSON\n",
            (unsigned long long)sk_stats_num(jk, "members"), (unsigned long long)sk_stats_num(jk, "bad"));
    const char *k, *t;
    json_t *e, *c;
    json_object_foreach(json_object_get(jk, "keys"), k, e) {
        fputs("  ", f);
        safe(f, k, strlen(k));
        fprintf(f, "%*s %10llu ", strlen(k) < 20 ? (int)(20 - strlen(k)) : 0, "",
                (unsigned long long)sk_stats_num(e, "count"));
        json_object_foreach(json_object_get(e, "types"), t, c)
            fprintf(f, " %s %llu", t, (unsigned long long)json_integer_value(c));
        fputc('\n', f);
    }
}

int sk_stats_print(const sk_stats *st, FILE *f, sk_error *err)
{
    const json_t *doc = st->doc, *t = json_object_get(doc, "totals");
    const char *name = json_string_value(json_object_get(doc, "dataset"));
    char hb[32], hd[32];
    sk_stats_human(hb, sizeof hb, sk_stats_num(t, "bytes"));
    sk_stats_human(hd, sizeof hd, sk_stats_num(t, "data_bytes"));
    fprintf(f, "dataset  ");
    safe(f, name ? name : "", name ? strlen(name) : 0);
    fprintf(f, "\nshards %llu, samples %llu, members %llu, bytes %llu (%s; member data %s)\n",
            (unsigned long long)sk_stats_num(t, "shards"), (unsigned long long)sk_stats_num(t, "samples"),
            (unsigned long long)sk_stats_num(t, "members"), (unsigned long long)sk_stats_num(t, "bytes"), hb, hd);
    balance(f, doc);
    extensions(f, doc, sk_stats_num(t, "samples"));
    const json_t *keys = json_object_get(doc, "keys");
    fprintf(f, "\nkeys: %s, %llu duplicate(s)",
            json_is_true(json_object_get(keys, "sorted")) ? "in key order" : "not in key order",
            (unsigned long long)sk_stats_num(keys, "duplicates"));
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(keys, "examples"), i, x) {
        fputs(i ? ", " : ", e.g. ", f);
        safe(f, json_string_value(x), json_string_length(x));
    }
    fputc('\n', f);
    if (json_object_get(doc, "images")) images(f, json_object_get(doc, "images"));
    if (json_object_get(doc, "json_keys")) jkeys(f, json_object_get(doc, "json_keys"));
    if (ferror(f)) return sk_error_set(err, SK_E_IO, "stats: cannot write the table");
    return SK_OK;
}
