/*
 * infiles.c - input shards kept open between the two passes of a shuffle
 * (see infiles.h).  Descriptors stay open up to a share of RLIMIT_NOFILE;
 * past it they are closed oldest-opened first and reopened on demand, the
 * reopened file checked to be the one first read.
 */
#include "io/infiles.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct infile {
    char *path;
    int fd; /* -1: closed for now */
    dev_t dev;
    ino_t ino;
    off_t size;
};

struct sk_infiles {
    struct infile *f;
    size_t n, cap;
    size_t nopen, max_open;
    size_t victim; /* the next one to close when too many are open */
};

int sk_infiles_new(sk_infiles **out, size_t max_open, sk_error *err)
{
    sk_infiles *t = calloc(1, sizeof *t);
    SK_FAIL_IF(!t, err, SK_E_NOMEM, "out of memory");
    /* half the limit: the outputs, indexes and libarchive need theirs */
    struct rlimit rl;
    rlim_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 256;
    if (lim == RLIM_INFINITY || lim > 65536) lim = 65536;
    t->max_open = max_open ? max_open : lim > 64 ? (size_t)(lim / 2) : 16;
    *out = t;
    return SK_OK;
}

void sk_infiles_free(sk_infiles *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) {
        if (t->f[i].fd >= 0) close(t->f[i].fd);
        free(t->f[i].path);
    }
    free(t->f);
    free(t);
}

/* Closes open files, oldest first, until one more may be opened. */
static void make_room(sk_infiles *t)
{
    while (t->nopen >= t->max_open && t->n) {
        struct infile *v = &t->f[t->victim];
        t->victim = (t->victim + 1) % t->n;
        if (v->fd < 0) continue;
        close(v->fd);
        v->fd = -1;
        t->nopen--;
    }
}

int sk_infiles_add(sk_infiles *t, const char *path, int fd, uint32_t *no, sk_error *err)
{
    struct stat sb;
    int rc = SK_OK;
    if (t->n >= UINT32_MAX) rc = sk_error_set(err, SK_E_USAGE, "%s: too many inputs", path);
    else if (fstat(fd, &sb) != 0)
        rc = sk_error_set(err, SK_E_IO, "%s: cannot stat: %s", path, strerror(errno));
    else rc = sk_grow((void **)&t->f, &t->cap, t->n + 1, sizeof *t->f, err);
    char *p = rc ? NULL : strdup(path);
    if (!rc && !p) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) {
        close(fd);
        return rc;
    }
    make_room(t);
    t->f[t->n] = (struct infile){p, fd, sb.st_dev, sb.st_ino, sb.st_size};
    t->nopen++;
    *no = (uint32_t)t->n++;
    return SK_OK;
}

int sk_infiles_fd(sk_infiles *t, uint32_t no, int *fd, const char **path, sk_error *err)
{
    SK_FAIL_IF(no >= t->n, err, SK_E_IO, "input #%u: no such input (a damaged shuffle record)", no);
    struct infile *f = &t->f[no];
    *path = f->path;
    if (f->fd < 0) {
        make_room(t);
        int d = open(f->path, O_RDONLY | O_CLOEXEC);
        SK_FAIL_IF(d < 0, err, SK_E_IO, "%s: cannot open it again to write its samples: %s",
                   f->path, strerror(errno));
        struct stat sb;
        if (fstat(d, &sb) != 0 || sb.st_dev != f->dev || sb.st_ino != f->ino ||
            sb.st_size != f->size) {
            close(d);
            return sk_error_set(err, SK_E_INPUT, "%s: replaced or resized since it was read "
                                "(the shuffle reads its samples twice)", f->path);
        }
        f->fd = d;
        t->nopen++;
    }
    *fd = f->fd;
    return SK_OK;
}
