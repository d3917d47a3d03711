/* fuzz_mem.h - the fuzzer's input as the library's sources: an sk_tar_src
 * (read by offset: fuzz_tar.c, fuzz_zstd_seek.c) and a sequential feeder
 * handing it over in pieces of a chosen size (fuzz_unpack.c,
 * fuzz_recordio.c), so that no piece boundary goes untried. */
#ifndef SK_FUZZ_MEM_H
#define SK_FUZZ_MEM_H

#include "core/internal.h"
#include "format/tar.h"

struct fuzz_mem {
    const uint8_t *p;
    size_t n;
};

static inline int fuzz_mem_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got,
                                   sk_error *err)
{
    const struct fuzz_mem *m = ctx;
    (void)err;
    *got = pos >= m->n ? 0 : (m->n - pos < n ? (size_t)(m->n - pos) : n);
    memcpy(buf, m->p + pos, *got);
    return 0;
}

/* A sequential read callback over p[0..n), at most `piece` bytes a call. */
struct fuzz_pieces {
    const uint8_t *p;
    size_t n, pos, piece;
};

static inline int fuzz_piece_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct fuzz_pieces *s = ctx;
    (void)err;
    size_t k = s->n - s->pos;
    if (k > cap) k = cap;
    if (k > s->piece) k = s->piece;
    memcpy(buf, s->p + s->pos, k);
    s->pos += k;
    *got = k;
    return 0;
}

#endif
