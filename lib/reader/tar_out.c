/*
 * tar_out.c - samples as one tar stream on a file descriptor, in large
 * writes (sk_reader_tar_out_*, for `shardkit cat` into a pipe).
 *
 * sk_reader_write_tar makes three write()s a member (header, data,
 * padding): on a pipe each one is a syscall and often a wakeup of the
 * consumer, and they cost more than the bytes.  Here members collect as a
 * list of pieces, about 1 MiB of them written at once with writev.  A
 * piece is bytes copied into a 1 MiB buffer (headers, padding, small
 * data), a member too large for it (written from where it lies), or - when
 * the tar_out is bound to the reader the samples come from
 * (sk_reader_tar_out_bind) - a run of the shard's own bytes in the
 * reader's ring: a member whose stored header is the very header written
 * here, followed by zero padding, is the same bytes either way, so it is
 * written from the ring without the copy (reader_raw.h: the reader keeps
 * those bytes until they are written).  Shards `shardkit pack` wrote are
 * all such members; anything else (another tar's headers, uppercase
 * extensions, skipped entries between members) goes through the buffer.
 * sk_reader_write_tar is the same member loop with no buffer, so the
 * bytes are the same on every path.
 */
#include "core/internal.h"
#include "format/tar.h"
#include "reader/reader_raw.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define OUT_CAP (1u << 20)
#define MAX_PIECES 256

/* Bytes to write, in order: buf[pos..pos+len) (st NULL) or tar positions
 * pos..pos+len of st's ring. */
struct piece {
    sk_reader_stream *st;
    uint64_t pos;
    size_t len;
};

struct sk_reader_tar_out {
    int fd;
    char *name;
    unsigned char *buf; /* NULL: every piece is written through */
    size_t len;         /* of buf */
    struct piece *pc;
    size_t npc, pending; /* pieces, their bytes */
    sk_reader *r;        /* bound: samples of r may be written from its ring */
    int rc;              /* a write the reader asked for (let_go) failed: */
    sk_error err;        /* reported by the next call */
};

int sk_reader_tar_out_open(sk_reader_tar_out **out, int fd, const char *fd_name, sk_error *err)
{
    *out = NULL;
    sk_reader_tar_out *t = calloc(1, sizeof *t);
    if (t) t->buf = malloc(OUT_CAP);
    if (t) t->pc = malloc(MAX_PIECES * sizeof *t->pc);
    if (t) t->name = strdup(fd_name ? fd_name : "output");
    if (!t || !t->buf || !t->pc || !t->name) {
        if (t) free(t->buf), free(t->pc), free(t->name);
        free(t);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    t->fd = fd;
    /* A pipe of 1 MiB (the unprivileged limit) takes a buffer in one
     * write, and its reader wakes once per buffer, not per 64 KiB. */
    struct stat sb;
    if (!fstat(fd, &sb) && S_ISFIFO(sb.st_mode)) (void)fcntl(fd, F_SETPIPE_SZ, (int)OUT_CAP);
    *out = t;
    return SK_OK;
}

/* Writes every piece, in one writev (IOV_MAX > MAX_PIECES). */
static int flush(sk_reader_tar_out *t, sk_error *err)
{
    if (!t->npc) return SK_OK;
    struct iovec iov[MAX_PIECES];
    int n = (int)t->npc, rc = SK_OK;
    for (int i = 0; i < n; i++) {
        const struct piece *q = &t->pc[i];
        iov[i].iov_len = q->len;
        if (!q->st) {
            iov[i].iov_base = t->buf + q->pos;
            continue;
        }
        const unsigned char *p;
        size_t a;
        sk_reader_stream_peek(q->st, q->pos, q->len, &p, &a);
        if (a < q->len && !rc) /* the reader let them go: a bug, never bad bytes */
            rc = sk_error_set(err, SK_E_USAGE, "%s: held bytes at tar offset %llu left the ring",
                              t->name, (unsigned long long)q->pos);
        iov[i].iov_base = (void *)p;
    }
    t->npc = t->pending = t->len = 0;
    return rc ? rc : sk_writev_all(t->fd, iov, n, t->name, err);
}

/* Appends n bytes, through the buffer or (large) straight out. */
static int put(sk_reader_tar_out *t, const void *p, size_t n, sk_error *err)
{
    if (!t->buf) return sk_write_all(t->fd, p, n, t->name, err);
    /* (a large piece goes out after everything before it) */
    if (t->pending + n > OUT_CAP || t->npc == MAX_PIECES || n > OUT_CAP / 2) SK_GUARD(flush(t, err));
    if (n > OUT_CAP / 2) return sk_write_all(t->fd, p, n, t->name, err);
    memcpy(t->buf + t->len, p, n);
    struct piece *q = t->npc ? &t->pc[t->npc - 1] : NULL;
    if (q && !q->st && q->pos + q->len == t->len) q->len += n;
    else t->pc[t->npc++] = (struct piece){NULL, t->len, n};
    t->len += n;
    t->pending += n;
    return SK_OK;
}

/* Appends tar positions pos..pos+n of st's ring, held there until written:
 * out at about 1 MiB, or a quarter of the ring so that the reader's
 * producer keeps room to read ahead. */
static int put_span(sk_reader_tar_out *t, sk_reader_stream *st, uint64_t pos, size_t n,
                    sk_error *err)
{
    if (t->npc == MAX_PIECES) SK_GUARD(flush(t, err));
    struct piece *q = t->npc ? &t->pc[t->npc - 1] : NULL;
    if (q && q->st == st && q->pos + q->len == pos) q->len += n;
    else t->pc[t->npc++] = (struct piece){st, pos, n};
    t->pending += n;
    size_t lim = sk_reader_stream_cap(st) / 4;
    if (t->pending >= (lim < OUT_CAP ? lim : OUT_CAP)) SK_GUARD(flush(t, err));
    return SK_OK;
}

static int all_zero(const unsigned char *p, size_t n)
{
    static const unsigned char zeros[SK_TAR_BLOCK];
    return !memcmp(p, zeros, n); /* n < SK_TAR_BLOCK */
}

int sk_reader_tar_out_add(sk_reader_tar_out *t, const sk_reader_sample *s, sk_error *err)
{
    static const unsigned char zeros[SK_TAR_BLOCK];
    unsigned char hdr[SK_TAR_HEADER_MAX];
    char name[SK_TAR_NAME_MAX + 1];
    if (t->rc) {
        if (err) *err = t->err;
        return t->rc;
    }
    sk_reader_raw raw;
    int from_ring = t->r && t->buf && sk_reader_raw_of(t->r, s, &raw);
    for (size_t i = 0; i < s->nmembers; i++) {
        const sk_reader_member *m = &s->members[i];
        SK_FAIL_IF(s->key_len + 1 + m->ext_len > SK_TAR_NAME_MAX, err, SK_E_INPUT,
                   "%s: member name of sample '%s' is too long", s->shard_url, s->key);
        memcpy(name, s->key, s->key_len);
        name[s->key_len] = '.';
        memcpy(name + s->key_len + 1, m->ext, m->ext_len);
        size_t nl = s->key_len + 1 + m->ext_len;
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        if (from_ring) {
            /* the stored header, data and padding are these bytes */
            const struct sk_reader_mem *rm = &raw.m[i];
            uint64_t end = rm->data + rm->size + pad;
            if (rm->size == m->size && end - raw.pos <= raw.len &&
                sk_tar_header_matches(raw.p + (rm->hdr - raw.pos), (size_t)(rm->data - rm->hdr),
                                      name, nl, m->size, 0) &&
                all_zero(raw.p + (rm->data + rm->size - raw.pos), pad)) {
                SK_GUARD(put_span(t, raw.st, rm->hdr, (size_t)(end - rm->hdr), err));
                continue;
            }
        }
        size_t hl = sk_tar_header(hdr, name, nl, m->size, 0);
        SK_GUARD(put(t, hdr, hl, err));
        SK_GUARD(put(t, m->data, (size_t)m->size, err));
        if (pad) SK_GUARD(put(t, zeros, pad, err));
    }
    return SK_OK;
}

/* The reader's holder (reader_raw.h). */
static uint64_t hold_held(void *ctx, sk_reader_stream *st)
{
    sk_reader_tar_out *t = ctx;
    for (size_t i = 0; i < t->npc; i++)
        if (t->pc[i].st == st) return t->pc[i].pos;
    return UINT64_MAX;
}

static void hold_let_go(void *ctx)
{
    sk_reader_tar_out *t = ctx;
    int rc = t->rc ? SK_OK : flush(t, &t->err);
    if (rc) t->rc = rc;
    t->npc = t->pending = t->len = 0; /* after a failed write: dropped */
}

static void hold_detach(void *ctx)
{
    sk_reader_tar_out *t = ctx;
    hold_let_go(t);
    t->r = NULL;
}

void sk_reader_tar_out_bind(sk_reader_tar_out *t, sk_reader *r)
{
    if (t->r) {
        hold_let_go(t);
        sk_reader_set_holder(t->r, NULL);
    }
    t->r = r;
    if (r) sk_reader_set_holder(r, &(sk_reader_holder){t, hold_held, hold_let_go, hold_detach});
}

int sk_reader_write_tar(const sk_reader_sample *s, int fd, const char *fd_name, sk_error *err)
{
    sk_reader_tar_out direct = {.fd = fd, .name = (char *)fd_name};
    return sk_reader_tar_out_add(&direct, s, err);
}

int sk_reader_write_tar_end(int fd, const char *fd_name, sk_error *err)
{
    sk_reader_tar_out direct = {.fd = fd, .name = (char *)fd_name};
    return sk_reader_tar_out_finish(&direct, err);
}

int sk_reader_tar_out_finish(sk_reader_tar_out *t, sk_error *err)
{
    static const unsigned char zeros[2 * SK_TAR_BLOCK];
    if (t->rc) {
        if (err) *err = t->err;
        return t->rc;
    }
    SK_GUARD(put(t, zeros, sizeof zeros, err));
    return flush(t, err);
}

void sk_reader_tar_out_free(sk_reader_tar_out *t)
{
    if (!t) return;
    if (t->r) sk_reader_set_holder(t->r, NULL); /* what it held is dropped */
    free(t->buf);
    free(t->pc);
    free(t->name);
    free(t);
}
