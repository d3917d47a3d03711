/*
 * detect.h - what a stream of shard bytes is, from its first bytes: plain
 * tar, zstd, or another compression libarchive decodes in-process.  The one
 * detection every reader uses (shard_stream.c for files and streams,
 * unpack.c for what follows a compressed stream), so that what `index`
 * reads, `cat` reads.  Internal, never installed.
 */
#ifndef SK_FORMAT_DETECT_H
#define SK_FORMAT_DETECT_H

#include <stddef.h>

typedef enum {
    SK_STREAM_PLAIN,   /* uncompressed tar, read sequentially */
    SK_STREAM_ARCHIVE, /* any compression filter, through libarchive */
    SK_STREAM_ZSTD,    /* zstd, through libzstd */
    SK_STREAM_PREAD    /* uncompressed tar, random access, no CRC */
} sk_stream_kind;

/* SK_STREAM_ZSTD, SK_STREAM_ARCHIVE or SK_STREAM_PLAIN for a file that
 * starts with the n bytes at m. */
sk_stream_kind sk_stream_detect(const unsigned char *m, size_t n);

#endif
