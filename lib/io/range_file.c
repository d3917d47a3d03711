/*
 * range_file.c - a local file as an sk_range_reader: every read is one
 * pread at the offset asked for, so lookups and the reader's index checks
 * never move a shared file position.
 */
#include "core/internal.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_rr {
    int fd;
    char *path;
};

static int file_read_at(void *ctx, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct file_rr *f = ctx;
    *got = 0;
    while (*got < n) {
        ssize_t k = pread(f->fd, (unsigned char *)buf + *got, n - *got, (off_t)(off + *got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed at offset %llu: %s", f->path,
                   (unsigned long long)(off + *got), strerror(errno));
        if (k == 0) break;
        *got += (size_t)k;
    }
    return SK_OK;
}

static void file_close(void *ctx)
{
    struct file_rr *f = ctx;
    close(f->fd);
    free(f->path);
    free(f);
}

int sk_range_reader_file(sk_range_reader *rr, const char *path, sk_error *err)
{
    memset(rr, 0, sizeof *rr);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s",
               path, strerror(errno));
    struct stat st;
    struct file_rr *f = calloc(1, sizeof *f);
    if (!f || fstat(fd, &st) != 0 || !(f->path = strdup(path))) {
        int e = errno, code = f ? SK_E_IO : SK_E_NOMEM;
        free(f);
        close(fd);
        return sk_error_set(err, code, "%s: %s", path, strerror(e));
    }
    f->fd = fd;
    rr->ctx = f;
    rr->read_at = file_read_at;
    rr->size = (uint64_t)st.st_size;
    rr->close = file_close;
    return SK_OK;
}
