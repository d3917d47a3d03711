/*
 * reader_raw.h - what reader.c lends tar_out.c so that `shardkit cat`
 * can write a sample from where its bytes lie in the shard's ring instead
 * of copying them into an output buffer.  Never installed.
 *
 * A tar_out bound to a reader (sk_reader_tar_out_bind) asks, for each
 * sample it is given, where the reader's current sample lies in its
 * shard's tar stream (sk_reader_raw_of).  A member whose header there is
 * byte for byte the one tar_out would write, followed by zero padding,
 * is written as those stored bytes: the output is the same, one copy
 * fewer.  Until it is written, the reader must not let the ring reuse
 * those bytes: it asks its holder how far it may release
 * (sk_reader_holder.held), and tells it to write everything it holds
 * before a stream closes or before the held bytes would make the ring
 * grow (let_go).  reader.c calls tar_out.c only through these pointers,
 * so the two files do not depend on each other in a circle.
 */
#ifndef SK_READER_RAW_H
#define SK_READER_RAW_H

#include "reader/reader_io.h"

/* A member of the reader's current sample: where its first header and its
 * data start in the tar stream, its size, its extension in the cursor's
 * names. */
struct sk_reader_mem {
    uint64_t hdr, data, size;
    size_t ext_off, ext_len;
};

/* The reader's current sample as stored bytes: p points at tar position
 * pos in st's ring, len bytes present from there (through the last
 * member's padding when the stream holds it); valid like the sample's
 * data pointers. */
typedef struct sk_reader_raw {
    sk_reader_stream *st;
    const unsigned char *p;
    uint64_t pos;
    size_t len;
    const struct sk_reader_mem *m; /* the sample's nmembers members, in order */
} sk_reader_raw;

/* 1 and *raw when s is r's current sample as read from its ring (not an
 * owned copy from the shuffle buffer), else 0. */
int sk_reader_raw_of(const sk_reader *r, const sk_reader_sample *s, sk_reader_raw *raw);

/* Who holds ring bytes of the reader's current stream past the sample
 * they belonged to. */
typedef struct sk_reader_holder {
    void *ctx;
    /* The lowest tar position of st still held (UINT64_MAX: none). */
    uint64_t (*held)(void *ctx, sk_reader_stream *st);
    /* Write out (or, failing, drop) everything held, now: st closes or
     * needs the room.  A write error is the holder's to report later. */
    void (*let_go)(void *ctx);
    /* The reader is closing: forget it. */
    void (*detach)(void *ctx);
} sk_reader_holder;

/* Sets (h) or clears (NULL) r's holder; h is copied. */
void sk_reader_set_holder(sk_reader *r, const sk_reader_holder *h);

#endif
