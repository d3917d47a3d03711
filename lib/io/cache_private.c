/*
 * cache_private.c - a job's private cache directory: made under $TMPDIR
 * with mkdtemp, marked live for the life of the job, removed at its end,
 * and the ones left by killed jobs swept when a job makes a new one.
 *
 * The global order reads remote shards through a disk cache; with none
 * named it makes $TMPDIR/shardkit-cache-XXXXXX and removes it when the
 * reader is closed.  A job killed with SIGKILL (the OOM killer, a
 * preemption, kubectl delete --grace-period=0) never gets there, and its
 * directory (up to the cache's bound: gigabytes) stays, one more for each
 * killed job.  So a private cache holds a marker, LIVE, locked with
 * flock(LOCK_EX) from before its name exists until the directory is gone:
 * the lock dies with the process whatever kills it (a pid file would be
 * wrong once the pid is reused), and a directory whose marker's lock can
 * be taken is one no live job uses.  A job making a private cache first
 * sweeps $TMPDIR: each shardkit-cache-XXXXXX (mkdtemp's shape) that is a
 * directory (never a link followed) of this user, holding a regular-file
 * marker written on this machine (or on an earlier boot of this host)
 * whose lock it takes, loses the cache's own file names (store_cache.c's:
 * HASH.skc and their temporaries), then the marker, then the directory if
 * that left it empty.  Nothing else is ever unlinked: a directory without
 * the marker (an older shardkit's, or anyone else's) is left alone, and
 * so is a file of another name inside a marked one.
 *
 * Two jobs starting at once: the marker is written and locked under a
 * name the sweep never opens (LIVE_NEW) and renamed to LIVE once locked,
 * so a sweeper that sees LIVE finds it locked; before the rename the
 * directory has no marker and is not the sweep's.  A sweeper holds the
 * lock while it removes, so two sweepers never work on one directory, and
 * one that took a lock late (its holder finished and unlinked the marker)
 * sees that the marker it holds is no longer the directory's and stops.
 *
 * The marker also says which machine wrote it: on a $TMPDIR shared by
 * hosts (a cluster's scratch file system) a lock may be local to each
 * host, so a directory of another host is left to that host's jobs.
 *
 * Bounded: a sweep reads at most SWEEP_NAMES names of $TMPDIR, looks into
 * at most SWEEP_DIRS of its shardkit-cache-* directories, reads at most
 * SWEEP_FILES names in stale ones, and stops after SWEEP_NS; a stale
 * cache not emptied keeps its marker and is finished by later starts.
 */
#include "io/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define PREFIX "shardkit-cache-"
#define LIVE ".shardkit-live"         /* the marker, locked while the job lives */
#define LIVE_NEW ".shardkit-live.new" /* the marker before it is locked */
/* names of $TMPDIR read per sweep (100,000 took 18 ms from a warm ext4
 * directory here: a start never waits long on a huge /tmp; in a bigger
 * one the caches listed after these wait for the ones before to go) */
#define SWEEP_NAMES 16384
#define SWEEP_DIRS 1000   /* shardkit-cache-* directories looked into */
#define SWEEP_FILES 65536 /* names read in stale caches (64 GiB of blocks) */
/* and no longer than this: a loaded disk here took 2.4 s to unlink a
 * stale cache of 1,024 blocks (1 GiB), rm -rf 3.0 s; a start does not
 * wait for all of a large one */
#define SWEEP_NS 1000000000LL

/* What a sweep may still do: names to read, and until when (0: no end). */
struct budget { size_t files; int64_t until; };

/* The caches this process made and holds the marker's lock of, so that
 * sk_store_cache_temp_remove releases it when the directory is gone. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static struct live { char *dir; int fd; } *lives;
static size_t nlives, cap_lives;

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Whether the budget allows one more name, taken from it if so. */
static int spend(struct budget *b)
{
    if (!b->files || (b->until && now_ns() > b->until)) return 0;
    b->files--;
    return 1;
}

/* This machine, as the marker records it: the kernel's boot id (one
 * kernel: its flock is the truth) and the host name (an earlier boot of
 * this host: the job is gone). */
struct here { char boot[64], host[256]; };

static void whoami(struct here *h)
{
    h->boot[0] = h->host[0] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f) {
        if (!fgets(h->boot, sizeof h->boot, f)) h->boot[0] = 0;
        fclose(f);
        h->boot[strcspn(h->boot, " \n")] = 0;
    }
    if (gethostname(h->host, sizeof h->host - 1)) h->host[0] = 0;
    h->host[sizeof h->host - 1] = 0;
    h->host[strcspn(h->host, " \n")] = 0;
}

/* The value of a "key value" line of the marker's text, into v. */
static void marker_field(const char *text, const char *key, char *v, size_t nv)
{
    size_t kl = strlen(key);
    v[0] = 0;
    for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
        if (!strncmp(l, key, kl) && l[kl] == ' ') {
            size_t n = strcspn(l + kl + 1, "\n");
            if (n >= nv) return; /* longer than any this code writes: not one of ours */
            memcpy(v, l + kl + 1, n);
            v[n] = 0;
            return;
        }
}

/* Whether a marker (its open descriptor) was written on this machine. */
static int marker_here(int fd, const struct here *h)
{
    char text[512], mboot[64], mhost[256];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    if (n <= 0) return 0;
    text[n] = 0;
    marker_field(text, "boot", mboot, sizeof mboot);
    marker_field(text, "host", mhost, sizeof mhost);
    return (h->boot[0] && !strcmp(h->boot, mboot)) || (h->host[0] && !strcmp(h->host, mhost));
}

/* Whether a name in $TMPDIR has mkdtemp's shape for a private cache:
 * PREFIX and six letters or digits. */
static int is_private_name(const char *name)
{
    size_t n = strlen(PREFIX);
    if (strncmp(name, PREFIX, n) || strlen(name) != n + 6) return 0;
    for (const char *c = name + n; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9'))) return 0;
    return 1;
}

/* Whether a name inside a private cache is shardkit's: the cache's files
 * and the marker (under either of its names). */
static int own_name(const char *name)
{
    return sk_store_cache_own(name) || !strcmp(name, LIVE) || !strcmp(name, LIVE_NEW);
}

/* Unlinks shardkit's names in the directory dfd (links removed, never
 * followed), the marker last, within the budget; 1 when the whole
 * directory was read. */
static int remove_own(int dfd, struct budget *b)
{
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return 0;
    }
    rewinddir(d);
    int all = 1;
    for (struct dirent *de;;) {
        if (!spend(b)) {
            all = 0;
            break;
        }
        if (!(de = readdir(d))) break;
        if (own_name(de->d_name) && strcmp(de->d_name, LIVE)) unlinkat(dfd, de->d_name, 0);
    }
    closedir(d);
    if (all) unlinkat(dfd, LIVE, 0); /* last: a cache not emptied is still found */
    return all;
}

/* A shardkit-cache-* entry of base: swept when provably stale; 1 when it
 * was removed whole. */
static int sweep_one(int bfd, const char *name, const struct here *h, struct budget *b)
{
    struct stat st, dst, lst, now;
    if (fstatat(bfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return 0;
    int dfd = openat(bfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), lfd = -1, gone = 0;
    if (dfd < 0) return 0;
    /* the directory looked at, still (not swapped since the lstat) */
    if (fstat(dfd, &dst) || dst.st_dev != st.st_dev || dst.st_ino != st.st_ino || dst.st_uid != geteuid())
        goto out;
    /* O_NONBLOCK: a FIFO in its place would block an open for reading */
    lfd = openat(dfd, LIVE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (lfd < 0 || fstat(lfd, &lst) || !S_ISREG(lst.st_mode) || lst.st_uid != geteuid()) goto out;
    if (flock(lfd, LOCK_EX | LOCK_NB)) goto out; /* a live job's (or no locks here) */
    /* still the directory's marker: not one a finished job (or another
     * sweeper) unlinked after this opened it */
    if (fstat(lfd, &lst) || lst.st_nlink == 0 || fstatat(dfd, LIVE, &now, AT_SYMLINK_NOFOLLOW) ||
        now.st_ino != lst.st_ino || now.st_dev != lst.st_dev)
        goto out;
    if (!marker_here(lfd, h)) goto out;
    if (remove_own(dfd, b)) gone = unlinkat(bfd, name, AT_REMOVEDIR) == 0; /* only when empty */
out:
    if (lfd >= 0) close(lfd); /* the lock goes with it */
    close(dfd);
    return gone;
}

size_t sk_store_cache_temp_sweep(const char *base)
{
    int bfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = bfd >= 0 ? fdopendir(bfd) : NULL;
    if (!d) {
        if (bfd >= 0) close(bfd);
        return 0;
    }
    size_t names = 0, dirs = 0, swept = 0;
    struct budget b = {SWEEP_FILES, now_ns() + SWEEP_NS};
    struct here h;
    whoami(&h);
    for (struct dirent *de; names < SWEEP_NAMES && dirs < SWEEP_DIRS && b.files && now_ns() <= b.until;
         names++) {
        if (!(de = readdir(d))) break;
        if (!is_private_name(de->d_name) || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        dirs++;
        swept += (size_t)sweep_one(dirfd(d), de->d_name, &h, &b);
    }
    closedir(d);
    return swept;
}

/* Writes the marker into the new directory p and locks it: the
 * descriptor holding the lock, or -1 (the cache then works unmarked: a
 * killed job's is not swept). */
static int mark_live(const char *p)
{
    struct here h;
    char *text = NULL;
    int dfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd = -1, ok = 0;
    if (dfd < 0) return -1;
    whoami(&h);
    int n = asprintf(&text, "shardkit private cache: removed when its job ends; while this file is locked "
                            "(flock) the job lives\npid %d\nhost %s\nboot %s\n",
                     (int)getpid(), h.host, h.boot);
    fd = n < 0 ? -1 : openat(dfd, LIVE_NEW, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ok = write(fd, text, (size_t)n) == n && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
             renameat(dfd, LIVE_NEW, dfd, LIVE) == 0; /* seen under its name only locked */
        if (!ok) {
            close(fd);
            unlinkat(dfd, LIVE_NEW, 0);
            fd = -1;
        }
    }
    free(text);
    close(dfd);
    return fd;
}

int sk_store_cache_temp(char **dir, uint64_t *avail, sk_error *err)
{
    const char *base = getenv("TMPDIR");
    if (!base || !*base) base = "/tmp";
    *dir = NULL;
    /* first: the space killed jobs left is free again for this one's bound */
    sk_store_cache_temp_sweep(base);
    char *p;
    SK_FAIL_IF(asprintf(&p, "%s/" PREFIX "XXXXXX", base) < 0, err, SK_E_NOMEM, "out of memory");
    /* mkdtemp: a new name, mode 0700, made by this call (never one planted
     * there: it fails on a name that exists, links included) */
    if (!mkdtemp(p)) {
        int e = errno;
        free(p);
        return sk_error_set(err, SK_E_IO, "%s: cannot make the reader's temporary cache there (%s); "
                            "set TMPDIR to a writable directory or give a cache directory "
                            "(--cache-dir)", base, strerror(e));
    }
    int fd = mark_live(p);
    if (fd >= 0) {
        pthread_mutex_lock(&live_mu);
        char *pd = strdup(p);
        if (pd && !sk_grow((void **)&lives, &cap_lives, nlives + 1, sizeof *lives, NULL)) {
            lives[nlives++] = (struct live){pd, fd};
        } else { /* not kept: unmarked rather than locked for ever */
            free(pd);
            int dfd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (dfd >= 0) unlinkat(dfd, LIVE, 0), close(dfd);
            close(fd);
        }
        pthread_mutex_unlock(&live_mu);
    }
    struct statvfs vf;
    *avail = statvfs(p, &vf) == 0 ? (uint64_t)vf.f_bavail * vf.f_frsize : 0;
    *dir = p;
    return SK_OK;
}

void sk_store_cache_temp_remove(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        /* only shardkit's names: a file of any other name (put there by
         * someone else) stays, and so does the directory then */
        struct budget all = {SIZE_MAX, 0};
        remove_own(fd, &all);
        close(fd);
        rmdir(dir);
    }
    /* the lock last: until the directory is gone no sweeper can take it */
    pthread_mutex_lock(&live_mu);
    for (size_t i = 0; i < nlives; i++)
        if (!strcmp(lives[i].dir, dir)) {
            close(lives[i].fd);
            free(lives[i].dir);
            lives[i] = lives[--nlives];
            break;
        }
    pthread_mutex_unlock(&live_mu);
    sk_store_cache_forget(dir);
}
