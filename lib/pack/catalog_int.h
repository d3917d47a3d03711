/*
 * catalog_int.h - what the parts of the catalog share and nothing else
 * uses: catalog.c (names, items, sources, archives), catalog_walk.c
 * (directory trees and file lists) and catalog_group.c (sizing, sorting,
 * grouping).  Internal to lib/pack.
 */
#ifndef SK_CATALOG_INT_H
#define SK_CATALOG_INT_H

#include "pack/catalog.h"

struct sk_swalk;

/* Warns through the catalog's callback and counts one skipped input. */
void sk_catalog_warn(sk_catalog *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The id of directory string d[0..n) ("" or "a/b/"), interned. */
int sk_catalog_intern_dir(sk_catalog *c, const char *d, size_t n, uint32_t *id, sk_error *err);
/* Adds the file "dir + base" (dir interned as dir_id); a name pack cannot
 * use is a problem (sk_catalog_problem). */
int sk_catalog_add_item(sk_catalog *c, uint16_t src, uint32_t dir_id, const char *base,
                        uint64_t size, uint64_t spool_off, sk_error *err);
/* Cleans a member name into out (no "..", "." or empty components, no
 * leading '/'); -1 when nothing usable is left or it does not fit. */
int sk_catalog_clean_path(const char *in, char *out, size_t cap);
/* Compares "a1" + "a2" with "b1" + "b2" bytewise. */
int sk_catalog_cmp2(const char *a1, size_t an1, const char *a2, size_t an2, const char *b1,
                    size_t bn1, const char *b2, size_t bn2);
/* Frees a directory walk in key order (catalog_walk.c); NULL is fine. */
void sk_catalog_swalk_free(sk_catalog *c, uint16_t src, struct sk_swalk *w);

#endif
