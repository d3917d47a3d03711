/*
 * sink_file.c - the local kinds of sink (see sink.h): a file written under
 * a temporary name and renamed when complete, and a caller's descriptor.
 * Also sk_sink_open, which picks the kind from the output name.
 */
#include "io/sink.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_sink {
    sk_sink base;
    char *path, *tmp, *index_path;
    int fd;
    int own_fd; /* 0 for a caller's descriptor: never closed, nothing renamed */
};

static void file_free(struct file_sink *f)
{
    if (f->own_fd && f->fd >= 0) close(f->fd);
    free(f->path);
    free(f->tmp);
    free(f->index_path);
    free(f);
}

static int file_write(sk_sink *s, const struct iovec *iov, int iovcnt, uint64_t len, sk_error *err)
{
    struct file_sink *f = (struct file_sink *)s;
    struct iovec local[64], *v = local;
    /* writev may consume iov; keep the caller's intact */
    if (iovcnt > (int)SK_ARRAY_LEN(local)) {
        v = sk_xmalloc((size_t)iovcnt * sizeof *v, err);
        if (!v) return SK_E_NOMEM;
    }
    memcpy(v, iov, (size_t)iovcnt * sizeof *v);
    int rc = len ? sk_writev_all(f->fd, v, iovcnt, s->where, err) : SK_OK;
    if (v != local) free(v);
    return rc;
}

static int file_pwrite(sk_sink *s, const struct iovec *iov, int iovcnt, uint64_t off,
                       uint64_t len, sk_error *err)
{
    struct file_sink *f = (struct file_sink *)s;
    struct iovec local[64], *v = local, *cur;
    if (iovcnt > (int)SK_ARRAY_LEN(local)) {
        v = sk_xmalloc((size_t)iovcnt * sizeof *v, err);
        if (!v) return SK_E_NOMEM;
    }
    memcpy(v, iov, (size_t)iovcnt * sizeof *v);
    cur = v;
    int rc = SK_OK;
    while (len && !rc) {
        ssize_t w = pwritev(f->fd, cur, iovcnt, (off_t)off);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) rc = sk_error_set(err, SK_E_IO, "%s: write failed: %s", s->where, strerror(errno));
        else if (w == 0) rc = sk_error_set(err, SK_E_IO, "%s: write failed: wrote nothing", s->where);
        else {
            len -= (uint64_t)w;
            off += (uint64_t)w;
            sk_iov_advance(&cur, &iovcnt, (size_t)w);
        }
    }
    if (v != local) free(v);
    return rc;
}

static int file_truncate(sk_sink *s, uint64_t size, int shrink, sk_error *err)
{
    struct file_sink *f = (struct file_sink *)s;
    SK_FAIL_IF(shrink && !f->own_fd, err, SK_E_IO,
               "%s: cannot drop bytes already written to a stream", s->where);
    SK_FAIL_IF((shrink && ftruncate(f->fd, (off_t)size) != 0) ||
                   lseek(f->fd, (off_t)size, SEEK_SET) < 0,
               err, SK_E_IO, "%s: cannot truncate: %s", s->where, strerror(errno));
    return SK_OK;
}

static int file_publish(sk_sink *s, sk_index_builder *index, const sk_index_shard_info *info,
                        sk_error *err)
{
    struct file_sink *f = (struct file_sink *)s;
    int rc = SK_OK;
    if (f->own_fd) {
        int fd = f->fd;
        f->fd = -1;
        if (close(fd) != 0)
            rc = sk_error_set(err, SK_E_IO, "%s: close failed: %s", f->tmp, strerror(errno));
        if (!rc && index) rc = sk_index_builder_write(index, f->index_path, info, err);
        if (!rc && rename(f->tmp, f->path) != 0)
            rc = sk_error_set(err, SK_E_IO, "%s: rename to %s failed: %s", f->tmp, f->path,
                              strerror(errno));
        if (rc) unlink(f->tmp);
    }
    file_free(f);
    return rc;
}

static void file_abort(sk_sink *s)
{
    struct file_sink *f = (struct file_sink *)s;
    if (f->own_fd) {
        close(f->fd);
        f->fd = -1;
        unlink(f->tmp);
    }
    file_free(f);
}

static const struct sk_sink_ops file_ops = {file_write, file_pwrite, file_truncate, file_publish,
                                            file_abort};
/* a stream cannot be written out of order */
static const struct sk_sink_ops fd_ops = {file_write, NULL, file_truncate, file_publish, file_abort};

int sk_sink_file_open(sk_sink **out, const char *path, sk_error *err)
{
    struct file_sink *f = calloc(1, sizeof *f);
    SK_FAIL_IF(!f, err, SK_E_NOMEM, "out of memory");
    f->fd = -1;
    f->own_fd = 1;
    f->path = strdup(path);
    f->tmp = sk_tmp_name_unique(path, err);
    size_t n = strlen(path) + 5;
    f->index_path = malloc(n);
    if (!f->path || !f->tmp || !f->index_path) {
        file_free(f);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    snprintf(f->index_path, n, "%s.idx", path);
    /* what is already at path (a shard of an earlier run, or a file of
     * the user's) stays until the new shard is complete and renamed over
     * it: a failed run destroys nothing.  A path that is not a regular
     * file (a device, a FIFO, a directory) is never renamed over. */
    struct stat st;
    if (stat(f->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int rc = sk_error_set(err, SK_E_USAGE, "%s exists and is not a regular file: a shard "
                              "will not replace it", f->path);
        file_free(f);
        return rc;
    }
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (f->fd < 0) {
        int rc = sk_error_set(err, SK_E_IO, "%s: cannot create: %s", f->tmp, strerror(errno));
        file_free(f);
        return rc;
    }
    f->base.ops = &file_ops;
    f->base.where = f->tmp;
    *out = &f->base;
    return SK_OK;
}

int sk_sink_open_fd(sk_sink **out, int fd, const char *name, sk_error *err)
{
    struct file_sink *f = calloc(1, sizeof *f);
    SK_FAIL_IF(!f, err, SK_E_NOMEM, "out of memory");
    f->fd = fd;
    if (!(f->path = strdup(name))) {
        file_free(f);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    f->base.ops = &fd_ops;
    f->base.where = f->path;
    *out = &f->base;
    return SK_OK;
}

int sk_sink_open(sk_sink **out, const char *path, const sk_sink_opts *o, sk_error *err)
{
    if (sk_is_s3_url(path)) return sk_sink_s3_open(out, path, o, err);
    return sk_sink_file_open(out, path, err);
}
