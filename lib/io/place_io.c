/*
 * place_io.c - a place a user names (sk_place_check's grammar) opened
 * for what a tool does with a file that is not a dataset: a list read
 * line by line (pack --files-from, shard --keys), one object written
 * whole (get -o), an archive copied where libarchive can seek in it
 * (pack --from-archive).  Local paths and '-' keep their plain stdio and
 * sk_out behaviour; s3:// and http(s):// go through the store and sink
 * interfaces like every other remote read and write, so these options
 * take a URL wherever they take a file.
 */
#include "io/io.h"
#include "io/sink.h"
#include "io/store.h"
#include "format/shard_stream.h" /* sk_stream_pread */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A list is names, one a line: a remote "list" with a line longer than
 * this is not one (a tar, an image, a body that never ends a line), and
 * stdio's getline would grow without bound to hold it. */
#define PLACE_LINE_MAX (64u << 10)

/* ------------------------------------------------------------ reading */

struct sk_place_in {
    FILE *f;
    int own;            /* f is ours to fclose (not stdin) */
    sk_store_env env;
    sk_store *st;
    sk_store_seq *q;
    char *url;
    uint64_t pos, line; /* bytes read; bytes since the last '\n' or NUL */
    sk_error err;       /* why a read of the remote stream failed */
};

static ssize_t cookie_read(void *ctx, char *buf, size_t n)
{
    sk_place_in *in = ctx;
    if (in->err.code) return -1;
    size_t got = 0;
    if (in->q->read(in->q, buf, n, &got, &in->err)) return errno = EIO, -1;
    for (size_t i = 0; i < got; i++) {
        if (buf[i] == '\n' || !buf[i]) in->line = 0;
        else if (++in->line > PLACE_LINE_MAX) {
            sk_error_set(&in->err, SK_E_INPUT, "%s: a line of over %u bytes at byte %llu: not a "
                         "list of names (one a line)", in->url, PLACE_LINE_MAX,
                         (unsigned long long)(in->pos + i));
            return errno = EIO, -1;
        }
    }
    in->pos += got;
    return (ssize_t)got;
}

static int cookie_close(void *ctx)
{
    (void)ctx; /* the store is closed by sk_place_in_close */
    return 0;
}

static void in_free(sk_place_in *in)
{
    if (in->q) in->q->close(in->q);
    if (in->st) sk_store_close(in->st);
    sk_store_env_release(&in->env);
    free(in->url);
    free(in);
}

int sk_place_in_open(sk_place_in **out, const char *place, sk_s3 *s3, sk_error *err)
{
    *out = NULL;
    sk_place_in *in = calloc(1, sizeof *in);
    SK_FAIL_IF(!in, err, SK_E_NOMEM, "out of memory");
    sk_store_env_init(&in->env, s3);
    if (!strcmp(place, "-")) {
        in->f = stdin;
    } else if (!sk_store_is_remote(place)) {
        if (!(in->f = fopen(place, "rb"))) {
            int e = errno;
            in_free(in);
            return sk_error_set(err, SK_E_IO, "%s: cannot open: %s", place, strerror(e));
        }
        in->own = 1;
    } else {
        static const cookie_io_functions_t fns = {cookie_read, NULL, NULL, cookie_close};
        int rc = (in->url = strdup(place)) ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
        /* one streaming GET from the first byte: a list is read once, in order */
        if (!rc) rc = sk_store_open(&in->st, place, &in->env, err);
        if (!rc) rc = in->st->ops->open_seq(in->st, 0, &in->q, err);
        if (!rc && !(in->f = fopencookie(in, "r", fns)))
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (rc) {
            in_free(in);
            return rc;
        }
        in->own = 1;
    }
    *out = in;
    return SK_OK;
}

FILE *sk_place_in_file(sk_place_in *in)
{
    return in->f;
}

int sk_place_in_close(sk_place_in *in, int rc, sk_error *err)
{
    if (!in) return rc;
    /* a failed remote read is the cause of whatever the reader made of it
     * ("read failed", a truncated list): its message replaces that one */
    if (in->err.code) rc = (*err = in->err).code;
    if (in->own) fclose(in->f);
    in_free(in);
    return rc;
}

/* ------------------------------------------------------------ writing */

struct sk_place_out {
    sk_out *local; /* a local path or '-' */
    int fd;        /* s3://: the scratch file the bytes wait in */
    char *url;
    sk_s3 *s3;
};

int sk_place_out_open(sk_place_out **out, const char *place, sk_s3 *s3, sk_error *err)
{
    *out = NULL;
    sk_place_out *o = calloc(1, sizeof *o);
    SK_FAIL_IF(!o, err, SK_E_NOMEM, "out of memory");
    o->fd = -1;
    int rc;
    if (place && sk_is_s3_url(place)) {
        /* the bytes wait in an unlinked scratch file ($TMPDIR) and go up
         * in one PUT at commit (parts past the part size): the callers
         * write through a descriptor (a sample's tar is written to one),
         * and S3 shows the object only once it is whole */
        o->s3 = s3;
        rc = s3 ? SK_OK : sk_error_set(err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", place);
        if (!rc && !(o->url = strdup(place))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc && (o->fd = sk_scratch_fd(NULL, "a scratch file", err)) < 0) rc = SK_E_IO;
    } else {
        rc = sk_out_open(&o->local, place, err);
    }
    if (rc) {
        free(o->url);
        free(o);
        return rc;
    }
    *out = o;
    return SK_OK;
}

int sk_place_out_fd(const sk_place_out *o)
{
    return o->local ? sk_out_fd(o->local) : o->fd;
}

const char *sk_place_out_name(const sk_place_out *o)
{
    return o->local ? sk_out_name(o->local) : o->url;
}

static void out_free(sk_place_out *o)
{
    if (o->fd >= 0) close(o->fd);
    free(o->url);
    free(o);
}

int sk_place_out_commit(sk_place_out *o, sk_error *err)
{
    if (o->local) {
        int rc = sk_out_commit(o->local, err);
        out_free(o);
        return rc;
    }
    sk_sink_opts so = {o->s3, 0};
    sk_sink *s = NULL;
    sk_index_shard_info info = {0};
    char buf[64 << 10];
    int rc = sk_sink_open(&s, o->url, &so, err);
    for (size_t got = 1; !rc && got;) {
        rc = sk_stream_pread(o->fd, info.size, buf, sizeof buf, &got, o->url, err);
        if (!rc && got) {
            struct iovec iov = {buf, got};
            info.crc32c = sk_crc32c(info.crc32c, buf, got);
            info.size += got;
            rc = s->ops->write(s, &iov, 1, got, err);
        }
    }
    if (s && rc) s->ops->abort(s);
    else if (s) rc = s->ops->publish(s, NULL, &info, err); /* the object, no index */
    out_free(o);
    return rc;
}

void sk_place_out_abort(sk_place_out *o)
{
    if (!o) return;
    if (o->local) sk_out_abort(o->local);
    out_free(o); /* an s3:// output sent nothing yet */
}

/* --------------------------------------------------- a local copy */

int sk_place_fetch_fd(const char *url, sk_s3 *s3, const char *dir, int *fd, sk_error *err)
{
    sk_store_env env;
    sk_store *st = NULL;
    sk_store_seq *q = NULL;
    char buf[256 << 10];
    *fd = -1;
    sk_store_env_init(&env, s3);
    int rc = sk_store_open(&st, url, &env, err);
    if (!rc) rc = st->ops->open_seq(st, 0, &q, err);
    if (!rc && (*fd = sk_scratch_fd(dir, "a local copy of a remote archive", err)) < 0) rc = SK_E_IO;
    for (size_t got = 1; !rc && got;) {
        if (!(rc = q->read(q, buf, sizeof buf, &got, err)) && got)
            rc = sk_write_all(*fd, buf, got, "a local copy of a remote archive", err);
    }
    if (rc && *fd >= 0) close(*fd), *fd = -1;
    if (q) q->close(q);
    if (st) sk_store_close(st);
    sk_store_env_release(&env);
    return rc;
}
