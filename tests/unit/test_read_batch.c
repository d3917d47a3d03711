/* test_read_batch.c - positioned reads made together (lib/io/read_batch.h),
 * through io_uring and through pread (SHARDKIT_IO_URING=0): a full batch
 * of reads at scattered offsets gives the file's bytes, a read across the
 * end of the file is short and one at the end reads nothing, a failing
 * read (a directory's descriptor) is SK_E_IO naming the file, the ring
 * is used exactly when this kernel lets a process make one, and a parent
 * and its forked child reading through one batch reader at once each get
 * their own bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/read_batch.h"
#include "sk_assert.h"

#define FILE_BYTES 100000

static char dir[] = "/tmp/test_read_batch.XXXXXX";
static char path[256];

static unsigned char byte_at(size_t i)
{
    return (unsigned char)(i * 7 + (i >> 8));
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/f.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    for (size_t i = 0; i < FILE_BYTES; i++) fputc(byte_at(i), f);
    return fclose(f);
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* Whether this kernel lets a process make a ring (seccomp, the sysctl). */
static int kernel_rings(void)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    long fd = syscall(__NR_io_uring_setup, 2, &p); /* the raw call: no liburing here */
    if (fd < 0) return 0;
    close((int)fd);
    return 1;
}

static void reads(int uring)
{
    if (uring) unsetenv("SHARDKIT_IO_URING");
    else setenv("SHARDKIT_IO_URING", "0", 1);
    sk_error err = {0};
    sk_rbatch *b = NULL;
    assert_sk_ok(sk_rbatch_open(&b, &err), err);
    assert_int_equal(sk_rbatch_uring(b), uring ? kernel_rings() : 0);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    static unsigned char buf[SK_RBATCH_MAX][5000];
    size_t got[SK_RBATCH_MAX];
    uint64_t off[SK_RBATCH_MAX];
    size_t n[SK_RBATCH_MAX];
    /* two rounds: the ring is reused */
    for (int round = 0; round < 2; round++) {
        for (size_t i = 0; i < SK_RBATCH_MAX; i++) {
            off[i] = (i * 37337 + (size_t)round * 101) % (FILE_BYTES - 5000);
            n[i] = 1 + (i * 977) % 5000;
        }
        off[3] = FILE_BYTES - 100, n[3] = 5000; /* across the end: short */
        off[7] = FILE_BYTES, n[7] = 10;         /* at the end: nothing */
        memset(buf, 0xAA, sizeof buf);
        for (size_t i = 0; i < SK_RBATCH_MAX; i++) sk_rbatch_add(b, fd, path, off[i], buf[i], n[i]);
        assert_sk_ok(sk_rbatch_run(b, got, &err), err);
        for (size_t i = 0; i < SK_RBATCH_MAX; i++) {
            size_t want = off[i] + n[i] <= FILE_BYTES ? n[i] : FILE_BYTES - (size_t)off[i];
            assert_int_equal(got[i], want);
            for (size_t j = 0; j < got[i]; j++) assert_int_equal(buf[i][j], byte_at(off[i] + j));
            if (got[i] < sizeof buf[i]) assert_int_equal(buf[i][got[i]], 0xAA); /* nothing past */
        }
    }
    /* a read that fails names the file; the batch after it still reads */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    sk_rbatch_add(b, fd, path, 0, buf[0], 10);
    sk_rbatch_add(b, dfd, dir, 0, buf[1], 10);
    assert_int_equal(sk_rbatch_run(b, got, &err), SK_E_IO);
    assert_non_null(strstr(err.msg, dir));
    assert_non_null(strstr(err.msg, "offset 0"));
    sk_rbatch_add(b, fd, path, 10, buf[0], 10);
    assert_sk_ok(sk_rbatch_run(b, got, &err), err);
    assert_int_equal(got[0], 10);
    assert_int_equal(buf[0][0], byte_at(10));
    close(dfd);
    close(fd);
    sk_rbatch_close(b);
    unsetenv("SHARDKIT_IO_URING");
}

static void test_uring(void **state)
{
    (void)state;
    reads(1);
}

static void test_pread(void **state)
{
    (void)state;
    reads(0);
}

/* 200 rounds of a full batch at offsets seeded by who reads: 0 when every
 * byte is the file's */
static int hammer(sk_rbatch *b, int fd, size_t who)
{
    static unsigned char buf[SK_RBATCH_MAX][4096];
    size_t got[SK_RBATCH_MAX];
    sk_error err = {0};
    for (size_t round = 0; round < 200; round++) {
        for (size_t i = 0; i < SK_RBATCH_MAX; i++)
            sk_rbatch_add(b, fd, path, (who * 7919 + round * 131 + i * 2003) % (FILE_BYTES - 4096),
                          buf[i], 4096);
        if (sk_rbatch_run(b, got, &err)) return 1;
        for (size_t i = 0; i < SK_RBATCH_MAX; i++) {
            size_t off = (who * 7919 + round * 131 + i * 2003) % (FILE_BYTES - 4096);
            if (got[i] != 4096) return 1;
            for (size_t j = 0; j < 4096; j++)
                if (buf[i][j] != byte_at(off + j)) return 1;
        }
    }
    return 0;
}

static void test_fork(void **state)
{
    (void)state;
    unsetenv("SHARDKIT_IO_URING");
    sk_error err = {0};
    sk_rbatch *b = NULL;
    assert_sk_ok(sk_rbatch_open(&b, &err), err);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(hammer(b, fd, 0), 0); /* the ring is in use before the fork */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(hammer(b, fd, 1) || sk_rbatch_uring(b) != kernel_rings());
    int mine = hammer(b, fd, 2), st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_int_equal(mine, 0);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    close(fd);
    sk_rbatch_close(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uring),
        cmocka_unit_test(test_pread),
        cmocka_unit_test(test_fork),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
