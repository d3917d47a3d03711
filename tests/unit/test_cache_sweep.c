/* test_cache_sweep.c - the private caches of killed jobs swept when a job
 * makes its own (lib/io/cache_private.c, through sk_store_cache_temp):
 * a cache left by a process killed with SIGKILL goes; a live one (of this
 * process or another) stays whole; two jobs starting at once never lose
 * each other's files; the sweep is bounded (a later start finishes); and
 * nothing shardkit did not make is removed: a shardkit-cache-* link to a
 * directory, a directory of another user, one without the marker, one
 * whose name is not mkdtemp's, a marker of another host, a FIFO or a link
 * in the marker's place, and inside a stale cache a foreign file, a
 * directory with a block's name and what a link with a block's name
 * points to all stay. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/store.h"
#include "sk_files.h"

#define HEX40 "0123456789abcdef0123456789abcdef01234567"
#define BLOCK HEX40 ".skc"
#define BLOCK_TMP "." HEX40 ".skc.77.tmp"
#define HEX40B "fedcba9876543210fedcba9876543210fedcba98"
#define HEX40C "00112233445566778899aabbccddeeff00112233"

static char base[] = "/tmp/test_cache_sweep.XXXXXX";

/* Removes a test's directory tree (the test's own, made by it). */
static void rm_rf(const char *p)
{
    pid_t pid = fork();
    if (pid == 0) {
        execlp("rm", "rm", "-rf", p, (char *)NULL);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

/* A cache made by a child killed with SIGKILL after it put a block and a
 * temporary in it, as a reader killed mid-read leaves one: its path. */
static char *killed_cache(void)
{
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *dir = NULL;
        uint64_t avail;
        close(pfd[0]);
        if (sk_store_cache_temp(&dir, &avail, NULL)) _exit(1);
        if (put_ok(dir, BLOCK, "a block") || put_ok(dir, BLOCK_TMP, "half a block")) _exit(1);
        if (write(pfd[1], dir, strlen(dir) + 1) < 0) _exit(1);
        close(pfd[1]);
        raise(SIGKILL);
        _exit(1);
    }
    close(pfd[1]);
    char buf[512] = "";
    ssize_t n = read(pfd[0], buf, sizeof buf - 1);
    close(pfd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    assert_true(n > 0);
    assert_true(there(buf, BLOCK) && there(buf, BLOCK_TMP)); /* what a killed job leaves */
    return strdup(buf);
}

/* A new private cache made (and so a sweep run) in a child process: this
 * process's own caches are then another job's. */
static void start_job_elsewhere(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *dir = NULL;
        uint64_t avail;
        if (sk_store_cache_temp(&dir, &avail, NULL)) _exit(1);
        sk_store_cache_temp_remove(dir);
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void killed_swept_live_kept(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    char *stale = killed_cache(), *live = NULL, *mine = NULL;
    uint64_t avail;
    assert_int_equal(sk_store_cache_temp(&live, &avail, NULL), SK_OK); /* a running job's */
    put(live, BLOCK, "in use");
    assert_false(there(stale, "")); /* making it swept the killed one's */
    free(stale);
    stale = killed_cache();
    start_job_elsewhere(); /* the next job, in another process */
    assert_false(there(stale, "")); /* the killed job's cache: gone whole */
    assert_true(there(live, BLOCK)); /* the live one's: untouched */
    /* nor by a second cache of the same process (a program with two readers) */
    assert_int_equal(sk_store_cache_temp(&mine, &avail, NULL), SK_OK);
    assert_true(there(live, BLOCK));
    sk_store_cache_temp_remove(mine);
    sk_store_cache_temp_remove(live);
    assert_false(there(live, ""));
    free(stale);
    free(mine);
    free(live);
}

/* The marker of a real cache, copied as text: a hand-made stale cache. */
static void copy_marker(const char *from, const char *to)
{
    char p[512], text[1024] = "";
    snprintf(p, sizeof p, "%s/.shardkit-live", from);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    put(to, ".shardkit-live", text);
}

static void hostile_spared(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    char p[512], victim[512];
    struct stat st;
    /* a template of a stale marker: a killed job's cache, moved aside */
    char *t = killed_cache();
    snprintf(victim, sizeof victim, "%s/victim", base);
    assert_int_equal(rename(t, victim), 0); /* not a shardkit-cache-* name: not swept */
    free(t);
    /* a link named like a cache, to a directory that looks stale */
    snprintf(p, sizeof p, "%s/shardkit-cache-link01", base);
    assert_int_equal(symlink(victim, p), 0);
    /* a directory without the marker (an older shardkit's, or anyone's) */
    snprintf(p, sizeof p, "%s/shardkit-cache-nomark", base);
    assert_int_equal(mkdir(p, 0700), 0);
    put(p, BLOCK, "an old format's block");
    /* a marker another host wrote (a shared TMPDIR): its lock says nothing here */
    snprintf(p, sizeof p, "%s/shardkit-cache-elsewh", base);
    assert_int_equal(mkdir(p, 0700), 0);
    put(p, ".shardkit-live", "shardkit private cache\npid 1\nhost elsewhere.example\nboot 0000-1111\n");
    put(p, BLOCK, "another host's block");
    /* a FIFO in the marker's place: never waited on */
    snprintf(p, sizeof p, "%s/shardkit-cache-fifo01", base);
    assert_int_equal(mkdir(p, 0700), 0);
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/.shardkit-live", p);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    put(p, BLOCK, "a block beside a fifo");
    /* the marker a link to a real (stale) marker */
    snprintf(p, sizeof p, "%s/shardkit-cache-mlink1", base);
    assert_int_equal(mkdir(p, 0700), 0);
    char ml[600], mt[600];
    snprintf(ml, sizeof ml, "%s/.shardkit-live", p);
    snprintf(mt, sizeof mt, "%s/.shardkit-live", victim);
    assert_int_equal(symlink(mt, ml), 0);
    put(p, BLOCK, "a block beside a linked marker");
    /* a stale cache with a foreign file: the cache's files go, the rest stays */
    char *foreign = killed_cache();
    put(foreign, "notes.txt", "not shardkit's");
    /* and in it, a link with a cache name to a file outside, and a
     * directory with a cache name holding a file */
    char lk[600], sub[600];
    put(base, "precious", "precious");
    snprintf(lk, sizeof lk, "%s/" HEX40B ".skc", foreign);
    snprintf(p, sizeof p, "%s/precious", base);
    assert_int_equal(symlink(p, lk), 0);
    snprintf(sub, sizeof sub, "%s/" HEX40C ".skc", foreign);
    assert_int_equal(mkdir(sub, 0700), 0);
    put(sub, "inner.txt", "inside a directory named like a block");
    /* a name not of mkdtemp's shape, though its marker is a stale one's */
    snprintf(p, sizeof p, "%s/shardkit-cache-longername", base);
    assert_int_equal(mkdir(p, 0700), 0);
    copy_marker(victim, p);
    put(p, BLOCK, "a block under another name");
    /* another user's stale cache (when this test can give it away) */
    char *other = killed_cache();
    struct passwd *nobody = getpwnam("nobody");
    int chowned = 0;
    if (nobody && nobody->pw_uid != geteuid()) {
        char pb[600], pt[600], pm[600];
        snprintf(pb, sizeof pb, "%s/" BLOCK, other);
        snprintf(pt, sizeof pt, "%s/" BLOCK_TMP, other);
        snprintf(pm, sizeof pm, "%s/.shardkit-live", other);
        uid_t u = nobody->pw_uid;
        gid_t g = nobody->pw_gid;
        chowned = chown(pb, u, g) == 0 && chown(pt, u, g) == 0 && chown(pm, u, g) == 0 && chown(other, u, g) == 0;
    }
    if (!chowned) print_message("(not root: the other user's directory is not tested)\n");
    /* and a plainly stale one, which must go: the sweep did run */
    char *stale = killed_cache();

    alarm(20); /* a sweep that waits on the FIFO fails here instead of hanging */
    start_job_elsewhere();
    alarm(0);

    assert_false(there(stale, ""));
    assert_true(there(victim, BLOCK) && there(victim, BLOCK_TMP) && there(victim, ".shardkit-live"));
    snprintf(p, sizeof p, "%s/shardkit-cache-link01", base);
    assert_int_equal(lstat(p, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_true(there(base, "shardkit-cache-nomark/" BLOCK));
    assert_true(there(base, "shardkit-cache-elsewh/" BLOCK));
    assert_true(there(base, "shardkit-cache-elsewh/.shardkit-live"));
    assert_true(there(base, "shardkit-cache-fifo01/" BLOCK));
    assert_true(there(base, "shardkit-cache-mlink1/" BLOCK));
    assert_true(there(foreign, "notes.txt"));     /* not shardkit's: it stays, */
    assert_false(there(foreign, BLOCK));          /* the cache's files go, */
    assert_false(there(foreign, BLOCK_TMP));
    assert_false(there(foreign, ".shardkit-live")); /* and the marker: not looked at again */
    assert_false(there(foreign, HEX40B ".skc"));    /* the link went, */
    char text[32] = "";
    snprintf(p, sizeof p, "%s/precious", base);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof text, f));
    fclose(f);
    assert_string_equal(text, "precious"); /* never what it named */
    assert_true(there(foreign, HEX40C ".skc/inner.txt"));
    assert_true(there(base, "shardkit-cache-longername/" BLOCK));
    if (chowned)
        assert_true(there(other, BLOCK) && there(other, BLOCK_TMP) && there(other, ".shardkit-live"));
    free(stale);
    free(foreign);
    free(other);
    rm_rf(base);
    assert_int_equal(mkdir(base, 0700), 0);
}

/* Jobs starting, working and ending at once, while killed jobs' caches
 * wait to be swept: no job ever loses its own files.  The marker is
 * locked before it has its name, so a sweeper never finds it unlocked. */
static void concurrent_starts(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    enum { JOBS = 4, ROUNDS = 30 };
    pid_t pids[JOBS];
    for (int j = 0; j < JOBS; j++) {
        pids[j] = fork();
        assert_true(pids[j] >= 0);
        if (pids[j] == 0) {
            for (int r = 0; r < ROUNDS; r++) {
                char *dir = NULL;
                uint64_t avail;
                if (sk_store_cache_temp(&dir, &avail, NULL)) _exit(2);
                if (put_ok(dir, BLOCK, "mine")) _exit(1); /* its directory was swept */
                if (r % 4 == 3) { /* now and then a job is killed: its cache is left */
                    pid_t k = fork();
                    if (k == 0) {
                        char *d2 = NULL;
                        if (sk_store_cache_temp(&d2, &avail, NULL)) _exit(2);
                        if (put_ok(d2, BLOCK, "killed")) _exit(2);
                        raise(SIGKILL);
                        _exit(2);
                    }
                    waitpid(k, NULL, 0);
                }
                if (!there(dir, BLOCK)) _exit(1); /* a live cache lost a file */
                sk_store_cache_temp_remove(dir);
                free(dir);
            }
            _exit(0);
        }
    }
    for (int j = 0; j < JOBS; j++) {
        int st;
        assert_int_equal(waitpid(pids[j], &st, 0), pids[j]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    start_job_elsewhere(); /* what the killed ones left goes too */
    assert_int_equal(rmdir(base), 0);
    assert_int_equal(mkdir(base, 0700), 0);
}

/* More stale caches than one sweep looks into (1,000; fewer when a
 * loaded disk takes over a second to remove them): the next starts take
 * the rest. */
static void bounded(void **state)
{
    (void)state;
    setenv("TMPDIR", base, 1);
    enum { N = 1100 };
    char *t = killed_cache(), aside[512];
    snprintf(aside, sizeof aside, "%s/template", base);
    assert_int_equal(rename(t, aside), 0);
    for (int i = 0; i < N; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/shardkit-cache-%06d", base, i);
        assert_int_equal(mkdir(p, 0700), 0);
        copy_marker(aside, p);
    }
    int left = N, starts = 0;
    while (left && starts++ < 50) {
        start_job_elsewhere();
        int was = left;
        left = 0;
        for (int i = 0; i < N; i++) {
            char p[512];
            snprintf(p, sizeof p, "shardkit-cache-%06d", i);
            left += there(base, p);
        }
        if (starts == 1) assert_true(left >= N - 1000); /* at most 1,000 at once */
        assert_true(left < was);                        /* and each start some */
    }
    assert_int_equal(left, 0);
    free(t);
    rm_rf(aside);
}

int main(void)
{
    if (!mkdtemp(base)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(killed_swept_live_kept),
        cmocka_unit_test(hostile_spared),
        cmocka_unit_test(concurrent_starts),
        cmocka_unit_test(bounded),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rm_rf(base);
    return rc;
}
