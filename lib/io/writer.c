/*
 * writer.c - a shard file from temporary name to final name (see writer.h).
 * The index is written before the rename, so a shard visible under its
 * final name always has its index beside it.
 */
#include "io/writer.h"
#include "format/format.h"
#include "format/tar.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

/* ------------------------------------------------------------ compression */

struct sk_zout {
    ZSTD_CCtx *cctx;
    unsigned char *pend; /* tar bytes [pend_pos, o->bytes) at pend[start..len) */
    size_t start, len, cap;
    uint64_t pend_pos;
    uint64_t next_sample; /* first index record not yet known to be in a frame */
    unsigned char *cbuf;
    size_t ccap;
    uint64_t file_bytes;
    sk_zstd_frame *frames;
    size_t nframes, cap_frames;
};

static void z_free(struct sk_zout *z)
{
    if (!z) return;
    ZSTD_freeCCtx(z->cctx);
    free(z->pend);
    free(z->cbuf);
    free(z->frames);
    free(z);
}

/* Writes file bytes, keeping the file CRC and the first block's CRC. */
static int file_write(sk_shard_out *o, const void *buf, size_t n, sk_error *err)
{
    if (o->z->file_bytes < SK_TAR_BLOCK) {
        size_t k = SK_TAR_BLOCK - o->z->file_bytes < n ? SK_TAR_BLOCK - o->z->file_bytes : n;
        o->first_block_crc = sk_crc32c(o->first_block_crc, buf, k);
    }
    struct iovec one = {(void *)buf, n};
    SK_GUARD(o->sink->ops->write(o->sink, &one, 1, n, err));
    o->crc = sk_crc32c(o->crc, buf, n);
    o->z->file_bytes += n;
    return SK_OK;
}

/* Compresses the next n pending bytes into one frame. */
static int z_frame(sk_shard_out *o, size_t n, sk_error *err)
{
    struct sk_zout *z = o->z;
    size_t bound = ZSTD_compressBound(n);
    if (bound > z->ccap) {
        unsigned char *c = sk_xrealloc(z->cbuf, bound, err);
        if (!c) return SK_E_NOMEM;
        z->cbuf = c;
        z->ccap = bound;
    }
    SK_GUARD(sk_grow((void **)&z->frames, &z->cap_frames, z->nframes + 1, sizeof *z->frames, err));
    size_t c = ZSTD_compress2(z->cctx, z->cbuf, z->ccap, z->pend + z->start, n);
    SK_FAIL_IF(ZSTD_isError(c), err, SK_E_IO, "%s: zstd: %s", o->path, ZSTD_getErrorName(c));
    sk_zstd_frame *f = &z->frames[z->nframes++];
    f->c_off = z->file_bytes;
    f->d_off = z->pend_pos;
    f->c_size = (uint32_t)c;
    f->d_size = (uint32_t)n;
    SK_GUARD(file_write(o, z->cbuf, c, err));
    z->start += n;
    z->pend_pos += n;
    return SK_OK;
}

/* Cuts frames at sample ends (each at least SK_ZFRAME_MIN bytes), or at
 * SK_ZFRAME_MAX inside a huge sample; final: everything left. */
static int z_flush(sk_shard_out *o, int final, sk_error *err)
{
    struct sk_zout *z = o->z;
    for (;;) {
        uint64_t off, span, cut = 0;
        size_t avail = z->len - z->start;
        if (!avail) break;
        for (uint64_t i = z->next_sample;
             !sk_index_builder_range(o->index, i, &off, &span) && off + span <= o->bytes; i++) {
            if (off + span <= z->pend_pos) { z->next_sample = i + 1; continue; }
            if (off + span - z->pend_pos > SK_ZFRAME_MAX) break;
            cut = off + span - z->pend_pos;
            z->next_sample = i + 1;
            if (cut >= SK_ZFRAME_MIN) break;
        }
        if (cut >= SK_ZFRAME_MIN) SK_GUARD(z_frame(o, (size_t)cut, err));
        else if (avail >= SK_ZFRAME_MAX) SK_GUARD(z_frame(o, cut ? (size_t)cut : SK_ZFRAME_MAX, err));
        else if (final) SK_GUARD(z_frame(o, avail, err));
        else break;
    }
    if (z->start) { /* compact */
        memmove(z->pend, z->pend + z->start, z->len - z->start);
        z->len -= z->start;
        z->start = 0;
    }
    return SK_OK;
}

/* Resets o for a new shard, keeping the index builder, the level, the
 * compression context and the gather buffer. */
static int reset(sk_shard_out *o, sk_error *err)
{
    sk_index_builder *keep = o->index;
    struct sk_zout *z = o->z;
    int zlevel = o->zlevel, gather = o->gather;
    unsigned char *gbuf = o->gbuf;
    sk_sink_opts sink_opts = o->sink_opts;
    if (o->sink) o->sink->ops->abort(o->sink);
    free(o->path);
    memset(o, 0, sizeof *o);
    o->zlevel = zlevel;
    o->gather = gather;
    o->gbuf = gbuf;
    o->sink_opts = sink_opts;
    o->index = keep ? keep : sk_index_builder_new();
    SK_FAIL_IF(!o->index, err, SK_E_NOMEM, "out of memory");
    sk_index_builder_reset(o->index);
    if (zlevel > 0) {
        if (!z && !(z = calloc(1, sizeof *z))) return sk_error_set(err, SK_E_NOMEM, "out of memory");
        o->z = z;
        if (!z->cctx) {
            SK_FAIL_IF(!(z->cctx = ZSTD_createCCtx()), err, SK_E_NOMEM, "out of memory");
            SK_FAIL_IF(ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, zlevel)),
                       err, SK_E_USAGE, "zstd level %d out of range", zlevel);
        }
        z->start = z->len = 0;
        z->pend_pos = z->next_sample = z->file_bytes = 0;
        z->nframes = 0;
    } else {
        z_free(z);
    }
    return SK_OK;
}

int sk_shard_out_begin(sk_shard_out *o, const char *path, sk_error *err)
{
    SK_GUARD(reset(o, err));
    o->path = strdup(path);
    SK_FAIL_IF(!o->path, err, SK_E_NOMEM, "out of memory");
    return sk_sink_open(&o->sink, path, &o->sink_opts, err);
}

int sk_shard_out_begin_fd(sk_shard_out *o, int fd, const char *name, sk_error *err)
{
    SK_GUARD(reset(o, err));
    o->path = strdup(name);
    SK_FAIL_IF(!o->path, err, SK_E_NOMEM, "out of memory");
    o->stream = 1;
    return sk_sink_open_fd(&o->sink, fd, name, err);
}

int sk_shard_out_begin_sink(sk_shard_out *o, sk_sink *sink, const char *path, int stream,
                            sk_error *err)
{
    int rc = reset(o, err);
    if (!rc && !(o->path = strdup(path))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) {
        sink->ops->abort(sink);
        return rc;
    }
    o->stream = stream;
    o->sink = sink;
    return SK_OK;
}

/* Compressed: append to the pending bytes, then cut what frames we can. */
static int z_append(sk_shard_out *o, const struct iovec *iov, int iovcnt, uint64_t len,
                    sk_error *err)
{
    struct sk_zout *z = o->z;
    if (z->len + len > z->cap) {
        size_t nc = z->cap ? z->cap : (1u << 20);
        while (nc < z->len + len) nc *= 2;
        unsigned char *p = sk_xrealloc(z->pend, nc, err);
        if (!p) return SK_E_NOMEM;
        z->pend = p;
        z->cap = nc;
    }
    for (int i = 0; i < iovcnt; i++) {
        memcpy(z->pend + z->len, iov[i].iov_base, iov[i].iov_len);
        z->len += iov[i].iov_len;
    }
    o->bytes += len;
    return z_flush(o, 0, err);
}

/* gather: writes the buffered bytes. */
static int g_flush(sk_shard_out *o, sk_error *err)
{
    if (!o->glen) return SK_OK;
    struct iovec one = {o->gbuf, o->glen};
    o->glen = 0;
    return o->sink->ops->write(o->sink, &one, 1, one.iov_len, err);
}

/* gather: appends iov to the buffer, writing it each time it fills (so
 * small appends go out in writes of SK_GATHER bytes; a large append
 * between them is written as it is, see sk_shard_out_writev). */
static int g_append(sk_shard_out *o, const struct iovec *iov, int iovcnt, sk_error *err)
{
    if (!o->gbuf && !(o->gbuf = sk_xmalloc(SK_GATHER, err))) return SK_E_NOMEM;
    for (int i = 0; i < iovcnt; i++) {
        const unsigned char *p = iov[i].iov_base;
        size_t left = iov[i].iov_len;
        while (left) {
            size_t k = left < SK_GATHER - o->glen ? left : SK_GATHER - o->glen;
            memcpy(o->gbuf + o->glen, p, k);
            o->glen += k;
            p += k;
            left -= k;
            if (o->glen == SK_GATHER) SK_GUARD(g_flush(o, err));
        }
    }
    return SK_OK;
}

int sk_shard_out_writev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t len,
                        uint32_t crc, sk_error *err)
{
    if (o->z) return z_append(o, iov, iovcnt, len, err);
    if (o->bytes < SK_TAR_BLOCK) { /* remember the first block's checksum */
        uint64_t need = SK_TAR_BLOCK - o->bytes;
        for (int i = 0; i < iovcnt && need; i++) {
            size_t k = iov[i].iov_len < need ? iov[i].iov_len : need;
            o->first_block_crc = sk_crc32c(o->first_block_crc, iov[i].iov_base, k);
            need -= k;
        }
    }
    /* an append of a quarter of the gather buffer or more is written as
     * it is, after what is gathered: it is a large write already, and
     * copied through the buffer into 1 MiB-aligned writes (the kernel's
     * large page-cache folios) it cost more, not less: photos of ~370 KB
     * from `pack --from-urls`, 2,400 of them, took 3.6 CPU s gathered and
     * 2.4 s written as they came (4 interleaved runs, load 7) */
    if (o->gather && o->sink->ops->pwrite && len < SK_GATHER / 4) {
        SK_GUARD(g_append(o, iov, iovcnt, err));
    } else {
        if (o->gather) SK_GUARD(g_flush(o, err));
        SK_GUARD(o->sink->ops->write(o->sink, iov, iovcnt, len, err));
    }
    o->crc = sk_crc32c_combine(o->crc, crc, len);
    o->bytes += len;
    return SK_OK;
}

int sk_shard_out_pwritev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t off,
                         uint64_t len, sk_error *err)
{
    SK_FAIL_IF(!o->sink->ops->pwrite || o->z || o->glen, err, SK_E_IO,
               "%s: internal error: positional writes need a plain local file, not gathered",
               o->path);
    return o->sink->ops->pwrite(o->sink, iov, iovcnt, off, len, err);
}

int sk_shard_out_set_written(sk_shard_out *o, uint64_t bytes, uint32_t crc,
                             uint32_t first_block_crc, sk_error *err)
{
    /* finish appends the end-of-archive blocks at the file position */
    SK_FAIL_IF(!o->sink->ops->truncate || o->glen, err, SK_E_IO,
               "%s: internal error: positional writes need a plain local file, not gathered",
               o->path);
    SK_GUARD(o->sink->ops->truncate(o->sink, bytes, 0, err));
    o->bytes = bytes;
    o->crc = crc;
    o->first_block_crc = first_block_crc;
    return SK_OK;
}

int sk_shard_out_truncate(sk_shard_out *o, uint64_t size, uint32_t crc, sk_error *err)
{
    if (o->z) {
        SK_FAIL_IF(size < o->z->pend_pos || size > o->bytes, err, SK_E_IO,
                   "%s: cannot drop bytes already compressed", o->path);
        o->z->len -= (size_t)(o->bytes - size);
        o->bytes = size;
        return SK_OK;
    }
    SK_FAIL_IF(!o->sink->ops->truncate, err, SK_E_IO, "%s: a member failed mid-copy and cannot "
               "be taken back out of a shard being uploaded", o->path);
    SK_GUARD(g_flush(o, err));
    SK_GUARD(o->sink->ops->truncate(o->sink, size, 1, err));
    o->bytes = size;
    o->crc = crc;
    return SK_OK;
}

uint64_t sk_shard_out_file_bytes(const sk_shard_out *o)
{
    return o->z ? o->z->file_bytes + (o->z->len - o->z->start) : o->bytes;
}

/* Compressed: last frames, the seek table, and each sample's frame range. */
static int z_finish(sk_shard_out *o, sk_error *err)
{
    struct sk_zout *z = o->z;
    SK_GUARD(z_flush(o, 1, err));
    size_t tsize = z->nframes * 8 + 9;
    unsigned char *t = sk_xmalloc(tsize + 8, err);
    if (!t) return SK_E_NOMEM;
    sk_put_le32(t, 0x184D2A5Eu); /* skippable frame */
    sk_put_le32(t + 4, (uint32_t)tsize);
    for (size_t i = 0; i < z->nframes; i++) {
        sk_put_le32(t + 8 + i * 8, z->frames[i].c_size);
        sk_put_le32(t + 12 + i * 8, z->frames[i].d_size);
    }
    unsigned char *foot = t + 8 + z->nframes * 8;
    sk_put_le32(foot, (uint32_t)z->nframes);
    foot[4] = 0; /* descriptor: no per-frame checksums */
    sk_put_le32(foot + 5, 0x8F92EAB1u);
    int rc = file_write(o, t, tsize + 8, err);
    free(t);
    SK_GUARD(rc);
    size_t f = 0;
    uint64_t off, span;
    for (uint64_t i = 0; !sk_index_builder_range(o->index, i, &off, &span); i++) {
        while (f + 1 < z->nframes && z->frames[f + 1].d_off <= off) f++;
        size_t l = f;
        uint64_t last = span ? off + span - 1 : off;
        while (l + 1 < z->nframes && z->frames[l + 1].d_off <= last) l++;
        sk_index_builder_set_stored(o->index, i, z->frames[f].c_off,
                                    z->frames[l].c_off + z->frames[l].c_size - z->frames[f].c_off);
    }
    return SK_OK;
}

int sk_shard_out_finish(sk_shard_out *o, sk_index_shard_info *info, sk_error *err)
{
    static const unsigned char eoa[2 * SK_TAR_BLOCK];
    struct iovec iov = {(void *)eoa, sizeof eoa};
    SK_GUARD(sk_shard_out_writev(o, &iov, 1, sizeof eoa, sk_crc32c(0, eoa, sizeof eoa), err));
    if (o->z) SK_GUARD(z_finish(o, err));
    SK_GUARD(g_flush(o, err));
    info->size = sk_shard_out_file_bytes(o);
    info->crc32c = o->crc;
    info->first_block_crc32c = o->first_block_crc;
    info->flags = o->z ? SK_INDEX_ZSTD : 0;
    sk_sink *s = o->sink;
    o->sink = NULL;
    return s->ops->publish(s, o->stream ? NULL : o->index, info, err);
}

void sk_shard_out_abort(sk_shard_out *o)
{
    sk_sink *s = o->sink;
    o->sink = NULL;
    o->glen = 0;
    if (s) s->ops->abort(s);
}

void sk_shard_out_release(sk_shard_out *o)
{
    sk_shard_out_abort(o);
    sk_index_builder_free(o->index);
    z_free(o->z);
    free(o->gbuf);
    free(o->path);
    memset(o, 0, sizeof *o);
}
