/*
 * catalog_walk.c - the catalog's inputs found on the local file system:
 * directory trees walked whole (sizes read by catalog_group.c) or lazily
 * in key order a window at a time, and lists of paths (--files-from).
 */
#include "pack/catalog_int.h"
#include "format/tar.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ----------------------------------------------------------------- walk */

enum ent_kind { ENT_SKIP, ENT_FILE, ENT_DIR };

/* What entry name of directory dirfd (rel, its path) is to pack, with the
 * checks and warnings both walks make: a regular file (*sized: st_size is
 * set; a d_type of DT_REG is taken without a stat), a directory (st: its
 * identity), or nothing (warned, or reported through sk_catalog_problem,
 * whose result is returned). */
static int classify(sk_catalog *c, uint16_t src, int dirfd, const char *rel, size_t rel_len,
                    const char *name, unsigned char d_type, struct stat *st, int *sized,
                    enum ent_kind *kind, sk_error *err)
{
    *kind = ENT_SKIP;
    *sized = 0;
    if (d_type == DT_REG) {
        *kind = ENT_FILE;
        return SK_OK;
    }
    if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) != 0)
        return sk_catalog_problem(c, err, SK_E_IO, "%s/%.*s%s: %s", c->srcs[src].label,
                                  (int)rel_len, rel, name, strerror(errno));
    if (S_ISLNK(st->st_mode)) {
        if (!c->follow_symlinks) {
            sk_catalog_warn(c, "%s/%.*s%s: symbolic link skipped (use --follow-symlinks)",
                 c->srcs[src].label, (int)rel_len, rel, name);
            return SK_OK;
        }
        if (fstatat(dirfd, name, st, 0) != 0)
            return sk_catalog_problem(c, err, SK_E_INPUT, "%s/%.*s%s: broken symbolic link: %s",
                                      c->srcs[src].label, (int)rel_len, rel, name,
                                      strerror(errno));
    }
    if (S_ISREG(st->st_mode)) {
        *kind = ENT_FILE;
        *sized = 1;
    } else if (S_ISDIR(st->st_mode)) {
        if (rel_len + strlen(name) + 1 > SK_TAR_NAME_MAX)
            return sk_catalog_problem(c, err, SK_E_INPUT, "%s/%.*s%s: path too long",
                                      c->srcs[src].label, (int)rel_len, rel, name);
        *kind = ENT_DIR;
    } else {
        sk_catalog_warn(c, "%s/%.*s%s: not a regular file (device, socket or fifo) skipped",
             c->srcs[src].label, (int)rel_len, rel, name);
    }
    return SK_OK;
}

/* Opens directory fd for listing, on a duplicate so that fd stays the
 * caller's (both walks list, then open subdirectories relative to fd). */
static int list_open(sk_catalog *c, uint16_t src, int fd, const char *rel, size_t rel_len,
                     DIR **out, sk_error *err)
{
    int fd2 = dup(fd);
    *out = fd2 >= 0 ? fdopendir(fd2) : NULL;
    if (*out) return SK_OK;
    if (fd2 >= 0) close(fd2);
    return sk_catalog_problem(c, err, SK_E_IO, "%s/%.*s: cannot read directory: %s",
                              c->srcs[src].label, (int)rel_len, rel, strerror(errno));
}

/* The next entry but "." and "..".  errno is cleared before each readdir,
 * so that NULL with errno set is a read failure, whatever the loop's body
 * (a problem skipped under --on-error skip) left in errno. */
static struct dirent *list_next(DIR *d)
{
    struct dirent *de;
    while ((errno = 0, de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) break;
    return de;
}

/* Closes the listing; a loop that ended on a readdir failure (rc still OK,
 * errno set by list_next) becomes that failure, named. */
static int list_close(sk_catalog *c, uint16_t src, DIR *d, const char *rel, size_t rel_len,
                      int rc, sk_error *err)
{
    if (!rc && errno)
        rc = sk_catalog_problem(c, err, SK_E_IO, "%s/%.*s: reading directory failed: %s",
                                c->srcs[src].label, (int)rel_len, rel, strerror(errno));
    closedir(d);
    return rc;
}

struct ancestor { dev_t dev; ino_t ino; const struct ancestor *up; };

static int walk(sk_catalog *c, uint16_t src, int dirfd, char *rel, size_t rel_len,
                const struct ancestor *up, sk_error *err)
{
    uint32_t dir_id;
    SK_GUARD(sk_catalog_intern_dir(c, rel, rel_len, &dir_id, err));
    DIR *d;
    SK_GUARD(list_open(c, src, dirfd, rel, rel_len, &d, err));
    int rc = SK_OK;
    struct dirent *de;
    while (!rc && (de = list_next(d))) {
        const char *name = de->d_name;
        struct stat st;
        int sized;
        enum ent_kind kind;
        rc = classify(c, src, dirfd, rel, rel_len, name, de->d_type, &st, &sized, &kind, err);
        if (rc || kind == ENT_SKIP) continue;
        if (kind == ENT_FILE) {
            /* unsized: sized later, by several threads at once (size_items) */
            size_t before = c->nitems;
            rc = sk_catalog_add_item(c, src, dir_id, name, sized ? (uint64_t)st.st_size : 0, 0, err);
            if (!sized && c->nitems > before) c->items[c->nitems - 1].flags |= SK_ITEM_UNSIZED;
            continue;
        }
        int loop = 0;
        for (const struct ancestor *a = up; a; a = a->up)
            if (a->dev == st.st_dev && a->ino == st.st_ino) loop = 1;
        if (loop) {
            rc = sk_catalog_problem(c, err, SK_E_INPUT,
                                    "%s/%.*s%s: symbolic link loop (leads back to a parent)",
                                    c->srcs[src].label, (int)rel_len, rel, name);
            continue;
        }
        size_t nl = strlen(name);
        int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub < 0) {
            rc = sk_catalog_problem(c, err, SK_E_IO, "%s/%.*s%s: cannot open directory: %s",
                                    c->srcs[src].label, (int)rel_len, rel, name,
                                    strerror(errno));
            continue;
        }
        memcpy(rel + rel_len, name, nl);
        rel[rel_len + nl] = '/';
        struct ancestor me = {st.st_dev, st.st_ino, up};
        rc = walk(c, src, sub, rel, rel_len + nl + 1, &me, err);
        close(sub);
    }
    rc = list_close(c, src, d, rel, rel_len, rc, err);
    return rc;
}

static int walk_root(sk_catalog *c, uint16_t src, int rootfd, const char *prefix, sk_error *err)
{
    char rel[SK_TAR_NAME_MAX + 2];
    size_t n = strlen(prefix);
    SK_FAIL_IF(n > SK_TAR_NAME_MAX, err, SK_E_INPUT, "%s: path too long", prefix);
    memcpy(rel, prefix, n);
    struct stat st;
    SK_FAIL_IF(fstat(rootfd, &st) != 0, err, SK_E_IO, "%s: %s", c->srcs[src].label, strerror(errno));
    struct ancestor me = {st.st_dev, st.st_ino, NULL};
    return walk(c, src, rootfd, rel, n, &me, err);
}

int sk_catalog_add_dir(sk_catalog *c, const char *dir, sk_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    uint16_t src;
    int rc = sk_catalog_add_source(c, fd, 0, dir, &src, err);
    if (rc) { close(fd); return rc; }
    return walk_root(c, src, fd, "", err);
}

/* ------------------------------------------------- the walk in key order */

/* A directory source can be walked lazily, in the catalog's own order, a
 * window of items at a time (sk_catalog_next_window), so a run over
 * millions of files never holds all their names: only the entries of the
 * directories on the current path, one level each.
 *
 * Why one directory at a time gives the global order: an item's key is
 * "dir/" + the basename up to its first dot, compared bytewise.  Every key
 * under a subdirectory "s" starts with "s/", so the keys of that subtree
 * are contiguous in the order, and where they fall among the directory's
 * own files is decided by comparing "s/" with each file's key (a key has
 * no '/', so it can neither equal "s/" nor continue it).  So a directory's
 * entries are sorted on that token (a file's key, a subdirectory's name
 * and '/'), then extension and name as item_cmp does, and a subdirectory
 * is listed when the walk reaches it.  Several sources are merged on
 * their next items. */
enum { SW_FILE, SW_SIZED, SW_DIR };

struct swent {
    uint64_t size;  /* SW_SIZED: a regular file reached through a symbolic link */
    uint32_t name;  /* offset in the level's names; a directory's ends in '/' */
    uint16_t len;   /* name length ('/' excluded) */
    uint16_t tok;   /* bytes compared first: key, or directory name and '/' */
    uint8_t kind;
};

struct swlevel {
    int fd;              /* this directory (the source's own at the root) */
    size_t rel_len;      /* "a/b/": its path from the source, in the walker's rel */
    char *names;
    size_t nlen, ncap;
    struct swent *e;
    size_t n, cap, next;
    dev_t dev;
    ino_t ino;
    uint32_t dir_id;     /* interned in window dir_gen */
    uint64_t dir_gen;
};

struct sk_swalk {
    struct swlevel *lv;
    size_t depth, cap;
    int started;
    char rel[SK_TAR_NAME_MAX + 2];
};

/* A file's extension: what follows its key's dot (nothing for a name
 * with no key, which add_item refuses when the walk reaches it). */
static size_t swent_ext(const struct swent *e, const char *name, const char **ext)
{
    size_t at = e->tok < e->len ? (size_t)e->tok + 1 : e->len;
    *ext = name + at;
    return (size_t)e->len - at;
}

static int swent_cmp(const void *pa, const void *pb, void *ctx)
{
    const struct swent *a = pa, *b = pb;
    const char *names = ctx, *na = names + a->name, *nb = names + b->name, *xa, *xb;
    size_t n = a->tok < b->tok ? a->tok : b->tok;
    int d = memcmp(na, nb, n);
    if (d) return d;
    if (a->tok != b->tok) return a->tok < b->tok ? -1 : 1;
    /* the same key: two files (a directory's token ends in '/', a key never does) */
    size_t la = swent_ext(a, na, &xa), lb = swent_ext(b, nb, &xb);
    d = sk_ext_cmp(xa, la, xb, lb);
    return d ? d : strcmp(na, nb);
}

static int sw_add_ent(struct swlevel *L, const char *name, size_t len, int kind, uint64_t size,
                      sk_error *err)
{
    size_t need = L->nlen + len + 2;
    SK_FAIL_IF(need > UINT32_MAX, err, SK_E_NOMEM, "over 4 GiB of names in one directory");
    SK_GUARD(sk_grow((void **)&L->names, &L->ncap, need, 1, err));
    SK_GUARD(sk_grow((void **)&L->e, &L->cap, L->n + 1, sizeof *L->e, err));
    struct swent *e = &L->e[L->n++];
    e->name = (uint32_t)L->nlen;
    e->len = (uint16_t)len;
    e->kind = (uint8_t)kind;
    e->size = size;
    memcpy(L->names + L->nlen, name, len);
    if (kind == SW_DIR) {
        L->names[L->nlen + len] = '/';
        L->names[L->nlen + len + 1] = 0;
        e->tok = (uint16_t)(len + 1);
        L->nlen += len + 2;
    } else {
        size_t key_len, ext_off;
        L->names[L->nlen + len] = 0;
        /* a name with no key sorts on the whole name; add_item refuses it */
        e->tok = sk_sample_split(name, len, &key_len, &ext_off) == SK_OK ? (uint16_t)key_len
                                                                          : (uint16_t)len;
        L->nlen += len + 1;
    }
    return SK_OK;
}

/* Lists directory L (its fd open, rel its path) into sorted entries, with
 * the same checks and warnings as walk() makes of each entry. */
static int sw_list(sk_catalog *c, uint16_t src, struct sk_swalk *w, struct swlevel *L,
                   sk_error *err)
{
    const char *rel = w->rel;
    size_t rel_len = L->rel_len;
    DIR *d;
    SK_GUARD(list_open(c, src, L->fd, rel, rel_len, &d, err));
    int rc = SK_OK;
    struct dirent *de;
    while (!rc && (de = list_next(d))) {
        const char *name = de->d_name;
        size_t nl = strlen(name);
        struct stat st;
        if (nl > UINT16_MAX - 2) { /* longer than any file system's; add_item words it */
            rc = sk_catalog_problem(c, err, SK_E_INPUT, "%s/%.*s%s: a component longer than %d bytes",
                                    c->srcs[src].label, (int)rel_len, rel, name, SK_NAME_COMPONENT_MAX);
            continue;
        }
        int sized;
        enum ent_kind kind;
        rc = classify(c, src, L->fd, rel, rel_len, name, de->d_type, &st, &sized, &kind, err);
        if (rc || kind == ENT_SKIP) continue;
        if (kind == ENT_FILE) /* unsized: sized when opened */
            rc = sw_add_ent(L, name, nl, sized ? SW_SIZED : SW_FILE,
                            sized ? (uint64_t)st.st_size : 0, err);
        else
            rc = sw_add_ent(L, name, nl, SW_DIR, 0, err);
    }
    rc = list_close(c, src, d, rel, rel_len, rc, err);
    if (!rc && L->n > 1) qsort_r(L->e, L->n, sizeof *L->e, swent_cmp, L->names);
    return rc;
}

/* Pushes directory fd (ours to close unless it is the source's) as the
 * next level, at path w->rel[0..rel_len), and lists it. */
static int sw_push(sk_catalog *c, uint16_t src, struct sk_swalk *w, int fd, size_t rel_len,
                   sk_error *err)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        if (fd != c->srcs[src].fd) close(fd);
        return sk_error_set(err, SK_E_IO, "%s/%.*s: %s", c->srcs[src].label, (int)rel_len, w->rel,
                            strerror(e));
    }
    for (size_t i = 0; i < w->depth; i++)
        if (w->lv[i].dev == st.st_dev && w->lv[i].ino == st.st_ino) {
            close(fd); /* never the root's: the root has no parent to lead back to */
            return sk_catalog_problem(c, err, SK_E_INPUT,
                                      "%s/%.*s: symbolic link loop (leads back to a parent)",
                                      c->srcs[src].label, (int)rel_len - 1, w->rel);
        }
    if (w->depth == w->cap) { /* new levels start empty: their buffers grow as used */
        size_t cap = w->cap ? w->cap * 2 : 8;
        struct swlevel *lv = realloc(w->lv, cap * sizeof *lv);
        if (!lv) {
            if (fd != c->srcs[src].fd) close(fd);
            return sk_error_set(err, SK_E_NOMEM, "out of memory");
        }
        memset(lv + w->cap, 0, (cap - w->cap) * sizeof *lv);
        w->lv = lv;
        w->cap = cap;
    }
    struct swlevel *L = &w->lv[w->depth];
    /* a level's buffers are kept for the next directory at that depth */
    L->fd = fd;
    L->rel_len = rel_len;
    L->nlen = L->n = L->next = 0;
    L->dev = st.st_dev;
    L->ino = st.st_ino;
    L->dir_gen = 0;
    w->depth++;
    return sw_list(c, src, w, L, err);
}

static void sw_pop(sk_catalog *c, uint16_t src, struct sk_swalk *w)
{
    struct swlevel *L = &w->lv[--w->depth];
    if (L->fd >= 0 && L->fd != c->srcs[src].fd) close(L->fd);
    L->fd = -1;
}

/* The walker's next file (NULL when it is done), descending into the
 * directories it passes on the way. */
static int sw_head(sk_catalog *c, uint16_t src, struct sk_swalk *w, struct swent **out,
                   sk_error *err)
{
    *out = NULL;
    if (!w->started) {
        w->started = 1;
        SK_GUARD(sw_push(c, src, w, c->srcs[src].fd, 0, err));
    }
    while (w->depth) {
        struct swlevel *L = &w->lv[w->depth - 1];
        if (L->next == L->n) {
            sw_pop(c, src, w);
            continue;
        }
        struct swent *e = &L->e[L->next];
        if (e->kind != SW_DIR) {
            *out = e;
            return SK_OK;
        }
        L->next++;
        /* rel becomes this directory's path, "a/b/" */
        memcpy(w->rel + L->rel_len, L->names + e->name, (size_t)e->len + 1);
        size_t rl = L->rel_len + e->len + 1;
        int sub = openat(L->fd, L->names + e->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sub < 0) {
            SK_GUARD(sk_catalog_problem(c, err, SK_E_IO, "%s/%.*s: cannot open directory: %s",
                                        c->srcs[src].label, (int)rl - 1, w->rel, strerror(errno)));
            continue;
        }
        SK_GUARD(sw_push(c, src, w, sub, rl, err));
    }
    return SK_OK;
}

void sk_catalog_swalk_free(sk_catalog *c, uint16_t src, struct sk_swalk *w)
{
    if (!w) return;
    while (w->depth) sw_pop(c, src, w);
    for (size_t i = 0; i < w->cap; i++) free(w->lv[i].names), free(w->lv[i].e);
    free(w->lv);
    free(w);
}

int sk_catalog_add_dir_lazy(sk_catalog *c, const char *dir, sk_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, SK_E_IO, "%s: cannot open directory: %s", dir, strerror(errno));
    uint16_t src;
    int rc = sk_catalog_add_source(c, fd, 0, dir, &src, err);
    if (rc) { close(fd); return rc; }
    c->srcs[src].lazy = calloc(1, sizeof *c->srcs[src].lazy);
    SK_FAIL_IF(!c->srcs[src].lazy, err, SK_E_NOMEM, "out of memory");
    return SK_OK;
}

int sk_catalog_all_lazy(const sk_catalog *c)
{
    for (size_t i = 0; i < c->nsrcs; i++)
        if (!c->srcs[i].lazy) return 0;
    return c->nsrcs > 0;
}

/* Here, beside the walks it frees first, so that catalog.c, which the
 * walks add items through, needs nothing of this file. */
void sk_catalog_release(sk_catalog *c)
{
    for (size_t i = 0; i < c->nsrcs; i++) {
        sk_catalog_swalk_free(c, (uint16_t)i, c->srcs[i].lazy);
        if (c->srcs[i].fd >= 0) close(c->srcs[i].fd);
        free(c->srcs[i].label);
        free(c->srcs[i].base);
    }
    free(c->srcs);
    free(c->items);
    free(c->arena);
    free(c->dirs);
    free(c->dir_lens);
    free(c->dir_hash);
    free(c->samples);
    if (c->env_ready) sk_store_env_release(&c->env);
    memset(c, 0, sizeof *c);
}

int sk_catalog_walk_lazy(sk_catalog *c, sk_error *err)
{
    for (size_t i = 0; i < c->nsrcs; i++) {
        if (!c->srcs[i].lazy) continue;
        sk_catalog_swalk_free(c, (uint16_t)i, c->srcs[i].lazy);
        c->srcs[i].lazy = NULL;
        SK_GUARD(walk_root(c, (uint16_t)i, c->srcs[i].fd, "", err));
    }
    return SK_OK;
}

/* item_cmp for the next files of two walkers (sources sa < sb). */
static int sw_head_cmp(const struct sk_swalk *a, const struct swent *ea, const struct sk_swalk *b,
                       const struct swent *eb)
{
    const struct swlevel *la = &a->lv[a->depth - 1], *lb = &b->lv[b->depth - 1];
    const char *na = la->names + ea->name, *nb = lb->names + eb->name;
    int d = sk_catalog_cmp2(a->rel, la->rel_len, na, ea->tok, b->rel, lb->rel_len, nb, eb->tok);
    const char *xa, *xb;
    if (!d) {
        size_t xl = swent_ext(ea, na, &xa), yl = swent_ext(eb, nb, &xb);
        d = sk_ext_cmp(xa, xl, xb, yl);
    }
    return d ? d : -1; /* then by source: a's is the lower */
}

int sk_catalog_next_window(sk_catalog *c, size_t max_items, sk_error *err)
{
    /* the previous window's items and names go; sources stay */
    c->nitems = c->nsamples = 0;
    c->arena_len = c->ndirs = 0;
    if (c->dir_hash) memset(c->dir_hash, 0, c->hash_cap * sizeof *c->dir_hash);
    c->window_gen++;
    c->presorted = 1;
    char last[SK_TAR_NAME_MAX + 1];
    size_t last_len = 0;
    for (;;) {
        struct sk_swalk *bw = NULL;
        struct swent *be = NULL;
        uint16_t bs = 0;
        for (size_t i = 0; i < c->nsrcs; i++) {
            struct sk_swalk *w = c->srcs[i].lazy;
            struct swent *e;
            if (!w) continue;
            SK_GUARD(sw_head(c, (uint16_t)i, w, &e, err));
            if (e && (!bw || sw_head_cmp(bw, be, w, e) > 0)) bw = w, be = e, bs = (uint16_t)i;
        }
        if (!bw) {
            c->walk_done = 1;
            break;
        }
        struct swlevel *L = &bw->lv[bw->depth - 1];
        const char *name = L->names + be->name;
        /* a window ends between samples: at the first new key past max_items */
        if (c->nitems >= max_items &&
            sk_catalog_cmp2(last, last_len, "", 0, bw->rel, L->rel_len, name, be->tok) != 0)
            break;
        if (L->dir_gen != c->window_gen) {
            SK_GUARD(sk_catalog_intern_dir(c, bw->rel, L->rel_len, &L->dir_id, err));
            L->dir_gen = c->window_gen;
        }
        size_t before = c->nitems;
        SK_GUARD(sk_catalog_add_item(c, bs, L->dir_id, name, be->size, 0, err));
        L->next++;
        if (c->nitems == before) continue; /* skipped */
        sk_item *it = &c->items[before];
        if (be->kind == SW_FILE) it->flags |= SK_ITEM_UNSIZED;
        memcpy(last, bw->rel, L->rel_len);
        memcpy(last + L->rel_len, name, it->key_end);
        last_len = L->rel_len + it->key_end;
    }
    return SK_OK;
}


static int add_path(sk_catalog *c, uint16_t src, int rootfd, const char *raw, sk_error *err)
{
    char path[SK_TAR_NAME_MAX + 2];
    if (sk_catalog_clean_path(raw, path, sizeof path) != 0)
        return sk_catalog_problem(c, err, SK_E_INPUT,
                                  "%s: not a usable member name (empty, '..' or too long)", raw);
    struct stat st;
    int flags = c->follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW;
    /* An absolute path opens as given; its member name drops the slash. */
    if (fstatat(rootfd, raw, &st, flags) != 0)
        return sk_catalog_problem(c, err, SK_E_IO, "%s: %s", raw, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        sk_catalog_warn(c, "%s: symbolic link skipped (use --follow-symlinks)", raw);
        return SK_OK;
    }
    if (S_ISDIR(st.st_mode)) {
        /* Walked through its own fd, but its files keep the list's source:
         * they open by member name ("listed/dir/x.jpg") from the root. */
        int fd = openat(rootfd, raw, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return sk_catalog_problem(c, err, SK_E_IO, "%s: %s", raw, strerror(errno));
        size_t n = strlen(path);
        path[n] = '/';
        path[n + 1] = 0;
        int rc = walk_root(c, src, fd, path, err);
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        sk_catalog_warn(c, "%s: not a regular file (device, socket or fifo) skipped", raw);
        return SK_OK;
    }
    char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path + 1) : 0;
    uint32_t dir_id;
    SK_GUARD(sk_catalog_intern_dir(c, path, dlen, &dir_id, err));
    /* Items open by their member name relative to the source's fd, so an
     * absolute listed path gets a source of its own rooted at "/". */
    return sk_catalog_add_item(c, src, dir_id, path + dlen, (uint64_t)st.st_size, 0, err);
}

int sk_catalog_add_list(sk_catalog *c, FILE *list, const char *list_name, const char *root,
                        int nul_separated, sk_error *err)
{
    int rootfd = open(root ? root : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SK_FAIL_IF(rootfd < 0, err, SK_E_IO, "%s: cannot open directory: %s", root ? root : ".",
               strerror(errno));
    int slashfd = -1;
    uint16_t src, abs_src = 0;
    int rc = sk_catalog_add_source(c, rootfd, 0, root ? root : ".", &src, err);
    if (rc) { close(rootfd); return rc; }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while (!rc && (n = getdelim(&line, &cap, nul_separated ? '\0' : '\n', list)) >= 0) {
        if (n > 0 && line[n - 1] == (nul_separated ? '\0' : '\n')) line[--n] = 0;
        if (!nul_separated && n > 0 && line[n - 1] == '\r') line[--n] = 0;
        if (n == 0) continue;
        if (line[0] == '/') {
            if (slashfd < 0) {
                slashfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (slashfd < 0 || (rc = sk_catalog_add_source(c, slashfd, 0, "/", &abs_src, err))) {
                    if (slashfd >= 0) close(slashfd);
                    rc = rc ? rc : sk_error_set(err, SK_E_IO, "/: %s", strerror(errno));
                    break;
                }
            }
            rc = add_path(c, abs_src, slashfd, line, err);
        } else {
            rc = add_path(c, src, rootfd, line, err);
        }
    }
    if (!rc && ferror(list)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", list_name);
    free(line);
    return rc;
}
