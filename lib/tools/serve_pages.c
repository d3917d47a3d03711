/*
 * serve_pages.c - the pages of `shardkit serve`: the dataset (statistics
 * and shard list), a shard's samples (paged), a sample's members, a grid
 * of thumbnails, search by key prefix, and the raw bytes of a member and
 * of its thumbnail.  Every page reaches samples through the index only
 * (sk_dataset_at by global ordinal, sk_dataset_find by key), so a page of
 * a 100 M-sample dataset costs what it costs in a small one; every string
 * from the dataset is HTML-escaped and every link's parameter
 * percent-encoded.
 */
#include "format/image.h"
#include "tools/serve.h"

#include <stdlib.h>

#define PAGE 100        /* samples per shard page */
#define GRID 48         /* thumbnails per grid page */
#define PREVIEW 256     /* hex preview bytes */
#define TEXT_MAX (64u << 10)
#define JSON_PRETTY_MAX (1u << 20)
#define MEMBER_MAX ((uint64_t)256 << 20)
#define THUMB_SRC_MAX ((uint64_t)32 << 20)

/* ------------------------------------------------------------------ bits */

/* A query parameter of the request (the pages' only way in from the URL). */
const char *sk_q(const sk_query *q, const char *name, size_t *n)
{
    const char *v = NULL;
    size_t len = 0;
    if (sk_mhd.lookup_value_n(q->c, MHD_GET_ARGUMENT_KIND, name, strlen(name), &v, &len) !=
            MHD_YES || !v)
        return NULL;
    *n = len;
    return v;
}

/* A plain decimal of at most 19 digits (no sign, space or exponent). */
static int parse_u64(const char *s, size_t n, uint64_t *v)
{
    if (!s || !n || n > 19) return -1;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return 0;
}

int sk_q_u64(const sk_query *q, const char *name, uint64_t *v)
{
    size_t n = 0;
    const char *s = sk_q(q, name, &n);
    return parse_u64(s, n, v);
}


static int is_ext(const char *ext, size_t n, const char *const *list)
{
    for (; *list; list++)
        if (strlen(*list) == n && !memcmp(*list, ext, n)) return 1;
    return 0;
}

static const char *const images[] = {"jpg", "jpeg", "png", "gif", "webp", NULL};
static const char *const jpegs[] = {"jpg", "jpeg", NULL};
static const char *const texts[] = {"txt", "text", "cls", "cls2", "caption", "csv", "tsv", "md",
                                    "html", "htm", "xml", "yaml", "yml", "log", "id", "idx",
                                    "label", "labels", "sh", "py", NULL};

/* The type a member is served with: images as themselves, JSON as JSON,
 * known text (HTML and XML included) as text/plain, everything else as
 * bytes; never text/html, never image/svg+xml. */
static const char *member_type(const char *ext, size_t n)
{
    static const struct {
        const char *ext, *type;
    } t[] = {{"jpg", "image/jpeg"}, {"jpeg", "image/jpeg"}, {"png", "image/png"},
             {"gif", "image/gif"},  {"webp", "image/webp"}, {"json", "application/json"}};
    for (size_t i = 0; i < SK_ARRAY_LEN(t); i++)
        if (strlen(t[i].ext) == n && !memcmp(t[i].ext, ext, n)) return t[i].type;
    if (is_ext(ext, n, texts)) return "text/plain; charset=utf-8";
    return "application/octet-stream";
}

void sk_page_error(sk_reply *r, unsigned status, const char *msg)
{
    free(r->body);
    r->status = status;
    r->type = "text/plain; charset=utf-8";
    r->body = strdup(msg);
    r->len = r->body ? strlen(r->body) : 0;
    r->disposition[0] = 0;
}

static int head(sk_buf *b, const sk_srv *s, const char *title)
{
    SK_GUARD(sk_bufp(b, "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>"));
    SK_GUARD(sk_html_escs(b, title));
    SK_GUARD(sk_bufp(b, " - shardkit</title><style>%s</style></head><body><nav><a href='/'>"
                        "dataset</a><a href='grid'>grid</a>"
                        "<form action='search' method='get' style='display:inline'>"
                        "<input name='prefix' placeholder='key prefix'> <button>search</button>"
                        "</form> <form action='sample' method='get' style='display:inline'>"
                        "<input name='o' placeholder='#ordinal' size='10'> <button>go</button>"
                        "</form></nav><h1>",
                     sk_stats_css));
    return sk_html_escs(b, title);
}

/* Hands the page to the reply, or a 500 when it could not be built. */
static void finish(sk_reply *r, sk_buf *b, int rc)
{
    if (!rc) rc = sk_bufp(b, "</body></html>\n");
    if (rc) {
        sk_buf_free(b);
        sk_page_error(r, 500, "out of memory");
        return;
    }
    r->status = 200;
    r->type = "text/html; charset=utf-8";
    r->body = b->p;
    r->len = b->len;
}

static int key_link(sk_buf *b, const sk_hit *h)
{
    SK_GUARD(sk_bufp(b, "<a href='sample?o=%llu'><code>", (unsigned long long)h->global_ordinal));
    SK_GUARD(sk_html_esc(b, h->sample.key, h->sample.key_len));
    return sk_bufp(b, "</code></a>");
}

/* The sample an "o" (global ordinal) or "key" parameter names. */
static int find(sk_srv *s, const sk_query *q, sk_hit *h)
{
    uint64_t o;
    size_t kn;
    const char *k = sk_q(q, "key", &kn);
    sk_error err = SK_ERROR_INIT;
    if (k) return sk_dataset_find(s->ds, k, kn, h, &err);
    /* the ordinal box takes "#7" as well as "7" (`shardkit get` writes an
     * ordinal as #N, and so do the pages' titles) */
    const char *os = sk_q(q, "o", &kn);
    if (os && kn > 1 && os[0] == '#') os++, kn--;
    if (parse_u64(os, os ? kn : 0, &o)) return SK_E_NOTFOUND;
    return sk_dataset_at(s->ds, o, h, &err);
}

/* The statistics, computed once (index only) on first need. */
static const json_t *stats_doc(sk_srv *s)
{
    pthread_mutex_lock(&s->mu);
    if (!s->stats && !s->stats_rc) {
        sk_error err = SK_ERROR_INIT;
        sk_stats *st;
        if ((s->stats_rc = sk_stats_run(s->ds, s->name, NULL, &st, &err))) {
            snprintf(s->stats_err, sizeof s->stats_err, "%s", err.msg);
        } else {
            s->stats = json_incref(st->doc);
            sk_stats_free(st);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return s->stats;
}

/* ----------------------------------------------------------------- pages */

void sk_page_dataset(sk_srv *s, const sk_query *q, sk_reply *r)
{
    (void)q;
    sk_buf b = {0};
    const json_t *doc = stats_doc(s);
    int rc = head(&b, s, s->name);
    if (!rc) rc = sk_bufp(&b, "</h1>");
    if (!rc && !doc) {
        rc = sk_bufp(&b, "<p>statistics failed: ");
        if (!rc) rc = sk_html_escs(&b, s->stats_err);
    } else if (!rc) {
        rc = sk_stats_html_body(doc, 1, &b);
    }
    finish(r, &b, rc);
}

void sk_page_shard(sk_srv *s, const sk_query *q, sk_reply *r)
{
    uint64_t i, page = 0;
    sk_dataset_shard_info si;
    sk_error err = SK_ERROR_INIT;
    if (sk_q_u64(q, "i", &i) || i >= sk_dataset_shard_count(s->ds) ||
        sk_dataset_shard(s->ds, (size_t)i, &si, &err))
        return sk_page_error(r, 404, "no such shard");
    if (sk_q(q, "page", &(size_t){0}) && sk_q_u64(q, "page", &page))
        return sk_page_error(r, 404, "no such page");
    uint64_t pages = si.samples ? (si.samples + PAGE - 1) / PAGE : 1;
    if (page >= pages) return sk_page_error(r, 404, "no such page");
    sk_buf b = {0};
    int rc = head(&b, s, si.path);
    if (!rc) rc = sk_bufp(&b, "</h1><p>shard %llu: %llu samples, %llu bytes; page %llu of %llu ",
                          (unsigned long long)i, (unsigned long long)si.samples,
                          (unsigned long long)si.bytes, (unsigned long long)page + 1,
                          (unsigned long long)pages);
    if (!rc && page) rc = sk_bufp(&b, "<a href='shard?i=%llu&amp;page=%llu'>previous</a> ",
                                  (unsigned long long)i, (unsigned long long)page - 1);
    if (!rc && page + 1 < pages)
        rc = sk_bufp(&b, "<a href='shard?i=%llu&amp;page=%llu'>next</a>", (unsigned long long)i,
                     (unsigned long long)page + 1);
    if (!rc) rc = sk_bufp(&b, "</p><table><tr><th>#</th><th>ordinal</th><th class='l'>key</th>"
                              "<th class='l'>members</th><th>bytes</th></tr>");
    for (uint64_t j = page * PAGE; !rc && j < si.samples && j < (page + 1) * PAGE; j++) {
        sk_hit h;
        if ((rc = sk_dataset_at(s->ds, si.first_ordinal + j, &h, &err))) break;
        rc = sk_bufp(&b, "<tr><td>%llu</td><td>%llu</td><td class='l'>", (unsigned long long)j,
                     (unsigned long long)h.global_ordinal);
        if (!rc) rc = key_link(&b, &h);
        if (!rc) rc = sk_bufp(&b, "</td><td class='l'>");
        for (uint32_t m = 0; !rc && m < h.sample.member_count; m++) {
            sk_member_ref mr;
            if (!(rc = sk_dataset_member(s->ds, &h, m, &mr, &err))) {
                rc = sk_bufp(&b, m ? ", " : "");
                if (!rc) rc = sk_html_esc(&b, mr.ext, mr.ext_len);
            }
        }
        if (!rc) rc = sk_bufp(&b, "</td><td>%llu</td></tr>", (unsigned long long)h.sample.span);
    }
    if (!rc) rc = sk_bufp(&b, "</table>");
    finish(r, &b, rc);
}

/* One member on the sample page, shown as what it is. */
static int show_member(sk_srv *s, const sk_hit *h, uint32_t m, const sk_member_ref *mr, sk_buf *b)
{
    sk_error err = SK_ERROR_INIT;
    unsigned long long o = (unsigned long long)h->global_ordinal;
    SK_GUARD(sk_bufp(b, "<h2><code>."));
    SK_GUARD(sk_html_esc(b, mr->ext, mr->ext_len));
    SK_GUARD(sk_bufp(b, "</code> <span class='muted'>%llu bytes</span> <a href='member?o=%llu"
                        "&amp;m=%u&amp;download=1'>download</a></h2>",
                     (unsigned long long)mr->size, o, m));
    if (is_ext(mr->ext, mr->ext_len, images))
        return sk_bufp(b, "<img src='member?o=%llu&amp;m=%u' alt='member %u' style='max-width:"
                          "100%%'>", o, m, m);
    size_t want = mr->size < TEXT_MAX ? (size_t)mr->size : TEXT_MAX;
    int is_json = mr->ext_len == 4 && !memcmp(mr->ext, "json", 4) && mr->size <= JSON_PRETTY_MAX;
    if (is_json) want = (size_t)mr->size;
    unsigned char *data = malloc(want ? want : 1);
    if (!data) return SK_E_NOMEM;
    size_t got = 0;
    int rc = sk_dataset_read_head(s->ds, h, m, data, want, &got, &err);
    if (rc) {
        free(data);
        SK_GUARD(sk_bufp(b, "<p>cannot read it: "));
        SK_GUARD(sk_html_escs(b, err.msg));
        return sk_bufp(b, "</p>");
    }
    json_t *v = is_json ? json_loadb((const char *)data, got, JSON_DECODE_ANY, NULL) : NULL;
    if (v) {
        char *pretty = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY);
        json_decref(v);
        rc = !pretty ? SK_E_NOMEM : sk_bufp(b, "<pre class='json'>");
        if (!rc) rc = sk_html_escs(b, pretty);
        if (!rc) rc = sk_bufp(b, "</pre>");
        free(pretty);
        free(data);
        return rc;
    }
    int text = is_json || is_ext(mr->ext, mr->ext_len, texts);
    for (size_t i = 0; !text && i < got && i < 4096; i++)
        if (!data[i]) text = -1;
    if (text == 0) text = got > 0; /* no NUL in the first bytes: show as text */
    if (text > 0) {
        rc = sk_bufp(b, "<pre>");
        if (!rc) rc = sk_html_esc(b, (const char *)data, got);
        if (!rc) rc = sk_bufp(b, "%s</pre>", got < mr->size ? "\n..." : "");
    } else {
        rc = sk_bufp(b, "<pre>");
        for (size_t i = 0; !rc && i < got && i < PREVIEW; i++)
            rc = sk_bufp(b, "%02x%s", data[i], i % 16 == 15 ? "\n" : " ");
        if (!rc) rc = sk_bufp(b, "%s</pre>", mr->size > PREVIEW ? "..." : "");
    }
    free(data);
    return rc;
}

void sk_page_sample(sk_srv *s, const sk_query *q, sk_reply *r)
{
    sk_hit h;
    sk_error err = SK_ERROR_INIT;
    if (find(s, q, &h)) return sk_page_error(r, 404, "no such sample");
    sk_buf b = {0};
    char title[64];
    snprintf(title, sizeof title, "sample #%llu", (unsigned long long)h.global_ordinal);
    int rc = head(&b, s, title);
    if (!rc) rc = sk_bufp(&b, "</h1><p>key <code>");
    if (!rc) rc = sk_html_esc(&b, h.sample.key, h.sample.key_len);
    if (!rc) rc = sk_bufp(&b, "</code> in <a href='shard?i=%zu&amp;page=%llu'>", h.shard,
                          (unsigned long long)h.sample.ordinal / PAGE);
    if (!rc) rc = sk_html_escs(&b, h.shard_path);
    if (!rc) rc = sk_bufp(&b, "</a> (sample %llu of the shard) ",
                          (unsigned long long)h.sample.ordinal);
    if (!rc && h.global_ordinal)
        rc = sk_bufp(&b, "<a href='sample?o=%llu'>previous</a> ",
                     (unsigned long long)h.global_ordinal - 1);
    if (!rc) rc = sk_bufp(&b, "<a href='sample?o=%llu'>next</a></p>",
                          (unsigned long long)h.global_ordinal + 1);
    for (uint32_t m = 0; !rc && m < h.sample.member_count; m++) {
        sk_member_ref mr;
        if (!(rc = sk_dataset_member(s->ds, &h, m, &mr, &err))) rc = show_member(s, &h, m, &mr, &b);
    }
    finish(r, &b, rc);
}

void sk_page_grid(sk_srv *s, const sk_query *q, sk_reply *r)
{
    uint64_t start = 0, total = 0;
    sk_error err = SK_ERROR_INIT;
    if (sk_q(q, "o", &(size_t){0}) && sk_q_u64(q, "o", &start))
        return sk_page_error(r, 404, "no such sample");
    if (sk_dataset_samples(s->ds, &total, &err) || (start && start >= total))
        return sk_page_error(r, 404, "no such sample");
    sk_buf b = {0};
    int rc = head(&b, s, "grid");
    if (!rc) rc = sk_bufp(&b, "</h1><p>samples %llu to %llu of %llu ", (unsigned long long)start,
                          (unsigned long long)(start + GRID < total ? start + GRID : total) - 1,
                          (unsigned long long)total);
    if (!rc && start)
        rc = sk_bufp(&b, "<a href='grid?o=%llu'>previous</a> ",
                     (unsigned long long)(start > GRID ? start - GRID : 0));
    if (!rc && start + GRID < total)
        rc = sk_bufp(&b, "<a href='grid?o=%llu'>next</a>", (unsigned long long)start + GRID);
    if (!rc) rc = sk_bufp(&b, "</p><div class='grid'>");
    for (uint64_t g = start; !rc && g < total && g < start + GRID; g++) {
        sk_hit h;
        if ((rc = sk_dataset_at(s->ds, g, &h, &err))) break;
        int shown = 0;
        rc = sk_bufp(&b, "<a href='sample?o=%llu'>", (unsigned long long)g);
        for (uint32_t m = 0; !rc && !shown && m < h.sample.member_count; m++) {
            sk_member_ref mr;
            if ((rc = sk_dataset_member(s->ds, &h, m, &mr, &err))) break;
            if (!is_ext(mr.ext, mr.ext_len, jpegs)) continue;
            rc = sk_bufp(&b, "<img class='thumb' src='thumb?o=%llu&amp;m=%u' alt='' "
                             "loading='lazy'><br>",
                         (unsigned long long)g, m);
            shown = 1;
        }
        if (!rc) rc = sk_html_esc(&b, h.sample.key, h.sample.key_len);
        if (!rc) rc = sk_bufp(&b, "</a>");
    }
    if (!rc) rc = sk_bufp(&b, "</div>");
    finish(r, &b, rc);
}

static int has_prefix(const sk_hit *h, const char *p, size_t n)
{
    return h->sample.key_len >= n && !memcmp(h->sample.key, p, n);
}

/* Key order: bytewise, a prefix before the longer key. */
static int key_below(const sk_hit *h, const char *p, size_t n)
{
    size_t l = h->sample.key_len < n ? h->sample.key_len : n;
    int d = memcmp(h->sample.key, p, l);
    return d < 0 || (!d && h->sample.key_len < n);
}

void sk_page_search(sk_srv *s, const sk_query *q, sk_reply *r)
{
    size_t n;
    const char *p = sk_q(q, "prefix", &n);
    sk_error err = SK_ERROR_INIT;
    uint64_t total;
    if (!p || sk_dataset_samples(s->ds, &total, &err)) return sk_page_error(r, 404, "no prefix");
    const json_t *doc = stats_doc(s);
    int sorted = doc && json_is_true(json_object_get(json_object_get(doc, "keys"), "sorted"));
    sk_buf b = {0};
    int rc = head(&b, s, "search");
    if (!rc) rc = sk_bufp(&b, "</h1><p>keys starting with <code>");
    if (!rc) rc = sk_html_esc(&b, p, n);
    if (!rc) rc = sk_bufp(&b, "</code>%s</p><ul>",
                          sorted ? "" : " (the dataset is not in key order: exact key only)");
    sk_hit h;
    if (!rc && !sorted && !sk_dataset_find(s->ds, p, n, &h, &err)) {
        rc = sk_bufp(&b, "<li>");
        if (!rc) rc = key_link(&b, &h);
    } else if (!rc && sorted) {
        /* keys rise through the ordinals: the first at or after the prefix
         * by a binary search over them, O(log samples) index reads */
        uint64_t lo = 0, hi = total;
        while (!rc && lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if ((rc = sk_dataset_at(s->ds, mid, &h, &err))) break;
            if (key_below(&h, p, n)) lo = mid + 1;
            else hi = mid;
        }
        int shown = 0;
        for (uint64_t g = lo; !rc && g < total && shown < 100; g++, shown++) {
            if ((rc = sk_dataset_at(s->ds, g, &h, &err)) || !has_prefix(&h, p, n)) break;
            rc = sk_bufp(&b, "<li>");
            if (!rc) rc = key_link(&b, &h);
        }
        if (!rc && shown == 100) rc = sk_bufp(&b, "<li>... (the first 100)");
    }
    if (rc == SK_E_NOTFOUND) rc = SK_OK;
    if (!rc) rc = sk_bufp(&b, "</ul>");
    finish(r, &b, rc);
}

/* A file name for Content-Disposition: the key's last component and the
 * extension, anything but [A-Za-z0-9._-] as '_'. */
static void download_name(char *out, size_t cap, const sk_hit *h, const sk_member_ref *mr)
{
    const char *k = h->sample.key;
    size_t kl = h->sample.key_len;
    for (size_t i = 0; i < h->sample.key_len; i++)
        if (h->sample.key[i] == '/') k = h->sample.key + i + 1, kl = h->sample.key_len - i - 1;
    char name[100];
    int n = snprintf(name, sizeof name, "%.*s.%.*s", (int)(kl > 60 ? 60 : kl), k,
                     (int)(mr->ext_len > 30 ? 30 : mr->ext_len), mr->ext);
    for (int i = 0; i < n && i < (int)sizeof name - 1; i++) {
        char c = name[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (!ok) name[i] = '_';
    }
    snprintf(out, cap, "attachment; filename=\"%s\"", name);
}

/* The member an "o" and "m" parameter name, read whole (at most max). */
static int read_member(sk_srv *s, const sk_query *q, uint64_t max, sk_hit *h, sk_member_ref *mr,
                       unsigned char **data, uint32_t *mi)
{
    uint64_t o, m;
    sk_error err = SK_ERROR_INIT;
    if (sk_q_u64(q, "o", &o) || sk_q_u64(q, "m", &m) || sk_dataset_at(s->ds, o, h, &err) ||
        m >= h->sample.member_count || sk_dataset_member(s->ds, h, (uint32_t)m, mr, &err))
        return 404;
    if (mr->size > max) return 413;
    if (!(*data = malloc(mr->size ? (size_t)mr->size : 1))) return 500;
    if (sk_dataset_read(s->ds, h, (uint32_t)m, *data, (size_t)mr->size, &err)) {
        free(*data);
        *data = NULL;
        return 500;
    }
    *mi = (uint32_t)m;
    return 200;
}

void sk_page_member(sk_srv *s, const sk_query *q, sk_reply *r)
{
    sk_hit h;
    sk_member_ref mr;
    unsigned char *data = NULL;
    uint32_t m;
    int st = read_member(s, q, MEMBER_MAX, &h, &mr, &data, &m);
    if (st != 200)
        return sk_page_error(r, (unsigned)st, st == 404 ? "no such member"
                                              : st == 413 ? "member too large to serve"
                                                          : "cannot read the member");
    r->status = 200;
    r->body = (char *)data;
    r->len = (size_t)mr.size;
    r->type = member_type(mr.ext, mr.ext_len);
    r->cache = 1;
    if (sk_q(q, "download", &(size_t){0}) || !strcmp(r->type, "application/octet-stream"))
        download_name(r->disposition, sizeof r->disposition, &h, &mr);
}

void sk_page_thumb(sk_srv *s, const sk_query *q, sk_reply *r)
{
    uint64_t o, m;
    size_t len;
    if (sk_q_u64(q, "o", &o) || sk_q_u64(q, "m", &m) || m > UINT32_MAX)
        return sk_page_error(r, 404, "no such member");
    unsigned char *t = sk_thumbs_get(s->thumbs, o, (uint32_t)m, &len);
    if (!t) {
        sk_hit h;
        sk_member_ref mr;
        unsigned char *data = NULL;
        uint32_t mi;
        int st = read_member(s, q, THUMB_SRC_MAX, &h, &mr, &data, &mi);
        if (st != 200 || !is_ext(mr.ext, mr.ext_len, jpegs)) {
            free(data);
            return sk_page_error(r, 404, "no thumbnail");
        }
        sk_image_options io;
        sk_image_options_init(&io);
        io.image_size = s->o.thumb_size;
        io.resize_mode = SK_RESIZE_KEEP_RATIO_LARGEST;
        io.resize_only_if_bigger = 1;
        io.encode_quality = 80;
        sk_image_result ir;
        memset(&ir, 0, sizeof ir);
        sk_error err = SK_ERROR_INIT;
        if (sk_image_transform(&io, data, (size_t)mr.size, &ir, &err) ||
            ir.verdict != SK_IMAGE_DONE) {
            free(ir.out);
            free(data);
            return sk_page_error(r, 404, "not a readable JPEG");
        }
        if (ir.out) {
            free(data);
            t = ir.out, len = ir.out_len;
        } else {
            t = data, len = (size_t)mr.size; /* already small: as it is */
        }
        sk_thumbs_put(s->thumbs, o, (uint32_t)m, t, len);
    }
    r->status = 200;
    r->body = (char *)t;
    r->len = len;
    r->type = "image/jpeg";
    r->cache = 1;
}
