/*
 * keyseen.c - the sample keys of one shard as a streaming reader meets
 * them, to catch a sample whose members are not adjacent (GNU tar of a
 * directory in directory order: a.jpg, b.jpg, a.cls, b.cls).  A reader
 * that groups members by consecutive key would split such a sample in
 * two, silently; `shard` and `cat` refuse instead (docs/shard.md).
 *
 * Keys in rising order (every shard written in key order, shardkit's
 * among them) cannot repeat, so they are only appended to an arena; the
 * first key that is not above the one before builds a hash set over all
 * of them, and from then on each new key is looked up there.  Memory: the
 * keys of one shard, as the indexer holds them.
 */
#include "format/format.h"

#include <stdlib.h>

static int same(const sk_keyseen *k, size_t i, const char *key, size_t len)
{
    return k->len[i] == len && !memcmp(k->arena + k->off[i], key, len);
}

static size_t hash(const char *key, size_t len)
{
    return (size_t)sk_fnv1a64(key, len);
}

/* Inserts key i into the set; *dup = the earlier one equal to it (or SIZE_MAX). */
static void insert(sk_keyseen *k, size_t i, size_t *dup)
{
    const char *key = k->arena + k->off[i];
    size_t h = hash(key, k->len[i]) & (k->scap - 1);
    *dup = SIZE_MAX;
    while (k->slot[h] != SIZE_MAX) {
        if (same(k, k->slot[h], key, k->len[i])) {
            *dup = k->slot[h];
            return;
        }
        h = (h + 1) & (k->scap - 1);
    }
    k->slot[h] = i;
}

static int rehash(sk_keyseen *k, size_t cap, sk_error *err)
{
    size_t *s = sk_xmalloc(cap * sizeof *s, err);
    if (!s) return SK_E_NOMEM;
    free(k->slot);
    k->slot = s;
    k->scap = cap;
    for (size_t i = 0; i < cap; i++) s[i] = SIZE_MAX;
    size_t dup;
    for (size_t i = 0; i < k->n; i++) insert(k, i, &dup); /* repeats were refused, none here */
    return SK_OK;
}

int sk_keyseen_add(sk_keyseen *k, const char *key, size_t len, int *again, sk_error *err)
{
    uint64_t first;
    return sk_keyseen_add_at(k, key, len, 0, again, &first, err);
}

int sk_keyseen_add_at(sk_keyseen *k, const char *key, size_t len, uint64_t pos, int *again,
                      uint64_t *first, sk_error *err)
{
    *again = 0;
    *first = 0;
    if (k->n && !k->unsorted) {
        size_t p = k->n - 1;
        if (sk_key_cmp(k->arena + k->off[p], k->len[p], key, len) < 0) goto append;
        k->unsorted = 1; /* from here on, look each key up */
        size_t cap = 16;
        while (cap < (k->n + 1) * 2) cap *= 2;
        SK_GUARD(rehash(k, cap, err));
    }
    if (k->unsorted) {
        size_t h = hash(key, len) & (k->scap - 1);
        for (; k->slot[h] != SIZE_MAX; h = (h + 1) & (k->scap - 1))
            if (same(k, k->slot[h], key, len)) {
                *again = 1;
                *first = k->pos[k->slot[h]];
                return SK_OK;
            }
    }
append:
    SK_GUARD(sk_grow((void **)&k->arena, &k->acap, k->alen + len + 1, 1, err));
    SK_GUARD(sk_grow((void **)&k->off, &k->ocap, k->n + 1, sizeof *k->off, err));
    SK_GUARD(sk_grow((void **)&k->len, &k->lcap, k->n + 1, sizeof *k->len, err));
    SK_GUARD(sk_grow((void **)&k->pos, &k->pcap, k->n + 1, sizeof *k->pos, err));
    k->pos[k->n] = pos;
    memcpy(k->arena + k->alen, key, len);
    k->off[k->n] = k->alen;
    k->len[k->n] = len;
    k->alen += len;
    k->n++;
    if (k->unsorted) {
        if (k->n * 2 > k->scap) return rehash(k, k->scap * 2, err);
        size_t dup;
        insert(k, k->n - 1, &dup);
    }
    return SK_OK;
}

void sk_keyseen_reset(sk_keyseen *k)
{
    k->n = k->alen = 0;
    k->unsorted = 0;
}

void sk_keyseen_free(sk_keyseen *k)
{
    free(k->arena);
    free(k->off);
    free(k->len);
    free(k->slot);
    free(k->pos);
    memset(k, 0, sizeof *k);
}
