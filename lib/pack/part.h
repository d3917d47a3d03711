/*
 * part.h - the internal side of --part (lib/part.c): dropping every sample
 * of a pack catalog that belongs to another part, and the output names of
 * a part.  The public calls
 * (sk_part_of, sk_part_parse, sk_part_name, sk_part_output_names) are in
 * shardkit.h.
 */
#ifndef SK_PART_H
#define SK_PART_H

#include "pack/catalog.h"

/* Keeps only the samples whose key falls in part (of parts); c must be
 * grouped (sk_catalog_group) and stays grouped, in the same order. */
int sk_part_filter(sk_catalog *c, int part, int parts, sk_error *err);

/* sk_part_output_names (the output names of a --part run) is in shardkit.h. */

#endif
