/*
 * stats_html.c - a stats document (stats.c) as HTML: tables and plots
 * drawn as inline SVG, for `stats --html` (a self-contained page: no
 * script, no font, nothing fetched) and serve's dataset page.  Every
 * string that came from the dataset (shard names, extensions, keys, JSON
 * keys) goes through sk_html_esc, so a hostile name shows as text.
 */
#include "tools/stats.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>

const char sk_stats_css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1100px}"
    "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{padding:2px 10px;text-align:right;"
    "border-bottom:1px solid #eee}th{background:#f4f4f4}td.l,th.l{text-align:left}"
    "svg{display:block;margin:.5em 0}.bar{fill:#4a7fb5}.bad{fill:#c0504d}.ax{stroke:#999}"
    "text{font:11px sans-serif;fill:#333}.muted{color:#777}code,pre{font:12px monospace}"
    "pre{background:#f7f7f7;padding:.6em;overflow:auto;max-height:40em}"
    ".grid a{display:inline-block;margin:3px;text-align:center;font-size:11px;width:170px;"
    "overflow:hidden;vertical-align:top}.grid img{max-width:160px;max-height:160px}"
    "nav a{margin-right:1em}";

int sk_bufp(sk_buf *b, const char *fmt, ...)
{
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return SK_E_NOMEM;
    if ((size_t)n < sizeof small) return sk_buf_add(b, small, (size_t)n);
    char *big = malloc((size_t)n + 1);
    if (!big) return SK_E_NOMEM;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    int rc = sk_buf_add(b, big, (size_t)n);
    free(big);
    return rc;
}

int sk_html_esc(sk_buf *b, const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *r = c == '&' ? "&amp;" : c == '<' ? "&lt;" : c == '>' ? "&gt;"
                      : c == '"' ? "&quot;" : c == '\'' ? "&#39;"
                      : (c < 0x20 && c != '\t' && c != '\n') || c == 0x7f ? "\xef\xbf\xbd" : NULL;
        if (!r) continue;
        if (sk_buf_add(b, s + from, i - from) || sk_buf_add(b, r, strlen(r))) return SK_E_NOMEM;
        from = i + 1;
    }
    return sk_buf_add(b, s + from, n - from);
}

int sk_html_escs(sk_buf *b, const char *s)
{
    return sk_html_esc(b, s, strlen(s));
}

int sk_url_esc(sk_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char e[3] = {'%', hex[c >> 4], hex[c & 15]};
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.' || c == '~' || c == '/';
        if (plain ? sk_buf_add(b, s + i, 1) : sk_buf_add(b, e, 3)) return SK_E_NOMEM;
    }
    return SK_OK;
}

/* Vertical bars, one per value, scaled to the largest; labels under the
 * first and last (and each when there are few). */
static int svg_columns(sk_buf *b, const char *title, const uint64_t *v, char (*label)[24], size_t n,
                       int bad_flag_pct)
{
    const double W = 720, H = 140, L = 50;
    uint64_t max = 1;
    for (size_t i = 0; i < n; i++) max = v[i] > max ? v[i] : max;
    SK_GUARD(sk_bufp(b, "<svg width='%.0f' height='%.0f' "
                        "role='img'><title>", W + L + 10, H + 40));
    SK_GUARD(sk_html_escs(b, title));
    SK_GUARD(sk_bufp(b, "</title><line class='ax' x1='%.0f' y1='%.0f' x2='%.0f' y2='%.0f'/>"
                        "<text x='0' y='12'>%llu</text><text x='0' y='%.0f'>0</text>",
                     L, H, L + W, H, (unsigned long long)max, H));
    double bw = W / (double)(n ? n : 1);
    uint64_t med = 0;
    if (bad_flag_pct && n) {
        uint64_t *c = malloc(n * sizeof *c);
        if (!c) return SK_E_NOMEM;
        memcpy(c, v, n * sizeof *c);
        for (size_t i = 1; i < n; i++) /* insertion sort: shard counts are few */
            for (size_t j = i; j && c[j - 1] > c[j]; j--) {
                uint64_t t = c[j];
                c[j] = c[j - 1], c[j - 1] = t;
            }
        med = c[n / 2];
        free(c);
    }
    for (size_t i = 0; i < n; i++) {
        double h = (double)v[i] * (H - 4) / (double)max;
        int bad = bad_flag_pct && med &&
                  fabs((double)v[i] - (double)med) * 100 > (double)bad_flag_pct * (double)med;
        SK_GUARD(sk_bufp(b, "<rect class='%s' x='%.2f' y='%.2f' width='%.2f' height='%.2f'/>",
                         bad ? "bad" : "bar", L + i * bw, H - h, bw > 2 ? bw - 1 : bw, h));
        if (label && (n <= 16 || i == 0 || i + 1 == n)) {
            SK_GUARD(sk_bufp(b, "<text x='%.1f' y='%.0f'>", L + i * bw, H + 14 + (i % 2) * 12));
            SK_GUARD(sk_html_escs(b, label[i]));
            SK_GUARD(sk_bufp(b, "</text>"));
        }
    }
    return sk_bufp(b, "</svg>");
}

/* The strings of array ARR as escaped <code> items, ", " between them and
 * LEAD before the first. */
static int code_list(sk_buf *b, const json_t *arr, const char *lead)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        SK_GUARD(sk_bufp(b, "%s<code>", i ? ", " : lead));
        SK_GUARD(sk_html_esc(b, json_string_value(x), json_string_length(x)));
        SK_GUARD(sk_bufp(b, "</code>"));
    }
    return SK_OK;
}

static int section_totals(const json_t *doc, sk_buf *b)
{
    const json_t *t = json_object_get(doc, "totals"), *bal = json_object_get(doc, "balance");
    char hb[32], hd[32];
    sk_stats_human(hb, sizeof hb, sk_stats_num(t, "bytes"));
    sk_stats_human(hd, sizeof hd, sk_stats_num(t, "data_bytes"));
    SK_GUARD(sk_bufp(b, "<table><tr><th class='l'>shards</th><td>%llu</td></tr>"
                        "<tr><th class='l'>samples</th><td>%llu</td></tr>"
                        "<tr><th class='l'>members</th><td>%llu</td></tr>"
                        "<tr><th class='l'>bytes (shard files)</th><td>%llu (%s)</td></tr>"
                        "<tr><th class='l'>bytes (member data)</th><td>%llu (%s)</td></tr>"
                        "</table>",
                     (unsigned long long)sk_stats_num(t, "shards"), (unsigned long long)sk_stats_num(t, "samples"),
                     (unsigned long long)sk_stats_num(t, "members"), (unsigned long long)sk_stats_num(t, "bytes"),
                     hb, (unsigned long long)sk_stats_num(t, "data_bytes"), hd));
    const json_t *bs = json_object_get(bal, "samples"), *bb = json_object_get(bal, "bytes");
    SK_GUARD(sk_bufp(b, "<h2>Shard balance</h2><table><tr><th></th><th>min</th><th>median</th>"
                        "<th>max</th></tr><tr><th class='l'>samples</th><td>%llu</td><td>%llu</td>"
                        "<td>%llu</td></tr><tr><th class='l'>bytes</th><td>%llu</td><td>%llu</td>"
                        "<td>%llu</td></tr></table><p>%llu shard(s) off the median by more than "
                        "10%% (red below)</p>",
                     (unsigned long long)sk_stats_num(bs, "min"), (unsigned long long)sk_stats_num(bs, "median"),
                     (unsigned long long)sk_stats_num(bs, "max"), (unsigned long long)sk_stats_num(bb, "min"),
                     (unsigned long long)sk_stats_num(bb, "median"), (unsigned long long)sk_stats_num(bb, "max"),
                     (unsigned long long)sk_stats_num(bal, "off_count")));
    const json_t *sh = json_object_get(doc, "shards");
    size_t n = json_array_size(sh);
    uint64_t *v = calloc(n ? n : 1, sizeof *v);
    char(*lab)[24] = calloc(n ? n : 1, sizeof *lab);
    int rc = !v || !lab ? SK_E_NOMEM : SK_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        v[i] = sk_stats_num(json_array_get(sh, i), "samples");
        snprintf(lab[i], sizeof lab[i], "%zu", i);
    }
    if (!rc) rc = svg_columns(b, "samples per shard", v, lab, n, 10);
    free(v), free(lab);
    return rc;
}

static int section_exts(const json_t *doc, sk_buf *b)
{
    const json_t *exts = json_object_get(doc, "extensions");
    uint64_t samples = sk_stats_num(json_object_get(doc, "totals"), "samples");
    SK_GUARD(sk_bufp(b, "<h2>Extensions</h2><table><tr><th class='l'>extension</th>"
                        "<th>samples</th><th>missing</th><th>bytes</th><th>min</th><th>p50</th>"
                        "<th>p90</th><th>p99</th><th>max</th></tr>"));
    const char *k;
    json_t *e;
    json_object_foreach((json_t *)exts, k, e) {
        const json_t *sz = json_object_get(e, "size");
        SK_GUARD(sk_bufp(b, "<tr><td class='l'><code>"));
        SK_GUARD(sk_html_escs(b, k));
        SK_GUARD(sk_bufp(b, "</code></td><td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td>"
                            "<td>%llu</td><td>%llu</td><td>%llu</td><td>%llu</td></tr>",
                         (unsigned long long)sk_stats_num(e, "samples"),
                         (unsigned long long)(samples - sk_stats_num(e, "samples")),
                         (unsigned long long)sk_stats_num(e, "bytes"), (unsigned long long)sk_stats_num(sz, "min"),
                         (unsigned long long)sk_stats_num(sz, "p50"), (unsigned long long)sk_stats_num(sz, "p90"),
                         (unsigned long long)sk_stats_num(sz, "p99"), (unsigned long long)sk_stats_num(sz, "max")));
    }
    SK_GUARD(sk_bufp(b, "</table>"));
    json_object_foreach((json_t *)exts, k, e) {
        uint64_t v[SK_STATS_BINS], max;
        char lab[SK_STATS_BINS][24];
        size_t n = sk_stats_bins(json_object_get(e, "histogram"), v, lab, &max);
        for (size_t i = 0; i < n; i++) {
            char t[24];
            memcpy(t, lab[i], sizeof t);
            snprintf(lab[i], sizeof lab[i], "<%s", t);
        }
        SK_GUARD(sk_bufp(b, "<p>member sizes of <code>"));
        SK_GUARD(sk_html_escs(b, k));
        SK_GUARD(sk_bufp(b, "</code></p>"));
        char title[64];
        snprintf(title, sizeof title, "member sizes");
        SK_GUARD(svg_columns(b, title, v, lab, n, 0));
    }
    const json_t *miss = json_object_get(doc, "missing");
    if (json_object_size(miss)) {
        SK_GUARD(sk_bufp(b, "<h2>Samples missing an extension</h2><table><tr><th class='l'>"
                            "extension</th><th>samples without it</th><th class='l'>e.g.</th>"
                            "</tr>"));
        json_object_foreach((json_t *)miss, k, e) {
            SK_GUARD(sk_bufp(b, "<tr><td class='l'><code>"));
            SK_GUARD(sk_html_escs(b, k));
            SK_GUARD(sk_bufp(b, "</code></td><td>%llu</td><td class='l'>",
                             (unsigned long long)sk_stats_num(e, "samples")));
            SK_GUARD(code_list(b, json_object_get(e, "examples"), ""));
            SK_GUARD(sk_bufp(b, "</td></tr>"));
        }
        SK_GUARD(sk_bufp(b, "</table>"));
    }
    const json_t *keys = json_object_get(doc, "keys");
    SK_GUARD(sk_bufp(b, "<h2>Keys</h2><p>%s; %llu duplicate key(s)",
                     json_is_true(json_object_get(keys, "sorted")) ? "in key order"
                                                                   : "not in key order",
                     (unsigned long long)sk_stats_num(keys, "duplicates")));
    SK_GUARD(code_list(b, json_object_get(keys, "examples"), ": "));
    return sk_bufp(b, "</p>");
}

static int section_images(const json_t *im, sk_buf *b)
{
    const json_t *w = json_object_get(im, "width"), *h = json_object_get(im, "height");
    SK_GUARD(sk_bufp(b, "<h2>Images</h2><p>%llu JPEG(s), %llu unreadable; %llu of their %llu "
                        "bytes read (headers only)</p>",
                     (unsigned long long)sk_stats_num(im, "count"), (unsigned long long)sk_stats_num(im, "bad"),
                     (unsigned long long)sk_stats_num(im, "bytes_read"),
                     (unsigned long long)sk_stats_num(im, "bytes")));
    if (!json_is_object(w)) return SK_OK;
    SK_GUARD(sk_bufp(b, "<table><tr><th></th><th>min</th><th>p10</th><th>p50</th><th>p90</th>"
                        "<th>max</th></tr>"));
    for (int k = 0; k < 2; k++) {
        const json_t *d = k ? h : w;
        SK_GUARD(sk_bufp(b, "<tr><th class='l'>%s</th><td>%llu</td><td>%llu</td><td>%llu</td>"
                            "<td>%llu</td><td>%llu</td></tr>",
                         k ? "height" : "width", (unsigned long long)sk_stats_num(d, "min"),
                         (unsigned long long)sk_stats_num(d, "p10"), (unsigned long long)sk_stats_num(d, "p50"),
                         (unsigned long long)sk_stats_num(d, "p90"), (unsigned long long)sk_stats_num(d, "max")));
    }
    SK_GUARD(sk_bufp(b, "</table>"));
    /* width x height scatter of (up to 1,000) sampled images */
    double mw = (double)sk_stats_num(w, "max"), mh = (double)sk_stats_num(h, "max"), S = 300;
    SK_GUARD(sk_bufp(b, "<svg width='%.0f' height='%.0f'>"
                        "<title>width x height</title><line class='ax' x1='40' y1='%.0f' "
                        "x2='%.0f' y2='%.0f'/><line class='ax' x1='40' y1='0' x2='40' y2='%.0f'/>"
                        "<text x='40' y='%.0f'>0</text><text x='%.0f' y='%.0f'>width %.0f</text>"
                        "<text x='0' y='10'>%.0f</text><text x='0' y='24'>height</text>",
                     S + 60, S + 30, S, S + 40, S, S, S + 14, S - 40, S + 14, mw, mh));
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(im, "points"), i, p) {
        double x = (double)json_integer_value(json_array_get(p, 0));
        double y = (double)json_integer_value(json_array_get(p, 1));
        SK_GUARD(sk_bufp(b, "<circle class='bar' cx='%.1f' cy='%.1f' r='2' fill-opacity='0.4'/>",
                         40 + x * S / (mw ? mw : 1), S - y * S / (mh ? mh : 1)));
    }
    SK_GUARD(sk_bufp(b, "</svg>"));
    const json_t *asp = json_object_get(im, "aspect");
    uint64_t v[11];
    char lab[11][24];
    size_t n = json_array_size(asp) < 11 ? json_array_size(asp) : 11;
    for (i = 0; i < n; i++) {
        const json_t *x = json_array_get(asp, i), *le = json_object_get(x, "le");
        v[i] = sk_stats_num(x, "count");
        if (json_is_number(le)) snprintf(lab[i], sizeof lab[i], "<=%.2f", json_number_value(le));
        else snprintf(lab[i], sizeof lab[i], "more");
    }
    SK_GUARD(sk_bufp(b, "<p>aspect ratio (width / height)</p>"));
    SK_GUARD(svg_columns(b, "aspect ratio", v, lab, n, 0));
    SK_GUARD(sk_bufp(b, "<table><tr><th>width</th><th>height</th><th>images</th></tr>"));
    json_array_foreach(json_object_get(im, "sizes"), i, p) {
        if (i == 20) break;
        SK_GUARD(sk_bufp(b, "<tr><td>%llu</td><td>%llu</td><td>%llu</td></tr>",
                         (unsigned long long)sk_stats_num(p, "width"), (unsigned long long)sk_stats_num(p, "height"),
                         (unsigned long long)sk_stats_num(p, "count")));
    }
    return sk_bufp(b, "</table>");
}

static int section_jkeys(const json_t *jk, sk_buf *b)
{
    SK_GUARD(sk_bufp(b, "<h2>JSON keys</h2><p>%llu .json member(s), %llu not JSON</p><table><tr>"
                        "<th class='l'>key</th><th>members</th><th class='l'>types</th></tr>",
                     (unsigned long long)sk_stats_num(jk, "members"), (unsigned long long)sk_stats_num(jk, "bad")));
    const char *k, *t;
    json_t *e, *c;
    json_object_foreach(json_object_get(jk, "keys"), k, e) {
        SK_GUARD(sk_bufp(b, "<tr><td class='l'><code>"));
        SK_GUARD(sk_html_escs(b, k));
        SK_GUARD(sk_bufp(b, "</code></td><td>%llu</td><td class='l'>",
                         (unsigned long long)sk_stats_num(e, "count")));
        json_object_foreach(json_object_get(e, "types"), t, c)
            SK_GUARD(sk_bufp(b, "%s %llu ", t, (unsigned long long)json_integer_value(c)));
        SK_GUARD(sk_bufp(b, "</td></tr>"));
    }
    return sk_bufp(b, "</table>");
}

static int section_shards(const json_t *doc, int link, sk_buf *b)
{
    const json_t *sh = json_object_get(doc, "shards");
    SK_GUARD(sk_bufp(b, "<h2>Shards</h2><table><tr><th>#</th><th class='l'>shard</th>"
                        "<th>samples</th><th>bytes</th><th>first ordinal</th></tr>"));
    size_t i;
    json_t *s;
    json_array_foreach((json_t *)sh, i, s) {
        const char *url = json_string_value(json_object_get(s, "url"));
        SK_GUARD(sk_bufp(b, "<tr><td>%zu</td><td class='l'>", i));
        if (link) SK_GUARD(sk_bufp(b, "<a href='shard?i=%zu'>", i));
        SK_GUARD(sk_html_escs(b, url ? url : ""));
        SK_GUARD(sk_bufp(b, "%s</td><td>%llu</td><td>%llu</td><td>%llu</td></tr>",
                         link ? "</a>" : "", (unsigned long long)sk_stats_num(s, "samples"),
                         (unsigned long long)sk_stats_num(s, "bytes"),
                         (unsigned long long)sk_stats_num(s, "first_ordinal")));
    }
    return sk_bufp(b, "</table>");
}

int sk_stats_html_body(const json_t *doc, int shard_link, sk_buf *b)
{
    SK_GUARD(section_totals(doc, b));
    SK_GUARD(section_exts(doc, b));
    const json_t *im = json_object_get(doc, "images"), *jk = json_object_get(doc, "json_keys");
    if (im) SK_GUARD(section_images(im, b));
    if (jk) SK_GUARD(section_jkeys(jk, b));
    return section_shards(doc, shard_link, b);
}

int sk_stats_write_html(const sk_stats *st, const char *path, sk_error *err)
{
    sk_buf b = {0};
    const char *name = json_string_value(json_object_get(st->doc, "dataset"));
    int rc = sk_bufp(&b, "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
                         "<title>shardkit stats: ");
    if (!rc) rc = sk_html_escs(&b, name ? name : "");
    if (!rc) rc = sk_bufp(&b, "</title><style>%s</style></head><body><h1>", sk_stats_css);
    if (!rc) rc = sk_html_escs(&b, name ? name : "");
    if (!rc) rc = sk_bufp(&b, "</h1>");
    if (!rc) rc = sk_stats_html_body(st->doc, 0, &b);
    if (!rc) rc = sk_bufp(&b, "</body></html>\n");
    if (rc) {
        sk_buf_free(&b);
        return sk_error_set(err, SK_E_NOMEM, "stats: out of memory for the page");
    }
    struct iovec iov = {b.p, b.len};
    rc = sk_out_write_iov(path, 0, &iov, 1, err); /* a name the user gave */
    sk_buf_free(&b);
    return rc;
}
