/* fuzz_unpack.c - a stream read whole (format/unpack.c over libarchive's
 * filters, and format/shard_stream.c's detection): any bytes, handed over
 * in pieces the first byte picks, are detected (sk_stream_detect) and, when
 * compressed, decoded piece after piece, each next piece found by content
 * from the bytes the filter before it left.  Output is capped (a 4 MiB
 * decompression bomb is read no further); what must hold: an error or the
 * tar bytes, and the stored bytes taken never more than were given. */
#include "core/internal.h"
#include "fuzz_mem.h"
#include "format/shard_stream.h"
#include "format/unpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t piece = data[0] < 8 ? (size_t)data[0] + 1 : (size_t)data[0] * 64;
    struct fuzz_pieces s = {data + 1, size - 1, 0, piece};
    if (sk_stream_detect(s.p, s.n) != SK_STREAM_ARCHIVE) return 0;
    sk_unpack u;
    sk_error err = SK_ERROR_INIT;
    static unsigned char out[1 << 16];
    if (!sk_unpack_open(&u, fuzz_piece_read, &s, "fuzz", 4096, &err)) {
        uint64_t total = 0;
        for (;;) {
            size_t got = 0;
            if (sk_unpack_read(&u, out, sizeof out, &got, &err) || !got) break;
            if (got > sizeof out) __builtin_trap();
            if ((total += got) > (4u << 20)) break;
        }
        if (sk_unpack_raw(&u) > s.n) __builtin_trap();
    }
    sk_unpack_close(&u);
    return 0;
}
