/*
 * sink_file.c - the local kinds of sink (see sink.h): a file written under
 * a temporary name and renamed when complete, and a caller's descriptor.
 * Also sk_sink_open, which picks the kind from the output name, and the
 * same choice for a manifest written whole (sk_sink_put_manifest).
 */
#include "io/io.h"
#include "io/sink.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_sink {
    sk_sink base;
    char *path, *index_path;
    sk_out *out; /* a shard file (core's temporary name, renamed at publish); NULL for a descriptor */
    int fd;      /* out's, or the caller's (never closed) */
};

static void file_free(struct file_sink *f)
{
    sk_out_abort(f->out); /* a shard not published: its temporary file goes */
    free(f->path);
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
    SK_FAIL_IF(shrink && !f->out, err, SK_E_IO,
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
    if (f->out) {
        /* the index first: a shard under its final name always has one */
        if (index) rc = sk_index_builder_write(index, f->index_path, info, err);
        if (!rc) rc = sk_out_commit(f->out, err); /* closed, renamed; freed either way */
        f->out = NULL;
    }
    file_free(f);
    return rc;
}

static void file_abort(sk_sink *s)
{
    file_free((struct file_sink *)s);
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
    f->path = strdup(path);
    size_t n = strlen(path) + 5;
    f->index_path = malloc(n);
    if (!f->path || !f->index_path) {
        file_free(f);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    snprintf(f->index_path, n, "%s.idx", path);
    /* what is already at path (a shard of an earlier run, or a file of
     * the user's) stays until the new shard is complete and renamed over
     * it: a failed run destroys nothing.  A path that is not a regular
     * file (a link, a device, a FIFO, a directory) is refused: neither
     * renamed over nor written through (core's SK_OUT_REGULAR) -- nor is
     * its index sidecar, checked here so that no shard is written first. */
    int rc = sk_out_open_as(&f->out, path, SK_OUT_REGULAR, err);
    if (!rc) rc = sk_out_check_regular(f->index_path, err);
    if (rc) {
        file_free(f);
        return rc;
    }
    f->fd = sk_out_fd(f->out);
    f->base.ops = &file_ops;
    f->base.where = f->path;
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

int sk_sink_put_manifest(sk_s3 *s3, sk_manifest *man, const char *place, unsigned flags, sk_error *err)
{
    return sk_is_s3_url(place) ? sk_sink_s3_put_manifest(s3, man, place, err)
                               : sk_manifest_write_to(man, place, flags, err);
}
