/* fuzz_tar.c - the tar header walker (format/tar_read.c) on any bytes: plain,
 * pax, GNU long names, base-256 sizes, with and without CRCs and
 * --ignore-zeros.  It must end with an entry list or an error, never a
 * crash, a hang or a read out of bounds. */
#include "fuzz_mem.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fuzz_mem m = {data, size};
    static const unsigned flags[] = {0, SK_TAR_CRC, SK_TAR_IGNORE_ZEROS};
    for (size_t f = 0; f < sizeof flags / sizeof *flags; f++) {
        sk_tar_src src = {.ctx = &m, .read_at = fuzz_mem_read_at, .size = f == 1 ? size : UINT64_MAX,
                          .name = "fuzz.tar"};
        sk_tar_reader r;
        sk_tar_reader_init(&r, &src, flags[f]);
        for (int i = 0; i < 100000; i++) {
            sk_tar_entry e;
            sk_error err = SK_ERROR_INIT;
            if (sk_tar_next(&r, &e, &err) || e.end) break;
            size_t kl, eo;
            (void)sk_sample_split(e.name, e.name_len, &kl, &eo);
        }
        sk_tar_reader_release(&r);
    }
    return 0;
}
