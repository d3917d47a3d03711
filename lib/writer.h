/*
 * writer.h - one output shard file on its way to its final name: written
 * under a temporary name, checksummed as it goes, closed with the tar
 * end-of-archive blocks, its index written beside it, then renamed.
 * Internal to libshardkit; pack (and later shard) drive it.
 */
#ifndef SK_WRITER_H
#define SK_WRITER_H

#include "internal.h"
#include <sys/uio.h>

typedef struct sk_shard_out {
    char *path, *tmp, *index_path;
    int fd;
    uint64_t bytes;           /* written so far */
    uint32_t crc;             /* CRC32C of those bytes */
    uint32_t first_block_crc; /* CRC32C of the first 512 bytes */
    sk_index_builder *index;  /* records of this shard */
    /* s3io: for an s3:// path, the client (set by the owner, kept across
     * begin) and the upload in progress (sink_s3.c) instead of fd */
    sk_s3 *s3;
    uint64_t s3_part_size;
    struct sk_sink_s3 *sink;
} sk_shard_out;

/* Opens path's temporary name for writing (removing any old final file
 * first, which on ext4 avoids waiting for its data to flush). */
int sk_shard_out_begin(sk_shard_out *o, const char *path, sk_error *err);
/* Appends iov (len bytes in all, whose CRC32C is crc). */
int sk_shard_out_writev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t len,
                        uint32_t crc, sk_error *err);
/* Rewinds to an earlier size (to drop a member that failed mid-copy). */
int sk_shard_out_truncate(sk_shard_out *o, uint64_t size, uint32_t crc, sk_error *err);
/* End-of-archive, close, index beside it, then the rename that publishes
 * the shard.  info receives size and checksums. */
int sk_shard_out_finish(sk_shard_out *o, sk_index_shard_info *info, sk_error *err);
/* Removes the temporary file; safe after a failure at any point. */
void sk_shard_out_abort(sk_shard_out *o);
/* Frees names and the index builder. */
void sk_shard_out_release(sk_shard_out *o);

#endif
