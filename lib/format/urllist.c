/*
 * urllist.c - a URL list read one row at a time (urllist.h).
 *
 * Written by hand: CSV (RFC 4180) has no well-kept C library that reads a
 * stream in bounded memory and reports a bad row without giving up on the
 * rest; the quoting rules are a few lines.  JSON lines go through jansson.
 *
 * A row is gathered into `rec` up to the cap; past it the rest of the row
 * is read and dropped (still following CSV quotes, so a long quoted field
 * does not end the row early) and the row comes back with an error.  So
 * memory is the cap plus one input chunk, whatever the list holds.
 */
#include "format/urllist.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define CHUNK (64u << 10)
#define DEFAULT_MAX_ROW ((size_t)1 << 20)
#define MAX_COLUMNS 4096

struct sk_urllist {
    sk_urllist_read_fn read;
    void *ctx;
    char *name;
    int format;
    size_t max_row;
    unsigned char *in; /* the current input chunk */
    size_t in_len, in_pos;
    int eof, first_chunk; /* first_chunk: the first row is still to come */
    sk_buf rec;  /* the row's raw bytes */
    sk_buf vals; /* the row's values, unescaped, each NUL-terminated */
    size_t *starts, *lens; /* fields of a CSV row, offsets into vals */
    size_t nfields;
    /* the columns asked for: index in a CSV row, or the JSON field name */
    long url_ix, caption_ix, *extra_ix;
    char *url_name, *caption_name, **extra_names;
    size_t nextra;
    uint64_t rows;
    const char **extra;
    size_t *extra_len;
    char error[160];
};

int sk_urllist_format_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot || strchr(dot, '/')) return 0;
    static const struct { const char *ext; int f; } map[] = {
        {".txt", SK_URLLIST_TXT},     {".csv", SK_URLLIST_CSV},    {".tsv", SK_URLLIST_TSV},
        {".jsonl", SK_URLLIST_JSONL}, {".ndjson", SK_URLLIST_JSONL},
    };
    for (size_t i = 0; i < SK_ARRAY_LEN(map); i++)
        if (!strcasecmp(dot, map[i].ext)) return map[i].f;
    return 0;
}

int sk_urllist_format_parse(const char *s)
{
    static const char *const names[] = {"txt", "csv", "tsv", "jsonl"};
    for (size_t i = 0; i < SK_ARRAY_LEN(names); i++)
        if (!strcmp(s, names[i])) return (int)i + SK_URLLIST_TXT;
    return 0;
}

/* ------------------------------------------------------------- rows */

static int refill(sk_urllist *l, sk_error *err)
{
    size_t got = 0;
    SK_GUARD(l->read(l->ctx, l->in, CHUNK, &got, err));
    l->in_len = got;
    l->in_pos = 0;
    if (!got) l->eof = 1;
    return SK_OK;
}

/* The next row's bytes into rec (without its line end): 1, or 0 at the
 * end of the list.  *too_long: the row passed the cap (rec holds its
 * start only). */
static int next_record(sk_urllist *l, int *too_long, sk_error *err)
{
    int csv = l->format == SK_URLLIST_CSV || l->format == SK_URLLIST_TSV;
    unsigned char delim = l->format == SK_URLLIST_TSV ? '\t' : ',';
    /* where a CSV row stands: a quote opens a quoted field only at a
     * field's start, as split_fields reads it, so a stray quote inside a
     * field cannot swallow the rows after it */
    enum { FIELD_START, UNQUOTED, QUOTED, QUOTE_IN_QUOTED } st = FIELD_START;
    int any = 0;
    l->rec.len = 0;
    *too_long = 0;
    for (;;) {
        if (l->in_pos == l->in_len) {
            if (l->eof) break;
            SK_GUARD(refill(l, err));
            if (l->eof) break;
        }
        unsigned char *p = l->in + l->in_pos, *end = l->in + l->in_len, *stop = NULL;
        if (!csv) {
            stop = memchr(p, '\n', (size_t)(end - p));
        } else {
            for (unsigned char *q = p; q < end && !stop; q++) {
                if (st == QUOTED) {
                    if (*q == '"') st = QUOTE_IN_QUOTED;
                } else if (st == QUOTE_IN_QUOTED && *q == '"') {
                    st = QUOTED; /* "" inside quotes: one quote */
                } else if (st == FIELD_START && *q == '"') {
                    st = QUOTED;
                } else if (*q == '\n') {
                    stop = q; /* outside quotes (or just after the closing one) */
                } else {
                    st = *q == delim ? FIELD_START : UNQUOTED;
                }
            }
        }
        size_t n = (size_t)((stop ? stop : end) - p);
        any = 1;
        if (!*too_long && l->rec.len + n > l->max_row) *too_long = 1;
        if (!*too_long && n && sk_buf_add(&l->rec, p, n))
            return sk_error_set(err, SK_E_NOMEM, "%s: out of memory reading a row", l->name);
        l->in_pos += n + (stop ? 1 : 0);
        if (stop) break;
    }
    if (!any) return 0;
    if (l->first_chunk) { /* a UTF-8 byte order mark is not part of the first row */
        l->first_chunk = 0;
        if (!*too_long && l->rec.len >= 3 && !memcmp(l->rec.p, "\xef\xbb\xbf", 3)) {
            memmove(l->rec.p, l->rec.p + 3, l->rec.len - 3);
            l->rec.len -= 3;
        }
    }
    if (!*too_long && l->rec.len && l->rec.p[l->rec.len - 1] == '\r') l->rec.len--;
    if (sk_buf_add(&l->rec, "", 0)) /* keeps it NUL-terminated even when empty */
        return sk_error_set(err, SK_E_NOMEM, "%s: out of memory reading a row", l->name);
    return 1;
}

static int is_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
    return 1;
}

static int add_value(sk_urllist *l, const char *p, size_t n, size_t *at, sk_error *err)
{
    *at = l->vals.len;
    if (sk_buf_add(&l->vals, p, n) || sk_buf_add(&l->vals, "", 1))
        return sk_error_set(err, SK_E_NOMEM, "%s: out of memory reading a row", l->name);
    return SK_OK;
}

/* Splits rec into fields (RFC 4180: a field in quotes may hold the
 * delimiter, line ends and "" for a quote).  1 when the row has more
 * fields than MAX_COLUMNS (error set in l->error). */
static int split_fields(sk_urllist *l, sk_error *err)
{
    char delim = l->format == SK_URLLIST_TSV ? '\t' : ',';
    const char *p = l->rec.p, *end = l->rec.p + l->rec.len;
    l->vals.len = 0;
    l->nfields = 0;
    for (;;) {
        if (l->nfields == MAX_COLUMNS) {
            snprintf(l->error, sizeof l->error, "more than %d columns", MAX_COLUMNS);
            return 1;
        }
        size_t start = l->vals.len;
        if (p < end && *p == '"') {
            p++;
            for (;;) {
                const char *q = memchr(p, '"', (size_t)(end - p));
                if (!q) { /* unterminated: the rest of the row is the field */
                    if (sk_buf_add(&l->vals, p, (size_t)(end - p))) goto nomem;
                    p = end;
                    break;
                }
                if (sk_buf_add(&l->vals, p, (size_t)(q - p))) goto nomem;
                p = q + 1;
                if (p < end && *p == '"') {
                    if (sk_buf_add(&l->vals, "\"", 1)) goto nomem;
                    p++;
                    continue;
                }
                break;
            }
            /* anything between the closing quote and the delimiter is kept, as readers do */
            const char *d = memchr(p, delim, (size_t)(end - p));
            if (sk_buf_add(&l->vals, p, (size_t)((d ? d : end) - p))) goto nomem;
            p = d ? d : end;
        } else {
            const char *d = memchr(p, delim, (size_t)(end - p));
            if (sk_buf_add(&l->vals, p, (size_t)((d ? d : end) - p))) goto nomem;
            p = d ? d : end;
        }
        size_t len = l->vals.len - start;
        if (sk_buf_add(&l->vals, "", 1)) goto nomem;
        l->starts[l->nfields] = start;
        l->lens[l->nfields] = len;
        l->nfields++;
        if (p == end) return 0;
        p++; /* the delimiter */
    }
nomem:
    return sk_error_set(err, SK_E_NOMEM, "%s: out of memory reading a row", l->name);
}

static long column_of(sk_urllist *l, const char *want)
{
    for (size_t i = 0; i < l->nfields; i++)
        if (!strcmp(l->vals.p + l->starts[i], want)) return (long)i;
    return -1;
}

static int read_header(sk_urllist *l, sk_error *err)
{
    int too_long, rc;
    do {
        rc = next_record(l, &too_long, err);
        if (rc < 0) return rc;
        SK_FAIL_IF(!rc, err, SK_E_USAGE, "%s: the list is empty (no header row)", l->name);
        SK_FAIL_IF(too_long, err, SK_E_USAGE, "%s: the header row is longer than %zu bytes",
                   l->name, l->max_row);
    } while (is_blank(l->rec.p, l->rec.len));
    if (split_fields(l, err)) {
        if (err->code) return err->code;
        return sk_error_set(err, SK_E_USAGE, "%s: header: %s", l->name, l->error);
    }
    l->url_ix = column_of(l, l->url_name);
    SK_FAIL_IF(l->url_ix < 0, err, SK_E_USAGE, "%s: no column '%s' in the header (--url-col)",
               l->name, l->url_name);
    if (l->caption_name) {
        l->caption_ix = column_of(l, l->caption_name);
        SK_FAIL_IF(l->caption_ix < 0, err, SK_E_USAGE,
                   "%s: no column '%s' in the header (--caption-col)", l->name, l->caption_name);
    }
    for (size_t i = 0; i < l->nextra; i++) {
        l->extra_ix[i] = column_of(l, l->extra_names[i]);
        SK_FAIL_IF(l->extra_ix[i] < 0, err, SK_E_USAGE,
                   "%s: no column '%s' in the header (--save-additional-columns)", l->name,
                   l->extra_names[i]);
    }
    return SK_OK;
}

/* ------------------------------------------------------------- values */

static void field(sk_urllist *l, long ix, const char **v, size_t *n)
{
    if (ix < 0 || (size_t)ix >= l->nfields) {
        *v = NULL;
        *n = 0;
        return;
    }
    *v = l->vals.p + l->starts[ix];
    *n = l->lens[ix];
}

/* A JSON value as a row holds it: a string's bytes, null or absent as
 * NULL, anything else as its compact JSON text.  The value's offset into
 * vals goes to starts[slot] (SIZE_MAX: none). */
static int json_value(sk_urllist *l, json_t *v, size_t slot, sk_error *err)
{
    l->starts[slot] = SIZE_MAX;
    l->lens[slot] = 0;
    if (!v || json_is_null(v)) return SK_OK;
    if (json_is_string(v)) {
        l->lens[slot] = json_string_length(v);
        return add_value(l, json_string_value(v), l->lens[slot], &l->starts[slot], err);
    }
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    SK_FAIL_IF(!text, err, SK_E_NOMEM, "%s: out of memory reading a row", l->name);
    l->lens[slot] = strlen(text);
    int rc = add_value(l, text, l->lens[slot], &l->starts[slot], err);
    free(text);
    return rc;
}

static void json_slot(sk_urllist *l, size_t slot, const char **v, size_t *n)
{
    *v = l->starts[slot] == SIZE_MAX ? NULL : l->vals.p + l->starts[slot];
    *n = l->lens[slot];
}

/* A JSON line's fields into the row; 1 when the line is not a row (error
 * set in l->error). */
static int parse_json(sk_urllist *l, sk_url_row *row, sk_error *err)
{
    json_error_t je;
    json_t *o = json_loadb(l->rec.p, l->rec.len, 0, &je);
    if (!o) {
        snprintf(l->error, sizeof l->error, "not valid JSON: %s", je.text);
        return 1;
    }
    int rc = 0;
    if (!json_is_object(o)) {
        snprintf(l->error, sizeof l->error, "not a JSON object");
        rc = 1;
        goto done;
    }
    json_t *u = json_object_get(o, l->url_name);
    if (u && !json_is_string(u) && !json_is_null(u)) {
        snprintf(l->error, sizeof l->error, "'%.60s' is not a string", l->url_name);
        rc = 1;
        goto done;
    }
    l->vals.len = 0;
    if ((rc = json_value(l, u, 0, err))) goto done;
    if (l->caption_name && (rc = json_value(l, json_object_get(o, l->caption_name), 1, err)))
        goto done;
    for (size_t i = 0; i < l->nextra; i++)
        if ((rc = json_value(l, json_object_get(o, l->extra_names[i]), 2 + i, err))) goto done;
    /* pointers only now: vals may have moved while it grew */
    json_slot(l, 0, &row->url, &row->url_len);
    if (l->caption_name) json_slot(l, 1, &row->caption, &row->caption_len);
    for (size_t i = 0; i < l->nextra; i++) json_slot(l, 2 + i, &l->extra[i], &l->extra_len[i]);
done:
    json_decref(o);
    return rc;
}

int sk_urllist_next(sk_urllist *l, sk_url_row *row, sk_error *err)
{
    int too_long, rc;
    do {
        rc = next_record(l, &too_long, err);
        if (rc <= 0) return rc;
    } while (!too_long && is_blank(l->rec.p, l->rec.len));
    memset(row, 0, sizeof *row);
    row->row = l->rows++;
    row->extra = l->extra;
    row->extra_len = l->extra_len;
    for (size_t i = 0; i < l->nextra; i++) l->extra[i] = NULL, l->extra_len[i] = 0;
    l->error[0] = 0;
    if (too_long) {
        snprintf(l->error, sizeof l->error, "row longer than %zu bytes", l->max_row);
    } else if (l->format == SK_URLLIST_TXT) {
        const char *p = l->rec.p, *e = l->rec.p + l->rec.len;
        while (p < e && (*p == ' ' || *p == '\t')) p++;
        while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
        row->url = p;
        row->url_len = (size_t)(e - p);
    } else if (l->format == SK_URLLIST_JSONL) {
        if (parse_json(l, row, err) && err->code) return err->code;
    } else {
        if (split_fields(l, err)) {
            if (err->code) return err->code;
        } else {
            field(l, l->url_ix, &row->url, &row->url_len);
            field(l, l->caption_ix, &row->caption, &row->caption_len);
            for (size_t i = 0; i < l->nextra; i++)
                field(l, l->extra_ix[i], &l->extra[i], &l->extra_len[i]);
        }
    }
    if (!l->error[0] && (!row->url || !row->url_len))
        snprintf(l->error, sizeof l->error, "no URL in column '%.60s'", l->url_name);
    if (l->error[0]) {
        memset(row, 0, sizeof *row);
        row->row = l->rows - 1;
        row->extra = l->extra;
        row->extra_len = l->extra_len;
        for (size_t i = 0; i < l->nextra; i++) l->extra[i] = NULL, l->extra_len[i] = 0;
        row->error = l->error;
    }
    return 1;
}

/* ------------------------------------------------------------- life */

void sk_urllist_close(sk_urllist *l)
{
    if (!l) return;
    free(l->name);
    free(l->in);
    sk_buf_free(&l->rec);
    sk_buf_free(&l->vals);
    free(l->starts);
    free(l->lens);
    free(l->extra_ix);
    free(l->url_name);
    free(l->caption_name);
    for (size_t i = 0; l->extra_names && i < l->nextra; i++) free(l->extra_names[i]);
    free(l->extra_names);
    free(l->extra);
    free(l->extra_len);
    free(l);
}

int sk_urllist_open(sk_urllist **out, sk_urllist_read_fn read, void *ctx, const char *name,
                    const sk_urllist_opts *o, sk_error *err)
{
    *out = NULL;
    SK_FAIL_IF(o->format < SK_URLLIST_TXT || o->format > SK_URLLIST_JSONL, err, SK_E_USAGE,
               "%s: unknown URL list format", name);
    SK_FAIL_IF(o->nextra > MAX_COLUMNS - 2, err, SK_E_USAGE, "%s: too many columns to keep", name);
    sk_urllist *l = calloc(1, sizeof *l);
    SK_FAIL_IF(!l, err, SK_E_NOMEM, "out of memory");
    size_t slots = MAX_COLUMNS > o->nextra + 2 ? MAX_COLUMNS : o->nextra + 2;
    l->read = read;
    l->ctx = ctx;
    l->format = o->format;
    l->max_row = o->max_row ? o->max_row : DEFAULT_MAX_ROW;
    l->first_chunk = 1;
    l->url_ix = l->caption_ix = -1;
    l->nextra = o->nextra;
    l->name = strdup(name);
    l->in = malloc(CHUNK);
    l->starts = calloc(slots, sizeof *l->starts);
    l->lens = calloc(slots, sizeof *l->lens);
    l->extra_ix = calloc(o->nextra + 1, sizeof *l->extra_ix);
    l->extra_names = calloc(o->nextra + 1, sizeof *l->extra_names);
    l->extra = calloc(o->nextra + 1, sizeof *l->extra);
    l->extra_len = calloc(o->nextra + 1, sizeof *l->extra_len);
    l->url_name = strdup(o->url_col ? o->url_col : "url");
    l->caption_name = o->caption_col ? strdup(o->caption_col) : NULL;
    int bad = !l->name || !l->in || !l->starts || !l->lens || !l->extra_ix || !l->extra_names ||
              !l->extra || !l->extra_len || !l->url_name || (o->caption_col && !l->caption_name);
    for (size_t i = 0; !bad && i < o->nextra; i++) bad = !(l->extra_names[i] = strdup(o->extra[i]));
    if (bad) {
        sk_urllist_close(l);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    int rc = SK_OK;
    if (l->format == SK_URLLIST_CSV || l->format == SK_URLLIST_TSV) rc = read_header(l, err);
    else if (l->format == SK_URLLIST_TXT && (l->caption_name || l->nextra))
        rc = sk_error_set(err, SK_E_USAGE, "%s: a txt list has one column, the URL", name);
    if (rc) {
        sk_urllist_close(l);
        return rc;
    }
    *out = l;
    return SK_OK;
}
