/*
 * fsutil.c - file system helpers every writer shares: full writes (one
 * buffer or a gather list) that name the file on failure, the temporary
 * name a file is written under before its rename, and making an output
 * directory.
 */
#include "core/internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

int sk_scratch_fd(const char *dir, const char *what, sk_error *err)
{
    if (!dir || !*dir) dir = getenv("TMPDIR");
    if (!dir || !*dir) dir = "/tmp";
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd >= 0) return fd;
    char path[4200];
    if ((size_t)snprintf(path, sizeof path, "%s/.shardkit-scratch-XXXXXX", dir) >= sizeof path) {
        sk_error_set(err, SK_E_USAGE, "%s: directory name too long for %s", dir, what);
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        sk_error_set(err, SK_E_IO, "%s: cannot create %s: %s", dir, what, strerror(errno));
        return -1;
    }
    unlink(path);
    return fd;
}

int sk_write_all(int fd, const void *buf, size_t n, const char *path, sk_error *err)
{
    const unsigned char *p = buf;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        SK_FAIL_IF(w < 0, err, SK_E_IO, "%s: write failed: %s", path, strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return SK_OK;
}

int sk_writev_all(int fd, struct iovec *iov, int iovcnt, const char *path, sk_error *err)
{
    while (iovcnt) {
        ssize_t w = writev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
        if (w < 0 && errno == EINTR) continue;
        SK_FAIL_IF(w < 0, err, SK_E_IO, "%s: write failed: %s", path, strerror(errno));
        sk_iov_advance(&iov, &iovcnt, (size_t)w);
    }
    return SK_OK;
}

void sk_iov_advance(struct iovec **iov, int *iovcnt, size_t n)
{
    while (*iovcnt && n >= (*iov)->iov_len) { /* drop what was written */
        n -= (*iov)->iov_len;
        (*iov)++;
        (*iovcnt)--;
    }
    if (*iovcnt) {
        (*iov)->iov_base = (char *)(*iov)->iov_base + n;
        (*iov)->iov_len -= n;
    }
}

int sk_mkdirs(const char *dir, sk_error *err)
{
    char buf[4096];
    size_t n = strlen(dir);
    SK_FAIL_IF(n == 0, err, SK_E_USAGE, "empty directory name");
    SK_FAIL_IF(n >= sizeof buf, err, SK_E_USAGE, "%s: path too long", dir);
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char c = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return sk_error_set(err, SK_E_IO, "%s: cannot create directory: %s", buf, strerror(errno));
        buf[i] = c;
    }
    struct stat st;
    SK_FAIL_IF(stat(dir, &st) != 0 || !S_ISDIR(st.st_mode), err, SK_E_IO,
               "%s: not a directory", dir);
    return SK_OK;
}

char *sk_dir_of(const char *path)
{
    const char *sl = strrchr(path, '/');
    if (!sl) return strdup(".");
    if (sl == path) return strdup("/");
    return strndup(path, (size_t)(sl - path));
}

int sk_path_within(const char *path, const char *dir)
{
    struct stat d, st, up;
    char p[4200];
    if (stat(dir, &d) || !S_ISDIR(d.st_mode)) return 0;
    snprintf(p, sizeof p, "%s", *path ? path : ".");
    /* an output directory not made yet: its nearest existing ancestor; a
     * file: its directory (".." of a file is no path) */
    while (stat(p, &st) || !S_ISDIR(st.st_mode)) {
        char *sl = strrchr(p, '/');
        if (!sl) {
            snprintf(p, sizeof p, ".");
            if (stat(p, &st)) return 0;
            break;
        }
        if (sl == p) sl[1] = 0;
        else *sl = 0;
    }
    /* then up through "..", to the root (its own parent) */
    for (size_t depth = 0; depth < 2048; depth++) {
        if (st.st_dev == d.st_dev && st.st_ino == d.st_ino) return 1;
        size_t n = strlen(p);
        if (n + 4 >= sizeof p) return 0;
        memcpy(p + n, "/..", 4);
        if (stat(p, &up) || (up.st_dev == st.st_dev && up.st_ino == st.st_ino)) return 0;
        st = up;
    }
    return 0;
}

/* ------------------------------------------------------------ output files */

struct sk_out {
    int fd;
    int in_place; /* not a regular file (or stdout): written where it is */
    char *path, *tmp;
};

/* An output path that exists as something other than a regular file.  A
 * name shardkit chose for itself (SK_OUT_REGULAR: a sidecar, a manifest, a
 * shard) is refused: a planted link, FIFO or device is never written
 * through.  A name the user gave (a device, a FIFO, /dev/stdout) is
 * written in place, opened without blocking: a FIFO with no reader is an
 * error, not a hang. */
static int open_in_place(sk_out *o, const char *path, const struct stat *st, unsigned flags,
                         sk_error *err)
{
    if (flags & SK_OUT_REGULAR) return sk_out_check_regular(path, err);
    if (S_ISDIR(st->st_mode)) return sk_error_set(err, SK_E_USAGE, "%s is a directory", path);
    o->in_place = 1;
    o->fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (o->fd < 0 && errno == ENXIO)
        return sk_error_set(err, SK_E_IO, "%s: a FIFO with no reader: nothing to write to", path);
    if (o->fd < 0) return sk_error_set(err, SK_E_IO, "%s: cannot open: %s", path, strerror(errno));
    int fl = fcntl(o->fd, F_GETFL);
    if (fl >= 0) fcntl(o->fd, F_SETFL, fl & ~O_NONBLOCK); /* opened: now write as usual */
    return SK_OK;
}

const char *sk_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFLNK: return "a symbolic link";
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    default: return "a special file";
    }
}

int sk_create_excl(const char *path, const char *shown, sk_error *err)
{
    /* O_EXCL: never a file that is there already, nor through a link
     * planted at the name (O_CREAT | O_EXCL does not follow one) */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        sk_error_set(err, SK_E_IO, "%s: cannot create %s: %s", shown ? shown : path,
                     shown ? "a temporary file beside it" : "it", strerror(errno));
    return fd;
}

int sk_out_check_regular(const char *path, sk_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) return SK_OK;
    return sk_error_set(err, SK_E_USAGE, "%s exists and is %s, not a regular file: shardkit "
                        "will not write through it or replace it", path, sk_file_kind(st.st_mode));
}

int sk_out_open(sk_out **out, const char *path, sk_error *err)
{
    return sk_out_open_as(out, path, 0, err);
}

int sk_out_open_as(sk_out **out, const char *path, unsigned flags, sk_error *err)
{
    *out = NULL;
    sk_out *o = calloc(1, sizeof *o);
    SK_FAIL_IF(!o, err, SK_E_NOMEM, "out of memory");
    o->fd = -1;
    struct stat st;
    int rc = SK_OK;
    if (!path || !strcmp(path, "-")) {
        o->fd = STDOUT_FILENO;
        o->in_place = 2; /* not ours to close */
        o->path = strdup("stdout");
    } else if (((flags & SK_OUT_REGULAR) ? lstat(path, &st) : stat(path, &st)) == 0 &&
               !S_ISREG(st.st_mode)) {
        /* a device, a FIFO, /dev/stdout: there is nothing to replace, and
         * renaming over it or unlinking it would destroy it */
        rc = open_in_place(o, path, &st, flags, err);
        if (!rc) o->path = strdup(path);
    } else {
        o->path = strdup(path);
        o->tmp = sk_tmp_name_unique(path, err);
        if (!o->path || !o->tmp) rc = err && err->code ? err->code : SK_E_NOMEM;
        else if ((o->fd = sk_create_excl(o->tmp, path, err)) < 0) {
            free(o->tmp), o->tmp = NULL; /* not ours: never unlinked */
            rc = err ? err->code : SK_E_IO;
        }
    }
    if (!rc && !o->path) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) {
        sk_out_abort(o);
        return rc;
    }
    *out = o;
    return SK_OK;
}

int sk_out_fd(const sk_out *o) { return o->fd; }

const char *sk_out_name(const sk_out *o) { return o->path; }

int sk_out_commit(sk_out *o, sk_error *err)
{
    int rc = SK_OK;
    if (o->in_place != 2 && o->fd >= 0) {
        if (close(o->fd) != 0)
            rc = sk_error_set(err, SK_E_IO, "%s: close failed: %s", sk_out_name(o), strerror(errno));
        o->fd = -1;
    }
    if (!rc && o->tmp && rename(o->tmp, o->path) != 0)
        rc = sk_error_set(err, SK_E_IO, "%s: cannot put it in place (rename from %s): %s", o->path,
                          o->tmp, strerror(errno));
    if (!rc) free(o->tmp), o->tmp = NULL; /* renamed: nothing left to remove */
    sk_out_abort(o);
    return rc;
}

void sk_out_abort(sk_out *o)
{
    if (!o) return;
    if (o->in_place != 2 && o->fd >= 0) close(o->fd);
    if (o->tmp) unlink(o->tmp); /* ours alone: the file at path is never touched */
    free(o->tmp);
    free(o->path);
    free(o);
}

char *sk_tmp_name_unique(const char *path, sk_error *err)
{
    /* ".NAME.PID.N.tmp": two processes (or two outputs of one) never
     * share a temporary name */
    static unsigned counter;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    size_t n = strlen(path) + 40;
    char *tmp = sk_xmalloc(n, err);
    if (!tmp) return NULL;
    snprintf(tmp, n, "%.*s.%s.%ld.%u.tmp", (int)dirlen, path, path + dirlen, (long)getpid(),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    return tmp;
}

/* ---------------------------------------------------- output directory lock */

/* Under the lock: the temporary files a killed run left (".NAME.PID.N.tmp",
 * the shape sk_tmp_name_unique gives, with PID no longer running) are
 * removed.  Nothing of another shape is touched. */
static void remove_stale_tmps(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));) {
        const char *n = de->d_name;
        size_t len = strlen(n);
        if (n[0] != '.' || len < 10 || strcmp(n + len - 4, ".tmp")) continue;
        /* back over ".N" and ".PID" */
        const char *p = n + len - 4;
        const char *q = p;
        while (q > n && q[-1] >= '0' && q[-1] <= '9') q--;
        if (q == p || q[-1] != '.') continue;
        const char *r = q - 1;
        while (r > n && r[-1] >= '0' && r[-1] <= '9') r--;
        if (r == q - 1 || r[-1] != '.' || r - 1 == n) continue;
        long pid = strtol(r, NULL, 10);
        if (pid <= 0 || pid == (long)getpid() || !(kill((pid_t)pid, 0) != 0 && errno == ESRCH)) continue;
        unlinkat(dirfd(d), n, 0);
    }
    closedir(d);
}

/* The lock file of output: ".NAME.lock" beside it. */
static int lock_name(const char *output, char *buf, size_t cap)
{
    const char *slash = strrchr(output, '/');
    size_t dl = slash ? (size_t)(slash - output + 1) : 0;
    return snprintf(buf, cap, "%.*s.%s.lock", (int)dl, output, output + dl) >= (int)cap ? -1 : 0;
}

int sk_out_lock(const char *output, const char *what, int *out_fd, sk_error *err)
{
    char path[4200], dir[4200];
    *out_fd = -1;
    SK_FAIL_IF(lock_name(output, path, sizeof path), err, SK_E_USAGE, "%s: path too long", output);
    const char *slash = strrchr(output, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - output) : 1, slash ? output : ".");
    if (!dir[0]) snprintf(dir, sizeof dir, "/");
    for (int tries = 0; tries < 8; tries++) {
        /* never through a link planted at the name (it would make the
         * lock truncate and write the file it points to), never a FIFO */
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0644);
        struct stat a, b;
        if (fd < 0 && errno == ELOOP)
            return sk_error_set(err, SK_E_USAGE, "%s: its run lock %s is a symbolic link: shardkit "
                                "will not follow it (remove it)", output, path);
        SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot create its run lock %s: %s", output, path,
                   strerror(errno));
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            close(fd);
            return sk_error_set(err, SK_E_USAGE, "%s: its run lock %s is %s, not a regular file "
                                "(remove it)", output, path, sk_file_kind(a.st_mode));
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            char holder[256] = "";
            ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
            close(fd);
            if (n > 0) holder[n] = 0;
            for (char *p = holder; *p; p++)
                if (*p == '\n' || (unsigned char)*p < 0x20) *p = ' ';
            for (size_t k = strlen(holder); k && holder[k - 1] == ' ';) holder[--k] = 0;
            if (e == EWOULDBLOCK)
                return sk_error_set(err, SK_E_USAGE, "%s is being written by another run (%s): two "
                                    "runs with one output would mix their shards", output,
                                    holder[0] ? holder : "lock held");
            return sk_error_set(err, SK_E_IO, "%s: cannot lock %s: %s", output, path, strerror(e));
        }
        /* a run that just finished may have removed the file we opened:
         * the lock is only good on the file the name points to now */
        if (lstat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            char line[256];
            int len = snprintf(line, sizeof line, "pid %ld: shardkit %s\n", (long)getpid(), what);
            if (ftruncate(fd, 0) == 0 && len > 0) {
                ssize_t w = pwrite(fd, line, (size_t)len, 0);
                (void)w; /* the text only helps the message of a second run */
            }
            *out_fd = fd;
            remove_stale_tmps(dir);
            return SK_OK;
        }
        close(fd);
    }
    return sk_error_set(err, SK_E_IO, "%s: its run lock %s keeps changing", output, path);
}

void sk_out_unlock(const char *output, int fd)
{
    if (fd < 0) return;
    char path[4200];
    struct stat a, b;
    /* ours (created or taken over under the lock): not litter for the
     * user; but only while the name is still that file */
    if (!lock_name(output, path, sizeof path) && fstat(fd, &a) == 0 && lstat(path, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        unlink(path);
    close(fd);
}

int sk_out_write_iov(const char *path, unsigned flags, struct iovec *iov, int iovcnt, sk_error *err)
{
    sk_out *o;
    SK_GUARD(sk_out_open_as(&o, path, flags, err));
    int rc = sk_writev_all(sk_out_fd(o), iov, iovcnt, sk_out_name(o), err);
    if (rc) {
        sk_out_abort(o); /* what was at path is still there */
        return rc;
    }
    return sk_out_commit(o, err);
}
