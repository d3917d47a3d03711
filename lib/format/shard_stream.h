/*
 * shard_stream.h - reads a shard as a tar byte stream, for the modules that
 * walk a shard's tar headers (indexer.c, verify.c): a local file, or any
 * sequential source (an S3 object's streaming GET); internal, never
 * installed.
 *
 * A shard is a plain tar, a tar compressed with any filter libarchive reads
 * in-process (gzip, bzip2, compress, xz, lzma, lzip, lz4, zstd: opened as
 * libarchive's "raw" format, and read whole through sk_unpack), or a
 * .tar.zst decoded with libzstd directly; sk_stream_detect, the one
 * detection every reader uses, tells them apart by their first bytes.  Streaming reads the file once, sequentially, and keeps
 * the CRC32C of every file byte read (file_crc), so that after
 * sk_stream_drain it is the whole file's CRC32C.  sk_stream_read_at is an
 * sk_tar_src read_at callback: forward reads only, except in
 * SK_STREAM_PREAD mode (plain tar, random access through pread, no CRC).
 */
#ifndef SK_SHARD_STREAM_H
#define SK_SHARD_STREAM_H

#include "core/internal.h"

#include <stdint.h>
#include "format/format.h"
#include "format/unpack.h"
#include "format/detect.h"

#define SK_STREAM_BUF (1u << 20)


/* A sequential source of the file's bytes: up to n into dst, *got = 0 at
 * the end. */
typedef int (*sk_stream_src)(void *ctx, void *dst, size_t n, size_t *got, sk_error *err);

typedef struct sk_stream {
    sk_stream_kind kind;
    int fd;            /* not owned; -1 with a source */
    sk_stream_src src; /* instead of fd when set */
    void *src_ctx;
    const char *path;  /* for messages */
    uint32_t file_crc; /* of every file byte read so far */
    uint64_t file_read;
    /* a cold file is read ahead (shard_stream.c, file_read) */
    uint64_t ra_end;
    int cold, no_nowait;
    sk_unpack up; /* SK_STREAM_ARCHIVE: libarchive's filters, and what follows them */
    sk_zdec z;    /* SK_STREAM_ZSTD */
    unsigned char *buf; /* decompressed (or plain) bytes [buf_pos, buf_pos+len) */
    uint64_t buf_pos;
    size_t len;
    /* The tar bytes just before buf_pos, [buf_pos - back_len, buf_pos):
     * a tar walker reads the two end blocks to know it is at the end, and
     * then the end check reads them again, across wherever a refill fell
     * (which, for a network source, is wherever a packet ended). */
    unsigned char back[2 * 512];
    size_t back_len;
    int eof;
} sk_stream;

/* pread until n bytes or end of file; *got says how many. */
int sk_stream_pread(int fd, uint64_t off, void *buf, size_t n, size_t *got, const char *path,
                    sk_error *err);

/* Starts reading fd (from offset 0) as kind.  s is zeroed first; call
 * sk_stream_close on it whatever this returns. */
int sk_stream_open(sk_stream *s, int fd, const char *path, sk_stream_kind kind, sk_error *err);

/* The same over a sequential source, read from its first byte (any kind
 * but SK_STREAM_PREAD). */
int sk_stream_open_src(sk_stream *s, sk_stream_src src, void *ctx, const char *path,
                       sk_stream_kind kind, sk_error *err);

/* sk_tar_src read_at over an sk_stream (ctx). */
int sk_stream_read_at(void *ctx, uint64_t pos, void *dst, size_t n, size_t *got, sk_error *err);

/* Reads the rest of the file into file_crc (no-op for SK_STREAM_PREAD). */
int sk_stream_drain(sk_stream *s, sk_error *err);

/* Frees what sk_stream_open allocated (safe on a zeroed sk_stream). */
void sk_stream_close(sk_stream *s);

#endif /* SK_SHARD_STREAM_H */
