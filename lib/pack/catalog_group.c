/*
 * catalog_group.c - turns the catalog's items into samples: sizes the
 * files a walk left unsized (threads, one fstatat each), sorts by
 * WebDataset key and extension (sorted runs merged), and groups them.
 */
#include "pack/catalog_int.h"
#include "format/tar.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
    return sk_catalog_cmp2(c->arena + c->dirs[a->dir], c->dir_lens[a->dir], c->arena + a->base, a->key_end,
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
            sk_catalog_warn(c, "%s/%s%s: vanished or changed type while listed", c->srcs[c->items[i].src].label,
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

/* ------------------------------------------------------------------ --part */

/* Keeps only the samples whose key falls in part (of parts): sk_part_of
 * (format/part.c) per sample, the catalog compacted in place. */

int sk_part_filter(sk_catalog *c, int part, int parts, sk_error *err)
{
    char key[SK_TAR_NAME_MAX + 1];
    size_t ni = 0, ns = 0;
    (void)err;
    if (parts <= 1) return SK_OK;
    /* Compact items and samples in place: order is kept, so the catalog is
     * still sorted and grouped, just smaller. */
    for (size_t s = 0; s < c->nsamples; s++) {
        const sk_item *it = &c->items[c->samples[s]];
        size_t dl = c->dir_lens[it->dir];
        memcpy(key, c->arena + c->dirs[it->dir], dl);
        memcpy(key + dl, c->arena + it->base, it->key_end);
        if (sk_part_of(key, dl + it->key_end, parts) != part) continue;
        size_t first = c->samples[s], k = sk_sample_members(c, s);
        memmove(&c->items[ni], &c->items[first], k * sizeof *c->items);
        c->samples[ns++] = (uint32_t)ni;
        ni += k;
    }
    c->nitems = ni;
    c->nsamples = ns;
    return SK_OK;
}
