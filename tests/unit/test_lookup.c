/* test_lookup.c - sk_dataset_read_sample (lib/tools/dataset_read.c): a whole
 * sample in one call gives the same members and bytes as
 * sk_dataset_member + sk_dataset_read one by one, for plain shards (one
 * read of the span, compacted in place) and .tar.zst (the member path),
 * with a buffer of the span or only of the data; too few member slots or
 * too small a buffer is SK_E_USAGE with nothing written past it; a damaged
 * byte in a member is SK_E_MISMATCH on both paths; an index whose members
 * overlap is read right (each member's own bytes, and a mismatch quoted
 * with the CRC32C of those bytes).  Shards are made with
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

/* The shard t-000.tar's index rewritten with sample 3's members as b, c
 * then "d": bytes 100..299 of c, inside it: an odd index whose members
 * overlap, each checksum true (or d's not, as the caller says).  b's 513
 * bytes make compacting c move it by a distance that is no multiple of
 * the test bytes' period (256), so bytes moved onto d's are not d's.
 * Returns d's real bytes' CRC32C. */
static uint32_t write_overlapping_index(const char *shard, int bad_d)
{
    char ipath[420];
    snprintf(ipath, sizeof ipath, "%s.idx", shard);
    sk_error err = SK_ERROR_INIT;
    sk_index *ix = NULL;
    assert_sk_ok(sk_index_open(&ix, ipath, 0, &err), err);
    sk_index_shard_info info = *sk_index_shard(ix);
    sk_index_builder *b = sk_index_builder_new();
    assert_non_null(b);
    uint32_t crc_d = 0;
    for (uint64_t i = 0; i < sk_index_sample_count(ix); i++) {
        sk_sample_ref s;
        assert_sk_ok(sk_index_sample(ix, i, &s, &err), err);
        assert_sk_ok(sk_index_add_sample(b, s.key, s.key_len, s.offset, s.span, s.stored_offset,
                                         s.stored_span, &err), err);
        for (uint32_t m = 0; m < s.member_count; m++) {
            sk_member_ref r;
            assert_sk_ok(sk_index_member(ix, (uint64_t)s.first_member + m, &r, &err), err);
            if (i == 3 && r.ext[0] != 'b' && r.ext[0] != 'c') continue; /* an earlier d: replaced */
            assert_sk_ok(sk_index_add_member(b, r.ext, r.ext_len, r.data_offset, r.size,
                                             r.header_len, r.crc32c, &err), err);
            if (i != 3 || r.ext[0] != 'c') continue;
            unsigned char d[200];
            for (size_t k = 0; k < sizeof d; k++) d[k] = byte_at(100 + k, 3, 2);
            crc_d = sk_crc32c(0, d, sizeof d);
            assert_sk_ok(sk_index_add_member(b, "d", 1, r.data_offset + 100, sizeof d, 0,
                                             bad_d ? crc_d ^ 1 : crc_d, &err), err);
        }
    }
    sk_index_close(ix);
    assert_sk_ok(sk_index_builder_write(b, ipath, &info, &err), err);
    sk_index_builder_free(b);
    return crc_d;
}

static void test_overlapping_members(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    char path[400];
    snprintf(path, sizeof path, "%s/plain/t-000.tar", dir);
    for (int bad_d = 0; bad_d < 2; bad_d++) {
        uint32_t crc_d = write_overlapping_index(path, bad_d);
        sk_error err = SK_ERROR_INIT;
        sk_dataset *ds = NULL;
        assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
        sk_hit h;
        assert_sk_ok(sk_dataset_at(ds, 3, &h, &err), err);
        assert_int_equal(h.sample.member_count, 3);
        size_t cap = (size_t)h.sample.span;
        unsigned char *buf = malloc(cap);
        sk_member_ref ms[3];
        int rc = sk_dataset_read_sample(ds, &h, buf, cap, ms, 3, &err);
        if (!bad_d) {
            /* b, c, then d: c's bytes 100..299 again */
            assert_sk_ok(rc, err);
            size_t nb = member_size(3, 1), nc = member_size(3, 2);
            assert_int_equal(nb, 513);
            for (size_t k = 0; k < nb; k++) assert_int_equal(buf[k], byte_at(k, 3, 1));
            for (size_t k = 0; k < nc; k++) assert_int_equal(buf[nb + k], byte_at(k, 3, 2));
            for (size_t k = 0; k < 200; k++)
                assert_int_equal(buf[nb + nc + k], byte_at(100 + k, 3, 2));
        } else {
            /* the mismatch quotes the CRC32C the bytes have */
            char want[64];
            snprintf(want, sizeof want, "CRC32C %08x, the index says %08x", crc_d, crc_d ^ 1);
            assert_int_equal(rc, SK_E_MISMATCH);
            assert_non_null(strstr(err.msg, "k0003.d"));
            if (!strstr(err.msg, want)) fail_msg("%s: wanted '%s'", err.msg, want);
        }
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
        cmocka_unit_test_setup_teardown(test_overlapping_members, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
