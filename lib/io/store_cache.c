/*
 * store_cache.c - the bounded on-disk cache as a store that wraps another
 * (a remote one): a sequential read from the start is copied to the cache
 * directory as it goes, published under its final name only when complete
 * (and, when the caller knows the object's CRC32C, only when the bytes
 * have it), and later reads are served from that copy.
 *
 * A copy is found by what the object must be, not only by its name: the
 * cache file of an object is cache_dir/HASH.skc, HASH the first 160 bits
 * of SHA-256(url NUL validator) in hex, the validator being the CRC32C a
 * manifest promises, else the ETag the server gives at open.  A dataset
 * replaced under the same names (new bytes, a new manifest) therefore
 * misses the old copies instead of being served them; they age out by the
 * bound.  An object with neither (a server without ETags, no manifest) is
 * read without caching.
 *
 * Derived this way a cache path never leaves the cache (URLs are
 * untrusted: "s3://b/x/../../../a.tar" is a valid key), and the directory
 * holds nothing but names of this one shape, which is what eviction looks
 * for, so it never removes a file shardkit did not put there.
 */
#include "io/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_SUFFIX ".skc"
#define CACHE_HEX 40

struct cache_store {
    sk_store s;
    sk_store *inner;
    sk_store_cache_opts o;
    char *dir;
};

struct tee_seq {
    sk_store_seq q;
    sk_store_seq *in;
    int fd;
    char *tmp, *final;
    uint32_t crc, want_crc;
    int check_crc;
    uint64_t reserved; /* cache bytes promised to this object while it is written */
};

static char *cache_path(const char *dir, const char *url, const char *validator)
{
    char md[65], hex[CACHE_HEX + 1], *id, *p;
    size_t ul = strlen(url), vl = strlen(validator);
    if (!(id = malloc(ul + 1 + vl))) return NULL;
    memcpy(id, url, ul);
    id[ul] = 0;
    memcpy(id + ul + 1, validator, vl);
    sk_s3_sha256_hex(id, ul + 1 + vl, md);
    free(id);
    memcpy(hex, md, CACHE_HEX);
    hex[CACHE_HEX] = 0;
    return asprintf(&p, "%s/%s" CACHE_SUFFIX, dir, hex) < 0 ? NULL : p;
}

/* Whether a cache directory entry is one of ours: HASH.skc. */
static int is_cache_name(const char *name)
{
    size_t n = strlen(name);
    if (n != CACHE_HEX + strlen(CACHE_SUFFIX) || strcmp(name + CACHE_HEX, CACHE_SUFFIX)) return 0;
    for (int i = 0; i < CACHE_HEX; i++)
        if (!strchr("0123456789abcdef", name[i])) return 0;
    return 1;
}

struct cfile {
    char *path;
    uint64_t size;
    time_t used;
};

static int cfile_cmp(const void *a, const void *b)
{
    const struct cfile *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* Bytes promised to cache files being written by this process's streams:
 * they count against the bound before they exist under a final name. */
static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_reserved;

static void unreserve(struct tee_seq *t)
{
    pthread_mutex_lock(&walk_mu);
    cache_reserved -= t->reserved;
    t->reserved = 0;
    pthread_mutex_unlock(&walk_mu);
}

/* Makes room for `need` more bytes under the bound, least recently used
 * files first, and reserves them; 0 when they cannot fit (the object is
 * then read without caching). */
static int reserve(struct tee_seq *t, const char *dir, uint64_t bound, uint64_t need)
{
    struct cfile *v = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&walk_mu);
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        struct stat st;
        if (!is_cache_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode))
            continue;
        if (sk_grow((void **)&v, &cap, n + 1, sizeof *v, NULL)) break;
        if (asprintf(&v[n].path, "%s/%s", dir, de->d_name) < 0) break;
        v[n].size = (uint64_t)st.st_size;
        v[n].used = st.st_atime > st.st_mtime ? st.st_atime : st.st_mtime;
        n++;
    }
    if (d) closedir(d);
    uint64_t total = cache_reserved;
    for (size_t i = 0; i < n; i++) total += v[i].size;
    if (n) qsort(v, n, sizeof *v, cfile_cmp);
    for (size_t i = 0; i < n && total + need > bound; i++)
        if (unlink(v[i].path) == 0) total -= v[i].size;
    for (size_t i = 0; i < n; i++) free(v[i].path);
    free(v);
    int ok = total + need <= bound;
    if (ok) {
        cache_reserved += need;
        t->reserved = need;
    }
    pthread_mutex_unlock(&walk_mu);
    return ok;
}

static void tee_drop(struct tee_seq *t)
{
    if (t->fd >= 0) close(t->fd);
    t->fd = -1;
    if (t->tmp) unlink(t->tmp); /* stopped early or wrong: no partial file survives */
    free(t->tmp);
    t->tmp = NULL;
    unreserve(t);
}

static int tee_read(sk_store_seq *q, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct tee_seq *t = (struct tee_seq *)q;
    SK_GUARD(t->in->read(t->in, buf, n, got, err));
    if (t->fd < 0) return SK_OK;
    if (*got == 0) { /* complete: publish it under its final name */
        int ok = !t->check_crc || t->crc == t->want_crc; /* never keep what is not the object */
        ok &= fsync(t->fd) == 0;
        ok &= close(t->fd) == 0;
        t->fd = -1;
        if (ok && rename(t->tmp, t->final) == 0) {
            free(t->tmp);
            t->tmp = NULL;
        }
        tee_drop(t); /* on disk now, counted there */
        return SK_OK;
    }
    if (t->check_crc) t->crc = sk_crc32c(t->crc, buf, *got);
    if (sk_write_all(t->fd, buf, *got, t->tmp, NULL)) tee_drop(t); /* a full disk costs only the caching */
    return SK_OK;
}

static void tee_close(sk_store_seq *q)
{
    struct tee_seq *t = (struct tee_seq *)q;
    t->in->close(t->in);
    tee_drop(t);
    free(t->final);
    free(t);
}

/* Starts writing the copy of an object of size bytes read from its start;
 * no copy when it cannot be made (a full or unwritable cache). */
static void tee_start(struct cache_store *c, struct tee_seq *t, uint64_t size)
{
    if (c->o.bound && size > c->o.bound) return;
    c->s.cache_state = 0; /* fetched for the cache, even if it cannot keep it */
    if (sk_mkdirs(c->dir, NULL)) return;
    if (c->o.bound && !reserve(t, c->dir, c->o.bound, size)) return;
    const char *slash = strrchr(t->final, '/');
    if (asprintf(&t->tmp, "%s/.%s.%d.tmp", c->dir, slash + 1, (int)gettid()) < 0) t->tmp = NULL;
    if (t->tmp) { /* a killed reader's leftover goes; never a link planted there */
        unlink(t->tmp);
        t->fd = sk_create_excl(t->tmp, NULL, NULL);
    }
    if (t->fd < 0) tee_drop(t);
}

static int cache_open_seq(sk_store *s, uint64_t off, sk_store_seq **out, sk_error *err)
{
    struct cache_store *c = (struct cache_store *)s;
    char validator[100];
    *out = NULL;
    s->cache_state = -1;
    if (c->o.crc_known) {
        snprintf(validator, sizeof validator, "crc32c:%08x", c->o.crc32c);
    } else {
        sk_store_stat st;
        SK_GUARD(c->inner->ops->stat(c->inner, &st, err));
        if (!st.etag[0]) return c->inner->ops->open_seq(c->inner, off, out, err);
        snprintf(validator, sizeof validator, "etag:%s", st.etag);
    }
    char *cp = cache_path(c->dir, s->url, validator);
    SK_FAIL_IF(!cp, err, SK_E_NOMEM, "out of memory");
    sk_store *f;
    /* A copy exists only complete and checked (renamed at the end), so it
     * is used without asking the server anything more. */
    if (access(cp, R_OK) == 0 && sk_store_file_open(&f, cp, NULL) == 0) {
        int rc = f->ops->open_seq(f, off, out, err);
        sk_store_close(f); /* the sequential reader has its own descriptor */
        if (!rc) {
            utimensat(AT_FDCWD, cp, NULL, 0); /* recently used, for eviction */
            s->cache_state = 1;
        }
        free(cp);
        return rc;
    }
    struct tee_seq *t = calloc(1, sizeof *t);
    if (!t) {
        free(cp);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *t = (struct tee_seq){{tee_read, tee_close}, NULL, -1, NULL, cp, 0, c->o.crc32c, c->o.crc_known, 0};
    int rc = c->inner->ops->open_seq(c->inner, off, &t->in, err);
    if (rc) {
        free(cp);
        free(t);
        return rc;
    }
    sk_store_stat st;
    if (off == 0 && c->inner->ops->stat(c->inner, &st, NULL) == 0 && st.size != UINT64_MAX)
        tee_start(c, t, st.size);
    *out = &t->q;
    return SK_OK;
}

static int cache_stat(sk_store *s, sk_store_stat *out, sk_error *err)
{
    struct cache_store *c = (struct cache_store *)s;
    return c->inner->ops->stat(c->inner, out, err);
}

static int cache_read_at(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct cache_store *c = (struct cache_store *)s;
    SK_FAIL_IF(!c->inner->ops->read_at, err, SK_E_USAGE, "%s: cannot be read at an offset", s->url);
    return c->inner->ops->read_at(c->inner, off, buf, n, got, err);
}

static void cache_close(sk_store *s)
{
    struct cache_store *c = (struct cache_store *)s;
    sk_store_close(c->inner);
    free(c->dir);
    free(s->url);
    free(c);
}

static const struct sk_store_ops cache_ops = {cache_stat, cache_read_at, cache_open_seq, cache_close, NULL};

int sk_store_cache_open(sk_store **out, sk_store *inner, const sk_store_cache_opts *o, sk_error *err)
{
    struct cache_store *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c || !(c->s.url = strdup(inner->url)) || !(c->dir = strdup(o->dir))) {
        if (c) free(c->s.url);
        free(c);
        sk_store_close(inner);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    c->s.ops = &cache_ops;
    c->s.size_hint = inner->size_hint;
    c->s.cache_state = -1;
    c->inner = inner;
    c->o = *o;
    c->o.dir = c->dir;
    *out = &c->s;
    return SK_OK;
}
