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
#include "s3/s3_xfer_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ----------------------------------------------------------------- setup */

int sk_xfer_grow_parts(item *it, int n, sk_error *err)
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
    int rc = sk_xfer_grow_parts(it, it->nparts, err);
    unsigned char *k = calloc((size_t)it->nparts + 1, 1);
    unsigned char *buf = rc || !k ? NULL : malloc(it->part_size);
    if (!rc && (!k || !buf)) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (int i = 0; i < nold && !rc; i++) {
        int idx = old[i].number - 1;
        if (idx < 0 || idx >= it->nparts) continue;
        uint64_t off = (uint64_t)idx * it->part_size;
        uint64_t len = it->size - off < it->part_size ? it->size - off : it->part_size;
        if (old[i].size != len) continue;
        if ((rc = sk_xfer_read_full(it->fd, buf, len, off, it->src, err))) break;
        uint32_t c = sk_crc32c(0, buf, len);
        char b64[9], md5[33];
        int same;
        sk_s3_crc32c_b64(c, b64);
        if (old[i].crc32c[0]) {
            same = !strcmp(old[i].crc32c, b64);
        } else {
            sk_xfer_md5_hex(buf, len, md5);
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
        return sk_xfer_send_file_range(it, -1, 0, (size_t)it->size, &c, err);
    }
    if (it->size <= x->o.multipart_threshold) {
        slot *s = sk_xfer_get_slot(x, it->size ? it->size : 1);
        SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
        int rc = sk_xfer_read_full(it->fd, s->buf, it->size, 0, it->src, err);
        if (rc) {
            pthread_mutex_lock(&x->mu);
            sk_xfer_release_slot(s);
            pthread_mutex_unlock(&x->mu);
            return rc;
        }
        s->len = it->size;
        pthread_mutex_lock(&x->mu);
        it->outstanding++;
        pthread_mutex_unlock(&x->mu);
        (void)sk_xfer_send_slot(it, s, -1);
        return 0;
    }
    it->multipart = 1;
    it->part_size = sk_xfer_part_size(x, it->size);
    unsigned char *keep = NULL;
    if (x->o.resume) SK_GUARD(resume_lookup(it, &keep, err));
    if (!it->upload_id[0])
        SK_GUARD(sk_s3_mpu_create(x->s3, it->bucket, it->key, it->upload_id, sizeof it->upload_id, err));
    it->nparts = (int)((it->size + it->part_size - 1) / it->part_size);
    int rc = sk_xfer_grow_parts(it, it->nparts, err);
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
            rc = sk_xfer_send_file_range(it, i, off, len, &c, err);
            if (!rc) whole = sk_crc32c_combine(whole, c, len);
            continue;
        }
        slot *s = sk_xfer_get_slot(x, len);
        if (!s) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        rc = sk_xfer_read_full(it->fd, s->buf, len, off, it->src, err);
        if (rc) {
            pthread_mutex_lock(&x->mu);
            sk_xfer_release_slot(s);
            pthread_mutex_unlock(&x->mu);
            break;
        }
        s->len = len;
        pthread_mutex_lock(&x->mu);
        it->parts[i].number = i + 1;
        it->parts[i].size = len;
        it->outstanding++;
        pthread_mutex_unlock(&x->mu);
        whole = sk_crc32c_combine(whole, sk_xfer_send_slot(it, s, i), len);
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
        it->part_size = sk_xfer_part_size(x, it->size);
        it->nparts = (int)((it->size + it->part_size - 1) / it->part_size);
        rc = sk_xfer_grow_parts(it, it->nparts, err);
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
        slot *s = sk_xfer_get_slot(x, it->kind == K_XCOPY ? (len ? len : 1) : 0); /* server side: no bytes here */
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
            s->get.done = sk_xfer_xget_done;
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
        s->r.done = sk_xfer_part_done;
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
    if (rc) sk_xfer_item_fail(it, &e, rc);
    it->all_submitted = 1;
    int fin = 0;
    if (it->multipart) fin = sk_xfer_settle(it);
    else if (rc && !it->outstanding) fin = 1; /* a single PUT that never went */
    pthread_mutex_unlock(&x->mu);
    if (fin) sk_xfer_chain_finish(it);
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

void sk_xfer_item_free(item *it)
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
    for (item *it = x->head, *n; it; it = n) n = it->next, sk_xfer_item_free(it);
    for (item *it = x->done_head, *n; it; it = n) n = it->next, sk_xfer_item_free(it);
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

item *sk_xfer_item_new(sk_s3_xfer *x, enum kind k, const char *src, const char *bucket,
                      const char *key, sk_error *err)
{
    item *it = calloc(1, sizeof *it);
    if (!it) return sk_error_set(err, SK_E_NOMEM, "out of memory"), NULL;
    it->x = x, it->kind = k, it->fd = -1;
    it->src = strdup(src), it->bucket = strdup(bucket), it->key = strdup(key);
    if (!it->src || !it->bucket || !it->key) {
        sk_xfer_item_free(it);
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
    item *it = sk_xfer_item_new(x, K_FILE, path, bucket, key, err);
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
    item *it = sk_xfer_item_new(x, src == x->s3 ? K_COPY : K_XCOPY, url, bucket, key, err);
    if (!it) return SK_E_NOMEM;
    it->src_s3 = src;
    it->sbucket = strdup(src_bucket), it->skey = strdup(src_key);
    if (!it->sbucket || !it->skey) {
        sk_xfer_item_free(it);
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
    sk_xfer_item_free(it);
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

