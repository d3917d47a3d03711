/*
 * keyset.c - the run's keys as 64-bit hashes in an open-addressed table,
 * with an exact shortcut for keys in increasing order (see keyset.h).
 */
#include "pack/keyset.h"
#include "core/rng.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t key_hash(const char *key, size_t len)
{
    uint64_t h = sk_fnv1a64(key, len);
    h = sk_splitmix64(&h); /* FNV's low bits are weak for a power-of-two table */
    return h ? h : 1;
}

static int bytewise_after(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = memcmp(a, b, n);
    return c > 0 || (c == 0 && al > bl);
}

static int in_table(const sk_keyset *s, uint64_t h)
{
    if (!s->cap) return 0;
    for (size_t i = (size_t)h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        if (!s->slot[i]) return 0;
        if (s->slot[i] == h) return 1;
    }
}

static void put(uint64_t *slot, size_t cap, uint64_t h)
{
    size_t i = (size_t)h & (cap - 1);
    while (slot[i] && slot[i] != h) i = (i + 1) & (cap - 1);
    slot[i] = h;
}

int sk_keyset_check(sk_keyset *s, const char *key, size_t len, int *seen, sk_error *err)
{
    (void)err;
    *seen = 0;
    /* in order so far and after the last key: new for certain */
    if (!s->unordered && (!s->n || bytewise_after(key, len, s->last, s->last_len))) return SK_OK;
    *seen = in_table(s, key_hash(key, len));
    return SK_OK;
}

int sk_keyset_add(sk_keyset *s, const char *key, size_t len, sk_error *err)
{
    if (s->n + 1 > s->cap / 2) {
        size_t cap = s->cap ? 2 * s->cap : 1024;
        SK_FAIL_IF(cap > SIZE_MAX / sizeof *s->slot, err, SK_E_NOMEM, "sample writer: too many keys");
        uint64_t *t = calloc(cap, sizeof *t);
        SK_FAIL_IF(!t, err, SK_E_NOMEM, "sample writer: out of memory for the key table (%zu keys)",
                   s->n);
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i]) put(t, cap, s->slot[i]);
        free(s->slot);
        s->slot = t;
        s->cap = cap;
    }
    if (!s->unordered) { /* the last key matters only while the order holds */
        if (s->n && !bytewise_after(key, len, s->last, s->last_len)) {
            s->unordered = 1;
        } else {
            if (len > s->last_cap) {
                char *l = realloc(s->last, len);
                SK_FAIL_IF(!l, err, SK_E_NOMEM, "out of memory");
                s->last = l;
                s->last_cap = len;
            }
            memcpy(s->last, key, len);
            s->last_len = len;
        }
    }
    put(s->slot, s->cap, key_hash(key, len));
    s->n++;
    return SK_OK;
}

void sk_keyset_free(sk_keyset *s)
{
    free(s->slot);
    free(s->last);
    memset(s, 0, sizeof *s);
}
