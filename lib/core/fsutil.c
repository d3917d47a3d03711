/*
 * fsutil.c - file system helpers every writer shares: full writes (one
 * buffer or a gather list) that name the file on failure, the temporary
 * name a file is written under before its rename, and making an output
 * directory.
 */
#include "core/internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

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

char *sk_tmp_name(const char *path, sk_error *err)
{
    /* ".NAME.tmp" in the same directory: hidden from globs, on the same file
     * system so rename() is atomic, and fixed, so a rerun after a kill
     * overwrites a leftover instead of piling up new ones. */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    size_t n = strlen(path) + 8;
    char *tmp = sk_xmalloc(n, err);
    if (!tmp) return NULL;
    snprintf(tmp, n, "%.*s.%s.tmp", (int)dirlen, path, path + dirlen);
    return tmp;
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
