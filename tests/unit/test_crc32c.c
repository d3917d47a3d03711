/* test_crc32c.c - CRC32C against published vectors and the bitwise definition,
 * across the lengths and alignments that take each code path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

static uint32_t crc_bitwise(const unsigned char *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
    }
    return ~c;
}

static void test_known_vectors(void **state)
{
    (void)state;
    assert_int_equal(sk_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(sk_crc32c(0, "", 0), 0);
    unsigned char zeros[32] = {0};
    assert_int_equal(sk_crc32c(0, zeros, 32), 0x8a9136aau); /* RFC 3720 B.4 */
}

static void test_matches_definition_all_paths(void **state)
{
    (void)state;
    size_t n = 3 * 4096 * 3 + 77;
    unsigned char *buf = malloc(n + 8);
    for (size_t i = 0; i < n + 8; i++) buf[i] = (unsigned char)(i * 2654435761u >> 13);
    /* each round size alone, each just missed, and all three in one call */
    size_t lens[] = {1, 7, 8, 9, 100, 767, 768, 769, 3071, 3072, 3 * 1024 + 3 * 256 + 5, 4095,
                     12287, 12288, 12289, 12288 + 3072 + 768 + 7, 15000, 3 * 4096 * 2 + 5, n};
    for (size_t a = 0; a < 8; a++)
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            assert_int_equal(sk_crc32c(0, buf + a, lens[i]), crc_bitwise(buf + a, lens[i]));
    free(buf);
}

/* The folding path (512 bytes and more where the CPU has VPCLMULQDQ):
 * every tail it leaves (64-, 16-byte and byte steps), at every
 * alignment, from a running CRC that is not zero. */
static void test_folding_tails(void **state)
{
    (void)state;
    size_t n = 4 * 4096 + 256;
    unsigned char *buf = malloc(n + 64);
    for (size_t i = 0; i < n + 64; i++) buf[i] = (unsigned char)(i * 40503u >> 5 ^ i);
    size_t lens[] = {511, 512, 513, 527, 528, 575, 576, 767, 768, 1023, 1024, 1040, 1087,
                     4096 + 64 + 48 + 15, 4 * 4096, n};
    for (size_t a = 0; a < 64; a += 3)
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
            uint32_t head = sk_crc32c(0, buf + a, 5);
            assert_int_equal(sk_crc32c(head, buf + a + 5, lens[i]), crc_bitwise(buf + a, lens[i] + 5));
        }
    free(buf);
}

static void test_streaming_equals_one_shot(void **state)
{
    (void)state;
    unsigned char buf[50000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i ^ (i >> 7));
    uint32_t whole = sk_crc32c(0, buf, sizeof buf);
    uint32_t c = 0;
    for (size_t off = 0; off < sizeof buf; off += 1237) {
        size_t k = sizeof buf - off < 1237 ? sizeof buf - off : 1237;
        c = sk_crc32c(c, buf + off, k);
    }
    assert_int_equal(c, whole);
}

static void test_combine(void **state)
{
    (void)state;
    unsigned char buf[70000];
    for (size_t i = 0; i < sizeof buf; i++) buf[i] = (unsigned char)(i * 131 + (i >> 9));
    size_t cuts[] = {0, 1, 511, 512, 4096, 12345, 69999, 70000};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t k = cuts[i];
        uint32_t a = sk_crc32c(0, buf, k), b = sk_crc32c(0, buf + k, sizeof buf - k);
        assert_int_equal(sk_crc32c_combine(a, b, sizeof buf - k), sk_crc32c(0, buf, sizeof buf));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_matches_definition_all_paths),
        cmocka_unit_test(test_folding_tails),
        cmocka_unit_test(test_streaming_equals_one_shot),
        cmocka_unit_test(test_combine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
