/*
 * shard_images.c - the image stage (--image-size and friends) of `shard`
 * and of `pack`: a transform on samples.  Each image member of a sample is
 * resized, re-encoded or judged bad and the sample's tar bytes rebuilt
 * around the new data, on a pool of worker threads whose results come back
 * in sample order to the caller's put function.  It knows samples and
 * image options only, nothing of the run that feeds it or takes its output.
 */
#include "io/shard_run.h"
#include "format/image.h"
#include "format/tar.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ------------------------------------------------------------ sample input */

/* Rebuilds s's tar image with member i's data replaced by (data, len)
 * (i == s->nm: a new member with extension ext is appended). */
static int replace_member(struct run_sample *s, size_t i, const char *ext, const void *data, size_t len,
                          uint64_t mtime, sk_error *err)
{
    unsigned char *img = NULL;
    size_t cap = 0, n = 0, nm = s->nm + (i == s->nm);
    if (i == s->nm) {
        size_t el = strlen(ext);
        SK_GUARD(sk_grow((void **)&s->m, &s->mcap, nm, sizeof *s->m, err));
        SK_GUARD(sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * el + 1, 1, err));
        memcpy(s->exts + s->elen, ext, el);
        memcpy(s->exts + s->elen + el, ext, el);
        s->m[i] = (struct run_member){.ext_off = (uint32_t)s->elen, .ext_len = (uint32_t)el};
        s->elen += 2 * el;
    }
    for (size_t k = 0; k < nm; k++) {
        struct run_member *m = &s->m[k];
        const unsigned char *d = k == i ? data : s->img + m->data_off;
        uint64_t size = k == i ? len : m->size;
        char name[SK_TAR_NAME_MAX + 64];
        if (s->klen + 1 + m->ext_len >= sizeof name) {
            free(img);
            return sk_error_set(err, SK_E_INPUT, "'%.*s': name too long", (int)s->klen, s->key);
        }
        memcpy(name, s->key, s->klen);
        name[s->klen] = '.';
        memcpy(name + s->klen + 1, s->exts + m->ext_off + m->ext_len, m->ext_len);
        size_t nl = s->klen + 1 + m->ext_len, hl = sk_tar_header_size(name, nl, size);
        int rc = sk_grow((void **)&img, &cap, n + hl + sk_tar_pad(size), 1, err);
        if (rc) {
            free(img);
            return rc;
        }
        sk_tar_header(img + n, name, nl, size, mtime);
        memcpy(img + n + hl, d, size);
        memset(img + n + hl + size, 0, sk_tar_pad(size) - size);
        m->data_off = n + hl;
        m->hlen = (uint32_t)hl;
        m->size = size;
        if (k == i) m->crc = sk_crc32c(0, d, size);
        n += hl + sk_tar_pad(size);
    }
    free(s->img);
    s->img = img;
    s->len = n;
    s->cap = cap;
    s->nm = nm;
    s->crc = sk_crc32c(0, img, n);
    return SK_OK;
}

/* --image-size and friends on one sample: each image member resized (or
 * found bad), the sample's .json given the sizes with --image-meta.
 * out->skip is set when the sample is to be dropped (too small, too
 * elongated, or a bad image under --bad-image skip).  Touches nothing but
 * s and out: worker threads run it. */
static int sample_images(const sk_image_options *io, uint64_t mtime, sk_image_budget *b,
                         struct run_sample *s, struct img_outcome *out, sk_error *err)
{
    sk_image_result first = {0};
    int have_first = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < s->nm && !out->skip; i++) {
        struct run_member *m = &s->m[i];
        if (!sk_image_is_image(io, s->exts + m->ext_off, m->ext_len)) continue;
        sk_image_result res;
        SK_GUARD(sk_image_transform_in(io, b, s->img + m->data_off, (size_t)m->size, &res, err));
        if (res.verdict == SK_IMAGE_BAD) {
            out->bad_images++;
            if (io->bad_image == SK_BAD_IMAGE_FAIL)
                return sk_error_set(err, SK_E_INPUT, "sample '%.*s', member .%.*s: %s", (int)s->klen,
                                    s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
            if (io->bad_image == SK_BAD_IMAGE_SKIP) {
                snprintf(out->warn, sizeof out->warn, "skipped sample '%.*s': .%.*s: %s",
                         (int)s->klen, s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
                out->skip = 1;
            }
            continue;
        }
        if (res.verdict != SK_IMAGE_DONE) {
            out->image_skips++;
            snprintf(out->warn, sizeof out->warn, "skipped sample '%.*s': .%.*s: %s", (int)s->klen,
                     s->key, (int)m->ext_len, s->exts + m->ext_off, res.why);
            out->skip = 1;
            continue;
        }
        if (!have_first) first = res, first.out = NULL, have_first = 1;
        if (res.out) {
            out->images++;
            int rc = replace_member(s, i, NULL, res.out, res.out_len, mtime, err);
            free(res.out);
            SK_GUARD(rc);
        }
    }
    if (out->skip || !io->image_meta || !have_first) return SK_OK;
    size_t j = 0;
    while (j < s->nm && sk_ext_cmp(s->exts + s->m[j].ext_off, s->m[j].ext_len, "json", 4)) j++;
    char *json;
    size_t jl;
    int rc = sk_image_meta_json(j < s->nm ? (const char *)s->img + s->m[j].data_off : NULL,
                                j < s->nm ? (size_t)s->m[j].size : 0, &first, &json, &jl, err);
    if (rc) {
        char why[SK_ERROR_MAX];
        snprintf(why, sizeof why, "%s", err->msg);
        return sk_error_set(err, rc, "sample '%.*s': %s", (int)s->klen, s->key, why);
    }
    rc = replace_member(s, j, "json", json, jl, mtime, err);
    free(json);
    return rc;
}

/* ------------------------------------------------------ the image workers */
/* Decoding and encoding JPEGs is most of the work when images are resized,
 * so samples go to a pool of worker threads (one per core) through a ring
 * of jobs and come back out in the order they went in.  Memory is bounded
 * whatever --jobs is: the decodes share one budget (--image-memory, see
 * image_budget.c), and the whole samples queued in the ring are bounded by
 * bytes as well as by count (a quarter of the budget, at least one). */

enum { JOB_FREE, JOB_QUEUED, JOB_DONE };

struct img_job {
    struct run_sample s;
    size_t bytes; /* s's bytes when queued, counted in the pool's queued */
    int state, rc;
    sk_error err;
    struct img_outcome out;
};

struct img_pool {
    const sk_image_options *io;
    uint64_t mtime;
    sk_img_put put; /* where the finished samples go, in order */
    void *put_ctx;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct img_job *jobs;
    size_t cap;
    uint64_t head, tail, next; /* next to emit, next to fill, next to work on */
    sk_image_budget *budget;
    uint64_t queued, max_queued; /* bytes of the samples in the ring */
    int stop;
    pthread_t *th;
    int nth;
};

static void *img_worker(void *arg)
{
    struct img_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next == p->tail) pthread_cond_wait(&p->work, &p->mu);
        if (p->stop) break;
        struct img_job *j = &p->jobs[p->next++ % p->cap];
        pthread_mutex_unlock(&p->mu);
        j->err = (sk_error)SK_ERROR_INIT;
        j->rc = sample_images(p->io, p->mtime, p->budget, &j->s, &j->out, &j->err);
        pthread_mutex_lock(&p->mu);
        j->state = JOB_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void samp_free(struct run_sample *s)
{
    free(s->key), free(s->m), free(s->exts), free(s->img);
}

void sk_img_pool_free(struct img_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nth; i++) pthread_join(p->th[i], NULL);
    for (size_t i = 0; p->jobs && i < p->cap; i++) samp_free(&p->jobs[i].s);
    free(p->jobs);
    free(p->th);
    sk_image_budget_free(p->budget);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    free(p);
}

int sk_img_pool_new(struct img_pool **out, const sk_image_options *io, int jobs, uint64_t mtime,
                    sk_img_put put, void *put_ctx, sk_error *err)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = jobs > 0 ? jobs : cores > 0 ? (int)cores : 1;
    if (n > 64) n = 64;
    struct img_pool *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    p->io = io;
    p->mtime = mtime;
    p->put = put;
    p->put_ctx = put_ctx;
    p->cap = (size_t)n * 4;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    /* memory is read only from a struct that has it (an older program's is
     * shorter: the default budget) */
    size_t has = io->struct_size ? io->struct_size : sizeof *io;
    uint64_t memory = has >= offsetof(sk_image_options, memory) + sizeof io->memory ? io->memory : 0;
    if (sk_image_budget_new(&p->budget, memory, err)) {
        sk_img_pool_free(p);
        return err->code;
    }
    p->max_queued = sk_image_budget_total(p->budget) / 4;
    p->jobs = calloc(p->cap, sizeof *p->jobs);
    p->th = calloc((size_t)n, sizeof *p->th);
    if (!p->jobs || !p->th) {
        sk_img_pool_free(p);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (; p->nth < n; p->nth++)
        if (pthread_create(&p->th[p->nth], NULL, img_worker, p) != 0) {
            sk_img_pool_free(p);
            return sk_error_set(err, SK_E_NOMEM, "cannot start an image worker: %s", strerror(errno));
        }
    *out = p;
    return SK_OK;
}

/* Hands the finished jobs at the head on, in order; block: wait for the
 * head job (all of them when drain). */
int sk_img_pool_emit(struct img_pool *p, int block, int drain, sk_error *err)
{
    int rc = SK_OK;
    pthread_mutex_lock(&p->mu);
    while (p->head < p->tail && !rc) {
        struct img_job *j = &p->jobs[p->head % p->cap];
        if (j->state != JOB_DONE) {
            if (!block) break;
            pthread_cond_wait(&p->done, &p->mu);
            continue;
        }
        pthread_mutex_unlock(&p->mu);
        if (j->rc) *err = j->err, rc = j->rc;
        else rc = p->put(p->put_ctx, &j->s, &j->out, err);
        j->s.klen = j->s.nm = j->s.elen = j->s.len = 0, j->s.crc = 0;
        if (j->s.cap > ((size_t)1 << 20)) { /* a free slot keeps no large buffer */
            free(j->s.img);
            j->s.img = NULL, j->s.cap = 0;
        }
        pthread_mutex_lock(&p->mu);
        j->state = JOB_FREE;
        p->queued -= j->bytes;
        p->head++;
        if (!drain) block = 0; /* one freed slot is all a submit needs */
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

/* Hands s to the workers (its buffers are swapped with a free job's). */
int sk_img_pool_submit(struct img_pool *p, struct run_sample *s, sk_error *err)
{
    if (p->tail - p->head == p->cap) SK_GUARD(sk_img_pool_emit(p, 1, 0, err));
    /* room by bytes too: wait for the oldest until s fits (or the ring is
     * empty, so one sample of any size still goes) */
    while (p->tail > p->head && p->queued + s->len > p->max_queued)
        SK_GUARD(sk_img_pool_emit(p, 1, 0, err));
    pthread_mutex_lock(&p->mu);
    struct img_job *j = &p->jobs[p->tail % p->cap];
    struct run_sample t = j->s;
    j->s = *s;
    *s = t;
    j->bytes = j->s.len;
    p->queued += j->bytes;
    j->state = JOB_QUEUED;
    p->tail++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
    return sk_img_pool_emit(p, 0, 0, err);
}
