/* test_gzstd.c - what the global order reads of a .tar.zst sample
 * (lib/reader/global_zstd.c): the frames that tile a sample's stored bytes
 * and their tar bytes, as the seek table says; a sample's frames
 * decompressed whole, in one call, only when they give exactly what their
 * seek table says (a table that under-states them is a bomb refused, one
 * that over-states them is short), and the first bytes of them otherwise. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "format/tar.h"
#include "reader/reader_global.h"

#define A_LEN 70000
#define B_LEN 5000

struct two {
    unsigned char plain[A_LEN + B_LEN];
    unsigned char stored[2 * (A_LEN + B_LEN)];
    size_t a_size, b_size;
    sk_zstd_frame f[2];
};

/* Two frames, of A_LEN and B_LEN tar bytes, back to back. */
static void make(struct two *t)
{
    for (size_t i = 0; i < sizeof t->plain; i++) t->plain[i] = (unsigned char)(i % 251 ^ (i >> 10));
    t->a_size = ZSTD_compress(t->stored, sizeof t->stored, t->plain, A_LEN, 3);
    assert_false(ZSTD_isError(t->a_size));
    t->b_size = ZSTD_compress(t->stored + t->a_size, sizeof t->stored - t->a_size,
                              t->plain + A_LEN, B_LEN, 3);
    assert_false(ZSTD_isError(t->b_size));
    t->f[0] = (sk_zstd_frame){.c_off = 0, .d_off = 0, .c_size = (uint32_t)t->a_size,
                              .d_size = A_LEN};
    t->f[1] = (sk_zstd_frame){.c_off = t->a_size, .d_off = A_LEN, .c_size = (uint32_t)t->b_size,
                              .d_size = B_LEN};
}

static void frames_that_tile(void **state)
{
    (void)state;
    struct two *t = malloc(sizeof *t);
    make(t);
    uint64_t d = 0;
    assert_true(sk_gzstd_frames_span(t->f, 2, 0, t->a_size, &d));
    assert_int_equal(d, A_LEN);
    assert_true(sk_gzstd_frames_span(t->f, 2, 0, t->a_size + t->b_size, &d));
    assert_int_equal(d, A_LEN + B_LEN);
    assert_true(sk_gzstd_frames_span(t->f, 2, t->a_size, t->b_size, &d));
    assert_int_equal(d, B_LEN);
    /* not a frame's start, a frame cut short, past the last frame */
    assert_false(sk_gzstd_frames_span(t->f, 2, 1, t->a_size - 1, &d));
    assert_false(sk_gzstd_frames_span(t->f, 2, 0, t->a_size - 1, &d));
    assert_false(sk_gzstd_frames_span(t->f, 2, 0, t->a_size + t->b_size + 1, &d));
    free(t);
}

static void whole_frames_give_what_the_table_says(void **state)
{
    (void)state;
    struct two *t = malloc(sizeof *t);
    make(t);
    ZSTD_DCtx *dc = NULL;
    sk_error err = {0};
    size_t n = A_LEN + B_LEN;
    unsigned char *out = malloc(n + 100);
    assert_int_equal(sk_gzstd_decompress(&dc, t->stored, t->a_size + t->b_size, out, n, 1,
                                         "s.tar.zst", 0, &err), SK_OK);
    assert_memory_equal(out, t->plain, n);
    /* a table that says less than the frames hold: never written past */
    memset(out, 0, n + 100);
    assert_int_equal(sk_gzstd_decompress(&dc, t->stored, t->a_size + t->b_size, out, n - 1, 1,
                                         "s.tar.zst", 0, &err), SK_E_CORRUPT);
    assert_non_null(strstr(err.msg, "s.tar.zst"));
    for (size_t i = n - 1; i < n + 100; i++) assert_int_equal(out[i], 0);
    /* one that says more: the frames are short of it */
    assert_int_equal(sk_gzstd_decompress(&dc, t->stored, t->a_size + t->b_size, out, n + 100, 1,
                                         "s.tar.zst", 0, &err), SK_E_CORRUPT);
    assert_non_null(strstr(err.msg, "seek table"));
    /* not whole: the first bytes only, the rest of the frame not wanted */
    assert_int_equal(sk_gzstd_decompress(&dc, t->stored, t->a_size, out, 1000, 0, "s.tar.zst", 0,
                                         &err), SK_OK);
    assert_memory_equal(out, t->plain, 1000);
    ZSTD_freeDCtx(dc);
    free(out);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frames_that_tile),
        cmocka_unit_test(whole_frames_give_what_the_table_says),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
