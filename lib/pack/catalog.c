/*
 * catalog.c - collects the inputs of a pack run: walks directory trees,
 * reads file lists, spools archive members, then sorts everything by
 * WebDataset key and extension and groups it into samples.
 *
 * Names are held compactly for runs over millions of files: a directory
 * string is stored once and interned, an item holds only its basename and
 * a 32-byte record.  File contents are never held here.
 */
#include "pack/catalog.h"
#include "format/tar.h"

#include "format/libarchive.h"
#include "io/io.h"
#include "io/store.h"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void sk_catalog_init(sk_catalog *c)
{
    memset(c, 0, sizeof *c);
}

struct sk_swalk;
static void sw_free(sk_catalog *c, uint16_t src, struct sk_swalk *w);

void sk_catalog_release(sk_catalog *c)
{
    for (size_t i = 0; i < c->nsrcs; i++) {
        sw_free(c, (uint16_t)i, c->srcs[i].lazy);
        if (c->srcs[i].fd >= 0) close(c->srcs[i].fd);
        free(c->srcs[i].label);
        free(c->srcs[i].bucket), free(c->srcs[i].prefix); /* s3io */
    }
    free(c->srcs);
    free(c->items);
    free(c->arena);
    free(c->dirs);
    free(c->dir_lens);
    free(c->dir_hash);
    free(c->samples);
    memset(c, 0, sizeof *c);
}

int sk_catalog_problem(sk_catalog *c, sk_error *err, int code, const char *fmt, ...)
{
    sk_error e = SK_ERROR_INIT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    if (!c->skip_errors) return sk_error_set(err, code, "%s", e.msg);
    c->skipped++;
    if (c->warn) {
        char line[SK_ERROR_MAX + 16];
        snprintf(line, sizeof line, "skipped: %s", e.msg);
        c->warn(c->warn_ctx, line);
    }
    return SK_OK;
}

static void warn(sk_catalog *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(sk_catalog *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(c->warn, c->warn_ctx, fmt, ap);
    va_end(ap);
    c->skipped++;
}

/* ------------------------------------------------------------ name store */

static int arena_add(sk_catalog *c, const char *s, size_t n, uint32_t *off, sk_error *err)
{
    SK_FAIL_IF(c->arena_len + n + 1 > UINT32_MAX, err, SK_E_NOMEM,
               "over 4 GiB of file names in one run; split it with --part");
    if (c->arena_len + n + 1 > c->arena_cap) {
        size_t cap = c->arena_cap ? c->arena_cap : 1 << 16;
        while (cap < c->arena_len + n + 1) cap *= 2;
        if (cap > UINT32_MAX) cap = UINT32_MAX;
        char *p = sk_xrealloc(c->arena, cap, err);
        if (!p) return SK_E_NOMEM;
        c->arena = p;
        c->arena_cap = cap;
    }
    *off = (uint32_t)c->arena_len;
    memcpy(c->arena + c->arena_len, s, n);
    c->arena[c->arena_len + n] = 0;
    c->arena_len += n + 1;
    return SK_OK;
}

static int hash_insert(sk_catalog *c, uint32_t id)
{
    size_t mask = c->hash_cap - 1;
    size_t h = sk_fnv1a64(c->arena + c->dirs[id], c->dir_lens[id]) & mask;
    while (c->dir_hash[h]) h = (h + 1) & mask;
    c->dir_hash[h] = id + 1;
    return SK_OK;
}

/* The id of directory string d ("" or ending in '/'), added if new. */
static int intern_dir(sk_catalog *c, const char *d, size_t n, uint32_t *id, sk_error *err)
{
    if (c->hash_cap) {
        size_t mask = c->hash_cap - 1;
        for (size_t h = sk_fnv1a64(d, n) & mask; c->dir_hash[h]; h = (h + 1) & mask) {
            uint32_t k = c->dir_hash[h] - 1;
            if (c->dir_lens[k] == n && !memcmp(c->arena + c->dirs[k], d, n)) {
                *id = k;
                return SK_OK;
            }
        }
    }
    if (c->ndirs == c->cap_dirs) {
        size_t cap = c->cap_dirs ? c->cap_dirs * 2 : 256;
        uint32_t *a = sk_xrealloc(c->dirs, cap * sizeof *a, err);
        if (!a) return SK_E_NOMEM;
        c->dirs = a;
        uint32_t *b = sk_xrealloc(c->dir_lens, cap * sizeof *b, err);
        if (!b) return SK_E_NOMEM;
        c->dir_lens = b;
        c->cap_dirs = cap;
    }
    uint32_t off;
    SK_GUARD(arena_add(c, d, n, &off, err));
    *id = (uint32_t)c->ndirs;
    c->dirs[c->ndirs] = off;
    c->dir_lens[c->ndirs] = (uint32_t)n;
    c->ndirs++;
    if (c->ndirs * 2 > c->hash_cap) { /* keep the table at most half full */
        free(c->dir_hash);
        c->hash_cap = c->hash_cap ? c->hash_cap * 4 : 1024;
        c->dir_hash = calloc(c->hash_cap, sizeof *c->dir_hash);
        SK_FAIL_IF(!c->dir_hash, err, SK_E_NOMEM, "out of memory");
        for (uint32_t k = 0; k < c->ndirs; k++) hash_insert(c, k);
    } else {
        hash_insert(c, *id);
    }
    return SK_OK;
}

static int add_source(sk_catalog *c, int fd, int is_spool, const char *label, uint16_t *id,
                      sk_error *err)
{
    SK_FAIL_IF(c->nsrcs >= UINT16_MAX, err, SK_E_USAGE, "too many sources (at most %d)", UINT16_MAX);
    sk_source *s = sk_xrealloc(c->srcs, (c->nsrcs + 1) * sizeof *s, err);
    if (!s) return SK_E_NOMEM;
    c->srcs = s;
    memset(&s[c->nsrcs], 0, sizeof s[c->nsrcs]);
    s[c->nsrcs].fd = fd;
    s[c->nsrcs].is_spool = is_spool;
    s[c->nsrcs].label = strdup(label);
    *id = (uint16_t)c->nsrcs++;
    return SK_OK;
}

/* Whether a directory string "a/b/" has a component over 255 bytes. */
static int long_component(const char *d, size_t n)
{
    for (size_t s = 0; s < n;) {
        const char *e = memchr(d + s, '/', n - s);
        size_t end = e ? (size_t)(e - d) : n;
        if (end - s > SK_NAME_COMPONENT_MAX) return 1;
        s = end + 1;
    }
    return 0;
}

/* Adds the file "dir + base" (dir interned as dir_id). */
static int add_item(sk_catalog *c, uint16_t src, uint32_t dir_id, const char *base,
                    uint64_t size, uint64_t spool_off, sk_error *err)
{
    size_t blen = strlen(base), key_len, ext_off;
    size_t full = c->dir_lens[dir_id] + blen;
    if (full > SK_TAR_NAME_MAX)
        return sk_catalog_problem(c, err, SK_E_INPUT, "%s%s: name longer than %d bytes",
                                  c->arena + c->dirs[dir_id], base, SK_TAR_NAME_MAX);
    /* archive members and S3 keys can have what no file system holds; an
     * index opener refuses such keys (core/path.c), so pack does too */
    if (blen > SK_NAME_COMPONENT_MAX ||
        long_component(c->arena + c->dirs[dir_id], c->dir_lens[dir_id]))
        return sk_catalog_problem(c, err, SK_E_INPUT, "%s%s: a component longer than %d bytes",
                                  c->arena + c->dirs[dir_id], base, SK_NAME_COMPONENT_MAX);
    if (sk_sample_split(base, blen, &key_len, &ext_off) != SK_OK)
        return sk_catalog_problem(c, err, SK_E_INPUT,
                                  "%s%s: no sample key (the name needs a dot after its first "
                                  "character, as in KEY.EXT)",
                                  c->arena + c->dirs[dir_id], base);
    SK_FAIL_IF(key_len > UINT16_MAX, err, SK_E_INPUT, "%s: key too long", base);
    SK_GUARD(sk_grow((void **)&c->items, &c->cap_items, c->nitems + 1, sizeof *c->items, err));
    sk_item *it = &c->items[c->nitems];
    memset(it, 0, sizeof *it);
    SK_GUARD(arena_add(c, base, blen, &it->base, err));
    it->size = size;
    it->spool_off = spool_off;
    it->dir = dir_id;
    it->src = src;
    it->key_end = (uint16_t)key_len;
    c->nitems++;
    return SK_OK;
}

size_t sk_item_name(const sk_catalog *c, const sk_item *it, char *buf)
{
    size_t dl = c->dir_lens[it->dir];
    size_t bl = strlen(c->arena + it->base);
    memcpy(buf, c->arena + c->dirs[it->dir], dl);
    memcpy(buf + dl, c->arena + it->base, bl + 1);
    return dl + bl;
}

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
            warn(c, "%s/%.*s%s: symbolic link skipped (use --follow-symlinks)",
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
        warn(c, "%s/%.*s%s: not a regular file (device, socket or fifo) skipped",
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
    SK_GUARD(intern_dir(c, rel, rel_len, &dir_id, err));
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
            rc = add_item(c, src, dir_id, name, sized ? (uint64_t)st.st_size : 0, 0, err);
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
    int rc = add_source(c, fd, 0, dir, &src, err);
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

static void sw_free(sk_catalog *c, uint16_t src, struct sk_swalk *w)
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
    int rc = add_source(c, fd, 0, dir, &src, err);
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

int sk_catalog_walk_lazy(sk_catalog *c, sk_error *err)
{
    for (size_t i = 0; i < c->nsrcs; i++) {
        if (!c->srcs[i].lazy) continue;
        sw_free(c, (uint16_t)i, c->srcs[i].lazy);
        c->srcs[i].lazy = NULL;
        SK_GUARD(walk_root(c, (uint16_t)i, c->srcs[i].fd, "", err));
    }
    return SK_OK;
}

/* Compares "a1" + "a2" with "b1" + "b2" bytewise. */
static int cmp2(const char *a1, size_t an1, const char *a2, size_t an2, const char *b1,
                size_t bn1, const char *b2, size_t bn2)
{
    const char *as[2] = {a1, a2}, *bs[2] = {b1, b2};
    size_t an[2] = {an1, an2}, bn[2] = {bn1, bn2};
    int ai = 0, bi = 0;
    size_t ao = 0, bo = 0;
    for (;;) {
        while (ai < 2 && ao == an[ai]) ai++, ao = 0;
        while (bi < 2 && bo == bn[bi]) bi++, bo = 0;
        if (ai == 2 || bi == 2) return ai == bi ? 0 : ai == 2 ? -1 : 1;
        size_t n = an[ai] - ao < bn[bi] - bo ? an[ai] - ao : bn[bi] - bo;
        int d = memcmp(as[ai] + ao, bs[bi] + bo, n);
        if (d) return d;
        ao += n;
        bo += n;
    }
}

/* item_cmp for the next files of two walkers (sources sa < sb). */
static int sw_head_cmp(const struct sk_swalk *a, const struct swent *ea, const struct sk_swalk *b,
                       const struct swent *eb)
{
    const struct swlevel *la = &a->lv[a->depth - 1], *lb = &b->lv[b->depth - 1];
    const char *na = la->names + ea->name, *nb = lb->names + eb->name;
    int d = cmp2(a->rel, la->rel_len, na, ea->tok, b->rel, lb->rel_len, nb, eb->tok);
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
            cmp2(last, last_len, "", 0, bw->rel, L->rel_len, name, be->tok) != 0)
            break;
        if (L->dir_gen != c->window_gen) {
            SK_GUARD(intern_dir(c, bw->rel, L->rel_len, &L->dir_id, err));
            L->dir_gen = c->window_gen;
        }
        size_t before = c->nitems;
        SK_GUARD(add_item(c, bs, L->dir_id, name, be->size, 0, err));
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

/* Member names never climb out of the dataset: "..", empty and "."
 * components are refused or dropped, and leading slashes removed. */
static int clean_path(const char *in, char *out, size_t cap)
{
    size_t o = 0;
    const char *p = in;
    while (*p) {
        while (*p == '/') p++;
        const char *e = p;
        while (*e && *e != '/') e++;
        size_t n = (size_t)(e - p);
        if (n == 2 && p[0] == '.' && p[1] == '.') return -1;
        if (n && !(n == 1 && p[0] == '.')) {
            if (o + n + 1 >= cap) return -1;
            if (o) out[o++] = '/';
            memcpy(out + o, p, n);
            o += n;
        }
        p = e;
    }
    out[o] = 0;
    return o ? 0 : -1;
}

static int add_path(sk_catalog *c, uint16_t src, int rootfd, const char *raw, sk_error *err)
{
    char path[SK_TAR_NAME_MAX + 2];
    if (clean_path(raw, path, sizeof path) != 0)
        return sk_catalog_problem(c, err, SK_E_INPUT,
                                  "%s: not a usable member name (empty, '..' or too long)", raw);
    struct stat st;
    int flags = c->follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW;
    /* An absolute path opens as given; its member name drops the slash. */
    if (fstatat(rootfd, raw, &st, flags) != 0)
        return sk_catalog_problem(c, err, SK_E_IO, "%s: %s", raw, strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        warn(c, "%s: symbolic link skipped (use --follow-symlinks)", raw);
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
        warn(c, "%s: not a regular file (device, socket or fifo) skipped", raw);
        return SK_OK;
    }
    char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path + 1) : 0;
    uint32_t dir_id;
    SK_GUARD(intern_dir(c, path, dlen, &dir_id, err));
    /* Items open by their member name relative to the source's fd, so an
     * absolute listed path gets a source of its own rooted at "/". */
    return add_item(c, src, dir_id, path + dlen, (uint64_t)st.st_size, 0, err);
}

int sk_catalog_add_list(sk_catalog *c, FILE *list, const char *list_name, const char *root,
                        int nul_separated, sk_error *err)
{
    int rootfd = open(root ? root : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    SK_FAIL_IF(rootfd < 0, err, SK_E_IO, "%s: cannot open directory: %s", root ? root : ".",
               strerror(errno));
    int slashfd = -1;
    uint16_t src, abs_src = 0;
    int rc = add_source(c, rootfd, 0, root ? root : ".", &src, err);
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
                if (slashfd < 0 || (rc = add_source(c, slashfd, 0, "/", &abs_src, err))) {
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

/* -------------------------------------------------------------- archives */

static int spool_open(sk_catalog *c, sk_error *err)
{
    return sk_scratch_fd(c->tmp_dir, "a spool file", err);
}

int sk_catalog_add_archive(sk_catalog *c, const char *path, sk_error *err)
{
    struct archive *a;
    SK_GUARD(sk_la_new(&a, err));
    sk_la.read_support_filter_all(a);
    sk_la.read_support_format_all(a);
    int rc = SK_OK, fd = -1;
    char *buf = NULL;
    uint16_t src;
    /* a remote archive is copied whole first, into an unlinked scratch
     * file: zip and 7z keep their directory at the end, and libarchive
     * seeks to it, which a stream cannot do; messages name the URL */
    int copy = -1;
    char copy_name[64];
    if (sk_store_is_remote(path)) {
        if ((rc = sk_place_fetch_fd(path, c->s3, c->tmp_dir, &copy, err))) goto cleanup;
        snprintf(copy_name, sizeof copy_name, "/proc/self/fd/%d", copy);
    }
    if (sk_la.read_open_filename(a, copy >= 0 ? copy_name : path, 1 << 16) != ARCHIVE_OK) {
        rc = sk_error_set(err, SK_E_IO, "%s: cannot open archive: %s", path, sk_la.error_string(a));
        goto cleanup;
    }
    fd = spool_open(c, err);
    if (fd < 0) { rc = SK_E_IO; goto cleanup; }
    if ((rc = add_source(c, fd, 1, path, &src, err))) { close(fd); goto cleanup; }
    buf = sk_xmalloc(1 << 20, err);
    if (!buf) { rc = SK_E_NOMEM; goto cleanup; }
    uint64_t off = 0;
    struct archive_entry *e;
    int r;
    while ((r = sk_la.read_next_header(a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
        const char *name = sk_la.entry_pathname(e);
        if (!name) name = "";
        if (sk_la.entry_filetype(e) == AE_IFDIR) continue;
        if (sk_la.entry_filetype(e) != AE_IFREG) {
            warn(c, "%s: %s: not a regular file, skipped", path, name);
            continue;
        }
        char clean[SK_TAR_NAME_MAX + 2];
        if (clean_path(name, clean, sizeof clean) != 0) {
            if ((rc = sk_catalog_problem(c, err, SK_E_INPUT,
                                         "%s: member '%s' is not a usable name (empty, '..' "
                                         "or too long)", path, name)))
                goto cleanup;
            continue;
        }
        uint64_t start = off;
        la_ssize_t got;
        while ((got = sk_la.read_data(a, buf, 1 << 20)) > 0) {
            if ((rc = sk_write_all(fd, buf, (size_t)got, "archive spool file", err))) goto cleanup;
            off += (uint64_t)got;
        }
        if (got < 0) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: member %s: %s", path, name,
                              sk_la.error_string(a));
            goto cleanup;
        }
        char *slash = strrchr(clean, '/');
        size_t dlen = slash ? (size_t)(slash - clean + 1) : 0;
        uint32_t dir_id;
        if ((rc = intern_dir(c, clean, dlen, &dir_id, err))) goto cleanup;
        if ((rc = add_item(c, src, dir_id, clean + dlen, off - start, start, err))) goto cleanup;
    }
    if (r != ARCHIVE_EOF)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: corrupt archive: %s", path, sk_la.error_string(a));
cleanup:
    free(buf);
    sk_la.read_free(a);
    if (copy >= 0) close(copy);
    return rc;
}

/* ------------------------------------------------ hooks for catalog_s3.c */

int sk_catalog_add_source(sk_catalog *c, int fd, int is_spool, const char *label, uint16_t *id,
                          sk_error *err)
{
    return add_source(c, fd, is_spool, label, id, err);
}

/* A member name that cleaning would change ("a//b", "./x", "../y") is
 * refused rather than renamed: for an S3 item the name is also how its
 * object is found again. */
static int add_named_at(sk_catalog *c, uint16_t src, const char *name, uint64_t size,
                        uint64_t off, sk_error *err)
{
    char clean[SK_TAR_NAME_MAX + 2];
    if (clean_path(name, clean, sizeof clean) != 0 || strcmp(clean, name))
        return sk_catalog_problem(c, err, SK_E_INPUT,
                                  "%s%s: not a usable member name (empty, '.', '..', '//' or "
                                  "too long)", c->srcs[src].label, name);
    char *slash = strrchr(clean, '/');
    size_t dlen = slash ? (size_t)(slash - clean + 1) : 0;
    uint32_t dir_id;
    SK_GUARD(intern_dir(c, clean, dlen, &dir_id, err));
    return add_item(c, src, dir_id, clean + dlen, size, off, err);
}

int sk_catalog_add_named(sk_catalog *c, uint16_t src, const char *name, uint64_t size,
                         sk_error *err)
{
    return add_named_at(c, src, name, size, 0, err);
}

int sk_catalog_name_usable(const char *name)
{
    char clean[SK_TAR_NAME_MAX + 2];
    return clean_path(name, clean, sizeof clean) == 0 && !strcmp(clean, name);
}

/* A keyed source's object key is not its member name: it is kept in the
 * arena, and the item's spool_off (unused by S3 items) says where. */
int sk_catalog_add_keyed(sk_catalog *c, uint16_t src, const char *name, uint64_t size,
                         const char *key, sk_error *err)
{
    uint32_t off;
    SK_GUARD(arena_add(c, key, strlen(key), &off, err));
    return add_named_at(c, src, name, size, off, err);
}

int sk_catalog_add_bytes(sk_catalog *c, uint16_t *src, const char *label, const char *name,
                         const void *data, size_t len, sk_error *err)
{
    if (*src == UINT16_MAX) {
        int fd = spool_open(c, err);
        if (fd < 0) return SK_E_IO;
        int rc = add_source(c, fd, 1, label, src, err);
        if (rc) {
            close(fd);
            return rc;
        }
    }
    sk_source *s = &c->srcs[*src];
    uint64_t at = s->spool_len;
    for (size_t done = 0; done < len;) {
        ssize_t k = pwrite(s->fd, (const char *)data + done, len - done, (off_t)(at + done));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k <= 0, err, SK_E_IO, "%s: cannot write the spool file: %s", label,
                   k < 0 ? strerror(errno) : "no space");
        done += (size_t)k;
    }
    s->spool_len += len;
    return add_named_at(c, *src, name, len, at, err);
}

/* --------------------------------------------------------------- grouping */

/* Compares the keys of two items bytewise, as if "dir" + "base[0..key_end)"
 * were one string, without building either. */
static int key_cmp(const sk_catalog *c, const sk_item *a, const sk_item *b)
{
    if (a->dir == b->dir) { /* the common case: only the basenames' keys differ */
        size_t n = a->key_end < b->key_end ? a->key_end : b->key_end;
        int d = memcmp(c->arena + a->base, c->arena + b->base, n);
        return d ? d : a->key_end < b->key_end ? -1 : a->key_end > b->key_end;
    }
    return cmp2(c->arena + c->dirs[a->dir], c->dir_lens[a->dir], c->arena + a->base, a->key_end,
                c->arena + c->dirs[b->dir], c->dir_lens[b->dir], c->arena + b->base, b->key_end);
}

static int ext_cmp_items(const sk_catalog *c, const sk_item *a, const sk_item *b)
{
    const char *ea = c->arena + a->base + a->key_end + 1;
    const char *eb = c->arena + b->base + b->key_end + 1;
    return sk_ext_cmp(ea, strlen(ea), eb, strlen(eb));
}

static int item_cmp(const void *pa, const void *pb, void *ctx)
{
    const sk_catalog *c = ctx;
    const sk_item *a = pa, *b = pb;
    int d = key_cmp(c, a, b);
    if (!d) d = ext_cmp_items(c, a, b);
    if (!d) d = a->src < b->src ? -1 : a->src > b->src;
    if (!d) d = strcmp(c->arena + a->base, c->arena + b->base);
    return d;
}

/* ---------------------------------------------------------------- sizing */

/* A directory walk learns from getdents which entries are regular files;
 * their sizes (one fstatat each, the bulk of listing a tree of small
 * files) are then read by several threads, each over a slice of the items
 * and with the slice's directories opened once.  With defer_sizes they are
 * left for the caller, which takes them from the files as it opens them. */
struct sizer {
    sk_catalog *c;
    size_t from, to;
    sk_error err;
    int rc;
    int dropped; /* some item of the slice vanished (skip mode) */
};

static void *size_slice(void *arg)
{
    struct sizer *z = arg;
    sk_catalog *c = z->c;
    int dfd = -1;
    uint32_t dsrc = 0, ddir = UINT32_MAX;
    for (size_t i = z->from; i < z->to && !z->rc; i++) {
        sk_item *it = &c->items[i];
        if (!(it->flags & SK_ITEM_UNSIZED) || c->defer_sizes) continue;
        if (dfd < 0 || dsrc != it->src || ddir != it->dir) {
            if (dfd >= 0 && dfd != c->srcs[dsrc].fd) close(dfd);
            dsrc = it->src;
            ddir = it->dir;
            if (!c->dir_lens[it->dir]) {
                dfd = c->srcs[it->src].fd;
            } else {
                char dir[SK_TAR_NAME_MAX + 1];
                memcpy(dir, c->arena + c->dirs[it->dir], c->dir_lens[it->dir]);
                dir[c->dir_lens[it->dir]] = 0;
                dfd = openat(c->srcs[it->src].fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            }
        }
        struct stat st;
        const char *base = c->arena + it->base;
        it->flags &= ~SK_ITEM_UNSIZED;
        if (dfd >= 0 && fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
            it->size = (uint64_t)st.st_size;
            continue;
        }
        int e = dfd < 0 ? errno : (errno ? errno : EINVAL);
        it->flags |= SK_ITEM_DROPPED;
        z->dropped = 1;
        if (!c->skip_errors) {
            z->rc = sk_error_set(&z->err, SK_E_IO, "%s/%s%s: %s", c->srcs[it->src].label,
                                 c->arena + c->dirs[it->dir], base,
                                 e == EINVAL ? "no longer a regular file" : strerror(e));
        }
    }
    if (dfd >= 0 && ddir != UINT32_MAX && dfd != c->srcs[dsrc].fd) close(dfd);
    return NULL;
}

/* ---------------------------------------------------------------- sorting */

/* The walk lists a directory's files together, so the items fall into runs
 * of one directory each.  A run sorts on an 8-byte prefix of each basename's
 * key (all that differs between keys of one directory, and usually enough
 * to tell them apart), with the full comparison only on ties, several runs
 * at once on --jobs threads.  The runs are then put in the order of their
 * first items; when no two overlap (sibling directories, the usual tree)
 * that is the sorted order, and otherwise (files beside subdirectories, one
 * directory in two sources) the runs are merged. */
struct run {
    size_t lo, hi;
};

struct pre {
    uint64_t key;
    uint32_t idx;
};

struct run_sorter {
    sk_catalog *c;
    struct run *runs;
    size_t nruns, stride, first; /* this thread's runs: first, first + stride, ... */
    int rc;
};

static int pre_cmp(const void *pa, const void *pb, void *ctx)
{
    const struct pre *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    const sk_catalog *c = ctx;
    return item_cmp(&c->items[a->idx], &c->items[b->idx], ctx);
}

static void *sort_runs(void *arg)
{
    struct run_sorter *rs = arg;
    sk_catalog *c = rs->c;
    size_t cap = 0;
    struct pre *pre = NULL;
    sk_item *tmp = NULL;
    for (size_t r = rs->first; r < rs->nruns; r += rs->stride) {
        size_t lo = rs->runs[r].lo, n = rs->runs[r].hi - lo;
        if (n > cap) {
            free(pre), free(tmp);
            pre = malloc(n * sizeof *pre);
            tmp = malloc(n * sizeof *tmp);
            cap = n;
            if (!pre || !tmp) {
                rs->rc = SK_E_NOMEM;
                break;
            }
        }
        for (size_t i = 0; i < n; i++) {
            const sk_item *it = &c->items[lo + i];
            const unsigned char *b = (const unsigned char *)c->arena + it->base;
            uint64_t v = 0; /* big-endian, zero-padded: compares as memcmp does */
            for (size_t k = 0; k < 8; k++) v = v << 8 | (k < it->key_end ? b[k] : 0);
            pre[i] = (struct pre){v, (uint32_t)(lo + i)};
        }
        qsort_r(pre, n, sizeof *pre, pre_cmp, c);
        for (size_t i = 0; i < n; i++) tmp[i] = c->items[pre[i].idx];
        memcpy(c->items + lo, tmp, n * sizeof *tmp);
    }
    free(pre);
    free(tmp);
    return NULL;
}

static int run_cmp(const void *pa, const void *pb, void *ctx)
{
    const sk_catalog *c = ctx;
    const struct run *a = pa, *b = pb;
    return item_cmp(&c->items[a->lo], &c->items[b->lo], ctx);
}

static int merge_runs(sk_catalog *c, size_t *bounds, size_t n, sk_error *err);

/* Sorts the items by item_cmp on up to nthreads threads. */
static int sort_items(sk_catalog *c, int nthreads, sk_error *err)
{
    if (c->nitems < 2) return SK_OK;
    /* runs of one directory, none longer than a thread's share */
    size_t maxlen = c->nitems / (size_t)nthreads + 1, nruns = 0, cap = 64;
    struct run *runs = sk_xmalloc(cap * sizeof *runs, err);
    if (!runs) return SK_E_NOMEM;
    for (size_t i = 0; i < c->nitems;) {
        size_t j = i + 1;
        while (j < c->nitems && j - i < maxlen && c->items[j].dir == c->items[i].dir) j++;
        if (nruns == cap) {
            struct run *r = sk_xrealloc(runs, (cap *= 2) * sizeof *r, err);
            if (!r) return free(runs), SK_E_NOMEM;
            runs = r;
        }
        runs[nruns++] = (struct run){i, j};
        i = j;
    }
    struct run_sorter rs[16];
    pthread_t th[16];
    int n = nthreads < 16 ? nthreads : 16, started = 0, rc = SK_OK;
    if ((size_t)n > nruns) n = (int)nruns;
    for (int t = 0; t < n; t++) {
        rs[t] = (struct run_sorter){c, runs, nruns, (size_t)n, (size_t)t, 0};
        if (t && pthread_create(&th[t], NULL, sort_runs, &rs[t]) == 0) started |= 1 << t;
        else if (t) sort_runs(&rs[t]); /* a thread that did not start */
    }
    sort_runs(&rs[0]);
    for (int t = 1; t < n; t++)
        if (started & (1 << t)) pthread_join(th[t], NULL);
    for (int t = 0; t < n; t++)
        if (rs[t].rc) rc = rs[t].rc;
    if (rc) {
        free(runs);
        return sk_error_set(err, rc, "out of memory sorting the inputs");
    }
    /* runs in the order of their first items, laid end to end */
    qsort_r(runs, nruns, sizeof *runs, run_cmp, c);
    sk_item *out = sk_xmalloc(c->nitems * sizeof *out, err);
    size_t *bounds = sk_xmalloc((nruns + 1) * sizeof *bounds, err);
    if (!out || !bounds) {
        free(out), free(bounds), free(runs);
        return SK_E_NOMEM;
    }
    int overlap = 0;
    size_t o = 0;
    for (size_t r = 0; r < nruns; r++) {
        if (r && item_cmp(&c->items[runs[r - 1].hi - 1], &c->items[runs[r].lo], c) > 0) overlap = 1;
        bounds[r] = o;
        memcpy(out + o, c->items + runs[r].lo, (runs[r].hi - runs[r].lo) * sizeof *out);
        o += runs[r].hi - runs[r].lo;
    }
    bounds[nruns] = o;
    free(c->items);
    c->items = out;
    c->cap_items = c->nitems;
    if (overlap) rc = merge_runs(c, bounds, nruns, err);
    free(bounds);
    free(runs);
    return rc;
}

/* Merges the sorted runs items[bounds[k] .. bounds[k+1]) (k < n) into one,
 * pairwise, through a scratch array of the same size. */
static int merge_runs(sk_catalog *c, size_t *bounds, size_t n, sk_error *err)
{
    if (n < 2) return SK_OK;
    sk_item *tmp = sk_xmalloc(c->nitems * sizeof *tmp, err), *src = c->items, *dst = tmp;
    if (!tmp) return SK_E_NOMEM;
    while (n > 1) {
        size_t m = 0;
        for (size_t r = 0; r < n; r += 2) {
            size_t i = bounds[r], mid = bounds[r + 1 < n ? r + 1 : n];
            size_t end = bounds[r + 1 < n ? r + 2 : n];
            size_t j = mid, o = bounds[r];
            while (i < mid && j < end)
                dst[o++] = item_cmp(&src[j], &src[i], c) < 0 ? src[j++] : src[i++];
            memcpy(dst + o, src + i, (mid - i) * sizeof *dst);
            o += mid - i;
            memcpy(dst + o, src + j, (end - j) * sizeof *dst);
            bounds[m++] = bounds[r];
        }
        bounds[m] = bounds[n];
        n = m;
        sk_item *t = src;
        src = dst;
        dst = t;
    }
    if (src != c->items) { /* the result sits in the scratch array: keep that one */
        free(c->items);
        c->items = src;
        c->cap_items = c->nitems;
    } else {
        free(tmp);
    }
    return SK_OK;
}

/* Sizes every item and sorts them by item_cmp. */
static int size_and_sort(sk_catalog *c, sk_error *err)
{
    if (c->defer_sizes) /* sized as they open: nothing to stat, nothing dropped here */
        return c->presorted ? SK_OK : sort_items(c, c->jobs > 0 ? c->jobs : 1, err);
    int n = c->jobs > 0 ? c->jobs : 1;
    if (n > 16) n = 16;
    if ((size_t)n > c->nitems / 1024 + 1) n = (int)(c->nitems / 1024 + 1);
    struct sizer z[16];
    pthread_t th[16];
    int started = 0;
    for (int t = 0; t < n; t++) {
        z[t] = (struct sizer){c, c->nitems * (size_t)t / (size_t)n,
                              c->nitems * (size_t)(t + 1) / (size_t)n, SK_ERROR_INIT, 0, 0};
        if (t == 0) continue;
        if (pthread_create(&th[t], NULL, size_slice, &z[t]) != 0) break;
        started = t;
    }
    for (int t = started + 1; t < n; t++) size_slice(&z[t]); /* threads that did not start */
    size_slice(&z[0]);
    for (int t = 1; t <= started; t++) pthread_join(th[t], NULL);
    int dropped = 0;
    for (int t = 0; t < n; t++) {
        if (z[t].rc) {
            if (err) *err = z[t].err;
            return z[t].rc;
        }
        dropped |= z[t].dropped;
    }
    if (!dropped) return c->presorted ? SK_OK : sort_items(c, c->jobs > 0 ? c->jobs : 1, err);
    /* in skip mode, drop what vanished, with a warning each, in walk order */
    size_t o = 0;
    for (size_t i = 0; i < c->nitems; i++) {
        if (c->items[i].flags & SK_ITEM_DROPPED) {
            warn(c, "%s/%s%s: vanished or changed type while listed", c->srcs[c->items[i].src].label,
                 c->arena + c->dirs[c->items[i].dir], c->arena + c->items[i].base);
            continue;
        }
        c->items[o++] = c->items[i];
    }
    c->nitems = o;
    return c->presorted ? SK_OK : sort_items(c, c->jobs > 0 ? c->jobs : 1, err);
}

int sk_catalog_group(sk_catalog *c, sk_error *err)
{
    SK_GUARD(size_and_sort(c, err));
    free(c->samples);
    c->samples = NULL;
    c->nsamples = 0;
    SK_FAIL_IF(c->nitems >= UINT32_MAX, err, SK_E_INPUT, "over 2^32 files in one run; split it with --part");
    c->samples = sk_xmalloc((c->nitems + 1) * sizeof *c->samples, err);
    if (!c->samples) return SK_E_NOMEM;
    for (size_t i = 0; i < c->nitems; i++) {
        if (i && !key_cmp(c, &c->items[i - 1], &c->items[i])) {
            if (!ext_cmp_items(c, &c->items[i - 1], &c->items[i])) {
                char a[SK_TAR_NAME_MAX + 1], b[SK_TAR_NAME_MAX + 1];
                sk_item_name(c, &c->items[i - 1], a);
                sk_item_name(c, &c->items[i], b);
                return sk_error_set(err, SK_E_INPUT,
                                    "%s (in %s) and %s (in %s): the same extension twice in one "
                                    "sample", a, c->srcs[c->items[i - 1].src].label, b,
                                    c->srcs[c->items[i].src].label);
            }
            continue;
        }
        c->samples[c->nsamples++] = (uint32_t)i;
    }
    return SK_OK;
}
