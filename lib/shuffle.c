/*
 * shuffle.c - bounded-memory uniform shuffle through bucket files (see
 * shuffle.h for the method).  A record on disk is its length (8 bytes,
 * little-endian) and its bytes.
 */
#include "shuffle.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_BUCKETS 256
#define MAX_DEPTH 8
#define FILE_BUF (64u << 10)

struct bucket {
    FILE *f;
    uint64_t bytes, count;
};

struct sk_shuffler {
    char *dir;
    uint64_t seed, mem, count;
    uint64_t label_state;
    struct bucket *b;
    size_t nb;
};

uint64_t sk_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t sk_uniform_below(uint64_t *s, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, r;
    do r = sk_splitmix64(s);
    while (r >= limit);
    return r % n;
}

/* A generator state for (seed, a, b): independent streams per bucket. */
static uint64_t stream_state(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t s = seed ^ 0x53485546464c45ULL;
    s = sk_splitmix64(&s) ^ a;
    s = sk_splitmix64(&s) ^ b;
    return sk_splitmix64(&s);
}

static int bucket_open(struct bucket *b, const char *dir, sk_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.shardkit-shuffle-XXXXXX", dir);
    int fd = mkstemp(path);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot create a shuffle bucket: %s", path,
               strerror(errno));
    unlink(path); /* nothing is left behind, whatever happens */
    b->f = fdopen(fd, "w+b");
    if (!b->f) {
        close(fd);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    setvbuf(b->f, NULL, _IOFBF, FILE_BUF);
    return SK_OK;
}

static int bucket_put(struct bucket *b, const char *dir, const void *rec, size_t len,
                      sk_error *err)
{
    unsigned char h[8];
    if (!b->f) SK_GUARD(bucket_open(b, dir, err));
    sk_put_le64(h, len);
    SK_FAIL_IF(fwrite(h, 1, 8, b->f) != 8 || fwrite(rec, 1, len, b->f) != len, err, SK_E_IO,
               "%s: writing a shuffle bucket failed: %s", dir, strerror(errno));
    b->bytes += 8 + len;
    b->count++;
    return SK_OK;
}

static void buckets_free(struct bucket *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i].f) fclose(b[i].f);
    free(b);
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
    s->nb = nb < 1 ? 1 : nb > MAX_BUCKETS ? MAX_BUCKETS : (size_t)nb;
    s->b = calloc(s->nb, sizeof *s->b);
    if (!s->dir || !s->b) {
        sk_shuffler_free(s);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *out = s;
    return SK_OK;
}

void sk_shuffler_free(sk_shuffler *s)
{
    if (!s) return;
    buckets_free(s->b, s->nb);
    free(s->dir);
    free(s);
}

int sk_shuffler_add(sk_shuffler *s, const void *rec, size_t len, sk_error *err)
{
    size_t i = (size_t)sk_uniform_below(&s->label_state, s->nb);
    SK_GUARD(bucket_put(&s->b[i], s->dir, rec, len, err));
    s->count++;
    return SK_OK;
}

uint64_t sk_shuffler_count(const sk_shuffler *s)
{
    return s->count;
}

static int read_at(FILE *f, uint64_t off, void *buf, size_t n, const char *dir, sk_error *err)
{
    int fd = fileno(f);
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

/* Emits bucket b's records in a uniformly random order; id names the
 * bucket's place in the recursion, for its own generator stream. */
static int drain_bucket(sk_shuffler *s, struct bucket *b, int depth, uint64_t id,
                        sk_shuffle_emit emit, void *ctx, sk_error *err)
{
    if (!b->count) return SK_OK;
    SK_FAIL_IF(fflush(b->f) != 0, err, SK_E_IO, "%s: writing a shuffle bucket failed: %s",
               s->dir, strerror(errno));
    uint64_t st = stream_state(s->seed, (uint64_t)depth + 1, id);
    int rc = SK_OK;
    if (b->bytes <= s->mem || b->count == 1 || depth >= MAX_DEPTH) {
        unsigned char *buf = sk_xmalloc(b->bytes ? b->bytes : 1, err);
        struct { uint64_t off, len; } *r = sk_xmalloc(b->count * sizeof *r, err);
        if (!buf || !r) rc = SK_E_NOMEM;
        if (!rc) rc = read_at(b->f, 0, buf, b->bytes, s->dir, err);
        uint64_t off = 0, n = 0;
        while (!rc && off < b->bytes && n < b->count) {
            uint64_t len = sk_get_le64(buf + off);
            if (len > b->bytes - off - 8) {
                rc = sk_error_set(err, SK_E_IO, "%s: a shuffle bucket is damaged", s->dir);
                break;
            }
            r[n].off = off + 8;
            r[n].len = len;
            off += 8 + len;
            n++;
        }
        for (uint64_t i = n; !rc && i > 1; i--) { /* Fisher-Yates */
            uint64_t j = sk_uniform_below(&st, i);
            __typeof__(*r) t = r[i - 1];
            r[i - 1] = r[j];
            r[j] = t;
        }
        for (uint64_t i = 0; !rc && i < n; i++) rc = emit(ctx, buf + r[i].off, r[i].len, err);
        free(buf);
        free(r);
        return rc;
    }
    /* too big for memory: split it into sub-buckets the same way */
    uint64_t fill = s->mem / 2 ? s->mem / 2 : 1, k = (b->bytes + fill - 1) / fill;
    size_t nsub = k < 2 ? 2 : k > MAX_BUCKETS ? MAX_BUCKETS : (size_t)k;
    struct bucket *sub = calloc(nsub, sizeof *sub);
    SK_FAIL_IF(!sub, err, SK_E_NOMEM, "out of memory");
    unsigned char h[8], *rec = NULL;
    size_t cap = 0;
    for (uint64_t off = 0; !rc && off < b->bytes;) {
        if ((rc = read_at(b->f, off, h, 8, s->dir, err))) break;
        uint64_t len = sk_get_le64(h);
        if (len > b->bytes - off - 8) {
            rc = sk_error_set(err, SK_E_IO, "%s: a shuffle bucket is damaged", s->dir);
            break;
        }
        if (len > cap) {
            unsigned char *p = sk_xrealloc(rec, len, err);
            if (!p) { rc = SK_E_NOMEM; break; }
            rec = p;
            cap = len;
        }
        if ((rc = read_at(b->f, off + 8, rec, len, s->dir, err))) break;
        rc = bucket_put(&sub[sk_uniform_below(&st, nsub)], s->dir, rec, len, err);
        off += 8 + len;
    }
    free(rec);
    fclose(b->f); /* its space goes back now */
    b->f = NULL;
    for (size_t i = 0; !rc && i < nsub; i++)
        rc = drain_bucket(s, &sub[i], depth + 1, id * MAX_BUCKETS + i + 1, emit, ctx, err);
    buckets_free(sub, nsub);
    return rc;
}

int sk_shuffler_drain(sk_shuffler *s, sk_shuffle_emit emit, void *ctx, sk_error *err)
{
    for (size_t i = 0; i < s->nb; i++) {
        SK_GUARD(drain_bucket(s, &s->b[i], 0, i, emit, ctx, err));
        if (s->b[i].f) fclose(s->b[i].f);
        s->b[i].f = NULL;
    }
    return SK_OK;
}
