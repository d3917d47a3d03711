/* test_brace.c - brace pattern expansion as WebDataset users write shard
 * lists: zero-padded ranges, alternatives, several groups, literals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

static void expect(const char *pat, const char *const *want, size_t n)
{
    sk_error err = SK_ERROR_INIT;
    char **out;
    size_t count;
    if (sk_brace_expand(pat, &out, &count, &err)) fail_msg("%s: %s", pat, err.msg);
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++) assert_string_equal(out[i], want[i]);
    assert_null(out[n]);
    sk_brace_free(out);
}

static void test_ranges(void **state)
{
    (void)state;
    const char *a[] = {"train-000098.tar", "train-000099.tar", "train-000100.tar"};
    expect("train-{000098..000100}.tar", a, 3);
    const char *b[] = {"s8", "s9", "s10"};
    expect("s{8..10}", b, 3);
    const char *c[] = {"x3", "x2", "x1"};
    expect("x{3..1}", c, 3);
    const char *d[] = {"05", "06"};
    expect("{05..6}", d, 2);
}

static void test_alternatives_and_groups(void **state)
{
    (void)state;
    const char *a[] = {"train-0.tar", "train-1.tar", "val-0.tar", "val-1.tar"};
    expect("{train,val}-{0..1}.tar", a, 4);
    const char *b[] = {"a", "bx", "by", "c"};
    expect("{a,b{x,y},c}", b, 4);
    const char *c[] = {"plain.tar"};
    expect("plain.tar", c, 1);
    const char *d[] = {"lit{x}0", "lit{x}1"};
    expect("lit{x}{0..1}", d, 2);
    const char *e[] = {"open{brace"};
    expect("open{brace", e, 1);
    const char *f[] = {"x.tar", ".tar"};
    expect("{x,}.tar", f, 2);
}

static void test_too_many(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    char **out;
    assert_int_equal(sk_brace_expand("{0..99999999999}", &out, NULL, &err), SK_E_USAGE);
    assert_int_equal(sk_brace_expand("{0..9999}{0..9999}", &out, NULL, &err), SK_E_USAGE);
}

/* Short patterns the fuzzer found slow: groups that multiply to millions of
 * names.  Each is refused (or expanded) within the caps, never unbounded. */
static void test_fuzz_slow_units(void **state)
{
    (void)state;
    const char *pats[] = {
        "{a,b}{79..0}{-{15..70}-{0.\x12}{79..0}{-{\x12\x12\x12\x12\x12\x12{a\x98{0..11}{{r",
        "{a,b}\xe3{79..0}{-\xa0\xa0\xa0\xa0\xa0\xa0\xa0" "0" "\xa0\xa0\xa0\xa0{15..770}-{0..70}-{0..r",
    };
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
        sk_error err = SK_ERROR_INIT;
        char **out = NULL;
        size_t n = 0;
        int rc = sk_brace_expand(pats[i], &out, &n, &err);
        if (rc == SK_OK) {
            assert_true(n <= 2000000);
            sk_brace_free(out);
        } else {
            assert_int_equal(rc, SK_E_USAGE);
            if (!strstr(err.msg, "expands to over")) fail_msg("pattern %zu: wrong message: %s", i, err.msg);
        }
    }
}

/* Few names, but long ones: the bytes are bounded too. */
static void test_too_many_bytes(void **state)
{
    (void)state;
    size_t n = 3000;
    char *pat = malloc(n + 32);
    memset(pat, 'x', n);
    strcpy(pat + n, "{000000..999999}");
    char **out = NULL;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_brace_expand(pat, &out, NULL, &err), SK_E_USAGE);
    if (!strstr(err.msg, "MiB of names")) fail_msg("wrong message: %s", err.msg);
    free(pat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_alternatives_and_groups),
        cmocka_unit_test(test_too_many),
        cmocka_unit_test(test_too_many_bytes),
        cmocka_unit_test(test_fuzz_slow_units),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
