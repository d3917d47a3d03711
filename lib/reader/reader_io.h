/*
 * reader_io.h - the byte side of the reader (reader_io.c) as the sample
 * side (reader.c) uses it: one stream per shard.  Never installed.
 *
 * reader_io.c owns the byte side: a shard source (local file, and later an
 * S3 object) read sequentially, optionally through zstd, by a background
 * thread into a mirrored ring buffer, so any window of up to `cap` bytes is
 * one contiguous pointer.  reader.c owns the sample side: tar headers,
 * grouping, split, shuffle, state.
 */
#ifndef SK_READER_IO_H
#define SK_READER_IO_H

#include "core/internal.h"

typedef struct sk_store_env sk_store_env;

/* One shard being read: a producer thread fills the ring, the consumer
 * asks for windows of it by tar-stream position and releases what it no
 * longer needs.  Positions are in the (decompressed) tar stream. */
typedef struct sk_reader_stream sk_reader_stream;

/* A ring a closed stream leaves for the next one (the reader's, one shard
 * after another): its pages are already mapped and faulted in, where a new
 * ring costs a page fault and a zeroed page every 4 KiB. */
typedef struct sk_reader_spare {
    unsigned char *ring;
    size_t cap;
} sk_reader_spare;
/* Unmaps the spare ring, if any. */
void sk_reader_spare_free(sk_reader_spare *sp);

typedef struct sk_reader_stream_opts {
    const char *url;
    uint64_t raw_offset; /* where to start reading the stored bytes */
    uint64_t tar_base;   /* tar-stream position of the byte at raw_offset */
    int zstd;            /* decompress (raw_offset is then a frame start) */
    int filtered;        /* gzip, bzip2 or xz: decompressed through libarchive,
                            always from the start (raw_offset 0) */
    size_t buffer_size;  /* initial ring bytes */
    size_t max_window;   /* largest window a consumer may ask for */
    int recordio;        /* the stored bytes are RecordIO records (SageMaker's
                            RecordWrapperType=RecordIO): unwrapped first */
    int sniff;           /* a stream: gzip/bzip2/xz or zstd told by its first
                            bytes (after unwrapping), not by its name */
    int inline_read;     /* a local file read without a thread: need reads
                            it on the caller's thread (plain tar only) */
    sk_reader_spare *spare; /* rings of buffer_size taken from and left here;
                               NULL: none */
    sk_store_env *env;     /* clients for remote sources (io/store.h) */
    const char *cache_dir; /* remote sources: cache here */
    uint64_t cache_size;
    uint32_t crc32c;       /* the shard's CRC32C when its manifest gives one: */
    int crc_known;         /* the cache serves only a copy with it */
} sk_reader_stream_opts;

/* Starts the producer thread; opening the source happens on it, so an
 * error there shows at the first sk_reader_stream_need. */
int sk_reader_stream_open(sk_reader_stream **out, const sk_reader_stream_opts *o,
                          sk_error *err);
/* Stops and joins the thread, frees the ring.  Accepts NULL. */
void sk_reader_stream_close(sk_reader_stream *st);
/* Waits until [pos, pos+n) is in the ring or the stream ended; *p points at
 * pos, *avail is how many of the n bytes are there (< n only at the end).
 * The window is valid until the next need (which may grow the ring) or
 * release.  Fails with the producer's error (I/O, corrupt zstd), or with
 * SK_E_INPUT when pos+n-released > max_window. */
int sk_reader_stream_need(sk_reader_stream *st, uint64_t pos, size_t n, const unsigned char **p,
                          size_t *avail, sk_error *err);
/* Like need, but neither waits nor grows the ring: *avail of the n bytes
 * at pos are there now (pos at or after the released bytes). */
void sk_reader_stream_peek(sk_reader_stream *st, uint64_t pos, size_t n, const unsigned char **p,
                           size_t *avail);
/* The ring's size now (any window up to it is one pointer). */
size_t sk_reader_stream_cap(const sk_reader_stream *st);
/* The consumer no longer needs bytes before pos. */
void sk_reader_stream_release(sk_reader_stream *st, uint64_t pos);
/* Discards bytes up to pos without keeping them (resuming inside a
 * compressed shard). *reached < pos when the stream ended first. */
int sk_reader_stream_skip_to(sk_reader_stream *st, uint64_t pos, uint64_t *reached,
                             sk_error *err);
/* Times the ring grew past buffer_size, and whether the source was served
 * from the cache (1), fetched into it (0) or not cached (-1). */
uint64_t sk_reader_stream_grows(const sk_reader_stream *st);
int sk_reader_stream_cache_state(sk_reader_stream *st);


#endif
