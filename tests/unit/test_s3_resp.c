/* test_s3_resp.c - what the S3 engine takes from a response's header
 * lines (s3/s3_resp.c): the ETag, CRC32C and Content-Length of the final
 * answer only, values trimmed of HTTP's blanks (space and tab) and quotes,
 * cut at a NUL byte, bounded by their fields without two long ones
 * becoming one, and a Content-Length taken only when it is a number. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "s3/s3_internal.h"

static void feed(sk_s3_req *r, const char *line, size_t n)
{
    char *copy = malloc(n ? n : 1); /* a buffer of its own, as curl's */
    assert_non_null(copy);
    memcpy(copy, line, n);
    sk_s3_header_line(r, copy, n);
    free(copy);
}
#define FEED(r, lit) feed(r, lit, sizeof lit - 1)

static void test_final_answer(void **state)
{
    (void)state;
    sk_s3_req *r = calloc(1, sizeof *r);
    assert_non_null(r);
    FEED(r, "HTTP/1.1 302 Found\r\n");
    FEED(r, "ETag: \"redirect\"\r\n");
    FEED(r, "Content-Length: 5\r\n");
    FEED(r, "HTTP/2 200\r\n");
    assert_string_equal(r->etag, "");
    assert_int_equal(r->has_length, 0);
    FEED(r, "etag: \"9b2cf535f27731c974343645a3985328\"\r\n");
    FEED(r, "x-amz-checksum-crc32c: yZRlqg==\r\n");
    FEED(r, "content-length: 10240\r\n");
    assert_string_equal(r->etag, "9b2cf535f27731c974343645a3985328");
    assert_string_equal(r->crc32c, "yZRlqg==");
    assert_int_equal(r->has_length, 1);
    assert_int_equal(r->content_length, 10240);
    free(r);
}

/* HTTP's optional white space is a space or a tab: an ETag after a tab is
 * the same ETag (kept with the tab, a resume's If-Match named another) */
static void test_tab_is_blank(void **state)
{
    (void)state;
    sk_s3_req *r = calloc(1, sizeof *r);
    assert_non_null(r);
    FEED(r, "ETag:\t\"abc\"\t\r\n");
    assert_string_equal(r->etag, "abc");
    free(r);
}

/* a NUL ends the line: the value is what comes before it, trimmed (it
 * used to keep the quote before the NUL: "abc\"", found by fuzz_http_resp) */
static void test_nul_ends_line(void **state)
{
    (void)state;
    sk_s3_req *r = calloc(1, sizeof *r);
    assert_non_null(r);
    FEED(r, "ETag: \"abc\"\0\0\0ength: 10240\r\n");
    assert_string_equal(r->etag, "abc");
    FEED(r, "HTTP/1.1 200 OK\0x\r\n");
    assert_string_equal(r->etag, "");
    free(r);
}

/* a value longer than its field stays bounded, and two that differ only
 * past the field stay two (cut off, they were one ETag: a cache keyed by
 * it served a replaced object's old copy) */
static void test_long_values_differ(void **state)
{
    (void)state;
    sk_s3_req *r = calloc(1, sizeof *r);
    assert_non_null(r);
    char line[400], first[sizeof r->etag];
    int n = snprintf(line, sizeof line, "ETag: \"%0300d\"\r\n", 7);
    feed(r, line, (size_t)n);
    assert_true(strlen(r->etag) < sizeof r->etag);
    memcpy(first, r->etag, sizeof first);
    n = snprintf(line, sizeof line, "ETag: \"%0300d\"\r\n", 8);
    feed(r, line, (size_t)n);
    assert_true(strlen(r->etag) < sizeof r->etag);
    assert_string_not_equal(r->etag, first);
    free(r);
}

/* Content-Length: digits, leading zeros as curl takes them; anything else
 * is no length (a long one cut to 31 zeros used to read as 0) */
static void test_content_length(void **state)
{
    (void)state;
    sk_s3_req *r = calloc(1, sizeof *r);
    assert_non_null(r);
    FEED(r, "Content-Length: 0000000000000000000000000000000000000010240\r\n");
    assert_int_equal(r->has_length, 1);
    assert_int_equal(r->content_length, 10240);
    FEED(r, "Content-Length:\t7 \r\n");
    assert_int_equal(r->has_length, 1);
    assert_int_equal(r->content_length, 7);
    static const char *const bad[] = {"Content-Length: 18446744073709551616\r\n",
                                      "Content-Length: -1\r\n", "Content-Length: 12abc\r\n",
                                      "Content-Length: \r\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        FEED(r, "Content-Length: 5\r\n");
        feed(r, bad[i], strlen(bad[i]));
        assert_int_equal(r->has_length, 0);
    }
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_final_answer),
        cmocka_unit_test(test_tab_is_blank),
        cmocka_unit_test(test_nul_ends_line),
        cmocka_unit_test(test_long_values_differ),
        cmocka_unit_test(test_content_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
