/* fuzz_zstd_seek.c - the zstd seekable format's seek table
 * (format/zstd_seekable.c) read from the end of any bytes: every count and
 * size is checked against the file before it is believed. */
#include "fuzz_mem.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_mem m = {data, size};
    sk_tar_src src = {.ctx = &m, .read_at = fuzz_mem_read_at, .size = size, .name = "fuzz.tar.zst"};
    sk_zstd_frame *fr = NULL;
    size_t n = 0;
    sk_error err = SK_ERROR_INIT;
    if (!sk_zstd_seek_table(&src, &fr, &n, &err)) free(fr);
    return 0;
}
