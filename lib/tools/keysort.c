/*
 * keysort.c - verify's key records in bounded memory (see keysort.h).
 *
 * Finding duplicate keys across a dataset means sorting every sample's
 * key: held in memory that is about 120 bytes a sample (118 MiB at a
 * million samples), which grows with the dataset.  So records go into one
 * arena up to a budget; a full arena is sorted and written as a run to a
 * scratch file with no name in $TMPDIR (sk_scratch_fd: nothing is left
 * behind, even by a killed run), and the runs are merged through a small heap when read
 * back.  A dataset that fits the budget never touches the disk.  Written
 * by hand: no library in Debian sorts variable-length records externally.
 */
#include "tools/keysort.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEYSORT_DEFAULT_BUDGET (64ULL << 20)
#define KEYSORT_FIELD_MAX (1u << 20) /* a key or extension list: far past any tar name */

struct rechdr { /* in the arena and in a run file: then the key, NUL, exts, NUL */
    uint64_t offset;
    uint32_t len, shard, elen;
};

struct run {
    FILE *f;
    sk_keyrec r;   /* the run's current record, in buf */
    char *buf;
    size_t cap;
};

struct sk_keysort {
    uint64_t budget;
    char *arena;
    size_t used, cap;
    size_t *at; /* each record's place in the arena */
    size_t n, cap_at;
    struct run *runs;
    size_t nruns, cap_runs;
};

int sk_keysort_new(sk_keysort **out, uint64_t budget, sk_error *err)
{
    *out = calloc(1, sizeof **out);
    SK_FAIL_IF(!*out, err, SK_E_NOMEM, "out of memory");
    (*out)->budget = budget ? budget : KEYSORT_DEFAULT_BUDGET;
    return SK_OK;
}

static int rec_cmp(const sk_keyrec *x, const sk_keyrec *y)
{
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->key, y->key, n);
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    if (x->shard != y->shard) return x->shard < y->shard ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static sk_keyrec arena_rec(const char *arena, size_t at)
{
    struct rechdr h;
    memcpy(&h, arena + at, sizeof h);
    const char *key = arena + at + sizeof h;
    return (sk_keyrec){key, h.len, h.shard, h.offset, key + h.len + 1};
}

static int arena_cmp(const void *a, const void *b, void *arena)
{
    sk_keyrec x = arena_rec(arena, *(const size_t *)a), y = arena_rec(arena, *(const size_t *)b);
    return rec_cmp(&x, &y);
}

/* Sorts the arena's records and writes them as one run. */
static int spill(sk_keysort *ks, sk_error *err)
{
    if (!ks->n) return SK_OK;
    qsort_r(ks->at, ks->n, sizeof *ks->at, arena_cmp, ks->arena);
    SK_GUARD(sk_grow((void **)&ks->runs, &ks->cap_runs, ks->nruns + 1, sizeof *ks->runs, err));
    struct run *run = &ks->runs[ks->nruns];
    memset(run, 0, sizeof *run);
    int fd = sk_scratch_fd(NULL, "the key check's scratch file", err);
    if (fd < 0) return err && err->code ? err->code : SK_E_IO;
    run->f = fdopen(fd, "w+");
    if (!run->f) close(fd);
    SK_FAIL_IF(!run->f, err, SK_E_NOMEM, "out of memory");
    ks->nruns++;
    for (size_t i = 0; i < ks->n; i++) {
        sk_keyrec r = arena_rec(ks->arena, ks->at[i]);
        size_t sz = sizeof(struct rechdr) + r.len + 1 + strlen(r.exts) + 1;
        SK_FAIL_IF(fwrite(ks->arena + ks->at[i], 1, sz, run->f) != sz, err, SK_E_IO,
                   "verify: writing the key check's temp file: %s", strerror(errno));
    }
    SK_FAIL_IF(fflush(run->f) || fseeko(run->f, 0, SEEK_SET), err, SK_E_IO,
               "verify: writing the key check's temp file: %s", strerror(errno));
    ks->n = ks->used = 0;
    return SK_OK;
}

int sk_keysort_add(sk_keysort *ks, const sk_keyrec *r, sk_error *err)
{
    size_t elen = strlen(r->exts);
    SK_FAIL_IF(r->len > KEYSORT_FIELD_MAX || elen > KEYSORT_FIELD_MAX, err, SK_E_USAGE,
               "verify: a key record of %u bytes", r->len);
    size_t sz = sizeof(struct rechdr) + r->len + 1 + elen + 1;
    if (ks->n && ks->used + sz + (ks->n + 1) * sizeof *ks->at > ks->budget) SK_GUARD(spill(ks, err));
    SK_GUARD(sk_grow((void **)&ks->arena, &ks->cap, ks->used + sz, 1, err));
    SK_GUARD(sk_grow((void **)&ks->at, &ks->cap_at, ks->n + 1, sizeof *ks->at, err));
    struct rechdr h = {r->offset, r->len, r->shard, (uint32_t)elen};
    char *p = ks->arena + ks->used;
    memcpy(p, &h, sizeof h);
    memcpy(p + sizeof h, r->key, r->len);
    p[sizeof h + r->len] = 0;
    memcpy(p + sizeof h + r->len + 1, r->exts, elen + 1);
    ks->at[ks->n++] = ks->used;
    ks->used += sz;
    return SK_OK;
}

/* The run's next record into run->r; 0 at its end. */
static int run_next(struct run *run, int *have, sk_error *err)
{
    struct rechdr h;
    size_t got = fread(&h, 1, sizeof h, run->f);
    *have = 0;
    if (got == 0 && feof(run->f)) return SK_OK;
    SK_FAIL_IF(got != sizeof h || h.len > KEYSORT_FIELD_MAX || h.elen > KEYSORT_FIELD_MAX, err,
               SK_E_IO, "verify: reading the key check's temp file: %s",
               ferror(run->f) ? strerror(errno) : "short or damaged");
    size_t sz = (size_t)h.len + 1 + h.elen + 1;
    SK_GUARD(sk_grow((void **)&run->buf, &run->cap, sz, 1, err));
    SK_FAIL_IF(fread(run->buf, 1, sz, run->f) != sz, err, SK_E_IO,
               "verify: reading the key check's temp file: short");
    run->r = (sk_keyrec){run->buf, h.len, h.shard, h.offset, run->buf + h.len + 1};
    *have = 1;
    return SK_OK;
}

static int heap_less(const sk_keysort *ks, const size_t *heap, size_t a, size_t b)
{
    return rec_cmp(&ks->runs[heap[a]].r, &ks->runs[heap[b]].r) < 0;
}

static void heap_down(const sk_keysort *ks, size_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && heap_less(ks, heap, l, m)) m = l;
        if (l + 1 < n && heap_less(ks, heap, l + 1, m)) m = l + 1;
        if (m == i) return;
        size_t t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
    }
}

/* Keeps a copy of r in *buf (the run's buffer is reused by its next read). */
static int keep(sk_keyrec *dst, char **buf, size_t *cap, const sk_keyrec *r, sk_error *err)
{
    size_t elen = strlen(r->exts);
    SK_GUARD(sk_grow((void **)buf, cap, (size_t)r->len + 1 + elen + 1, 1, err));
    memcpy(*buf, r->key, r->len);
    (*buf)[r->len] = 0;
    memcpy(*buf + r->len + 1, r->exts, elen + 1);
    *dst = (sk_keyrec){*buf, r->len, r->shard, r->offset, *buf + r->len + 1};
    return SK_OK;
}

int sk_keysort_each(sk_keysort *ks, void (*fn)(void *ctx, const sk_keyrec *prev,
                                                const sk_keyrec *cur),
                    void *ctx, sk_error *err)
{
    if (!ks->nruns) { /* all in memory: one sort, no disk */
        if (ks->n > 1) qsort_r(ks->at, ks->n, sizeof *ks->at, arena_cmp, ks->arena);
        sk_keyrec prev;
        for (size_t i = 0; i < ks->n; i++) {
            sk_keyrec cur = arena_rec(ks->arena, ks->at[i]);
            fn(ctx, i ? &prev : NULL, &cur);
            prev = cur;
        }
        return SK_OK;
    }
    SK_GUARD(spill(ks, err));
    free(ks->arena); /* the merge needs only a record per run */
    free(ks->at);
    ks->arena = NULL;
    ks->at = NULL;
    ks->cap = ks->cap_at = 0;
    size_t *heap = malloc(ks->nruns * sizeof *heap), n = 0;
    SK_FAIL_IF(!heap, err, SK_E_NOMEM, "out of memory");
    int rc = SK_OK, have;
    for (size_t i = 0; i < ks->nruns && !rc; i++)
        if (!(rc = run_next(&ks->runs[i], &have, err)) && have) heap[n++] = i;
    for (size_t i = n / 2; i-- > 0;) heap_down(ks, heap, n, i);
    sk_keyrec prev;
    char *pbuf = NULL;
    size_t pcap = 0;
    int first = 1;
    while (!rc && n) {
        struct run *run = &ks->runs[heap[0]];
        fn(ctx, first ? NULL : &prev, &run->r);
        if ((rc = keep(&prev, &pbuf, &pcap, &run->r, err))) break;
        first = 0;
        if ((rc = run_next(run, &have, err))) break;
        if (!have) heap[0] = heap[--n];
        heap_down(ks, heap, n, 0);
    }
    free(pbuf);
    free(heap);
    return rc;
}

size_t sk_keysort_spills(const sk_keysort *ks)
{
    return ks->nruns;
}

void sk_keysort_free(sk_keysort *ks)
{
    if (!ks) return;
    for (size_t i = 0; i < ks->nruns; i++) {
        if (ks->runs[i].f) fclose(ks->runs[i].f);
        free(ks->runs[i].buf);
    }
    free(ks->runs);
    free(ks->arena);
    free(ks->at);
    free(ks);
}
