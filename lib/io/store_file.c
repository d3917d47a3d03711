/*
 * store_file.c - local stores: a regular file (pread for read_at, so
 * lookups never move a shared file position; sequential reads declared as
 * such, so the kernel reads ahead harder), and '-', a FIFO or a character
 * device as a sequential-only store read once from its start.  The public
 * sk_range_reader_file is a view of the file store.
 */
#include "io/store.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

struct file_store {
    sk_store s;
    int fd;     /* the pipe's is handed to its one sequential reader */
    int seq;    /* '-', a FIFO, a character device: no offsets */
    struct stat st;
};

struct file_seq {
    sk_store_seq q;
    int fd;
    uint64_t pos;
    const char *url;
};

static int file_stat(sk_store *s, sk_store_stat *out, sk_error *err)
{
    struct file_store *f = (struct file_store *)s;
    (void)err;
    memset(out, 0, sizeof *out);
    out->size = f->seq ? UINT64_MAX : (uint64_t)f->st.st_size;
    out->mtime = (int64_t)f->st.st_mtime;
    return SK_OK;
}

static int file_read_at(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct file_store *f = (struct file_store *)s;
    *got = 0;
    while (*got < n) {
        ssize_t k = pread(f->fd, (unsigned char *)buf + *got, n - *got, (off_t)(off + *got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed at offset %llu: %s", s->url,
                   (unsigned long long)(off + *got), strerror(errno));
        if (k == 0) break;
        *got += (size_t)k;
    }
    return SK_OK;
}

static int seq_read(sk_store_seq *q, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct file_seq *f = (struct file_seq *)q;
    for (;;) {
        ssize_t k = read(f->fd, buf, n);
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed at offset %llu: %s", f->url,
                   (unsigned long long)f->pos, strerror(errno));
        *got = (size_t)k;
        f->pos += (uint64_t)k;
        return SK_OK;
    }
}

static void seq_close(sk_store_seq *q)
{
    struct file_seq *f = (struct file_seq *)q;
    if (f->fd >= 0) close(f->fd);
    free(f);
}

static int file_open_seq(sk_store *s, uint64_t off, sk_store_seq **out, sk_error *err)
{
    struct file_store *f = (struct file_store *)s;
    *out = NULL;
    SK_FAIL_IF(f->seq && (off || f->fd < 0), err, SK_E_USAGE,
               "%s: a stream is read once, from its start (asked for offset %llu)", s->url,
               (unsigned long long)off);
    /* Its own descriptor (reads move the position; read_at's pread does
     * not use it); a pipe's is handed over. */
    int fd = f->seq ? f->fd : fcntl(f->fd, F_DUPFD_CLOEXEC, 3);
    SK_FAIL_IF(fd < 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s", s->url,
               strerror(errno));
    if (f->seq) f->fd = -1;
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    if (off && lseek(fd, (off_t)off, SEEK_SET) < 0) {
        int e = errno;
        close(fd);
        return sk_error_set(err, SK_E_IO, "%s: cannot seek to %llu: %s", s->url,
                            (unsigned long long)off, strerror(e));
    }
    struct file_seq *q = calloc(1, sizeof *q);
    if (!q) {
        close(fd);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *q = (struct file_seq){{seq_read, seq_close}, fd, off, s->url};
    *out = &q->q;
    return SK_OK;
}

static void file_close(sk_store *s)
{
    struct file_store *f = (struct file_store *)s;
    if (f->fd >= 0) close(f->fd);
    free(s->url);
    free(f);
}

static const struct sk_store_ops file_ops = {file_stat, file_read_at, file_open_seq, file_close, NULL};
static const struct sk_store_ops pipe_ops = {file_stat, NULL, file_open_seq, file_close, NULL};

int sk_store_file_fd(const sk_store *s)
{
    return s->ops == &file_ops ? ((const struct file_store *)s)->fd : -1;
}

int sk_store_file_open(sk_store **out, const char *path, sk_error *err)
{
    *out = NULL;
    /* "-" is standard input (a duplicate, so closing it leaves fd 0) */
    int fd = !strcmp(path, "-") ? fcntl(0, F_DUPFD_CLOEXEC, 3) : open(path, O_RDONLY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s", path,
               strerror(errno));
    struct file_store *f = calloc(1, sizeof *f);
    if (!f || fstat(fd, &f->st) != 0 || !(f->s.url = strdup(path))) {
        int e = errno, code = f ? SK_E_IO : SK_E_NOMEM;
        free(f);
        close(fd);
        return sk_error_set(err, code, "%s: %s", path, strerror(e));
    }
    f->fd = fd;
    f->seq = !S_ISREG(f->st.st_mode);
    SK_FAIL_IF(S_ISDIR(f->st.st_mode) && (file_close(&f->s), 1), err, SK_E_USAGE,
               "%s: a directory, not a shard", path);
    f->s.ops = f->seq ? &pipe_ops : &file_ops;
    f->s.size_hint = UINT64_MAX;
    f->s.cache_state = -1;
    *out = &f->s;
    return SK_OK;
}

int sk_range_reader_file(sk_range_reader *rr, const char *path, sk_error *err)
{
    sk_store *s;
    memset(rr, 0, sizeof *rr);
    SK_GUARD(sk_store_file_open(&s, path, err));
    sk_store_stat st;
    file_stat(s, &st, NULL);
    if (!s->ops->read_at) { /* a lookup reads at offsets */
        sk_store_close(s);
        return sk_error_set(err, SK_E_USAGE, "%s: not a regular file (a stream cannot be read at offsets)", path);
    }
    sk_store_range_view(s, st.size, rr);
    return SK_OK;
}
