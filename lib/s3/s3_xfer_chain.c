/*
 * s3_xfer_chain.c - the transfer engine's thread side: the slots parts
 * travel in, each part sent (a file range, or a slot's buffer) and
 * completed, and the chain that ends an object: CompleteMultipartUpload,
 * then the confirmation (by the answer when it names our CRC32C or MD5 or
 * a copy's source ETag, else a HEAD; optionally a full read-back), or an
 * abort on failure.  The shape of a transfer is described in s3_xfer.c.
 */
#include "s3/s3_xfer_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- helpers */

void sk_xfer_item_fail(item *it, const sk_error *e, int code)
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
slot *sk_xfer_get_slot(sk_s3_xfer *x, size_t need)
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

void sk_xfer_release_slot(slot *s)
{
    /* under x->mu */
    s->busy = 0;
    s->it = NULL;
    pthread_cond_broadcast(&s->x->cv);
}

int sk_xfer_read_full(int fd, void *buf, size_t n, uint64_t off, const char *path, sk_error *err)
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

uint64_t sk_xfer_part_size(const sk_s3_xfer *x, uint64_t size)
{
    uint64_t ps = x->o.part_size;
    while ((size + ps - 1) / ps > MAX_PARTS) ps *= 2;
    return ps;
}

static void b64crc(uint32_t c, char *out) { sk_s3_crc32c_b64(c, out); }

void sk_xfer_md5_hex(const void *p, size_t n, char out[33])
{
    unsigned char d[16];
    static const char hex[] = "0123456789abcdef";
    sk_s3_md5(p, n, d);
    for (int i = 0; i < 16; i++) out[2 * i] = hex[d[i] >> 4], out[2 * i + 1] = hex[d[i] & 15];
    out[32] = 0;
}

/* -------------------------------------------------------- completion chain */

static void start_head(item *it);
static void confirmed(item *it);

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

void sk_xfer_finished(item *it)
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
    sk_xfer_finished(it);
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
    sk_xfer_finished(it);
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
    if (r->rc) sk_xfer_item_fail(it, &r->err, r->rc);
    else if (it->crc_known && it->verify_crc != it->crc) {
        sk_error e;
        sk_error_set(&e, SK_E_MISMATCH, "s3://%s/%s: read back CRC32C %08x, expected %08x",
                     it->bucket, it->key, it->verify_crc, it->crc);
        sk_xfer_item_fail(it, &e, SK_E_MISMATCH);
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
    if (e.code) sk_xfer_item_fail(it, &e, e.code);
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
        sk_xfer_item_fail(it, &r->err, r->rc);
        if (is_fatal(r)) it->x->fatal = 1;
        pthread_mutex_unlock(&it->x->mu);
        chain_end(it);
        return;
    }
    start_head(it);
}

/* Called once per multipart transfer when no part is outstanding and no more
 * will be submitted. */
void sk_xfer_chain_finish(item *it)
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
        sk_xfer_item_fail(it, &e, SK_E_NOMEM);
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
int sk_xfer_settle(item *it)
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

void sk_xfer_part_done(sk_s3_req *r)
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
        sk_xfer_item_fail(it, &r->err, r->rc);
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
    sk_xfer_release_slot(s);
    int fin = single ? 0 : sk_xfer_settle(it);
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
        sk_xfer_chain_finish(it);
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
    s->r.done = sk_xfer_part_done;
    sk_s3_submit(&s->r);
}

/* Queues slot s (buffer filled, s->len bytes) as in queue_put.  Returns the
 * slot's CRC32C, so that callers build the whole object's CRC with
 * sk_crc32c_combine instead of running over the bytes a second time. */
uint32_t sk_xfer_send_slot(item *it, slot *s, int idx)
{
    uint32_t c = sk_crc32c(0, s->buf, s->len);
    if (idx < 0 && s->len <= MD5_CONFIRM_MAX) sk_xfer_md5_hex(s->buf, s->len, it->md5);
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
        SK_GUARD(sk_xfer_read_full(it->fd, x->scratch, k, off, it->src, err));
        c = sk_crc32c(c, x->scratch, k);
        off += k, len -= k;
    }
    *crc = c;
    return 0;
}

/* Queues part idx (idx < 0: the whole object) of a local file: its CRC32C
 * from one pass, then a slot whose request reads the range itself.  The
 * CRC comes first so that the producer works while every slot is busy. */
int sk_xfer_send_file_range(item *it, int idx, uint64_t off, size_t len, uint32_t *crc, sk_error *err)
{
    sk_s3_xfer *x = it->x;
    uint32_t c = 0;
    SK_GUARD(crc_range(it, off, len, &c, err));
    /* a small object is whole in the scratch buffer after one read */
    if (idx < 0 && len <= MD5_CONFIRM_MAX) sk_xfer_md5_hex(x->scratch, len, it->md5);
    slot *s = sk_xfer_get_slot(x, 0);
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
void sk_xfer_xget_done(sk_s3_req *r)
{
    slot *s = (slot *)((char *)r - offsetof(slot, get));
    item *it = s->it;
    if (r->rc) {
        pthread_mutex_lock(&s->x->mu);
        sk_xfer_item_fail(it, &r->err, r->rc);
        if (is_fatal(r)) s->x->fatal = 1;
        it->outstanding--;
        sk_xfer_release_slot(s);
        int fin = s->part >= 0 ? sk_xfer_settle(it) : 0;
        pthread_mutex_unlock(&s->x->mu);
        sk_buf_free(&r->resp);
        if (s->part < 0) chain_end(it);
        else if (fin) sk_xfer_chain_finish(it);
        return;
    }
    s->len = r->dst_len;
    sk_buf_free(&r->resp);
    (void)sk_xfer_send_slot(it, s, s->part);
}

