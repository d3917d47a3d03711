/*
 * unpack.h - the tar bytes of a compressed stream, read whole: every byte
 * the source holds is either decoded as tar bytes or an error naming the
 * stream and the offset (unpack.c).  Internal, never installed.
 *
 * A stream (stdin, a FIFO, a Pipe channel, an object) may carry several
 * shards back to back, each compressed its own way: a .tar.gz, then a plain
 * tar, then a .tar.zst.  libarchive's filters stop silently at the end of
 * their own stream (gzip after its last member, bzip2 after its last
 * stream) and drop whatever follows; sk_unpack takes the bytes they left,
 * finds what they are by content (sk_stream_detect) and goes on decoding
 * them, so the consumer sees the concatenated tar streams of all pieces.
 * What is neither a compressed stream nor a tar reaches the tar parser,
 * which refuses it at its offset.
 */
#ifndef SK_UNPACK_H
#define SK_UNPACK_H

#include "core/internal.h"

#include <stdint.h>
#include "format/format.h"

struct archive;

/* The stored bytes, sequentially: up to n into dst, *got = 0 at the end. */
typedef int (*sk_unpack_src)(void *ctx, void *dst, size_t n, size_t *got, sk_error *err);

typedef struct sk_unpack {
    sk_unpack_src src;
    void *ctx;
    const char *name; /* for messages */
    int piece;        /* of the current piece: 0 plain, 1 libarchive filter, 2 zstd */
    struct archive *a;
    sk_zdec z;
    int z_on;
    /* The last two blocks handed to libarchive: the bytes it has not
     * consumed when its filter ends are the tail of these. */
    unsigned char *blk[2];
    size_t blk_len[2], blk_cap;
    int cur;
    unsigned char *pend; /* stored bytes to serve before the source's next */
    size_t pend_len, pend_off;
    uint64_t raw;      /* stored bytes served to the decoders so far */
    uint64_t piece_at; /* stored offset where the current piece starts */
    int cb_rc;         /* the source's error, as libarchive's callback saw it */
    sk_error cb_err;
} sk_unpack;

/* Starts decoding the source as a libarchive-filtered stream (its first
 * bytes are one; sk_stream_detect said so).  blk bytes per read.  u is
 * zeroed first; call sk_unpack_close whatever this returns. */
int sk_unpack_open(sk_unpack *u, sk_unpack_src src, void *ctx, const char *name, size_t blk,
                   sk_error *err);

/* Up to n tar bytes into dst; *got = 0 at the end of the source. */
int sk_unpack_read(sk_unpack *u, void *dst, size_t n, size_t *got, sk_error *err);

/* Stored bytes taken from the source so far (for messages). */
uint64_t sk_unpack_raw(const sk_unpack *u);

/* Frees what sk_unpack_open allocated (safe on a zeroed sk_unpack). */
void sk_unpack_close(sk_unpack *u);

#endif /* SK_UNPACK_H */
