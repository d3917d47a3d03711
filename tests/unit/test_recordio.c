/* test_recordio.c - the RecordIO unwrapper (lib/format/recordio.c) on
 * streams built byte by byte here: whole records with every padding, an
 * empty record, a multi-part record whose magic is put back between parts
 * (read one byte at a time as well as in bulk), and the errors: bad magic,
 * a flag out of order, a stream cut inside a header, data, padding or a
 * multi-part record. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "format/format.h"
#include "sk_assert.h"

#define MAGIC 0xced7230au

struct mem {
    unsigned char b[4096];
    size_t n, pos, piece;
};

static void part(struct mem *m, const char *data, size_t n, unsigned flag)
{
    sk_put_le32(m->b + m->n, MAGIC);
    sk_put_le32(m->b + m->n + 4, (uint32_t)n | flag << 29);
    memcpy(m->b + m->n + 8, data, n);
    m->n += 8 + n;
    while (m->n % 4) m->b[m->n++] = 0;
}

static int mem_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct mem *m = ctx;
    (void)err;
    size_t k = m->n - m->pos;
    if (k > cap) k = cap;
    if (m->piece && k > m->piece) k = m->piece;
    memcpy(buf, m->b + m->pos, k);
    m->pos += k;
    *got = k;
    return 0;
}

/* Everything the stream unwraps to, read out chunk bytes at a time. */
static int unwrap(struct mem *m, size_t chunk, unsigned char *out, size_t *n, sk_error *err)
{
    sk_recordio r;
    sk_recordio_init(&r, "t.rio");
    m->pos = 0;
    *n = 0;
    for (;;) {
        size_t got;
        int rc = sk_recordio_read(&r, mem_read, m, out + *n, chunk, &got, err);
        if (rc) return rc;
        if (!got) return 0;
        *n += got;
    }
}

static void test_whole_records(void **state)
{
    (void)state;
    struct mem m = {.n = 0};
    part(&m, "abcd", 4, 0);
    part(&m, "", 0, 0);
    part(&m, "efg", 3, 0);
    part(&m, "h", 1, 0);
    part(&m, "ijklm", 5, 0);
    for (size_t piece = 0; piece < 10; piece++)
        for (size_t chunk = 1; chunk < 12; chunk++) {
            unsigned char out[64];
            size_t n;
            sk_error err = SK_ERROR_INIT;
            m.piece = piece;
            assert_sk_ok(unwrap(&m, chunk, out, &n, &err), err);
            assert_int_equal(n, 13);
            assert_memory_equal(out, "abcdefghijklm", 13);
        }
}

static void test_multi_part(void **state)
{
    (void)state;
    /* dmlc's writer split "ab" MAGIC MAGIC "cdef" MAGIC "g" at each magic */
    struct mem m = {.n = 0};
    part(&m, "ab\0\0", 4, 1);
    part(&m, "", 0, 2);
    part(&m, "cdef", 4, 2);
    part(&m, "g", 1, 3);
    part(&m, "z", 1, 0);
    unsigned char want[64], *w = want;
    memcpy(w, "ab\0\0", 4), w += 4;
    sk_put_le32(w, MAGIC), w += 4;
    sk_put_le32(w, MAGIC), w += 4;
    memcpy(w, "cdef", 4), w += 4;
    sk_put_le32(w, MAGIC), w += 4;
    memcpy(w, "gz", 2), w += 2;
    for (size_t chunk = 1; chunk < 9; chunk++) {
        unsigned char out[64];
        size_t n;
        sk_error err = SK_ERROR_INIT;
        m.piece = chunk % 3;
        assert_sk_ok(unwrap(&m, chunk, out, &n, &err), err);
        assert_int_equal(n, (size_t)(w - want));
        assert_memory_equal(out, want, n);
    }
}

static void expect_error(struct mem *m, const char *msg)
{
    unsigned char out[4096];
    size_t n;
    sk_error err = SK_ERROR_INIT;
    m->piece = 0;
    int rc = unwrap(m, 7, out, &n, &err);
    if (rc != SK_E_CORRUPT || !strstr(err.msg, msg))
        fail_msg("want '%s', got code %d: %s", msg, rc, err.msg);
}

static void test_errors(void **state)
{
    (void)state;
    struct mem m = {.n = 0};
    part(&m, "abcd", 4, 0);
    sk_put_le32(m.b + m.n, 0xdeadbeef), m.n += 8;
    expect_error(&m, "not RecordIO at offset 12 (magic deadbeef");

    m.n = 0;
    part(&m, "abcd", 4, 2);
    expect_error(&m, "flag 2 at the start of a record");
    m.n = 0;
    part(&m, "abcd", 4, 1);
    part(&m, "abcd", 4, 0);
    expect_error(&m, "flag 0 inside a multi-part record");
    m.n = 0;
    part(&m, "abcd", 4, 6);
    expect_error(&m, "flag 6");

    m.n = 0;
    part(&m, "abcd", 4, 1);
    expect_error(&m, "ends inside record 1 (its last part never came)");
    m.n = 0;
    part(&m, "abcdef", 6, 0);
    m.n -= 2; /* padding cut */
    expect_error(&m, "inside the padding");
    m.n -= 4; /* data cut */
    expect_error(&m, "ends inside record 1 at offset 10 (4 bytes of it missing)");
    m.n = 5; /* header cut */
    expect_error(&m, "ends inside a header at offset 0");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_records),
        cmocka_unit_test(test_multi_part),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
