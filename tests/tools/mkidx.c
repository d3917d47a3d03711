/*
 * mkidx.c - writes a CRC-valid index for a one-member shard whose sample
 * key and member extension are whatever the test says, however hostile
 * ("a/", "../x", an extension holding "/../"): the checksums all hold, so
 * only the checks on names stand between such an index and the file
 * system.  For tests/e2e/trust_paths.sh.
 *   mkidx SHARD INDEX KEY EXT   (the member's data at offset 512, as a
 *                                one-member ustar shard has it)
 */
#include "shardkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: mkidx SHARD INDEX KEY EXT\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) return perror(argv[1]), 1;
    static unsigned char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (n < 1536) return fprintf(stderr, "mkidx: %s: too small\n", argv[1]), 1;
    unsigned long long size = strtoull((const char *)buf + 124, NULL, 8);
    sk_index_shard_info info = {.size = n, .crc32c = sk_crc32c(0, buf, n),
                                .first_block_crc32c = sk_crc32c(0, buf, 512)};
    sk_error err = SK_ERROR_INIT;
    sk_index_builder *b = sk_index_builder_new();
    uint64_t span = 512 + ((size + 511) / 512) * 512;
    if (!b || sk_index_add_sample(b, argv[3], strlen(argv[3]), 0, span, 0, span, &err) ||
        sk_index_add_member(b, argv[4], strlen(argv[4]), 512, size, 512, sk_crc32c(0, buf + 512, size),
                            &err) ||
        sk_index_builder_write(b, argv[2], &info, &err)) {
        fprintf(stderr, "mkidx: %s\n", err.msg);
        return 1;
    }
    sk_index_builder_free(b);
    return 0;
}
