/*
 * reshard.c - `shardkit shard`: existing shards in, new shards out.
 *
 * Inputs are byte streams (local files and stdin, or the caller's in_open; s3://
 * objects through one streaming GET each) parsed by libarchive, so any tar
 * dialect, compression filter, zip or 7z works; s3:// outputs stream into
 * multipart uploads (sink_s3.c), no local copy made.  Members group into
 * samples by the WebDataset rule (adjacent members with one key).  A sample is
 * assembled once, directly as the tar bytes it will have in the output
 * (headers, data, padding), so writing it is one writev; with --shuffle it
 * goes into a shuffle bucket instead (shuffle.c: in memory up to
 * --shuffle-mem, else a file) and is written after the scatter pass.
 * Without --shuffle only one sample is ever held in memory.
 *
 * Without filters or image work (--shuffle or not), a plain tar input
 * with a sound index is read through the index instead (direct_input:
 * 2 MiB batches of the file mapped private, or pread once headers must be
 * rewritten; the headers and CRC32Cs checked, no libarchive), each sample
 * written from the batch; plain output goes out in megabyte writes from a
 * second thread (io/outq.c).  With --shuffle such an input's samples go
 * into the buckets as references (input, offset: direct_refs), weighing
 * what their bytes would, and are read when the drain writes them
 * (emit_ref).  Either way the output bytes are the same.
 */
#include "core/internal.h"
#include "pack/part.h"
#include "pack/infiles.h"
#include "pack/pack_out.h"
#include "format/image.h"
#include "io/io.h"
#include "core/shuffle.h"
#include "format/tar.h"
#include "io/writer.h"
#include "io/outq.h"
#include "format/shard_stream.h"

#include "format/libarchive.h"
#include <jansson.h>
#include <pthread.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define IN_BUF (1u << 20)
/* Plain output goes out in writes of about this size: the kernel's write
 * path costs twice as much per byte in 16 KiB writes as in megabytes. */
#define OUT_BUF (2u << 20)
/* The index-driven reader reads this much of a shard per pread. */
#define BATCH (2u << 20)
/* Bytes a reader may hold of one name: a ustar prefix, '/', and name. */
#define PLAIN_NAME (155 + 1 + 100 + 1)

/* ------------------------------------------------------------ input streams */

struct fd_in {
    int fd, own;
    char *name;
};

static int fd_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct fd_in *f = ctx;
    for (;;) {
        ssize_t k = read(f->fd, buf, cap);
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed: %s", f->name, strerror(errno));
        *got = (size_t)k;
        return SK_OK;
    }
}

static void fd_close(void *ctx)
{
    struct fd_in *f = ctx;
    if (f->own) close(f->fd);
    free(f->name);
    free(f);
}

static int default_in_open(void *ctx, sk_in_stream *s, const char *url, sk_error *err)
{
    (void)ctx;
    struct fd_in *f = calloc(1, sizeof *f);
    SK_FAIL_IF(!f, err, SK_E_NOMEM, "out of memory");
    f->name = strdup(strcmp(url, "-") ? url : "stdin");
    if (!strcmp(url, "-")) {
        f->fd = 0;
    } else {
        f->fd = open(url, O_RDONLY | O_CLOEXEC);
        f->own = 1;
    }
    if (f->fd < 0 || !f->name) {
        int e = errno;
        free(f->name);
        free(f);
        return sk_error_set(err, e == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s",
                            url, strerror(e));
    }
    struct stat sb;
    s->size = fstat(f->fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : UINT64_MAX;
    s->ctx = f;
    s->read = fd_read;
    s->close = fd_close;
    return SK_OK;
}


/* An s3:// input: one streaming GET from the first byte to the last (the
 * stream retries a broken transfer from where it stopped). */
static int s3_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    return sk_s3_stream_read(ctx, buf, cap, got, err);
}

static void s3_close(void *ctx)
{
    sk_s3_stream_close(ctx);
}

static int s3_in_open(sk_s3 *s3, sk_in_stream *s, const char *url, sk_error *err)
{
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// input needs an S3 client", url);
    char *bucket = NULL, *key = NULL;
    sk_s3_stream *st = NULL;
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = sk_s3_stream_open(&st, s3, bucket, key, 0, 0, err);
    free(bucket), free(key);
    SK_GUARD(rc);
    *s = (sk_in_stream){.ctx = st, .read = s3_read, .close = s3_close, .size = UINT64_MAX};
    return SK_OK;
}

/* An input's size: stat, or a HEAD for an s3:// one (which also finds a
 * missing object before any shard is written).  UINT64_MAX for stdin and
 * for inputs the caller's in_open reads. */
static int input_size(const sk_shard_options *o, const char *url, uint64_t *size, sk_error *err)
{
    sk_s3 *s3 = o->s3;
    *size = UINT64_MAX;
    if (!strcmp(url, "-") || (o->in_open && !sk_is_s3_url(url))) return SK_OK;
    if (sk_is_s3_url(url)) {
        char *bucket = NULL, *key = NULL;
        sk_s3_object head;
        SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// input needs an S3 client", url);
        SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
        int rc = sk_s3_head(s3, bucket, key, &head, err);
        free(bucket), free(key);
        if (!rc) *size = head.size;
        return rc;
    }
    struct stat sb;
    SK_FAIL_IF(stat(url, &sb) != 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
               "%s: cannot open: %s", url, strerror(errno));
    *size = (uint64_t)sb.st_size;
    return SK_OK;
}

/* ------------------------------------------------------------------ state */

struct memb {
    uint64_t data_off; /* in the sample's tar image */
    uint64_t size;
    uint32_t hlen, crc;
    uint32_t ext_off, ext_len; /* in the sample's ext pool */
};

/* A sample: its key, members, and its tar image. */
struct samp {
    char *key;
    size_t klen, kcap;
    struct memb *m;
    size_t nm, mcap;
    char *exts;
    size_t elen, ecap;
    unsigned char *img;
    size_t len, cap;
    uint32_t crc; /* CRC32C of img[0..len) */
};

/* A read-only view of a sample: a struct samp or a shuffle record. */
struct sview {
    const char *key;
    size_t klen;
    const struct memb *m;
    size_t nm;
    const char *exts;
    const unsigned char *img;
    size_t len;
    uint32_t crc;   /* of img, when has_crc */
    int has_crc;
    int buf;        /* img lies in the output buffer ob[buf] (index-driven input), else -1 */
    size_t elen;    /* bytes of exts (serialize) */
};

/* An output buffer: bytes on their way to the writer (outq.h).  p is
 * heap (the buffer's own memory) or, for index-driven input, a private
 * mapping of the input (map, maplen): then cap == len, nothing is
 * appended to it, and it is unmapped when the buffer is claimed again. */
struct obuf {
    unsigned char *p;
    size_t cap, len;
    uint64_t seq; /* the last range queued from it */
    unsigned char *heap;
    size_t heap_cap;
    void *map;
    size_t maplen;
};

struct keyset { /* --keys: open addressing over key strings */
    char **slot;
    size_t cap, n;
};

typedef struct rs {
    const sk_shard_options *o;
    const char *pattern_tmpl; /* the pattern as given: {part} unexpanded */
    sk_shard_stats st;
    struct timespec t0, last;
    struct keyset keys;
    int to_stdout;
    uint64_t max_size, max_count;
    /* num_shards: counts per shard */
    uint64_t total;
    /* output */
    sk_shard_out out;
    int open; /* a shard is open */
    uint64_t shard_no, in_shard;
    uint64_t target; /* samples for the open shard (num_shards), else 0 */
    sk_manifest *man;
    sk_existing grow; /* the manifest already there (io/existing.c) */
    char mdir[4200], mpath[4200];
    /* --resume: the existing shard being skipped */
    sk_index *rix;
    int rfd; /* the resumed shard, local and plain: its samples compared byte for byte */
    uint64_t rpos;
    /* scratch */
    unsigned char *rec;
    size_t rec_cap;
    struct memb *vm;
    size_t vm_cap;
    sk_shuffler *shuf;
    struct img_pool *pool; /* image workers (sk_shard_options.images) */
    /* plain output: samples collect in ob[] and go out in large writes
     * from a second thread (q; NULL: one writev per sample, as for
     * compressed and S3 output) */
    sk_outq *q;
    struct obuf ob[2];
    int cur;              /* the buffer being filled */
    int pbuf;             /* the buffer holding the pending range, -1 none */
    size_t pstart, pend;  /* the pending range: bytes not yet queued */
    uint32_t pcrc;
    uint64_t opos;        /* bytes of the open shard, pending ones included */
    int direct;           /* inputs may be read through their indexes */
    uint64_t rewrites;    /* headers and paddings direct_emit changed */
    /* --shuffle of inputs read through their indexes: the buckets hold
     * references (input, offset), the inputs stay open for the drain */
    sk_infiles *inf;
    uint32_t in_no;       /* the input direct_input is reading, in inf */
} rs;

static void warnf(rs *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(rs *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(r->o->warn, r->o->ctx, fmt, ap);
    va_end(ap);
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void progress(rs *r, int final)
{
    if (!r->o->progress) return;
    if (!final && since(&r->last) < 0.5) return;
    clock_gettime(CLOCK_MONOTONIC, &r->last);
    r->st.seconds = since(&r->t0);
    r->o->progress(r->o->ctx, &r->st);
}

/* ------------------------------------------------------------------ --keys */

static int keyset_add(struct keyset *k, const char *s, size_t n, sk_error *err)
{
    if ((k->n + 1) * 2 > k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 1024;
        char **ns = calloc(nc, sizeof *ns);
        SK_FAIL_IF(!ns, err, SK_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->slot[i]) continue;
            size_t j = sk_fnv1a64(k->slot[i], strlen(k->slot[i])) & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = k->slot[i];
        }
        free(k->slot);
        k->slot = ns;
        k->cap = nc;
    }
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return SK_OK;
        j = (j + 1) & (k->cap - 1);
    }
    SK_FAIL_IF(!(k->slot[j] = strndup(s, n)), err, SK_E_NOMEM, "out of memory");
    k->n++;
    return SK_OK;
}

static int keyset_has(const struct keyset *k, const char *s, size_t n)
{
    if (!k->cap) return 0;
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return 1;
        j = (j + 1) & (k->cap - 1);
    }
    return 0;
}

static void keyset_free(struct keyset *k)
{
    for (size_t i = 0; i < k->cap; i++) free(k->slot[i]);
    free(k->slot);
}

static int load_keys(rs *r, const char *path, sk_error *err)
{
    sk_place_in *in; /* a local file, or s3:// and http(s):// streamed */
    SK_GUARD(sk_place_in_open(&in, path, r->o->s3, err));
    FILE *f = sk_place_in_file(in);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = SK_OK;
    while (!rc && (n = getline(&line, &cap, f)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n) rc = keyset_add(&r->keys, line, (size_t)n, err);
    }
    if (!rc && ferror(f)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", path);
    free(line);
    return sk_place_in_close(in, rc, err);
}

/* ---------------------------------------------------------------- filters */

static int ext_in(const char *e, size_t n, const char *const *list, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (!sk_ext_cmp(e, n, list[i], strlen(list[i]))) return (int)i + 1;
    return 0;
}

/* Decides whether a member with extension e is kept, and its output
 * extension (*out, *out_len). */
static int keep_member(const rs *r, const char *e, size_t n, const char **out, size_t *out_len)
{
    const sk_shard_options *o = r->o;
    if (o->nselect && !ext_in(e, n, o->select, o->nselect)) return 0;
    if (o->ndrop && ext_in(e, n, o->drop, o->ndrop)) return 0;
    int i = ext_in(e, n, o->rename_from, o->nrename);
    *out = i ? o->rename_to[i - 1] : e;
    *out_len = i ? strlen(o->rename_to[i - 1]) : n;
    return 1;
}

static int keep_sample(const rs *r, const char *key, size_t klen)
{
    if (r->o->keys_file && !keyset_has(&r->keys, key, klen)) return 0;
    /* --part I/N: the sample's part depends on its key alone (lib/part.c) */
    if (r->o->parts && sk_part_of(key, klen, r->o->parts) != r->o->part) return 0;
    return 1;
}

/* ----------------------------------------------------------------- output */

static void view_of(const struct samp *s, struct sview *v)
{
    *v = (struct sview){s->key, s->klen, s->m, s->nm, s->exts, s->img, s->len, s->crc, 1, -1, s->elen};
}

/* Queues the pending range. */
static int out_flush(rs *r, sk_error *err)
{
    if (r->pbuf < 0 || r->pend == r->pstart) return SK_OK;
    struct obuf *b = &r->ob[r->pbuf];
    SK_GUARD(sk_outq_put(r->q, b->p + r->pstart, r->pend - r->pstart, r->pcrc, &b->seq, err));
    r->pstart = r->pend;
    return SK_OK;
}

/* Everything handed over is written: the sk_shard_out is ours again. */
static int out_sync(rs *r, sk_error *err)
{
    if (!r->q) return SK_OK;
    SK_GUARD(out_flush(r, err));
    return sk_outq_wait(r->q, 0, err);
}

/* Makes ob[i] free for new bytes (at least need of them). */
static int out_claim(rs *r, int i, size_t need, sk_error *err)
{
    struct obuf *b = &r->ob[i];
    if (r->pbuf == i) {
        SK_GUARD(out_flush(r, err));
        r->pbuf = -1;
    }
    if (r->q) SK_GUARD(sk_outq_wait(r->q, b->seq, err));
    if (b->map) munmap(b->map, b->maplen);
    b->map = NULL;
    b->len = 0;
    if (need > b->heap_cap) {
        unsigned char *p = malloc(need);
        SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory (%zu bytes for one sample)", need);
        free(b->heap);
        b->heap = p;
        b->heap_cap = need;
    }
    b->p = b->heap;
    b->cap = b->heap_cap;
    return SK_OK;
}

/* Makes ob[i] the bytes [pos, pos + want) of fd, mapped private: pages
 * the run does not write to (headers already as the output has them,
 * padding already zero) stay the page cache's own, so the data is copied
 * once, by the kernel's write, as cp copies it; a page written to is
 * copied for this process alone, never into the input.  *mapped = 0:
 * not mapped (the caller preads instead). */
static int out_map(rs *r, int i, int fd, uint64_t pos, size_t want, int *mapped, sk_error *err)
{
    struct obuf *b = &r->ob[i];
    *mapped = 0;
    SK_GUARD(out_claim(r, i, 0, err));
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t at = pos - pos % (uint64_t)(pg > 0 ? pg : 4096);
    size_t len = (size_t)(pos - at) + want;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)at);
    if (m == MAP_FAILED) return SK_OK;
    /* every page now: a file cut short since fstat fails here (EFAULT)
     * instead of raising SIGBUS later, and no fault per page afterwards */
    if (madvise(m, len, MADV_POPULATE_READ)) {
        munmap(m, len);
        return SK_OK;
    }
    b->map = m;
    b->maplen = len;
    b->p = (unsigned char *)m + (pos - at);
    b->cap = b->len = want;
    *mapped = 1;
    return SK_OK;
}

/* Appends v's bytes to the open shard. */
static int out_add(rs *r, const struct sview *v, sk_error *err)
{
    uint32_t crc = r->out.z ? 0 : v->has_crc ? v->crc : sk_crc32c(0, v->img, v->len);
    if (!r->q) {
        struct iovec iov = {(void *)v->img, v->len};
        return sk_shard_out_writev(&r->out, &iov, 1, v->len, crc, err);
    }
    size_t at;
    if (v->buf >= 0) { /* already in a buffer: queue it from where it lies */
        at = (size_t)(v->img - r->ob[v->buf].p);
        if (r->pbuf != v->buf || r->pend != at) {
            SK_GUARD(out_flush(r, err));
            r->pbuf = v->buf;
            r->pstart = r->pend = at;
        }
    } else {
        if (v->len > OUT_BUF / 2) { /* large: write it from where it lies, and wait */
            uint64_t seq;
            SK_GUARD(out_flush(r, err));
            SK_GUARD(sk_outq_put(r->q, v->img, v->len, crc, &seq, err));
            return sk_outq_wait(r->q, seq, err);
        }
        struct obuf *b = &r->ob[r->cur];
        if (!b->cap || b->len + v->len > b->cap) {
            SK_GUARD(out_flush(r, err));
            r->cur ^= 1;
            SK_GUARD(out_claim(r, r->cur, OUT_BUF, err));
            b = &r->ob[r->cur];
        }
        if (r->pbuf != r->cur || r->pend != b->len) {
            SK_GUARD(out_flush(r, err));
            r->pbuf = r->cur;
            r->pstart = r->pend = b->len;
        }
        memcpy(b->p + b->len, v->img, v->len);
        b->len += v->len;
    }
    r->pcrc = r->pend == r->pstart ? crc : sk_crc32c_combine(r->pcrc, crc, v->len);
    r->pend += v->len;
    return SK_OK;
}

/* Relative to the manifest's directory, wherever the shard is (core). */
#define shard_url sk_path_rel

/* keys: the shard's smallest and largest key (first NULL: not known) */
static int add_to_manifest(rs *r, const char *path, const sk_index_shard_info *info,
                           uint64_t samples, const sk_key_range *keys, sk_error *err)
{
    char url[4200], iurl[4200], ipath[4200];
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    SK_FAIL_IF(shard_url(path, r->mdir, url, sizeof url) ||
                   shard_url(ipath, r->mdir, iurl, sizeof iurl),
               err, SK_E_USAGE, "%s: name too long", path);
    sk_manifest_shard ms = {.url = url, .index_url = iurl, .bytes = info->size,
                            .samples = samples, .crc32c = info->crc32c};
    SK_GUARD(sk_manifest_add_shard(r->man, &ms, err));
    if (keys->first)
        SK_GUARD(sk_manifest_set_key_range(r->man, r->man->nshards - 1, keys->first,
                                           keys->first_len, keys->last, keys->last_len, err));
    r->st.shards++;
    r->st.output_bytes += info->size;
    return SK_OK;
}

static void resume_fd_close(rs *r)
{
    if (r->rfd >= 0) close(r->rfd);
    r->rfd = -1;
}

/* --resume: whether sample v is, byte for byte, the one at s of the
 * resumed shard (a plain local one; else its members' sizes): a shard of
 * other inputs with the same keys is not this run's. */
static int resume_same(rs *r, const sk_sample_ref *s, const struct sview *v)
{
    if (r->rfd < 0) {
        if (s->member_count != v->nm) return 0;
        for (uint32_t i = 0; i < s->member_count; i++) {
            sk_member_ref m;
            if (sk_index_member(r->rix, s->first_member + i, &m, NULL) || m.size != v->m[i].size)
                return 0;
        }
        return 1;
    }
    if (s->stored_span != v->len) return 0;
    unsigned char *b = malloc(v->len ? v->len : 1);
    ssize_t got = b ? pread(r->rfd, b, v->len, (off_t)s->stored_offset) : -1;
    int same = got == (ssize_t)v->len && !memcmp(b, v->img, v->len);
    free(b);
    return same;
}

/* --resume: an existing shard is kept when its index is sound and agrees
 * with the file; the samples this run would put in it are then checked
 * against it (keys, and bytes: resume_same) instead of being written. */
static int try_resume(rs *r, const char *path)
{
    if (sk_is_s3_url(path)) { /* object and index object agree, CRC32C included */
        if (!sk_s3_shard_sound(r->o->s3, path, &r->rix)) return 0;
    } else {
        char ipath[4200];
        struct stat sb;
        snprintf(ipath, sizeof ipath, "%s.idx", path);
        if (stat(path, &sb) != 0 || sk_index_open(&r->rix, ipath, 0, NULL) != SK_OK) return 0;
        if (!(sk_index_shard(r->rix)->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)))
            r->rfd = open(path, O_RDONLY | O_CLOEXEC);
        if (sk_index_shard(r->rix)->size != (uint64_t)sb.st_size) {
            sk_index_close(r->rix);
            r->rix = NULL;
            resume_fd_close(r);
            return 0;
        }
    }
    if (!sk_index_sample_count(r->rix) ||
        (r->target && sk_index_sample_count(r->rix) != r->target)) {
        sk_index_close(r->rix);
        r->rix = NULL;
        resume_fd_close(r);
        return 0;
    }
    r->rpos = 0;
    return 1;
}

static int close_shard(rs *r, sk_error *err)
{
    if (!r->open) return SK_OK;
    r->open = 0;
    char path[4200] = "-";
    if (!r->to_stdout)
        SK_GUARD(sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, err));
    r->shard_no++;
    if (r->rix) { /* resumed */
        sk_index *ix = r->rix;
        r->rix = NULL;
        resume_fd_close(r);
        int rc = SK_OK;
        if (r->rpos != sk_index_sample_count(ix))
            rc = sk_error_set(err, SK_E_INPUT, "%s: --resume: the shard holds %llu samples, this "
                              "run puts %llu in it; remove it or run without --resume", path,
                              (unsigned long long)sk_index_sample_count(ix),
                              (unsigned long long)r->rpos);
        for (uint64_t i = 0; !rc && i < sk_index_member_count(ix); i++) {
            sk_member_ref m;
            if (!(rc = sk_index_member(ix, i, &m, err)))
                rc = sk_manifest_count_ext(r->man, m.ext, m.ext_len, 1, err);
        }
        sk_key_range kr = {0};
        if (!rc && sk_index_sample_count(ix))
            rc = sk_index_key_bounds(ix, (const char **)&kr.first, &kr.first_len,
                                     (const char **)&kr.last, &kr.last_len, err);
        if (!rc) rc = add_to_manifest(r, path, sk_index_shard(ix), r->rpos, &kr, err);
        sk_index_close(ix);
        r->st.shards_resumed++;
        return rc;
    }
    sk_index_shard_info info;
    SK_GUARD(out_sync(r, err));
    sk_key_range kr = {0};
    if (!r->to_stdout) SK_GUARD(sk_index_builder_key_range(r->out.index, &kr, err));
    int rc = sk_shard_out_finish(&r->out, &info, err);
    if (!rc && r->to_stdout) {
        r->st.output_bytes += info.size;
        r->st.shards++;
    } else if (!rc) {
        rc = add_to_manifest(r, path, &info, r->in_shard, &kr, err);
    }
    sk_key_range_free(&kr);
    return rc;
}

static int open_shard(rs *r, sk_error *err)
{
    char path[4200];
    r->in_shard = 0;
    r->open = 1;
    r->opos = 0;
    r->target = 0;
    if (r->o->num_shards) {
        uint64_t n = r->o->num_shards, i = r->shard_no;
        r->target = r->total / n + (i < r->total % n ? 1 : 0);
    }
    if (r->to_stdout) return sk_shard_out_begin_fd(&r->out, 1, "stdout", err);
    SK_GUARD(sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, err));
    if (r->o->resume && try_resume(r, path)) return SK_OK;
    return sk_shard_out_begin(&r->out, path, err);
}

/* Writes one sample, rolling over to a new shard first when it is due. */
static int emit(rs *r, const struct sview *v, sk_error *err)
{
    if (r->open && !r->to_stdout) {
        int roll;
        if (r->o->num_shards) roll = r->in_shard >= r->target && r->shard_no + 1 < r->o->num_shards;
        else if (r->rix) roll = r->rpos >= sk_index_sample_count(r->rix);
        else roll = (r->max_count && r->in_shard >= r->max_count) ||
                    (r->in_shard && r->opos + v->len > r->max_size);
        if (roll) SK_GUARD(close_shard(r, err));
    }
    if (!r->open) SK_GUARD(open_shard(r, err));
    r->in_shard++;
    r->st.samples++;
    r->st.members += v->nm;
    if (r->rix) { /* resuming: check instead of write */
        sk_sample_ref s;
        int ok = r->rpos < sk_index_sample_count(r->rix) &&
                 !sk_index_sample(r->rix, r->rpos, &s, NULL) && s.key_len == v->klen &&
                 !memcmp(s.key, v->key, v->klen) && resume_same(r, &s, v);
        char path[4200];
        sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, NULL);
        SK_FAIL_IF(!ok, err, SK_E_INPUT, "%s: --resume: sample %llu is not '%.*s' as this run "
                   "would write it (another run's shard, of other inputs or options); remove "
                   "the shard or run without --resume", path,
                   (unsigned long long)r->rpos, (int)v->klen, v->key);
        r->rpos++;
        return SK_OK;
    }
    uint64_t off = r->opos;
    if (!r->to_stdout) {
        SK_GUARD(sk_index_add_sample(r->out.index, v->key, v->klen, off, v->len, off, v->len, err));
        for (size_t i = 0; i < v->nm; i++) {
            const struct memb *m = &v->m[i];
            /* the pool's lowercase is ASCII's; the index's is Python's */
            char low[SK_EXT_LOWER_MAX(SK_TAR_NAME_MAX + 64)];
            SK_FAIL_IF(m->ext_len > SK_TAR_NAME_MAX + 64, err, SK_E_INPUT, "'%.*s': name too long",
                       (int)v->klen, v->key);
            size_t el = sk_ext_lower(v->exts + m->ext_off, m->ext_len, low);
            SK_GUARD(sk_index_add_member(r->out.index, low, el, off + m->data_off, m->size,
                                         m->hlen, m->crc, err));
            SK_GUARD(sk_manifest_count_ext(r->man, low, el, 1, err));
        }
    }
    SK_GUARD(out_add(r, v, err));
    r->opos += v->len;
    progress(r, 0);
    return SK_OK;
}

/* ---------------------------------------------------- shuffle records */
/* key_len u32, nm u32, ext pool len u32, image len u64, key, members
 * (nm x 32 bytes), ext pool, image. */

/* Writes a record's fields up to its image into r->rec (grown to hold
 * them and tail more bytes); the key length word is klen_word.  Returns
 * where the tail goes, NULL when out of memory. */
static unsigned char *put_record(rs *r, const struct sview *s, uint32_t klen_word, size_t tail,
                                 sk_error *err)
{
    size_t meta = 20 + s->klen + s->nm * 32 + s->elen;
    if (sk_grow((void **)&r->rec, &r->rec_cap, meta + tail, 1, err)) return NULL;
    unsigned char *p = r->rec;
    sk_put_le32(p, klen_word);
    sk_put_le32(p + 4, (uint32_t)s->nm);
    sk_put_le32(p + 8, (uint32_t)s->elen);
    sk_put_le64(p + 12, s->len);
    p += 20;
    memcpy(p, s->key, s->klen);
    p += s->klen;
    for (size_t i = 0; i < s->nm; i++, p += 32) {
        const struct memb *m = &s->m[i];
        sk_put_le64(p, m->data_off);
        sk_put_le64(p + 8, m->size);
        sk_put_le32(p + 16, m->hlen);
        sk_put_le32(p + 20, m->crc);
        sk_put_le32(p + 24, m->ext_off);
        sk_put_le32(p + 28, m->ext_len);
    }
    memcpy(p, s->exts, s->elen);
    return p + s->elen;
}

static int serialize(rs *r, const struct sview *s, sk_error *err)
{
    /* the image is not copied here: addv copies it once, into the bucket */
    unsigned char *end = put_record(r, s, (uint32_t)s->klen, 0, err);
    if (!end) return SK_E_NOMEM;
    struct iovec v[2] = {{r->rec, (size_t)(end - r->rec)}, {(void *)s->img, s->len}};
    return sk_shuffler_addv(r->shuf, v, 2, err);
}

/* A reference record: the key length with REF_BIT set, then as above but
 * in place of the image the input's number (u32) and the sample's offset
 * in it (u64); the image length field is the sample's span.  It weighs
 * what the record of its bytes would (serialize), so the shuffle puts it
 * where that record would go: the output is the same bytes. */
#define REF_BIT 0x80000000u

static int serialize_ref(rs *r, const struct sview *s, uint64_t offset, sk_error *err)
{
    SK_FAIL_IF(s->klen >= REF_BIT, err, SK_E_INPUT, "'%.*s...': key too long", 64, s->key);
    unsigned char *p = put_record(r, s, (uint32_t)s->klen | REF_BIT, 12, err);
    if (!p) return SK_E_NOMEM;
    sk_put_le32(p, r->in_no);
    sk_put_le64(p + 4, offset);
    size_t meta = (size_t)(p - r->rec);
    struct iovec v = {r->rec, meta + 12};
    return sk_shuffler_addw(r->shuf, &v, 1, meta + s->len, err);
}

/* need bytes at the end of the buffer being filled (plain output: they
 * are then queued from there by out_add), else in a scratch buffer. */
static int out_reserve(rs *r, size_t need, unsigned char **p, sk_error *err)
{
    struct obuf *b = &r->ob[r->cur];
    if (!r->q) {
        SK_GUARD(out_claim(r, r->cur, need, err));
        *p = b->p;
        return SK_OK;
    }
    if (b->map || b->len + need > b->cap) {
        SK_GUARD(out_flush(r, err));
        r->cur ^= 1;
        SK_GUARD(out_claim(r, r->cur, need > OUT_BUF ? need : OUT_BUF, err));
        b = &r->ob[r->cur];
    }
    *p = b->p + b->len;
    b->len += need;
    return SK_OK;
}

/* Writes the sample a reference record names: its bytes read from the
 * input (pread, into the output buffer), each member's data checked
 * against the CRC32C its index records (or, for an index without them,
 * the one the scatter computed: a file changed in between fails the run),
 * the output headers written over the input ones. */
static int emit_ref(rs *r, struct sview *v, uint32_t no, uint64_t off, sk_error *err)
{
    int fd;
    const char *path;
    unsigned char *p;
    size_t got;
    SK_GUARD(sk_infiles_fd(r->inf, no, &fd, &path, err));
    SK_GUARD(out_reserve(r, v->len, &p, err));
    SK_GUARD(sk_stream_pread(fd, off, p, v->len, &got, path, err));
    SK_FAIL_IF(got < v->len, err, SK_E_INPUT, "%s: ends at offset %llu, inside sample '%.*s' "
               "(offset %llu, %zu bytes) that was read whole before: the shard was cut short "
               "during the run", path, (unsigned long long)(off + got), (int)v->klen, v->key,
               (unsigned long long)off, v->len);
    uint32_t crc = 0;
    for (size_t i = 0; i < v->nm; i++) {
        const struct memb *m = &v->m[i];
        SK_FAIL_IF(m->hlen != SK_TAR_BLOCK || m->data_off < SK_TAR_BLOCK ||
                       m->data_off > v->len || sk_tar_pad(m->size) > v->len - m->data_off ||
                       m->ext_off + 2 * (uint64_t)m->ext_len > v->elen ||
                       v->klen + 1 + m->ext_len >= PLAIN_NAME,
                   err, SK_E_IO, "shuffle record damaged");
        unsigned char *d = p + m->data_off;
        uint32_t c = sk_crc32c(0, d, m->size);
        SK_FAIL_IF(c != m->crc, err, SK_E_MISMATCH, "%s: member '%.*s.%.*s' (data at offset %llu): "
                   "CRC32C %08x, its index records %08x: the shard or its index is damaged, or "
                   "the shard changed during the run",
                   path, (int)v->klen, v->key, (int)m->ext_len, v->exts + m->ext_off + m->ext_len,
                   (unsigned long long)(off + m->data_off), c, m->crc);
        char name[PLAIN_NAME];
        size_t nl = v->klen + 1 + m->ext_len;
        memcpy(name, v->key, v->klen);
        name[v->klen] = '.';
        memcpy(name + v->klen + 1, v->exts + m->ext_off + m->ext_len, m->ext_len);
        sk_tar_header(d - SK_TAR_BLOCK, name, nl, m->size, r->o->mtime);
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        memset(d + m->size, 0, pad);
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, d - SK_TAR_BLOCK, SK_TAR_BLOCK), c, m->size);
        piece = sk_crc32c(piece, d + m->size, pad);
        crc = i ? sk_crc32c_combine(crc, piece, SK_TAR_BLOCK + m->size + pad) : piece;
    }
    v->img = p;
    v->crc = crc;
    v->has_crc = 1;
    v->buf = r->q ? r->cur : -1;
    return emit(r, v, err);
}

static int emit_record(void *ctx, const unsigned char *p, size_t len, sk_error *err)
{
    rs *r = ctx;
    struct sview v;
    SK_FAIL_IF(len < 20, err, SK_E_IO, "shuffle record damaged");
    uint32_t kf = sk_get_le32(p);
    int ref = (kf & REF_BIT) != 0;
    v.klen = kf & ~REF_BIT;
    v.nm = sk_get_le32(p + 4);
    size_t elen = sk_get_le32(p + 8);
    v.len = (size_t)sk_get_le64(p + 12);
    SK_FAIL_IF(20 + v.klen + v.nm * 32 + elen + (ref ? 12 : v.len) != len || (ref && !r->inf), err,
               SK_E_IO, "shuffle record damaged");
    p += 20;
    v.key = (const char *)p;
    p += v.klen;
    SK_GUARD(sk_grow((void **)&r->vm, &r->vm_cap, v.nm, sizeof *r->vm, err));
    for (size_t i = 0; i < v.nm; i++, p += 32) {
        struct memb *m = &r->vm[i];
        m->data_off = sk_get_le64(p);
        m->size = sk_get_le64(p + 8);
        m->hlen = sk_get_le32(p + 16);
        m->crc = sk_get_le32(p + 20);
        m->ext_off = sk_get_le32(p + 24);
        m->ext_len = sk_get_le32(p + 28);
    }
    v.m = r->vm;
    v.exts = (const char *)p;
    v.img = p + elen;
    v.has_crc = 0;
    v.buf = -1;
    v.elen = elen;
    if (ref) return emit_ref(r, &v, sk_get_le32(p + elen), sk_get_le64(p + elen + 4), err);
    return emit(r, &v, err);
}

/* ------------------------------------------------------------ sample input */

/* Rebuilds s's tar image with member i's data replaced by (data, len)
 * (i == s->nm: a new member with extension ext is appended). */
static int replace_member(struct samp *s, size_t i, const char *ext, const void *data, size_t len,
                          uint64_t mtime, sk_error *err)
{
    unsigned char *img = NULL;
    size_t cap = 0, n = 0, nm = s->nm + (i == s->nm);
    if (i == s->nm) {
        size_t el = strlen(ext);
        SK_GUARD(sk_grow((void **)&s->m, &s->mcap, nm, sizeof *s->m, err));
        SK_GUARD(sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * el + 1, 1, err));
        memcpy(s->exts + s->elen, ext, el);
        memcpy(s->exts + s->elen + el, ext, el);
        s->m[i] = (struct memb){.ext_off = (uint32_t)s->elen, .ext_len = (uint32_t)el};
        s->elen += 2 * el;
    }
    for (size_t k = 0; k < nm; k++) {
        struct memb *m = &s->m[k];
        const unsigned char *d = k == i ? data : s->img + m->data_off;
        uint64_t size = k == i ? len : m->size;
        char name[SK_TAR_NAME_MAX + 64];
        if (s->klen + 1 + m->ext_len >= sizeof name) {
            free(img);
            return sk_error_set(err, SK_E_INPUT, "'%.*s': name too long", (int)s->klen, s->key);
        }
        memcpy(name, s->key, s->klen);
        name[s->klen] = '.';
        memcpy(name + s->klen + 1, s->exts + m->ext_off + m->ext_len, m->ext_len);
        size_t nl = s->klen + 1 + m->ext_len, hl = sk_tar_header_size(name, nl, size);
        int rc = sk_grow((void **)&img, &cap, n + hl + sk_tar_pad(size), 1, err);
        if (rc) {
            free(img);
            return rc;
        }
        sk_tar_header(img + n, name, nl, size, mtime);
        memcpy(img + n + hl, d, size);
        memset(img + n + hl + size, 0, sk_tar_pad(size) - size);
        m->data_off = n + hl;
        m->hlen = (uint32_t)hl;
        m->size = size;
        if (k == i) m->crc = sk_crc32c(0, d, size);
        n += hl + sk_tar_pad(size);
    }
    free(s->img);
    s->img = img;
    s->len = n;
    s->cap = cap;
    s->nm = nm;
    s->crc = sk_crc32c(0, img, n);
    return SK_OK;
}

/* What the image work on one sample found: counted and said by the
 * thread that emits samples, in sample order, so that the counts, the
 * warnings and the output never depend on which worker ran. */
struct img_outcome {
    int skip;
    uint64_t images, image_skips, bad_images;
    char warn[SK_ERROR_MAX];
};

/* --image-size and friends on one sample: each image member resized (or
 * found bad), the sample's .json given the sizes with --image-meta.
 * out->skip is set when the sample is to be dropped (too small, too
 * elongated, or a bad image under --bad-image skip).  Touches nothing but
 * s and out: worker threads run it. */
static int sample_images(const sk_shard_options *o, sk_image_budget *b, struct samp *s,
                         struct img_outcome *out, sk_error *err)
{
    const sk_image_options *io = o->images;
    sk_image_result first = {0};
    int have_first = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->nm && !out->skip; i++) {
        struct memb *m = &s->m[i];
        if (!sk_image_is_image(io, s->exts + m->ext_off, m->ext_len)) continue;
        sk_image_result res;
        SK_GUARD(sk_image_transform_in(io, b, s->img + m->data_off, (size_t)m->size, &res, err));
        if (res.verdict == SK_IMAGE_BAD) {
            out->bad_images++;
            if (io->bad_image == SK_BAD_IMAGE_FAIL)
                return sk_error_set(err, SK_E_INPUT, "sample '%.*s', member .%.*s: %s", (int)s->klen,
                                    s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
            if (io->bad_image == SK_BAD_IMAGE_SKIP) {
                snprintf(out->warn, sizeof out->warn, "skipped sample '%.*s': .%.*s: %s",
                         (int)s->klen, s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
                out->skip = 1;
            }
            continue;
        }
        if (res.verdict != SK_IMAGE_DONE) {
            out->image_skips++;
            snprintf(out->warn, sizeof out->warn, "skipped sample '%.*s': .%.*s: %s", (int)s->klen,
                     s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
            out->skip = 1;
            continue;
        }
        if (!have_first) first = res, first.out = NULL, have_first = 1;
        if (res.out) {
            out->images++;
            int rc = replace_member(s, i, NULL, res.out, res.out_len, o->mtime, err);
            free(res.out);
            SK_GUARD(rc);
        }
    }
    if (out->skip || !io->image_meta || !have_first) return SK_OK;
    size_t j = 0;
    while (j < s->nm && sk_ext_cmp(s->exts + s->m[j].ext_off, s->m[j].ext_len, "json", 4)) j++;
    char *json;
    size_t jl;
    int rc = sk_image_meta_json(j < s->nm ? (const char *)s->img + s->m[j].data_off : NULL,
                                j < s->nm ? (size_t)s->m[j].size : 0, &first, &json, &jl, err);
    if (rc) {
        char why[SK_ERROR_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return sk_error_set(err, rc, "sample '%.*s': %s", (int)s->klen, s->key, why);
    }
    rc = replace_member(s, j, "json", json, jl, o->mtime, err);
    free(json);
    return rc;
}

/* ------------------------------------------------------ the image workers */
/* Decoding and encoding JPEGs is most of the work when images are resized,
 * so samples go to a pool of worker threads (one per core) through a ring
 * of jobs and come back out in the order they went in.  Memory is bounded
 * whatever --jobs is: the decodes share one budget (--image-memory, see
 * image_budget.c), and the whole samples queued in the ring are bounded by
 * bytes as well as by count (a quarter of the budget, at least one). */

enum { JOB_FREE, JOB_QUEUED, JOB_DONE };

struct img_job {
    struct samp s;
    size_t bytes; /* s's bytes when queued, counted in the pool's queued */
    int state, rc;
    sk_error err;
    struct img_outcome out;
};

struct img_pool {
    const sk_shard_options *o;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct img_job *jobs;
    size_t cap;
    uint64_t head, tail, next; /* next to emit, next to fill, next to work on */
    sk_image_budget *budget;
    uint64_t queued, max_queued; /* bytes of the samples in the ring */
    int stop;
    pthread_t *th;
    int nth;
};

static void *img_worker(void *arg)
{
    struct img_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next == p->tail) pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) break;
        struct img_job *j = &p->jobs[p->next++ % p->cap];
        pthread_mutex_unlock(&p->mu);
        j->err = (sk_error)SK_ERROR_INIT;
        j->rc = sample_images(p->o, p->budget, &j->s, &j->out, &j->err);
        pthread_mutex_lock(&p->mu);
        j->state = JOB_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void samp_free(struct samp *s)
{
    free(s->key), free(s->m), free(s->exts), free(s->img);
}

static void img_pool_free(struct img_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nth; i++) pthread_join(p->th[i], NULL);
    for (size_t i = 0; p->jobs && i < p->cap; i++) samp_free(&p->jobs[i].s);
    free(p->jobs);
    free(p->th);
    sk_image_budget_free(p->budget);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}

static int img_pool_new(struct img_pool **out, const sk_shard_options *o, sk_error *err)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = o->jobs > 0 ? o->jobs : cores > 0 ? (int)cores : 1;
    if (n > 64) n = 64;
    struct img_pool *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    p->o = o;
    p->cap = (size_t)n * 4;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    /* memory is read only from a struct that has it (an older program's is
     * shorter: the default budget) */
    const sk_image_options *io = o->images;
    size_t has = io->struct_size ? io->struct_size : sizeof *io;
    uint64_t memory = has >= offsetof(sk_image_options, memory) + sizeof io->memory ? io->memory : 0;
    if (sk_image_budget_new(&p->budget, memory, err)) {
        img_pool_free(p);
        return err->code;
    }
    p->max_queued = sk_image_budget_total(p->budget) / 4;
    p->jobs = calloc(p->cap, sizeof *p->jobs);
    p->th = calloc((size_t)n, sizeof *p->th);
    if (!p->jobs || !p->th) {
        img_pool_free(p);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (; p->nth < n; p->nth++)
        if (pthread_create(&p->th[p->nth], NULL, img_worker, p) != 0) {
            img_pool_free(p);
            return sk_error_set(err, SK_E_NOMEM, "cannot start an image worker: %s", strerror(errno));
        }
    *out = p;
    return SK_OK;
}

static int emit_sample(rs *r, struct samp *s, sk_error *err);

/* Emits the finished jobs at the head, in order; block: wait for the
 * head job (all of them when drain). */
static int img_pool_emit(rs *r, int block, int drain, sk_error *err)
{
    struct img_pool *p = r->pool;
    int rc = SK_OK;
    pthread_mutex_lock(&p->mu);
    while (p->head < p->tail && !rc) {
        struct img_job *j = &p->jobs[p->head % p->cap];
        if (j->state != JOB_DONE) {
            if (!block) break;
            pthread_cond_wait(&p->done, &p->mu);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        r->st.images += j->out.images;
        r->st.image_skips += j->out.image_skips;
        r->st.bad_images += j->out.bad_images;
        if (j->out.warn[0]) warnf(r, "%s", j->out.warn);
        if (j->rc) *err = j->err, rc = j->rc;
        else if (j->out.skip) r->st.dropped++;
        else rc = emit_sample(r, &j->s, err);
        j->s.klen = j->s.nm = j->s.elen = j->s.len = 0, j->s.crc = 0;
        if (j->s.cap > ((size_t)1 << 20)) { /* a free slot keeps no large buffer */
            free(j->s.img);
            j->s.img = NULL, j->s.cap = 0;
        }
        pthread_mutex_lock(&p->mu);
        j->state = JOB_FREE;
        p->queued -= j->bytes;
        p->head++;
        if (!drain) block = 0; /* one freed slot is all a submit needs */
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Hands s to the workers (its buffers are swapped with a free job's). */
static int img_pool_submit(rs *r, struct samp *s, sk_error *err)
{
    struct img_pool *p = r->pool;
    if (p->tail - p->head == p->cap) SK_GUARD(img_pool_emit(r, 1, 0, err));
    /* room by bytes too: wait for the oldest until s fits (or the ring is
     * empty, so one sample of any size still goes) */
    while (p->tail > p->head && p->queued + s->len > p->max_queued)
        SK_GUARD(img_pool_emit(r, 1, 0, err));
    pthread_mutex_lock(&p->mu);
    struct img_job *j = &p->jobs[p->tail % p->cap];
    struct samp t = j->s;
    j->s = *s;
    *s = t;
    j->bytes = j->s.len;
    p->queued += j->bytes;
    j->state = JOB_QUEUED;
    p->tail++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    return img_pool_emit(r, 0, 0, err);
}

static int sample_done(rs *r, struct samp *s, int counting, sk_error *err)
{
    if (!s->klen && !s->nm) return SK_OK;
    r->st.samples_in++;
    int keep = s->nm && keep_sample(r, s->key, s->klen);
    int rc = SK_OK;
    if (keep && !counting && r->pool) {
        rc = img_pool_submit(r, s, err);
        s->klen = s->nm = s->elen = s->len = 0, s->crc = 0;
        return rc;
    }
    if (!keep) r->st.dropped++;
    else if (counting) r->total++;
    else rc = emit_sample(r, s, err);
    s->klen = s->nm = s->elen = s->len = 0, s->crc = 0;
    return rc;
}

/* A sample that is kept goes into the shuffle, or out. */
static int emit_sample(rs *r, struct samp *s, sk_error *err)
{
    struct sview v;
    view_of(s, &v);
    return r->shuf ? serialize(r, &v, err) : emit(r, &v, err);
}

struct la_ctx {
    sk_in_stream in;
    unsigned char *buf;
    rs *r;
    sk_error *err;
    int rc;
};

static la_ssize_t la_read(struct archive *a, void *ctx, const void **out)
{
    struct la_ctx *c = ctx;
    size_t got = 0;
    (void)a;
    if ((c->rc = c->in.read(c->in.ctx, c->buf, IN_BUF, &got, c->err))) return -1;
    c->r->st.bytes_in += got;
    *out = c->buf;
    return (la_ssize_t)got;
}

/* Reads one input, feeding its samples on (or counting them).  from > 0:
 * a local tar from that header on (the rest of what direct_input began). */
static int read_input(rs *r, const char *url, struct samp *s, int counting, uint64_t from,
                      sk_error *err)
{
    struct la_ctx c = {.r = r, .err = err};
    sk_keyseen seen = {0}; /* a sample's members not adjacent: refused, never split */
    uint64_t split = 0, split_first = 0, split_again = 0; /* the first split one's places */
    char *split_key = NULL;
    SK_GUARD(sk_is_s3_url(url) ? s3_in_open(r->o->s3, &c.in, url, err)
                                  : (r->o->in_open ? r->o->in_open : default_in_open)(
                                        r->o->in_open_ctx, &c.in, url, err));
    struct archive *a;
    int rc = sk_la_new(&a, err);
    if (!rc && from && lseek(((struct fd_in *)c.in.ctx)->fd, (off_t)from, SEEK_SET) < 0)
        rc = sk_error_set(err, SK_E_IO, "%s: cannot seek to %llu: %s", url,
                          (unsigned long long)from, strerror(errno));
    c.buf = malloc(IN_BUF);
    if (!rc && !c.buf) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) goto done;
    sk_la.read_support_filter_all(a);
    sk_la.read_support_format_tar(a);
    sk_la.read_support_format_zip(a);
    sk_la.read_support_format_7zip(a);
    sk_la.read_support_format_cpio(a);
    if (sk_la.read_open(a, &c, NULL, la_read, NULL) != ARCHIVE_OK) {
        rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", url, sk_la.error_string(a));
        goto done;
    }
    int warned = 0, warned_strip = 0;
    for (;;) {
        struct archive_entry *ae;
        int h = sk_la.read_next_header(a, &ae);
        if (h == ARCHIVE_EOF) break;
        if (h < ARCHIVE_WARN) {
            rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s (after %llu samples)", url,
                                            sk_la.error_string(a),
                                            (unsigned long long)r->st.samples_in);
            goto done;
        }
        const char *name = sk_la.entry_pathname(ae);
        if (!name) name = sk_la.entry_pathname_utf8(ae);
        if (sk_la.entry_filetype(ae) != AE_IFREG || !name) {
            r->st.skipped++;
            continue;
        }
        /* foreign names as GNU tar extracts them (core/path.c) */
        size_t skip, nl = strlen(name), kl, eo;
        int strip = sk_name_strip(name, nl, &skip);
        if (strip < 0 || skip == nl) {
            warnf(r, "%s: skipped '%s': '..' in a member name", url, name);
            r->st.skipped++;
            continue;
        }
        if (strip > 0 && !warned_strip++)
            warnf(r, "%s: member names with a leading '/' or '../' (first: '%s') are written without it",
                  url, name);
        name += skip;
        nl -= skip;
        if (sk_tar_is_meta(name, nl)) continue;
        if (sk_sample_split(name, nl, &kl, &eo) != SK_OK) {
            if (!warned++) warnf(r, "%s: skipped '%s': its name has no WebDataset key", url, name);
            r->st.skipped++;
            continue;
        }
        if (kl != s->klen || memcmp(name, s->key, kl)) { /* a new sample */
            int again;
            uint64_t at = (uint64_t)sk_la.read_header_position(a), first;
            if ((rc = sk_keyseen_add_at(&seen, name, kl, at, &again, &first, err))) goto done;
            if (again && !split) split_first = first, split_again = at;
            if (again && !split++ && !(split_key = strndup(name, kl))) {
                rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
                goto done;
            }
            /* after a split one, only count the others: nothing is written */
            if (!split && (rc = sample_done(r, s, counting, err))) goto done;
            if ((rc = sk_grow((void **)&s->key, &s->kcap, kl + 1, 1, err))) goto done;
            memcpy(s->key, name, kl);
            s->klen = kl;
        }
        if (split) {
            s->nm = s->len = s->elen = 0;
            continue;
        }
        const char *oe;
        size_t oel;
        if (!keep_member(r, name + eo, nl - eo, &oe, &oel)) continue;
        for (size_t i = 0; i < s->nm; i++)
            if (!sk_ext_cmp(s->exts + s->m[i].ext_off, s->m[i].ext_len, oe, oel)) {
                rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': sample '%.*s' has extension '%.*s' "
                                  "twice", url, name, (int)kl, name, (int)oel, oe);
                goto done;
            }
        if (counting) { /* only whether a member remains matters */
            s->nm = 1;
            continue;
        }
        if (!sk_la.entry_size_is_set(ae)) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': the archive does not record the "
                              "member's size", url, name);
            goto done;
        }
        uint64_t size = (uint64_t)sk_la.entry_size(ae);
        char oname[SK_TAR_NAME_MAX + 64];
        if (kl + 1 + oel >= sizeof oname) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': name too long", url, name);
            goto done;
        }
        memcpy(oname, name, kl);
        oname[kl] = '.';
        for (size_t i = 0; i < oel; i++) /* index extensions are lowercase */
            oname[kl + 1 + i] = oe[i];
        size_t onl = kl + 1 + oel;
        size_t hl = sk_tar_header_size(oname, onl, size);
        if ((rc = sk_grow((void **)&s->img, &s->cap, s->len + hl + sk_tar_pad(size), 1, err)) ||
            (rc = sk_grow((void **)&s->m, &s->mcap, s->nm + 1, sizeof *s->m, err)) ||
            (rc = sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * oel + 1, 1, err)))
            goto done;
        sk_tar_header(s->img + s->len, oname, onl, size, r->o->mtime);
        unsigned char *d = s->img + s->len + hl;
        for (uint64_t got = 0; got < size;) {
            la_ssize_t k = sk_la.read_data(a, d + got, (size_t)(size - got));
            if (k <= 0) {
                rc = c.rc ? c.rc
                          : sk_error_set(err, SK_E_CORRUPT, "%s: '%s': %s", url, name,
                                         k < 0 ? sk_la.error_string(a) : "truncated member");
                goto done;
            }
            got += (uint64_t)k;
        }
        memset(d + size, 0, sk_tar_pad(size) - size);
        struct memb *m = &s->m[s->nm++];
        m->data_off = s->len + hl;
        m->size = size;
        m->hlen = (uint32_t)hl;
        m->crc = sk_crc32c(0, d, size);
        /* the image's CRC from the pieces: the data is read once */
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, s->img + s->len, hl), m->crc, size);
        piece = sk_crc32c(piece, d + size, sk_tar_pad(size) - size);
        s->crc = sk_crc32c_combine(s->crc, piece, hl + sk_tar_pad(size));
        m->ext_off = (uint32_t)s->elen;
        m->ext_len = (uint32_t)oel;
        for (size_t i = 0; i < oel; i++) {
            char ch = oe[i];
            s->exts[s->elen + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        /* the extension as the name writes it follows the lowercase one,
         * for images.c's rebuild of a member's header */
        memcpy(s->exts + s->elen + oel, oe, oel);
        s->elen += 2 * oel;
        s->len += hl + sk_tar_pad(size);
    }
    rc = split ? sk_error_set(err, SK_E_INPUT, "%s: %llu sample%s whose members are not adjacent "
                              "(first: '%s', members at byte %llu and again at byte %llu, after "
                              "other samples): shard would split each in two, so nothing is "
                              "written; put each sample's members together first (GNU tar "
                              "--sort=name, or extract and `shardkit pack`; `shardkit index` "
                              "names them)", url, (unsigned long long)split,
                              split == 1 ? "" : "s", split_key, (unsigned long long)split_first,
                              (unsigned long long)split_again)
               : sample_done(r, s, counting, err);
done:
    sk_keyseen_free(&seen);
    free(split_key);
    if (a) sk_la.read_free(a);
    free(c.buf);
    c.in.close(c.in.ctx);
    return rc;
}

/* ---------------------------------------------------- index-driven input */
/* A plain tar shard whose index is sound and records the shard's size is
 * read in large preads, each member where the index puts it, without
 * libarchive.  What is read is still checked: every header (checksum, a
 * regular file, the name and size the index claims, the members tiling
 * the file with nothing between them), every member's data against the
 * CRC32C its index records, and what follows each sample (another
 * sample's member, or the end of the archive).  The output header is
 * built over the input one in the batch, and the sample is queued for
 * writing from there: its data is copied only by the kernel, once when
 * the batch is mapped (out_map), twice when it was pread.
 *
 * Where anything is not as the index says, or is beyond this reader (pax
 * or GNU long names, links, directories, meta members), reading goes on
 * through libarchive from the first header of that sample, so the output
 * is byte for byte what libarchive alone gives.  Only a CRC32C mismatch is
 * an error: the member's bytes are not what was indexed. */


/* An octal field as libarchive's tar_atol8 reads it (leading blanks, then
 * digits), but only a plain one: at least a digit, then NUL or space. */
static int octal_field(const unsigned char *f, size_t w, uint64_t *v)
{
    size_t i = 0, d = 0;
    uint64_t x = 0;
    while (i < w && (f[i] == ' ' || f[i] == '\t')) i++;
    for (; i < w && f[i] >= '0' && f[i] <= '7'; i++, d++) {
        if (x >> 58) return 0;
        x = x * 8 + (uint64_t)(f[i] - '0');
    }
    if (!d || (i < w && f[i] != 0 && f[i] != ' ')) return 0;
    *v = x;
    return 1;
}

/* The member name of a plain ustar (or GNU) header for a regular file, as
 * libarchive forms it (prefix '/' name), into name (PLAIN_NAME bytes);
 * its length, or 0 when this reader leaves the header to libarchive. */
static size_t plain_header(const unsigned char *h, char *name, uint64_t *size)
{
    unsigned sum = 0;
    uint64_t ck;
    for (int i = 0; i < SK_TAR_BLOCK; i++) sum += h[i]; /* one plain loop: vectorized */
    for (int i = 148; i < 156; i++) sum += (unsigned)' ' - h[i];
    if (!octal_field(h + 148, 8, &ck) || ck != sum) return 0;
    if (h[156] != '0' && h[156] != 0) return 0;
    int ustar = !memcmp(h + 257, "ustar\0" "00", 8);
    if (!ustar && memcmp(h + 257, "ustar  \0", 8)) return 0;
    if (!octal_field(h + 124, 12, size)) return 0;
    size_t n = 0, nl = strnlen((const char *)h, 100);
    size_t pl = ustar ? strnlen((const char *)h + 345, 155) : 0;
    if (pl) {
        memcpy(name, h + 345, pl);
        n = pl;
        if (name[n - 1] != '/') name[n++] = '/';
    }
    memcpy(name + n, h, nl);
    n += nl;
    name[n] = 0;
    if (!nl || name[n - 1] == '/') return 0; /* libarchive: a directory */
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e) return 0;
    return n;
}

/* A name read_input would take as it is: nothing stripped, not a meta
 * member, a WebDataset key. */
static int plain_name(const char *name, size_t n, size_t *kl, size_t *eo)
{
    size_t skip;
    return !sk_name_strip(name, n, &skip) && !skip && !sk_tar_is_meta(name, n) &&
           sk_sample_split(name, n, kl, eo) == SK_OK;
}

/* Whether what follows a sample (rem bytes at p) ends it for libarchive as
 * it does here: the end of the archive (*end), or a plain member with
 * another key. */
static int ends_sample(const unsigned char *p, uint64_t rem, const char *key, size_t klen, int *end)
{
    static const unsigned char zero[SK_TAR_BLOCK];
    char name[PLAIN_NAME];
    uint64_t size;
    size_t nl, kl, eo;
    *end = rem == 0 || (rem >= SK_TAR_BLOCK && !memcmp(p, zero, SK_TAR_BLOCK));
    if (*end) return 1;
    if (rem < SK_TAR_BLOCK || !(nl = plain_header(p, name, &size)) || !plain_name(name, nl, &kl, &eo))
        return 0;
    return kl != klen || memcmp(name, key, kl);
}

/* Checks the sample sr at p (sr->span bytes) against its index; its
 * members go to s->m and s->exts (m->crc: what the index records).  Only
 * the header blocks are read: hv, when not NULL, holds them one after the
 * other (member u's at hv + u * 512) and p is not used. */
static int direct_sample(const sk_index *ix, const sk_sample_ref *sr, const unsigned char *p,
                         const unsigned char *hv, struct samp *s)
{
    uint64_t at = 0;
    s->nm = s->elen = 0;
    for (uint32_t u = 0; u < sr->member_count; u++) {
        sk_member_ref mr;
        char name[PLAIN_NAME];
        uint64_t size;
        size_t nl, kl, eo;
        if (sk_index_member(ix, (uint64_t)sr->first_member + u, &mr, NULL) ||
            mr.header_len != SK_TAR_BLOCK || mr.data_offset != sr->offset + at + SK_TAR_BLOCK ||
            sr->span - at < SK_TAR_BLOCK || mr.size > sr->span - at - SK_TAR_BLOCK ||
            sk_tar_pad(mr.size) > sr->span - at - SK_TAR_BLOCK)
            return 0;
        if (!(nl = plain_header(hv ? hv + (size_t)u * SK_TAR_BLOCK : p + at, name, &size)) ||
            size != mr.size ||
            !plain_name(name, nl, &kl, &eo) || kl != sr->key_len || memcmp(name, sr->key, kl) ||
            sk_ext_cmp(name + eo, nl - eo, mr.ext, mr.ext_len) || mr.ext_len != nl - eo ||
            sk_tar_header_size(name, nl, size) != SK_TAR_BLOCK)
            return 0;
        size_t el = nl - eo;
        for (size_t i = 0; i < s->nm; i++) /* read_input fails on it: let it */
            if (!sk_ext_cmp(s->exts + s->m[i].ext_off, s->m[i].ext_len, name + eo, el)) return 0;
        if (sk_grow((void **)&s->m, &s->mcap, s->nm + 1, sizeof *s->m, NULL) ||
            sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * el + 1, 1, NULL))
            return 0;
        s->m[s->nm++] = (struct memb){.data_off = at + SK_TAR_BLOCK, .size = size,
                                      .hlen = SK_TAR_BLOCK, .crc = mr.crc32c,
                                      .ext_off = (uint32_t)s->elen, .ext_len = (uint32_t)el};
        for (size_t i = 0; i < el; i++) { /* lowercase, then as the name has it */
            char ch = name[eo + i];
            s->exts[s->elen + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        memcpy(s->exts + s->elen + el, name + eo, el);
        s->elen += 2 * el;
        at += SK_TAR_BLOCK + sk_tar_pad(size);
    }
    return sr->member_count && at == sr->span;
}

static int all_zero(const unsigned char *p, size_t n)
{
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i]; /* one plain loop: vectorized */
    return !acc;
}

/* The checked sample at p: data CRC32Cs against the index, then the output
 * headers over the input ones, padding zeroed, and out it goes. */
static int direct_emit(rs *r, const char *url, const sk_sample_ref *sr, unsigned char *p,
                       struct samp *s, int no_crc, int buf, sk_error *err)
{
    uint32_t crc = 0;
    for (size_t i = 0; i < s->nm; i++) {
        struct memb *m = &s->m[i];
        unsigned char *d = p + m->data_off;
        uint32_t c = sk_crc32c(0, d, m->size);
        if (!no_crc && c != m->crc)
            return sk_error_set(err, SK_E_MISMATCH, "%s: member '%.*s.%.*s' (data at offset %llu): "
                                "CRC32C %08x, its index records %08x: the shard or its index "
                                "is damaged", url, (int)sr->key_len, sr->key, (int)m->ext_len,
                                s->exts + m->ext_off + m->ext_len,
                                (unsigned long long)(sr->offset + m->data_off), c, m->crc);
        m->crc = c;
        if (r->shuf) continue; /* a reference: emit_ref writes the headers */
        char name[PLAIN_NAME];
        size_t nl = sr->key_len + 1 + m->ext_len;
        memcpy(name, sr->key, sr->key_len);
        name[sr->key_len] = '.';
        memcpy(name + sr->key_len + 1, s->exts + m->ext_off + m->ext_len, m->ext_len);
        /* written only where they differ: a mapped page not written to is
         * not copied (out_map) */
        unsigned char h[SK_TAR_BLOCK];
        sk_tar_header(h, name, nl, m->size, r->o->mtime);
        if (memcmp(h, d - SK_TAR_BLOCK, SK_TAR_BLOCK)) {
            memcpy(d - SK_TAR_BLOCK, h, SK_TAR_BLOCK);
            r->rewrites++;
        }
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        if (!all_zero(d + m->size, pad)) {
            memset(d + m->size, 0, pad);
            r->rewrites++;
        }
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, d - SK_TAR_BLOCK, SK_TAR_BLOCK), c, m->size);
        piece = sk_crc32c(piece, d + m->size, pad);
        crc = i ? sk_crc32c_combine(crc, piece, SK_TAR_BLOCK + m->size + pad) : piece;
    }
    struct sview v = {sr->key, sr->key_len, s->m, s->nm, s->exts, p, (size_t)sr->span, crc, 1, buf,
                      s->elen};
    r->st.samples_in++;
    /* --shuffle: a reference into a bucket, weighing what read_input's
     * record of the sample would */
    int rc = r->shuf ? serialize_ref(r, &v, sr->offset, err) : emit(r, &v, err);
    s->nm = s->elen = 0;
    return rc;
}

/* --shuffle of a shard whose index records CRC32Cs: the scatter reads only
 * the header blocks (one pread each, and the block after each sample),
 * checks them as direct_input does and puts a reference to each sample in
 * the shuffle; the data is read once, when the drain writes it (emit_ref,
 * which checks each member against its index's CRC32C then).  *from and
 * the fallback to libarchive as for direct_input. */
static int direct_refs(rs *r, const char *url, int fd, const sk_index *ix, uint64_t size,
                       struct samp *s, uint64_t *from, sk_error *err)
{
    static const unsigned char zero[SK_TAR_BLOCK];
    uint64_t pos = 0, n = sk_index_sample_count(ix);
    unsigned char *hv = NULL, next[SK_TAR_BLOCK];
    size_t hcap = 0, got;
    int have_next = 0, end = 0, rc = SK_OK;
    sk_sample_ref sr;
    for (uint64_t i = 0; i < n && !end && !rc; i++) {
        if (sk_index_sample(ix, i, &sr, NULL) || sr.offset != pos || sr.span > size - pos ||
            !sr.member_count || (rc = sk_grow((void **)&hv, &hcap,
                                              (size_t)sr.member_count * SK_TAR_BLOCK, 1, err)))
            break;
        /* each member's header where the index puts it, while it lies in
         * the sample (direct_sample refuses the first that does not) */
        uint64_t at = 0;
        int ok = 1;
        for (uint32_t u = 0; u < sr.member_count && ok && !rc; u++) {
            sk_member_ref mr;
            if (sk_index_member(ix, (uint64_t)sr.first_member + u, &mr, NULL) ||
                sr.span - at < SK_TAR_BLOCK || mr.size > sr.span - at - SK_TAR_BLOCK ||
                sk_tar_pad(mr.size) > sr.span - at - SK_TAR_BLOCK)
                break;
            unsigned char *h = hv + (size_t)u * SK_TAR_BLOCK;
            if (!u && have_next) memcpy(h, next, SK_TAR_BLOCK);
            else if (!(rc = sk_stream_pread(fd, pos + at, h, SK_TAR_BLOCK, &got, url, err)))
                ok = got == SK_TAR_BLOCK;
            at += SK_TAR_BLOCK + sk_tar_pad(mr.size);
        }
        if (rc) break;
        /* the block after the sample: the next one's first header, or the end */
        uint64_t tail = size - pos - sr.span;
        have_next = 0;
        if (ok && tail >= SK_TAR_BLOCK) {
            if ((rc = sk_stream_pread(fd, pos + sr.span, next, SK_TAR_BLOCK, &got, url, err))) break;
            have_next = got == SK_TAR_BLOCK;
            ok = have_next;
        }
        if (!ok || !direct_sample(ix, &sr, NULL, hv, s) ||
            !ends_sample(tail >= SK_TAR_BLOCK ? next : zero, tail, sr.key, sr.key_len, &end)) {
            s->nm = s->elen = 0;
            break; /* libarchive from this sample on */
        }
        struct sview v = {sr.key, sr.key_len, s->m, s->nm, s->exts, NULL, (size_t)sr.span, 0, 0,
                          -1, s->elen};
        r->st.samples_in++;
        rc = serialize_ref(r, &v, sr.offset, err);
        s->nm = s->elen = 0;
        pos += sr.span;
        progress(r, 0);
    }
    free(hv);
    *from = end ? UINT64_MAX : pos;
    return rc;
}

/* Reads url through its index as far as it agrees with the shard: *from is
 * where libarchive is to go on (0: all of it), UINT64_MAX when done. */
static int direct_input(rs *r, const char *url, struct samp *s, uint64_t *from, sk_error *err)
{
    char ip[4200];
    sk_index *ix = NULL;
    struct stat sb;
    *from = 0;
    if (snprintf(ip, sizeof ip, "%s.idx", url) >= (int)sizeof ip) return SK_OK;
    int fd = open(url, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SK_OK; /* read_input says why */
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sk_index_open(&ix, ip, 0, NULL) ||
        sk_index_shard(ix)->size != (uint64_t)sb.st_size ||
        (sk_index_shard(ix)->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP))) {
        if (ix) sk_index_close(ix);
        close(fd);
        return SK_OK;
    }
    const char *sk1;
    size_t sk1l;
    uint64_t nsplit = sk_index_split_keys(ix, &sk1, &sk1l);
    if (nsplit) { /* a key as several samples: libarchive decides, from the tar
                   * itself (an index may lie), and refuses a real split */
        sk_index_close(ix);
        close(fd);
        return SK_OK;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int kept = 0; /* --shuffle: fd is r->inf's, for the drain */
    if (r->inf) {
        int rc = sk_infiles_add(r->inf, url, fd, &r->in_no, err);
        if (rc) {
            sk_index_close(ix);
            return rc;
        }
        kept = 1;
    }
    uint64_t size = (uint64_t)sb.st_size, pos = 0, i = 0, n = sk_index_sample_count(ix);
    int no_crc = (sk_index_shard(ix)->flags & SK_INDEX_NO_CRC) != 0, end = 0, rc = SK_OK;
    if (r->shuf && !no_crc) { /* without CRC32Cs to check the drain by: read it all now */
        rc = direct_refs(r, url, fd, ix, size, s, from, err);
        goto out;
    }
    /* mapped while the headers are already the output's (a shardkit
     * shard resharded with its own --mtime): then nothing is copied
     * in; a batch that had to be rewritten sends the rest to pread,
     * which copies once instead of a page at a time */
    int use_map = 1;
    while (i < n && !end && !rc) {
        /* the next samples, as many as fit a batch (at least one) */
        uint64_t j = i, len = 0;
        sk_sample_ref sr;
        while (j < n && !sk_index_sample(ix, j, &sr, NULL) && sr.offset == pos + len &&
               sr.span <= size - sr.offset && (j == i || len + sr.span <= BATCH))
            len += sr.span, j++;
        if (j == i) break;
        size_t want = (size_t)(size - pos < len + SK_TAR_BLOCK ? size - pos : len + SK_TAR_BLOCK), got;
        r->cur ^= 1;
        int mapped = 0;
        uint64_t rewrites = r->rewrites;
        if (use_map && (rc = out_map(r, r->cur, fd, pos, want, &mapped, err))) break;
        struct obuf *b = &r->ob[r->cur];
        if (mapped) {
            got = want;
        } else {
            if ((rc = out_claim(r, r->cur, want, err))) break;
            if ((rc = sk_stream_pread(fd, pos, b->p, want, &got, url, err))) break;
            if (got < want) break; /* shorter than its index: libarchive says how */
            b->len = got;
        }
        for (uint64_t k = i; k < j && !rc; k++) {
            sk_index_sample(ix, k, &sr, NULL);
            unsigned char *p = b->p + (sr.offset - pos);
            uint64_t tail = got - (sr.offset - pos) - sr.span;
            if (!direct_sample(ix, &sr, p, NULL, s) ||
                !ends_sample(p + sr.span, tail, sr.key, sr.key_len, &end)) {
                s->nm = s->elen = 0;
                *from = sr.offset;
                goto out;
            }
            rc = direct_emit(r, url, &sr, p, s, no_crc, r->cur, err);
            if (end) break;
        }
        /* the batch goes to the writer now, not when the next one needs a buffer */
        if (!rc && r->q) rc = out_flush(r, err);
        if (mapped && r->rewrites != rewrites) use_map = 0;
        pos += len;
        i = j;
    }
    *from = end ? UINT64_MAX : pos;
out: /* libarchive counts what it reads */
    r->st.bytes_in += *from == UINT64_MAX ? size : *from;
    sk_index_close(ix);
    if (kept) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL); /* the drain reads at random */
    else close(fd);
    return rc;
}

/* One input: through its index while that agrees with it, then libarchive. */
static int take_input(rs *r, const char *url, struct samp *s, sk_error *err)
{
    uint64_t from = 0;
    if (r->direct && strcmp(url, "-") && !sk_is_s3_url(url) && !r->o->in_open) {
        SK_GUARD(direct_input(r, url, s, &from, err));
        if (from == UINT64_MAX) return SK_OK;
    }
    return read_input(r, url, s, 0, from, err);
}

/* ---------------------------------------------------------------- inputs */

/* Expands the user's inputs: brace patterns; a manifest, a directory or an
 * s3:// prefix become their shards (a directory's or prefix's manifest.json
 * when there is one, else the shards listed in it), as every reading tool
 * takes them. */
static int expand_inputs(sk_s3 *s3, const char *const *in, size_t n, char ***out, size_t *nout,
                         sk_error *err)
{
    char **list = NULL;
    size_t cnt = 0, cap = 0;
    int rc = SK_OK;
    for (size_t i = 0; i < n && !rc; i++) { /* the one resolver (io/dataset.c) */
        sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = s3};
        sk_ds_shard *ds = NULL;
        size_t k = 0;
        rc = sk_ds_resolve(in[i], &ro, &ds, &k, err);
        for (size_t j = 0; j < k && !rc; j++) {
            if ((rc = sk_grow((void **)&list, &cap, cnt + 2, sizeof *list, err))) break;
            list[cnt] = ds[j].url; /* moved */
            ds[j].url = NULL;
            cnt++;
        }
        sk_ds_free(ds, k);
    }
    if (list) list[cnt] = NULL;
    if (rc) {
        for (size_t i = 0; i < cnt; i++) free(list[i]);
        free(list);
        return rc;
    }
    *out = list;
    *nout = cnt;
    return SK_OK;
}

/* Refuses, before anything is written, a run whose output names include
 * one of its inputs: a finished shard (and its .idx) is renamed over its
 * final name, so `shard ds/ -o ds/s-%03d.tar` would replace inputs it had
 * not read yet and leave a dataset of duplicates.  Local inputs are
 * matched by file identity against the files in the output directory that
 * the pattern names (so "./ds/s-000.tar", a symbolic or hard link to it
 * are all caught); s3:// URLs as text. */
static int refuse_own_inputs(const char *pattern, const char *manifest, uint64_t start,
                             char *const *in, size_t n, sk_error *err)
{
    const char *problem = NULL;
    uint64_t k;
    int rc = SK_OK;
    sk_fileids ids = {0}; /* the inputs, by identity (core/fileid.c) */
    if (sk_is_s3_url(pattern)) {
        for (size_t i = 0; i < n && !problem; i++)
            if (sk_shard_number(pattern, in[i], &k) && k >= start) problem = in[i];
    } else {
        const char *slash = strrchr(pattern, '/');
        char odir[4200], name[8400];
        snprintf(odir, sizeof odir, "%.*s", slash ? (int)(slash - pattern) + 1 : 1,
                 slash ? pattern : ".");
        const char *obase = slash ? slash + 1 : pattern;
        for (size_t i = 0; i < n && !rc; i++) rc = sk_fileids_add(&ids, in[i], err);
        DIR *d = !rc && ids.n ? opendir(odir) : NULL; /* none there yet: nothing to replace */
        struct dirent *de;
        while (d && !problem && (de = readdir(d))) {
            if (!sk_shard_number(obase, de->d_name, &k) || k < start) continue;
            snprintf(name, sizeof name, "%s%s", slash ? odir : "", de->d_name);
            problem = sk_fileids_find(&ids, name);
        }
        if (d) closedir(d);
    }
    if (!rc && problem)
        rc = sk_error_set(err, SK_E_USAGE, "%s: an input of this run is also one of its output "
                          "names (%s): write the new shards to another directory or pattern",
                          problem, pattern);
    if (!rc) { /* nor is the manifest (given, or beside the shards) */
        char mpath[4200];
        sk_pack_lock_path(pattern, manifest, mpath, sizeof mpath);
        rc = sk_fileids_refuse(&ids, mpath, "the manifest", err);
    }
    sk_fileids_free(&ids);
    return rc;
}

/* The options that shaped the output, for the manifest (docs/format.md),
 * with jansson (extensions and names escaped whatever they hold).  NULL
 * when out of memory. */
static char *options_json(const rs *r)
{
    const sk_shard_options *o = r->o;
    const char *tmpl = r->pattern_tmpl ? r->pattern_tmpl : o->pattern;
    const char *base = strrchr(tmpl, '/');
    base = base ? base + 1 : tmpl;
    json_t *sh = json_object(), *root = json_object(), *sel = json_array(), *drop = json_array(),
           *ren = json_object();
    int bad = !sh || !root || !sel || !drop || !ren;
    for (size_t i = 0; !bad && i < o->nselect; i++) bad = json_array_append_new(sel, sk_json_str(o->select[i]));
    for (size_t i = 0; !bad && i < o->ndrop; i++) bad = json_array_append_new(drop, sk_json_str(o->drop[i]));
    for (size_t i = 0; !bad && i < o->nrename; i++)
        bad = json_object_set_new(ren, o->rename_from[i], sk_json_str(o->rename_to[i]));
    char z[32];
    snprintf(z, sizeof z, "zstd:%d", o->compress_level);
    bad = bad || json_object_set_new(sh, "pattern", sk_json_str(base)) ||
          json_object_set_new(sh, "start", sk_json_u64(o->start)) ||
          json_object_set_new(sh, "max_size", sk_json_u64(r->max_size)) ||
          json_object_set_new(sh, "max_count", sk_json_u64(r->max_count)) ||
          json_object_set_new(sh, "num_shards", sk_json_u64(o->num_shards)) ||
          json_object_set_new(sh, "order", json_string(o->shuffle ? "shuffle" : "input")) ||
          json_object_set_new(sh, "seed", sk_json_u64(o->shuffle ? o->seed : 0)) ||
          json_object_set_new(sh, "mtime", sk_json_u64(o->mtime)) ||
          json_object_set(sh, "select", sel) || json_object_set(sh, "drop", drop) ||
          json_object_set(sh, "rename", ren) ||
          json_object_set_new(sh, "keys", json_boolean(o->keys_file != NULL)) ||
          json_object_set_new(sh, "compress", o->compress_level ? json_string(z) : json_null());
    if (!bad && sk_image_options_active(o->images)) { /* they shape the output too */
        static const char *const modes[] = {"no", "keep_ratio", "keep_ratio_largest", "center_crop",
                                            "border"};
        static const char *const policies[] = {"skip", "keep", "fail"};
        const sk_image_options *io = o->images;
        json_t *im = json_pack("{s:I, s:s, s:b, s:i, s:I, s:f, s:b, s:s, s:I}", "image_size",
                               (json_int_t)io->image_size, "resize_mode",
                               modes[io->resize_mode >= 0 && io->resize_mode <= 4 ? io->resize_mode : 0],
                               "resize_only_if_bigger", io->resize_only_if_bigger, "encode_quality",
                               io->encode_quality ? io->encode_quality : 95, "min_image_size",
                               (json_int_t)io->min_image_size, "max_aspect_ratio", io->max_aspect_ratio,
                               "image_meta", io->image_meta, "bad_image",
                               policies[io->bad_image >= 0 && io->bad_image <= 2 ? io->bad_image : 0],
                               "max_pixels",
                               (json_int_t)(io->max_pixels ? io->max_pixels : SK_IMAGE_MAX_PIXELS));
        bad = json_object_set_new(sh, "images", im);
    }
    bad = bad || json_object_set(root, "shard", sh);
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(sel), json_decref(drop), json_decref(ren), json_decref(sh), json_decref(root);
    return text;
}

/* Samples after the filters, for --num-shards: from the inputs' indexes
 * when no filter applies and each has a sound one, else a counting pass. */
static int count_samples(rs *r, char **in, size_t n, struct samp *s, sk_error *err)
{
    const sk_shard_options *o = r->o;
    int filtered = o->nselect || o->ndrop || o->keys_file || o->parts;
    for (size_t i = 0; i < n; i++)
        SK_FAIL_IF(!strcmp(in[i], "-"), err, SK_E_USAGE, "--num-shards needs the sample count "
                   "before writing, and stdin can only be read once: add --shuffle (which "
                   "counts while it scatters) or use --max-count");
    for (size_t i = 0; i < n && !filtered; i++) {
        char ip[4200];
        uint64_t size;
        sk_index *ix;
        snprintf(ip, sizeof ip, "%s.idx", in[i]);
        if (input_size(o, in[i], &size, NULL) ||
            (sk_is_s3_url(ip) ? sk_s3_load_index(o->s3, ip, &ix, NULL)
                              : sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, NULL))) {
            filtered = 1;
            break;
        }
        if (sk_index_shard(ix)->size == size) r->total += sk_index_sample_count(ix);
        else filtered = 1;
        sk_index_close(ix);
    }
    if (!filtered) return SK_OK;
    r->total = 0;
    sk_shard_stats keep = r->st;
    for (size_t i = 0; i < n; i++) SK_GUARD(read_input(r, in[i], s, 1, 0, err));
    r->st = keep;
    return SK_OK;
}

static int reshard_run(const char *const *inputs, size_t ninputs, sk_shard_options *opts,
                       const char *pattern_tmpl, sk_shard_stats *stats, sk_error *err)
{
    rs r = {.o = opts, .pattern_tmpl = pattern_tmpl, .rfd = -1};
    struct samp s = {0};
    char **in = NULL;
    sk_run_lock lock = SK_RUN_LOCK_INIT;
    size_t nin = 0;
    int rc = SK_OK;
    clock_gettime(CLOCK_MONOTONIC, &r.t0);
    r.last = r.t0;
    r.out.zlevel = opts->compress_level;
    r.to_stdout = opts->pattern && !strcmp(opts->pattern, "-");
    r.max_size = opts->max_size ? opts->max_size : (512u << 20);
    r.max_count = opts->max_count;
    if (!opts->pattern) return sk_error_set(err, SK_E_USAGE, "no output pattern");
    SK_FAIL_IF((sk_is_s3_url(opts->pattern) || sk_is_s3_url(opts->manifest)) && !opts->s3, err,
               SK_E_USAGE, "%s: an s3:// output needs an S3 client", opts->pattern);
    if (r.to_stdout && (opts->num_shards > 1 || opts->max_count || opts->max_size || opts->resume))
        return sk_error_set(err, SK_E_USAGE, "-o - writes one tar stream: --num-shards, "
                            "--max-size, --max-count and --resume do not apply");
    if (!r.to_stdout) {
        char probe[4200];
        SK_GUARD(sk_shard_name(opts->pattern, 0, probe, sizeof probe, err));
        SK_GUARD(sk_pack_check_suffix(opts->pattern, opts->compress_level, err));
    }
    if (!ninputs) return sk_error_set(err, SK_E_USAGE, "no input shards");
    if ((rc = expand_inputs(opts->s3, inputs, ninputs, &in, &nin, err))) goto cleanup;
    if (!r.to_stdout &&
        (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err)))
        goto cleanup;
    r.st.inputs = nin;
    for (size_t i = 0; i < nin && !rc; i++) { /* for the ETA and the shuffle's buckets */
        uint64_t size;
        if (!(rc = input_size(opts, in[i], &size, err)) && size != UINT64_MAX)
            r.st.bytes_in_total += size;
    }
    if (rc) goto cleanup;
    if (opts->keys_file && (rc = load_keys(&r, opts->keys_file, err))) goto cleanup;

    if (!r.to_stdout) {
        const char *slash = strrchr(opts->pattern, '/');
        snprintf(r.mdir, sizeof r.mdir, "%.*s", slash ? (int)(slash - opts->pattern) : 0,
                 opts->pattern);
        if (r.mdir[0] && !sk_is_s3_url(r.mdir) && (rc = sk_mkdirs(r.mdir, err))) goto cleanup;
        if (opts->manifest) {
            snprintf(r.mpath, sizeof r.mpath, "%s", opts->manifest);
            const char *ms = strrchr(r.mpath, '/');
            snprintf(r.mdir, sizeof r.mdir, "%.*s", ms ? (int)(ms - r.mpath) : 0, r.mpath);
            if (r.mdir[0] && !sk_is_s3_url(r.mdir) && (rc = sk_mkdirs(r.mdir, err))) goto cleanup;
        } else {
            snprintf(r.mpath, sizeof r.mpath, "%s%smanifest.json", r.mdir, r.mdir[0] ? "/" : "");
        }
        /* one run at a time per dataset and per shard names (the locks go
         * with the process) */
        if ((rc = sk_run_lock_take(&lock, opts->pattern, opts->manifest, "shard", 1, err)))
            goto cleanup;
        r.man = sk_manifest_new();
        if (!r.man || !(r.man->options_json = options_json(&r))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            goto cleanup;
        }
        /* a manifest already there: refused, appended to or replaced,
         * before any shard is written; an append starts after its last */
        uint64_t start0 = opts->start;
        r.grow.mode = opts->existing;
        r.grow.parts = opts->parts;
        if ((rc = sk_existing_begin(&r.grow, opts->s3, opts->pattern, r.mpath, r.mdir,
                                r.man->options_json, &opts->start,
                                opts->num_shards ? opts->num_shards : UINT64_MAX, err)) ||
            (opts->start != start0 &&
             (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err))))
            goto cleanup;
    }

    r.out.sink_opts = (sk_sink_opts){opts->s3, opts->s3_part_size};
    if (sk_is_s3_url(opts->pattern) && /* a killed run's unfinished uploads go first */
        (rc = sk_sink_s3_prepare(opts->s3, opts->pattern, opts->start, opts->num_shards, opts->warn,
                                 opts->ctx, err)))
        goto cleanup;
    if (sk_image_options_active(opts->images) && (rc = img_pool_new(&r.pool, opts, err))) goto cleanup;
    r.pbuf = -1;
    if (!opts->compress_level && !sk_is_s3_url(opts->pattern) &&
        (rc = sk_outq_new(&r.q, &r.out, sysconf(_SC_NPROCESSORS_ONLN) > 1, err)))
        goto cleanup;
    /* without filters or image work each sample passes whole: shards
     * with a sound index are read through it (direct_input), into the
     * shuffle's buckets too */
    r.direct = !opts->nselect && !opts->ndrop && !opts->nrename && !opts->keys_file &&
               !opts->parts && !r.pool;
    if (opts->shuffle) {
        /* scatter: every sample into a random bucket (a reference to it
         * when read through its index) */
        if ((rc = sk_shuffler_new(&r.shuf, opts->tmp_dir, opts->seed, opts->shuffle_mem,
                                  r.st.bytes_in_total, err)) ||
            (r.direct && (rc = sk_infiles_new(&r.inf, 0, err))))
            goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
            progress(&r, 0);
        }
        if (!rc && r.pool) rc = img_pool_emit(&r, 1, 1, err);
        if (rc) goto cleanup;
        r.total = sk_shuffler_count(r.shuf);
        if ((rc = sk_shuffler_drain(r.shuf, emit_record, &r, err))) goto cleanup;
    } else {
        if (opts->num_shards && (rc = count_samples(&r, in, nin, &s, err))) goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
        }
        if (!rc && r.pool) rc = img_pool_emit(&r, 1, 1, err);
        if (rc) goto cleanup;
    }
    /* --num-shards: shards left empty (fewer samples than shards) still exist */
    while (!rc && opts->num_shards && !r.to_stdout &&
           r.shard_no + (r.open ? 1 : 0) < opts->num_shards) {
        if (r.open && (rc = close_shard(&r, err))) break;
        rc = open_shard(&r, err);
    }
    if (!rc && !r.open && !r.st.shards) rc = open_shard(&r, err); /* an empty input: one empty shard */
    if (!rc) rc = close_shard(&r, err);
    if (!rc && r.man && opts->parts) {
        r.man->part = opts->part;
        r.man->parts = opts->parts;
        for (size_t i = 0; i < r.man->nshards; i++) r.man->shards[i].part = opts->part;
    }
    if (!rc && r.man) /* last of all: a reader never sees a manifest of missing shards */
        rc = sk_existing_commit(&r.grow, opts->s3, r.man, r.mpath, sk_pack_manifest_flags(opts->manifest),
                                opts->warn, opts->ctx, err);
    if (!rc) progress(&r, 1);

cleanup:
    sk_outq_free(r.q); /* before the abort: nothing writes to a removed file */
    if (rc && r.open && !r.rix) sk_shard_out_abort(&r.out);
    for (int i = 0; i < 2; i++) {
        if (r.ob[i].map) munmap(r.ob[i].map, r.ob[i].maplen);
        free(r.ob[i].heap);
    }
    img_pool_free(r.pool);
    sk_run_lock_release(&lock);
    if (r.rix) sk_index_close(r.rix);
    resume_fd_close(&r);
    sk_shard_out_release(&r.out);
    sk_shuffler_free(r.shuf);
    sk_infiles_free(r.inf);
    sk_manifest_free(r.man);
    sk_existing_release(&r.grow);
    keyset_free(&r.keys);
    for (size_t i = 0; i < nin; i++) free(in[i]);
    free(in);
    free(s.key);
    free(s.m);
    free(s.exts);
    free(s.img);
    free(r.rec);
    free(r.vm);
    r.st.seconds = since(&r.t0);
    if (stats) *stats = r.st;
    return rc;
}

void sk_shard_options_init_sized(sk_shard_options *o, size_t size)
{
    static const sk_shard_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_reshard(const char *const *inputs, size_t ninputs, const sk_shard_options *opts,
               sk_shard_stats *stats, sk_error *err)
{
    /* --part: {part} in the pattern (and manifest) names this part's files */
    sk_shard_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_shard_options", err));
    const char *pattern_tmpl = o.pattern;
    char *pattern = NULL, *manifest = NULL;
    if (o.pattern && strcmp(o.pattern, "-")) {
        SK_GUARD(sk_part_output_names(o.pattern, o.manifest, o.part, o.parts,
                                      &pattern, &manifest, err));
        o.pattern = pattern;
        if (manifest) o.manifest = manifest;
    }
    int rc = reshard_run(inputs, ninputs, &o, pattern_tmpl, stats, err);
    free(pattern);
    free(manifest);
    return rc;
}
