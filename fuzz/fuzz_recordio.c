/* fuzz_recordio.c - RecordIO unwrapping (format/recordio.c) of any bytes,
 * handed over in pieces of every size the first byte picks (1..8 bytes,
 * or up to 4 KiB), read out in pieces the second byte picks: every header
 * is checked before its length is believed, and no piece boundary changes
 * what comes out. */
#include "core/internal.h"
#include "fuzz_mem.h"
#include "format/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    size_t in_piece = data[0] < 8 ? (size_t)data[0] + 1 : (size_t)data[0] * 16;
    size_t out_piece = data[1] < 8 ? (size_t)data[1] + 1 : (size_t)data[1] * 16;
    struct fuzz_pieces s = {data + 2, size - 2, 0, in_piece};
    sk_recordio r;
    sk_recordio_init(&r, "fuzz.rio");
    unsigned char out[4096];
    uint64_t total = 0;
    for (;;) {
        size_t got = 0;
        sk_error err = SK_ERROR_INIT;
        if (sk_recordio_read(&r, fuzz_piece_read, &s, out, out_piece, &got, &err)) break;
        if (!got) break;
        if (got > out_piece) __builtin_trap();
        total += got;
    }
    /* a part's header (8 bytes) outweighs the magic (4) put back for it */
    if (total > s.n) __builtin_trap();
    return 0;
}
