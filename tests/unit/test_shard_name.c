/* test_shard_name.c - shard names from a printf-style pattern
 * (sk_shard_name): exactly one integer field (%d, %06d, %u, %x, %i, with an
 * optional zero flag, width and l/ll), "%%" for a percent sign; anything
 * else (%s, %n, %c, %f, flags, precision, two fields, none) is a usage
 * error naming the pattern, and the buffer is never overrun. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

static void name_ok(const char *pattern, uint64_t n, const char *want)
{
    char buf[4200];
    sk_error err = SK_ERROR_INIT;
    int rc = sk_shard_name(pattern, n, buf, sizeof buf, &err);
    if (rc != SK_OK) fail_msg("'%s': refused: %s", pattern, err.msg);
    assert_string_equal(buf, want);
    /* and with a buffer of exactly the needed size */
    size_t cap = strlen(want) + 1;
    char *tight = malloc(cap);
    assert_int_equal(sk_shard_name(pattern, n, tight, cap, NULL), SK_OK);
    assert_string_equal(tight, want);
    /* one byte less is refused, not overrun (ASAN watches the heap) */
    free(tight);
    tight = malloc(cap - 1);
    assert_int_equal(sk_shard_name(pattern, n, tight, cap - 1, &err), SK_E_USAGE);
    free(tight);
}

static void name_bad(const char *pattern)
{
    char buf[256];
    sk_error err = SK_ERROR_INIT;
    int rc = sk_shard_name(pattern, 7, buf, sizeof buf, &err);
    if (rc != SK_E_USAGE) fail_msg("'%s': want SK_E_USAGE, got %d (name '%s')", pattern, rc, buf);
    assert_int_equal(err.code, SK_E_USAGE);
    if (!strstr(err.msg, pattern)) fail_msg("message does not name '%s': %s", pattern, err.msg);
}

static void test_integer_fields(void **state)
{
    (void)state;
    name_ok("%06d", 7, "000007");
    name_ok("%d", 0, "0");
    name_ok("%d", 1234567, "1234567");
    name_ok("%06d", 1234567, "1234567"); /* a width is a minimum */
    name_ok("%u", 42, "42");
    name_ok("%i", 42, "42");
    name_ok("%x", 255, "ff");
    name_ok("%04x", 255, "00ff");
    name_ok("%3d", 5, "  5");
    name_ok("%ld", 9, "9");
    name_ok("%llu", 9, "9");
    name_ok("%06lld", 9, "000009");
    name_ok("out/train-%06d.tar", 123, "out/train-000123.tar");
    name_ok("/abs/dir.v2/s-%d.tar", 3, "/abs/dir.v2/s-3.tar");
    name_ok("%d.tar", UINT64_MAX, "18446744073709551615.tar");
    name_ok("%x", UINT64_MAX, "ffffffffffffffff");
    /* a wide field is honoured exactly, like printf */
    char want[64];
    snprintf(want, sizeof want, "%040d", 12);
    name_ok("%040d", 12, want);
    /* the widest width accepted, 999: every digit kept (a 31-byte buffer
     * once cut these to zeros, so all shards got one name) */
    char *big = malloc(1001);
    snprintf(big, 1001, "%0999d", 12);
    name_ok("%0999d", 12, big);
    snprintf(big, 1001, "%999x", 255);
    name_ok("%999x", 255, big);
    free(big);
    name_bad("%1000d");
}

static void test_percent_escape(void **state)
{
    (void)state;
    name_ok("100%%-%d.tar", 5, "100%-5.tar");
    name_ok("%%%d%%", 5, "%5%");
    name_ok("a%%d-%03d", 5, "a%d-005"); /* "%%d" is a literal "%d" */
    name_bad("100%%.tar");              /* an escaped percent is no field */
}

static void test_refused(void **state)
{
    (void)state;
    name_bad("x%s.tar");
    name_bad("%n");
    name_bad("%d%n");
    name_bad("%c");
    name_bad("%f");
    name_bad("%p");
    name_bad("%o");
    name_bad("%X");
    name_bad("%-5d");
    name_bad("%+d");
    name_bad("% d");
    name_bad("%5.2d");
    name_bad("%*d");
    name_bad("%hd");
    name_bad("%lllld");
    name_bad("%1$d");
    name_bad("%06");
    name_bad("x%");
    name_bad("%");
    name_bad("%d-%d.tar");  /* two fields */
    name_bad("%06d%x");
    name_bad("plain.tar");  /* none */
    name_bad("");
}

static void test_small_buffer(void **state)
{
    (void)state;
    char buf[8];
    memset(buf, 'Z', sizeof buf);
    /* refused, and nothing written past the given capacity */
    assert_int_equal(sk_shard_name("train-%06d.tar", 1, buf, 4, NULL), SK_E_USAGE);
    for (size_t i = 4; i < sizeof buf; i++) assert_int_equal(buf[i], 'Z');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integer_fields),
        cmocka_unit_test(test_percent_escape),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_small_buffer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
