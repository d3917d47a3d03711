/* test_store_cache_temp.c - the private cache directory the global order
 * makes for itself when no cache is named (lib/io/store_cache.c,
 * sk_store_cache_temp and sk_store_cache_temp_remove): made under $TMPDIR
 * with mode 0700, a clear error naming the place when $TMPDIR cannot take
 * it, and removal that takes only the cache's own names: a file of
 * another name stays (and the directory with it), a link with a cache
 * name is removed without its target being touched, and a link planted
 * in place of the directory itself is not followed into another. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/store.h"
#include "sk_files.h"

#define HEX40 "0123456789abcdef0123456789abcdef01234567"

static char base[] = "/tmp/test_store_cache_temp.XXXXXX";

static void made_private(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    char *dir = NULL;
    uint64_t avail = 0;
    sk_error err = {0};
    assert_int_equal(sk_store_cache_temp(&dir, &avail, &err), SK_OK);
    assert_true(!strncmp(dir, base, strlen(base)) && strstr(dir, "/shardkit-cache-"));
    struct stat st;
    assert_int_equal(lstat(dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0700); /* nobody else can put anything there */
    assert_int_equal(st.st_uid, getuid());
    assert_true(avail > 0);
    sk_store_cache_temp_remove(dir);
    assert_false(there(dir, ""));
    free(dir);
}

static void refused_by_name(void **state)
{
    (void)state;
    char file[512], missing[512];
    snprintf(file, sizeof file, "%s/a-file", base);
    put(base, "a-file", "x");
    snprintf(missing, sizeof missing, "%s/no/such/dir", base);
    const char *bad[] = {file, missing};
    for (int i = 0; i < 2; i++) {
        setenv("TMPDIR", bad[i], 1);
        char *dir = NULL;
        uint64_t avail = 0;
        sk_error err = {0};
        assert_int_equal(sk_store_cache_temp(&dir, &avail, &err), SK_E_IO);
        assert_null(dir);
        assert_non_null(strstr(err.msg, bad[i]));
        assert_non_null(strstr(err.msg, "TMPDIR"));
    }
    unlink(file);
}

static void removes_only_its_own(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    char *dir = NULL, victim[512], link[512];
    uint64_t avail;
    assert_int_equal(sk_store_cache_temp(&dir, &avail, NULL), SK_OK);
    put(dir, HEX40 ".skc", "block");
    put(dir, "." HEX40 ".skc.123.tmp", "half a block");
    put(dir, "notes.txt", "not the cache's");
    put(base, "victim", "precious");
    snprintf(victim, sizeof victim, "%s/victim", base);
    snprintf(link, sizeof link, "%s/" "fedcba9876543210fedcba9876543210fedcba98.skc", dir);
    assert_int_equal(symlink(victim, link), 0);
    sk_store_cache_temp_remove(dir);
    assert_false(there(dir, HEX40 ".skc"));
    assert_false(there(dir, "." HEX40 ".skc.123.tmp"));
    assert_false(there(dir, "fedcba9876543210fedcba9876543210fedcba98.skc"));
    assert_true(there(dir, "notes.txt")); /* not ours: it stays, and the directory */
    assert_true(there(base, "victim"));   /* the link went, never what it named */
    FILE *f = fopen(victim, "r");
    char text[32] = "";
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "precious");
    unlink(victim);
    char notes[512];
    snprintf(notes, sizeof notes, "%s/notes.txt", dir);
    unlink(notes);
    sk_store_cache_temp_remove(dir);
    assert_false(there(dir, ""));
    free(dir);
}

static void planted_link_not_followed(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    char *dir = NULL, other[512];
    uint64_t avail;
    assert_int_equal(sk_store_cache_temp(&dir, &avail, NULL), SK_OK);
    /* the directory swapped for a link to another holding cache names */
    snprintf(other, sizeof other, "%s/other", base);
    assert_int_equal(mkdir(other, 0700), 0);
    put(other, HEX40 ".skc", "someone's");
    char live[512];
    snprintf(live, sizeof live, "%s/.shardkit-live", dir); /* the marker (cache_private.c) */
    unlink(live);
    assert_int_equal(rmdir(dir), 0);
    assert_int_equal(symlink(other, dir), 0);
    sk_store_cache_temp_remove(dir);
    assert_true(there(other, HEX40 ".skc"));
    unlink(dir);
    char p[512];
    snprintf(p, sizeof p, "%s/" HEX40 ".skc", other);
    unlink(p);
    rmdir(other);
    free(dir);
}

int main(void)
{
    if (!mkdtemp(base)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(made_private),
        cmocka_unit_test(refused_by_name),
        cmocka_unit_test(removes_only_its_own),
        cmocka_unit_test(planted_link_not_followed),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(base);
    return rc;
}
