/*
 * tar_out.c - samples as one tar stream on a file descriptor, in large
 * writes (sk_reader_tar_out_*, for `shardkit cat` into a pipe).
 *
 * sk_reader_write_tar makes three write()s a member (header, data,
 * padding): on a pipe each one is a syscall and often a wakeup of the
 * consumer, and they cost more than the bytes.  Here members collect in a
 * 1 MiB buffer that goes out in one write; a member too large for it goes
 * out from where it lies (no copy).  sk_reader_write_tar is the same code
 * with no buffer (one sample, written through), so the bytes are the same.
 */
#include "core/internal.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define OUT_CAP (1u << 20)

struct sk_reader_tar_out {
    int fd;
    char *name;
    unsigned char *buf; /* NULL: every piece is written through */
    size_t len;
};

int sk_reader_tar_out_open(sk_reader_tar_out **out, int fd, const char *fd_name, sk_error *err)
{
    *out = NULL;
    sk_reader_tar_out *t = calloc(1, sizeof *t);
    if (t) t->buf = malloc(OUT_CAP);
    if (t) t->name = strdup(fd_name ? fd_name : "output");
    if (!t || !t->buf || !t->name) {
        if (t) free(t->buf), free(t->name);
        free(t);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    t->fd = fd;
    /* A pipe of 1 MiB (the unprivileged limit) takes a buffer in one
     * write, and its reader wakes once per buffer, not per 64 KiB. */
    struct stat sb;
    if (!fstat(fd, &sb) && S_ISFIFO(sb.st_mode)) (void)fcntl(fd, F_SETPIPE_SZ, (int)OUT_CAP);
    *out = t;
    return SK_OK;
}

static int flush(sk_reader_tar_out *t, sk_error *err)
{
    if (!t->len) return SK_OK;
    size_t n = t->len;
    t->len = 0;
    return sk_write_all(t->fd, t->buf, n, t->name, err);
}

/* Appends n bytes, through the buffer or (large) straight out. */
static int put(sk_reader_tar_out *t, const void *p, size_t n, sk_error *err)
{
    if (!t->buf) return sk_write_all(t->fd, p, n, t->name, err);
    if (t->len + n > OUT_CAP) SK_GUARD(flush(t, err));
    if (n > OUT_CAP / 2) return sk_write_all(t->fd, p, n, t->name, err);
    memcpy(t->buf + t->len, p, n);
    t->len += n;
    return SK_OK;
}

int sk_reader_tar_out_add(sk_reader_tar_out *t, const sk_reader_sample *s, sk_error *err)
{
    static const unsigned char zeros[SK_TAR_BLOCK];
    unsigned char hdr[SK_TAR_HEADER_MAX];
    char name[SK_TAR_NAME_MAX + 1];
    for (size_t i = 0; i < s->nmembers; i++) {
        const sk_reader_member *m = &s->members[i];
        SK_FAIL_IF(s->key_len + 1 + m->ext_len > SK_TAR_NAME_MAX, err, SK_E_INPUT,
                   "%s: member name of sample '%s' is too long", s->shard_url, s->key);
        memcpy(name, s->key, s->key_len);
        name[s->key_len] = '.';
        memcpy(name + s->key_len + 1, m->ext, m->ext_len);
        size_t nl = s->key_len + 1 + m->ext_len;
        size_t hl = sk_tar_header(hdr, name, nl, m->size, 0);
        SK_GUARD(put(t, hdr, hl, err));
        SK_GUARD(put(t, m->data, (size_t)m->size, err));
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        if (pad) SK_GUARD(put(t, zeros, pad, err));
    }
    return SK_OK;
}

int sk_reader_write_tar(const sk_reader_sample *s, int fd, const char *fd_name, sk_error *err)
{
    sk_reader_tar_out direct = {fd, (char *)fd_name, NULL, 0};
    return sk_reader_tar_out_add(&direct, s, err);
}

int sk_reader_write_tar_end(int fd, const char *fd_name, sk_error *err)
{
    sk_reader_tar_out direct = {fd, (char *)fd_name, NULL, 0};
    return sk_reader_tar_out_finish(&direct, err);
}

int sk_reader_tar_out_finish(sk_reader_tar_out *t, sk_error *err)
{
    static const unsigned char zeros[2 * SK_TAR_BLOCK];
    SK_GUARD(put(t, zeros, sizeof zeros, err));
    return flush(t, err);
}

void sk_reader_tar_out_free(sk_reader_tar_out *t)
{
    if (!t) return;
    free(t->buf);
    free(t->name);
    free(t);
}
