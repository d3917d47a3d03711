/*
 * store.c - the store interface's own part, which every kind uses: which
 * kind a location names, closing, reading a store whole, listings, and
 * the public range reader as a view of a store.
 * What a location names is asked here and only here by the jobs
 * (sk_store_classify): none of them compares a prefix with "s3://".
 * Which kind opens a location is store_open.c's, above the kinds.
 */
#include "io/store.h"
#include "s3/s3_internal.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int sk_store_classify(const char *url, sk_store_where *w, sk_error *err)
{
    int k;
    memset(w, 0, sizeof *w);
    /* the one grammar (core/place.c) that every tool's options go through:
     * a job and a tool never disagree about what a name is */
    SK_GUARD(sk_place_check(url, SK_PLACE_READ | SK_PLACE_STREAM | SK_PLACE_S3_OK | SK_PLACE_HTTP_OK,
                            NULL, &k, err));
    w->kind = k == SK_PLACE_S3 ? SK_LOC_S3 : k == SK_PLACE_HTTP ? SK_LOC_HTTP : SK_LOC_LOCAL;
    w->remote = w->kind != SK_LOC_LOCAL;
    w->listable = w->kind != SK_LOC_HTTP && k != SK_PLACE_STDIO;
    w->writable = w->kind != SK_LOC_HTTP;
    w->copyable = w->kind == SK_LOC_S3;
    w->host_word = w->kind == SK_LOC_S3 ? "bucket" : w->remote ? "host" : "";
    if (w->remote) {
        w->host = (size_t)(strstr(url, "://") - url) + 3;
        w->host_len = strcspn(url + w->host, "/");
        w->path = w->host + w->host_len + (url[w->host + w->host_len] == '/');
    }
    return SK_OK;
}

int sk_store_kind(const char *url, sk_loc_kind *kind, sk_error *err)
{
    sk_store_where w;
    SK_GUARD(sk_store_classify(url, &w, err));
    *kind = w.kind;
    return SK_OK;
}

/* The yes/no views: a name the grammar refuses is none of these (its open
 * fails, naming why). */
static sk_loc_kind kind_of(const char *url)
{
    sk_store_where w;
    return url && !sk_store_classify(url, &w, NULL) ? w.kind : SK_LOC_LOCAL;
}

int sk_store_is_http(const char *url) { return kind_of(url) == SK_LOC_HTTP; }

int sk_store_is_s3(const char *url) { return kind_of(url) == SK_LOC_S3; }

void sk_store_lower_scheme(char *url)
{
    if (kind_of(url) == SK_LOC_LOCAL) return;
    for (char *c = url; *c && *c != ':'; c++) *c = (char)tolower((unsigned char)*c);
}

int sk_store_is_remote(const char *url) { return kind_of(url) != SK_LOC_LOCAL; }

int sk_store_env_need_s3(sk_store_env *e, const char *endpoint, sk_error *err)
{
    if (e->s3) return SK_OK;
    sk_s3_config cfg = SK_S3_CONFIG_INIT;
    cfg.endpoint_url = endpoint;
    SK_GUARD(sk_s3_new(&e->s3, &cfg, err));
    e->own_s3 = 1;
    return SK_OK;
}

int sk_store_reach(const char *url, sk_s3 *s3, const char *what, sk_error *err)
{
    sk_loc_kind k;
    SK_GUARD(sk_store_kind(url, &k, err));
    SK_FAIL_IF(k == SK_LOC_S3 && !s3, err, SK_E_USAGE, "%s: an s3:// %s needs an S3 client", url, what);
    return SK_OK;
}

char *sk_store_bucket_url(const char *bucket, const char *key)
{
    char *u;
    return asprintf(&u, "s3://%s/%s", bucket, key ? key : "") < 0 ? NULL : u;
}

int sk_store_env_for(sk_store_env *e, const char *url, const char *endpoint, sk_error *err)
{
    return sk_store_is_s3(url) ? sk_store_env_need_s3(e, endpoint, err) : SK_OK;
}

void sk_store_close(sk_store *s)
{
    if (s) s->ops->close(s);
}

/* ------------------------------------------------------------ listing */

struct pager {
    int (*keep)(const char *name);
    sk_store_page_fn page;          /* sk_store_list: full locations */
    sk_store_entries_fn entries;    /* sk_store_list_entries: with sizes */
    void *ctx;
    int deep;
    const char *prefix; /* S3: the key prefix; the page's names are "s3://bucket/KEY" */
    size_t plen;
    const char *bucket;
    const char *after; /* sk_store_list_page: its start-after key (a server may ignore it) */
    size_t seen;       /* sk_store_list_page: objects listed after it, entries or not */
    char *names[1000];
    sk_store_entry ents[1000];
    size_t n;
    int rc;
};

static int flush(struct pager *p)
{
    if (p->n && !p->rc) p->rc = p->entries ? p->entries(p->ctx, p->ents, p->n) : p->page(p->ctx, p->names, p->n);
    for (size_t i = 0; i < p->n; i++) free(p->names[i]);
    p->n = 0;
    return p->rc;
}

/* full holds the location, then (S3) its ETag and CRC32C, each after a NUL */
static int add_name(struct pager *p, char *full, size_t rel_off, uint64_t size, int tagged)
{
    if (!full) return p->rc = SK_E_NOMEM;
    const char *etag = tagged ? full + strlen(full) + 1 : "";
    p->ents[p->n] = (sk_store_entry){full, full + rel_off, size, etag, tagged ? etag + strlen(etag) + 1 : ""};
    p->names[p->n++] = full;
    return p->n == SK_ARRAY_LEN(p->names) ? flush(p) : 0;
}

static int on_object(void *ud, const sk_s3_object *obj)
{
    struct pager *p = ud;
    /* a server that ignores start-after: what lies before it is not this page's */
    if (p->after && strcmp(obj->key, p->after) <= 0) return 0;
    p->seen++;
    /* the listing is the server's bytes: outside the prefix, below a
     * further '/' ("../x" too) or a dot name is no entry of this prefix;
     * a deep listing takes names with '/' (the caller checks them, as it
     * checks any name) but never "dir/" placeholders */
    if (strncmp(obj->key, p->prefix, p->plen)) return 0;
    const char *name = obj->key + p->plen;
    size_t n = strlen(name);
    if (!n || (p->deep ? name[n - 1] == '/' : name[0] == '.' || strchr(name, '/')) ||
        (p->keep && !p->keep(name)))
        return 0;
    char *full;
    int k = asprintf(&full, "s3://%s/%s%c%s%c%s", p->bucket, obj->key, 0, obj->etag, 0, obj->crc32c);
    if (k < 0) full = NULL;
    return add_name(p, full, full ? strlen(full) - n : 0, obj->size, 1);
}

static int list_any(const char *url, sk_store_env *e, struct pager *p, sk_error *err)
{
    sk_loc_kind k;
    SK_GUARD(sk_store_kind(url, &k, err));
    SK_FAIL_IF(k == SK_LOC_HTTP, err, SK_E_USAGE, "%s: a web server has no listing: name its "
               "manifest.json or a brace pattern of its shards", url);
    if (k == SK_LOC_S3) {
        char *bucket = NULL, *key = NULL;
        SK_FAIL_IF(!e || !e->s3, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client", url);
        SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
        p->bucket = bucket, p->prefix = key, p->plen = strlen(key);
        int rc = sk_s3_list(e->s3, bucket, key, on_object, p, err);
        if (!rc && !flush(p) && p->rc) rc = p->rc;
        if (!rc && p->rc) rc = p->rc == SK_E_NOMEM ? sk_error_set(err, SK_E_NOMEM, "out of memory") : p->rc;
        flush(p);
        free(bucket), free(key);
        return rc;
    }
    SK_FAIL_IF(p->deep, err, SK_E_USAGE, "%s: a deep listing is of an s3:// prefix (walk a directory)", url);
    DIR *d = opendir(url);
    SK_FAIL_IF(!d, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot list: %s", url,
               strerror(errno));
    for (struct dirent *de; !p->rc && (de = readdir(d));) {
        if (de->d_name[0] == '.' || (p->keep && !p->keep(de->d_name))) continue;
        char *full;
        int n = asprintf(&full, "%s/%s", url, de->d_name);
        if (n < 0) full = NULL;
        add_name(p, full, full ? (size_t)n - strlen(de->d_name) : 0, UINT64_MAX, 0);
    }
    closedir(d);
    flush(p);
    return p->rc == SK_E_NOMEM ? sk_error_set(err, SK_E_NOMEM, "out of memory") : p->rc;
}

int sk_store_list(const char *url, sk_store_env *e, int (*keep)(const char *name),
                  sk_store_page_fn page, void *ctx, sk_error *err)
{
    struct pager p = {.keep = keep, .page = page, .ctx = ctx};
    return list_any(url, e, &p, err);
}

int sk_store_list_entries(const char *url, sk_store_env *e, int deep, int (*keep)(const char *name),
                          sk_store_entries_fn page, void *ctx, sk_error *err)
{
    struct pager p = {.keep = keep, .entries = page, .ctx = ctx, .deep = deep};
    return list_any(url, e, &p, err);
}

int sk_store_list_page(const char *url, sk_store_env *e, const char *after, sk_store_entries_fn page,
                       void *ctx, int *more, sk_error *err)
{
    sk_loc_kind k;
    *more = 0;
    SK_GUARD(sk_store_kind(url, &k, err));
    SK_FAIL_IF(k != SK_LOC_S3, err, SK_E_USAGE, "%s: a paged listing is of an s3:// prefix", url);
    SK_FAIL_IF(!e || !e->s3, err, SK_E_USAGE, "%s: an s3:// dataset needs an S3 client", url);
    char *bucket = NULL, *key = NULL, *start = NULL;
    SK_GUARD(sk_s3_parse_url(url, &bucket, &key, err));
    int rc = after && *after && asprintf(&start, "%s%s", key, after) < 0
                 ? sk_error_set(err, SK_E_NOMEM, "out of memory") : SK_OK;
    struct pager p = {.entries = page, .ctx = ctx, .deep = 1, .bucket = bucket, .prefix = key,
                      .plen = strlen(key), .after = start};
    if (!rc) rc = sk_s3_list_page(e->s3, bucket, key, start, on_object, &p, more, err);
    if (!rc && !flush(&p) && p.rc) rc = p.rc;
    if (!rc && p.rc) rc = p.rc == SK_E_NOMEM ? sk_error_set(err, SK_E_NOMEM, "out of memory") : p.rc;
    flush(&p);
    /* a page with nothing after its start that says more follows would be
     * asked for again and again: the server does not honour start-after */
    if (!rc && *more && !p.seen)
        rc = sk_error_set(err, SK_E_REMOTE, "%s: the listing after '%s' is empty yet says more "
                          "follows: the server is looping", url, start ? start : "");
    free(bucket), free(key), free(start);
    return rc;
}

/* ------------------------------------------------- the public range view */

static int view_read_at(void *ctx, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    sk_store *s = ctx;
    *got = 0;
    SK_FAIL_IF(!s->ops->read_at, err, SK_E_USAGE, "%s: cannot be read at an offset (a stream)", s->url);
    return s->ops->read_at(s, off, buf, n, got, err);
}

static void view_close(void *ctx)
{
    sk_store_close(ctx);
}

void sk_store_range_view(sk_store *s, uint64_t size, sk_range_reader *rr)
{
    *rr = (sk_range_reader){.ctx = s, .read_at = view_read_at, .size = size, .close = view_close};
}

/* Every byte of a store up to max (a manifest, an index): through the
 * kind's own load when it has one, else its sequential reader. */
int sk_store_read_whole(sk_store *s, size_t max, const char *what, sk_buf *out, sk_error *err)
{
    sk_store_seq *q = NULL;
    out->len = 0;
    if (s->ops->load) return s->ops->load(s, max, what, out, err);
    int rc = s->ops->open_seq(s, 0, &q, err);
    char chunk[64 << 10];
    for (size_t got = 1; !rc && got;) {
        rc = q->read(q, chunk, sizeof chunk, &got, err);
        if (!rc && out->len + got > max)
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: a %s is at most %zu MiB; this one is bigger "
                              "(or its body does not end)", s->url, what, max >> 20);
        else if (!rc && got && sk_buf_add(out, chunk, got))
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    if (!rc && !out->p && sk_buf_add(out, "", 0)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (q) q->close(q);
    return rc;
}
