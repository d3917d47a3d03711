/* fuzz_manifest_table.c - MANIFEST.lookup from any bytes
 * (format/manifest_table.c).  The header's binding to the manifest and the
 * checksums are set right before parsing, so that the fuzzer's bytes reach
 * the records and the string pool: a table is accepted or refused, never a
 * crash or a read outside it, and what it gives has the shape a manifest
 * has (URLs without NUL, key ranges in pairs). */
#include "core/internal.h"
#include "format/format.h"

#include <stdlib.h>

static const char text[] = "{\"format\": \"shardkit-manifest\"}\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *t = malloc(size ? size : 1);
    if (!t) return 0;
    memcpy(t, data, size);
    if (size >= 64) {
        sk_put_le64(t + 24, sizeof text - 1);
        sk_put_le32(t + 32, sk_crc32c(0, text, sizeof text - 1));
        sk_put_le32(t + 48, sk_crc32c(0, t + 64, size - 64));
        sk_put_le32(t + 56, sk_crc32c(0, t, 56));
    }
    sk_manifest *m = sk_manifest_from_table(t, size, text, sizeof text - 1);
    for (size_t i = 0; m && i < m->nshards; i++) {
        const char *f, *l;
        size_t fl, ll;
        if (!m->shards[i].url[0]) __builtin_trap();
        if (sk_manifest_key_range(m, i, &f, &fl, &l, &ll) && (!f || !l)) __builtin_trap();
    }
    sk_manifest_free(m);
    free(t);
    return 0;
}
