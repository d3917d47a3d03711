/* test_dataset_get.c - sk_dataset_get (lib/tools/dataset_get.c): lookup by
 * ordinal or key, read and CRC check in one call.  It gives what
 * sk_dataset_member + sk_dataset_read give, for plain shards (one read of
 * the span) and .tar.zst (member by member), with a buffer of `need` or
 * only of the minimum; hostile cases: an ordinal out of range, an unknown
 * key, too small a buffer (SK_E_USAGE with need, nothing written past
 * cap, a retry with need succeeds), index records that point past the end
 * of the shard or an extension holding a NUL (SK_E_CORRUPT, need unset),
 * a damaged member (SK_E_MISMATCH on both paths), a short sk_get_result
 * and a misaligned buffer; a shard cut short after it was opened;
 * four threads on one freshly opened dataset (nothing opened yet, so they
 * race to open indexes, shards and seek tables) all get the right bytes;
 * and sk_dataset_get_many gives what sk_dataset_get gives, one buffer-full
 * at a time, stopping at a sample that does not fit or is not there. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shardkit.h"
#include "sk_assert.h"

#define SK_SET_SAMPLES 40
#define SK_SET_TEMPLATE "/tmp/sk-test-dsget.XXXXXX"
#include "sk_sample_set.h"
#define NSAMPLES SK_SET_SAMPLES

static sk_dataset *open_ds(const char *sub)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, sub);
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds = NULL;
    assert_sk_ok(sk_dataset_open(&ds, path, 0, &err), err);
    return ds;
}

/* 0 when r (from a successful get) is sample i, whole and right; else a
 * line saying what differs (threads cannot call cmocka's asserts). */
static const char *check_sample(const sk_get_result *r, int i)
{
    char key[32];
    snprintf(key, sizeof key, "k%04d", i);
    if (r->hit.global_ordinal != (uint64_t)i) return "global ordinal";
    if (r->hit.sample.member_count != 3) return "member count";
    if (r->hit.sample.key_len != strlen(key) || strcmp(r->key, key)) return "key";
    const unsigned char *p = r->data;
    const char *names = r->key + r->hit.sample.key_len + 1; /* "a\0b\0c\0" in buf */
    for (int m = 0; m < 3; m++) {
        const sk_member_ref *mr = &r->members[m];
        if (mr->ext_len != 1 || mr->ext[0] != 'a' + m) return "extension";
        if (mr->ext != names + 2 * m || mr->ext[1] != 0) return "extension's place in buf";
        if (mr->size != member_size(i, m)) return "size";
        for (size_t k = 0; k < mr->size; k++)
            if (p[k] != byte_at(k, i, m)) return "data";
        p += mr->size;
    }
    return NULL;
}

/* The minimum buffer for sample i: records, key "k0000" and NUL, the
 * extensions "a" "b" "c" with NULs, zeros to a multiple of 8, data */
static size_t minimum(int i)
{
    size_t names = 3 * sizeof(sk_member_ref) + 6 + 3 * 2;
    return ((names + 7) & ~(size_t)7) + member_size(i, 0) + member_size(i, 1) +
           member_size(i, 2);
}

static void get_all(const char *sub)
{
    sk_dataset *ds = open_ds(sub);
    sk_error err = SK_ERROR_INIT;
    for (int i = 0; i < NSAMPLES; i++) {
        for (int how = 0; how < 4; how++) { /* by ordinal or key; minimum or need */
            sk_get_result r;
            sk_get_result_init(&r);
            char key[32];
            snprintf(key, sizeof key, "k%04d", i);
            const char *k = how & 1 ? key : NULL;
            /* first with no buffer: SK_E_USAGE and the size it needs */
            assert_int_equal(sk_dataset_get(ds, k, strlen(key), (uint64_t)i, NULL, 0, &r, &err),
                             SK_E_USAGE);
            assert_true(r.need >= minimum(i));
            size_t cap = how & 2 ? r.need : minimum(i);
            unsigned char *buf = malloc(cap + 64);
            memset(buf + cap, 0xA5, 64);
            assert_sk_ok(sk_dataset_get(ds, k, strlen(key), (uint64_t)i, buf, cap, &r, &err), err);
            for (int g = 0; g < 64; g++) assert_int_equal(buf[cap + g], 0xA5);
            const char *bad = check_sample(&r, i);
            if (bad) fail_msg("%s sample %d (how %d): %s differs", sub, i, how, bad);
            assert_ptr_equal(r.members, (void *)buf);
            /* the same bytes as member by member */
            const unsigned char *p = r.data;
            for (uint32_t m = 0; m < 3; m++) {
                size_t n = (size_t)r.members[m].size;
                unsigned char *one = malloc(n ? n : 1);
                assert_sk_ok(sk_dataset_read(ds, &r.hit, m, one, n, &err), err);
                assert_memory_equal(p, one, n);
                assert_int_equal(r.members[m].crc32c, sk_crc32c(0, one, n));
                free(one);
                p += n;
            }
            free(buf);
        }
    }
    sk_dataset_close(ds);
}

/* The start of the tests that read the plain set a sample at a time: the
 * set written and opened, *r made ready, *buf of 64 KiB (free it). */
static sk_dataset *open_plain(sk_get_result *r, unsigned char **buf)
{
    write_dataset("plain", 0);
    sk_get_result_init(r);
    *buf = malloc(1 << 16);
    return open_ds("plain");
}

static void test_plain_and_zstd(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    write_dataset("zst", 1);
    get_all("plain");
    get_all("zst");
    /* a plain shard's need is the span (one read), a .tar.zst's the minimum */
    sk_dataset *ds = open_ds("plain"), *dz = open_ds("zst");
    sk_error err = SK_ERROR_INIT;
    sk_get_result r;
    sk_get_result_init(&r);
    assert_int_equal(sk_dataset_get(ds, NULL, 0, 5, NULL, 0, &r, &err), SK_E_USAGE);
    size_t data5 = member_size(5, 0) + member_size(5, 1) + member_size(5, 2);
    assert_int_equal(r.need, minimum(5) - data5 + r.hit.sample.span);
    assert_int_equal(sk_dataset_get(dz, NULL, 0, 5, NULL, 0, &r, &err), SK_E_USAGE);
    assert_int_equal(r.need, minimum(5));
    sk_dataset_close(ds);
    sk_dataset_close(dz);
}

static void test_not_there(void **state)
{
    (void)state;
    sk_get_result r;
    unsigned char *buf;
    sk_dataset *ds = open_plain(&r, &buf);
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_dataset_get(ds, NULL, 0, NSAMPLES, buf, 1 << 16, &r, &err),
                     SK_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "no sample #40"));
    assert_int_equal(r.need, 0);
    assert_null(r.data);
    assert_int_equal(sk_dataset_get(ds, NULL, 0, UINT64_MAX, buf, 1 << 16, &r, &err),
                     SK_E_NOTFOUND);
    assert_int_equal(sk_dataset_get(ds, "k9999", 5, 0, buf, 1 << 16, &r, &err), SK_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "k9999"));
    assert_int_equal(sk_dataset_get(ds, "", 0, 0, buf, 1 << 16, &r, &err), SK_E_NOTFOUND);
    /* key_len 0: a NUL-terminated key, as sk_sample_writer_add takes one */
    assert_sk_ok(sk_dataset_get(ds, "k0003", 0, 0, buf, 1 << 16, &r, &err), err);
    assert_null(check_sample(&r, 3));
    /* a caller's struct from before 'data' existed is refused, not overrun */
    r.struct_size = offsetof(sk_get_result, data);
    assert_int_equal(sk_dataset_get(ds, NULL, 0, 1, buf, 1 << 16, &r, &err), SK_E_USAGE);
    sk_get_result_init(&r);
    assert_int_equal(sk_dataset_get(ds, NULL, 0, 1, buf + 1, (1 << 16) - 1, &r, &err),
                     SK_E_USAGE);
    assert_non_null(strstr(err.msg, "aligned"));
    /* a zeroed struct means this version's layout */
    memset(&r, 0, sizeof r);
    assert_sk_ok(sk_dataset_get(ds, NULL, 0, 1, buf, 1 << 16, &r, &err), err);
    assert_null(check_sample(&r, 1));
    free(buf);
    sk_dataset_close(ds);
}

static void test_too_small(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    write_dataset("zst", 1);
    const char *subs[] = {"plain", "zst"};
    for (int d = 0; d < 2; d++) {
        sk_dataset *ds = open_ds(subs[d]);
        sk_error err = SK_ERROR_INIT;
        size_t cap = 64; /* room for the records only: the grow-and-retry loop */
        unsigned char *buf = malloc(cap + 64);
        for (int i = 0; i < NSAMPLES; i++) {
            sk_get_result r;
            sk_get_result_init(&r);
            int tries = 0, rc;
            memset(buf + cap, 0x5A, 64);
            while ((rc = sk_dataset_get(ds, NULL, 0, (uint64_t)i, buf, cap, &r, &err)) ==
                   SK_E_USAGE) {
                for (int g = 0; g < 64; g++) assert_int_equal(buf[cap + g], 0x5A);
                assert_non_null(strstr(err.msg, "buffer of"));
                assert_true(r.need > cap);
                assert_null(r.data);
                cap = r.need;
                buf = realloc(buf, cap + 64);
                memset(buf + cap, 0x5A, 64);
                assert_true(++tries < 2);
            }
            assert_sk_ok(rc, err);
            assert_null(check_sample(&r, i));
            /* one byte short of the minimum: refused */
            size_t min = minimum(i);
            assert_int_equal(sk_dataset_get(ds, NULL, 0, (uint64_t)i, buf, min - 1, &r, &err),
                             SK_E_USAGE);
        }
        free(buf);
        sk_dataset_close(ds);
    }
}

/* A one-sample shard with an index of our own making: the shard's true
 * size and first block (so the index "belongs" to it), one member whose
 * record is set by the caller. */
static void lying_index(const char *sub, uint64_t span, uint64_t data_offset, uint64_t size,
                        const char *ext, size_t ext_len)
{
    char d[400], idx[500];
    snprintf(d, sizeof d, "%s/%s", dir, sub);
    write_dataset(sub, 0);
    snprintf(idx, sizeof idx, "%s/t-000.tar.idx", d);
    sk_error err = SK_ERROR_INIT;
    sk_index *ix = NULL;
    assert_sk_ok(sk_index_open(&ix, idx, 0, &err), err);
    sk_index_shard_info info = *sk_index_shard(ix);
    sk_sample_ref s0;
    assert_sk_ok(sk_index_sample(ix, 0, &s0, &err), err);
    sk_member_ref m0;
    assert_sk_ok(sk_index_member(ix, s0.first_member, &m0, &err), err);
    sk_index_close(ix);
    sk_index_builder *b = sk_index_builder_new();
    assert_sk_ok(sk_index_add_sample(b, "k0000", 5, s0.offset, span, s0.offset, span, &err), err);
    assert_sk_ok(sk_index_add_member(b, ext, ext_len, data_offset, size, m0.header_len, 0, &err),
                 err);
    assert_sk_ok(sk_index_builder_write(b, idx, &info, &err), err);
    sk_index_builder_free(b);
}

static void test_lying_index(void **state)
{
    (void)state;
    struct {
        const char *sub;
        uint64_t span, data_offset, size;
        const char *ext;
        size_t ext_len;
        const char *says;
    } lies[] = {
        /* the sample's span past EOF */
        {"span", UINT64_MAX - 10, 512, 10, "a", 1, "past the end of the shard"},
        /* a member's data far past EOF */
        {"off", 2048, 1ull << 40, 10, "a", 1, "past the end of the shard"},
        /* a member's size past EOF */
        {"size", 2048, 512, 1ull << 62, "a", 1, "past the end of the shard"},
        /* offset + size wraps */
        {"wrap", 2048, UINT64_MAX - 4, 100, "a", 1, "past the end of the shard"},
        /* an extension with a NUL (it would split wrongly in buf's names) */
        {"nul", 2048, 512, 1, "a\0b", 3, "NUL"},
    };
    for (size_t t = 0; t < sizeof lies / sizeof lies[0]; t++) {
        lying_index(lies[t].sub, lies[t].span, lies[t].data_offset, lies[t].size, lies[t].ext,
                    lies[t].ext_len);
        char shard[400];
        snprintf(shard, sizeof shard, "%s/%s/t-000.tar", dir, lies[t].sub);
        sk_error err = SK_ERROR_INIT;
        sk_dataset *ds = NULL;
        assert_sk_ok(sk_dataset_open(&ds, shard, 0, &err), err);
        sk_get_result r;
        sk_get_result_init(&r);
        unsigned char *buf = malloc(1 << 16);
        for (int by_key = 0; by_key < 2; by_key++) {
            err = (sk_error)SK_ERROR_INIT;
            int rc = sk_dataset_get(ds, by_key ? "k0000" : NULL, 5, 0, buf, 1 << 16, &r, &err);
            if (rc != SK_E_CORRUPT) fail_msg("%s: code %d: %s", lies[t].sub, rc, err.msg);
            if (!strstr(err.msg, lies[t].says)) fail_msg("%s: %s", lies[t].sub, err.msg);
            assert_non_null(strstr(err.msg, "t-000.tar.idx"));
            assert_int_equal(r.need, 0); /* no size to grow a buffer to */
            assert_null(r.data);
        }
        free(buf);
        sk_dataset_close(ds);
    }
}

static void test_damaged_member(void **state)
{
    (void)state;
    sk_get_result r;
    unsigned char *buf;
    sk_dataset *ds = open_plain(&r, &buf);
    sk_error err = SK_ERROR_INIT;
    char path[400];
    snprintf(path, sizeof path, "%s/plain/t-001.tar", dir);
    assert_sk_ok(sk_dataset_get(ds, NULL, 0, 10, buf, 1 << 16, &r, &err), err);
    assert_string_equal(r.hit.shard_path, path);
    sk_member_ref c = r.members[2];
    sk_dataset_close(ds);
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, (long)(c.data_offset + c.size / 2), SEEK_SET);
    int b = fgetc(f);
    fseek(f, (long)(c.data_offset + c.size / 2), SEEK_SET);
    fputc(b ^ 0xFF, f);
    fclose(f);
    for (int path_kind = 0; path_kind < 2; path_kind++) { /* the span, then member by member */
        ds = open_ds("plain");
        err = (sk_error)SK_ERROR_INIT;
        size_t cap = path_kind ? minimum(10) : 1 << 16;
        assert_int_equal(sk_dataset_get(ds, "k0010", 5, 0, buf, cap, &r, &err), SK_E_MISMATCH);
        assert_non_null(strstr(err.msg, "k0010.c"));
        assert_non_null(strstr(err.msg, "CRC32C"));
        assert_null(r.data);
        /* the sample next to it is fine */
        assert_sk_ok(sk_dataset_get(ds, "k0009", 5, 0, buf, cap, &r, &err), err);
        assert_null(check_sample(&r, 9));
        sk_dataset_close(ds);
    }
    free(buf);
}

/* A shard cut short after it was opened and read from: the samples past
 * the cut are an error naming the shard (a short read); those before it
 * still read. */
static void test_cut_after_open(void **state)
{
    (void)state;
    sk_get_result r;
    unsigned char *buf;
    sk_dataset *ds = open_plain(&r, &buf);
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_dataset_get(ds, NULL, 0, 12, buf, 1 << 16, &r, &err), err);
    uint64_t cut = r.hit.sample.offset; /* shard t-001 holds samples 7..13 */
    assert_sk_ok(sk_dataset_get(ds, NULL, 0, 13, buf, 1 << 16, &r, &err), err);
    assert_int_equal(truncate(r.hit.shard_path, (off_t)cut), 0);
    for (int i = 12; i <= 13; i++) {
        err = (sk_error)SK_ERROR_INIT;
        int rc = sk_dataset_get(ds, NULL, 0, (uint64_t)i, buf, 1 << 16, &r, &err);
        assert_int_not_equal(rc, SK_OK);
        assert_non_null(strstr(err.msg, "t-001.tar"));
    }
    assert_sk_ok(sk_dataset_get(ds, NULL, 0, 8, buf, 1 << 16, &r, &err), err);
    assert_null(check_sample(&r, 8));
    free(buf);
    sk_dataset_close(ds);
}

/* The caller's loop around sk_dataset_get_many: every ordinal, cap bytes
 * at a time; checks each sample and counts the calls. */
static int get_many_all(sk_dataset *ds, const uint64_t *ords, size_t n, size_t cap)
{
    unsigned char *buf = malloc(cap ? cap : 1);
    sk_get_result *out = calloc(n ? n : 1, sizeof *out);
    sk_get_result_init(&out[0]);
    sk_error err = SK_ERROR_INIT;
    int calls = 0;
    for (size_t at = 0; at < n;) {
        size_t done = 99;
        int rc = sk_dataset_get_many(ds, ords + at, n - at, buf, cap, out, &done, &err);
        calls++;
        assert_true(done <= n - at);
        for (size_t i = 0; i < done; i++) {
            const char *bad = check_sample(&out[i], (int)ords[at + i]);
            if (bad) fail_msg("get_many, ordinal %d: %s differs", (int)ords[at + i], bad);
            assert_true((uintptr_t)out[i].members % 8 == 0);
            assert_true(out[i].data >= buf && out[i].data <= buf + cap);
        }
        if (rc) {
            assert_int_equal(rc, SK_E_USAGE); /* the rest of buf is too small */
            assert_true(done > 0 || out[0].need > cap);
            if (!done) break;
        }
        at += done;
    }
    free(out);
    free(buf);
    return calls;
}

static void test_get_many(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    write_dataset("zst", 1);
    uint64_t ords[NSAMPLES];
    for (int i = 0; i < NSAMPLES; i++) ords[i] = (uint64_t)((i * 17 + 5) % NSAMPLES);
    for (int z = 0; z < 2; z++) {
        sk_dataset *ds = open_ds(z ? "zst" : "plain");
        assert_int_equal(get_many_all(ds, ords, NSAMPLES, 1 << 20), 1); /* one call */
        assert_true(get_many_all(ds, ords, NSAMPLES, 12000) > 3);      /* a few at a time */
        assert_int_equal(get_many_all(ds, ords, 0, 64), 0);
        sk_dataset_close(ds);
    }
    sk_dataset *ds = open_ds("plain");
    sk_error err = SK_ERROR_INIT;
    sk_get_result out[4];
    sk_get_result_init(&out[0]);
    unsigned char *buf = malloc(1 << 16);
    size_t done = 99;
    /* nothing fits: SK_E_USAGE at once, with the size the first needs */
    assert_int_equal(sk_dataset_get_many(ds, ords, 4, buf, 64, out, &done, &err), SK_E_USAGE);
    assert_int_equal(done, 0);
    assert_true(out[0].need >= minimum((int)ords[0]));
    /* a missing ordinal in the middle stops there, with the two before it */
    uint64_t with_gap[4] = {3, 4, NSAMPLES + 5, 6};
    assert_int_equal(sk_dataset_get_many(ds, with_gap, 4, buf, 1 << 16, out, &done, &err),
                     SK_E_NOTFOUND);
    assert_int_equal(done, 2);
    assert_null(check_sample(&out[1], 4));
    assert_non_null(strstr(err.msg, "no sample #45"));
    /* nothing asked: nothing touched; no arrays for something asked: refused */
    assert_sk_ok(sk_dataset_get_many(ds, NULL, 0, NULL, 0, NULL, &done, &err), err);
    assert_int_equal(done, 0);
    assert_int_equal(sk_dataset_get_many(ds, NULL, 2, buf, 1 << 16, out, &done, &err),
                     SK_E_USAGE);
    assert_int_equal(sk_dataset_get_many(ds, ords, 2, buf, 1 << 16, NULL, &done, &err),
                     SK_E_USAGE);
    assert_int_equal(sk_dataset_get_many(ds, ords, 2, buf, 1 << 16, out, NULL, &err),
                     SK_E_USAGE);
    /* a result array of an older, shorter struct is refused, not overrun */
    out[0].struct_size = offsetof(sk_get_result, data);
    assert_int_equal(sk_dataset_get_many(ds, ords, 4, buf, 1 << 16, out, &done, &err),
                     SK_E_USAGE);
    assert_int_equal(done, 0);
    free(buf);
    sk_dataset_close(ds);
}

struct worker {
    sk_dataset *ds;
    int seed;
    const char *bad;
    sk_error err;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    size_t cap = 256;
    unsigned char *buf = malloc(cap);
    for (int n = 0; n < NSAMPLES * 3 && !w->bad; n++) {
        int i = (n * 7 + w->seed * 13) % NSAMPLES;
        char key[32];
        snprintf(key, sizeof key, "k%04d", i);
        sk_get_result r;
        sk_get_result_init(&r);
        const char *k = (n + w->seed) % 2 ? key : NULL;
        int rc;
        while ((rc = sk_dataset_get(w->ds, k, strlen(key), (uint64_t)i, buf, cap, &r, &w->err)) ==
                   SK_E_USAGE &&
               r.need > cap)
            buf = realloc(buf, cap = r.need);
        if (rc) w->bad = w->err.msg;
        else w->bad = check_sample(&r, i);
    }
    free(buf);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    write_dataset("plain", 0);
    write_dataset("zst", 1);
    const char *subs[] = {"plain", "zst", "plain/manifest.json"};
    for (int round = 0; round < 30; round++) {
        sk_dataset *ds = open_ds(subs[round % 3]); /* nothing opened yet */
        pthread_t t[4];
        struct worker w[4];
        for (int k = 0; k < 4; k++) {
            w[k] = (struct worker){.ds = ds, .seed = k + round};
            assert_int_equal(pthread_create(&t[k], NULL, work, &w[k]), 0);
        }
        for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
        for (int k = 0; k < 4; k++)
            if (w[k].bad) fail_msg("%s, thread %d: %s", subs[round % 3], k, w[k].bad);
        sk_dataset_close(ds);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_plain_and_zstd, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_there, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_small, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lying_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_member, setup, teardown),
        cmocka_unit_test_setup_teardown(test_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cut_after_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_many, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
