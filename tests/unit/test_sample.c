/* test_sample.c - the WebDataset key rule (sk_sample_split): the key is the
 * path up to the first dot of the basename, the rest is the extension; a
 * dot in a directory does not count; a basename without a key (no dot, a
 * leading dot, nothing after the dot) is refused.  And sk_ext_cmp, which
 * compares extensions ASCII-case-insensitively. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "shardkit.h"

static void split_ok(const char *path, const char *key, const char *ext)
{
    size_t kl = 999, eo = 999, n = strlen(path);
    int rc = sk_sample_split(path, n, &kl, &eo);
    if (rc != SK_OK) fail_msg("'%s': refused (%d), want key '%s' ext '%s'", path, rc, key, ext);
    assert_int_equal(kl, strlen(key));
    assert_memory_equal(path, key, kl);
    assert_true(eo <= n);
    assert_string_equal(path + eo, ext);
    assert_int_equal(path[kl], '.');
    assert_int_equal(eo, kl + 1);
}

static void split_bad(const char *path)
{
    size_t kl = 999, eo = 999;
    int rc = sk_sample_split(path, strlen(path), &kl, &eo);
    if (rc != SK_E_INPUT) fail_msg("'%s': want SK_E_INPUT, got %d (key_len %zu)", path, rc, kl);
}

static void test_split_examples(void **state)
{
    (void)state;
    split_ok("a/b.seg.png", "a/b", "seg.png");
    split_ok("a.b", "a", "b");
    split_ok("sample.jpg", "sample", "jpg");
    split_ok("x/y/z/000123.JPG", "x/y/z/000123", "JPG");
    split_ok("dir.d/file.txt", "dir.d/file", "txt"); /* the dot in a directory does not count */
    split_ok("a.b.c/d.e.f", "a.b.c/d", "e.f");
    split_ok("./rel/k.cls", "./rel/k", "cls");
    split_ok("/abs/path/k.json", "/abs/path/k", "json");
    split_ok("a..b", "a", ".b");                    /* as WebDataset: ext ".b" */
    split_ok("k.tar.gz", "k", "tar.gz");
    split_ok("sp ace/na me.t x t", "sp ace/na me", "t x t");
    split_ok("caf\xc3\xa9/\xe6\x97\xa5.txt", "caf\xc3\xa9/\xe6\x97\xa5", "txt");
    split_ok("\xff\xfe.bin", "\xff\xfe", "bin");
}

static void test_split_refused(void **state)
{
    (void)state;
    split_bad("noext");
    split_bad("dir/noext");
    split_bad("dir.d/noext");  /* a dot only in the directory */
    split_bad(".hidden");
    split_bad("dir/.hidden");
    split_bad(".hidden.txt");  /* nothing before the first dot */
    split_bad("name.");
    split_bad("dir/name.");
    split_bad(".");
    split_bad("..");
    split_bad("dir/");
    split_bad("dir.x/");
    split_bad("");
}

static void test_split_respects_length(void **state)
{
    (void)state;
    /* only n bytes are looked at: no reading past them, no NUL needed */
    const char buf[] = {'a', '/', 'k', '.', 'j', 'p', 'g', 'X', '.', 'Y'};
    size_t kl, eo;
    assert_int_equal(sk_sample_split(buf, 7, &kl, &eo), SK_OK);
    assert_int_equal(kl, 3);
    assert_int_equal(eo, 4);
    assert_int_equal(sk_sample_split(buf, 3, &kl, &eo), SK_E_INPUT); /* "a/k" */
    assert_int_equal(sk_sample_split(buf, 4, &kl, &eo), SK_E_INPUT); /* "a/k." */
    assert_int_equal(sk_sample_split(buf, 0, &kl, &eo), SK_E_INPUT);
}

static int sign(int v) { return (v > 0) - (v < 0); }
static int cmp(const char *a, const char *b)
{
    int ab = sign(sk_ext_cmp(a, strlen(a), b, strlen(b)));
    int ba = sign(sk_ext_cmp(b, strlen(b), a, strlen(a)));
    assert_int_equal(ab, -ba); /* antisymmetric */
    return ab;
}

static void test_ext_cmp(void **state)
{
    (void)state;
    assert_int_equal(cmp("jpg", "jpg"), 0);
    assert_int_equal(cmp("jpg", "JPG"), 0);
    assert_int_equal(cmp("Seg.PNG", "seg.png"), 0);
    assert_int_equal(cmp("", ""), 0);
    assert_int_equal(cmp("a", "b"), -1);
    assert_int_equal(cmp("A", "b"), -1);   /* case folded before ordering */
    assert_int_equal(cmp("a", "B"), -1);
    assert_int_equal(cmp("Z", "a"), 1);    /* 'z' > 'a', unlike bytewise 'Z' < 'a' */
    assert_int_equal(cmp("jpeg", "jpg"), -1);
    assert_int_equal(cmp("seg", "seg.png"), -1); /* a prefix sorts first */
    assert_int_equal(cmp("", "a"), -1);
    /* '@' / '`', '[' / '{' do not fold; invalid UTF-8 bytes stay as they
     * are; valid UTF-8 folds as Python's str.lower() */
    assert_int_not_equal(cmp("@", "`"), 0);
    assert_int_not_equal(cmp("[", "{"), 0);
    assert_int_not_equal(cmp("\xc9", "\xe9"), 0);
    assert_int_equal(cmp("\xc3\x84pfel", "\xc3\xa4PFEL"), 0); /* Äpfel, äPFEL */
    assert_int_equal(cmp("\xff", "a"), 1);  /* bytes compare unsigned */
    assert_int_equal(cmp("txt", "\xe9"), -1);
    /* lengths bound the comparison */
    assert_int_equal(sk_ext_cmp("jpgX", 3, "JPGY", 3), 0);
    assert_true(sk_ext_cmp("jpg", 2, "jpg", 3) < 0);
}

static void lower_is(const char *in, const char *want)
{
    char out[64];
    size_t n = sk_ext_lower(in, strlen(in), out);
    assert_int_equal(n, strlen(want));
    assert_memory_equal(out, want, n);
}

static void test_ext_lower(void **state)
{
    (void)state;
    lower_is("JPG", "jpg");
    lower_is("\xc3\x84pfel", "\xc3\xa4pfel");               /* Ä -> ä */
    lower_is("\xc4\xb0X", "i\xcc\x87x");                     /* İ -> i + U+0307: longer */
    lower_is("\xce\x91\xce\xa3", "\xce\xb1\xcf\x82");           /* ΑΣ: a final sigma */
    lower_is("\xce\xa3\xce\x91", "\xcf\x83\xce\xb1");           /* ΣΑ: not final */
    lower_is("\xce\x91\xce\xa3.\xce\x91", "\xce\xb1\xcf\x83.\xce\xb1"); /* '.' is case-ignorable */
    lower_is("\xe2\x84\xaa", "k");                           /* Kelvin sign: shorter */
    lower_is("A\xff" "B\xc3", "a\xff" "b\xc3");                     /* invalid bytes kept */
    lower_is("\xed\xa0\x80X", "\xed\xa0\x80x");               /* an encoded surrogate is invalid */
    lower_is("\xc0\xaf" "A", "\xc0\xaf" "a");                       /* so is an overlong form */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_examples),
        cmocka_unit_test(test_split_refused),
        cmocka_unit_test(test_split_respects_length),
        cmocka_unit_test(test_ext_cmp),
        cmocka_unit_test(test_ext_lower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
