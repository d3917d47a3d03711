/*
 * catalog_s3.c - S3 objects as pack inputs.  An s3:// prefix is listed
 * (ListObjectsV2, page after page) and every object under it becomes a
 * catalog item whose member name is its key relative to the prefix, so
 * the WebDataset grouping, sorting and shard plan are exactly those of the
 * same files in a local directory.  A list of keys (--files-from with an
 * s3:// --root) is sized by HEAD requests, many in flight at once.
 *
 * Only names and sizes are held here; the bytes are fetched later, in plan
 * order, by fetch_s3.c.
 */
#include "pack/catalog.h"
#include "io/io.h"
#include "s3/s3_internal.h"
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
    return SK_OK;
}

size_t sk_s3_item_key(const sk_catalog *c, const sk_item *it, char *buf, size_t cap)
{
    const sk_source *src = &c->srcs[it->src];
    if (src->keyed) {
        int n = snprintf(buf, cap, "%s", c->arena + it->spool_off);
        return n < 0 ? 0 : (size_t)n;
    }
    char name[SK_TAR_NAME_MAX + 1];
    sk_item_name(c, it, name);
    int n = snprintf(buf, cap, "%s%s", src->prefix ? src->prefix : "", name);
    return n < 0 ? 0 : (size_t)n;
}

int sk_catalog_s3_source(sk_catalog *c, const char *bucket, const char *prefix, int keyed,
                         uint16_t *id, sk_error *err)
{
    SK_FAIL_IF(!c->s3, err, SK_E_USAGE, "s3://%s/%s: an s3:// source needs an S3 client", bucket,
               prefix);
    size_t ln = strlen(bucket) + strlen(prefix) + 7;
    char *label = malloc(ln), *b = strdup(bucket), *p = strdup(prefix);
    int rc = label && b && p ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) {
        snprintf(label, ln, "s3://%s/%s", bucket, prefix);
        rc = sk_catalog_add_source(c, -1, 0, label, id, err);
    }
    free(label);
    if (rc) {
        free(b), free(p);
        return rc;
    }
    sk_source *s = &c->srcs[*id];
    s->is_s3 = 1;
    s->keyed = keyed;
    s->bucket = b;
    s->prefix = p;
    return SK_OK;
}

/* Splits url into bucket and a prefix that is "" or ends in '/', and adds
 * the source labelled "s3://bucket/prefix". */
static int add_s3_source(sk_catalog *c, const char *url, uint16_t *id, sk_error *err)
{
    SK_FAIL_IF(!c->s3, err, SK_E_USAGE, "%s: an s3:// source needs an S3 client", url);
    char *bucket = NULL, *key = NULL;
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    size_t kl = strlen(key);
    int rc = SK_OK;
    if (kl && key[kl - 1] != '/') { /* "s3://b/data" means the prefix "data/" */
        char *k2 = realloc(key, kl + 2);
        if (!k2) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        else key = k2, key[kl] = '/', key[kl + 1] = 0;
    }
    if (!rc) rc = sk_catalog_s3_source(c, bucket, key, 0, id, err);
    free(bucket), free(key);
    return rc;
}

/* ---------------------------------------------------------------- prefix */

struct list_ctx {
    sk_catalog *c;
    uint16_t src;
    size_t plen;
    uint64_t n;
    int rc;
    sk_error *err;
};

static int on_object(void *ud, const sk_s3_object *o)
{
    struct list_ctx *l = ud;
    const char *rel = o->key + l->plen;
    size_t n = strlen(rel);
    /* "dir/" placeholders (zero-byte objects the console makes) are not files */
    if (!n || rel[n - 1] == '/') return 0;
    l->n++;
    l->rc = sk_catalog_add_named(l->c, l->src, rel, o->size, l->err);
    return l->rc;
}

int sk_catalog_add_s3(sk_catalog *c, const char *url, sk_error *err)
{
    uint16_t src;
    SK_GUARD(add_s3_source(c, url, &src, err));
    const sk_source *s = &c->srcs[src];
    struct list_ctx l = {c, src, strlen(s->prefix), 0, 0, err};
    sk_error e = SK_ERROR_INIT;
    int rc = sk_s3_list(c->s3, s->bucket, s->prefix, on_object, &l, &e);
    if (l.rc) return l.rc;
    SK_FAIL_IF(rc, err, rc, "%s: listing failed: %s", s->label, e.msg);
    SK_FAIL_IF(!l.n, err, SK_E_NOTFOUND, "%s: no objects under this prefix", s->label);
    return SK_OK;
}

/* ------------------------------------------------------------- key list */

struct head_job {
    sk_s3_req r; /* first: the done callback gets &r */
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

static void head_done(sk_s3_req *r)
{
    struct head_job *j = (struct head_job *)r;
    struct heads *h = j->h;
    pthread_mutex_lock(&h->mu);
    h->rc[j->i] = r->rc ? (r->status == 404 ? SK_E_NOTFOUND : r->rc) : 0;
    h->size[j->i] = r->content_length;
    if (r->rc) h->errs[j->i] = strdup(r->err.msg);
    sk_buf_free(&r->resp);
    h->free_list[h->nfree++] = j;
    h->inflight--;
    pthread_cond_signal(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

int sk_catalog_add_s3_wants(sk_catalog *c, const sk_s3_want *w, size_t n, sk_error *err)
{
    int rc = SK_OK;
    struct heads h;
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    int window = c->s3_concurrency < 512 ? c->s3_concurrency : 512;
    struct head_job *jobs = NULL;
    if (n) {
        h.size = calloc(n, sizeof *h.size);
        h.rc = calloc(n, sizeof *h.rc);
        h.errs = calloc(n, sizeof *h.errs);
        jobs = calloc((size_t)window, sizeof *jobs);
        if (!h.size || !h.rc || !h.errs || !jobs) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        for (int k = 0; jobs && k < window; k++) h.free_list[h.nfree++] = &jobs[k];
    }
    for (size_t i = 0; !rc && i < n; i++) {
        pthread_mutex_lock(&h.mu);
        while (!h.nfree) pthread_cond_wait(&h.cv, &h.mu);
        struct head_job *j = h.free_list[--h.nfree];
        h.inflight++;
        pthread_mutex_unlock(&h.mu);
        sk_s3_req_init(&j->r, c->s3, "HEAD", c->srcs[w[i].src].bucket, w[i].key);
        j->r.done = head_done;
        j->h = &h;
        j->i = i;
        sk_s3_submit(&j->r);
    }
    pthread_mutex_lock(&h.mu);
    while (h.inflight) pthread_cond_wait(&h.cv, &h.mu);
    pthread_mutex_unlock(&h.mu);
    for (size_t i = 0; !rc && i < n; i++) {
        const sk_source *s = &c->srcs[w[i].src];
        if (h.rc[i])
            rc = sk_catalog_problem(c, err, h.rc[i], "s3://%s/%s: %s", s->bucket, w[i].key,
                                    h.rc[i] == SK_E_NOTFOUND || !h.errs[i] ? "no such object" : h.errs[i]);
        else if (s->keyed)
            rc = sk_catalog_add_keyed(c, w[i].src, w[i].name, h.size[i], w[i].key, err);
        else
            rc = sk_catalog_add_named(c, w[i].src, w[i].name, h.size[i], err);
    }
    for (size_t i = 0; h.errs && i < n; i++) free(h.errs[i]);
    free(jobs);
    free(h.size), free(h.rc), free(h.errs);
    pthread_mutex_destroy(&h.mu);
    pthread_cond_destroy(&h.cv);
    return rc;
}

int sk_catalog_add_s3_list(sk_catalog *c, FILE *list, const char *list_name, const char *base_url,
                           int nul_separated, sk_error *err)
{
    uint16_t src;
    SK_GUARD(add_s3_source(c, base_url, &src, err));
    /* every name first (names only, compact), then the HEADs */
    char **names = NULL, *line = NULL;
    size_t n = 0, cap = 0, lcap = 0;
    ssize_t got;
    int rc = SK_OK;
    const char *label = c->srcs[src].label;
    size_t label_len = strlen(label);
    while (!rc && (got = getdelim(&line, &lcap, nul_separated ? '\0' : '\n', list)) >= 0) {
        if (got > 0 && line[got - 1] == (nul_separated ? '\0' : '\n')) line[--got] = 0;
        if (!nul_separated && got > 0 && line[got - 1] == '\r') line[--got] = 0;
        if (!got) continue;
        const char *rel = line;
        if (sk_is_s3_url(line)) { /* a full URL must lie under the base */
            if (strncmp(line, label, label_len)) {
                rc = sk_catalog_problem(c, err, SK_E_INPUT, "%s: %s is not under %s", list_name,
                                        line, label);
                continue;
            }
            rel = line + label_len;
        }
        if ((rc = sk_grow((void **)&names, &cap, n + 1, sizeof *names, err))) break;
        if (!(names[n] = strdup(rel))) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        n++;
    }
    free(line);
    if (!rc && ferror(list)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", list_name);
    const sk_source *s = &c->srcs[src];
    sk_s3_want *w = NULL;
    size_t nw = 0;
    if (!rc && n && !(w = calloc(n, sizeof *w))) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (; !rc && nw < n; nw++) {
        size_t kl = strlen(s->prefix) + strlen(names[nw]) + 1;
        char *k = malloc(kl);
        if (!k) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        snprintf(k, kl, "%s%s", s->prefix, names[nw]);
        w[nw] = (sk_s3_want){src, k, names[nw]};
    }
    if (!rc) rc = sk_catalog_add_s3_wants(c, w, n, err);
    for (size_t i = 0; i < n; i++) free(names[i]);
    for (size_t i = 0; i < nw; i++) free((char *)w[i].key);
    free(names), free(w);
    return rc;
}
