/*
 * catalog_remote.c - remote objects as pack inputs, read through the store
 * (io/store.h) and so from wherever it reads: S3, web servers.  An S3
 * prefix is listed (the store's pager: its whole tree, page after page)
 * and every object under it becomes a catalog item whose member name is
 * its key relative to the prefix, so the WebDataset grouping, sorting and
 * shard plan are exactly those of the same files in a local directory.  A
 * list of names (--files-from with a remote --root; a web server has no
 * listing) is sized by HEAD requests, many in flight at once.
 *
 * Only names and sizes are held here; the bytes are fetched later, in plan
 * order, by fetch_remote.c.  A source's base is a location (bucket b, prefix p/,
 * "https://host/dir/"): an item's object is the base + its member name,
 * or, for a keyed source, the base + the name kept in the arena.
 */
#include "pack/catalog.h"
#include "format/tar.h"

#include <stdlib.h>

#define DEFAULT_CONCURRENCY 64

int sk_catalog_set_s3(sk_catalog *c, sk_s3 *s3, int concurrency, uint64_t part_size,
                      sk_error *err)
{
    SK_FAIL_IF(part_size && part_size < (5u << 20), err, SK_E_USAGE,
               "part size %llu is below S3's minimum of 5 MiB", (unsigned long long)part_size);
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "no S3 client");
    c->s3 = s3;
    c->s3_concurrency = concurrency > 0 ? concurrency : DEFAULT_CONCURRENCY;
    c->s3_part_size = part_size;
    if (c->env_ready) sk_store_env_release(&c->env);
    sk_store_env_init(&c->env, s3);
    c->env_ready = 1;
    return SK_OK;
}

size_t sk_item_url(const sk_catalog *c, const sk_item *it, char *buf, size_t cap)
{
    const sk_source *src = &c->srcs[it->src];
    int n;
    if (src->keyed) {
        n = snprintf(buf, cap, "%s%s", src->base, c->arena + it->spool_off);
    } else {
        char name[SK_TAR_NAME_MAX + 1];
        sk_item_name(c, it, name);
        n = snprintf(buf, cap, "%s%s", src->base, name);
    }
    return n < 0 ? 0 : (size_t)n;
}

int sk_catalog_remote_source(sk_catalog *c, const char *base, int keyed, uint16_t *id,
                             sk_error *err)
{
    SK_FAIL_IF(!c->env_ready, err, SK_E_USAGE, "%s: a remote source needs a client", base);
    char *b = strdup(base);
    SK_FAIL_IF(!b, err, SK_E_NOMEM, "out of memory");
    int rc = sk_catalog_add_source(c, -1, 0, base, id, err);
    if (rc) {
        free(b);
        return rc;
    }
    sk_source *s = &c->srcs[*id];
    s->remote = 1;
    s->keyed = keyed;
    s->base = b;
    return SK_OK;
}

/* A source for the location url, whose base ends in '/' (bucket b, key "data"
 * means the prefix "data/"; a bucket alone is its whole). */
static int add_url_source(sk_catalog *c, const char *url, uint16_t *id, sk_error *err)
{
    SK_FAIL_IF(!c->env_ready, err, SK_E_USAGE, "%s: a remote source needs a client", url);
    sk_store_where w;
    SK_GUARD(sk_store_classify(url, &w, err));
    SK_FAIL_IF(!w.remote, err, SK_E_USAGE, "%s: not a remote location", url);
    SK_FAIL_IF(!w.host_len, err, SK_E_USAGE, "%s: no %s in the URL", url, w.host_word);
    size_t n = strlen(url);
    char *base = malloc(n + 2);
    SK_FAIL_IF(!base, err, SK_E_NOMEM, "out of memory");
    memcpy(base, url, n + 1);
    if (url[n - 1] != '/') base[n] = '/', base[n + 1] = 0;
    int rc = sk_catalog_remote_source(c, base, 0, id, err);
    free(base);
    return rc;
}

/* ---------------------------------------------------------------- prefix */

struct list_ctx {
    sk_catalog *c;
    uint16_t src;
    uint64_t n;
    sk_error *err;
};

static int on_page(void *ctx, const sk_store_entry *v, size_t n)
{
    struct list_ctx *l = ctx;
    for (size_t i = 0; i < n; i++) {
        l->n++;
        SK_GUARD(sk_catalog_add_named(l->c, l->src, v[i].rel, v[i].size, l->err));
    }
    return SK_OK;
}

int sk_catalog_add_s3(sk_catalog *c, const char *url, sk_error *err)
{
    uint16_t src;
    SK_GUARD(add_url_source(c, url, &src, err));
    const char *label = c->srcs[src].label;
    struct list_ctx l = {c, src, 0, err};
    sk_error e = SK_ERROR_INIT;
    int rc = sk_store_list_entries(c->srcs[src].base, &c->env, 1, NULL, on_page, &l, &e);
    /* an item's own problem is already in err; the listing's is named here */
    if (rc && e.code) return sk_error_set(err, rc, "%s: listing failed: %s", label, e.msg);
    SK_GUARD(rc);
    SK_FAIL_IF(!l.n, err, SK_E_NOTFOUND, "%s: no objects under this prefix", label);
    return SK_OK;
}

/* ------------------------------------------------------------- key list */

struct head_job {
    sk_store_req *q;
    struct heads *h;
    size_t i;
};

struct heads {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int inflight;
    uint64_t *size;
    int *rc;
    char **errs; /* messages of failed HEADs only */
    struct head_job *free_list[512];
    int nfree;
};

static void head_done(sk_store_req *q, void *ud)
{
    struct head_job *j = ud;
    struct heads *h = j->h;
    sk_error e = SK_ERROR_INIT;
    uint64_t len = 0;
    int rc = sk_store_req_result(q, &len, &e);
    pthread_mutex_lock(&h->mu);
    h->rc[j->i] = rc;
    h->size[j->i] = len;
    if (rc && rc != SK_E_NOTFOUND) h->errs[j->i] = strdup(e.msg);
    h->free_list[h->nfree++] = j;
    h->inflight--;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

int sk_catalog_add_wants(sk_catalog *c, const sk_catalog_want *w, size_t n, sk_error *err)
{
    int rc = SK_OK;
    struct heads h;
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    int window = c->s3_concurrency < 512 ? c->s3_concurrency : 512;
    struct head_job *jobs = NULL;
    char **urls = NULL;
    if (n) {
        h.size = calloc(n, sizeof *h.size);
        h.rc = calloc(n, sizeof *h.rc);
        h.errs = calloc(n, sizeof *h.errs);
        urls = calloc(n, sizeof *urls);
        jobs = calloc((size_t)window, sizeof *jobs);
        if (!h.size || !h.rc || !h.errs || !urls || !jobs)
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        for (int k = 0; jobs && k < window; k++) h.free_list[h.nfree++] = &jobs[k];
    }
    for (size_t i = 0; !rc && i < n; i++) {
        if (asprintf(&urls[i], "%s%s", c->srcs[w[i].src].base, w[i].rel) < 0) {
            urls[i] = NULL;
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            break;
        }
        pthread_mutex_lock(&h.mu);
        while (!h.nfree) pthread_cond_wait(&h.cv, &h.mu);
        struct head_job *j = h.free_list[--h.nfree];
        pthread_mutex_unlock(&h.mu);
        /* a job on the free list is done: its request is over */
        sk_store_req_free(j->q);
        j->q = NULL;
        if ((rc = sk_store_req_new(&j->q, &c->env, urls[i], err))) break;
        j->h = &h;
        j->i = i;
        pthread_mutex_lock(&h.mu);
        h.inflight++;
        pthread_mutex_unlock(&h.mu);
        sk_store_req_head(j->q, head_done, j);
    }
    pthread_mutex_lock(&h.mu);
    while (h.inflight) pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    for (size_t i = 0; !rc && i < n; i++) {
        const sk_source *s = &c->srcs[w[i].src];
        if (h.rc[i])
            rc = sk_catalog_problem(c, err, h.rc[i], "%s: %s", urls[i],
                                    h.rc[i] == SK_E_NOTFOUND || !h.errs[i] ? "no such object" : h.errs[i]);
        else if (s->keyed)
            rc = sk_catalog_add_keyed(c, w[i].src, w[i].name, h.size[i], w[i].rel, err);
        else
            rc = sk_catalog_add_named(c, w[i].src, w[i].name, h.size[i], err);
    }
    for (int k = 0; jobs && k < window; k++) sk_store_req_free(jobs[k].q);
    for (size_t i = 0; h.errs && i < n; i++) free(h.errs[i]);
    for (size_t i = 0; urls && i < n; i++) free(urls[i]);
    free(jobs), free(urls);
    free(h.size), free(h.rc), free(h.errs);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    return rc;
}

int sk_catalog_add_s3_list(sk_catalog *c, FILE *list, const char *list_name, const char *base_url,
                           int nul_separated, sk_error *err)
{
    uint16_t src;
    SK_GUARD(add_url_source(c, base_url, &src, err));
    /* every name first (names only, compact), then the HEADs */
    char **names = NULL, *line = NULL;
    size_t n = 0, cap = 0, lcap = 0;
    ssize_t got;
    int rc = SK_OK;
    const char *base = c->srcs[src].base;
    size_t base_len = strlen(base);
    while (!rc && (got = getdelim(&line, &lcap, nul_separated ? '\0' : '\n', list)) >= 0) {
        if (got > 0 && line[got - 1] == (nul_separated ? '\0' : '\n')) line[--got] = 0;
        if (!nul_separated && got > 0 && line[got - 1] == '\r') line[--got] = 0;
        if (!got) continue;
        const char *rel = line;
        if (sk_store_is_remote(line)) { /* a full URL must lie under the base */
            if (strncmp(line, base, base_len)) {
                rc = sk_catalog_problem(c, err, SK_E_INPUT, "%s: %s is not under %s", list_name,
                                        line, base);
                continue;
            }
            rel = line + base_len;
        }
        /* checked before any request: on a web server "../x" is another
         * file, which the server is never asked for */
        if (!sk_catalog_name_usable(rel)) {
            rc = sk_catalog_problem(c, err, SK_E_INPUT, "%s%s: not a usable member name (empty, "
                                    "'.', '..', '//' or too long)", base, rel);
            continue;
        }
        if ((rc = sk_grow((void **)&names, &cap, n + 1, sizeof *names, err))) break;
        if (!(names[n] = strdup(rel))) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        n++;
    }
    free(line);
    if (!rc && ferror(list)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", list_name);
    sk_catalog_want *w = NULL;
    if (!rc && n && !(w = calloc(n, sizeof *w))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) w[i] = (sk_catalog_want){src, names[i], names[i]};
    if (!rc) rc = sk_catalog_add_wants(c, w, n, err);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names), free(w);
    return rc;
}
