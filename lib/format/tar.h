/*
 * tar.h - tar format constants and the header writer shared inside the
 * library (tar_write.c).  Not installed.
 */
#ifndef SK_TAR_H
#define SK_TAR_H

#include <stddef.h>
#include <stdint.h>

#define SK_TAR_BLOCK 512
/* Longest member name a shard may hold; the header writer's worst case. */
#define SK_TAR_NAME_MAX 4096
#define SK_TAR_HEADER_MAX (3 * SK_TAR_BLOCK + SK_TAR_NAME_MAX + 512)

static inline uint64_t sk_tar_pad(uint64_t n)
{
    return (n + SK_TAR_BLOCK - 1) & ~(uint64_t)(SK_TAR_BLOCK - 1);
}

/* Bytes of header (pax + ustar, or ustar alone) for this member. */
size_t sk_tar_header_size(const char *name, size_t name_len, uint64_t size);
/* Writes them to dst (at least sk_tar_header_size bytes); returns the count. */
size_t sk_tar_header(unsigned char *dst, const char *name, size_t name_len,
                     uint64_t size, uint64_t mtime);
/* 1 when stored[0..len) is exactly the header sk_tar_header writes for
 * (name, size, mtime).  A plain ustar header (a short ASCII name) is
 * checked field by field without writing one - it is asked for every
 * member `shardkit cat` writes from its ring - others are written and
 * compared. */
int sk_tar_header_matches(const unsigned char *stored, size_t len, const char *name,
                          size_t name_len, uint64_t size, uint64_t mtime);
/* 1 when s[0..n) is well-formed UTF-8. */
int sk_utf8_valid(const char *s, size_t n);


/* ------------------------------------------------------------ tar reader */
/* A numeric header field of w bytes (size, mtime, checksum): octal (a
 * leading NUL, leading spaces, digits, then NUL/space) or GNU base-256
 * (high bit of the first byte), by GNU tar's rules.  -1 when malformed or
 * negative. */
int sk_tar_number(const unsigned char *f, size_t w, uint64_t *out);
/* tar_read.c: walks the headers of a tar stream of any common dialect
 * (ustar, pax 'x'/'g', GNU long names 'L'/'K', v7) and hands out each
 * regular member.  The stream comes through a source that reads at
 * non-decreasing positions, so the same walker serves pread on a file
 * (skipping data for free) and a decompressed stream (skipping = reading). */
#include "shardkit.h"

typedef struct sk_tar_src {
    void *ctx;
    /* Reads up to n bytes at stream position pos, never before the end of
     * the previous read; *got < n only at the end of the stream. */
    int (*read_at)(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err);
    /* Optional (NULL: read_at is used): the same read, n <= SK_TAR_BLOCK,
     * but *p points into the source's own buffer instead of copying; valid
     * until the next call on the source.  A header-only walk spends a good
     * part of its user time copying header blocks, so a buffered source
     * lends them instead. */
    int (*peek_at)(void *ctx, uint64_t pos, size_t n, const unsigned char **p, size_t *got,
                   sk_error *err);
    uint64_t size; /* stream size when known (plain files), else UINT64_MAX */
    const char *name; /* for messages */
} sk_tar_src;

typedef struct sk_tar_entry {
    const char *name; /* NUL-terminated; valid until the next sk_tar_next */
    size_t name_len;
    uint64_t header_offset; /* first byte of the member's first header */
    uint64_t data_offset;
    uint64_t size;
    uint32_t header_len; /* data_offset - header_offset */
    uint32_t crc32c;     /* of the data, when SK_TAR_CRC */
    int end;             /* 1: no more members (end blocks or end of stream) */
    /* Names from foreign tars, as GNU tar extracts them (core/path.c):
     * leading '/', "./" and "../" are stripped from name (stripped = 1);
     * a ".." further in leaves nothing safe to call it (unsafe = 1: name
     * is the raw one, for messages; callers skip the member). */
    int stripped, unsafe;
} sk_tar_entry;

/* Read member data and fill sk_tar_entry.crc32c (else data is skipped). */
#define SK_TAR_CRC 1u
/* GNU tar's --ignore-zeros: end-of-archive blocks do not end the walk, the
 * end of the stream does, so archives written back to back into one
 * stream (`cat a.tar b.tar`, a SageMaker Pipe channel) are read whole. */
#define SK_TAR_IGNORE_ZEROS 2u

typedef struct sk_tar_reader {
    sk_tar_src src;
    unsigned flags;
    uint64_t pos; /* next header */
    char *name, *gname; /* current name; pax global path */
    size_t name_cap, gname_cap, gname_len;
    int gname_set;
    unsigned char *scratch;
    uint64_t dirs, links, ignored_meta; /* entries skipped, by kind */
} sk_tar_reader;

void sk_tar_reader_init(sk_tar_reader *r, const sk_tar_src *src, unsigned flags);
void sk_tar_reader_release(sk_tar_reader *r);
/* Next regular member (or e->end).  SK_E_CORRUPT names the offset on a bad
 * checksum or a truncated member; SK_E_INPUT names an unsupported entry. */
int sk_tar_next(sk_tar_reader *r, sk_tar_entry *e, sk_error *err);
/* 1 when name is WebDataset metadata ("__name__" at top level), which
 * readers skip. */
int sk_tar_is_meta(const char *name, size_t n);

/* -------------------------------------------------- zstd seekable format */
/* indexer.c: the seek table of a zstd seekable-format file (a final
 * skippable frame, magic 0x184D2A5E, footer magic 0x8F92EAB1). */
typedef struct sk_zstd_frame {
    uint64_t c_off, d_off; /* where the frame starts, compressed / decompressed */
    uint32_t c_size, d_size;
} sk_zstd_frame;
/* Reads the seek table through src (a plain file, size known); *nframes = 0
 * and SK_OK when the file has none. Caller frees *frames. */
int sk_zstd_seek_table(const sk_tar_src *file, sk_zstd_frame **frames, size_t *nframes,
                       sk_error *err);

#endif
