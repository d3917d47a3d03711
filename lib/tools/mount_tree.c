/*
 * mount_tree.c - the names `shardkit mount` shows, drawn from the indexes.
 *
 * A file is a member, named KEY.EXT (the key's last component, a dot, the
 * index's extension) in the directory its key's dirname names; with
 * --by-shard the same tree sits under one directory per shard.  Files are
 * never held in memory: a file's inode number is its sample's global
 * ordinal and member number, and a lookup is a key search in the index
 * (sk_dataset_find, O(log n)).  What is held is the directories: one pass
 * over the sample records at mount time builds each directory once, with
 * the runs of consecutive ordinals whose files it holds (one run per
 * directory for a dataset packed in key order, one per sample at worst for
 * a shuffled one), so readdir walks the runs and asks the index for each
 * sample's names, in bounded memory however many files there are.
 *
 * Every name comes from an index, which may be crafted: a member whose
 * key is not a safe relative path (an absolute path, "..", ".", an empty
 * component, a NUL) or whose extension holds '/' or a NUL, is empty or
 * would make a component over 255 bytes, or that repeats an extension of
 * its sample, is skipped with a warning naming the shard and offset; so
 * is a sample of more than 1,024 members (each member's extension is
 * compared with those before it; a crafted sample of millions would make
 * that quadratic).
 */
#include "tools/mount.h"
#include "format/tar.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define NONE UINT32_MAX

void sk_mt_warn(sk_mt_tree *t, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (t->warn) t->warn(t->warn_ctx, msg);
    else fprintf(stderr, "shardkit mount: %s\n", msg);
}

/* ------------------------------------------------------------- directories */

static uint64_t name_hash(uint32_t parent, const char *name, size_t n)
{
    uint64_t h = sk_fnv1a64(&parent, sizeof parent);
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)name[i]) * 0x100000001b3ull;
    return h;
}

static int arena_add(sk_mt_tree *t, const char *p, size_t n, uint32_t *off, sk_error *err)
{
    SK_FAIL_IF(t->arena_len + n + 1 > UINT32_MAX, err, SK_E_NOMEM,
               "mount: directory names pass 4 GiB");
    SK_GUARD(sk_grow((void **)&t->arena, &t->arena_cap, t->arena_len + n + 1, 1, err));
    memcpy(t->arena + t->arena_len, p, n);
    t->arena[t->arena_len + n] = 0;
    *off = (uint32_t)t->arena_len;
    t->arena_len += n + 1;
    return SK_OK;
}

static void slots_put(sk_mt_tree *t, uint32_t id)
{
    const sk_mt_dir *d = &t->dirs[id];
    size_t mask = t->slots - 1;
    size_t i = name_hash(d->parent, t->arena + d->name_off, d->name_len) & mask;
    while (t->name_slots[i]) i = (i + 1) & mask;
    t->name_slots[i] = id + 1;
    if (id == 0) return; /* the root is FUSE_ROOT_ID, never hashed */
    i = sk_fnv1a64(&d->ino, sizeof d->ino) & mask;
    while (t->ino_slots[i]) i = (i + 1) & mask;
    t->ino_slots[i] = id + 1;
}

static int rehash(sk_mt_tree *t, sk_error *err)
{
    size_t n = t->slots ? t->slots * 2 : 1024;
    uint32_t *a = calloc(n, sizeof *a), *b = calloc(n, sizeof *b);
    if (!a || !b) {
        free(a), free(b);
        return sk_error_set(err, SK_E_NOMEM, "out of memory for the directory table");
    }
    free(t->name_slots), free(t->ino_slots);
    t->name_slots = a, t->ino_slots = b, t->slots = n;
    for (size_t i = 0; i < t->ndirs; i++) slots_put(t, (uint32_t)i);
    return SK_OK;
}

const sk_mt_dir *sk_mt_dir_by_ino(const sk_mt_tree *t, uint64_t ino)
{
    if (ino == FUSE_ROOT_ID) return &t->dirs[0];
    if (!(ino & SK_MT_DIR_BIT)) return NULL;
    size_t mask = t->slots - 1;
    for (size_t i = sk_fnv1a64(&ino, sizeof ino) & mask; t->ino_slots[i]; i = (i + 1) & mask)
        if (t->dirs[t->ino_slots[i] - 1].ino == ino) return &t->dirs[t->ino_slots[i] - 1];
    return NULL;
}

const sk_mt_dir *sk_mt_child(const sk_mt_tree *t, const sk_mt_dir *dir, const char *name, size_t n)
{
    uint32_t parent = (uint32_t)(dir - t->dirs);
    size_t mask = t->slots - 1;
    for (size_t i = name_hash(parent, name, n) & mask; t->name_slots[i]; i = (i + 1) & mask) {
        const sk_mt_dir *d = &t->dirs[t->name_slots[i] - 1];
        if (d->parent == parent && d != t->dirs && d->name_len == n &&
            !memcmp(t->arena + d->name_off, name, n))
            return d;
    }
    return NULL;
}

/* A new directory `name` under parent; path is its key prefix. */
static int add_dir(sk_mt_tree *t, uint32_t parent, const char *name, size_t n, const char *path,
                   size_t path_len, int64_t shard, uint32_t *id, sk_error *err)
{
    if ((t->ndirs + 1) * 2 > t->slots) SK_GUARD(rehash(t, err));
    SK_FAIL_IF(t->ndirs >= NONE - 1, err, SK_E_NOMEM, "mount: more than 4 billion directories");
    SK_GUARD(sk_grow((void **)&t->dirs, &t->cap_dirs, t->ndirs + 1, sizeof *t->dirs, err));
    sk_mt_dir *d = &t->dirs[t->ndirs];
    memset(d, 0, sizeof *d);
    d->parent = parent;
    d->shard = shard;
    d->child = d->sibling = NONE;
    SK_GUARD(arena_add(t, name, n, &d->name_off, err));
    d->name_len = (uint32_t)n;
    SK_GUARD(arena_add(t, path, path_len, &d->path_off, err));
    d->path_len = (uint32_t)path_len;
    /* the inode: the hash of the shard (with --by-shard) and the path,
     * probing on to the next free number in the rare collision, which
     * the same dataset meets in the same order at every mount */
    uint64_t h = sk_fnv1a64(path, path_len) ^ (uint64_t)(shard + 1) * 0x9e3779b97f4a7c15ull;
    d->ino = (h | SK_MT_DIR_BIT);
    while (t->ndirs && (sk_mt_dir_by_ino(t, d->ino) || d->ino == (SK_MT_DIR_BIT | FUSE_ROOT_ID)))
        d->ino = ((d->ino + 1) | SK_MT_DIR_BIT);
    *id = (uint32_t)t->ndirs++;
    if (*id) {
        sk_mt_dir *p = &t->dirs[parent];
        d = &t->dirs[*id];
        d->sibling = p->child; /* listed newest first; readdir order is not sorted */
        p->child = *id;
        p->nchildren++;
    }
    slots_put(t, *id);
    return SK_OK;
}

/* The directory holding key's files (its dirname), made as needed. */
static int dir_of(sk_mt_tree *t, uint32_t top, const char *key, size_t key_len, int64_t shard,
                  uint32_t *id, sk_error *err)
{
    uint32_t cur = top;
    size_t s = 0;
    for (size_t e = 0; e < key_len; e++) {
        if (key[e] != '/') continue;
        const sk_mt_dir *c = sk_mt_child(t, &t->dirs[cur], key + s, e - s);
        if (c) cur = (uint32_t)(c - t->dirs);
        else SK_GUARD(add_dir(t, cur, key + s, e - s, key, e, shard, &cur, err));
        s = e + 1;
    }
    *id = cur;
    return SK_OK;
}

/* ------------------------------------------------------------ names' rules */

static const char *key_problem(const sk_sample_ref *sr)
{
    sk_error e = SK_ERROR_INIT;
    if (sk_name_check(sr->key, sr->key_len, "key", &e)) return "not a safe relative path";
    const char *base = sr->key + sr->key_len;
    while (base > sr->key && base[-1] != '/') base--;
    if (memchr(base, '.', (size_t)(sr->key + sr->key_len - base)))
        return "a dot in its last component";
    return NULL;
}

static const char *member_problem(const sk_sample_ref *sr, const sk_member_ref *m)
{
    sk_error e = SK_ERROR_INIT;
    const char *base = sr->key + sr->key_len;
    while (base > sr->key && base[-1] != '/') base--;
    size_t base_len = (size_t)(sr->key + sr->key_len - base);
    if (!m->ext_len) return "an empty extension";
    if (sk_ext_check(m->ext, m->ext_len, "ext", &e)) return "an extension holding '/' or a NUL";
    if (base_len + 1 + m->ext_len > SK_NAME_COMPONENT_MAX) return "a name over 255 bytes";
    return NULL;
}

/* The first of two members with one extension wins: 1 when member i
 * repeats one before it.  Samples are small, and one of many members is
 * refused before this (SK_MT_MAX_MEMBERS). */
static int repeats(const sk_hit *h, const sk_member_ref *m, uint32_t i, sk_dataset *ds)
{
    for (uint32_t j = 0; j < i; j++) {
        sk_member_ref o;
        if (sk_dataset_member(ds, h, j, &o, NULL)) return 1;
        if (o.ext_len == m->ext_len && !memcmp(o.ext, m->ext, m->ext_len)) return 1;
    }
    return 0;
}

int sk_mt_sample_ok(const sk_hit *h)
{
    return h->sample.member_count <= SK_MT_MAX_MEMBERS && !key_problem(&h->sample);
}

int sk_mt_member_ok_in(const sk_hit *h, const sk_member_ref *m, uint32_t i, sk_dataset *ds)
{
    return !member_problem(&h->sample, m) && !repeats(h, m, i, ds);
}

int sk_mt_member_ok(const sk_hit *h, const sk_member_ref *m, uint32_t i, sk_dataset *ds)
{
    return sk_mt_sample_ok(h) && sk_mt_member_ok_in(h, m, i, ds);
}

static void warn_member(sk_mt_tree *t, const sk_hit *h, const sk_member_ref *m, const char *why)
{
    char shown[120];
    size_t k = 0;
    for (size_t i = 0; i < h->sample.key_len && k + 4 < sizeof shown; i++)
        shown[k++] = (unsigned char)h->sample.key[i] < 0x20 || h->sample.key[i] == 0x7f
                         ? '?' : h->sample.key[i];
    shown[k] = 0;
    t->skipped++;
    sk_mt_warn(t, "%s: member at offset %llu (key '%s') skipped: %s", h->shard_path,
               (unsigned long long)(m ? m->data_offset : h->sample.offset), shown, why);
}

/* ---------------------------------------------------------------- building */

static int refuse_unseekable(sk_mt_tree *t, const sk_hit *h, sk_error *err)
{
    sk_dataset_shard_info in;
    SK_GUARD(sk_dataset_shard(t->ds, h->shard, &in, err));
    int compressed = (in.flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) != 0;
    SK_FAIL_IF(compressed && (in.flags & SK_INDEX_GZIP), err, SK_E_INPUT,
               "%s: a gzip/bzip2/xz shard is read from its start for every member; mount "
               "cannot serve it at random (reshard it: shardkit shard --compress zstd)",
               h->shard_path);
    SK_FAIL_IF(compressed && h->sample.stored_offset == 0 && h->sample.stored_span == in.bytes, err,
               SK_E_INPUT, "%s: a .tar.zst without a seek table is read from its start for every "
               "member; mount cannot serve it at random (reshard it with shardkit shard)",
               h->shard_path);
    return SK_OK;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

int sk_mt_build(sk_mt_tree *t, sk_dataset *ds, int by_shard, sk_error *err)
{
    void (*warn)(void *, const char *) = t->warn;
    void *warn_ctx = t->warn_ctx;
    memset(t, 0, sizeof *t);
    t->warn = warn, t->warn_ctx = warn_ctx;
    t->ds = ds;
    t->by_shard = by_shard;
    pthread_mutex_init(&t->mu, NULL);
    uint32_t root;
    SK_GUARD(add_dir(t, 0, "", 0, "", 0, -1, &root, err));
    t->dirs[0].ino = FUSE_ROOT_ID;
    uint64_t total;
    SK_GUARD(sk_dataset_samples(ds, &total, err));
    SK_FAIL_IF(total >= SK_MT_MAX_ORDINAL, err, SK_E_INPUT,
               "mount: %llu samples; at most 2^46 can be numbered", (unsigned long long)total);
    size_t shard = SIZE_MAX;
    uint32_t top = 0, last_dir = 0;
    const char *last_key = NULL;
    size_t last_dir_len = SIZE_MAX;
    for (uint64_t o = 0; o < total; o++) {
        sk_hit h;
        SK_GUARD(sk_dataset_at(ds, o, &h, err));
        if (h.shard != shard) { /* a new shard: can it be served, and its top directory */
            shard = h.shard;
            last_key = NULL;
            SK_GUARD(refuse_unseekable(t, &h, err));
            if (h.shard + 1 > t->nshards) {
                size_t cap = t->nshards;
                SK_GUARD(sk_grow((void **)&t->first, &cap, h.shard + 1, sizeof *t->first, err));
                for (size_t i = t->nshards; i <= h.shard; i++) t->first[i] = UINT64_MAX;
                t->nshards = h.shard + 1;
            }
            if (by_shard) {
                const char *b = base_name(h.shard_path);
                size_t bl = strlen(b);
                const sk_mt_dir *c = sk_mt_child(t, &t->dirs[0], b, bl);
                if (sk_name_check(b, bl, "shard", NULL) || c) {
                    sk_mt_warn(t, "%s: shard skipped: its name %s", h.shard_path,
                               c ? "is another shard's" : "is not a safe directory name");
                    top = NONE;
                } else {
                    SK_GUARD(add_dir(t, 0, b, bl, "", 0, (int64_t)h.shard, &top, err));
                }
            }
        }
        if (top == NONE) continue;
        const char *why = h.sample.member_count > SK_MT_MAX_MEMBERS
                              ? "more than 1,024 members in one sample"
                              : key_problem(&h.sample);
        if (why) {
            warn_member(t, &h, NULL, why);
            continue;
        }
        uint64_t served = 0;
        for (uint32_t i = 0; i < h.sample.member_count; i++) {
            sk_member_ref m;
            SK_GUARD(sk_dataset_member(ds, &h, i, &m, err));
            const char *mwhy = member_problem(&h.sample, &m);
            if (!mwhy && repeats(&h, &m, i, ds)) mwhy = "its extension repeats";
            if (mwhy) warn_member(t, &h, &m, mwhy);
            else served++;
        }
        if (!served) continue;
        t->files += served;
        if (t->first[h.shard] == UINT64_MAX) t->first[h.shard] = o;
        /* the directory: the last one again when the key's dirname is the
         * last key's (consecutive samples of one directory, the common case) */
        const char *slash = h.sample.key + h.sample.key_len;
        while (slash > h.sample.key && slash[-1] != '/') slash--;
        size_t dl = (size_t)(slash - h.sample.key);
        uint32_t d;
        if (last_key && dl == last_dir_len && !memcmp(last_key, h.sample.key, dl)) d = last_dir;
        else SK_GUARD(dir_of(t, by_shard ? top : 0, h.sample.key, h.sample.key_len,
                             by_shard ? (int64_t)h.shard : -1, &d, err));
        last_key = h.sample.key, last_dir_len = dl, last_dir = d;
        sk_mt_run *r = t->nruns ? &t->runs[t->nruns - 1] : NULL;
        if (r && r->dir == d && r->end == o) {
            r->end = o + 1;
        } else {
            SK_GUARD(sk_grow((void **)&t->runs, &t->cap_runs, t->nruns + 1, sizeof *t->runs, err));
            t->runs[t->nruns++] = (sk_mt_run){d, o, o + 1};
        }
    }
    /* each directory's runs together, in ordinal order */
    size_t *count = calloc(t->ndirs + 1, sizeof *count);
    sk_mt_run *sorted = t->nruns ? malloc(t->nruns * sizeof *sorted) : NULL;
    if (!count || (t->nruns && !sorted)) {
        free(count), free(sorted);
        return sk_error_set(err, SK_E_NOMEM, "out of memory for the directory runs");
    }
    for (size_t i = 0; i < t->nruns; i++) count[t->runs[i].dir + 1]++;
    for (size_t i = 0; i < t->ndirs; i++) count[i + 1] += count[i];
    for (size_t i = 0; i < t->ndirs; i++) t->dirs[i].run_lo = t->dirs[i].run_hi = count[i];
    for (size_t i = 0; i < t->nruns; i++) sorted[t->dirs[t->runs[i].dir].run_hi++] = t->runs[i];
    free(count);
    free(t->runs);
    t->runs = sorted;
    t->cap_runs = t->nruns;
    SK_FAIL_IF(!(t->mtimes = malloc((t->nshards ? t->nshards : 1) * sizeof *t->mtimes)), err,
               SK_E_NOMEM, "out of memory");
    for (size_t i = 0; i < t->nshards; i++) t->mtimes[i] = INT64_MIN;
    return SK_OK;
}

void sk_mt_free(sk_mt_tree *t)
{
    free(t->dirs);
    free(t->arena);
    free(t->name_slots);
    free(t->ino_slots);
    free(t->runs);
    free(t->mtimes);
    free(t->first);
    pthread_mutex_destroy(&t->mu);
    memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------- files */

int sk_mt_file_by_ino(sk_mt_tree *t, uint64_t ino, sk_mt_file *f, sk_error *err)
{
    SK_FAIL_IF(ino < 2 || (ino & SK_MT_DIR_BIT), err, SK_E_NOTFOUND, "no file %llu",
               (unsigned long long)ino);
    uint64_t ordinal = (ino - 2) >> 16;
    f->member = (uint32_t)((ino - 2) & 0xffff);
    SK_GUARD(sk_dataset_at(t->ds, ordinal, &f->hit, err));
    SK_FAIL_IF(f->member >= f->hit.sample.member_count, err, SK_E_NOTFOUND, "no file %llu",
               (unsigned long long)ino);
    SK_GUARD(sk_dataset_member(t->ds, &f->hit, f->member, &f->m, err));
    SK_FAIL_IF(!sk_mt_member_ok(&f->hit, &f->m, f->member, t->ds), err, SK_E_NOTFOUND,
               "no file %llu", (unsigned long long)ino);
    return SK_OK;
}

int sk_mt_find(sk_mt_tree *t, const sk_mt_dir *dir, const char *name, size_t n, sk_mt_file *f,
               sk_error *err)
{
    const char *dot = memchr(name, '.', n);
    SK_FAIL_IF(!dot || dot == name || (t->by_shard && dir->shard < 0), err, SK_E_NOTFOUND,
               "no file");
    size_t kb = (size_t)(dot - name), pl = dir->path_len;
    char stack[512], *key = pl + 1 + kb <= sizeof stack ? stack : malloc(pl + 1 + kb);
    SK_FAIL_IF(!key, err, SK_E_NOMEM, "out of memory");
    memcpy(key, t->arena + dir->path_off, pl);
    if (pl) key[pl++] = '/';
    memcpy(key + pl, name, kb);
    int rc = sk_dataset_find(t->ds, key, pl + kb, &f->hit, err);
    if (key != stack) free(key);
    SK_GUARD(rc);
    /* with --by-shard, the key must be this shard's (a key in two shards
     * is found in the first) */
    SK_FAIL_IF(dir->shard >= 0 && f->hit.shard != (size_t)dir->shard, err, SK_E_NOTFOUND,
               "no file");
    const char *ext = dot + 1;
    size_t el = n - kb - 1;
    for (uint32_t i = 0; i < f->hit.sample.member_count && i <= SK_MT_MAX_MEMBERS; i++) {
        SK_GUARD(sk_dataset_member(t->ds, &f->hit, i, &f->m, err));
        if (f->m.ext_len == el && !memcmp(f->m.ext, ext, el)) {
            f->member = i;
            SK_FAIL_IF(!sk_mt_member_ok(&f->hit, &f->m, i, t->ds), err, SK_E_NOTFOUND, "no file");
            return SK_OK;
        }
    }
    return sk_error_set(err, SK_E_NOTFOUND, "no file");
}

/* The ustar mtime field: octal, or base-256 when its first byte has the
 * high bit set. */
static int64_t ustar_mtime(const unsigned char *h)
{
    const unsigned char *f = h + 136;
    uint64_t v = 0;
    if (f[0] & 0x80) {
        for (int i = 1; i < 12; i++) v = (v << 8) | f[i];
        return v > INT64_MAX ? 0 : (int64_t)v;
    }
    for (int i = 0; i < 12 && f[i] != 0 && f[i] != ' '; i++) {
        if (f[i] < '0' || f[i] > '7') return 0;
        v = v * 8 + (uint64_t)(f[i] - '0');
    }
    return v > INT64_MAX ? 0 : (int64_t)v;
}

int64_t sk_mt_shard_mtime(sk_mt_tree *t, size_t shard)
{
    if (shard >= t->nshards) return 0;
    int64_t v = __atomic_load_n(&t->mtimes[shard], __ATOMIC_ACQUIRE);
    if (v != INT64_MIN) return v;
    /* the header of the first member of the shard's first sample served:
     * one 512-byte read (racing threads read the same value) */
    v = 0;
    sk_hit h;
    sk_member_ref m;
    unsigned char b[SK_TAR_BLOCK];
    if (t->first[shard] != UINT64_MAX && !sk_dataset_at(t->ds, t->first[shard], &h, NULL) &&
        !sk_dataset_member(t->ds, &h, 0, &m, NULL) && m.header_len >= SK_TAR_BLOCK &&
        m.data_offset >= SK_TAR_BLOCK &&
        !sk_dataset_read_at(t->ds, &h, m.data_offset - SK_TAR_BLOCK, b, sizeof b, NULL))
        v = ustar_mtime(b);
    __atomic_store_n(&t->mtimes[shard], v, __ATOMIC_RELEASE);
    return v;
}
