/*
 * writer.h - one output shard file on its way to its final name: written
 * under a temporary name, checksummed as it goes, closed with the tar
 * end-of-archive blocks, its index written beside it, then renamed.
 * Internal to libshardkit; pack and shard drive it.
 *
 * Compression (zlevel > 0, set before sk_shard_out_begin): the shard becomes
 * a .tar.zst in the zstd seekable format.  Tar bytes collect in a pending
 * buffer; a frame is cut at the end of a sample (known from the index
 * records the caller adds) once the frame holds at least SK_ZFRAME_MIN
 * bytes, so a large sample gets its own frame and small ones share one; a
 * frame never grows past SK_ZFRAME_MAX (a huge sample then spans frames).
 * The end-of-archive blocks go in the last frame, the seek table in a final
 * skippable frame, and at finish each sample's stored_offset/stored_span
 * becomes the compressed range of the frames holding it.  `bytes` stays the
 * tar (decompressed) position, so callers compute offsets the same way in
 * both modes; `crc` and the shard info describe the file as written.
 */
#ifndef SK_WRITER_H
#define SK_WRITER_H

#include "io/sink.h"

typedef struct sk_shard_out {
    char *path;               /* the final name (file or s3:// URL) */
    sk_sink *sink;            /* where the bytes go (NULL between shards) */
    sk_sink_opts sink_opts;   /* set by the owner, kept across begin */
    uint64_t bytes;           /* written so far */
    uint32_t crc;             /* CRC32C of those bytes */
    uint32_t first_block_crc; /* CRC32C of the first 512 bytes */
    sk_index_builder *index;  /* records of this shard */
    int zlevel;               /* zstd level 1..22, 0 = plain tar; kept by begin */
    int stream;               /* written to a caller's fd: no index, no rename */
    struct sk_zout *z;        /* compression state (zlevel > 0) */
    int gather;               /* set by the owner, kept by begin: see below */
    unsigned char *gbuf;      /* gather: bytes not yet written, glen of SK_GATHER */
    size_t glen;
} sk_shard_out;

/* gather: plain shards written to a local file collect small appends
 * (under SK_GATHER / 4 bytes; larger ones are written as they come) in a
 * buffer of SK_GATHER bytes and write it whole, for an owner that appends
 * a small sample at a time (the sample writer): the kernel's cost of a buffered write is mostly per
 * page cache page, and writes of 1 MiB get large pages where 15 KB writes
 * get 4 KiB ones (a third of the system time on ext4, when memory allows),
 * and one write call replaces dozens.  A write failure then surfaces at a
 * later append or at finish, still naming the file.  Not with positional
 * writes (pack's threads). */
#define SK_GATHER (1u << 20)

#define SK_ZFRAME_MIN (64u << 10)
#define SK_ZFRAME_MAX (8u << 20)

/* Opens the sink for path (sink.h: a local temporary name, or an S3
 * upload).  A zero-initialised sk_shard_out is ready for begin. */
int sk_shard_out_begin(sk_shard_out *o, const char *path, sk_error *err);
/* Writes one tar stream to fd (stdout for `-o -`) instead of a file:
 * no temporary name, index or rename; name is used in messages. */
int sk_shard_out_begin_fd(sk_shard_out *o, int fd, const char *name, sk_error *err);
/* The same through a sink the caller made (a dry run's counting one),
 * named path in messages; stream as for begin_fd (no index published).
 * The sink is o's from now on, also on failure (then aborted). */
int sk_shard_out_begin_sink(sk_shard_out *o, sk_sink *sink, const char *path, int stream,
                            sk_error *err);
/* Appends iov (len bytes in all, whose CRC32C is crc). */
int sk_shard_out_writev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t len,
                        uint32_t crc, sk_error *err);
/* Positional writes (local files only), for several threads filling one plain shard at
 * offsets planned in advance (pack): iov goes at off; nothing else about
 * o changes, so threads may call this at once.  Afterwards set_written
 * records what the file holds (size, CRC32C, CRC32C of its first 512
 * bytes) before sk_shard_out_finish. */
int sk_shard_out_pwritev(sk_shard_out *o, struct iovec *iov, int iovcnt, uint64_t off,
                         uint64_t len, sk_error *err);
int sk_shard_out_set_written(sk_shard_out *o, uint64_t bytes, uint32_t crc,
                             uint32_t first_block_crc, sk_error *err);
/* Rewinds to an earlier size (to drop a member that failed mid-copy).
 * Compressed: only within bytes not yet cut into a frame (SK_E_IO else). */
int sk_shard_out_truncate(sk_shard_out *o, uint64_t size, uint32_t crc, sk_error *err);
/* End-of-archive, close, index beside it, then the rename that publishes
 * the shard.  info receives size and checksums. */
int sk_shard_out_finish(sk_shard_out *o, sk_index_shard_info *info, sk_error *err);
/* Removes the temporary file; safe after a failure at any point. */
void sk_shard_out_abort(sk_shard_out *o);
/* Bytes of the shard file so far (compressed bytes when compressing). */
uint64_t sk_shard_out_file_bytes(const sk_shard_out *o);
/* Frees names, the index builder and the compression state. */
void sk_shard_out_release(sk_shard_out *o);

#endif
