/* test_sigv4.c - SigV4 against vectors of the AWS Signature Version 4 test
 * suite (service "service", us-east-1, 20150830T123600Z, the suite's example
 * key) and the S3 documentation's GET Object example, plus the encodings the
 * signature depends on. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sk_assert.h"
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

#define SUITE_AK "AKIDEXAMPLE"
#define SUITE_SK "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SUITE_CRED "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "

static void sign_suite(const char *method, const char *query, const char *const *hdrs, size_t n,
                       const char *payload_hash, const char *want)
{
    char auth[512];
    sk_error err = SK_ERROR_INIT;
    sk_s3_sigv4_input in = {method, "/", query, hdrs, n, payload_hash, "20150830T123600Z",
                            "us-east-1", "service", SUITE_AK, SUITE_SK};
    int rc = sk_s3_sigv4_sign(&in, auth, sizeof auth, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_string_equal(auth, want);
}

static void test_get_vanilla(void **state)
{
    (void)state;
    const char *h[] = {"Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z"};
    sign_suite("GET", "", h, 2, EMPTY_SHA,
               SUITE_CRED "SignedHeaders=host;x-amz-date, "
               "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

static void test_get_vanilla_query_order_key_case(void **state)
{
    (void)state;
    const char *h[] = {"Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z"};
    sign_suite("GET", "Param2=value2&Param1=value1", h, 2, EMPTY_SHA,
               SUITE_CRED "SignedHeaders=host;x-amz-date, "
               "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

static void test_post_vanilla(void **state)
{
    (void)state;
    const char *h[] = {"Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z"};
    sign_suite("POST", "", h, 2, EMPTY_SHA,
               SUITE_CRED "SignedHeaders=host;x-amz-date, "
               "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
}

static void test_post_x_www_form_urlencoded(void **state)
{
    (void)state;
    char hash[65];
    sk_s3_sha256_hex("Param1=value1", 13, hash);
    const char *h[] = {"Content-Type:application/x-www-form-urlencoded",
                       "Host:example.amazonaws.com", "X-Amz-Date:20150830T123600Z"};
    sign_suite("POST", "", h, 3, hash,
               SUITE_CRED "SignedHeaders=content-type;host;x-amz-date, "
               "Signature=ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a");
}

static void test_get_header_value_trim(void **state)
{
    (void)state;
    const char *h[] = {"Host:example.amazonaws.com", "My-Header1: value1",
                       "My-Header2: \"a   b   c\"", "X-Amz-Date:20150830T123600Z"};
    sign_suite("GET", "", h, 4, EMPTY_SHA,
               SUITE_CRED "SignedHeaders=host;my-header1;my-header2;x-amz-date, "
               "Signature=acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
}

/* The S3 documentation's example: GET /test.txt with a Range. */
static void test_s3_get_object_example(void **state)
{
    (void)state;
    const char *h[] = {"Host:examplebucket.s3.amazonaws.com", "Range:bytes=0-9",
                       ("x-amz-content-sha256:" EMPTY_SHA), "x-amz-date:20130524T000000Z"};
    char auth[512];
    sk_error err = SK_ERROR_INIT;
    sk_s3_sigv4_input in = {"GET", "/test.txt", "", h, 4, EMPTY_SHA, "20130524T000000Z",
                            "us-east-1", "s3", "AKIAIOSFODNN7EXAMPLE",
                            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"};
    assert_sk_ok(sk_s3_sigv4_sign(&in, auth, sizeof auth, &err), err);
    assert_string_equal(auth, "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

static void test_encodings(void **state)
{
    (void)state;
    char b64[9];
    sk_s3_crc32c_b64(sk_crc32c(0, "123456789", 9), b64); /* 0xe3069283 */
    assert_string_equal(b64, "4waSgw==");
    char hex[65];
    sk_s3_sha256_hex("", 0, hex);
    assert_string_equal(hex, EMPTY_SHA);
    char *b = NULL, *k = NULL;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_s3_parse_url("s3://bkt/a/b c.tar", &b, &k, &err), err);
    assert_string_equal(b, "bkt");
    assert_string_equal(k, "a/b c.tar");
    free(b), free(k);
    assert_int_equal(sk_s3_parse_url("http://x/y", &b, &k, &err), SK_E_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get_vanilla),
        cmocka_unit_test(test_get_vanilla_query_order_key_case),
        cmocka_unit_test(test_post_vanilla),
        cmocka_unit_test(test_post_x_www_form_urlencoded),
        cmocka_unit_test(test_get_header_value_trim),
        cmocka_unit_test(test_s3_get_object_example),
        cmocka_unit_test(test_encodings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
