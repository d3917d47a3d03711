/*
 * thumbs.c - serve's thumbnail cache: thumbnails by (global ordinal,
 * member), held up to a byte bound; past it the least recently used go.
 * A grid page asks for dozens at once, and paging back and forth asks
 * again, while decoding a JPEG (even DCT-scaled) costs a millisecond or
 * more: the cache makes the second visit free, and the bound keeps a
 * walk through 100 M samples from growing the server.  A hash table of
 * chains over a doubly linked LRU list, under one mutex.
 */
#include "tools/serve.h"

#include <stdlib.h>

#define BUCKETS 4096

struct ent {
    uint64_t ordinal;
    uint32_t member;
    size_t len;
    struct ent *hnext;        /* hash chain */
    struct ent *prev, *next;  /* LRU list, most recent first */
    unsigned char data[];
};

struct sk_thumbs {
    pthread_mutex_t mu;
    struct ent *bucket[BUCKETS];
    struct ent *head, *tail;
    size_t bytes, max, entries;
};

static size_t slot(uint64_t o, uint32_t m)
{
    uint64_t h = (o * 0x9E3779B97F4A7C15ull) ^ m;
    return (size_t)(h >> 40) % BUCKETS;
}

int sk_thumbs_new(sk_thumbs **out, size_t max_bytes, sk_error *err)
{
    sk_thumbs *t = calloc(1, sizeof *t);
    SK_FAIL_IF(!t, err, SK_E_NOMEM, "out of memory");
    pthread_mutex_init(&t->mu, NULL);
    t->max = max_bytes;
    *out = t;
    return SK_OK;
}

static void unlink_lru(sk_thumbs *t, struct ent *e)
{
    if (e->prev) e->prev->next = e->next;
    else t->head = e->next;
    if (e->next) e->next->prev = e->prev;
    else t->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(sk_thumbs *t, struct ent *e)
{
    e->next = t->head;
    if (t->head) t->head->prev = e;
    t->head = e;
    if (!t->tail) t->tail = e;
}

static void drop(sk_thumbs *t, struct ent *e)
{
    struct ent **p = &t->bucket[slot(e->ordinal, e->member)];
    while (*p != e) p = &(*p)->hnext;
    *p = e->hnext;
    unlink_lru(t, e);
    t->bytes -= sizeof *e + e->len;
    t->entries--;
    free(e);
}

void sk_thumbs_free(sk_thumbs *t)
{
    if (!t) return;
    while (t->head) drop(t, t->head);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

unsigned char *sk_thumbs_get(sk_thumbs *t, uint64_t ordinal, uint32_t member, size_t *len)
{
    unsigned char *copy = NULL;
    pthread_mutex_lock(&t->mu);
    for (struct ent *e = t->bucket[slot(ordinal, member)]; e; e = e->hnext)
        if (e->ordinal == ordinal && e->member == member) {
            unlink_lru(t, e);
            push_front(t, e);
            if ((copy = malloc(e->len ? e->len : 1))) {
                memcpy(copy, e->data, e->len);
                *len = e->len;
            }
            break;
        }
    pthread_mutex_unlock(&t->mu);
    return copy;
}

void sk_thumbs_put(sk_thumbs *t, uint64_t ordinal, uint32_t member, const unsigned char *data,
                   size_t len)
{
    if (sizeof(struct ent) + len > t->max) return;
    struct ent *e = malloc(sizeof *e + len);
    if (!e) return; /* a cache: nothing lost but time */
    *e = (struct ent){.ordinal = ordinal, .member = member, .len = len};
    memcpy(e->data, data, len);
    pthread_mutex_lock(&t->mu);
    size_t b = slot(ordinal, member);
    for (struct ent *x = t->bucket[b]; x; x = x->hnext)
        if (x->ordinal == ordinal && x->member == member) { /* another thread was first */
            pthread_mutex_unlock(&t->mu);
            free(e);
            return;
        }
    while (t->tail && t->bytes + sizeof *e + len > t->max) drop(t, t->tail);
    e->hnext = t->bucket[b];
    t->bucket[b] = e;
    push_front(t, e);
    t->bytes += sizeof *e + len;
    t->entries++;
    pthread_mutex_unlock(&t->mu);
}

void sk_thumbs_usage(sk_thumbs *t, size_t *entries, size_t *bytes)
{
    pthread_mutex_lock(&t->mu);
    *entries = t->entries, *bytes = t->bytes;
    pthread_mutex_unlock(&t->mu);
}
