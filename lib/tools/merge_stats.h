/*
 * merge_stats.h - the parts' stats-I.json joined by `index merge`
 * (merge_stats.c).  Internal to libshardkit.
 */
#ifndef SK_TOOLS_MERGE_STATS_H
#define SK_TOOLS_MERGE_STATS_H

#include "core/internal.h"

#include <jansson.h>

/* Reads stats-<part[i]>.json beside each manifests[i] (local or s3://)
 * and sums them into *out; *out is NULL when no part has stats.  Errors
 * name the file: one part without stats while another has them, or
 * stats that are not counts. */
int sk_part_stats_merge(const char *const *manifests, const int *part, size_t n, sk_s3 *s3,
                        json_t **out, sk_error *err);
/* Writes stats as stats.json beside the merged manifest (temporary name
 * then rename, or one upload). */
int sk_part_stats_write(json_t *stats, const char *manifest, sk_s3 *s3, sk_error *err);

#endif
