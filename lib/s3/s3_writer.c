/*
 * s3_writer.c - the streaming writer (sk_s3_writer_*): bytes written in
 * any pieces become one object, a single PUT when they fit in one part,
 * else a multipart upload whose parts go through a transfer of its own
 * (s3_xfer.c) while the caller writes the next.
 */
#include "s3/s3_xfer_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
    w->it = sk_xfer_item_new(w->x, K_STREAM, url, bucket, key, err);
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
    SK_GUARD(sk_xfer_grow_parts(it, it->nparts + 1, err));
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
    w->crc = sk_crc32c_combine(w->crc, sk_xfer_send_slot(it, s, i), len);
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
            w->cur = sk_xfer_get_slot(w->x, w->it->part_size);
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
            w->cur = sk_xfer_get_slot(x, 1);
            if (w->cur) w->cur->len = 0;
        }
        if (!w->cur) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc) {
            pthread_mutex_lock(&x->mu);
            it->outstanding++;
            pthread_mutex_unlock(&x->mu);
            slot *s = w->cur;
            w->cur = NULL;
            w->crc = sk_xfer_send_slot(it, s, -1); /* also sets it->crc */
            rc = writer_wait(w, err);
        }
    } else if (!rc) {
        if (w->cur && w->cur->len) rc = writer_flush(w, err);
        /* every part is queued, so w->crc is whole; the HEAD and --verify
         * compare against it */
        it->crc = w->crc, it->crc_known = 1;
        pthread_mutex_lock(&x->mu);
        if (rc) sk_xfer_item_fail(it, err, rc);
        it->all_submitted = 1;
        int fin = sk_xfer_settle(it);
        pthread_mutex_unlock(&x->mu);
        if (fin) sk_xfer_chain_finish(it);
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
        sk_xfer_release_slot(w->cur);
        pthread_mutex_unlock(&x->mu);
    }
    sk_xfer_item_free(it);
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
        sk_xfer_item_fail(it, &e, SK_E_IO);
        it->all_submitted = 1;
        int fin = it->multipart ? sk_xfer_settle(it) : (!it->outstanding);
        pthread_mutex_unlock(&x->mu);
        if (fin && it->multipart) sk_xfer_chain_finish(it);
        else if (fin) sk_xfer_finished(it);
        writer_wait(w, NULL);
    } else {
        pthread_mutex_unlock(&x->mu);
    }
    sk_xfer_item_free(it);
    sk_s3_xfer_free(x);
    free(w);
}
