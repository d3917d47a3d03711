/* test_urllist.c - URL lists (format/urllist.c): the four formats, the
 * columns asked for, rows that cannot be read (kept, with their number and
 * an error), and the hostile ones: a row past the cap, a stray quote, a
 * list cut mid-row, input fed one byte at a time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "sk_assert.h"
#include "format/urllist.h"

struct mem {
    const char *p;
    size_t len, at, step; /* step: most bytes one read gives (0: all) */
};

static int mem_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct mem *m = ctx;
    (void)err;
    size_t n = m->len - m->at;
    if (n > cap) n = cap;
    if (m->step && n > m->step) n = m->step;
    memcpy(buf, m->p + m->at, n);
    m->at += n;
    *got = n;
    return 0;
}

/* Reads the whole list; each row as "row|url|caption|extra0|..." or
 * "row!error" into out (one line each). */
static int read_all(const char *text, size_t len, size_t step, sk_urllist_opts *o, char *out,
                    size_t cap, sk_error *err)
{
    struct mem m = {text, len, 0, step};
    sk_urllist *l;
    int rc = sk_urllist_open(&l, mem_read, &m, "list", o, err);
    if (rc) return rc;
    sk_url_row r;
    size_t at = 0;
    out[0] = 0;
    while ((rc = sk_urllist_next(l, &r, err)) == 1) {
        if (r.error) {
            at += (size_t)snprintf(out + at, cap - at, "%llu!%s\n", (unsigned long long)r.row, r.error);
            continue;
        }
        at += (size_t)snprintf(out + at, cap - at, "%llu|%.*s|%.*s", (unsigned long long)r.row,
                               (int)r.url_len, r.url, r.caption ? (int)r.caption_len : 1,
                               r.caption ? r.caption : "-");
        for (size_t i = 0; i < o->nextra; i++)
            at += (size_t)snprintf(out + at, cap - at, "|%.*s", r.extra[i] ? (int)r.extra_len[i] : 1,
                                   r.extra[i] ? r.extra[i] : "-");
        at += (size_t)snprintf(out + at, cap - at, "\n");
    }
    sk_urllist_close(l);
    return rc < 0 ? rc : 0;
}

static void check(const char *text, int format, const char *caption, const char *extra,
                  const char *want)
{
    const char *ex[1] = {extra};
    sk_urllist_opts o = {.format = format, .caption_col = caption, .extra = ex, .nextra = extra ? 1 : 0};
    char out[4096];
    /* the same rows whether the bytes come all at once or one by one */
    for (size_t step = 0; step <= 1; step++) {
        sk_error err = SK_ERROR_INIT;
        assert_sk_ok(read_all(text, strlen(text), step, &o, out, sizeof out, &err), err);
        assert_string_equal(out, want);
    }
}

static void test_txt(void **state)
{
    (void)state;
    check("http://a/1.jpg\n\n  https://b/2.jpg \r\nhttp://c/3", SK_URLLIST_TXT, NULL, NULL,
          "0|http://a/1.jpg|-\n1|https://b/2.jpg|-\n2|http://c/3|-\n");
}

static void test_csv(void **state)
{
    (void)state;
    check("\xef\xbb\xbfurl,caption,w\r\n"
          "http://a/1.jpg,\"a cat, sitting\",10\r\n"
          "\"http://b/2.jpg\",\"say \"\"hi\"\"\nthere\",\n"
          "http://c/3.jpg\n",
          SK_URLLIST_CSV, "caption", "w",
          "0|http://a/1.jpg|a cat, sitting|10\n"
          "1|http://b/2.jpg|say \"hi\"\nthere|\n"
          "2|http://c/3.jpg|-|-\n");
}

static void test_tsv_columns_reordered(void **state)
{
    (void)state;
    const char *ex[1] = {"TEXT"};
    sk_urllist_opts o = {.format = SK_URLLIST_TSV, .url_col = "URL", .extra = ex, .nextra = 1};
    char out[256];
    sk_error err = SK_ERROR_INIT;
    const char *t = "TEXT\tURL\nhello, world\thttp://x/1\n";
    assert_sk_ok(read_all(t, strlen(t), 0, &o, out, sizeof out, &err), err);
    assert_string_equal(out, "0|http://x/1|-|hello, world\n");
}

static void test_jsonl(void **state)
{
    (void)state;
    check("{\"url\": \"http://a/1\", \"caption\": \"x\", \"n\": 5}\n"
          "[1,2]\n"
          "{\"url\": 7}\n"
          "not json\n"
          "{\"caption\": \"no url\"}\n"
          "{\"url\": \"http://b/2\", \"caption\": null, \"n\": {\"k\": [1]}}\n",
          SK_URLLIST_JSONL, "caption", "n",
          "0|http://a/1|x|5\n"
          "1!not a JSON object\n"
          "2!'url' is not a string\n"
          "3!not valid JSON: '[' or '{' expected near 'not'\n"
          "4!no URL in column 'url'\n"
          "5|http://b/2|-|{\"k\":[1]}\n");
}

static void test_missing_column_names_it(void **state)
{
    (void)state;
    sk_urllist_opts o = {.format = SK_URLLIST_CSV, .caption_col = "text"};
    char out[64];
    sk_error err = SK_ERROR_INIT;
    const char *t = "url,caption\nhttp://a,b\n";
    assert_int_equal(read_all(t, strlen(t), 0, &o, out, sizeof out, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "no column 'text'"));
    assert_non_null(strstr(err.msg, "--caption-col"));
    o.caption_col = NULL;
    o.format = SK_URLLIST_TXT;
    o.url_col = NULL;
    const char *ex[1] = {"a"};
    o.extra = ex;
    o.nextra = 1;
    assert_int_equal(read_all(t, strlen(t), 0, &o, out, sizeof out, &err), SK_E_USAGE);
}

/* A row past the cap is an error row, the rows after it are read. */
static void test_long_row_is_one_bad_row(void **state)
{
    (void)state;
    size_t big = 300000;
    char *t = malloc(big + 64);
    strcpy(t, "url\nhttp://a\n\"http://");
    size_t n = strlen(t);
    memset(t + n, 'x', big); /* a quoted field holding newlines: still one row */
    for (size_t i = n; i < n + big; i += 1000) t[i] = '\n';
    strcpy(t + n + big, "\"\nhttp://b\n");
    sk_urllist_opts o = {.format = SK_URLLIST_CSV, .max_row = 4096};
    char out[512];
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(read_all(t, strlen(t), 0, &o, out, sizeof out, &err), err);
    assert_string_equal(out, "0|http://a|-\n1!row longer than 4096 bytes\n2|http://b|-\n");
    free(t);
}

/* A quote inside an unquoted field is data: it does not swallow the rows
 * after it; a list cut inside a quoted field ends with that row. */
static void test_stray_and_unterminated_quotes(void **state)
{
    (void)state;
    check("url\nhttp://a/\"x\nhttp://b\n\"http://c\nhttp://d", SK_URLLIST_CSV, NULL, NULL,
          "0|http://a/\"x|-\n1|http://b|-\n2|http://c\nhttp://d|-\n");
}

static void test_empty_list(void **state)
{
    (void)state;
    sk_urllist_opts o = {.format = SK_URLLIST_CSV};
    char out[64];
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(read_all("", 0, 0, &o, out, sizeof out, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "empty"));
    o.format = SK_URLLIST_TXT;
    assert_sk_ok(read_all("", 0, 0, &o, out, sizeof out, &err), err);
    assert_string_equal(out, "");
}

static void test_format_names(void **state)
{
    (void)state;
    assert_int_equal(sk_urllist_format_of("a/b.CSV"), SK_URLLIST_CSV);
    assert_int_equal(sk_urllist_format_of("x.jsonl"), SK_URLLIST_JSONL);
    assert_int_equal(sk_urllist_format_of("x.parquet"), 0);
    assert_int_equal(sk_urllist_format_of("dir.csv/list"), 0);
    assert_int_equal(sk_urllist_format_parse("tsv"), SK_URLLIST_TSV);
    assert_int_equal(sk_urllist_format_parse("parquet"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_txt),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_tsv_columns_reordered),
        cmocka_unit_test(test_jsonl),
        cmocka_unit_test(test_missing_column_names_it),
        cmocka_unit_test(test_long_row_is_one_bad_row),
        cmocka_unit_test(test_stray_and_unterminated_quotes),
        cmocka_unit_test(test_empty_list),
        cmocka_unit_test(test_format_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
