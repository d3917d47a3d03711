/*
 * part.h - the internal side of --part (lib/part.c): dropping every sample
 * of a pack catalog that belongs to another part, and the output names of
 * a part.  The public calls
 * (sk_part_of, sk_part_parse, sk_part_name) are in shardkit.h.
 */
#ifndef SK_PART_H
#define SK_PART_H

#include "pack/catalog.h"

/* Keeps only the samples whose key falls in part (of parts); c must be
 * grouped (sk_catalog_group) and stays grouped, in the same order. */
int sk_part_filter(sk_catalog *c, int part, int parts, sk_error *err);

/* The output names of a tool run with --part: *pattern_out is pattern with
 * {part} expanded (required when parts > 0); *manifest_out is manifest
 * expanded, or when manifest is NULL and parts > 0 the default
 * "manifest-{part}.json" beside the shards, else NULL.  Both malloc'ed. */
int sk_part_output_names(const char *pattern, const char *manifest, int part, int parts,
                         char **pattern_out, char **manifest_out, sk_error *err);

#endif
