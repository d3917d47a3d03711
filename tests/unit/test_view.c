/* test_view.c - the pieces of stats and serve that hold untrusted bytes or
 * memory: the thumbnail cache stays under its byte bound whatever is put
 * in (least recently used out first, a hit refreshing an entry); HTML and
 * URL escaping leave no markup byte; a JPEG's size comes from its header,
 * "read more" while the header is cut, and anything else is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "tools/serve.h"

static void thumbs_bounded(void **state)
{
    (void)state;
    sk_thumbs *t;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_thumbs_new(&t, 64 << 10, &err), SK_OK);
    unsigned char data[5000];
    size_t len, entries, bytes;
    for (uint64_t o = 0; o < 1000; o++) {
        memset(data, (int)(o & 0xff), sizeof data);
        sk_thumbs_put(t, o, 1, data, sizeof data);
        if (o >= 5) { /* keep #5 warm: every hit makes it the most recent */
            unsigned char *p = sk_thumbs_get(t, 5, 1, &len);
            assert_non_null(p);
            assert_int_equal(len, sizeof data);
            assert_int_equal(p[0], 5);
            free(p);
        }
        sk_thumbs_usage(t, &entries, &bytes);
        assert_true(bytes <= 64 << 10);
    }
    sk_thumbs_usage(t, &entries, &bytes);
    assert_true(entries >= 10 && entries <= 13);
    assert_null(sk_thumbs_get(t, 0, 1, &len));   /* the oldest went */
    unsigned char *p = sk_thumbs_get(t, 999, 1, &len);
    assert_non_null(p);
    assert_int_equal(p[0], 999 & 0xff);
    free(p);
    assert_null(sk_thumbs_get(t, 999, 2, &len)); /* another member */
    unsigned char *huge = calloc(1, 64 << 10); /* over the bound with its record: not kept */
    assert_non_null(huge);
    sk_thumbs_put(t, 7, 0, huge, 64 << 10);
    assert_null(sk_thumbs_get(t, 7, 0, &len));
    p = sk_thumbs_get(t, 999, 1, &len); /* and nothing was evicted for it */
    assert_non_null(p);
    free(p);
    free(huge);
    sk_thumbs_free(t);
}

static void escaping(void **state)
{
    (void)state;
    static const char in[] = "<script>a&b\"c'd\x01\x1b[31m</script>";
    sk_buf b = {0};
    assert_int_equal(sk_html_esc(&b, in, sizeof in - 1), SK_OK);
    assert_string_equal(b.p, "&lt;script&gt;a&amp;b&quot;c&#39;d\xef\xbf\xbd\xef\xbf\xbd[31m"
                             "&lt;/script&gt;");
    sk_buf_free(&b);
    char nul[] = {'a', 0, 'b'};
    sk_buf c = {0};
    assert_int_equal(sk_html_esc(&c, nul, 3), SK_OK);
    assert_int_equal(c.len, 5);
    assert_memory_equal(c.p, "a\xef\xbf\xbd" "b", 5);
    sk_buf_free(&c);
    sk_buf u = {0};
    assert_int_equal(sk_url_esc(&u, "a b&c=d/\xff", 9), SK_OK);
    assert_string_equal(u.p, "a%20b%26c%3Dd/%FF");
    sk_buf_free(&u);
}

/* A small JPEG of w x h from libjpeg itself. */
static unsigned char *make_jpeg(unsigned w, unsigned h, unsigned long *len)
{
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    unsigned char *out = NULL;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, len);
    c.image_width = w, c.image_height = h, c.input_components = 3, c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_start_compress(&c, TRUE);
    unsigned char *row = calloc(w, 3);
    while (c.next_scanline < h) jpeg_write_scanlines(&c, &row, 1);
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    free(row);
    return out;
}

static void jpeg_dims(void **state)
{
    (void)state;
    unsigned long n;
    unsigned char *j = make_jpeg(123, 45, &n);
    unsigned w = 0, h = 0;
    char why[200];
    assert_int_equal(sk_jpeg_dims(j, n, &w, &h, why, sizeof why), 0);
    assert_int_equal(w, 123);
    assert_int_equal(h, 45);
    assert_int_equal(sk_jpeg_dims(j, 40, &w, &h, why, sizeof why), 1); /* cut: read more */
    /* a 30,000-byte comment before the frame header: found with all of it */
    size_t big = n + 30004;
    unsigned char *k = malloc(big);
    memcpy(k, j, 2);
    k[2] = 0xff, k[3] = 0xfe, k[4] = (30002 >> 8) & 0xff, k[5] = 30002 & 0xff;
    memset(k + 6, 'x', 30000);
    memcpy(k + 30006, j + 2, n - 2);
    assert_int_equal(sk_jpeg_dims(k, 4096, &w, &h, why, sizeof why), 1);
    assert_int_equal(sk_jpeg_dims(k, big, &w, &h, why, sizeof why), 0);
    assert_int_equal(w, 123);
    free(k);
    assert_int_equal(sk_jpeg_dims("GIF89a....", 10, &w, &h, why, sizeof why), -1);
    assert_true(why[0] != 0);
    free(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thumbs_bounded),
        cmocka_unit_test(escaping),
        cmocka_unit_test(jpeg_dims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
