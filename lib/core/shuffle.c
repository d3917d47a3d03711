/*
 * shuffle.c - bounded-memory uniform shuffle through buckets (see shuffle.h
 * for the method).  A record is its length and its weight (8 bytes each,
 * little-endian) and its bytes, the same in memory and on disk.
 *
 * The bucket rules (how many sub-buckets, whether a bucket is split again)
 * count each record as 8 + its weight bytes, the size a record of weight
 * bytes would have had before weights existed: a record that stands for a
 * sample's bytes without holding them (a reference into an input) is
 * shuffled exactly as that sample's bytes would be.
 *
 * Where a bucket lives does not change the output: labels, bucket count
 * and the Fisher-Yates streams depend only on the seed, the budget and the
 * input, so a run that spills writes the same bytes as one that does not.
 * Buckets stay in memory while the total held fits the budget; when it
 * does not, the highest-numbered in-memory bucket moves to a file.  The
 * buckets on disk are therefore always a suffix of the drain order, so by
 * the time a file bucket is mapped, every in-memory one has been emitted
 * and freed: one bucket at a time is held during the drain, never more
 * than the budget in total.
 */
#include "core/shuffle.h"
#include "core/rng.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_BUCKETS 256
#define MAX_DEPTH 8
/* In-memory buckets grow by chunks (no realloc copies of big buffers);
 * a record never spans two chunks, so it can be emitted in place. */
#define CHUNK (4u << 20)
/* Appends to a file bucket are buffered up to this much per bucket, so
 * small samples do not cost a syscall each. */
#define WBUF (1u << 20)
#define MAX_IOV 64
#define RHDR 16 /* a record's length and weight */

struct chunk {
    struct chunk *next;
    size_t fill, cap;
    unsigned char data[];
};

struct bucket {
    struct chunk *head, *tail; /* in memory: the whole bucket */
    int fd;                    /* on disk: the file (-1 until the first write) */
    unsigned char *wbuf;       /* on disk: pending appends */
    size_t wfill;
    uint64_t bytes;  /* what the bucket rules count: 8 + weight per record */
    uint64_t stored; /* what it holds: 16 + length per record */
    uint64_t count;
};

/* A level of buckets: [0, nmem) in memory, [nmem, nb) on disk. */
struct bset {
    struct bucket *b;
    size_t nb, nmem;
};

struct sk_shuffler {
    char *dir;
    uint64_t seed, mem, count;
    uint64_t label_state;
    uint64_t held; /* bytes allocated for chunks (with headers) and write buffers */
    size_t wcap; /* per file bucket */
    size_t ccap; /* chunk size */
    struct bset top;
};

/* A generator state for (seed, a, b): independent streams per bucket. */
static uint64_t stream_state(uint64_t seed, uint64_t a, uint64_t b)
{
    return sk_rng_derive(seed ^ 0x53485546464c45ULL, a, b);
}

static int bset_init(struct bset *set, size_t nb, sk_error *err)
{
    set->b = calloc(nb, sizeof *set->b);
    SK_FAIL_IF(!set->b, err, SK_E_NOMEM, "out of memory");
    set->nb = set->nmem = nb;
    for (size_t i = 0; i < nb; i++) set->b[i].fd = -1;
    return SK_OK;
}

static void bucket_release(sk_shuffler *s, struct bucket *b)
{
    for (struct chunk *c = b->head, *n; c; c = n) {
        n = c->next;
        s->held -= sizeof *c + c->cap;
        free(c);
    }
    b->head = b->tail = NULL;
    if (b->wbuf) s->held -= s->wcap;
    free(b->wbuf);
    b->wbuf = NULL;
    b->wfill = 0;
    if (b->fd >= 0) close(b->fd);
    b->fd = -1;
}

static void bset_free(sk_shuffler *s, struct bset *set)
{
    for (size_t i = 0; set->b && i < set->nb; i++) bucket_release(s, &set->b[i]);
    free(set->b);
    set->b = NULL;
}

/* Writes all of iov (n entries) at the end of b's file, creating it. */
static int bucket_writev(sk_shuffler *s, struct bucket *b, struct iovec *iov, int n,
                         sk_error *err)
{
    if (b->fd < 0 && (b->fd = sk_scratch_fd(s->dir, "a shuffle bucket", err)) < 0)
        return err && err->code ? err->code : SK_E_IO;
    while (n > 0) {
        ssize_t k = writev(b->fd, iov, n > IOV_MAX ? IOV_MAX : n);
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k <= 0, err, SK_E_IO, "%s: writing a shuffle bucket failed: %s", s->dir,
                   k < 0 ? strerror(errno) : "no progress");
        size_t left = (size_t)k;
        for (; n > 0 && left >= iov->iov_len; n--, iov++) left -= iov->iov_len;
        if (n > 0 && left) { /* a short write ended inside this entry */
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return SK_OK;
}

static int bucket_flush(sk_shuffler *s, struct bucket *b, sk_error *err)
{
    if (!b->wfill) return SK_OK;
    struct iovec v = {b->wbuf, b->wfill};
    b->wfill = 0;
    return bucket_writev(s, b, &v, 1, err);
}

/* Moves in-memory bucket b to a file, one writev per MAX_IOV chunks. */
static int bucket_spill(sk_shuffler *s, struct bucket *b, sk_error *err)
{
    struct iovec v[MAX_IOV];
    int n = 0, rc = SK_OK;
    for (struct chunk *c = b->head; c && !rc; c = c->next) {
        v[n].iov_base = c->data;
        v[n++].iov_len = c->fill;
        if (n == MAX_IOV || !c->next) {
            rc = bucket_writev(s, b, v, n, err);
            n = 0;
        }
    }
    for (struct chunk *c = b->head, *nx; c; c = nx) {
        nx = c->next;
        s->held -= sizeof *c + c->cap;
        free(c);
    }
    b->head = b->tail = NULL;
    return rc;
}

/* Spills buckets of set, last first, until need more bytes fit the budget
 * or nothing is left in memory. */
static int make_room(sk_shuffler *s, struct bset *set, uint64_t need, sk_error *err)
{
    while (s->held + need > s->mem && set->nmem > 0)
        SK_GUARD(bucket_spill(s, &set->b[--set->nmem], err));
    return SK_OK;
}

#define HUGE_PAGE (2u << 20)

/* Bytes to allocate for a chunk that holds at least need more: from 2 MiB
 * on, a whole number of huge pages. */
static size_t chunk_bytes(size_t ccap, size_t need)
{
    size_t n = sizeof(struct chunk) + (need > ccap ? need : ccap);
    return n < HUGE_PAGE ? n : (n + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
}

/* A chunk of 2 MiB or more is 2 MiB-aligned and marked for transparent
 * huge pages: filling the budget then takes a few hundred page faults
 * instead of tens of thousands (a fifth of the scatter's system time). */
static struct chunk *chunk_alloc(size_t n, sk_error *err)
{
    struct chunk *c = n < HUGE_PAGE ? malloc(n) : aligned_alloc(HUGE_PAGE, n);
    if (!c) {
        sk_error_set(err, SK_E_NOMEM, "out of memory");
        return NULL;
    }
    if (n >= HUGE_PAGE) madvise(c, n, MADV_HUGEPAGE); /* a hint: failure changes nothing */
    c->next = NULL;
    c->fill = 0;
    c->cap = n - sizeof *c;
    return c;
}

/* Appends the record made of iov[1..n) (iov[0] is left for the length
 * and weight header, len is the record's size) to bucket i of set. */
static int put(sk_shuffler *s, struct bset *set, size_t i, struct iovec *iov, int n, size_t len,
               uint64_t weight, sk_error *err)
{
    struct bucket *b = &set->b[i];
    unsigned char h[RHDR];
    size_t need = RHDR + len;
    sk_put_le64(h, len);
    sk_put_le64(h + 8, weight);
    iov[0].iov_base = h;
    iov[0].iov_len = RHDR;
    b->bytes += 8 + weight;
    b->stored += need;
    b->count++;
    if (i < set->nmem && !(b->tail && b->tail->cap - b->tail->fill >= need)) {
        size_t bytes = chunk_bytes(s->ccap, need);
        SK_GUARD(make_room(s, set, bytes, err));
        if (i < set->nmem) {
            struct chunk *c = chunk_alloc(bytes, err);
            if (!c) return SK_E_NOMEM;
            s->held += bytes;
            if (b->tail) b->tail->next = c;
            else b->head = c;
            b->tail = c;
        }
    }
    unsigned char *dst = NULL;
    if (i < set->nmem) {
        dst = b->tail->data + b->tail->fill;
        b->tail->fill += need;
    } else if (need <= s->wcap) {
        if (b->wfill + need > s->wcap) SK_GUARD(bucket_flush(s, b, err));
        if (!b->wbuf) {
            SK_GUARD(make_room(s, set, s->wcap, err));
            if (s->held + s->wcap <= s->mem && (b->wbuf = malloc(s->wcap)))
                s->held += s->wcap;
        }
        if (b->wbuf) {
            dst = b->wbuf + b->wfill;
            b->wfill += need;
        }
    }
    if (dst) {
        for (int k = 0; k < n; k++) {
            memcpy(dst, iov[k].iov_base, iov[k].iov_len);
            dst += iov[k].iov_len;
        }
        return SK_OK;
    }
    /* a large record (or no room for a buffer): straight from the caller */
    SK_GUARD(bucket_flush(s, b, err));
    return bucket_writev(s, b, iov, n, err);
}

int sk_shuffler_new(sk_shuffler **out, const char *tmp_dir, uint64_t seed, uint64_t mem,
                    uint64_t bytes_hint, sk_error *err)
{
    sk_shuffler *s = calloc(1, sizeof *s);
    if (!tmp_dir || !*tmp_dir) tmp_dir = getenv("TMPDIR");
    if (!tmp_dir || !*tmp_dir) tmp_dir = "/tmp";
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    s->dir = strdup(tmp_dir);
    s->seed = seed;
    s->mem = mem ? mem : (256u << 20);
    s->label_state = stream_state(seed, 0, 0);
    uint64_t fill = s->mem / 2 ? s->mem / 2 : 1;
    uint64_t nb = bytes_hint ? (bytes_hint + fill - 1) / fill : 64;
    nb = nb < 1 ? 1 : nb > MAX_BUCKETS ? MAX_BUCKETS : nb;
    /* write buffers of all buckets together take at most half the budget */
    uint64_t w = s->mem / (2 * nb);
    s->wcap = (size_t)(w < WBUF ? w : WBUF);
    /* small budgets get small chunks, so a few buckets can still stay in memory */
    s->ccap = (size_t)(w < CHUNK ? (w ? w : 1) : CHUNK - sizeof(struct chunk));
    if (!s->dir || bset_init(&s->top, (size_t)nb, err)) {
        sk_shuffler_free(s);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *out = s;
    return SK_OK;
}

void sk_shuffler_free(sk_shuffler *s)
{
    if (!s) return;
    bset_free(s, &s->top);
    free(s->dir);
    free(s);
}

int sk_shuffler_addw(sk_shuffler *s, const struct iovec *iov, int n, uint64_t weight,
                     sk_error *err)
{
    struct iovec v[MAX_IOV + 1];
    size_t len = 0;
    SK_FAIL_IF(n < 0 || n > MAX_IOV, err, SK_E_USAGE, "too many pieces for one shuffle record");
    for (int k = 0; k < n; k++) {
        v[k + 1] = iov[k];
        len += iov[k].iov_len;
    }
    size_t i = (size_t)sk_uniform_below(&s->label_state, s->top.nb);
    SK_GUARD(put(s, &s->top, i, v, n + 1, len, weight ? weight : len, err));
    s->count++;
    return SK_OK;
}

int sk_shuffler_addv(sk_shuffler *s, const struct iovec *iov, int n, sk_error *err)
{
    return sk_shuffler_addw(s, iov, n, 0, err);
}

int sk_shuffler_add(sk_shuffler *s, const void *rec, size_t len, sk_error *err)
{
    struct iovec v = {(void *)rec, len};
    return sk_shuffler_addv(s, &v, 1, err);
}

uint64_t sk_shuffler_count(const sk_shuffler *s)
{
    return s->count;
}

static int read_at(int fd, uint64_t off, void *buf, size_t n, const char *dir, sk_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k <= 0, err, SK_E_IO, "%s: reading a shuffle bucket failed: %s", dir,
                   k < 0 ? strerror(errno) : "short read");
        got += (size_t)k;
    }
    return SK_OK;
}

struct rec {
    const unsigned char *p;
    uint64_t len, weight;
};

/* Indexes the records of one contiguous run of bucket bytes. */
static int index_run(const unsigned char *p, uint64_t n, struct rec *r, uint64_t *nr,
                     uint64_t max, const char *dir, sk_error *err)
{
    for (uint64_t off = 0; off < n;) {
        SK_FAIL_IF(*nr >= max || n - off < RHDR || sk_get_le64(p + off) > n - off - RHDR, err,
                   SK_E_IO, "%s: a shuffle bucket is damaged", dir);
        uint64_t len = sk_get_le64(p + off);
        r[*nr].p = p + off + RHDR;
        r[*nr].len = len;
        r[*nr].weight = sk_get_le64(p + off + 8);
        ++*nr;
        off += RHDR + len;
    }
    return SK_OK;
}

static int drain_set(sk_shuffler *s, struct bset *set, int depth, uint64_t base,
                     sk_shuffle_emit emit, void *ctx, sk_error *err);

/* Emits bucket b's records in a uniformly random order; id names the
 * bucket's place in the recursion, for its own generator stream. */
static int drain_bucket(sk_shuffler *s, struct bucket *b, int in_mem, int depth, uint64_t id,
                        sk_shuffle_emit emit, void *ctx, sk_error *err)
{
    if (!b->count) return SK_OK;
    uint64_t st = stream_state(s->seed, (uint64_t)depth + 1, id);
    int rc = SK_OK;
    if (!in_mem) {
        rc = bucket_flush(s, b, err);
        if (b->wbuf) s->held -= s->wcap;
        free(b->wbuf);
        b->wbuf = NULL;
        if (rc) return rc;
    }
    /* the same rule whether or not the bucket was spilled, so the output
     * does not depend on it (a bucket in memory is above the budget only
     * by the weight of references) */
    if (b->bytes <= s->mem || b->count == 1 || depth >= MAX_DEPTH) {
        struct rec *r = sk_xmalloc(b->count * sizeof *r, err);
        if (!r) return SK_E_NOMEM;
        uint64_t n = 0;
        void *map = MAP_FAILED;
        if (in_mem) {
            for (struct chunk *c = b->head; c && !rc; c = c->next)
                rc = index_run(c->data, c->fill, r, &n, b->count, s->dir, err);
        } else {
            /* mapped, not read: the records are emitted straight from the
             * page cache, with no copy into a buffer of ours */
            map = mmap(NULL, (size_t)b->stored, PROT_READ, MAP_PRIVATE | MAP_POPULATE, b->fd, 0);
            if (map == MAP_FAILED)
                rc = sk_error_set(err, SK_E_IO, "%s: cannot map a shuffle bucket: %s", s->dir,
                                  strerror(errno));
            else
                rc = index_run(map, b->stored, r, &n, b->count, s->dir, err);
        }
        if (!rc && n != b->count)
            rc = sk_error_set(err, SK_E_IO, "%s: a shuffle bucket is damaged", s->dir);
        for (uint64_t i = n; !rc && i > 1; i--) { /* Fisher-Yates */
            uint64_t j = sk_uniform_below(&st, i);
            struct rec t = r[i - 1];
            r[i - 1] = r[j];
            r[j] = t;
        }
        for (uint64_t i = 0; !rc && i < n; i++) rc = emit(ctx, r[i].p, (size_t)r[i].len, err);
        if (map != MAP_FAILED) munmap(map, (size_t)b->stored);
        free(r);
        bucket_release(s, b);
        return rc;
    }
    /* too big for memory (a file, or references that stand for more than
     * the budget): split it into sub-buckets the same way, reading a file
     * in pieces so it is never held whole */
    uint64_t fill = s->mem / 2 ? s->mem / 2 : 1, k = (b->bytes + fill - 1) / fill;
    size_t nsub = k < 2 ? 2 : k > MAX_BUCKETS ? MAX_BUCKETS : (size_t)k;
    struct bset sub;
    SK_GUARD(bset_init(&sub, nsub, err));
    unsigned char h[RHDR], *rec = NULL;
    size_t cap = 0;
    for (struct chunk *c = in_mem ? b->head : NULL; c && !rc; c = c->next)
        for (size_t off = 0; !rc && off < c->fill;) {
            if (c->fill - off < RHDR || sk_get_le64(c->data + off) > c->fill - off - RHDR) {
                rc = sk_error_set(err, SK_E_IO, "%s: a shuffle bucket is damaged", s->dir);
                break;
            }
            size_t len = (size_t)sk_get_le64(c->data + off);
            struct iovec v[2] = {{0}, {c->data + off + RHDR, len}};
            rc = put(s, &sub, (size_t)sk_uniform_below(&st, nsub), v, 2, len,
                     sk_get_le64(c->data + off + 8), err);
            off += RHDR + len;
        }
    for (uint64_t off = 0; !in_mem && !rc && off < b->stored;) {
        if ((rc = read_at(b->fd, off, h, RHDR, s->dir, err))) break;
        uint64_t len = sk_get_le64(h);
        if (b->stored - off < RHDR || len > b->stored - off - RHDR) {
            rc = sk_error_set(err, SK_E_IO, "%s: a shuffle bucket is damaged", s->dir);
            break;
        }
        if (len > cap) {
            unsigned char *p = sk_xrealloc(rec, len, err);
            if (!p) { rc = SK_E_NOMEM; break; }
            rec = p;
            cap = len;
        }
        if ((rc = read_at(b->fd, off + RHDR, rec, len, s->dir, err))) break;
        struct iovec v[2] = {{0}, {rec, len}};
        rc = put(s, &sub, (size_t)sk_uniform_below(&st, nsub), v, 2, len, sk_get_le64(h + 8), err);
        off += RHDR + len;
    }
    free(rec);
    bucket_release(s, b); /* its space goes back now */
    if (!rc) rc = drain_set(s, &sub, depth + 1, id * MAX_BUCKETS + 1, emit, ctx, err);
    bset_free(s, &sub);
    return rc;
}

/* Bucket i of set has id base + i. */
static int drain_set(sk_shuffler *s, struct bset *set, int depth, uint64_t base,
                     sk_shuffle_emit emit, void *ctx, sk_error *err)
{
    /* the write buffers go first, so that mapping a file bucket later
     * does not come on top of them */
    if (set->nmem < set->nb)
        for (size_t i = set->nmem; i < set->nb; i++) {
            struct bucket *b = &set->b[i];
            SK_GUARD(bucket_flush(s, b, err));
            if (b->wbuf) s->held -= s->wcap;
            free(b->wbuf);
            b->wbuf = NULL;
        }
    for (size_t i = 0; i < set->nb; i++)
        SK_GUARD(drain_bucket(s, &set->b[i], i < set->nmem, depth, base + i, emit, ctx, err));
    return SK_OK;
}

int sk_shuffler_drain(sk_shuffler *s, sk_shuffle_emit emit, void *ctx, sk_error *err)
{
    return drain_set(s, &s->top, 0, 0, emit, ctx, err);
}
