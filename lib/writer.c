/*
 * writer.c - a shard file from temporary name to final name (see writer.h).
 * The index is written before the rename, so a shard visible under its
 * final name always has its index beside it.
 */
#include "writer.h"
#include "s3io.h"
#include "tar.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int sk_shard_out_begin(sk_shard_out *o, const char *path, sk_error *err)
{
    sk_index_builder *keep = o->index;
    sk_s3 *s3 = o->s3;                 /* s3io */
    uint64_t part_size = o->s3_part_size;
    free(o->path);
    free(o->tmp);
    free(o->index_path);
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->index = keep ? keep : sk_index_builder_new();
    o->s3 = s3, o->s3_part_size = part_size; /* s3io */
    o->path = strdup(path);
    o->tmp = sk_tmp_name(path, err);
    size_t n = strlen(path) + 5;
    o->index_path = malloc(n);
    SK_FAIL_IF(!o->index || !o->path || !o->tmp || !o->index_path, err, SK_E_NOMEM, "out of memory");
    snprintf(o->index_path, n, "%s.idx", path);
    sk_index_builder_reset(o->index);
    if (sk_is_s3_url(path)) return sk_sink_s3_begin(o, err); /* s3io: no local file */
    unlink(o->path);
    unlink(o->index_path);
    unlink(o->tmp);
    o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    SK_FAIL_IF(o->fd < 0, err, SK_E_IO, "%s: cannot create: %s", o->tmp, strerror(errno));
    return SK_OK;
}

int sk_shard_out_writev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t len,
                        uint32_t crc, sk_error *err)
{
    if (o->bytes < SK_TAR_BLOCK) { /* remember the first block's checksum */
        uint64_t need = SK_TAR_BLOCK - o->bytes;
        for (int i = 0; i < iovcnt && need; i++) {
            size_t k = iov[i].iov_len < need ? iov[i].iov_len : need;
            o->first_block_crc = sk_crc32c(o->first_block_crc, iov[i].iov_base, k);
            need -= k;
        }
    }
    if (o->sink) SK_GUARD(sk_sink_s3_write(o, iov, iovcnt, err)); /* s3io */
    uint64_t left = o->sink ? 0 : len;
    while (left) {
        ssize_t w = writev(o->fd, iov, iovcnt);
        if (w < 0 && errno == EINTR) continue;
        SK_FAIL_IF(w < 0, err, SK_E_IO, "%s: write failed: %s", o->tmp, strerror(errno));
        left -= (uint64_t)w;
        while (iovcnt && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    o->crc = sk_crc32c_combine(o->crc, crc, len);
    o->bytes += len;
    return SK_OK;
}

int sk_shard_out_truncate(sk_shard_out *o, uint64_t size, uint32_t crc, sk_error *err)
{
    SK_FAIL_IF(o->sink, err, SK_E_IO, "%s: a member failed mid-copy and cannot be taken back out "
               "of a shard streaming to S3", o->path); /* s3io */
    SK_FAIL_IF(ftruncate(o->fd, (off_t)size) != 0 || lseek(o->fd, (off_t)size, SEEK_SET) < 0, err,
               SK_E_IO, "%s: cannot truncate: %s", o->tmp, strerror(errno));
    o->bytes = size;
    o->crc = crc;
    return SK_OK;
}

int sk_shard_out_finish(sk_shard_out *o, sk_index_shard_info *info, sk_error *err)
{
    static const unsigned char eoa[2 * SK_TAR_BLOCK];
    struct iovec iov = {(void *)eoa, sizeof eoa};
    SK_GUARD(sk_shard_out_writev(o, &iov, 1, sizeof eoa, sk_crc32c(0, eoa, sizeof eoa), err));
    if (o->sink) return sk_sink_s3_finish(o, info, err); /* s3io */
    int fd = o->fd;
    o->fd = -1;
    SK_FAIL_IF(close(fd) != 0, err, SK_E_IO, "%s: close failed: %s", o->tmp, strerror(errno));
    info->size = o->bytes;
    info->crc32c = o->crc;
    info->first_block_crc32c = o->first_block_crc;
    info->flags = 0;
    SK_GUARD(sk_index_builder_write(o->index, o->index_path, info, err));
    SK_FAIL_IF(rename(o->tmp, o->path) != 0, err, SK_E_IO, "%s: rename to %s failed: %s", o->tmp,
               o->path, strerror(errno));
    return SK_OK;
}

void sk_shard_out_abort(sk_shard_out *o)
{
    if (o->sink) sk_sink_s3_abort(o); /* s3io */
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->tmp) unlink(o->tmp);
}

void sk_shard_out_release(sk_shard_out *o)
{
    if (o->sink) sk_sink_s3_abort(o); /* s3io */
    sk_index_builder_free(o->index);
    free(o->path);
    free(o->tmp);
    free(o->index_path);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}
