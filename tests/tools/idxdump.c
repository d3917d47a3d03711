/*
 * idxdump.c - prints a sidecar index as text (header, then one line per
 * sample and member) so end-to-end tests can check stored offsets and
 * flags without parsing the binary format themselves.
 *   idxdump INDEX
 */
#include "shardkit.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    sk_error err = SK_ERROR_INIT;
    sk_index *ix;
    if (argc != 2) {
        fprintf(stderr, "usage: idxdump INDEX\n");
        return 2;
    }
    if (sk_index_open(&ix, argv[1], 0, &err)) {
        fprintf(stderr, "idxdump: %s\n", err.msg);
        return 1;
    }
    const sk_index_shard_info *in = sk_index_shard(ix);
    printf("shard size=%llu crc32c=%08x first_block_crc32c=%08x flags=%u samples=%llu members=%llu\n",
           (unsigned long long)in->size, in->crc32c, in->first_block_crc32c, in->flags,
           (unsigned long long)sk_index_sample_count(ix), (unsigned long long)sk_index_member_count(ix));
    for (uint64_t i = 0; i < sk_index_sample_count(ix); i++) {
        sk_sample_ref s;
        if (sk_index_sample(ix, i, &s, &err)) break;
        printf("sample %llu key=%.*s offset=%llu span=%llu stored_offset=%llu stored_span=%llu\n",
               (unsigned long long)i, (int)s.key_len, s.key, (unsigned long long)s.offset,
               (unsigned long long)s.span, (unsigned long long)s.stored_offset,
               (unsigned long long)s.stored_span);
        for (uint32_t k = 0; k < s.member_count; k++) {
            sk_member_ref m;
            if (sk_index_member(ix, s.first_member + k, &m, &err)) break;
            printf("  member ext=%.*s data_offset=%llu size=%llu header_len=%u crc32c=%08x\n",
                   (int)m.ext_len, m.ext, (unsigned long long)m.data_offset,
                   (unsigned long long)m.size, m.header_len, m.crc32c);
        }
    }
    sk_index_close(ix);
    if (err.code) {
        fprintf(stderr, "idxdump: %s\n", err.msg);
        return 1;
    }
    return 0;
}
