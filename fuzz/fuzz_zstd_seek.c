/* fuzz_zstd_seek.c - the zstd seekable format's seek table
 * (format/zstd_seekable.c) read from the end of any bytes: every count and
 * size is checked against the file before it is believed. */
#include "core/internal.h"
#include "format/tar.h"

#include <stdlib.h>

struct mem {
    const uint8_t *p;
    size_t n;
};

static int mem_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    const struct mem *m = ctx;
    (void)err;
    *got = pos >= m->n ? 0 : (m->n - pos < n ? (size_t)(m->n - pos) : n);
    memcpy(buf, m->p + pos, *got);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mem m = {data, size};
    sk_tar_src src = {.ctx = &m, .read_at = mem_read_at, .size = size, .name = "fuzz.tar.zst"};
    sk_zstd_frame *fr = NULL;
    size_t n = 0;
    sk_error err = SK_ERROR_INIT;
    if (!sk_zstd_seek_table(&src, &fr, &n, &err)) free(fr);
    return 0;
}
