/*
 * _ext.c - shardkit._ext: the compiled fast path of shardkit.Dataset's
 * lookups (ds[i], ds.get(key), ds.__getitems__).  The ctypes path
 * (dataset.py) costs a few microseconds of Python per sample, as much as
 * the lookup and the read themselves; here a sample's dict is built in C,
 * and each member's data is read straight into the bytes object returned:
 * one copy, from the page cache into the bytes.  The GIL is released
 * around the lookups and around the reads, so threads read in parallel.
 *
 * The extension calls the libshardkit that ctypes loaded, through the
 * addresses of its functions (Getter's arguments), rather than linking a
 * library of its own: one library in the process, one dataset handle,
 * opened and closed by dataset.py, and the library found by the same rules
 * whichever path serves a lookup.  It needs Python's headers and
 * lib/shardkit.h only, and builds without the library (setup.py makes it
 * optional: when it does not build, dataset.py uses ctypes alone).
 *
 * A local shard's bytes: the Getter gives the dataset a range opener of its
 * own (sk_dataset_set_range_open; it opens, checks and reads a file as the
 * library's does), so it knows each shard's descriptor.  Once the library
 * has read a sample from a shard through it (so it proved the index is
 * that file's: size and first block), a plain sample of that shard is one
 * preadv: each member's data into its bytes object, the tar headers
 * between them into a scratch buffer, then each member checked against
 * its CRC32C; anything else (a compressed shard, an odd record, a short
 * read, a CRC that differs) is read by the library member by member,
 * which gives the data or the error.
 *
 * A Getter does not own the dataset: Dataset.close() calls Getter.close()
 * before closing it, after which every lookup raises; as with the ctypes
 * path, no other thread may be inside a lookup while the dataset closes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "shardkit.h"

typedef int (*get_fn)(sk_dataset *, const char *, size_t, uint64_t, void *, size_t,
                      sk_get_result *, sk_error *);
typedef int (*at_fn)(sk_dataset *, uint64_t, sk_hit *, sk_error *);
typedef int (*find_fn)(sk_dataset *, const char *, size_t, sk_hit *, sk_error *);
typedef int (*member_fn)(sk_dataset *, const sk_hit *, uint32_t, sk_member_ref *, sk_error *);
typedef int (*read_fn)(sk_dataset *, const sk_hit *, uint32_t, void *, size_t, sk_error *);
typedef int (*read_sample_fn)(sk_dataset *, const sk_hit *, void *, size_t, sk_member_ref *,
                              size_t, sk_error *);
typedef int (*samples_fn)(sk_dataset *, uint64_t *, sk_error *);
typedef void (*set_range_open_fn)(sk_dataset *, sk_range_open_fn, void *);
typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

/* what dataset.py's error_from gives for a code, by the kind of lookup:
 * the not-found class differs (shardkit.SampleIndexError, KeyNotFoundError) */
enum { KIND_ORDINAL = 0, KIND_KEY = 1 };

/* extension names seen lately, by content (most samples share them) */
#define NAME_CACHE 16
#define NAME_MAX_LEN 15
struct name {
    size_t len;
    char s[NAME_MAX_LEN];
    PyObject *str;
};

typedef struct {
    PyObject_HEAD
    sk_dataset *ds; /* NULL once closed */
    get_fn get;
    at_fn at;
    find_fn find;
    member_fn member;
    read_fn read;
    read_sample_fn read_sample;
    samples_fn samples;
    crc_fn crc;
    unsigned long id;   /* its files' owner in the registry below */
    PyObject *url;      /* the dataset's url, for messages */
    PyObject *error;    /* error(code, message, kind) -> the exception to raise */
    struct slot *shards; /* by shard position */
    size_t nshards;
    struct name names[NAME_CACHE];
    unsigned next_name; /* the slot the next new name replaces */
} Getter;

/* A sample being looked up: where it is, its members, their bytes. */
struct plan {
    struct xfile *xf; /* its shard's proven file, if any */
    sk_hit hit;
    sk_member_ref *m; /* hit.sample.member_count records (into the call's table) */
    PyObject **data;  /* as many bytes objects, filled by the read */
    int staged;       /* remote: read whole into a buffer, then copied */
    int bad;          /* a member record could not be read (its sk_code) */
};

static PyObject *s_key, *s_url, *s_index, *s_ordinal; /* the dict's fixed keys */

/* ------------------------------------------------------------------ errors */

/* sk_error_set's work, here: the extension calls no library function but
 * through the addresses it was given. */
static int set_err(sk_error *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err->code = code;
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return code;
}

/* ------------------------------------------------------------ local files */

/* A local shard opened by the Getter's range opener: the dataset reads it
 * through x_read_at, the Getter (once proven) with preadv.  In a registry,
 * by owner (a Getter's id) and url, until the dataset closes it. */
struct xfile {
    int fd;
    uint64_t size;
    unsigned long owner;
    char *url;
    struct xfile *next;
};

static pthread_mutex_t files_mu = PTHREAD_MUTEX_INITIALIZER;
static struct xfile *files;

/* A shard as the Getter knows it. */
struct slot {
    PyObject *url;     /* its path as a str (NULL: not yet) */
    struct xfile *xf;  /* its file, proven by a read of the library's */
    int looked;        /* xf was looked for */
};

static int x_read_at(void *ctx, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct xfile *f = ctx;
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR) continue;
        if (k < 0)
            return set_err(err, SK_E_IO, "%s: read failed at offset %llu: %s", f->url,
                           (unsigned long long)(off + done), strerror(errno));
        if (k == 0) break;
        done += (size_t)k;
    }
    *got = done;
    return SK_OK;
}

static void x_close(void *ctx)
{
    struct xfile *f = ctx, **pp;
    pthread_mutex_lock(&files_mu);
    for (pp = &files; *pp && *pp != f; pp = &(*pp)->next) {}
    if (*pp) *pp = f->next;
    pthread_mutex_unlock(&files_mu);
    close(f->fd);
    free(f->url);
    free(f);
}

/* The range opener: what the library's own does for a local file (a
 * regular file, read with pread), registered for the Getter (ctx: its id). */
static int x_open(void *ctx, sk_range_reader *rr, const char *url, sk_error *err)
{
    struct stat st;
    memset(rr, 0, sizeof *rr);
    int fd = open(url, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return set_err(err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s", url,
                       strerror(errno));
    int rc = fstat(fd, &st) != 0 ? set_err(err, SK_E_IO, "%s: %s", url, strerror(errno))
             : S_ISDIR(st.st_mode) ? set_err(err, SK_E_USAGE, "%s: a directory, not a shard", url)
             : !S_ISREG(st.st_mode) ? set_err(err, SK_E_USAGE, "%s: not a regular file (a stream "
                                              "cannot be read at offsets)", url)
                                    : SK_OK;
    if (rc) {
        close(fd);
        return rc;
    }
    struct xfile *f = calloc(1, sizeof *f);
    if (!f || !(f->url = strdup(url))) {
        free(f);
        close(fd);
        return set_err(err, SK_E_NOMEM, "out of memory");
    }
    f->fd = fd;
    f->size = (uint64_t)st.st_size;
    f->owner = (unsigned long)(uintptr_t)ctx;
    pthread_mutex_lock(&files_mu);
    f->next = files;
    files = f;
    pthread_mutex_unlock(&files_mu);
    rr->ctx = f;
    rr->read_at = x_read_at;
    rr->size = f->size;
    rr->close = x_close;
    return SK_OK;
}

/* The Getter's file of this url, if the dataset opened one through it. */
static struct xfile *x_find(unsigned long owner, const char *url)
{
    struct xfile *f;
    pthread_mutex_lock(&files_mu);
    for (f = files; f && (f->owner != owner || strcmp(f->url, url)); f = f->next) {}
    pthread_mutex_unlock(&files_mu);
    return f;
}

/* Raises the exception dataset.py maps (code, err) to. */
static void raise_sk(Getter *g, int code, const sk_error *err, int kind)
{
    const char *msg = err->msg[0] ? err->msg : "libshardkit error";
    PyObject *exc = PyObject_CallFunction(g->error, "iy#i", code, msg,
                                          (Py_ssize_t)strnlen(msg, sizeof err->msg), kind);
    if (exc) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
}

static int closed(Getter *g)
{
    if (g->ds) return 0;
    if (!g->url || !g->error) { /* made with __new__ alone */
        PyErr_SetString(PyExc_ValueError, "Getter: not initialised");
        return 1;
    }
    PyObject *m = PyUnicode_FromFormat("%U: the dataset is closed", g->url);
    if (m) {
        PyObject *exc = PyObject_CallFunction(g->error, "iOi", SK_E_USAGE, m, KIND_ORDINAL);
        Py_DECREF(m);
        if (exc) {
            PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
            Py_DECREF(exc);
        }
    }
    return 1;
}

/* ----------------------------------------------------------------- getter */

static void getter_forget(Getter *g)
{
    for (size_t i = 0; i < g->nshards; i++) Py_CLEAR(g->shards[i].url);
    PyMem_Free(g->shards);
    g->shards = NULL;
    g->nshards = 0;
    for (int i = 0; i < NAME_CACHE; i++) Py_CLEAR(g->names[i].str);
}

static void getter_dealloc(Getter *g)
{
    getter_forget(g);
    Py_CLEAR(g->url);
    Py_CLEAR(g->error);
    Py_TYPE(g)->tp_free((PyObject *)g);
}

/* Getter(dataset, get, at, find, member, read, read_sample, samples,
 * set_range_open, crc32c, url, error): a dataset just opened (nothing read from it yet) and
 * library functions, as addresses (ints) from ctypes, in shardkit.h's
 * types. */
static int getter_init(Getter *g, PyObject *args, PyObject *kw)
{
    static unsigned long ids;
    unsigned long long a[10];
    PyObject *url, *error;
    static char *names[] = {"dataset", "get", "at", "find", "member", "read", "read_sample",
                            "samples", "set_range_open", "crc32c", "url", "error", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "KKKKKKKKKKUO:Getter", names, &a[0], &a[1],
                                     &a[2], &a[3], &a[4], &a[5], &a[6], &a[7], &a[8], &a[9], &url,
                                     &error))
        return -1;
    if (g->ds) {
        PyErr_SetString(PyExc_ValueError, "Getter: initialised already");
        return -1;
    }
    for (int i = 0; i < 10; i++)
        if (!a[i]) {
            PyErr_SetString(PyExc_ValueError, "Getter: a NULL address");
            return -1;
        }
    if (!PyCallable_Check(error)) {
        PyErr_SetString(PyExc_TypeError, "Getter: error must be callable");
        return -1;
    }
    getter_forget(g);
    g->ds = (sk_dataset *)(uintptr_t)a[0];
    g->get = (get_fn)(uintptr_t)a[1];
    g->at = (at_fn)(uintptr_t)a[2];
    g->find = (find_fn)(uintptr_t)a[3];
    g->member = (member_fn)(uintptr_t)a[4];
    g->read = (read_fn)(uintptr_t)a[5];
    g->read_sample = (read_sample_fn)(uintptr_t)a[6];
    g->samples = (samples_fn)(uintptr_t)a[7];
    g->crc = (crc_fn)(uintptr_t)a[9];
    g->id = ++ids; /* under the GIL */
    ((set_range_open_fn)(uintptr_t)a[8])(g->ds, x_open, (void *)(uintptr_t)g->id);
    Py_INCREF(url);
    Py_XSETREF(g->url, url);
    Py_INCREF(error);
    Py_XSETREF(g->error, error);
    return 0;
}

/* The str of an extension (cached by content); a new reference. */
static PyObject *ext_name(Getter *g, const char *s, size_t len)
{
    if (len <= NAME_MAX_LEN) {
        for (int i = 0; i < NAME_CACHE; i++) {
            struct name *n = &g->names[i];
            if (n->str && n->len == len && !memcmp(n->s, s, len)) {
                Py_INCREF(n->str);
                return n->str;
            }
        }
    }
    PyObject *str = PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "surrogateescape");
    if (str && len <= NAME_MAX_LEN) {
        struct name *n = &g->names[g->next_name++ % NAME_CACHE];
        Py_INCREF(str);
        Py_XSETREF(n->str, str);
        n->len = len;
        memcpy(n->s, s, len);
    }
    return str;
}

/* The Getter's record of a shard (NULL with an exception set). */
static struct slot *shard_slot(Getter *g, size_t shard)
{
    if (shard >= g->nshards) {
        size_t n = shard + 1 > 2 * g->nshards ? shard + 1 : 2 * g->nshards;
        struct slot *s = PyMem_Realloc(g->shards, n * sizeof *s);
        if (!s) return PyErr_NoMemory(), NULL;
        memset(s + g->nshards, 0, (n - g->nshards) * sizeof *s);
        g->shards = s;
        g->nshards = n;
    }
    return &g->shards[shard];
}

/* The str of a shard's path (cached by position); a borrowed reference. */
static PyObject *shard_url(Getter *g, const sk_hit *h)
{
    struct slot *s = shard_slot(g, h->shard);
    if (!s) return NULL;
    if (!s->url) s->url = PyUnicode_DecodeFSDefault(h->shard_path);
    return s->url;
}

static int is_remote(const char *path)
{
    return !strncmp(path, "s3://", 5) || !strncmp(path, "http://", 7) ||
           !strncmp(path, "https://", 8);
}

/* ------------------------------------------------------------------ lookup */

/* Without the GIL: the sample (key, or the ordinal when key is NULL) found,
 * and its member records into p->m (malloc'd, plan_free frees).  0 or the
 * sk_code; a record that cannot be read sets p->bad (its error in *merr)
 * and returns 0, so that check_records names the first of the sample's
 * faults, in the library's order. */
static int locate(Getter *g, const char *key, size_t key_len, uint64_t ordinal, struct plan *p,
                  sk_error *err, sk_error *merr)
{
    int rc = key ? g->find(g->ds, key, key_len ? key_len : strlen(key), &p->hit, err)
                 : g->at(g->ds, ordinal, &p->hit, err);
    if (rc) return rc;
    uint32_t n = p->hit.sample.member_count;
    p->m = malloc((n ? n : 1) * sizeof *p->m);
    if (!p->m) return set_err(err, SK_E_NOMEM, "out of memory for %u member records", n);
    for (uint32_t i = 0; i < n && !p->bad; i++)
        p->bad = g->member(g->ds, &p->hit, i, &p->m[i], merr);
    p->staged = is_remote(p->hit.shard_path);
    return SK_OK;
}

/* Whether a sample's records describe a plain sample of its proven file:
 * its span inside the file, its members in order inside the span, no NUL
 * in an extension.  Then the library's checks (check_records) would pass
 * and its bytes are at most the span; anything else goes to them. */
static int plain_in_file(const struct plan *p)
{
    const sk_sample_ref *sr = &p->hit.sample;
    if (p->bad || !p->xf || sr->stored_offset != sr->offset || sr->stored_span != sr->span ||
        sr->offset > p->xf->size || sr->span > p->xf->size - sr->offset)
        return 0;
    uint64_t pos = sr->offset, end = sr->offset + sr->span;
    for (uint32_t i = 0; i < sr->member_count; i++) {
        const sk_member_ref *m = &p->m[i];
        if (m->data_offset < pos || m->data_offset > end || m->size > end - m->data_offset ||
            memchr(m->ext, 0, m->ext_len))
            return 0;
        pos = m->data_offset + m->size;
    }
    return 1;
}

/* Without the GIL: the library's checks of a sample's records (sk_dataset_get
 * with no buffer makes them, and says what it needs; nothing is read): a
 * member past the end of its shard, sizes that overflow, a NUL in an
 * extension are its errors, before any bytes object is sized from them. */
static int check_records(Getter *g, const char *key, size_t key_len, uint64_t ordinal,
                         sk_error *err)
{
    sk_get_result r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    int rc = g->get(g->ds, key, key_len, ordinal, NULL, 0, &r, err);
    if (rc == SK_E_USAGE && r.need) return SK_OK;
    return rc ? rc : set_err(err, SK_E_USAGE, "sk_dataset_get read into no buffer");
}

/* With the GIL: a bytes object of each member's size. */
static int allocate(const struct plan *p)
{
    for (uint32_t i = 0; i < p->hit.sample.member_count; i++) {
        if (p->m[i].size > (uint64_t)PY_SSIZE_T_MAX) {
            PyErr_Format(PyExc_MemoryError, "member of %llu bytes",
                         (unsigned long long)p->m[i].size);
            return -1;
        }
        p->data[i] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)p->m[i].size);
        if (!p->data[i]) return -1;
    }
    return 0;
}

/* Without the GIL, a plain sample of a proven local shard: one preadv of
 * its span, each member's data into its bytes, the headers between them
 * into scratch; then each member's CRC32C.  1 when done, 0 when the
 * library is to read it (whatever is odd, or failed, it judges). */
static int fill_direct(Getter *g, const struct plan *p)
{
    const sk_sample_ref *sr = &p->hit.sample;
    uint32_t n = sr->member_count;
    char scratch[4096];
    struct iovec iov[1 + 2 * 255];
    int cnt = 0;
    if (sr->stored_offset != sr->offset || sr->stored_span != sr->span || n > 255 ||
        sr->offset > p->xf->size || sr->span > p->xf->size - sr->offset)
        return 0;
    uint64_t pos = sr->offset, end = sr->offset + sr->span;
    for (uint32_t i = 0; i < n; i++) {
        const sk_member_ref *m = &p->m[i];
        if (m->data_offset < pos || m->data_offset - pos > sizeof scratch ||
            m->size > end - m->data_offset)
            return 0;
        if (m->data_offset > pos)
            iov[cnt++] = (struct iovec){scratch, (size_t)(m->data_offset - pos)};
        if (m->size) iov[cnt++] = (struct iovec){PyBytes_AS_STRING(p->data[i]), (size_t)m->size};
        pos = m->data_offset + m->size;
    }
    if (cnt) {
        ssize_t k = preadv(p->xf->fd, iov, cnt, (off_t)sr->offset);
        if (k < 0 || (uint64_t)k != pos - sr->offset) return 0;
    }
    for (uint32_t i = 0; i < n; i++)
        if (g->crc(0, PyBytes_AS_STRING(p->data[i]), (size_t)p->m[i].size) != p->m[i].crc32c)
            return 0;
    return 1;
}

/* Without the GIL: each member's data into its bytes object, checked
 * against its CRC32C by the library.  A local shard: one pread per member,
 * straight into the bytes.  A remote one: the whole sample in one request
 * (the library's read_sample: one ranged GET of its span where it can)
 * into a buffer, then copied, rather than a request per member. */
static int fill(Getter *g, const struct plan *p, sk_error *err)
{
    uint32_t n = p->hit.sample.member_count;
    if (p->xf && fill_direct(g, p)) return SK_OK;
    if (p->staged) {
        uint64_t total = 0;
        for (uint32_t i = 0; i < n; i++) total += p->m[i].size;
        uint64_t cap = p->hit.sample.span > total && p->hit.sample.span - total <= (1u << 20)
                           ? p->hit.sample.span : total;
        if (cap > SIZE_MAX) return set_err(err, SK_E_NOMEM, "sample of %llu bytes",
                                                (unsigned long long)cap);
        unsigned char *buf = malloc(cap ? (size_t)cap : 1);
        sk_member_ref *ms = malloc((n ? n : 1) * sizeof *ms);
        int rc = buf && ms ? g->read_sample(g->ds, &p->hit, buf, (size_t)cap, ms, n, err)
                           : set_err(err, SK_E_NOMEM, "out of memory for a sample of "
                                          "%llu bytes", (unsigned long long)cap);
        size_t pos = 0;
        for (uint32_t i = 0; !rc && i < n; i++) {
            memcpy(PyBytes_AS_STRING(p->data[i]), buf + pos, (size_t)p->m[i].size);
            pos += (size_t)p->m[i].size;
        }
        free(buf);
        free(ms);
        return rc;
    }
    for (uint32_t i = 0; i < n; i++) {
        int rc = g->read(g->ds, &p->hit, i, PyBytes_AS_STRING(p->data[i]),
                         (size_t)p->m[i].size, err);
        if (rc) return rc;
    }
    return SK_OK;
}

/* With the GIL: the sample's dict; steals the bytes objects. */
static PyObject *build(Getter *g, struct plan *p)
{
    const sk_sample_ref *sr = &p->hit.sample;
    PyObject *d = PyDict_New(), *v;
    if (!d) return NULL;
    PyObject *url = shard_url(g, &p->hit);
    if (!url) goto fail;
    v = PyUnicode_DecodeUTF8(sr->key, (Py_ssize_t)sr->key_len, "surrogateescape");
    if (!v || PyDict_SetItem(d, s_key, v)) goto fail_v;
    Py_DECREF(v);
    if (PyDict_SetItem(d, s_url, url)) goto fail;
    v = PyLong_FromUnsignedLongLong(p->hit.global_ordinal);
    if (!v || PyDict_SetItem(d, s_index, v)) goto fail_v;
    Py_DECREF(v);
    v = PyLong_FromUnsignedLongLong(sr->ordinal);
    if (!v || PyDict_SetItem(d, s_ordinal, v)) goto fail_v;
    Py_DECREF(v);
    for (uint32_t i = 0; i < sr->member_count; i++) {
        PyObject *name = ext_name(g, p->m[i].ext, p->m[i].ext_len);
        int bad = !name || PyDict_SetItem(d, name, p->data[i]);
        Py_XDECREF(name);
        if (bad) goto fail;
        Py_CLEAR(p->data[i]);
    }
    return d;
fail_v:
    Py_XDECREF(v);
fail:
    Py_DECREF(d);
    return NULL;
}

static void plan_free(struct plan *p)
{
    if (p->data)
        for (uint32_t i = 0; i < p->hit.sample.member_count; i++) Py_XDECREF(p->data[i]);
    PyMem_Free(p->data);
    free(p->m);
    memset(p, 0, sizeof *p);
}

/* One sample (key, or the ordinal when key is NULL) as its dict: looked up
 * (no GIL), its bytes objects made, read into (no GIL), the dict built.
 * p is zeroed; the caller frees it with plan_free. */
static PyObject *run(Getter *g, struct plan *p, const char *key, size_t key_len,
                     uint64_t ordinal)
{
    sk_error err, merr;
    err.msg[0] = merr.msg[0] = 0;
    int rc;
    struct slot *s;
    Py_BEGIN_ALLOW_THREADS
    rc = locate(g, key, key_len, ordinal, p, &err, &merr);
    Py_END_ALLOW_THREADS
    if (!rc) {
        if (!(s = shard_slot(g, p->hit.shard))) return NULL;
        p->xf = s->xf;
        if (!plain_in_file(p)) {
            Py_BEGIN_ALLOW_THREADS
            rc = check_records(g, key, key_len, ordinal, &err);
            Py_END_ALLOW_THREADS
        }
        if (!rc && p->bad) {
            rc = p->bad;
            err = merr;
        }
    }
    if (!rc) {
        uint32_t m = p->hit.sample.member_count;
        p->data = PyMem_Calloc(m ? m : 1, sizeof(PyObject *));
        if (!p->data) return PyErr_NoMemory();
        if (allocate(p)) return NULL;
        Py_BEGIN_ALLOW_THREADS
        rc = fill(g, p, &err);
        Py_END_ALLOW_THREADS
        /* the library read from this shard: if through the Getter's
         * opener, the file is proven, and the next samples are preadv
         * (the slots may have moved while the GIL was released) */
        if (!rc && !p->staged) {
            if (!(s = shard_slot(g, p->hit.shard))) return NULL;
            if (!s->looked) {
                s->looked = 1;
                s->xf = x_find(g->id, p->hit.shard_path);
            }
        }
    }
    if (rc) {
        raise_sk(g, rc, &err, key ? KIND_KEY : KIND_ORDINAL);
        return NULL;
    }
    return build(g, p);
}

/* get(key, ordinal): the sample with this key (bytes), or at this global
 * ordinal when key is None; a dict as dataset.py's ctypes path gives. */
static PyObject *getter_get(Getter *g, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "get(key, ordinal) takes 2 arguments");
        return NULL;
    }
    const char *key = NULL;
    Py_ssize_t key_len = 0;
    uint64_t ordinal = 0;
    if (args[0] != Py_None) {
        if (PyBytes_AsStringAndSize(args[0], (char **)&key, &key_len)) return NULL;
    } else {
        ordinal = PyLong_AsUnsignedLongLong(args[1]);
        if (ordinal == (uint64_t)-1 && PyErr_Occurred()) return NULL;
    }
    if (closed(g)) return NULL;
    struct plan p;
    memset(&p, 0, sizeof p);
    PyObject *d = run(g, &p, key, (size_t)key_len, ordinal);
    plan_free(&p);
    return d;
}

/* An index of get_many as a global ordinal: an int (or what
 * operator.index takes, not a bool), negative from the end.  0, or -1 with
 * an exception set (SampleIndexError when out of range, as dataset.py's
 * _ordinal). */
static int ordinal_of(Getter *g, PyObject *o, uint64_t *out)
{
    if (PyBool_Check(o)) {
        PyErr_SetString(PyExc_TypeError, "dataset indices must be integers, not bool");
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (!i) {
        PyErr_Format(PyExc_TypeError,
                     "dataset indices must be integers, slices or keys (str), not %s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    int ok = 1;
    if (v == -1 && PyErr_Occurred()) {
        Py_DECREF(i);
        return -1;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(i);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            ok = 0;
        }
        *out = u;
    } else if (overflow < 0) {
        ok = 0;
    } else if (v >= 0) {
        *out = (uint64_t)v;
    } else {
        uint64_t count = 0;
        sk_error err;
        int rc;
        err.msg[0] = 0;
        Py_BEGIN_ALLOW_THREADS
        rc = g->samples(g->ds, &count, &err);
        Py_END_ALLOW_THREADS
        if (rc) {
            Py_DECREF(i);
            raise_sk(g, rc, &err, KIND_ORDINAL);
            return -1;
        }
        ok = (uint64_t)-(v + 1) < count;
        *out = count - (uint64_t)-(v + 1) - 1;
    }
    if (!ok) {
        sk_error err = {.code = SK_E_NOTFOUND};
        PyObject *s = PyObject_Str(i);
        const char *u = g->url ? PyUnicode_AsUTF8(g->url) : NULL;
        const char *is = s ? PyUnicode_AsUTF8(s) : NULL;
        if (u && is) {
            PyOS_snprintf(err.msg, sizeof err.msg, "%s: no sample #%s", u, is);
            raise_sk(g, SK_E_NOTFOUND, &err, KIND_ORDINAL);
        }
        Py_XDECREF(s);
        Py_DECREF(i);
        return -1;
    }
    Py_DECREF(i);
    return 0;
}

/* get_many(indices): [get(None, i) for i in indices], the ordinals checked
 * first (as dataset.py's ctypes path does), then each sample looked up,
 * read and built in turn: its bytes are written while they are in the
 * cache (allocating a batch's first and reading them after measured
 * slower), and the first that fails raises. */
static PyObject *getter_get_many(Getter *g, PyObject *indices)
{
    PyObject *seq = PySequence_Fast(indices, "get_many: indices must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = NULL;
    uint64_t *ords = PyMem_Malloc((n ? (size_t)n : 1) * sizeof *ords);
    struct plan p;
    memset(&p, 0, sizeof p);
    if (!ords) {
        PyErr_NoMemory();
        goto done;
    }
    if (closed(g)) goto done;
    for (Py_ssize_t j = 0; j < n; j++)
        if (ordinal_of(g, PySequence_Fast_GET_ITEM(seq, j), &ords[j])) goto done;
    if (!(out = PyList_New(n))) goto done;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *d = run(g, &p, NULL, 0, ords[j]);
        plan_free(&p);
        if (!d) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, j, d);
    }
done:
    PyMem_Free(ords);
    Py_DECREF(seq);
    return out;
}

static PyObject *getter_close(Getter *g, PyObject *unused)
{
    g->ds = NULL;
    getter_forget(g);
    Py_RETURN_NONE;
}

static PyMethodDef getter_methods[] = {
    {"get", (PyCFunction)(void (*)(void))getter_get, METH_FASTCALL,
     "get(key, ordinal): the sample with this key (bytes), or at this ordinal (key None)"},
    {"get_many", (PyCFunction)getter_get_many, METH_O,
     "get_many(indices): the samples at these global ordinals (negative: from the end)"},
    {"close", (PyCFunction)getter_close, METH_NOARGS,
     "forgets the dataset (before it is closed); lookups then raise"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject GetterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "shardkit._ext.Getter",
    .tp_basicsize = sizeof(Getter),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lookups of one open sk_dataset through libshardkit's functions",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)getter_init,
    .tp_dealloc = (destructor)getter_dealloc,
    .tp_methods = getter_methods,
};

static struct PyModuleDef ext_module = {
    PyModuleDef_HEAD_INIT, "_ext",
    "shardkit's compiled lookups (dataset.py uses them when this module is built)", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__ext(void)
{
    if (PyType_Ready(&GetterType) < 0) return NULL;
    if (!(s_key = PyUnicode_InternFromString("__key__")) ||
        !(s_url = PyUnicode_InternFromString("__url__")) ||
        !(s_index = PyUnicode_InternFromString("__index__")) ||
        !(s_ordinal = PyUnicode_InternFromString("__ordinal__")))
        return NULL;
    PyObject *m = PyModule_Create(&ext_module);
    if (!m) return NULL;
    Py_INCREF(&GetterType);
    if (PyModule_AddObject(m, "Getter", (PyObject *)&GetterType) < 0 ||
        PyModule_AddIntConstant(m, "GET_RESULT_SIZE", (long)sizeof(sk_get_result)) < 0) {
        Py_DECREF(&GetterType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
