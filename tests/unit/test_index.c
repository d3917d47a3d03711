/* test_index.c - the sidecar index (lib/format/index.c): builder round trip, lookup
 * by key and ordinal, and refusal of truncated files and flipped bytes in
 * the header and the body, with and without SK_INDEX_TRUST_BODY. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sk_assert.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardkit.h"

static char path[64];
static const sk_index_shard_info info = {123456, 0xdeadbeef, 0x01020304, SK_INDEX_ZSTD};

static void build(int nsamples)
{
    sk_error err = SK_ERROR_INIT;
    sk_index_builder *b = sk_index_builder_new();
    assert_non_null(b);
    for (int i = 0; i < nsamples; i++) {
        char key[32];
        /* keys out of order, so the order table matters */
        int n = snprintf(key, sizeof key, "dir/k%05d", (i * 7919) % nsamples);
        assert_int_equal(sk_index_add_sample(b, key, (size_t)n, (uint64_t)i * 4096, 4096,
                                             (uint64_t)i * 100, 100, &err), 0);
        assert_int_equal(sk_index_add_member(b, "jpg", 3, (uint64_t)i * 4096 + 512, 1000 + i, 512,
                                             (uint32_t)i * 3, &err), 0);
        if (i % 2)
            assert_int_equal(sk_index_add_member(b, "seg.png", 7, (uint64_t)i * 4096 + 2048, 7, 1024,
                                                 42, &err), 0);
    }
    assert_int_equal(sk_index_builder_samples(b), (uint64_t)nsamples);
    int rc = sk_index_builder_write(b, path, &info, &err);
    if (rc) fail_msg("%s", err.msg);
    sk_index_builder_free(b);
}

static int setup(void **state)
{
    (void)state;
    snprintf(path, sizeof path, "/tmp/sk-test-index-%d.idx", (int)getpid());
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    build(1000);
    sk_error err = SK_ERROR_INIT;
    sk_index *ix;
    if (sk_index_open(&ix, path, 0, &err)) fail_msg("%s", err.msg);
    const sk_index_shard_info *in = sk_index_shard(ix);
    assert_int_equal(in->size, 123456);
    assert_int_equal(in->crc32c, 0xdeadbeef);
    assert_int_equal(in->first_block_crc32c, 0x01020304);
    assert_int_equal(in->flags, SK_INDEX_ZSTD);
    assert_int_equal(sk_index_sample_count(ix), 1000);
    assert_int_equal(sk_index_member_count(ix), 1500);
    for (uint64_t i = 0; i < 1000; i++) {
        sk_sample_ref s;
        sk_member_ref m;
        assert_sk_ok(sk_index_sample(ix, i, &s, &err), err);
        assert_int_equal(s.ordinal, i);
        assert_int_equal(s.offset, i * 4096);
        assert_int_equal(s.span, 4096);
        assert_int_equal(s.stored_offset, i * 100);
        assert_int_equal(s.member_count, i % 2 ? 2 : 1);
        char key[32];
        snprintf(key, sizeof key, "dir/k%05d", (int)((i * 7919) % 1000));
        assert_int_equal(s.key_len, strlen(key));
        assert_memory_equal(s.key, key, s.key_len);
        assert_int_equal(s.key[s.key_len], 0);
        /* by key, O(log n) */
        uint64_t ord;
        assert_sk_ok(sk_index_find(ix, key, strlen(key), &ord, &err), err);
        assert_int_equal(ord, i);
        assert_sk_ok(sk_index_member(ix, s.first_member, &m, &err), err);
        assert_int_equal(m.data_offset, i * 4096 + 512);
        assert_int_equal(m.size, 1000 + i);
        assert_int_equal(m.crc32c, (uint32_t)i * 3);
        assert_int_equal(m.header_len, 512);
        assert_int_equal(m.ext_len, 3);
        assert_memory_equal(m.ext, "jpg", 3);
        if (i % 2) {
            assert_sk_ok(sk_index_member(ix, s.first_member + 1, &m, &err), err);
            assert_memory_equal(m.ext, "seg.png", 7);
        }
    }
    uint64_t ord;
    assert_int_equal(sk_index_find(ix, "dir/k", 5, &ord, &err), SK_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "no sample with key 'dir/k'"));
    assert_int_equal(sk_index_find(ix, "dir/k009999", 11, &ord, &err), SK_E_NOTFOUND);
    sk_sample_ref s;
    assert_int_equal(sk_index_sample(ix, 1000, &s, &err), SK_E_NOTFOUND);
    sk_index_close(ix);
}

static void test_empty_index(void **state)
{
    (void)state;
    build(0);
    sk_error err = SK_ERROR_INIT;
    sk_index *ix;
    assert_sk_ok(sk_index_open(&ix, path, 0, &err), err);
    assert_int_equal(sk_index_sample_count(ix), 0);
    uint64_t ord;
    assert_int_equal(sk_index_find(ix, "a", 1, &ord, &err), SK_E_NOTFOUND);
    sk_index_close(ix);
}

static unsigned char *slurp(size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    rewind(f);
    unsigned char *b = malloc(*n);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void spill(const unsigned char *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

static void test_truncated(void **state)
{
    (void)state;
    build(50);
    size_t n;
    unsigned char *b = slurp(&n);
    size_t cuts[] = {0, 1, 50, 95, 96, 200, n - 8, n - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        spill(b, cuts[i]);
        for (unsigned fl = 0; fl < 2; fl++) {
            sk_error err = SK_ERROR_INIT;
            sk_index *ix = NULL;
            assert_int_equal(sk_index_open(&ix, path, fl ? SK_INDEX_TRUST_BODY : 0, &err), SK_E_CORRUPT);
            assert_null(ix);
            assert_non_null(strstr(err.msg, path));
        }
        /* the same refusal from memory */
        sk_error err = SK_ERROR_INIT;
        sk_index *ix = NULL;
        assert_int_equal(sk_index_from_memory(&ix, b, cuts[i], "mem", 0, &err), SK_E_CORRUPT);
    }
    free(b);
}

static void test_flipped_bytes(void **state)
{
    (void)state;
    build(50);
    size_t n;
    unsigned char *b = slurp(&n);
    for (size_t pos = 0; pos < n; pos += (pos < 96 ? 1 : 37)) {
        b[pos] ^= 0x20;
        sk_error err = SK_ERROR_INIT;
        sk_index *ix = NULL;
        /* full verification: every flipped byte is caught */
        int rc = sk_index_from_memory(&ix, b, n, "mem", 0, &err);
        if (rc != SK_E_CORRUPT) fail_msg("flip at %zu accepted", pos);
        /* trusting the body: a header flip is still caught; a body flip may
         * be served, but every read stays in bounds */
        rc = sk_index_from_memory(&ix, b, n, "mem", SK_INDEX_TRUST_BODY, &err);
        if (pos < 96) {
            if (rc != SK_E_CORRUPT) fail_msg("header flip at %zu accepted", pos);
        } else {
            assert_int_equal(rc, 0);
            for (uint64_t i = 0; i < sk_index_sample_count(ix); i++) {
                sk_sample_ref s;
                sk_member_ref m;
                if (sk_index_sample(ix, i, &s, &err)) continue;
                for (uint32_t k = 0; k < s.member_count; k++) (void)sk_index_member(ix, s.first_member + k, &m, &err);
                uint64_t ord;
                (void)sk_index_find(ix, s.key, s.key_len, &ord, &err);
            }
            sk_index_close(ix);
        }
        b[pos] ^= 0x20;
    }
    free(b);
}

static void test_not_an_index(void **state)
{
    (void)state;
    unsigned char junk[200];
    memset(junk, 'x', sizeof junk);
    sk_error err = SK_ERROR_INIT;
    sk_index *ix;
    assert_int_equal(sk_index_from_memory(&ix, junk, sizeof junk, "junk", 0, &err), SK_E_CORRUPT);
    assert_string_equal(err.msg, "junk: not a shardkit index");
    assert_int_equal(sk_index_open(&ix, "/nonexistent/x.idx", 0, &err), SK_E_NOTFOUND);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flipped_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_an_index, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
