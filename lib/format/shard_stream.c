/*
 * shard_stream.c - one reader of a local shard file as a tar byte stream
 * (plain, libarchive-filtered, or zstd), computing the whole-file CRC32C as
 * it reads; used by the indexer and by verify.  See shard_stream.h.
 */
#include "format/shard_stream.h"

#include "format/libarchive.h"
#include <fcntl.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

int sk_stream_pread(int fd, uint64_t off, void *buf, size_t n, size_t *got, const char *path,
                    sk_error *err)
{
    *got = 0;
    while (*got < n) {
        ssize_t k = pread(fd, (unsigned char *)buf + *got, n - *got, (off_t)(off + *got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed at offset %llu: %s", path,
                   (unsigned long long)(off + *got), strerror(errno));
        if (k == 0) break;
        *got += (size_t)k;
    }
    return SK_OK;
}

/* A file not in the page cache is read ahead with posix_fadvise(WILLNEED),
 * STREAM_AHEAD bytes past the read in STREAM_CHUNK steps: the disk then
 * has many requests in flight, where the kernel's own readahead keeps one
 * window going (measured on the benchmark shards from a cold cache: 2-3x
 * the rate of plain sequential reads; docs/benchmarks.md, "index --fast
 * warm and cold").  Whether it is cold is learnt for free: each read is
 * tried with RWF_NOWAIT first, which fails only when its bytes are not
 * cached. */
#define STREAM_AHEAD ((uint64_t)32 << 20)
#define STREAM_CHUNK ((uint64_t)4 << 20)

static void read_ahead(sk_stream *s)
{
    uint64_t to = s->file_read + STREAM_AHEAD;
    if (s->ra_end < s->file_read) s->ra_end = s->file_read;
    while (to - s->ra_end >= STREAM_CHUNK) { /* advice only: a failure costs speed */
        (void)posix_fadvise(s->fd, (off_t)s->ra_end, (off_t)STREAM_CHUNK, POSIX_FADV_WILLNEED);
        s->ra_end += STREAM_CHUNK;
    }
}

static ssize_t fd_read(sk_stream *s, void *dst, size_t n)
{
    if (s->cold) {
        read_ahead(s);
    } else if (!s->no_nowait) {
        struct iovec v = {dst, n};
        ssize_t k = preadv2(s->fd, &v, 1, -1, RWF_NOWAIT); /* -1: at the file offset */
        if (k > 0) return k;
        if (k < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
            s->no_nowait = 1;
        } else if (k < 0 && errno == EAGAIN) {
            s->cold = 1;
            read_ahead(s);
        } else if (k < 0) {
            return k;
        } /* 0: the end, which read() confirms */
    }
    return read(s->fd, dst, n);
}

/* The next bytes of the file itself, into the whole-file CRC. */
static int file_read(sk_stream *s, void *dst, size_t n, size_t *got, sk_error *err)
{
    for (;;) {
        ssize_t k;
        if (s->src) {
            size_t g = 0;
            SK_GUARD(s->src(s->src_ctx, dst, n, &g, err));
            k = (ssize_t)g;
        } else {
            k = fd_read(s, dst, n);
        }
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: read failed: %s", s->path, strerror(errno));
        s->file_crc = sk_crc32c(s->file_crc, dst, (size_t)k);
        s->file_read += (uint64_t)k;
        *got = (size_t)k;
        return SK_OK;
    }
}

static int zstd_src(void *ctx, void *dst, size_t n, size_t *got, sk_error *err)
{
    return file_read(ctx, dst, n, got, err);
}

static int zstd_src(void *ctx, void *dst, size_t n, size_t *got, sk_error *err);

static int stream_init(sk_stream *s, sk_stream_kind kind, sk_error *err)
{
    const char *path = s->path;
    s->buf = sk_xmalloc(SK_STREAM_BUF, err);
    if (!s->buf) return SK_E_NOMEM;
    if (kind == SK_STREAM_PLAIN) return SK_OK;
    if (kind == SK_STREAM_ZSTD) return sk_zdec_init(&s->z, path, 0, err);
    return sk_unpack_open(&s->up, zstd_src, s, path, SK_STREAM_BUF, err);
}

int sk_stream_open(sk_stream *s, int fd, const char *path, sk_stream_kind kind, sk_error *err)
{
    memset(s, 0, sizeof *s);
    s->fd = fd;
    s->path = path;
    s->kind = kind;
    if (kind == SK_STREAM_PREAD) return SK_OK;
    SK_FAIL_IF(lseek(fd, 0, SEEK_SET) < 0, err, SK_E_IO, "%s: %s", path, strerror(errno));
    return stream_init(s, kind, err);
}

int sk_stream_open_src(sk_stream *s, sk_stream_src src, void *ctx, const char *path,
                       sk_stream_kind kind, sk_error *err)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->src = src;
    s->src_ctx = ctx;
    s->path = path;
    s->kind = kind;
    SK_FAIL_IF(kind == SK_STREAM_PREAD, err, SK_E_USAGE, "%s: not a file: no random access", path);
    return stream_init(s, kind, err);
}

void sk_stream_close(sk_stream *s)
{
    sk_unpack_close(&s->up);
    sk_zdec_free(&s->z);
    free(s->buf);
    s->buf = NULL;
}

/* Fills s->buf with the next bytes of the tar stream; *got = 0 at its end. */
static int produce(sk_stream *s, size_t *got, sk_error *err)
{
    *got = 0;
    if (s->eof) return SK_OK;
    if (s->kind == SK_STREAM_PLAIN) {
        SK_GUARD(file_read(s, s->buf, SK_STREAM_BUF, got, err));
    } else if (s->kind == SK_STREAM_ARCHIVE) {
        SK_GUARD(sk_unpack_read(&s->up, s->buf, SK_STREAM_BUF, got, err));
    } else {
        SK_GUARD(sk_zdec_read(&s->z, zstd_src, s, s->buf, SK_STREAM_BUF, got, err));
    }
    if (*got == 0) s->eof = 1;
    return SK_OK;
}

int sk_stream_read_at(void *ctx, uint64_t pos, void *dst, size_t n, size_t *got, sk_error *err)
{
    sk_stream *s = ctx;
    if (s->kind == SK_STREAM_PREAD) return sk_stream_pread(s->fd, pos, dst, n, got, s->path, err);
    *got = 0;
    SK_FAIL_IF(pos < s->buf_pos - s->back_len, err, SK_E_IO, "%s: internal error: backward read",
               s->path);
    while (*got < n) {
        uint64_t p = pos + *got;
        if (p < s->buf_pos) { /* in the bytes kept from before the last refill */
            size_t k = (size_t)(s->buf_pos - p);
            if (k > n - *got) k = n - *got;
            memcpy((unsigned char *)dst + *got, s->back + (s->back_len - (size_t)(s->buf_pos - p)), k);
            *got += k;
            continue;
        }
        if (p < s->buf_pos + s->len) {
            size_t k = (size_t)(s->buf_pos + s->len - p);
            if (k > n - *got) k = n - *got;
            memcpy((unsigned char *)dst + *got, s->buf + (p - s->buf_pos), k);
            *got += k;
            continue;
        }
        /* keep the last bytes for a walker that looks back a little */
        size_t cap = sizeof s->back;
        if (s->len >= cap) {
            memcpy(s->back, s->buf + s->len - cap, cap);
            s->back_len = cap;
        } else if (s->len) {
            size_t keep = s->back_len + s->len > cap ? cap - s->len : s->back_len;
            memmove(s->back, s->back + s->back_len - keep, keep);
            memcpy(s->back + keep, s->buf, s->len);
            s->back_len = keep + s->len;
        }
        s->buf_pos += s->len;
        s->len = 0;
        size_t k;
        SK_GUARD(produce(s, &k, err));
        if (k == 0) break;
        s->len = k;
    }
    return SK_OK;
}

int sk_stream_drain(sk_stream *s, sk_error *err)
{
    if (s->kind == SK_STREAM_PREAD) return SK_OK;
    /* the buffered tar bytes are spent: read_at finds the end from now on */
    s->buf_pos += s->len;
    s->len = 0;
    s->back_len = 0;
    s->eof = 1;
    for (;;) {
        size_t k;
        SK_GUARD(file_read(s, s->buf, SK_STREAM_BUF, &k, err));
        if (!k) return SK_OK;
    }
}
