/* test_infiles.c - the inputs a shuffle reads twice (pack/infiles.c): with
 * room for one open file, the others are closed and opened again by name
 * when read; a file reopened must be the one first read: another file
 * renamed over its name, or the file cut short, is an error naming it;
 * a file still open reads as it was, whatever is renamed over its name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sk_assert.h"

#include "io/infiles.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[] = "/tmp/sk_infiles_XXXXXX";

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static uint32_t add(sk_infiles *t, const char *name)
{
    char p[256];
    uint32_t no;
    sk_error err = SK_ERROR_INIT;
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    assert_sk_ok(sk_infiles_add(t, p, fd, &no, &err), err);
    return no;
}

static void reads(sk_infiles *t, uint32_t no, const char *want)
{
    int fd;
    const char *path;
    char buf[64] = {0};
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_infiles_fd(t, no, &fd, &path, &err), err);
    assert_true(pread(fd, buf, sizeof buf - 1, 0) >= 0);
    assert_string_equal(buf, want);
}

static void test_reopen_and_replace(void **state)
{
    (void)state;
    char a[256], b[256], x[256];
    sk_infiles *t;
    sk_error err = SK_ERROR_INIT;
    int fd;
    const char *path;
    assert_non_null(mkdtemp(dir));
    snprintf(a, sizeof a, "%s/a", dir);
    snprintf(b, sizeof b, "%s/b", dir);
    snprintf(x, sizeof x, "%s/x", dir);
    put("a", "first a");
    put("b", "first b");
    assert_sk_ok(sk_infiles_new(&t, 1, &err), err);
    uint32_t na = add(t, "a"), nb = add(t, "b"); /* a is closed to make room for b */
    assert_int_equal(na, 0);
    assert_int_equal(nb, 1);
    reads(t, na, "first a"); /* reopened (b closed) */
    reads(t, nb, "first b"); /* reopened (a closed) */
    /* b is open: a file renamed over its name changes nothing */
    put("x", "other b");
    assert_int_equal(rename(x, b), 0);
    reads(t, nb, "first b");
    /* a is closed: the file now under its name is another one */
    put("x", "other a");
    assert_int_equal(rename(x, a), 0);
    assert_int_equal(sk_infiles_fd(t, na, &fd, &path, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, a));
    assert_non_null(strstr(err.msg, "replaced or resized"));
    sk_infiles_free(t);

    /* the same file, cut short while closed */
    put("a", "first a");
    assert_sk_ok(sk_infiles_new(&t, 1, &err), err);
    na = add(t, "a");
    nb = add(t, "b");
    assert_int_equal(truncate(a, 3), 0);
    err = (sk_error)SK_ERROR_INIT;
    assert_int_equal(sk_infiles_fd(t, na, &fd, &path, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, a));
    /* gone altogether */
    reads(t, nb, "other b");
    unlink(a);
    err = (sk_error)SK_ERROR_INIT;
    assert_int_equal(sk_infiles_fd(t, na, &fd, &path, &err), SK_E_IO);
    assert_non_null(strstr(err.msg, a));
    /* a number never given */
    assert_int_equal(sk_infiles_fd(t, 7, &fd, &path, &err), SK_E_IO);
    sk_infiles_free(t);
    unlink(b);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reopen_and_replace),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
