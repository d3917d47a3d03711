/*
 * s3_xfer.c - transfers to S3: local files, server-side copies, copies across
 * endpoints, and the streaming writer; single PUT below the threshold,
 * multipart with parallel parts above it, resume, abort on failure, and a
 * confirmation of every object: by the answer when it names our CRC32C or
 * MD5 (or a copy's source ETag), else a HEAD; optionally a full read-back.
 *
 * Shape: the caller's thread is the producer.  For a local file it reads
 * each part once through a small scratch buffer to compute its CRC32C (the
 * checksum header must precede the body), takes one of a fixed set of slots
 * (so at most `concurrency` parts are in flight) and queues the part's
 * request with the file range as its body: the engine reads the range
 * straight into curl's send buffer, so the bytes are copied from the page
 * cache twice into cache-sized buffers instead of through a part-sized one
 * (that copy, its page faults and a second CRC pass were over half the
 * client's CPU).  Copies, the streaming writer and --sign-payload (which
 * hashes the body before sending) fill the slot's buffer instead, so memory
 * there is slots x part size.  Completions arrive on the engine thread,
 * which records the part, frees the slot and, when a transfer's last part
 * is in, queues CompleteMultipartUpload, then the HEAD.  Slots that hold
 * no buffer (file ranges, server-side copies) may fill the whole
 * concurrency; at most MAX_BUFFERED hold one.  Everything shared
 * between the two threads is guarded by x->mu.
 */
#include "s3/s3_internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MIN_PART (5ull << 20)
#define MAX_BUFFERED 16 /* part buffers in flight unless max_parts_in_flight says */
#define MAX_PARTS 10000

enum kind { K_FILE, K_COPY, K_XCOPY, K_STREAM };
enum stage { S_QUEUED, S_RUNNING, S_DONE };

typedef struct item item;
typedef struct slot slot;
typedef struct sk_s3_xfer sk_s3_xfer;

struct item {
    sk_s3_xfer *x;
    enum kind kind;
    enum stage stage;
    char *src, *bucket, *key;  /* src: a path or an s3:// URL, for messages */
    sk_s3 *src_s3;
    char *sbucket, *skey;
    int fd;
    uint64_t size, part_size;
    int size_known;    /* copies: the size (and src_crc) came with the item, no HEAD */
    int nparts, cap_parts;
    int multipart, outstanding, all_submitted, chain_started;
    char upload_id[512];
    sk_s3_part *parts;
    uint32_t *crcs;
    uint32_t crc;      /* whole object, when known */
    int crc_known;
    char src_crc[24];  /* the source's checksum (copies) */
    char src_etag[80]; /* the source's ETag (copies) */
    char md5[33];      /* hex MD5 of a small single PUT's bytes, or "": its ETag confirms it */
    int parts_reused;
    int rc;
    sk_error err;
    sk_s3_req req;     /* the chain: PUT/Complete, HEAD, verify, abort */
    sk_buf body;
    uint32_t verify_crc;
    int batched;       /* added by sk_s3_xfer_add_*: reported and freed by wait */
    item *next;        /* in x's queue of items not started, then its done queue */
};

struct slot {
    sk_s3_req r;       /* first: the engine hands back &r */
    sk_s3_req get;     /* cross-endpoint copies: the GET that fills buf */
    sk_s3_xfer *x;
    unsigned char *buf;
    size_t cap, len;
    item *it;
    int part;          /* index into it->parts, -1 for a single PUT */
    int busy;
    sk_buf resp;
};

struct sk_s3_xfer {
    sk_s3 *s3;
    sk_s3_xfer_opts o;
    sk_s3_xfer_done done;
    void *ud;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot *slots;
    int nslots;
    int nbufs, max_bufs; /* slots holding a buffer, and how many may: memory is max_bufs x part size */
    /* Each item is in at most one of two queues, so every step of wait is
     * O(1) per object however many are planned: queued (added, not yet
     * started) and done (finished, not yet reported); `active` counts the
     * started ones not yet reported. */
    item *head, *tail;
    item *done_head, *done_tail;
    size_t active;
    int fatal;
    uint64_t bytes_done, bytes_total;
    uint64_t progress_ms; /* when progress was last called */
    unsigned char *scratch; /* the producer's CRC32C pass over file parts */
};

#define SCRATCH_SIZE (256u << 10) /* fits in L2: the CRC reads what pread just wrote */

/* ---------------------------------------------------------------- helpers */

static void item_fail(item *it, const sk_error *e, int code)
{
    /* under x->mu */
    if (it->rc) return;
    it->rc = code ? code : SK_E_REMOTE;
    if (e) it->err = *e;
    else sk_error_set(&it->err, it->rc, "s3://%s/%s: failed", it->bucket, it->key);
}

/* A failure that every later request would repeat. */
static int is_fatal(const sk_s3_req *r)
{
    return r->status == 403 || r->status == 400 || r->status == 301 ||
           (r->status == 404 && strcmp(r->method, "HEAD") && strcmp(r->method, "GET"));
}

/* A free slot; need > 0: one with a buffer of need bytes.  Requests that
 * carry no buffer (a local file's range, a server-side copy) may fill every
 * slot, but at most max_bufs slots ever hold a buffer, so a high
 * concurrency for many small objects does not multiply the memory of
 * buffered parts (copies across endpoints, --sign-payload, the writer). */
static slot *get_slot(sk_s3_xfer *x, size_t need)
{
    pthread_mutex_lock(&x->mu);
    slot *s = NULL;
    for (;;) {
        slot *bare = NULL, *held = NULL;
        for (int i = 0; i < x->nslots; i++) {
            slot *c = &x->slots[i];
            if (c->busy) continue;
            if (!c->buf) {
                if (!bare) bare = c;
            } else if (!held || (held->cap < need && c->cap >= need)) {
                held = c;
            }
        }
        /* no buffer wanted: keep the buffered slots for those that want one */
        if (!need) s = bare ? bare : held;
        else if (held) s = held;
        else if (bare && x->nbufs < x->max_bufs) s = bare, x->nbufs++;
        if (s) break;
        pthread_cond_wait(&x->cv, &x->mu);
    }
    s->busy = 1;
    pthread_mutex_unlock(&x->mu);
    if (s->cap < need) {
        free(s->buf);
        s->buf = malloc(need);
        s->cap = s->buf ? need : 0;
        if (!s->buf) {
            pthread_mutex_lock(&x->mu);
            x->nbufs--; /* counted when it had or was given a buffer; now it has none */
            s->busy = 0;
            pthread_cond_broadcast(&x->cv);
            pthread_mutex_unlock(&x->mu);
            return NULL;
        }
    }
    return s;
}

static void release_slot(slot *s)
{
    /* under x->mu */
    s->busy = 0;
    s->it = NULL;
    pthread_cond_broadcast(&s->x->cv);
}

static int read_full(int fd, void *buf, size_t n, uint64_t off, const char *path, sk_error *err)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR) continue;
        SK_FAIL_IF(k < 0, err, SK_E_IO, "%s: %s", path, strerror(errno));
        SK_FAIL_IF(k == 0, err, SK_E_IO, "%s: file shrank while being uploaded", path);
        got += (size_t)k;
    }
    return 0;
}

static uint64_t choose_part_size(const sk_s3_xfer *x, uint64_t size)
{
    uint64_t ps = x->o.part_size;
    while ((size + ps - 1) / ps > MAX_PARTS) ps *= 2;
    return ps;
}

static void b64crc(uint32_t c, char *out) { sk_s3_crc32c_b64(c, out); }

/* -------------------------------------------------------- completion chain */

static void chain_finish(item *it);
static void start_head(item *it);
static void confirmed(item *it);
static void md5_hex(const void *p, size_t n, char out[33]);

/* Objects up to this size carry the MD5 of their bytes, so that a server
 * that keeps no CRC32C confirms them by the ETag of its answer instead of
 * a HEAD: MD5 costs about 0.1 ms here, a HEAD a request (on a RADOS
 * gateway, a third of the server's CPU per small object). */
#define MD5_CONFIRM_MAX (64u << 10)

/* Whether the answer to a single PUT or CopyObject proves what the server
 * stored, as a HEAD would (etag/crc: the answer's ETag and CRC32C): our
 * CRC32C echoed (the server checked the bytes against it), our MD5 as the
 * ETag, or, for a copy, the source's checksum or plain (non-multipart)
 * ETag.  Anything else, e.g. an encrypted object's opaque ETag, is left
 * to the HEAD, never failed here. */
static int answer_confirms(const item *it, const char *etag, const char *crc)
{
    char want[24];
    if (it->kind == K_COPY) {
        if (crc[0] && it->src_crc[0] && !strchr(it->src_crc, '-') && !strcmp(crc, it->src_crc)) return 1;
        return etag[0] && it->src_etag[0] && !strchr(it->src_etag, '-') && !strcmp(etag, it->src_etag);
    }
    if (crc[0] && it->crc_known) {
        b64crc(it->crc, want);
        if (!strcmp(crc, want)) return 1;
    }
    return etag[0] && it->md5[0] && !strcasecmp(etag, it->md5);
}

static void finished(item *it)
{
    sk_s3_xfer *x = it->x;
    pthread_mutex_lock(&x->mu);
    it->stage = S_DONE;
    if (it->fd >= 0) { /* every read is behind it: free the descriptor now */
        close(it->fd);
        it->fd = -1;
    }
    if (it->batched) { /* onto the done queue, for wait to report */
        it->next = NULL;
        if (x->done_tail) x->done_tail->next = it;
        else x->done_head = it;
        x->done_tail = it;
    }
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

static void abort_done(sk_s3_req *r)
{
    item *it = (item *)((char *)r - offsetof(item, req));
    finished(it);
}

/* The end of a transfer: on failure, abort its multipart upload (unless a
 * later --resume is meant to pick it up), then report. */
static void chain_end(item *it)
{
    if (it->rc && it->multipart && it->upload_id[0] && !it->x->o.resume) {
        sk_buf_free(&it->req.resp);
        sk_s3_req_init(&it->req, it->x->s3, "DELETE", it->bucket, it->key);
        sk_s3_req_query(&it->req, "uploadId", it->upload_id);
        it->req.done = abort_done;
        sk_s3_submit(&it->req);
        return;
    }
    finished(it);
}

static int verify_sink(void *ud, const void *p, size_t n)
{
    item *it = ud;
    it->verify_crc = sk_crc32c(it->verify_crc, p, n);
    return 0;
}

static void verify_done(sk_s3_req *r)
{
    item *it = (item *)((char *)r - offsetof(item, req));
    pthread_mutex_lock(&it->x->mu);
    if (r->rc) item_fail(it, &r->err, r->rc);
    else if (it->crc_known && it->verify_crc != it->crc) {
        sk_error e;
        sk_error_set(&e, SK_E_MISMATCH, "s3://%s/%s: read back CRC32C %08x, expected %08x",
                     it->bucket, it->key, it->verify_crc, it->crc);
        item_fail(it, &e, SK_E_MISMATCH);
    }
    pthread_mutex_unlock(&it->x->mu);
    chain_end(it);
}

static void head_done(sk_s3_req *r)
{
    item *it = (item *)((char *)r - offsetof(item, req));
    sk_error e = SK_ERROR_INIT;
    if (r->rc) {
        e = r->err;
    } else if (r->content_length != it->size) {
        sk_error_set(&e, SK_E_MISMATCH, "s3://%s/%s: the server holds %" PRIu64 " bytes, we sent %" PRIu64,
                     it->bucket, it->key, r->content_length, it->size);
    } else if (r->crc32c[0]) {
        char want[24] = "";
        /* A plain value on a multipart object would be a FULL_OBJECT checksum,
         * which we never ask for (moto returns one that is neither form):
         * only the composite "-N" form is compared there. */
        if (!strchr(r->crc32c, '-')) {
            if (it->multipart) ;
            else if (it->crc_known) b64crc(it->crc, want);
            else if (it->src_crc[0] && !strchr(it->src_crc, '-')) snprintf(want, sizeof want, "%s", it->src_crc);
        } else if (it->multipart && it->crcs && it->kind != K_COPY) {
            sk_s3_composite_crc(it->crcs, it->nparts, want);
        }
        if (want[0] && strcmp(want, r->crc32c))
            sk_error_set(&e, SK_E_MISMATCH, "s3://%s/%s: the server's CRC32C is %s, ours %s",
                         it->bucket, it->key, r->crc32c, want);
    }
    pthread_mutex_lock(&it->x->mu);
    if (e.code) item_fail(it, &e, e.code);
    pthread_mutex_unlock(&it->x->mu);
    confirmed(it);
}

/* The object is confirmed (or failed): --verify reads it back, else done. */
static void confirmed(item *it)
{
    pthread_mutex_lock(&it->x->mu);
    int verify = !it->rc && it->x->o.verify;
    pthread_mutex_unlock(&it->x->mu);
    if (verify) {
        sk_buf_free(&it->req.resp);
        sk_s3_req_init(&it->req, it->x->s3, "GET", it->bucket, it->key);
        it->verify_crc = 0;
        it->req.sink = verify_sink, it->req.sink_ud = it;
        it->req.done = verify_done;
        sk_s3_submit(&it->req);
        return;
    }
    chain_end(it);
}

static void start_head(item *it)
{
    sk_buf_free(&it->req.resp);
    sk_s3_req_init(&it->req, it->x->s3, "HEAD", it->bucket, it->key);
    sk_s3_req_header(&it->req, "x-amz-checksum-mode:ENABLED");
    it->req.done = head_done;
    sk_s3_submit(&it->req);
}

static void complete_done(sk_s3_req *r)
{
    item *it = (item *)((char *)r - offsetof(item, req));
    if (r->rc) {
        pthread_mutex_lock(&it->x->mu);
        item_fail(it, &r->err, r->rc);
        if (is_fatal(r)) it->x->fatal = 1;
        pthread_mutex_unlock(&it->x->mu);
        chain_end(it);
        return;
    }
    start_head(it);
}

/* Called once per multipart transfer when no part is outstanding and no more
 * will be submitted. */
static void chain_finish(item *it)
{
    if (it->rc) {
        chain_end(it);
        return;
    }
    sk_buf_free(&it->req.resp);
    if (sk_s3_mpu_complete_req(&it->req, it->x->s3, it->bucket, it->key, it->upload_id, it->parts,
                               it->nparts, &it->body)) {
        pthread_mutex_lock(&it->x->mu);
        sk_error e;
        sk_error_set(&e, SK_E_NOMEM, "out of memory");
        item_fail(it, &e, SK_E_NOMEM);
        pthread_mutex_unlock(&it->x->mu);
        chain_end(it);
        return;
    }
    it->req.done = complete_done;
    sk_s3_submit(&it->req);
}

/* Marks one more part (or the producer's last word) and starts completing
 * when everything is in.  Under x->mu; returns 1 when the caller must call
 * chain_finish after unlocking. */
static int settle(item *it)
{
    if (it->all_submitted && !it->outstanding && !it->chain_started) {
        it->chain_started = 1;
        return 1;
    }
    return 0;
}

typedef struct copy_part_state {
    char *etag, *crc;
} copy_part_state;

static void copy_part_cb(void *ud, int end, const char *name, const char *text)
{
    copy_part_state *c = ud;
    if (!end) return;
    if (!strcmp(name, "ETag")) {
        snprintf(c->etag, 80, "%s", text[0] == '"' ? text + 1 : text);
        char *q = strchr(c->etag, '"');
        if (q) *q = 0;
    } else if (!strcmp(name, "ChecksumCRC32C")) {
        snprintf(c->crc, 24, "%s", text);
    }
}

static void part_done(sk_s3_req *r)
{
    slot *s = (slot *)r;
    item *it = s->it;
    sk_s3_xfer *x = s->x;
    char etag[80], crc[24] = "";
    snprintf(etag, sizeof etag, "%s", r->etag);
    if (!r->rc && it->kind == K_COPY) {
        copy_part_state c = {etag, crc};
        etag[0] = 0;
        sk_error e = SK_ERROR_INIT;
        if (sk_s3_xml_parse(r->resp.p, r->resp.len, copy_part_cb, &c, &e) || !etag[0]) {
            r->rc = SK_E_REMOTE;
            if (!e.code) sk_error_set(&e, SK_E_REMOTE, "s3://%s/%s: no ETag in the copy answer", it->bucket, it->key);
            r->err = e;
        }
    }
    pthread_mutex_lock(&x->mu);
    if (r->rc) {
        item_fail(it, &r->err, r->rc);
        if (is_fatal(r)) x->fatal = 1;
    } else if (s->part >= 0) {
        sk_s3_part *p = &it->parts[s->part];
        snprintf(p->etag, sizeof p->etag, "%s", etag);
        if (crc[0]) snprintf(p->crc32c, sizeof p->crc32c, "%s", crc);
        x->bytes_done += p->size;
    } else {
        x->bytes_done += it->size;
    }
    int single = s->part < 0;
    if (single && it->kind != K_COPY) snprintf(crc, sizeof crc, "%s", r->crc32c);
    int ok = single && !it->rc && answer_confirms(it, etag, crc);
    it->outstanding--;
    release_slot(s);
    int fin = single ? 0 : settle(it);
    if (single && it->fd >= 0) { /* its one body is sent: free the descriptor before the HEAD */
        close(it->fd);
        it->fd = -1;
    }
    pthread_mutex_unlock(&x->mu);
    if (single) {
        if (it->rc) chain_end(it);
        else if (ok) confirmed(it);
        else start_head(it);
    } else if (fin) {
        chain_finish(it);
    }
}

/* Queues slot s (s->len bytes with CRC32C c: from s->buf, or from it->fd at
 * fd_off when from_fd) as part idx of it, or as the whole object when
 * idx < 0. */
static void queue_put(item *it, slot *s, int idx, uint32_t c, int from_fd, uint64_t fd_off)
{
    sk_s3_xfer *x = it->x;
    char b64[9];
    b64crc(c, b64);
    sk_buf_free(&s->r.resp);
    sk_s3_req_init(&s->r, x->s3, "PUT", it->bucket, it->key);
    if (from_fd) s->r.body_from_fd = 1, s->r.body_fd = it->fd, s->r.body_fd_off = fd_off;
    else s->r.body = s->buf;
    s->r.body_len = s->len;
    sk_s3_req_header(&s->r, "x-amz-checksum-crc32c:%s", b64);
    if (idx >= 0) {
        char n[16];
        snprintf(n, sizeof n, "%d", idx + 1);
        sk_s3_req_query(&s->r, "partNumber", n);
        sk_s3_req_query(&s->r, "uploadId", it->upload_id);
        pthread_mutex_lock(&x->mu);
        it->crcs[idx] = c;
        snprintf(it->parts[idx].crc32c, sizeof it->parts[idx].crc32c, "%s", b64);
        pthread_mutex_unlock(&x->mu);
    } else if (!it->crc_known) {
        it->crc = c, it->crc_known = 1;
    }
    s->it = it, s->part = idx;
    s->r.done = part_done;
    sk_s3_submit(&s->r);
}

/* Queues slot s (buffer filled, s->len bytes) as in queue_put.  Returns the
 * slot's CRC32C, so that callers build the whole object's CRC with
 * sk_crc32c_combine instead of running over the bytes a second time. */
static uint32_t send_slot(item *it, slot *s, int idx)
{
    uint32_t c = sk_crc32c(0, s->buf, s->len);
    if (idx < 0 && s->len <= MD5_CONFIRM_MAX) md5_hex(s->buf, s->len, it->md5);
    queue_put(it, s, idx, c, 0, 0);
    return c;
}

/* The CRC32C of len bytes of it->fd at off, read through x->scratch. */
static int crc_range(item *it, uint64_t off, uint64_t len, uint32_t *crc, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    if (!x->scratch) x->scratch = malloc(SCRATCH_SIZE);
    SK_FAIL_IF(!x->scratch, err, SK_E_NOMEM, "out of memory");
    uint32_t c = 0;
    while (len) {
        size_t k = len < SCRATCH_SIZE ? (size_t)len : SCRATCH_SIZE;
        SK_GUARD(read_full(it->fd, x->scratch, k, off, it->src, err));
        c = sk_crc32c(c, x->scratch, k);
        off += k, len -= k;
    }
    *crc = c;
    return 0;
}

/* Queues part idx (idx < 0: the whole object) of a local file: its CRC32C
 * from one pass, then a slot whose request reads the range itself.  The
 * CRC comes first so that the producer works while every slot is busy. */
static int send_file_range(item *it, int idx, uint64_t off, size_t len, uint32_t *crc, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    uint32_t c = 0;
    SK_GUARD(crc_range(it, off, len, &c, err));
    /* a small object is whole in the scratch buffer after one read */
    if (idx < 0 && len <= MD5_CONFIRM_MAX) md5_hex(x->scratch, len, it->md5);
    slot *s = get_slot(x, 0);
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    s->len = len;
    pthread_mutex_lock(&x->mu);
    if (idx >= 0) it->parts[idx].number = idx + 1, it->parts[idx].size = len;
    it->outstanding++;
    pthread_mutex_unlock(&x->mu);
    queue_put(it, s, idx, c, 1, off);
    *crc = c;
    return 0;
}

/* Cross-endpoint copies: the ranged GET into the slot finished. */
static void xget_done(sk_s3_req *r)
{
    slot *s = (slot *)((char *)r - offsetof(slot, get));
    item *it = s->it;
    if (r->rc) {
        pthread_mutex_lock(&s->x->mu);
        item_fail(it, &r->err, r->rc);
        if (is_fatal(r)) s->x->fatal = 1;
        it->outstanding--;
        release_slot(s);
        int fin = s->part >= 0 ? settle(it) : 0;
        pthread_mutex_unlock(&s->x->mu);
        sk_buf_free(&r->resp);
        if (s->part < 0) chain_end(it);
        else if (fin) chain_finish(it);
        return;
    }
    s->len = r->dst_len;
    sk_buf_free(&r->resp);
    (void)send_slot(it, s, s->part);
}

/* ----------------------------------------------------------------- setup */

static int grow_parts(item *it, int n, sk_error *err)
{
    if (n <= it->cap_parts) return 0;
    int cap = it->cap_parts ? it->cap_parts : 16;
    while (cap < n) cap *= 2;
    pthread_mutex_lock(&it->x->mu);
    sk_s3_part *p = realloc(it->parts, (size_t)cap * sizeof *p);
    uint32_t *c = p ? realloc(it->crcs, (size_t)cap * sizeof *c) : NULL;
    if (p) it->parts = p;
    if (c) it->crcs = c;
    if (p && c) {
        memset(p + it->cap_parts, 0, (size_t)(cap - it->cap_parts) * sizeof *p);
        it->cap_parts = cap;
    }
    pthread_mutex_unlock(&it->x->mu);
    SK_FAIL_IF(!p || !c, err, SK_E_NOMEM, "out of memory");
    return 0;
}

typedef struct find_upload {
    const char *key;
    char id[512];
    char (*others)[512];
    int nothers;
} find_upload;

static int find_upload_cb(void *ud, const char *key, const char *upload_id)
{
    find_upload *f = ud;
    if (strcmp(key, f->key)) return 0;
    if (f->id[0] && f->nothers < 16) snprintf(f->others[f->nothers++], 512, "%s", f->id);
    snprintf(f->id, sizeof f->id, "%s", upload_id); /* the latest wins */
    return 0;
}

static void md5_hex(const void *p, size_t n, char out[33])
{
    unsigned char d[16];
    static const char hex[] = "0123456789abcdef";
    sk_s3_md5(p, n, d);
    for (int i = 0; i < 16; i++) out[2 * i] = hex[d[i] >> 4], out[2 * i + 1] = hex[d[i] & 15];
    out[32] = 0;
}

/* --resume: adopt the latest in-progress upload of this key, keeping the
 * parts whose size and checksum (CRC32C, else the MD5 ETag) match the
 * local file.  Fills keep[] and may change the part size to the old one. */
static int resume_lookup(item *it, unsigned char **keep, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    char others[16][512];
    find_upload f = {it->key, "", others, 0};
    *keep = NULL;
    SK_GUARD(sk_s3_list_uploads(x->s3, it->bucket, it->key, find_upload_cb, &f, err));
    for (int i = 0; i < f.nothers; i++) sk_s3_abort_upload(x->s3, it->bucket, it->key, others[i], NULL);
    if (!f.id[0]) return 0;
    sk_s3_part *old = NULL;
    int nold = 0;
    SK_GUARD(sk_s3_mpu_list_parts(x->s3, it->bucket, it->key, f.id, &old, &nold, err));
    snprintf(it->upload_id, sizeof it->upload_id, "%s", f.id);
    if (nold && old[0].number == 1 && old[0].size >= MIN_PART && old[0].size < it->size)
        it->part_size = old[0].size;
    it->nparts = (int)((it->size + it->part_size - 1) / it->part_size);
    int rc = grow_parts(it, it->nparts, err);
    unsigned char *k = calloc((size_t)it->nparts + 1, 1);
    unsigned char *buf = rc || !k ? NULL : malloc(it->part_size);
    if (!rc && (!k || !buf)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (int i = 0; i < nold && !rc; i++) {
        int idx = old[i].number - 1;
        if (idx < 0 || idx >= it->nparts) continue;
        uint64_t off = (uint64_t)idx * it->part_size;
        uint64_t len = it->size - off < it->part_size ? it->size - off : it->part_size;
        if (old[i].size != len) continue;
        if ((rc = read_full(it->fd, buf, len, off, it->src, err))) break;
        uint32_t c = sk_crc32c(0, buf, len);
        char b64[9], md5[33];
        int same;
        b64crc(c, b64);
        if (old[i].crc32c[0]) {
            same = !strcmp(old[i].crc32c, b64);
        } else {
            md5_hex(buf, len, md5);
            same = !strcmp(old[i].etag, md5);
        }
        if (!same) continue;
        k[idx] = 1;
        it->parts[idx].number = idx + 1;
        it->parts[idx].size = len;
        snprintf(it->parts[idx].etag, sizeof it->parts[idx].etag, "%s", old[i].etag);
        snprintf(it->parts[idx].crc32c, sizeof it->parts[idx].crc32c, "%s", b64);
        it->crcs[idx] = c;
        it->parts_reused++;
    }
    free(buf), free(old);
    if (rc) {
        free(k);
        return rc;
    }
    *keep = k;
    return 0;
}

/* Producer side of a local file. */
static int run_file(item *it, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    if (it->fd < 0) {
        struct stat st;
        it->fd = open(it->src, O_RDONLY | O_CLOEXEC);
        SK_FAIL_IF(it->fd < 0, err, SK_E_IO, "%s: %s", it->src, strerror(errno));
        SK_FAIL_IF(fstat(it->fd, &st) != 0 || (uint64_t)st.st_size != it->size, err, SK_E_INPUT,
                   "%s: changed size since it was listed", it->src);
        posix_fadvise(it->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    /* --sign-payload hashes each body before sending: it needs it in memory */
    int from_fd = !x->s3->sign_payload;
    if (it->size <= x->o.multipart_threshold && from_fd) {
        uint32_t c;
        return send_file_range(it, -1, 0, (size_t)it->size, &c, err);
    }
    if (it->size <= x->o.multipart_threshold) {
        slot *s = get_slot(x, it->size ? it->size : 1);
        SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
        int rc = read_full(it->fd, s->buf, it->size, 0, it->src, err);
        if (rc) {
            pthread_mutex_lock(&x->mu);
            release_slot(s);
            pthread_mutex_unlock(&x->mu);
            return rc;
        }
        s->len = it->size;
        pthread_mutex_lock(&x->mu);
        it->outstanding++;
        pthread_mutex_unlock(&x->mu);
        (void)send_slot(it, s, -1);
        return 0;
    }
    it->multipart = 1;
    it->part_size = choose_part_size(x, it->size);
    unsigned char *keep = NULL;
    if (x->o.resume) SK_GUARD(resume_lookup(it, &keep, err));
    if (!it->upload_id[0])
        SK_GUARD(sk_s3_mpu_create(x->s3, it->bucket, it->key, it->upload_id, sizeof it->upload_id, err));
    it->nparts = (int)((it->size + it->part_size - 1) / it->part_size);
    int rc = grow_parts(it, it->nparts, err);
    uint32_t whole = 0;
    for (int i = 0; i < it->nparts && !rc; i++) {
        uint64_t off = (uint64_t)i * it->part_size;
        size_t len = (size_t)(it->size - off < it->part_size ? it->size - off : it->part_size);
        pthread_mutex_lock(&x->mu);
        int stop = it->rc || x->fatal;
        pthread_mutex_unlock(&x->mu);
        if (stop) break;
        if (keep && keep[i]) {
            /* resume_lookup read this part and kept its CRC32C */
            whole = sk_crc32c_combine(whole, it->crcs[i], len);
            pthread_mutex_lock(&x->mu);
            x->bytes_done += len;
            pthread_mutex_unlock(&x->mu);
            continue;
        }
        if (from_fd) {
            uint32_t c;
            rc = send_file_range(it, i, off, len, &c, err);
            if (!rc) whole = sk_crc32c_combine(whole, c, len);
            continue;
        }
        slot *s = get_slot(x, len);
        if (!s) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        rc = read_full(it->fd, s->buf, len, off, it->src, err);
        if (rc) {
            pthread_mutex_lock(&x->mu);
            release_slot(s);
            pthread_mutex_unlock(&x->mu);
            break;
        }
        s->len = len;
        pthread_mutex_lock(&x->mu);
        it->parts[i].number = i + 1;
        it->parts[i].size = len;
        it->outstanding++;
        pthread_mutex_unlock(&x->mu);
        whole = sk_crc32c_combine(whole, send_slot(it, s, i), len);
    }
    free(keep);
    if (!rc) it->crc = whole, it->crc_known = 1;
    return rc;
}

/* Producer side of a copy (same endpoint: server side; else GET + PUT). */
static int run_copy(item *it, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    if (!it->size_known) {
        sk_s3_object o;
        SK_GUARD(sk_s3_head(it->src_s3, it->sbucket, it->skey, &o, err));
        it->size = o.size;
        snprintf(it->src_crc, sizeof it->src_crc, "%s", o.crc32c);
        snprintf(it->src_etag, sizeof it->src_etag, "%s", o.etag);
        pthread_mutex_lock(&x->mu);
        x->bytes_total += o.size;
        pthread_mutex_unlock(&x->mu);
    }
    sk_buf src = {0};
    sk_buf_add(&src, "/", 1);
    sk_s3_uri_encode(&src, it->sbucket, 0);
    sk_buf_add(&src, "/", 1);
    sk_s3_uri_encode(&src, it->skey, 1);
    SK_FAIL_IF(!src.p, err, SK_E_NOMEM, "out of memory");
    int rc = 0;
    int single = it->size <= x->o.multipart_threshold;
    if (!single) {
        it->multipart = 1;
        it->part_size = choose_part_size(x, it->size);
        it->nparts = (int)((it->size + it->part_size - 1) / it->part_size);
        rc = grow_parts(it, it->nparts, err);
        if (!rc) rc = sk_s3_mpu_create(x->s3, it->bucket, it->key, it->upload_id, sizeof it->upload_id, err);
    }
    int n = single ? 1 : it->nparts;
    for (int i = 0; i < n && !rc; i++) {
        uint64_t off = (uint64_t)i * (single ? 0 : it->part_size);
        uint64_t len = single ? it->size : (it->size - off < it->part_size ? it->size - off : it->part_size);
        pthread_mutex_lock(&x->mu);
        int stop = it->rc || x->fatal;
        pthread_mutex_unlock(&x->mu);
        if (stop) break;
        slot *s = get_slot(x, it->kind == K_XCOPY ? (len ? len : 1) : 0); /* server side: no bytes here */
        if (!s) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        pthread_mutex_lock(&x->mu);
        if (!single) it->parts[i].number = i + 1, it->parts[i].size = len;
        it->outstanding++;
        pthread_mutex_unlock(&x->mu);
        s->it = it, s->part = single ? -1 : i;
        if (it->kind == K_XCOPY) {
            sk_buf_free(&s->get.resp);
            sk_s3_req_init(&s->get, it->src_s3, "GET", it->sbucket, it->skey);
            if (!single) sk_s3_req_header(&s->get, "range:bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
            s->get.dst = s->buf, s->get.dst_cap = s->cap;
            s->get.done = xget_done;
            sk_s3_submit(&s->get);
            continue;
        }
        sk_buf_free(&s->r.resp);
        sk_s3_req_init(&s->r, x->s3, "PUT", it->bucket, it->key);
        sk_s3_req_header(&s->r, "x-amz-copy-source:%s", src.p);
        if (single) {
            sk_s3_req_header(&s->r, "x-amz-checksum-algorithm:CRC32C");
        } else {
            char num[16];
            snprintf(num, sizeof num, "%d", i + 1);
            sk_s3_req_query(&s->r, "partNumber", num);
            sk_s3_req_query(&s->r, "uploadId", it->upload_id);
            sk_s3_req_header(&s->r, "x-amz-copy-source-range:bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
        }
        s->r.check_body_error = 1;
        s->r.done = part_done;
        sk_s3_submit(&s->r);
    }
    sk_buf_free(&src);
    return rc;
}

/* Runs one transfer's producer side; afterwards the engine finishes it. */
static void run_item(item *it)
{
    sk_s3_xfer *x = it->x;
    sk_error e = SK_ERROR_INIT;
    int rc = it->kind == K_FILE ? run_file(it, &e) : run_copy(it, &e);
    pthread_mutex_lock(&x->mu);
    if (rc) item_fail(it, &e, rc);
    it->all_submitted = 1;
    int fin = 0;
    if (it->multipart) fin = settle(it);
    else if (rc && !it->outstanding) fin = 1; /* a single PUT that never went */
    pthread_mutex_unlock(&x->mu);
    if (fin) chain_finish(it);
}

/* ------------------------------------------------------------------- API */

void sk_s3_xfer_opts_init_sized(sk_s3_xfer_opts *o, size_t size)
{
    static const sk_s3_xfer_opts defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

void sk_s3_writer_opts_init_sized(sk_s3_writer_opts *o, size_t size)
{
    static const sk_s3_writer_opts defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_s3_xfer_new(sk_s3_xfer **out, sk_s3 *s3, const sk_s3_xfer_opts *opts, sk_s3_xfer_done done,
                   void *ud, sk_error *err)
{
    sk_s3_xfer *x = calloc(1, sizeof *x);
    SK_FAIL_IF(!x, err, SK_E_NOMEM, "out of memory");
    x->s3 = s3;
    if (sk_options_take(&x->o, sizeof x->o, opts, NULL, "sk_s3_xfer_opts", err)) {
        free(x);
        return err->code;
    }
    if (!x->o.part_size) x->o.part_size = 8ull << 20;
    if (!x->o.multipart_threshold) x->o.multipart_threshold = 8ull << 20;
    if (x->o.part_size < MIN_PART) {
        uint64_t part_size = x->o.part_size;
        free(x);
        return sk_error_set(err, SK_E_USAGE, "part size %" PRIu64 " is below S3's minimum of 5 MiB", part_size);
    }
    if (x->o.part_size > (5ull << 30)) {
        free(x);
        return sk_error_set(err, SK_E_USAGE, "part size %" PRIu64 " is above S3's maximum of 5 GiB", opts->part_size);
    }
    if (x->o.multipart_threshold > (5ull << 30)) x->o.multipart_threshold = 5ull << 30;
    x->nslots = x->o.max_parts_in_flight > 0 ? x->o.max_parts_in_flight : s3->concurrency;
    x->max_bufs = x->o.max_parts_in_flight > 0 || x->nslots < MAX_BUFFERED ? x->nslots : MAX_BUFFERED;
    x->slots = calloc((size_t)x->nslots, sizeof *x->slots);
    if (!x->slots) {
        free(x);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < x->nslots; i++) x->slots[i].x = x;
    x->done = done, x->ud = ud;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    *out = x;
    return 0;
}

static void item_free(item *it)
{
    if (it->fd >= 0) close(it->fd);
    free(it->src), free(it->bucket), free(it->key), free(it->sbucket), free(it->skey);
    free(it->parts), free(it->crcs);
    sk_buf_free(&it->req.resp);
    sk_buf_free(&it->body);
    free(it);
}

void sk_s3_xfer_free(sk_s3_xfer *x)
{
    if (!x) return;
    for (item *it = x->head, *n; it; it = n) n = it->next, item_free(it);
    for (item *it = x->done_head, *n; it; it = n) n = it->next, item_free(it);
    for (int i = 0; i < x->nslots; i++) {
        free(x->slots[i].buf);
        sk_buf_free(&x->slots[i].r.resp);
        sk_buf_free(&x->slots[i].get.resp);
    }
    free(x->slots);
    free(x->scratch);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x);
}

static item *item_new(sk_s3_xfer *x, enum kind k, const char *src, const char *bucket,
                      const char *key, sk_error *err)
{
    item *it = calloc(1, sizeof *it);
    if (!it) return sk_error_set(err, SK_E_NOMEM, "out of memory"), NULL;
    it->x = x, it->kind = k, it->fd = -1;
    it->src = strdup(src), it->bucket = strdup(bucket), it->key = strdup(key);
    if (!it->src || !it->bucket || !it->key) {
        item_free(it);
        return sk_error_set(err, SK_E_NOMEM, "out of memory"), NULL;
    }
    return it;
}

static void item_queue(sk_s3_xfer *x, item *it)
{
    pthread_mutex_lock(&x->mu);
    it->batched = 1;
    if (x->tail) x->tail->next = it;
    else x->head = it;
    x->tail = it;
    pthread_mutex_unlock(&x->mu);
}

int sk_s3_xfer_add_file(sk_s3_xfer *x, const char *path, const char *bucket, const char *key,
                        sk_error *err)
{
    /* Only stat now: a dataset of 20,000 files must not hold 20,000 open
     * descriptors; run_file opens it when its turn comes. */
    struct stat st;
    SK_FAIL_IF(stat(path, &st) != 0, err, SK_E_IO, "%s: %s", path, strerror(errno));
    SK_FAIL_IF(!S_ISREG(st.st_mode), err, SK_E_IO, "%s: not a regular file", path);
    item *it = item_new(x, K_FILE, path, bucket, key, err);
    if (!it) return SK_E_NOMEM;
    it->size = (uint64_t)st.st_size;
    pthread_mutex_lock(&x->mu);
    x->bytes_total += it->size;
    pthread_mutex_unlock(&x->mu);
    item_queue(x, it);
    return 0;
}

/* Queues a copy; known (or NULL): the source as listed, so run_copy sends
 * no HEAD of it. */
static int add_copy(sk_s3_xfer *x, sk_s3 *src, const char *src_bucket, const char *src_key,
                    const sk_s3_object *known, const char *bucket, const char *key, sk_error *err)
{
    char url[2200];
    snprintf(url, sizeof url, "s3://%s/%s", src_bucket, src_key);
    item *it = item_new(x, src == x->s3 ? K_COPY : K_XCOPY, url, bucket, key, err);
    if (!it) return SK_E_NOMEM;
    it->src_s3 = src;
    it->sbucket = strdup(src_bucket), it->skey = strdup(src_key);
    if (!it->sbucket || !it->skey) {
        item_free(it);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    if (known) {
        it->size = known->size, it->size_known = 1;
        snprintf(it->src_crc, sizeof it->src_crc, "%s", known->crc32c);
        snprintf(it->src_etag, sizeof it->src_etag, "%s", known->etag);
        pthread_mutex_lock(&x->mu);
        x->bytes_total += known->size;
        pthread_mutex_unlock(&x->mu);
    }
    item_queue(x, it);
    return 0;
}

int sk_s3_xfer_add_copy(sk_s3_xfer *x, sk_s3 *src, const char *src_bucket, const char *src_key,
                        const char *bucket, const char *key, sk_error *err)
{
    return add_copy(x, src, src_bucket, src_key, NULL, bucket, key, err);
}

int sk_s3_xfer_add_copy_known(sk_s3_xfer *x, sk_s3 *src, const char *src_bucket, const char *src_key,
                              const sk_s3_object *known, const char *bucket, const char *key, sk_error *err)
{
    return add_copy(x, src, src_bucket, src_key, known, bucket, key, err);
}

/* Reports it through the done callback and frees it; under x->mu, which
 * is dropped around the callback. */
static void report(sk_s3_xfer *x, item *it, int *first_rc, sk_error *err)
{
    if (it->rc && !*first_rc) {
        *first_rc = it->rc;
        if (err) *err = it->err;
    }
    sk_s3_xfer_result res = {it->src, it->bucket, it->key, it->rc, &it->err, it->size,
                             it->crc, it->multipart ? it->nparts : 0, it->parts_reused};
    if (!it->crc_known) res.crc32c = 0;
    pthread_mutex_unlock(&x->mu);
    if (x->done) x->done(x->ud, &res);
    item_free(it);
    pthread_mutex_lock(&x->mu);
}

/* Reports every finished item (x->mu held). */
static void report_done(sk_s3_xfer *x, int *first_rc, sk_error *err)
{
    while (x->done_head) {
        item *it = x->done_head;
        x->done_head = it->next;
        if (!x->done_head) x->done_tail = NULL;
        x->active--;
        report(x, it, first_rc, err);
    }
}

/* The next item not yet started, taken off the queue (x->mu held). */
static item *take_queued(sk_s3_xfer *x)
{
    item *it = x->head;
    if (!it) return NULL;
    x->head = it->next;
    if (!x->head) x->tail = NULL;
    it->next = NULL;
    return it;
}

/* Runs every queued item (run_item waits for a free slot, which bounds
 * what is in flight) and reports what finishes meanwhile. */
static void start_queued(sk_s3_xfer *x, sk_s3_progress_fn progress, void *ud, int *first_rc, sk_error *err)
{
    for (;;) {
        pthread_mutex_lock(&x->mu);
        report_done(x, first_rc, err);
        item *next = take_queued(x);
        if (next && x->fatal) {
            /* a bad key or a missing bucket: the rest would fail alike */
            for (item *it = next; it; it = take_queued(x)) {
                sk_error_set(&it->err, SK_E_REMOTE, "%s: not started after an earlier fatal error", it->src);
                it->rc = SK_E_REMOTE;
                report(x, it, first_rc, err);
            }
            next = NULL;
        }
        if (next) {
            next->stage = S_RUNNING;
            x->active++;
        }
        pthread_mutex_unlock(&x->mu);
        if (!next) break;
        run_item(next);
        if (progress && sk_s3_now_ms() - x->progress_ms >= 200) {
            x->progress_ms = sk_s3_now_ms();
            progress(ud, x->bytes_done, x->bytes_total);
        }
    }
}

int sk_s3_xfer_start(sk_s3_xfer *x, sk_s3_progress_fn progress, void *ud, sk_error *err)
{
    int first_rc = 0;
    start_queued(x, progress, ud, &first_rc, err);
    pthread_mutex_lock(&x->mu);
    report_done(x, &first_rc, err);
    pthread_mutex_unlock(&x->mu);
    return first_rc;
}

int sk_s3_xfer_wait(sk_s3_xfer *x, sk_s3_progress_fn progress, void *ud, sk_error *err)
{
    int first_rc = 0;
    start_queued(x, progress, ud, &first_rc, err);
    /* wait for the tail */
    pthread_mutex_lock(&x->mu);
    for (;;) {
        report_done(x, &first_rc, err);
        if (!x->active) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        if (progress) {
            uint64_t d = x->bytes_done, t = x->bytes_total;
            pthread_mutex_unlock(&x->mu);
            progress(ud, d, t);
            pthread_mutex_lock(&x->mu);
        }
    }
    pthread_mutex_unlock(&x->mu);
    if (progress) progress(ud, x->bytes_done, x->bytes_total);
    return first_rc;
}

/* --------------------------------------------------------- stream writer */

struct sk_s3_writer {
    sk_s3_xfer *x;
    item *it;
    slot *cur;
    uint64_t total;
    uint32_t crc;
    int failed;
};

int sk_s3_writer_open(sk_s3_writer **out, sk_s3 *s3, const char *bucket, const char *key,
                      const sk_s3_writer_opts *opts, sk_error *err)
{
    sk_s3_writer_opts wo;
    SK_GUARD(sk_options_take(&wo, sizeof wo, opts, NULL, "sk_s3_writer_opts", err));
    sk_s3_xfer_opts xo = {.struct_size = sizeof xo};
    xo.part_size = wo.part_size, xo.max_parts_in_flight = wo.max_parts_in_flight;
    sk_s3_writer *w = calloc(1, sizeof *w);
    SK_FAIL_IF(!w, err, SK_E_NOMEM, "out of memory");
    int rc = sk_s3_xfer_new(&w->x, s3, &xo, NULL, NULL, err);
    if (rc) {
        free(w);
        return rc;
    }
    char url[2200];
    snprintf(url, sizeof url, "s3://%s/%s", bucket, key);
    w->it = item_new(w->x, K_STREAM, url, bucket, key, err);
    if (!w->it) {
        sk_s3_xfer_free(w->x);
        free(w);
        return SK_E_NOMEM;
    }
    w->it->part_size = w->x->o.part_size;
    w->it->stage = S_RUNNING;
    *out = w;
    return 0;
}

static int writer_flush(sk_s3_writer *w, sk_error *err)
{
    item *it = w->it;
    sk_s3_xfer *x = w->x;
    if (!it->upload_id[0]) {
        it->multipart = 1;
        SK_GUARD(sk_s3_mpu_create(x->s3, it->bucket, it->key, it->upload_id, sizeof it->upload_id, err));
    }
    SK_FAIL_IF(it->nparts >= MAX_PARTS, err, SK_E_USAGE,
               "%s: more than %d parts of %" PRIu64 " bytes: raise the part size", it->src, MAX_PARTS, it->part_size);
    SK_GUARD(grow_parts(it, it->nparts + 1, err));
    int i = it->nparts;
    pthread_mutex_lock(&x->mu);
    it->nparts++;
    it->parts[i].number = i + 1;
    it->parts[i].size = w->cur->len;
    it->outstanding++;
    pthread_mutex_unlock(&x->mu);
    slot *s = w->cur;
    size_t len = s->len;
    w->cur = NULL;
    w->crc = sk_crc32c_combine(w->crc, send_slot(it, s, i), len);
    return 0;
}

int sk_s3_writer_write(sk_s3_writer *w, const void *data, size_t len, sk_error *err)
{
    SK_FAIL_IF(w->failed, err, SK_E_USAGE, "%s: write after a failure", w->it->src);
    const unsigned char *p = data;
    w->total += len; /* w->crc grows part by part in writer_flush */
    while (len) {
        pthread_mutex_lock(&w->x->mu);
        int rc = w->it->rc;
        if (rc && err) *err = w->it->err;
        pthread_mutex_unlock(&w->x->mu);
        if (rc) {
            w->failed = 1;
            return rc;
        }
        if (!w->cur) {
            w->cur = get_slot(w->x, w->it->part_size);
            SK_FAIL_IF(!w->cur, err, SK_E_NOMEM, "out of memory");
            w->cur->len = 0;
        }
        size_t k = w->it->part_size - w->cur->len;
        if (k > len) k = len;
        memcpy(w->cur->buf + w->cur->len, p, k);
        w->cur->len += k, p += k, len -= k;
        if (w->cur->len == w->it->part_size) {
            int rc2 = writer_flush(w, err);
            if (rc2) {
                w->failed = 1;
                return rc2;
            }
        }
    }
    return 0;
}

static int writer_wait(sk_s3_writer *w, sk_error *err)
{
    sk_s3_xfer *x = w->x;
    pthread_mutex_lock(&x->mu);
    while (w->it->stage != S_DONE) pthread_cond_wait(&x->cv, &x->mu);
    int rc = w->it->rc;
    if (rc && err) *err = w->it->err;
    pthread_mutex_unlock(&x->mu);
    return rc;
}

int sk_s3_writer_finish(sk_s3_writer *w, uint64_t *size, uint32_t *crc32c, sk_error *err)
{
    item *it = w->it;
    sk_s3_xfer *x = w->x;
    int rc = w->failed ? SK_E_USAGE : 0;
    if (rc) sk_error_set(err, rc, "%s: finish after a failure", it->src);
    it->size = w->total;
    if (!rc && !it->upload_id[0]) {
        /* small object: one PUT */
        if (!w->cur) {
            w->cur = get_slot(x, 1);
            if (w->cur) w->cur->len = 0;
        }
        if (!w->cur) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc) {
            pthread_mutex_lock(&x->mu);
            it->outstanding++;
            pthread_mutex_unlock(&x->mu);
            slot *s = w->cur;
            w->cur = NULL;
            w->crc = send_slot(it, s, -1); /* also sets it->crc */
            rc = writer_wait(w, err);
        }
    } else if (!rc) {
        if (w->cur && w->cur->len) rc = writer_flush(w, err);
        /* every part is queued, so w->crc is whole; the HEAD and --verify
         * compare against it */
        it->crc = w->crc, it->crc_known = 1;
        pthread_mutex_lock(&x->mu);
        if (rc) item_fail(it, err, rc);
        it->all_submitted = 1;
        int fin = settle(it);
        pthread_mutex_unlock(&x->mu);
        if (fin) chain_finish(it);
        int rc2 = writer_wait(w, rc ? NULL : err);
        if (!rc) rc = rc2;
    }
    if (!rc) {
        if (size) *size = w->total;
        if (crc32c) *crc32c = w->crc;
    } else if (it->stage != S_DONE) {
        sk_s3_writer_abort(w);
        return rc;
    }
    if (w->cur) {
        pthread_mutex_lock(&x->mu);
        release_slot(w->cur);
        pthread_mutex_unlock(&x->mu);
    }
    item_free(it);
    sk_s3_xfer_free(x);
    free(w);
    return rc;
}

void sk_s3_writer_abort(sk_s3_writer *w)
{
    if (!w) return;
    item *it = w->it;
    sk_s3_xfer *x = w->x;
    pthread_mutex_lock(&x->mu);
    if (it->stage != S_DONE) {
        sk_error e;
        sk_error_set(&e, SK_E_IO, "%s: aborted", it->src);
        item_fail(it, &e, SK_E_IO);
        it->all_submitted = 1;
        int fin = it->multipart ? settle(it) : (!it->outstanding);
        pthread_mutex_unlock(&x->mu);
        if (fin && it->multipart) chain_finish(it);
        else if (fin) finished(it);
        writer_wait(w, NULL);
    } else {
        pthread_mutex_unlock(&x->mu);
    }
    item_free(it);
    sk_s3_xfer_free(x);
    free(w);
}
