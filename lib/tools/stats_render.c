/*
 * stats_render.c - what the renderers of a stats document share (the
 * terminal table, stats_text.c; the HTML page, stats_html.c): a number
 * read from the document, a byte count for people, and an extension's
 * size histogram read back as counts and labels.
 */
#include "tools/stats.h"

#include <stdio.h>

uint64_t sk_stats_num(const json_t *o, const char *k)
{
    return (uint64_t)json_integer_value(json_object_get(o, k));
}

/* A byte count for people: 1.5 MB (decimal, as S3 and disks count). */
void sk_stats_human(char *out, size_t cap, uint64_t v)
{
    static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB"};
    double x = (double)v;
    int u = 0;
    while (x >= 1000 && u < 5) x /= 1000, u++;
    snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", x, unit[u]);
}

size_t sk_stats_bins(const json_t *hist, uint64_t *count, char (*label)[24], uint64_t *max)
{
    size_t n = json_array_size(hist);
    if (n > SK_STATS_BINS) n = SK_STATS_BINS;
    *max = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(hist, i), *lt = json_object_get(x, "lt");
        count[i] = sk_stats_num(x, "count");
        if (count[i] > *max) *max = count[i];
        if (json_is_integer(lt)) sk_stats_human(label[i], sizeof label[i], (uint64_t)json_integer_value(lt));
        else snprintf(label[i], sizeof label[i], "more");
    }
    return n;
}
