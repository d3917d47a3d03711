/* test_lookup.c - sk_dataset_read_sample (lib/tools/dataset_read.c): a whole
 * sample in one call gives the same members and bytes as
 * sk_dataset_member + sk_dataset_read one by one, for plain shards (one
 * read of the span, compacted in place) and .tar.zst (the member path),
 * with a buffer of the span or only of the data; too few member slots or
 * too small a buffer is SK_E_USAGE with nothing written past it; a damaged
 * byte in a member is SK_E_MISMATCH on both paths.  Shards are made with
 * the sample writer, members of mixed sizes (empty, under and over a tar
 * block). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"
#include "sk_assert.h"

#define SK_SET_SAMPLES 30
#define SK_SET_TEMPLATE "/tmp/sk-test-lookup.XXXXXX"
#include "sk_sample_set.h"
#define NSAMPLES SK_SET_SAMPLES

/* Every sample read whole with a buffer of cap(span, data) equals it read
 * member by member. */
static void check_all(const char *sub, int data_only)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
    for (uint64_t i = 0; i < NSAMPLES; i++) {
        sk_hit h;
        assert_sk_ok(sk_dataset_at(ds, i, &h, &err), err);
        assert_int_equal(h.sample.member_count, 3);
        size_t total = 0;
        for (int m = 0; m < 3; m++) total += member_size((int)i, m);
        size_t cap = data_only ? total : (size_t)h.sample.span;
        /* a guard zone after cap: nothing may be written there */
        unsigned char *buf = malloc(cap + 64);
        memset(buf + cap, 0xA5, 64);
        sk_member_ref ms[3];
        assert_sk_ok(sk_dataset_read_sample(ds, &h, buf, cap, ms, 3, &err), err);
        for (int k = 0; k < 64; k++) assert_int_equal(buf[cap + k], 0xA5);
        size_t pos = 0;
        for (uint32_t m = 0; m < 3; m++) {
            sk_member_ref one;
            assert_sk_ok(sk_dataset_member(ds, &h, m, &one, &err), err);
            assert_int_equal(ms[m].size, one.size);
            assert_int_equal(ms[m].size, member_size((int)i, (int)m));
            assert_int_equal(ms[m].ext_len, 1);
            assert_int_equal(ms[m].ext[0], 'a' + (int)m);
            unsigned char *want = malloc(one.size ? (size_t)one.size : 1);
            assert_sk_ok(sk_dataset_read(ds, &h, m, want, (size_t)one.size, &err), err);
            assert_memory_equal(buf + pos, want, (size_t)one.size);
            unsigned char *gen = malloc(one.size ? (size_t)one.size : 1);
            for (size_t k = 0; k < (size_t)one.size; k++) gen[k] = byte_at(k, (int)i, (int)m);
            assert_memory_equal(buf + pos, gen, (size_t)one.size);
            free(gen);
            free(want);
            pos += (size_t)one.size;
        }
        assert_int_equal(pos, total);
        free(buf);
    }
    sk_dataset_close(ds);
}

static void test_plain_and_zstd(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    write_dataset("zst", 1);
    check_all("plain", 0);
    check_all("plain", 1);
    check_all("zst", 0);
    check_all("zst", 1);
}

static void test_too_little_room(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    char path[400];
    snprintf(path, sizeof path, "%s/plain", dir);
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
    sk_hit h;
    assert_sk_ok(sk_dataset_at(ds, 9, &h, &err), err);
    sk_member_ref ms[3];
    unsigned char buf[8192 + 64];
    memset(buf, 0x5A, sizeof buf);
    assert_int_equal(sk_dataset_read_sample(ds, &h, buf, sizeof buf, ms, 2, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "room for 2 members"));
    size_t total = member_size(9, 0) + member_size(9, 1) + member_size(9, 2);
    err = (sk_error)SK_ERROR_INIT;
    assert_int_equal(sk_dataset_read_sample(ds, &h, buf, total - 1, ms, 3, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "buffer of"));
    for (size_t k = 0; k < sizeof buf; k++) assert_int_equal(buf[k], 0x5A); /* nothing read */
    sk_dataset_close(ds);
}

static void test_damaged_member(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    char path[400];
    snprintf(path, sizeof path, "%s/plain/t-001.tar", dir);
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
    sk_hit h;
    assert_sk_ok(sk_dataset_at(ds, 3, &h, &err), err);
    sk_member_ref c;
    assert_sk_ok(sk_dataset_member(ds, &h, 2, &c, &err), err);
    sk_dataset_close(ds);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, (long)(c.data_offset + c.size / 2), SEEK_SET);
    int b = fgetc(f);
    fseek(f, (long)(c.data_offset + c.size / 2), SEEK_SET);
    fputc(b ^ 0xFF, f);
    fclose(f);
    for (int data_only = 0; data_only < 2; data_only++) {
        assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
        assert_sk_ok(sk_dataset_at(ds, 3, &h, &err), err);
        size_t total = member_size(10, 0) + member_size(10, 1) + member_size(10, 2);
        size_t cap = data_only ? total : (size_t)h.sample.span;
        unsigned char *buf = malloc(cap);
        sk_member_ref ms[3];
        err = (sk_error)SK_ERROR_INIT;
        assert_int_equal(sk_dataset_read_sample(ds, &h, buf, cap, ms, 3, &err), SK_E_MISMATCH);
        assert_non_null(strstr(err.msg, "k0010.c"));
        assert_non_null(strstr(err.msg, "CRC32C"));
        free(buf);
        sk_dataset_close(ds);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plain_and_zstd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_little_room, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_member, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
