/*
 * keyset.h - the keys a sample writer has written in this run, so that a
 * key given again after other samples (a, b, a) is refused as pack's
 * output never holds it: two samples with one key make a lookup by key
 * ambiguous.  Internal.
 *
 * Memory: 16 bytes a sample (a 64-bit hash in an open-addressed table at
 * most half full), not the keys.  While keys arrive in increasing bytewise
 * order (as pack writes them) a repeat is impossible and the table is not
 * consulted, so the check is exact; after the first key out of order a
 * key whose hash an earlier key shares is refused as a repeat (for 10^8
 * keys, about one run in 3,700 would see such a false refusal).
 */
#ifndef SK_KEYSET_H
#define SK_KEYSET_H

#include "core/internal.h"

typedef struct {
    uint64_t *slot;   /* 0 = empty; a hash of 0 is stored as 1 */
    size_t cap, n;    /* cap: a power of two, or 0 before the first key */
    int unordered;    /* a key came after a greater one */
    char *last;       /* the previous key, for the order check (while ordered) */
    size_t last_len, last_cap;
} sk_keyset;

/* *seen = 1 when key was (by the rule above) written before; else records
 * it (SK_E_NOMEM when the table cannot grow).  Nothing changes when
 * *seen is set. */
int sk_keyset_check(sk_keyset *s, const char *key, size_t len, int *seen, sk_error *err);
/* Records key after sk_keyset_check said it was new and the sample was
 * written. */
int sk_keyset_add(sk_keyset *s, const char *key, size_t len, sk_error *err);
void sk_keyset_free(sk_keyset *s);

#endif
