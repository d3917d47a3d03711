/* fuzz_mem.h - an sk_tar_src over the fuzzer's input, for the targets that
 * read through one (fuzz_tar.c, fuzz_zstd_seek.c). */
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

#endif
