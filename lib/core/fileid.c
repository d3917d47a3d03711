/*
 * fileid.c - the files a run reads, by identity (device and inode), so that
 * no output of the run is written over one of them: a manifest, an index,
 * a wids or SageMaker export or a shard named like an input would replace
 * the input with JSON (or with new shards built from it) before it is
 * read.  Names are no proof (links, "./x", "a/../x"), identity is; each
 * input is stat()ed once and looked up by binary search, so a run of
 * thousands of shards checks its few outputs in microseconds.
 */
#include "core/internal.h"

#include <stdlib.h>
#include <sys/stat.h>

struct sk_fileid {
    dev_t dev;
    ino_t ino;
    const char *name;
};

static int id_cmp(const void *a, const void *b)
{
    const struct sk_fileid *x = a, *y = b;
    if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
    if (x->ino != y->ino) return x->ino < y->ino ? -1 : 1;
    return 0;
}

int sk_fileids_add(sk_fileids *s, const char *path, sk_error *err)
{
    struct stat st;
    if (!path || !strcmp(path, "-") || strstr(path, "://") || stat(path, &st) != 0) return SK_OK;
    SK_GUARD(sk_grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v, err));
    s->v[s->n++] = (struct sk_fileid){st.st_dev, st.st_ino, path};
    s->sorted = 0;
    return SK_OK;
}

const char *sk_fileids_find(sk_fileids *s, const char *path)
{
    struct stat st;
    if (!s->n || !path || !strcmp(path, "-") || strstr(path, "://") || stat(path, &st) != 0)
        return NULL;
    if (!s->sorted) {
        qsort(s->v, s->n, sizeof *s->v, id_cmp);
        s->sorted = 1;
    }
    struct sk_fileid key = {st.st_dev, st.st_ino, NULL};
    const struct sk_fileid *hit = bsearch(&key, s->v, s->n, sizeof *s->v, id_cmp);
    return hit ? hit->name : NULL;
}

int sk_fileids_refuse(sk_fileids *s, const char *output, const char *what, sk_error *err)
{
    const char *in = sk_fileids_find(s, output);
    if (!in) return SK_OK;
    if (!strcmp(in, output))
        return sk_error_set(err, SK_E_USAGE, "%s (%s) is also an input of this run: writing it "
                            "would replace the input; name another file", output, what);
    return sk_error_set(err, SK_E_USAGE, "%s (%s) is the input %s (the same file): writing it "
                        "would replace the input; name another file", output, what, in);
}

void sk_fileids_free(sk_fileids *s)
{
    free(s->v);
    *s = (sk_fileids){0};
}
