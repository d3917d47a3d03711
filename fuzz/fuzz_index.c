/* fuzz_index.c - an index sidecar from any bytes (format/index.c): opened
 * with the body checksum checked and without (every record is still bounds
 * checked as it is read), then walked, looked up by key and by ordinal.
 * A crafted index may be refused; it may never crash the reader. */
#include "core/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (unsigned flags = 0; flags <= SK_INDEX_TRUST_BODY; flags += SK_INDEX_TRUST_BODY) {
        sk_index *ix = NULL;
        sk_error err = SK_ERROR_INIT;
        if (sk_index_from_memory(&ix, data, size, "fuzz.idx", flags, &err)) continue;
        uint64_t n = sk_index_sample_count(ix);
        for (uint64_t i = 0; i < n && i < 1000; i++) {
            sk_sample_ref s;
            if (sk_index_sample(ix, i, &s, &err)) continue;
            uint64_t o;
            (void)sk_index_find(ix, s.key, s.key_len, &o, &err);
            for (uint32_t k = 0; k < s.member_count && k < 16; k++) {
                sk_member_ref m;
                (void)sk_index_member(ix, s.first_member + k, &m, &err);
            }
        }
        uint64_t o;
        (void)sk_index_find(ix, "a/b", 3, &o, &err);
        sk_index_close(ix);
    }
    return 0;
}
