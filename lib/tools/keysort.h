/*
 * keysort.h - every sample's key record of a verify run, sorted in
 * bounded memory, for the duplicate and split checks across a dataset.
 * Internal to libshardkit.
 */
#ifndef SK_KEYSORT_H
#define SK_KEYSORT_H

#include "core/internal.h"

#include <stdint.h>

typedef struct sk_keyrec {
    const char *key;
    uint32_t len;
    uint32_t shard;
    uint64_t offset;
    const char *exts; /* the sample's extensions, ",a,b,", NUL-terminated */
} sk_keyrec;

typedef struct sk_keysort sk_keysort;

/* budget: bytes of records held before a sorted run goes to a temp file
 * (0: 64 MiB). */
int sk_keysort_new(sk_keysort **out, uint64_t budget, sk_error *err);
int sk_keysort_add(sk_keysort *ks, const sk_keyrec *r, sk_error *err);
/* Calls fn with each record in (key, shard, offset) order and the one
 * before it (NULL for the first).  Once only. */
int sk_keysort_each(sk_keysort *ks, void (*fn)(void *ctx, const sk_keyrec *prev,
                                                const sk_keyrec *cur),
                    void *ctx, sk_error *err);
/* How many sorted runs went to temp files (0: all fit the budget). */
size_t sk_keysort_spills(const sk_keysort *ks);
void sk_keysort_free(sk_keysort *ks);

#endif
