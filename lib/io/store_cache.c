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
 * Reads at an offset (shardkit mount's, lookups') are kept by block:
 * cache_dir/HASH.skc with HASH over (url NUL validator NUL block number),
 * each block BLOCK bytes of the object (the last one shorter), written
 * whole to a temporary and renamed, so a block file exists only complete.
 * A read whose blocks are all there is served from them with no request;
 * otherwise the run of blocks it spans is one ranged GET, kept block by
 * block.  A whole-object copy (a sequential reader's) serves such reads
 * too.  Blocks are found by the ETag the server gives at open: one HEAD
 * per object per open, then nothing more for what is cached.
 *
 * A reader that will want the rest of an object (the global order: a
 * window's samples cover its shards) sets o.ahead: a missing block is
 * then fetched with the missing ones around it, from the first missing
 * one before it to 64 MiB on, by one streaming GET whose blocks are kept
 * one by one as they come.  Threads reading one store at once fetch a
 * block once: a read that needs a block another is fetching waits for it.
 *
 * A job's private cache (cache_private.c) is a directory mkdtemp makes
 * under $TMPDIR, removed at the job's end by the names this file makes
 * (sk_store_cache_own): the global order reads remote shards through one
 * when the user names no cache.
 *
 * Derived this way a cache path never leaves the cache (URLs are
 * untrusted: "s3://b/x/../../../a.tar" is a valid key), and the directory
 * holds nothing but names of this one shape, which is what eviction looks
 * for, so it never removes a file shardkit did not put there.
 */
#include "io/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_SUFFIX ".skc"
#define CACHE_HEX 40
#define BLOCK (1u << 20)    /* the unit reads at an offset are kept in */
#define RUN_MAX (16u << 20) /* one ranged GET fetches at most this many missing bytes */
/* o.ahead: one streaming GET fetches at most this many (a server may
 * answer each GET in a fixed time, whatever its length: moto's ranged GET
 * of a 64 MB object took 0.3 s for 1 MiB, 0.7 s for 16 MiB) */
#define AHEAD_MAX (64u << 20)
#define AHEAD_STREAMS 2 /* such GETs at once */
#define OPEN_BLOCKS 32  /* block files kept open per store */
/* and in all, whatever the number of stores (the global order keeps up to
 * 64 open): at most this many, and a quarter of RLIMIT_NOFILE */
#define OPEN_BLOCKS_ALL 256

struct cache_store {
    sk_store s;
    sk_store *inner;
    sk_store_cache_opts o;
    char *dir;
    /* runs of blocks being fetched: a read from another thread that needs
     * one waits for it instead of fetching it again */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct { uint64_t lo, hi, id; } *fly;
    size_t nfly, cap_fly;
    uint64_t fly_id;
    /* block files kept open, checked once: the global order reads a
     * block's samples one by one, and an open, fstat, futimens and close
     * for each cost 1.4-1.7 s of system CPU over 20,000 samples of 6
     * shards (0.25 s for all of the streaming reader's).  A slot in use
     * (users > 0) is never closed or given to another block.  Block files
     * are never rewritten (a name is its contents), so one unlinked by
     * eviction meanwhile still reads right. */
    struct open_block { uint64_t block; int fd, users; } ob[OPEN_BLOCKS];
    unsigned ob_next;
    atomic_int dir_made; /* the directory was made sure of once */
};

struct tee_seq {
    sk_store_seq q;
    sk_store_seq *in;
    int fd;
    char *tmp, *final;
    uint32_t crc, want_crc;
    int check_crc;
    uint64_t reserved; /* cache bytes promised to this object while it is written */
    const char *dir;   /* the cache's */
    int temp;          /* the cache is a job's private one: nothing to fsync */
};

/* block: UINT64_MAX for the whole object's copy, else the block number
 * (after a second NUL: no validator, which never holds one, can collide). */
static char *cache_path(const char *dir, const char *url, const char *validator, uint64_t block)
{
    char md[65], hex[CACHE_HEX + 1], *id, *p, bn[24] = "";
    size_t ul = strlen(url), vl = strlen(validator), bl;
    if (block != UINT64_MAX) snprintf(bn + 1, sizeof bn - 1, "%llu", (unsigned long long)block);
    bl = block != UINT64_MAX ? 1 + strlen(bn + 1) : 0;
    if (!(id = malloc(ul + 1 + vl + bl))) return NULL;
    memcpy(id, url, ul);
    id[ul] = 0;
    memcpy(id + ul + 1, validator, vl);
    memcpy(id + ul + 1 + vl, bn, bl);
    sk_s3_sha256_hex(id, ul + 1 + vl + bl, md);
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
    int64_t used; /* ns: blocks read within one second still age in order */
};

static int cfile_cmp(const void *a, const void *b)
{
    const struct cfile *x = a, *y = b;
    return x->used < y->used ? -1 : x->used > y->used;
}

/* Bytes promised to cache files being written by this process: they
 * count against the bound before they exist under a final name.  The
 * directory is walked (and its least recently used files evicted) only
 * when this process's estimate of its size says the new file may not fit:
 * a mount adds a block file per MiB read, and a walk of thousands of
 * files for each would cost more than the read.  The estimate is the last
 * walk's total plus what this process published since; another process
 * sharing the directory is seen at the next walk. */
static pthread_mutex_t walk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_reserved;
static char *est_dir;      /* the directory the estimate is of (NULL: none yet) */
static uint64_t est_total; /* its bytes on disk, as far as this process knows */

/* Releases a reservation; published: the file is on disk under its name. */
static void unreserve(const char *dir, uint64_t *reserved, int published)
{
    pthread_mutex_lock(&walk_mu);
    cache_reserved -= *reserved;
    if (published && est_dir && !strcmp(est_dir, dir)) est_total += *reserved;
    *reserved = 0;
    pthread_mutex_unlock(&walk_mu);
}

/* Makes room for `need` more bytes under the bound, least recently used
 * files first, and reserves them in *reserved; 0 when they cannot fit
 * (the bytes are then read without caching). */
static int reserve(uint64_t *reserved, const char *dir, uint64_t bound, uint64_t need)
{
    struct cfile *v = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&walk_mu);
    if (est_dir && !strcmp(est_dir, dir) && est_total + cache_reserved + need <= bound) {
        cache_reserved += need;
        *reserved = need;
        pthread_mutex_unlock(&walk_mu);
        return 1;
    }
    DIR *d = opendir(dir);
    for (struct dirent *de; d && (de = readdir(d));) {
        struct stat st;
        if (!is_cache_name(de->d_name) || fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode))
            continue;
        if (sk_grow((void **)&v, &cap, n + 1, sizeof *v, NULL)) break;
        if (asprintf(&v[n].path, "%s/%s", dir, de->d_name) < 0) break;
        v[n].size = (uint64_t)st.st_size;
        int64_t a = (int64_t)st.st_atim.tv_sec * 1000000000 + st.st_atim.tv_nsec,
                m = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
        v[n].used = a > m ? a : m;
        n++;
    }
    if (d) closedir(d);
    uint64_t disk = 0;
    for (size_t i = 0; i < n; i++) disk += v[i].size;
    if (n) qsort(v, n, sizeof *v, cfile_cmp);
    /* evict down to 7/8 of the bound, so the next walks are some files away */
    uint64_t goal = bound - bound / 8 > need ? bound - bound / 8 : bound;
    for (size_t i = 0; i < n && disk + cache_reserved + need > goal; i++)
        if (unlink(v[i].path) == 0) disk -= v[i].size;
    for (size_t i = 0; i < n; i++) free(v[i].path);
    free(v);
    if (!est_dir || strcmp(est_dir, dir)) {
        free(est_dir);
        est_dir = strdup(dir);
    }
    est_total = disk;
    int ok = disk + cache_reserved + need <= bound;
    if (ok) {
        cache_reserved += need;
        *reserved = need;
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
    unreserve(t->dir, &t->reserved, 0);
}

static int tee_read(sk_store_seq *q, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct tee_seq *t = (struct tee_seq *)q;
    SK_GUARD(t->in->read(t->in, buf, n, got, err));
    if (t->fd < 0) return SK_OK;
    if (*got == 0) { /* complete: publish it under its final name */
        int ok = !t->check_crc || t->crc == t->want_crc; /* never keep what is not the object */
        ok &= t->temp || fsync(t->fd) == 0; /* a private cache dies with the job */
        ok &= close(t->fd) == 0;
        t->fd = -1;
        if (ok && rename(t->tmp, t->final) == 0) {
            free(t->tmp);
            t->tmp = NULL;
            unreserve(t->dir, &t->reserved, 1);
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
    if (c->o.bound && !reserve(&t->reserved, c->dir, c->o.bound, size)) return;
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
    char *cp = cache_path(c->dir, s->url, validator, UINT64_MAX);
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
    *t = (struct tee_seq){{tee_read, tee_close}, NULL, -1, NULL, cp, 0, c->o.crc32c, c->o.crc_known, 0, c->dir,
                          c->o.temp};
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

/* ------------------------------------------------------ blocks (read_at) */

/* Block b's bytes [from, from + len) into dst from its cache file; 0 when
 * it is there whole (its size is the block's: a file of another size is
 * not this block, and is replaced when the block is fetched). */
static atomic_int open_blocks_all;

/* Whether one more block file may be kept open, counted if so. */
static int open_block_take(void)
{
    static atomic_int cap;
    int c = atomic_load(&cap);
    if (!c) {
        struct rlimit rl;
        c = OPEN_BLOCKS_ALL;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur / 4 < (rlim_t)c)
            c = (int)(rl.rlim_cur / 4);
        atomic_store(&cap, c > 0 ? c : 1);
    }
    if (atomic_fetch_add(&open_blocks_all, 1) < c) return 1;
    atomic_fetch_sub(&open_blocks_all, 1);
    return 0;
}

/* Reads len bytes at from of block b (blen bytes long) from its file,
 * through the store's open blocks; 0, or -1 when the block is not there
 * whole (then it is fetched). */
static int block_get(struct cache_store *c, const char *url, const char *validator, uint64_t b,
                     uint64_t blen, uint64_t from, void *dst, size_t len)
{
    struct open_block *e = NULL;
    int fd = -1;
    pthread_mutex_lock(&c->mu);
    for (int i = 0; i < OPEN_BLOCKS && !e; i++)
        if (c->ob[i].fd >= 0 && c->ob[i].block == b) e = &c->ob[i];
    if (e) e->users++, fd = e->fd;
    pthread_mutex_unlock(&c->mu);
    if (!e) {
        char *p = cache_path(c->dir, url, validator, b);
        fd = p ? open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        free(p);
        struct stat st;
        if (fd >= 0 && !(fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == blen)) {
            close(fd);
            fd = -1;
        }
        if (fd < 0) return -1;
        futimens(fd, NULL); /* recently used, for eviction */
        pthread_mutex_lock(&c->mu);
        for (int i = 0; i < OPEN_BLOCKS && !e; i++) { /* a slot no read is using */
            struct open_block *o = &c->ob[c->ob_next++ % OPEN_BLOCKS];
            if (o->users) continue;
            if (o->fd >= 0) close(o->fd);
            else if (!open_block_take()) continue; /* the process keeps enough open */
            *o = (struct open_block){b, fd, 1};
            e = o;
        }
        pthread_mutex_unlock(&c->mu);
    }
    int ok = pread(fd, dst, len, (off_t)from) == (ssize_t)len;
    if (e) {
        pthread_mutex_lock(&c->mu);
        e->users--;
        pthread_mutex_unlock(&c->mu);
    } else {
        close(fd); /* every slot was in use: this read's own */
    }
    return ok ? 0 : -1;
}

/* Keeps one fetched block: temporary, then renamed (a block file exists
 * only whole); nothing when it cannot fit or be written. */
static void block_put(struct cache_store *c, const char *path, const void *data, size_t len)
{
    uint64_t reserved = 0;
    if (c->o.bound && (len > c->o.bound || !reserve(&reserved, c->dir, c->o.bound, len))) return;
    char *tmp = NULL;
    const char *slash = strrchr(path, '/');
    int fd = -1, ok = 0;
    if (asprintf(&tmp, "%s/.%s.%d.tmp", c->dir, slash + 1, (int)gettid()) < 0) tmp = NULL;
    if (tmp) {
        unlink(tmp); /* a killed reader's leftover goes; never a link planted there */
        fd = sk_create_excl(tmp, NULL, NULL);
    }
    if (fd >= 0) {
        ok = sk_write_all(fd, data, len, tmp, NULL) == 0 && (c->o.temp || fsync(fd) == 0);
        ok &= close(fd) == 0;
        ok = ok && rename(tmp, path) == 0;
        if (!ok) unlink(tmp);
    }
    unreserve(c->dir, &reserved, ok);
    free(tmp);
}

/* Whether block b is being fetched by a read of this store; c->mu held. */
static int flying(const struct cache_store *c, uint64_t b)
{
    for (size_t i = 0; i < c->nfly; i++)
        if (b >= c->fly[i].lo && b <= c->fly[i].hi) return 1;
    return 0;
}

/* Run id's blocks before lo are in (lo past its end: all of it, the run
 * is over); the reads waiting for them go on. */
static void land(struct cache_store *c, uint64_t id, uint64_t lo)
{
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < c->nfly; i++)
        if (c->fly[i].id == id) {
            if (lo > c->fly[i].hi) c->fly[i] = c->fly[--c->nfly];
            else c->fly[i].lo = lo;
            break;
        }
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* o.ahead: blocks b..e (claimed as run id) streamed with one GET from b's
 * first byte, each kept as it arrives and landed at once, so a read
 * waiting for a later one of them goes on as soon as it is in.  A
 * failure only ends the run early: the read that needs a block fetches
 * it with a ranged GET, which reports what went wrong. */
static pthread_mutex_t stream_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stream_cv = PTHREAD_COND_INITIALIZER;
static int streams_now;

static void stream_run(struct cache_store *c, const char *url, const char *validator, uint64_t size,
                       uint64_t b, uint64_t e, uint64_t id)
{
    /* at most AHEAD_STREAMS at once in the process (moto served 6 at once
     * at half the bytes a second it served one at a time) */
    pthread_mutex_lock(&stream_mu);
    while (streams_now >= AHEAD_STREAMS) pthread_cond_wait(&stream_cv, &stream_mu);
    streams_now++;
    pthread_mutex_unlock(&stream_mu);
    sk_store_seq *q = NULL;
    unsigned char *blk = malloc(BLOCK);
    uint64_t k = b;
    if (blk && c->inner->ops->open_seq(c->inner, b * BLOCK, &q, NULL) == 0) {
        for (; k <= e; k++) {
            size_t kl = size - k * BLOCK < BLOCK ? (size_t)(size - k * BLOCK) : BLOCK, have = 0, g;
            while (have < kl && q->read(q, blk + have, kl - have, &g, NULL) == 0 && g) have += g;
            if (have < kl) break;
            char *p = cache_path(c->dir, url, validator, k);
            if (p) block_put(c, p, blk, kl);
            free(p);
            land(c, id, k + 1);
        }
        q->close(q); /* stops the transfer where the run ends */
    }
    free(blk);
    land(c, id, e + 1);
    pthread_mutex_lock(&stream_mu);
    streams_now--;
    pthread_cond_signal(&stream_cv);
    pthread_mutex_unlock(&stream_mu);
}

/* n bytes at off: the blocks already kept from their files, each run of
 * missing ones (at most RUN_MAX bytes) with one ranged GET, then kept.
 * Reads of one store from several threads (the global order's) fetch a
 * block once: a block another read is fetching is waited for. */
static int cache_read_at(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct cache_store *c = (struct cache_store *)s;
    sk_store *in = c->inner;
    SK_FAIL_IF(!in->ops->read_at, err, SK_E_USAGE, "%s: cannot be read at an offset", s->url);
    sk_store_stat st;
    char validator[100];
    *got = 0;
    SK_GUARD(in->ops->stat(in, &st, err)); /* one HEAD per object, kept by the store */
    if (c->o.crc_known) snprintf(validator, sizeof validator, "crc32c:%08x", c->o.crc32c);
    else if (st.etag[0]) snprintf(validator, sizeof validator, "etag:%s", st.etag);
    else return in->ops->read_at(in, off, buf, n, got, err); /* nothing to know a copy by */
    if (off >= st.size || !n) return SK_OK;
    if (n > st.size - off) n = (size_t)(st.size - off);
    if (!c->dir_made && sk_mkdirs(c->dir, NULL)) return in->ops->read_at(in, off, buf, n, got, err);
    c->dir_made = 1;
    uint64_t end = off + n, b = off / BLOCK, last = (end - 1) / BLOCK;
    unsigned char *run = NULL;
    int rc = SK_OK, streamed = 0; /* streamed: b's run was streamed, yet b is not on disk */
    while (!rc && b <= last) {
        uint64_t bs = b * BLOCK, blen = st.size - bs < BLOCK ? st.size - bs : BLOCK;
        uint64_t lo = off > bs ? off : bs, hi = end < bs + blen ? end : bs + blen;
        char *p;
        int have = block_get(c, s->url, validator, b, blen, lo - bs, (unsigned char *)buf + (lo - off),
                             (size_t)(hi - lo));
        if (have == 0) {
            b++, streamed = 0;
            continue;
        }
        pthread_mutex_lock(&c->mu);
        if (flying(c, b)) { /* another read brings it: then it is on disk (or failed: fetch it) */
            while (flying(c, b)) pthread_cond_wait(&c->cv, &c->mu);
            pthread_mutex_unlock(&c->mu);
            have = block_get(c, s->url, validator, b, blen, lo - bs, (unsigned char *)buf + (lo - off),
                             (size_t)(hi - lo));
            if (have == 0) {
                b++, streamed = 0;
                continue;
            }
            pthread_mutex_lock(&c->mu);
        }
        /* the run of missing blocks from b, as far as this read goes (with
         * o.ahead: on past it, up to AHEAD_MAX, streamed), none of them
         * another read's */
        int ahead = c->o.ahead && !streamed;
        uint64_t rb = b; /* the run's first block */
        if (ahead) { /* from the first of the missing blocks before b, which will be wanted too */
            uint64_t b0 = b;
            while (b0 > 0 && (b + 1 - b0) * BLOCK < AHEAD_MAX && !flying(c, b0 - 1)) {
                char *q = cache_path(c->dir, s->url, validator, b0 - 1);
                int there = q && access(q, F_OK) == 0;
                free(q);
                if (there) break;
                b0--;
            }
            rb = b0;
        }
        uint64_t e = b, lim = ahead ? (st.size - 1) / BLOCK : last, max = ahead ? AHEAD_MAX : RUN_MAX;
        while (e < lim && (e + 2 - rb) * BLOCK <= max && !flying(c, e + 1)) {
            char *q = cache_path(c->dir, s->url, validator, e + 1);
            int there = q && access(q, F_OK) == 0;
            free(q);
            if (there) break;
            e++;
        }
        if (sk_grow((void **)&c->fly, &c->cap_fly, c->nfly + 1, sizeof *c->fly, NULL)) {
            pthread_mutex_unlock(&c->mu);
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            break;
        }
        uint64_t id = ++c->fly_id;
        c->fly[c->nfly].lo = rb, c->fly[c->nfly].hi = e, c->fly[c->nfly].id = id;
        c->nfly++;
        pthread_mutex_unlock(&c->mu);
        if (ahead) { /* then b is on disk (else, once more, with a ranged GET) */
            stream_run(c, s->url, validator, st.size, rb, e, id);
            streamed = 1;
            continue;
        }
        streamed = 0;
        uint64_t rend = (e + 1) * BLOCK < st.size ? (e + 1) * BLOCK : st.size;
        size_t rlen = (size_t)(rend - bs), g = 0;
        if (!run && !(run = malloc(RUN_MAX))) {
            land(c, id, e + 1);
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory for a cache block");
            break;
        }
        if ((rc = in->ops->read_at(in, bs, run, rlen, &g, err))) {
            land(c, id, e + 1);
            break;
        }
        for (uint64_t k = b; k <= e && (k - b) * BLOCK < g; k++) {
            size_t kl = rlen - (size_t)((k - b) * BLOCK) < BLOCK ? rlen - (size_t)((k - b) * BLOCK) : BLOCK;
            if ((k - b) * BLOCK + kl > g) break; /* the object ended early: keep nothing short */
            if ((p = cache_path(c->dir, s->url, validator, k))) block_put(c, p, run + (k - b) * BLOCK, kl);
            free(p);
        }
        land(c, id, e + 1);
        lo = off > bs ? off : bs, hi = end < rend ? end : rend;
        if (bs + g < hi) { /* shorter than HEAD said: what there is, *got < n */
            if (bs + g > lo) memcpy((unsigned char *)buf + (lo - off), run + (lo - bs), (size_t)(bs + g - lo));
            free(run);
            *got = bs + g > off ? (size_t)(bs + g - off) : 0;
            return SK_OK;
        }
        memcpy((unsigned char *)buf + (lo - off), run + (lo - bs), (size_t)(hi - lo));
        b = e + 1;
    }
    free(run);
    if (!rc) *got = n;
    return rc;
}

static void cache_close(sk_store *s)
{
    struct cache_store *c = (struct cache_store *)s;
    sk_store_close(c->inner);
    for (int i = 0; i < OPEN_BLOCKS; i++)
        if (c->ob[i].fd >= 0) {
            close(c->ob[i].fd);
            atomic_fetch_sub(&open_blocks_all, 1);
        }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->fly);
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
    for (int i = 0; i < OPEN_BLOCKS; i++) c->ob[i].fd = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    *out = &c->s;
    return SK_OK;
}

/* ------------------------------------------------ a job's private cache */

/* Whether a name is a temporary of ours: .HASH.skc.TID.tmp (tee_start,
 * block_put). */
static int is_cache_tmp(const char *name)
{
    size_t n = strlen(name), c = CACHE_HEX + strlen(CACHE_SUFFIX);
    if (name[0] != '.' || n < 1 + c + 1 + 1 + 4 || strcmp(name + n - 4, ".tmp")) return 0;
    char cn[CACHE_HEX + 8];
    memcpy(cn, name + 1, c);
    cn[c] = 0;
    if (!is_cache_name(cn) || name[1 + c] != '.') return 0;
    for (size_t i = 1 + c + 1; i < n - 4; i++)
        if (name[i] < '0' || name[i] > '9') return 0;
    return 1;
}

int sk_store_cache_own(const char *name)
{
    return is_cache_name(name) || is_cache_tmp(name);
}

void sk_store_cache_forget(const char *dir)
{
    pthread_mutex_lock(&walk_mu);
    if (est_dir && !strcmp(est_dir, dir)) {
        free(est_dir);
        est_dir = NULL;
    }
    pthread_mutex_unlock(&walk_mu);
}
