/* test_path.c - the one checked way untrusted bytes become a local path
 * (lib/core/path.c: sk_name_check, sk_ext_check, sk_name_strip,
 * sk_path_join) and the safe output file (lib/core/fsutil.c: sk_out,
 * sk_out_lock), fed hostile names and failing writes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sk_assert.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/internal.h"

#define NAME_OK(s) assert_int_equal(sk_name_check(s, strlen(s), "test name", NULL), SK_OK)
#define NAME_BAD(s) assert_int_equal(sk_name_check(s, strlen(s), "test name", NULL), SK_E_CORRUPT)

static void test_name_check_accepts_plain(void **state)
{
    (void)state;
    NAME_OK("a");
    NAME_OK("a/b/c.jpg");
    NAME_OK("..a");     /* only a component that is exactly ".." is one */
    NAME_OK("a../b..");
    NAME_OK(".hidden/x");
    NAME_OK("dir/...");
    NAME_OK("sp ace/ümlaut");
}

static void test_name_check_refuses_hostile(void **state)
{
    (void)state;
    const char *bad[] = {"", "/", "/abs", "//x", "..", "../x", "x/..", "x/../../y", "a/./b", ".",
                         "./a", "a//b", "a/", "dir/key/", "x/../../../a.tar", "/etc/passwd"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sk_error err = {0};
        assert_int_equal(sk_name_check(bad[i], strlen(bad[i]), "index key", &err), SK_E_CORRUPT);
        /* the message names what was checked */
        assert_non_null(strstr(err.msg, "index key"));
    }
    /* a NUL byte inside the counted length */
    assert_int_equal(sk_name_check("a\0b", 3, "n", NULL), SK_E_CORRUPT);
}

static void test_name_check_lengths(void **state)
{
    (void)state;
    char buf[SK_NAME_MAX + 2];
    memset(buf, 'a', SK_NAME_COMPONENT_MAX);
    assert_int_equal(sk_name_check(buf, SK_NAME_COMPONENT_MAX, "n", NULL), SK_OK);
    memset(buf, 'a', SK_NAME_COMPONENT_MAX + 1);
    assert_int_equal(sk_name_check(buf, SK_NAME_COMPONENT_MAX + 1, "n", NULL), SK_E_CORRUPT);
    /* a total at the limit in components of 200 bytes */
    memset(buf, 'b', sizeof buf);
    for (size_t i = 200; i < SK_NAME_MAX; i += 201) buf[i] = '/';
    assert_int_equal(sk_name_check(buf, SK_NAME_MAX, "n", NULL), SK_OK);
    assert_int_equal(sk_name_check(buf, SK_NAME_MAX + 1, "n", NULL), SK_E_CORRUPT);
}

static void test_name_check_message_is_tame(void **state)
{
    (void)state;
    /* control bytes never reach the message; a long name is shortened */
    char name[600];
    memset(name, 'z', sizeof name);
    memcpy(name, "\x1b[2J../", 7);
    sk_error err = {0};
    assert_int_equal(sk_name_check(name, sizeof name, "member", &err), SK_E_CORRUPT);
    assert_null(strchr(err.msg, '\x1b'));
    assert_true(strlen(err.msg) < 400);
}

static void test_ext_check(void **state)
{
    (void)state;
    assert_int_equal(sk_ext_check("jpg", 3, "x.idx", NULL), SK_OK);
    assert_int_equal(sk_ext_check("seg.png", 7, "x.idx", NULL), SK_OK);
    assert_int_equal(sk_ext_check("", 0, "x.idx", NULL), SK_OK); /* an extension-less member */
    assert_int_equal(sk_ext_check("a/../b", 6, "x.idx", NULL), SK_E_CORRUPT);
    assert_int_equal(sk_ext_check("/", 1, "x.idx", NULL), SK_E_CORRUPT);
    assert_int_equal(sk_ext_check("j\0g", 3, "x.idx", NULL), SK_E_CORRUPT);
    char big[SK_NAME_COMPONENT_MAX + 1];
    memset(big, 'e', sizeof big);
    assert_int_equal(sk_ext_check(big, sizeof big, "x.idx", NULL), SK_E_CORRUPT);
    sk_error err = {0};
    assert_int_equal(sk_ext_check("a/b", 3, "crafted.idx", &err), SK_E_CORRUPT);
    assert_non_null(strstr(err.msg, "crafted.idx"));
}

static void strip_is(const char *name, int want_rc, const char *want_rest)
{
    size_t skip = 99;
    int rc = sk_name_strip(name, strlen(name), &skip);
    assert_int_equal(rc, want_rc);
    if (rc >= 0) assert_string_equal(name + skip, want_rest);
}

static void test_name_strip_gnu_rule(void **state)
{
    (void)state;
    strip_is("a/b.txt", 0, "a/b.txt");
    strip_is("./a/b.txt", 0, "a/b.txt");   /* harmless: no warning */
    strip_is("/abs/b.txt", 1, "abs/b.txt");
    strip_is("///abs", 1, "abs");
    strip_is("../../x/a.txt", 1, "x/a.txt");
    strip_is("/../x", 1, "x");
    strip_is("ok/../../d.txt", -1, "");    /* a ".." further in: unusable */
    strip_is("a/..", -1, "");
    strip_is("..a/b", 0, "..a/b");
}

static void test_path_join(void **state)
{
    (void)state;
    char *p = NULL;
    sk_error err = {0};
    assert_sk_ok(sk_path_join("/out", "a/b.jpg", 7, "key", &p, &err), err);
    assert_string_equal(p, "/out/a/b.jpg");
    free(p);
    assert_sk_ok(sk_path_join("out///", "k.txt", 5, "key", &p, &err), err);
    assert_string_equal(p, "out/k.txt");
    free(p);
    /* only len bytes count */
    assert_sk_ok(sk_path_join("d", "k.txt/../..", 5, "key", &p, &err), err);
    assert_string_equal(p, "d/k.txt");
    free(p);
    p = (char *)"untouched";
    assert_int_equal(sk_path_join("d", "k/../../e", 9, "key", &p, &err), SK_E_CORRUPT);
    assert_string_equal(p, "untouched"); /* nothing returned on refusal */
    assert_int_equal(sk_path_join("d", "/etc/x", 6, "key", &p, &err), SK_E_CORRUPT);
    assert_int_equal(sk_path_join("d", "key/", 4, "key", &p, &err), SK_E_CORRUPT);
}

/* ------------------------------------------------------------ sk_out */

static char dir[64];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sk_test_path.XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir); /* our own mkdtemp name */
    return system(cmd) == 0 ? 0 : -1;
}

static int count_entries(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | wc -l", dir);
    FILE *f = popen(cmd, "r");
    int n = -1;
    if (f) {
        if (fscanf(f, "%d", &n) != 1) n = -1;
        pclose(f);
    }
    return n;
}

static void slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    size_t n = fread(buf, 1, cap - 1, f);
    buf[n] = 0;
    fclose(f);
}

static void test_out_abort_keeps_existing_file(void **state)
{
    (void)state;
    char path[128], buf[64];
    snprintf(path, sizeof path, "%s/precious.txt", dir);
    FILE *f = fopen(path, "w");
    fputs("the user's data\n", f);
    fclose(f);
    sk_out *o;
    sk_error err = {0};
    assert_sk_ok(sk_out_open(&o, path, &err), err);
    assert_string_equal(sk_out_name(o), path); /* messages name the user's path; writes go to a temporary one */
    assert_int_equal(write(sk_out_fd(o), "half", 4), 4);
    slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "the user's data\n");
    sk_out_abort(o); /* a failed read */
    slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "the user's data\n");
    assert_int_equal(count_entries(), 1); /* no temporary left behind */

    assert_sk_ok(sk_out_open(&o, path, &err), err);
    assert_int_equal(write(sk_out_fd(o), "new\n", 4), 4);
    assert_sk_ok(sk_out_commit(o, &err), err);
    slurp(path, buf, sizeof buf);
    assert_string_equal(buf, "new\n");
    assert_int_equal(count_entries(), 1);
    unlink(path);
}

static void test_out_device_and_fifo_in_place(void **state)
{
    (void)state;
    sk_out *o;
    sk_error err = {0};
    struct stat before, after;
    assert_int_equal(stat("/dev/null", &before), 0);
    assert_sk_ok(sk_out_open(&o, "/dev/null", &err), err);
    assert_string_equal(sk_out_name(o), "/dev/null");
    sk_out_abort(o);
    assert_int_equal(stat("/dev/null", &after), 0);
    assert_true(S_ISCHR(after.st_mode));
    assert_int_equal(before.st_ino, after.st_ino);

    char fifo[128];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    int rd = open(fifo, O_RDONLY | O_NONBLOCK); /* so the writer's open does not block */
    assert_true(rd >= 0);
    assert_sk_ok(sk_out_open(&o, fifo, &err), err);
    assert_int_equal(write(sk_out_fd(o), "x", 1), 1);
    sk_out_abort(o);
    close(rd);
    assert_int_equal(stat(fifo, &after), 0);
    assert_true(S_ISFIFO(after.st_mode));
    unlink(fifo);

    assert_int_equal(sk_out_open(&o, dir, &err), SK_E_USAGE); /* a directory: refused */
}

static void test_tmp_names_unique(void **state)
{
    (void)state;
    char *a = sk_tmp_name_unique("d/shard-000.tar", NULL);
    char *b = sk_tmp_name_unique("d/shard-000.tar", NULL);
    assert_non_null(a);
    assert_non_null(b);
    assert_string_not_equal(a, b);
    char pid[32];
    snprintf(pid, sizeof pid, ".%ld.", (long)getpid());
    assert_non_null(strstr(a, pid));
    assert_memory_equal(a, "d/.shard-000.tar.", 17); /* beside the target, hidden */
    free(a);
    free(b);
}

static void test_out_lock_second_run_refused(void **state)
{
    (void)state;
    char manifest[128];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    int fd;
    sk_error err = {0};
    assert_sk_ok(sk_out_lock(manifest, "pack", &fd, &err), err);
    /* another process (flock is per open file, so a child that opens anew) */
    pid_t c = fork();
    if (c == 0) {
        int fd2;
        sk_error e2 = {0};
        int rc = sk_out_lock(manifest, "pack", &fd2, &e2);
        _exit(rc == SK_E_USAGE && strstr(e2.msg, "another run") && strstr(e2.msg, "shardkit pack") ? 0 : 1);
    }
    int st;
    assert_int_equal(waitpid(c, &st, 0), c);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    sk_out_unlock(manifest, fd);
    /* released: the next run takes it */
    assert_sk_ok(sk_out_lock(manifest, "shard", &fd, &err), err);
    sk_out_unlock(manifest, fd);
    assert_int_equal(count_entries(), 0); /* the lock file is not litter */
}

static void test_out_lock_removes_dead_runs_tmps_only(void **state)
{
    (void)state;
    /* a child that exits at once leaves a pid no longer running */
    pid_t c = fork();
    if (c == 0) _exit(0);
    int st;
    waitpid(c, &st, 0);
    char dead[160], mine[160], user[160], manifest[128];
    snprintf(dead, sizeof dead, "%s/.s-000.tar.%ld.0.tmp", dir, (long)c);
    snprintf(mine, sizeof mine, "%s/.s-001.tar.%ld.0.tmp", dir, (long)getpid());
    snprintf(user, sizeof user, "%s/.notes.tmp", dir);
    const char *all[] = {dead, mine, user};
    for (int i = 0; i < 3; i++) close(open(all[i], O_WRONLY | O_CREAT, 0644));
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    int fd;
    sk_error err = {0};
    assert_sk_ok(sk_out_lock(manifest, "pack", &fd, &err), err);
    assert_int_equal(access(dead, F_OK), -1);
    assert_int_equal(access(mine, F_OK), 0);
    assert_int_equal(access(user, F_OK), 0);
    sk_out_unlock(manifest, fd);
    unlink(mine);
    unlink(user);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_check_accepts_plain),
        cmocka_unit_test(test_name_check_refuses_hostile),
        cmocka_unit_test(test_name_check_lengths),
        cmocka_unit_test(test_name_check_message_is_tame),
        cmocka_unit_test(test_ext_check),
        cmocka_unit_test(test_name_strip_gnu_rule),
        cmocka_unit_test(test_path_join),
        cmocka_unit_test(test_out_abort_keeps_existing_file),
        cmocka_unit_test(test_out_device_and_fifo_in_place),
        cmocka_unit_test(test_tmp_names_unique),
        cmocka_unit_test(test_out_lock_second_run_refused),
        cmocka_unit_test(test_out_lock_removes_dead_runs_tmps_only),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
