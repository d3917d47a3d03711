/*
 * sagemaker.c - SageMaker's manifests as pack inputs (pack --from-manifest).
 *
 * A ManifestFile is one JSON array: {"prefix": the S3 URI of a prefix}, then keys
 * relative to it; SageMaker's channel is exactly the objects prefix + key.
 * Each object becomes a member named by its relative key, so samples group
 * by the WebDataset rule as `pack` of that prefix would group the same objects.
 *
 * An augmented manifest is JSON Lines: one object a line; each attribute
 * whose name ends in "-ref" is an S3 URI, the others are label data.
 * Line i (0-based, blank lines not counted) becomes sample "%08u": each
 * referenced object a member named by the attribute and the object's
 * extension ("source-ref" gives KEY.EXT, "mask-ref" KEY.mask.EXT), and the
 * other attributes one KEY.json member (sorted keys, compact), spooled to
 * a temporary file.  Keys come from the line number, not from object
 * names: basenames from different prefixes collide, and zero-padded
 * numbers keep the manifest's order in pack's key order.
 *
 * Objects are sized with HEAD requests and fetched by fetch_remote.c, like any
 * remote source.  The manifest is untrusted: its size, line length and entry
 * count are bounded, every URI must be an S3 one with a valid bucket name and a
 * key S3 could hold, and each error names the manifest, line and value.
 */
#include "pack/catalog.h"
#include "format/tar.h"

#include <jansson.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define SM_MAX_ARRAY (256ull << 20)    /* a ManifestFile, parsed whole */
#define SM_MAX_OBJECT (16ull << 30)    /* a manifest fetched from S3 (spooled) */
#define SM_MAX_LINE (1u << 20)         /* one line of an augmented manifest */
#define SM_MAX_ENTRIES 10000000ull     /* keys or lines */
#define SM_MAX_REFS 64                 /* -ref attributes in one line */
#define SM_MAX_BUCKETS 1024            /* distinct buckets one manifest names */
#define S3_KEY_MAX 1024

/* ------------------------------------------------------------ validation */

static int bucket_ok(const char *b, size_t n)
{
    if (n < 3 || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = b[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
        if (!alnum && ch != '.' && ch != '-') return 0;
        if ((i == 0 || i == n - 1) && !alnum) return 0;
    }
    return 1;
}

/* A key S3 could hold and we can name in messages: 1..1024 bytes, no
 * control characters. */
static const char *key_problem(const char *k, size_t n, int allow_empty)
{
    if (!n && !allow_empty) return "an empty key";
    if (n > S3_KEY_MAX) return "a key over 1024 bytes";
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || k[i] == 0x7f) return "a control character in the key";
    return NULL;
}

/* Splits an S3 URI into bucket and key after checking it; *bucket points into uri
 * (blen bytes), *key too.  NULL, or what is wrong. */
static const char *split_uri(const char *uri, const char **bucket, size_t *blen, const char **key,
                             int allow_empty_key)
{
    sk_store_where w;
    /* the kind is the format's rule here, not a way to a store: SageMaker
     * reads a ManifestFile's objects from S3 and nothing else, so a URI of
     * another kind is a malformed manifest (check-layers rule 5 spares
     * this file for it) */
    if (sk_store_classify(uri, &w, NULL) || w.kind != SK_LOC_S3) return "not an S3 URI";
    const char *b = uri + w.host, *slash = b[w.host_len] == '/' ? b + w.host_len : NULL;
    if (!slash) return "no key after the bucket";
    if (!bucket_ok(b, (size_t)(slash - b))) return "not a valid bucket name";
    *bucket = b, *blen = (size_t)(slash - b), *key = slash + 1;
    return key_problem(*key, strlen(*key), allow_empty_key);
}

/* ------------------------------------------------------------- the input */

struct sm {
    sk_catalog *c;
    const char *label; /* the manifest, as given */
    FILE *f;
    sk_catalog_want *w;
    size_t nw, capw;
    char **owned; /* strings the wants point at */
    size_t nown, capown;
    uint16_t bsrc[SM_MAX_BUCKETS]; /* keyed sources, one per bucket */
    size_t nb;
    uint16_t labels; /* spool source of the .json members */
};

static int own(struct sm *m, char *s, sk_error *err)
{
    if (!s) return sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (sk_grow((void **)&m->owned, &m->capown, m->nown + 1, sizeof *m->owned, err)) {
        free(s);
        return SK_E_NOMEM;
    }
    m->owned[m->nown++] = s;
    return SK_OK;
}

static int want(struct sm *m, uint16_t src, char *key, char *name, sk_error *err)
{
    int rc = own(m, key, err);
    if (!rc) rc = own(m, name, err);
    else free(name);
    SK_GUARD(rc);
    SK_GUARD(sk_grow((void **)&m->w, &m->capw, m->nw + 1, sizeof *m->w, err));
    m->w[m->nw++] = (sk_catalog_want){src, key, name};
    return SK_OK;
}

/* The keyed source of a bucket, made at its first mention: root is the
 * URI up to the bucket's '/' (scheme and bucket), n bytes. */
static int bucket_src(struct sm *m, const char *root, size_t n, uint16_t *id, sk_error *err)
{
    for (size_t i = 0; i < m->nb; i++) {
        const char *have = m->c->srcs[m->bsrc[i]].base;
        if (strlen(have) == n && !memcmp(have, root, n)) {
            *id = m->bsrc[i];
            return SK_OK;
        }
    }
    SK_FAIL_IF(m->nb == SM_MAX_BUCKETS, err, SK_E_INPUT, "%s: more than %d buckets", m->label,
               SM_MAX_BUCKETS);
    char *base = strndup(root, n);
    SK_FAIL_IF(!base, err, SK_E_NOMEM, "out of memory");
    int rc = sk_catalog_remote_source(m->c, base, 1, id, err);
    free(base);
    SK_GUARD(rc);
    m->bsrc[m->nb++] = *id;
    return SK_OK;
}

/* ------------------------------------------------------------ ManifestFile */

/* The array is read one element at a time, never whole: a ManifestFile
 * parsed into one jansson tree costs many times its size (5 GB for one
 * under the size cap), a memory limit then made a valid file "not valid
 * JSON", and through '-' no size was known to check.  The caps (bytes,
 * keys, one element's length) apply to what is read, as it is read. */
#define SM_MAX_ELEMENT (64u << 10) /* one element: a key is at most 1024 bytes, escaped 6x */

struct arr {
    struct sm *m;
    uint64_t read; /* bytes of the file so far */
    char *buf;     /* one element's text */
    size_t len;
    int rc; /* the failure behind a -2 from arr_getc */
};

static int arr_getc(struct arr *a, sk_error *err)
{
    int ch = getc(a->m->f);
    if (ch == EOF && ferror(a->m->f)) {
        a->rc = sk_error_set(err, SK_E_IO, "%s: read failed: %s", a->m->label, strerror(errno));
        return -2;
    }
    if (ch != EOF && ++a->read > SM_MAX_ARRAY) {
        a->rc = sk_error_set(err, SK_E_INPUT, "%s: a ManifestFile over %llu bytes; at most that "
                             "is read", a->m->label, (unsigned long long)SM_MAX_ARRAY);
        return -2;
    }
    return ch;
}

/* The next character that is not JSON white space (EOF at the end; -2
 * with err set on a failure). */
static int arr_skip_ws(struct arr *a, sk_error *err)
{
    int ch;
    while ((ch = arr_getc(a, err)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {}
    return ch;
}

static int arr_put(struct arr *a, int ch, sk_error *err)
{
    SK_FAIL_IF(a->len == SM_MAX_ELEMENT, err, SK_E_INPUT,
               "%s: an element of the array is longer than %u bytes (at byte %llu)", a->m->label,
               SM_MAX_ELEMENT, (unsigned long long)a->read);
    a->buf[a->len++] = (char)ch;
    return SK_OK;
}

/* One element, starting with ch, into a->buf and decoded by jansson:
 * a string (escapes kept for jansson), or an object or array (nesting
 * counted outside strings), or a bare literal up to the next ',' / ']'
 * (*next gets that character). */
static int arr_element(struct arr *a, int ch, json_t **out, int *next, sk_error *err)
{
    int depth = 0, in_str = 0, esc = 0;
    a->len = 0;
    *next = 0;
    for (;; ch = arr_getc(a, err)) {
        if (ch == -2) return a->rc;
        SK_FAIL_IF(ch == EOF, err, SK_E_INPUT, "%s: the array ends inside an element (byte %llu)",
                   a->m->label, (unsigned long long)a->read);
        if (!in_str && !depth && a->len && (ch == ',' || ch == ']' || ch == ' ' || ch == '\n' ||
                                            ch == '\t' || ch == '\r')) {
            *next = ch; /* the end of a bare literal */
            break;
        }
        SK_GUARD(arr_put(a, ch, err));
        if (in_str) {
            if (esc) esc = 0;
            else if (ch == '\\') esc = 1;
            else if (ch == '"') in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == '{' || ch == '[') {
            depth++;
        } else if (ch == '}' || ch == ']') {
            depth--;
        }
        if (!in_str && depth <= 0 && (ch == '"' || ch == '}' || ch == ']') && a->len) break;
    }
    json_error_t je;
    *out = json_loadb(a->buf, a->len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &je);
    SK_FAIL_IF(!*out, err, SK_E_INPUT, "%s: not valid JSON near byte %llu: %s", a->m->label,
               (unsigned long long)a->read, je.text);
    return SK_OK;
}

/* After an element: ',' (*more = 1) or ']' (*more = 0, then only white
 * space to the end). */
static int arr_sep(struct arr *a, int ch, int *more, sk_error *err)
{
    if (!ch || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') ch = arr_skip_ws(a, err);
    if (ch == -2) return a->rc;
    *more = ch == ',';
    if (ch == ']') {
        ch = arr_skip_ws(a, err);
        if (ch == -2) return a->rc;
        SK_FAIL_IF(ch != EOF, err, SK_E_INPUT, "%s: bytes after the array's end (byte %llu)",
                   a->m->label, (unsigned long long)a->read);
        return SK_OK;
    }
    SK_FAIL_IF(ch != ',', err, SK_E_INPUT, "%s: not valid JSON near byte %llu: want ',' or ']'",
               a->m->label, (unsigned long long)a->read);
    return SK_OK;
}

static int manifest_entry(struct sm *m, uint16_t src, const char *k, size_t plen, json_t *e,
                          uint64_t i, sk_error *err)
{
    const char *rel = json_string_value(e), *why;
    SK_FAIL_IF(!rel, err, SK_E_INPUT, "%s: entry %llu is not a string (a key relative to the prefix)",
               m->label, (unsigned long long)i);
    size_t rl = json_string_length(e);
    char *key = malloc(plen + rl + 1);
    SK_FAIL_IF(!key, err, SK_E_NOMEM, "out of memory");
    memcpy(key, k, plen);
    memcpy(key + plen, rel, rl + 1);
    if (strlen(key) != plen + rl) why = "a NUL byte in the key";
    else why = key_problem(rel, rl, 0) ? key_problem(rel, rl, 0) : key_problem(key, plen + rl, 0);
    if (!why && !sk_catalog_name_usable(rel))
        why = "not a usable member name (empty, '.', '..', '//' or too long)";
    if (why) {
        free(key);
        return sk_error_set(err, SK_E_INPUT, "%s: entry %llu: '%s': %s", m->label,
                            (unsigned long long)i, rel, why);
    }
    /* the object is the source's base (the prefix URI) + rel */
    free(key);
    return want(m, src, strdup(rel), strdup(rel), err);
}

static int manifest_file(struct sm *m, sk_error *err)
{
    struct stat st;
    SK_FAIL_IF(fstat(fileno(m->f), &st) == 0 && S_ISREG(st.st_mode) &&
                   (uint64_t)st.st_size > SM_MAX_ARRAY,
               err, SK_E_INPUT, "%s: a ManifestFile of %llu bytes; at most %llu are read", m->label,
               (unsigned long long)st.st_size, (unsigned long long)SM_MAX_ARRAY);
    struct arr a = {.m = m, .buf = malloc(SM_MAX_ELEMENT)};
    SK_FAIL_IF(!a.buf, err, SK_E_NOMEM, "out of memory");
    json_t *first = NULL;
    int rc = SK_OK, next = 0, more = 0, ch = arr_skip_ws(&a, err); /* '[', as the caller saw */
    if (ch == -2) rc = a.rc;
    if (!rc) {
        ch = arr_skip_ws(&a, err);
        rc = ch == -2 ? a.rc : ch == '{' ? arr_element(&a, ch, &first, &next, err) : SK_OK;
    }
    if (rc) goto out;
    json_t *pj = first && json_is_object(first) ? json_object_get(first, "prefix") : NULL;
    const char *prefix = pj ? json_string_value(pj) : NULL;
    if (!prefix || json_object_size(first) != 1) {
        rc = sk_error_set(err, SK_E_INPUT, "%s: not a ManifestFile: want [{\"prefix\": "
                          "PREFIX_URI}, \"key\", ...] (PREFIX_URI: S3 bucket/prefix/)", m->label);
        goto out;
    }
    const char *b, *k, *why;
    size_t bl;
    if ((why = split_uri(prefix, &b, &bl, &k, 1))) {
        rc = sk_error_set(err, SK_E_INPUT, "%s: prefix '%s': %s", m->label, prefix, why);
        goto out;
    }
    /* SageMaker appends each entry to the prefix as it is: the source's
     * base is the prefix URI kept literally (no '/' added) */
    uint16_t src = 0;
    rc = sk_catalog_remote_source(m->c, prefix, 0, &src, err);
    size_t plen = strlen(k);
    if (!rc) rc = arr_sep(&a, next, &more, err);
    for (uint64_t i = 1; !rc && more; i++) {
        if (i > SM_MAX_ENTRIES) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: over %llu keys; at most that many are taken",
                              m->label, SM_MAX_ENTRIES);
            break;
        }
        json_t *e = NULL;
        ch = arr_skip_ws(&a, err);
        rc = ch == -2 ? a.rc : arr_element(&a, ch, &e, &next, err);
        if (!rc) rc = manifest_entry(m, src, k, plen, e, i, err);
        json_decref(e);
        if (!rc) rc = arr_sep(&a, next, &more, err);
    }
out:
    json_decref(first);
    free(a.buf);
    return rc;
}

/* ---------------------------------------------------- augmented manifest */

/* One line into buf (without the newline); *len = SIZE_MAX at the end of
 * the file.  A line over cap bytes is an error, never a bigger buffer. */
static int read_line(struct sm *m, uint64_t lineno, char *buf, size_t cap, size_t *len,
                     sk_error *err)
{
    size_t n = 0;
    int ch;
    while ((ch = getc_unlocked(m->f)) != EOF && ch != '\n') {
        SK_FAIL_IF(n == cap, err, SK_E_INPUT, "%s: line %llu is longer than %zu bytes", m->label,
                   (unsigned long long)lineno, cap);
        buf[n++] = (char)ch;
    }
    SK_FAIL_IF(ferror(m->f), err, SK_E_IO, "%s: read failed", m->label);
    *len = ch == EOF && !n ? SIZE_MAX : n;
    buf[n] = 0;
    return SK_OK;
}

/* The extension a -ref attribute's object gets: the attribute's stem
 * (without "-ref"; none for "source"), then the object's own extension
 * (after the first dot of its basename, as WebDataset splits names). */
static int ref_ext(const char *attr, size_t alen, const char *key, char *ext, size_t cap)
{
    size_t sl = alen - 4;
    for (size_t i = 0; i < sl; i++) {
        char ch = attr[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return -1;
    }
    const char *base = strrchr(key, '/');
    base = base ? base + 1 : key;
    const char *dot = *base ? strchr(base + 1, '.') : NULL;
    const char *oext = dot && dot[1] ? dot + 1 : "";
    int stem = sl && !(sl == 6 && !memcmp(attr, "source", 6));
    int n = snprintf(ext, cap, "%.*s%s%s", stem ? (int)sl : 0, attr, stem && *oext ? "." : "",
                     oext);
    if (n == 0) n = snprintf(ext, cap, "%.*s", (int)sl, attr); /* "source-ref" of a dotless key */
    return n <= 0 || (size_t)n >= cap ? -1 : 0;
}

static int aug_line(struct sm *m, json_t *o, uint64_t lineno, uint64_t sample, sk_error *err)
{
    char skey[32];
    snprintf(skey, sizeof skey, "%08llu", (unsigned long long)sample);
    SK_FAIL_IF(!json_is_object(o), err, SK_E_INPUT, "%s: line %llu: not a JSON object", m->label,
               (unsigned long long)lineno);
    SK_FAIL_IF(!json_object_size(o), err, SK_E_INPUT, "%s: line %llu: an empty object", m->label,
               (unsigned long long)lineno);
    json_t *labels = json_object();
    SK_FAIL_IF(!labels, err, SK_E_NOMEM, "out of memory");
    char exts[SM_MAX_REFS][256];
    const char *attrs[SM_MAX_REFS];
    int nrefs = 0, rc = SK_OK;
    const char *attr;
    json_t *v;
    json_object_foreach(o, attr, v) {
        size_t al = strlen(attr);
        if (al < 4 || strcmp(attr + al - 4, "-ref")) {
            if (json_object_set(labels, attr, v)) {
                rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
                break;
            }
            continue;
        }
        const char *uri = json_string_value(v), *b, *k, *why;
        size_t bl;
        if (!uri) why = "not a string";
        else if (strlen(uri) != json_string_length(v)) why = "a NUL byte in the URI";
        else why = split_uri(uri, &b, &bl, &k, 0);
        if (!why && k[strlen(k) - 1] == '/') why = "a key ending in '/' (a folder, not an object)";
        if (why) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: attribute '%s': %s%s%s%s", m->label,
                              (unsigned long long)lineno, attr, uri ? "'" : "", uri ? uri : "",
                              uri ? "': " : "", why);
            break;
        }
        if (nrefs == SM_MAX_REFS) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: more than %d -ref attributes",
                              m->label, (unsigned long long)lineno, SM_MAX_REFS);
            break;
        }
        if (ref_ext(attr, al, k, exts[nrefs], sizeof exts[nrefs])) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: attribute '%s': want a name of "
                              "letters, digits, '-' and '_' before -ref, and an extension under "
                              "200 bytes", m->label, (unsigned long long)lineno, attr);
            break;
        }
        for (int i = 0; i < nrefs; i++)
            if (!strcmp(exts[i], exts[nrefs])) {
                rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: attributes '%s' and '%s' both "
                                  "make member %s.%s", m->label, (unsigned long long)lineno,
                                  attrs[i], attr, skey, exts[nrefs]);
                break;
            }
        if (rc) break;
        attrs[nrefs] = attr;
        uint16_t src;
        char name[300];
        snprintf(name, sizeof name, "%s.%s", skey, exts[nrefs]);
        nrefs++;
        if ((rc = bucket_src(m, uri, (size_t)(b + bl + 1 - uri), &src, err))) break;
        if ((rc = want(m, src, strdup(k), strdup(name), err))) break;
    }
    if (!rc && json_object_size(labels)) {
        for (int i = 0; i < nrefs; i++)
            if (!strcmp(exts[i], "json")) {
                rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: attribute '%s' makes member "
                                  "%s.json, the member of the labels", m->label,
                                  (unsigned long long)lineno, attrs[i], skey);
                break;
            }
        char *text = rc ? NULL : json_dumps(labels, JSON_SORT_KEYS | JSON_COMPACT);
        if (!rc && !text) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        char name[48];
        snprintf(name, sizeof name, "%s.json", skey);
        if (!rc) rc = sk_catalog_add_bytes(m->c, &m->labels, m->label, name, text, strlen(text), err);
        free(text);
    }
    json_decref(labels);
    return rc;
}

static int augmented(struct sm *m, sk_error *err)
{
    char *buf = malloc(SM_MAX_LINE + 1);
    SK_FAIL_IF(!buf, err, SK_E_NOMEM, "out of memory");
    int rc = SK_OK;
    uint64_t lineno = 0, sample = 0;
    for (;;) {
        size_t len = 0;
        if ((rc = read_line(m, ++lineno, buf, SM_MAX_LINE, &len, err)) || len == SIZE_MAX) break;
        size_t sp = 0;
        while (sp < len && (buf[sp] == ' ' || buf[sp] == '\t' || buf[sp] == '\r')) sp++;
        if (sp == len) continue;
        if (sample == SM_MAX_ENTRIES) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: more than %llu lines", m->label, SM_MAX_ENTRIES);
            break;
        }
        json_error_t je;
        json_t *o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
        if (!o) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: line %llu: not valid JSON: %s", m->label,
                              (unsigned long long)lineno, je.text);
            break;
        }
        rc = aug_line(m, o, lineno, sample++, err);
        json_decref(o);
        if (rc) break;
    }
    free(buf);
    SK_GUARD(rc);
    SK_FAIL_IF(!sample, err, SK_E_INPUT, "%s: no lines", m->label);
    return SK_OK;
}

/* ------------------------------------------------------------ S3 manifest */

/* The manifest object, read through the store (S3, a web server) into an
 * unlinked temporary file, bounded: its size is asked first, and the read
 * stops at that size (a body that ends early is the store's error). */
static int fetch_manifest(sk_catalog *c, const char *url, FILE **out, sk_error *err)
{
    SK_FAIL_IF(!c->env_ready, err, SK_E_USAGE, "%s: a remote manifest needs a client", url);
    sk_store *s;
    sk_store_seq *q = NULL;
    sk_store_stat st;
    SK_GUARD(sk_store_open(&s, url, &c->env, err));
    int rc = s->ops->stat(s, &st, err), fd = -1;
    if (!rc && st.size > SM_MAX_OBJECT)
        rc = sk_error_set(err, SK_E_INPUT, "%s: a manifest of %llu bytes; at most %llu are read",
                          url, (unsigned long long)st.size, (unsigned long long)SM_MAX_OBJECT);
    if (!rc) {
        const char *dir = c->tmp_dir ? c->tmp_dir : getenv("TMPDIR");
        char path[4096];
        snprintf(path, sizeof path, "%s/shardkit-manifest-XXXXXX", dir && *dir ? dir : "/tmp");
        fd = mkstemp(path);
        if (fd < 0) rc = sk_error_set(err, SK_E_IO, "%s: cannot create a temporary file: %s", path,
                                      strerror(errno));
        else unlink(path);
    }
    if (!rc && st.size) rc = s->ops->open_seq(s, 0, &q, err);
    char chunk[64 << 10];
    uint64_t n = 0;
    for (size_t got = 1; !rc && q && got;) {
        rc = q->read(q, chunk, sizeof chunk, &got, err);
        if (!rc && got) rc = sk_write_all(fd, chunk, got, url, err), n += got;
    }
    if (!rc && n != st.size)
        rc = sk_error_set(err, SK_E_REMOTE, "%s: %llu bytes arrived of %llu", url,
                          (unsigned long long)n, (unsigned long long)st.size);
    if (q) q->close(q);
    sk_store_close(s);
    if (!rc && (lseek(fd, 0, SEEK_SET) < 0 || !(*out = fdopen(fd, "rb"))))
        rc = sk_error_set(err, SK_E_IO, "%s: %s", url, strerror(errno));
    if (rc && fd >= 0) close(fd);
    return rc;
}

/* ---------------------------------------------------------------- entry */

int sk_sagemaker_read(sk_catalog *c, FILE *f, const char *label, int add, sk_error *err)
{
    struct sm m = {.c = c, .label = label, .f = f, .labels = UINT16_MAX};
    int ch, rc;
    while ((ch = getc(m.f)) == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {}
    if (ch != EOF) ungetc(ch, m.f);
    if (ch == '[') rc = manifest_file(&m, err);
    else if (ch == '{') rc = augmented(&m, err);
    else rc = sk_error_set(err, SK_E_INPUT, "%s: not a SageMaker manifest (want a JSON array, a "
                           "ManifestFile, or JSON Lines, an augmented manifest)%s", label,
                           ch == EOF ? ": it is empty" : "");
    if (!rc && add && (rc = sk_catalog_add_wants(c, m.w, m.nw, err)) && err) {
        char msg[sizeof err->msg]; /* which manifest named the object */
        snprintf(msg, sizeof msg, "%s (named by %s)", err->msg, label);
        memcpy(err->msg, msg, sizeof msg);
    }
    for (size_t i = 0; i < m.nown; i++) free(m.owned[i]);
    free(m.owned);
    free(m.w);
    return rc;
}

int sk_catalog_add_sagemaker(sk_catalog *c, const char *manifest, sk_error *err)
{
    FILE *f;
    SK_FAIL_IF(!c->s3, err, SK_E_USAGE, "%s: a SageMaker manifest needs an S3 client", manifest);
    if (sk_store_is_remote(manifest)) {
        SK_GUARD(fetch_manifest(c, manifest, &f, err));
    } else {
        f = strcmp(manifest, "-") ? fopen(manifest, "rb") : stdin;
        SK_FAIL_IF(!f, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s",
                   manifest, strerror(errno));
    }
    int rc = sk_sagemaker_read(c, f, manifest, 1, err);
    if (f != stdin) fclose(f);
    return rc;
}
