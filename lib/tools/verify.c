/*
 * verify.c - `shardkit verify`: proves shards sound, or reports each
 * problem with the shard, tar offset and key.
 *
 * Per shard: one walk of the tar headers with the shared reader
 * (tar_read.c), which checks every header checksum and size field and so
 * never steps over a corrupt header (a WebDataset reader stops silently
 * there); then the end-of-archive blocks and anything after them.  A plain
 * tar is walked through pread (headers only, at header speed) unless --deep
 * asks for every member's CRC32C and the shard's, when it is read once
 * sequentially; compressed shards are always streamed.  The walk's records
 * are compared with the index sidecar, the manifest's entry, and across
 * shards for duplicate and split keys.  --jpeg decodes JPEG members with
 * libjpeg-turbo on --jobs threads (pread from plain tars).
 *
 * An s3:// shard (or a manifest whose shards are objects) goes through the
 * same checks: a HEAD gives its size, a ranged GET its first block, and it
 * is streamed whole through one GET, so its CRC32C is always compared with
 * the index's and the manifest's: that is what finds a remote object that
 * differs from the dataset it belongs to.
 */
#include "core/internal.h"
#include "io/io.h"
#include "io/store.h"
#include "format/shard_stream.h"
#include "format/tar.h"
#include "format/image.h"
#include "tools/keysort.h"

#include <fcntl.h>
#include <pthread.h>
#include <zstd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_INDEX_REPORTS 10

/* -------------------------------------------------------------- the walk */

struct vmember {
    uint64_t data_offset, size;
    uint32_t header_len, crc;
    uint32_t ext_off, ext_len; /* in the shard's string pool */
};

struct vsample {
    uint64_t offset, span;
    uint32_t key_off, key_len, first, count;
};

struct jpegjob {
    uint64_t data_offset, size, sample_offset;
    uint32_t sample;
    int bad; /* 1: does not decode; 2: decodes, but not to the --image-size rule */
    char why[200];
};

typedef struct vstate {
    const sk_verify_options *o;
    sk_verify_stats st;
    /* every shard's name, for the key records */
    char **shards;
    size_t nshards, cap_shards;
    sk_keysort *keys; /* every sample's key, for duplicates across the run */
    char *ebuf;       /* one sample's extensions, ",a,b," */
    size_t cap_ebuf;
    /* the current shard */
    struct vsample *s;
    size_t ns, cap_s;
    struct vmember *m;
    size_t nm, cap_m;
    char *pool;
    size_t npool, cap_pool;
    struct jpegjob *jobs;
    size_t njobs, cap_jobs;
    /* progress: the figures beyond st, and when it was last reported */
    sk_verify_progress pr;
    struct timespec t0, last;
    sk_store_env env; /* remote shards' and indexes' stores */
} vstate;

/* Reports progress (at most twice a second unless final), pos bytes into
 * the current shard; the JPEG threads call it under their lock. */
static void vprogress(vstate *v, uint64_t pos, int final)
{
    if (!v->o->progress) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double dt = (double)(now.tv_sec - v->last.tv_sec) + (double)(now.tv_nsec - v->last.tv_nsec) / 1e9;
    if (!final && dt < 0.5) return;
    v->last = now;
    sk_verify_progress p = v->pr;
    p.samples = v->st.samples + v->ns;
    p.bytes_done += pos;
    p.seconds = (double)(now.tv_sec - v->t0.tv_sec) + (double)(now.tv_nsec - v->t0.tv_nsec) / 1e9;
    v->o->progress(v->o->ctx, &p);
}

static void problem(vstate *v, int warning, const char *kind, const char *shard, uint64_t off,
                    const char *key, size_t klen, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static void problem(vstate *v, int warning, const char *kind, const char *shard, uint64_t off,
                    const char *key, size_t klen, const char *fmt, ...)
{
    char msg[SK_ERROR_MAX], k[SK_TAR_NAME_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (key) {
        if (klen > SK_TAR_NAME_MAX) klen = SK_TAR_NAME_MAX;
        memcpy(k, key, klen);
        k[klen] = 0;
    }
    if (warning) v->st.warnings++;
    else v->st.errors++;
    sk_verify_problem p = {warning, kind, shard, off, key ? k : NULL, msg};
    if (v->o->report) v->o->report(v->o->ctx, &p);
}

static int pool_add(vstate *v, const char *s, size_t n, uint32_t *off, sk_error *err)
{
    SK_GUARD(sk_grow((void **)&v->pool, &v->cap_pool, v->npool + n + 1, 1, err));
    *off = (uint32_t)v->npool;
    memcpy(v->pool + v->npool, s, n);
    v->pool[v->npool + n] = 0;
    v->npool += n + 1;
    return SK_OK;
}

static int is_jpeg_ext(const char *e, size_t n)
{
    const char *dot = memrchr(e, '.', n);
    if (dot) {
        n -= (size_t)(dot + 1 - e);
        e = dot + 1;
    }
    return !sk_ext_cmp(e, n, "jpg", 3) || !sk_ext_cmp(e, n, "jpeg", 4);
}

/* The checks that need a whole sample: required extensions; then its
 * key goes to the run-wide list for duplicate and split checks. */
static int close_sample(vstate *v, uint32_t shard, sk_error *err)
{
    if (!v->ns) return SK_OK;
    struct vsample *s = &v->s[v->ns - 1];
    const char *key = v->pool + s->key_off;
    const char *name = v->shards[shard];
    for (size_t i = 0; i < v->o->nrequire; i++) {
        const char *want = v->o->require[i];
        int found = 0;
        for (uint32_t j = 0; j < s->count && !found; j++) {
            const struct vmember *m = &v->m[s->first + j];
            found = !sk_ext_cmp(v->pool + m->ext_off, m->ext_len, want, strlen(want));
        }
        if (!found)
            problem(v, 0, "missing", name, s->offset, key, s->key_len,
                    "sample has no '%s' member", want);
    }
    size_t elen = 2;
    for (uint32_t j = 0; j < s->count; j++) elen += v->m[s->first + j].ext_len + 1;
    SK_GUARD(sk_grow((void **)&v->ebuf, &v->cap_ebuf, elen, 1, err));
    char *p = v->ebuf;
    *p++ = ',';
    for (uint32_t j = 0; j < s->count; j++) {
        const struct vmember *m = &v->m[s->first + j];
        memcpy(p, v->pool + m->ext_off, m->ext_len);
        p += m->ext_len;
        *p++ = ',';
    }
    *p = 0;
    sk_keyrec k = {key, s->key_len, shard, s->offset, v->ebuf};
    return sk_keysort_add(v->keys, &k, err);
}

static int add_entry(vstate *v, uint32_t shard, const sk_tar_entry *e, sk_error *err)
{
    const char *name = v->shards[shard];
    size_t kl, eo;
    if (e->unsafe) {
        problem(v, 0, "name", name, e->header_offset, NULL, 0,
                "member '%s' has '..' in its name: no tool will extract it", e->name);
        return SK_OK;
    }
    if (e->stripped)
        problem(v, 1, "name", name, e->header_offset, NULL, 0,
                "member name had a leading '/' or '../' (read as '%s')", e->name);
    if (sk_tar_is_meta(e->name, e->name_len)) return SK_OK;
    if (sk_sample_split(e->name, e->name_len, &kl, &eo) != SK_OK) {
        /* a README or LICENSE in a foreign tar: WebDataset skips such a
         * member, and so do index, cat and shard, so it is a warning about
         * its name, not an error about the samples */
        problem(v, 1, "name", name, e->header_offset, NULL, 0,
                "member '%s' has no key.ext name (no dot in its basename): readers skip it", e->name);
        return SK_OK;
    }
    struct vsample *cur = v->ns ? &v->s[v->ns - 1] : NULL;
    if (!cur || cur->key_len != kl || memcmp(v->pool + cur->key_off, e->name, kl)) {
        SK_GUARD(close_sample(v, shard, err));
        SK_GUARD(sk_grow((void **)&v->s, &v->cap_s, v->ns + 1, sizeof *v->s, err));
        cur = &v->s[v->ns++];
        memset(cur, 0, sizeof *cur);
        SK_GUARD(pool_add(v, e->name, kl, &cur->key_off, err));
        cur->key_len = (uint32_t)kl;
        cur->offset = e->header_offset;
        cur->first = (uint32_t)v->nm;
    }
    const char *ext = e->name + eo;
    size_t el = e->name_len - eo;
    for (uint32_t j = 0; j < cur->count; j++) {
        const struct vmember *m = &v->m[cur->first + j];
        if (!sk_ext_cmp(v->pool + m->ext_off, m->ext_len, ext, el))
            problem(v, 0, "duplicate", name, e->header_offset, e->name, kl,
                    "extension '%s' occurs twice in one sample", ext);
    }
    SK_GUARD(sk_grow((void **)&v->m, &v->cap_m, v->nm + 1, sizeof *v->m, err));
    struct vmember *m = &v->m[v->nm++];
    char low[SK_EXT_LOWER_MAX(SK_TAR_NAME_MAX)];
    if (el > SK_TAR_NAME_MAX) el = SK_TAR_NAME_MAX;
    el = sk_ext_lower(ext, el, low);
    SK_GUARD(pool_add(v, low, el, &m->ext_off, err));
    m->ext_len = (uint32_t)el;
    m->data_offset = e->data_offset;
    m->size = e->size;
    m->header_len = e->header_len;
    m->crc = e->crc32c;
    cur->count++;
    cur->span = e->data_offset + sk_tar_pad(e->size) - cur->offset;
    v->st.members++;
    if (!e->size)
        problem(v, 1, "empty", name, e->header_offset, e->name, kl, "member '%s' is empty",
                e->name);
    if ((v->o->flags & SK_VERIFY_JPEG) && e->size &&
        (v->o->images ? sk_image_is_image(v->o->images, ext, el) : is_jpeg_ext(ext, el))) {
        SK_GUARD(sk_grow((void **)&v->jobs, &v->cap_jobs, v->njobs + 1, sizeof *v->jobs, err));
        struct jpegjob *j = &v->jobs[v->njobs++];
        memset(j, 0, sizeof *j);
        j->data_offset = e->data_offset;
        j->size = e->size;
        j->sample = (uint32_t)(v->ns - 1);
        j->sample_offset = e->header_offset;
    }
    return SK_OK;
}

/* ------------------------------------------------------------- the index */

/* The sidecar "NAME.idx" into *ix, or *ix = NULL when there is none
 * (shards made by others need not have one) or it is refused (a problem
 * reported).  Errors are for what stops the check: I/O, network, memory. */
static int load_index(vstate *v, const char *name, char *ip, size_t cap, sk_index **ix,
                      sk_error *err)
{
    struct stat sb;
    sk_error e = SK_ERROR_INIT;
    int rc;
    *ix = NULL;
    snprintf(ip, cap, "%s.idx", name);
    if (!sk_store_is_remote(ip)) {
        if (stat(ip, &sb) != 0) return SK_OK;
        rc = sk_index_open(ix, ip, 0, &e);
    } else {
        sk_buf blob = {0};
        rc = sk_store_load(ip, &v->env, SK_S3_INDEX_MAX, "shard index", &blob, &e);
        if (!rc) rc = sk_index_adopt(ix, blob.p, blob.len, ip, &e); /* keeps the bytes */
        else sk_buf_free(&blob);
        if (rc == SK_E_NOTFOUND) return SK_OK;
        if (rc && rc != SK_E_CORRUPT && rc != SK_E_MISMATCH && rc != SK_E_INPUT)
            return *err = e, rc;
    }
    if (rc) problem(v, 0, "index", name, 0, NULL, 0, "%s", e.msg);
    return SK_OK;
}

static int check_index(vstate *v, const char *name, const sk_index_shard_info *actual,
                       int have_crc, int walked_all, sk_error *err)
{
    char ip[4200];
    sk_index *ix;
    SK_GUARD(load_index(v, name, ip, sizeof ip, &ix, err));
    if (!ix) return SK_OK;
    sk_error e = SK_ERROR_INIT;
    const sk_index_shard_info *in = sk_index_shard(ix);
    int reports = 0;
#define IXBAD(off, key, klen, ...)                                                   \
    do {                                                                             \
        if (reports++ < MAX_INDEX_REPORTS) problem(v, 0, "index", name, off, key, klen, __VA_ARGS__); \
    } while (0)
    if (in->size != actual->size || in->first_block_crc32c != actual->first_block_crc32c) {
        IXBAD(0, NULL, 0, "index %s belongs to another shard or version: it records %llu bytes "
              "and first-block CRC32C %08x, the shard has %llu bytes and %08x", ip,
              (unsigned long long)in->size, in->first_block_crc32c,
              (unsigned long long)actual->size, actual->first_block_crc32c);
        sk_index_close(ix);
        return SK_OK;
    }
    int crcs = have_crc && !(in->flags & SK_INDEX_NO_CRC);
    if ((v->o->flags & SK_VERIFY_DEEP) && sk_index_check_order(ix, &e)) IXBAD(0, NULL, 0, "%s", e.msg);
    if (crcs && in->crc32c != actual->crc32c)
        IXBAD(0, NULL, 0, "shard CRC32C is %08x, its index records %08x", actual->crc32c, in->crc32c);
    if ((in->flags & SK_INDEX_ZSTD) != (actual->flags & SK_INDEX_ZSTD))
        IXBAD(0, NULL, 0, "index flags %u do not match the shard's compression", in->flags);
    uint64_t S = sk_index_sample_count(ix), M = sk_index_member_count(ix);
    if (walked_all && (S != v->ns || M != v->nm))
        IXBAD(0, NULL, 0, "index has %llu samples and %llu members, the shard %zu and %zu",
              (unsigned long long)S, (unsigned long long)M, v->ns, v->nm);
    for (uint64_t i = 0; i < S && i < v->ns; i++) {
        sk_sample_ref r;
        const struct vsample *s = &v->s[i];
        const char *key = v->pool + s->key_off;
        if (sk_index_sample(ix, i, &r, &e)) {
            IXBAD(s->offset, key, s->key_len, "%s", e.msg);
            continue;
        }
        if (r.key_len != s->key_len || memcmp(r.key, key, s->key_len) || r.offset != s->offset ||
            r.span != s->span || r.member_count != s->count || r.first_member != s->first) {
            IXBAD(s->offset, key, s->key_len, "index sample %llu ('%.*s' at %llu, span %llu, %u "
                  "members) disagrees with the shard (at %llu, span %llu, %u members)",
                  (unsigned long long)i, (int)r.key_len, r.key, (unsigned long long)r.offset,
                  (unsigned long long)r.span, r.member_count, (unsigned long long)s->offset,
                  (unsigned long long)s->span, s->count);
            continue;
        }
        for (uint32_t j = 0; j < s->count && s->first + j < M; j++) {
            sk_member_ref mr;
            const struct vmember *m = &v->m[s->first + j];
            if (sk_index_member(ix, s->first + j, &mr, &e)) {
                IXBAD(s->offset, key, s->key_len, "%s", e.msg);
                continue;
            }
            if (mr.data_offset != m->data_offset || mr.size != m->size ||
                mr.header_len != m->header_len || mr.ext_len != m->ext_len ||
                memcmp(mr.ext, v->pool + m->ext_off, m->ext_len))
                IXBAD(m->data_offset, key, s->key_len, "index member .%.*s (data at %llu, %llu "
                      "bytes) disagrees with the shard (.%s at %llu, %llu bytes)",
                      (int)mr.ext_len, mr.ext, (unsigned long long)mr.data_offset,
                      (unsigned long long)mr.size, v->pool + m->ext_off,
                      (unsigned long long)m->data_offset, (unsigned long long)m->size);
            else if (crcs && mr.crc32c != m->crc)
                problem(v, 0, "crc", name, m->data_offset, key, s->key_len,
                        "member .%s: data CRC32C %08x, the index records %08x (corrupt data)",
                        v->pool + m->ext_off, m->crc, mr.crc32c);
        }
    }
    if (reports > MAX_INDEX_REPORTS)
        problem(v, 0, "index", name, 0, NULL, 0, "%d more index disagreements not shown",
                reports - MAX_INDEX_REPORTS);
#undef IXBAD
    sk_index_close(ix);
    return SK_OK;
}

/* ------------------------------------------------------------ the source */

/* Where a shard's bytes come from: a local file (random access through
 * fd), or a remote one (s3://, http(s)://) read in order through its
 * store's sequential reader (io/store.h: streaming GETs). */
struct vsrc {
    const char *name;
    int fd;
    sk_store *store;
    sk_store_seq *seq; /* feeding the current sk_stream */
    uint64_t size;
};

/* Opens name; SK_E_NOTFOUND (with a message) when it does not exist. */
static int src_open(struct vsrc *f, sk_store_env *env, const char *name, sk_error *err)
{
    *f = (struct vsrc){.name = name, .fd = -1};
    if (!sk_store_is_remote(name)) {
        struct stat sb;
        f->fd = open(name, O_RDONLY | O_CLOEXEC);
        SK_FAIL_IF(f->fd < 0 || fstat(f->fd, &sb) != 0, err,
                   errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s", name,
                   strerror(errno));
        f->size = (uint64_t)sb.st_size;
        return SK_OK;
    }
    sk_store_stat st;
    SK_GUARD(sk_store_open(&f->store, name, env, err));
    SK_GUARD(f->store->ops->stat(f->store, &st, err));
    f->size = st.size;
    return SK_OK;
}

static int src_first_block(struct vsrc *f, unsigned char *buf, size_t *got, sk_error *err)
{
    *got = 0;
    if (f->fd >= 0) return sk_stream_pread(f->fd, 0, buf, SK_TAR_BLOCK, got, f->name, err);
    if (!f->size) return SK_OK;
    return f->store->ops->read_at(f->store, 0, buf, f->size < SK_TAR_BLOCK ? f->size : SK_TAR_BLOCK,
                                  got, err);
}

static int src_read(void *ctx, void *dst, size_t n, size_t *got, sk_error *err)
{
    sk_store_seq *q = ((struct vsrc *)ctx)->seq;
    return q->read(q, dst, n, got, err);
}

/* Starts a pass over the whole shard as kind (SK_STREAM_PREAD: local only). */
static int src_stream(struct vsrc *f, sk_stream *s, sk_stream_kind kind, sk_error *err)
{
    if (f->fd >= 0) return sk_stream_open(s, f->fd, f->name, kind, err);
    memset(s, 0, sizeof *s);
    if (f->seq) f->seq->close(f->seq);
    f->seq = NULL;
    SK_GUARD(f->store->ops->open_seq(f->store, 0, &f->seq, err));
    return sk_stream_open_src(s, src_read, f, f->name, kind, err);
}

static void src_close(struct vsrc *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->seq) f->seq->close(f->seq);
    sk_store_close(f->store);
}

/* ------------------------------------------------------------------ JPEG */

struct jctx {
    vstate *v;
    uint64_t pos; /* for progress: the shard's bytes walked */
    int fd;
    size_t next;
    pthread_mutex_t mu;
};

static void jpeg_one(const vstate *v, struct jpegjob *j, const unsigned char *data)
{
    j->bad = sk_jpeg_check(data, (size_t)j->size, j->why, sizeof j->why);
    if (!j->bad && v->o->images && v->o->images->image_size &&
        sk_jpeg_conforms(data, (size_t)j->size, v->o->images, j->why, sizeof j->why))
        j->bad = 2;
}

static void *jpeg_worker(void *arg)
{
    struct jctx *c = arg;
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (;;) {
        pthread_mutex_lock(&c->mu);
        size_t i = c->next++;
        pthread_mutex_unlock(&c->mu);
        if (i >= c->v->njobs) break;
        if (i) {
            pthread_mutex_lock(&c->mu);
            c->v->pr.jpegs_done++;
            vprogress(c->v, c->pos, 0);
            pthread_mutex_unlock(&c->mu);
        }
        struct jpegjob *j = &c->v->jobs[i];
        if (j->size > cap) {
            free(buf);
            cap = (size_t)j->size;
            if (!(buf = malloc(cap))) {
                cap = 0;
                j->bad = -1;
                snprintf(j->why, sizeof j->why, "out of memory");
                continue;
            }
        }
        size_t got;
        sk_error e = SK_ERROR_INIT;
        if (sk_stream_pread(c->fd, j->data_offset, buf, (size_t)j->size, &got, "", &e) || got < j->size) {
            j->bad = 1;
            snprintf(j->why, sizeof j->why, "cannot read the member");
            continue;
        }
        jpeg_one(c->v, j, buf);
    }
    free(buf);
    return NULL;
}

/* Decodes the collected JPEG members: in parallel from a local plain tar,
 * in order through a second stream pass from a compressed one or an
 * object. */
static int check_jpegs(vstate *v, struct vsrc *f, int compressed, uint64_t walked, sk_error *err)
{
    const char *name = f->name;
    int fd = f->fd;
    if (!v->njobs) return SK_OK;
    v->st.jpegs += v->njobs;
    if (!compressed && fd >= 0) {
        int n = v->o->jobs > 0 ? v->o->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
        if (n < 1) n = 1;
        if ((size_t)n > v->njobs) n = (int)v->njobs;
        struct jctx c = {.v = v, .pos = walked, .fd = fd};
        pthread_mutex_init(&c.mu, NULL);
        pthread_t *t = calloc((size_t)n, sizeof *t);
        int started = 0;
        for (int i = 0; t && i < n; i++)
            if (pthread_create(&t[i], NULL, jpeg_worker, &c) == 0) started++;
        if (!started) jpeg_worker(&c);
        for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
        v->pr.jpegs_done++; /* the last one, not counted as the next is taken */
        free(t);
        pthread_mutex_destroy(&c.mu);
    } else {
        sk_stream s;
        int rc = src_stream(f, &s, compressed ? SK_STREAM_ARCHIVE : SK_STREAM_PLAIN, err);
        unsigned char *buf = NULL;
        size_t cap = 0;
        for (size_t i = 0; !rc && i < v->njobs; i++) {
            struct jpegjob *j = &v->jobs[i];
            if (j->size > cap) {
                free(buf);
                cap = (size_t)j->size;
                if (!(buf = sk_xmalloc(cap, err))) { rc = SK_E_NOMEM; break; }
            }
            size_t got;
            v->pr.jpegs_done += i > 0;
            vprogress(v, walked, 0);
            if ((rc = sk_stream_read_at(&s, j->data_offset, buf, (size_t)j->size, &got, err))) break;
            if (got < j->size) {
                j->bad = 1;
                snprintf(j->why, sizeof j->why, "truncated");
            } else {
                jpeg_one(v, j, buf);
            }
        }
        free(buf);
        sk_stream_close(&s);
        if (rc) return rc;
        v->pr.jpegs_done++;
    }
    for (size_t i = 0; i < v->njobs; i++) /* no memory is the run's failure, not the image's */
        if (v->jobs[i].bad < 0)
            return sk_error_set(err, SK_E_NOMEM, "%s: sample at offset %llu: out of memory decoding its JPEG: %s",
                                name, (unsigned long long)v->jobs[i].sample_offset, v->jobs[i].why);
    for (size_t i = 0; i < v->njobs; i++) {
        const struct jpegjob *j = &v->jobs[i];
        if (!j->bad) continue;
        const struct vsample *s = &v->s[j->sample];
        if (j->bad == 2)
            problem(v, 0, "image", name, j->sample_offset, v->pool + s->key_off, s->key_len,
                    "image %s", j->why);
        else
            problem(v, 0, "jpeg", name, j->sample_offset, v->pool + s->key_off, s->key_len,
                    "JPEG does not decode: %s", j->why);
    }
    return SK_OK;
}

/* ------------------------------------------------------------ seek table */

static int fd_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    return sk_stream_pread(*(int *)ctx, pos, buf, n, got, "", err);
}

/* --deep on a local .tar.zst: the seek table must describe the frames the
 * file really holds (lookups jump to the offsets it gives): each frame's
 * compressed size as zstd finds it, its decompressed size as its header
 * says, and the frames end where the table's own frame begins. */
static void check_seek_table(vstate *v, const char *name, int fd, uint64_t size)
{
    sk_tar_src src = {.ctx = &fd, .read_at = fd_read_at, .size = size, .name = name};
    sk_zstd_frame *fr = NULL;
    size_t n = 0;
    sk_error e = SK_ERROR_INIT;
    if (sk_zstd_seek_table(&src, &fr, &n, &e)) {
        problem(v, 0, "zstd", name, 0, NULL, 0, "%s", e.msg);
        return;
    }
    if (!n) return; /* no seek table: a plain zstd stream, read sequentially */
    unsigned char *buf = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n; i++) {
        size_t want = fr[i].c_size, got = 0;
        if (want > cap) {
            free(buf);
            cap = want;
            if (!(buf = malloc(cap))) break;
        }
        if (sk_stream_pread(fd, fr[i].c_off, buf, want, &got, name, &e) || got < want) {
            problem(v, 0, "zstd", name, fr[i].c_off, NULL, 0,
                    "seek table frame %zu (at %llu, %u bytes) runs past the file", i,
                    (unsigned long long)fr[i].c_off, fr[i].c_size);
            break;
        }
        size_t real = ZSTD_findFrameCompressedSize(buf, want);
        unsigned long long content = ZSTD_getFrameContentSize(buf, want);
        if (ZSTD_isError(real) || real != want ||
            (content != ZSTD_CONTENTSIZE_UNKNOWN && content != fr[i].d_size)) {
            problem(v, 0, "zstd", name, fr[i].c_off, NULL, 0,
                    "seek table frame %zu says %u compressed and %u decompressed bytes at %llu; the "
                    "file has %s there", i, fr[i].c_size, fr[i].d_size, (unsigned long long)fr[i].c_off,
                    ZSTD_isError(real) ? "no zstd frame" : "a frame of another size");
            break;
        }
    }
    free(buf);
    free(fr);
}

/* ----------------------------------------------------------------- shard */

static const char *kind_of(const char *msg)
{
    return strstr(msg, "truncated") || strstr(msg, "Truncated") || strstr(msg, "unexpected end") ||
                   strstr(msg, "premature")
               ? "truncated"
               : "tar";
}

/* After the last member, at: two zero blocks, then nothing but zeros (GNU
 * tar pads to a record).  A damaged stream is a problem, an I/O error not. */
static int check_end(vstate *v, sk_stream *s, const char *name, uint64_t at, sk_error *err)
{
    unsigned char b[SK_TAR_BLOCK];
    size_t got;
    sk_error e = SK_ERROR_INIT;
    int rc;
    for (uint64_t pos = at;; pos += got) {
        if ((rc = sk_stream_read_at(s, pos, b, sizeof b, &got, &e))) {
            if (rc != SK_E_CORRUPT) return *err = e, rc;
            problem(v, 0, kind_of(e.msg), name, pos, NULL, 0, "%s", e.msg);
            return SK_OK;
        }
        if (pos == at && got == 0) {
            problem(v, 0, "truncated", name, at, NULL, 0,
                    "no end-of-archive blocks after the last member (truncated?)");
            return SK_OK;
        }
        if (pos < at + 2 * SK_TAR_BLOCK && got < SK_TAR_BLOCK) {
            problem(v, 0, "truncated", name, pos + got, NULL, 0,
                    "end-of-archive is %llu bytes, not two blocks (truncated)",
                    (unsigned long long)(pos + got - at));
            return SK_OK;
        }
        if (!got) return SK_OK;
        size_t k = 0;
        while (k < got && !b[k]) k++;
        if (k < got) {
            problem(v, 0, "tar", name, pos + k, NULL, 0, "%s at offset %llu",
                    pos < at + 2 * SK_TAR_BLOCK ? "end-of-archive block is not zero"
                                                : "trailing garbage after the end-of-archive blocks",
                    (unsigned long long)(pos + k));
            return SK_OK;
        }
    }
}

struct expect { /* what a manifest says of a shard */
    int have;
    uint64_t bytes, samples;
    uint32_t crc32c;
    const char *manifest;
    const sk_key_range *keys; /* first NULL: the manifest gives no key range */
};

/* The manifest's key range must be the shard's smallest and largest key:
 * get trusts it to say which shard holds a key. */
static void check_key_range(vstate *v, const char *name, const sk_key_range *r)
{
    const char *lo = NULL, *hi = NULL;
    size_t lol = 0, hil = 0;
    for (size_t i = 0; i < v->ns; i++) {
        const char *k = v->pool + v->s[i].key_off;
        size_t kl = v->s[i].key_len;
        if (!lo || sk_key_cmp(k, kl, lo, lol) < 0) lo = k, lol = kl;
        if (!hi || sk_key_cmp(k, kl, hi, hil) > 0) hi = k, hil = kl;
    }
    if (!lo)
        problem(v, 0, "manifest", name, 0, NULL, 0, "no samples, the manifest gives keys '%.*s' to '%.*s'",
                (int)(r->first_len > 200 ? 200 : r->first_len), r->first,
                (int)(r->last_len > 200 ? 200 : r->last_len), r->last);
    else if (sk_key_cmp(lo, lol, r->first, r->first_len) || sk_key_cmp(hi, hil, r->last, r->last_len))
        problem(v, 0, "manifest", name, 0, NULL, 0,
                "keys run from '%.*s' to '%.*s', the manifest says '%.*s' to '%.*s'",
                (int)(lol > 200 ? 200 : lol), lo, (int)(hil > 200 ? 200 : hil), hi,
                (int)(r->first_len > 200 ? 200 : r->first_len), r->first,
                (int)(r->last_len > 200 ? 200 : r->last_len), r->last);
}

static int verify_shard(vstate *v, const char *name, const struct expect *ex, sk_error *err)
{
    struct vsrc f;
    sk_error oerr = SK_ERROR_INIT;
    int orc = src_open(&f, &v->env, name, &oerr);
    if (orc == SK_E_NOTFOUND && ex && ex->have) {
        problem(v, 0, "manifest", ex->manifest, 0, NULL, 0, "shard %s is missing", name);
        src_close(&f);
        return SK_OK;
    }
    if (orc) {
        src_close(&f);
        return *err = oerr, orc;
    }
    SK_GUARD(sk_grow((void **)&v->shards, &v->cap_shards, v->nshards + 1, sizeof *v->shards, err));
    uint32_t shard = (uint32_t)v->nshards;
    v->shards[v->nshards++] = strdup(name);
    v->ns = v->nm = v->npool = v->njobs = 0;
    unsigned char first[SK_TAR_BLOCK];
    size_t nfirst = 0;
    int rc = SK_OK;
    sk_stream s = {0};
    sk_tar_reader r;
    int have_reader = 0;
    if ((rc = src_first_block(&f, first, &nfirst, err))) goto out;
    /* compressed shards, zstd too, are all read through libarchive; an
     * object is streamed whole (a pread costs a request there) */
    sk_stream_kind detected = sk_stream_detect(first, nfirst);
    int compressed = detected != SK_STREAM_PLAIN;
    int deep = (v->o->flags & SK_VERIFY_DEEP) != 0 || f.fd < 0;
    sk_stream_kind mode = compressed ? SK_STREAM_ARCHIVE : deep ? SK_STREAM_PLAIN : SK_STREAM_PREAD;
    int zstd = detected == SK_STREAM_ZSTD;
    sk_index_shard_info actual = {.size = f.size,
                                  .first_block_crc32c = sk_crc32c(0, first, nfirst),
                                  .flags = zstd ? SK_INDEX_ZSTD : 0};
    v->st.shards++;
    v->st.bytes += f.size;
    sk_error oe = SK_ERROR_INIT;
    if ((rc = src_stream(&f, &s, mode, &oe))) {
        if (rc == SK_E_CORRUPT) {
            problem(v, 0, kind_of(oe.msg), name, 0, NULL, 0, "%s", oe.msg);
            rc = SK_OK;
        } else {
            *err = oe;
        }
        goto out;
    }
    sk_tar_src src = {.ctx = &s, .read_at = sk_stream_read_at, .name = name,
                      .size = compressed ? UINT64_MAX : f.size};
    sk_tar_reader_init(&r, &src, deep || compressed ? SK_TAR_CRC : 0);
    have_reader = 1;
    int walked_all = 0;
    for (;;) {
        sk_tar_entry e;
        sk_error te = SK_ERROR_INIT;
        int trc = sk_tar_next(&r, &e, &te);
        if (trc == SK_E_IO || trc == SK_E_NOMEM) {
            *err = te;
            rc = trc;
            goto out;
        }
        if (trc) {
            problem(v, 0, kind_of(te.msg), name, r.pos,
                    v->ns ? v->pool + v->s[v->ns - 1].key_off : NULL,
                    v->ns ? v->s[v->ns - 1].key_len : 0, "%s", te.msg);
            break;
        }
        if (e.end) {
            walked_all = 1;
            if ((rc = check_end(v, &s, name, r.pos, err))) goto out;
            break;
        }
        if ((rc = add_entry(v, shard, &e, err))) goto out;
        vprogress(v, r.pos, 0);
    }
    if (rc) goto out;
    if ((rc = close_sample(v, shard, err))) goto out;
    v->st.samples += v->ns;
    int have_crc = 0;
    if (mode != SK_STREAM_PREAD) { /* the rest of the file, for the shard's CRC32C */
        if ((rc = sk_stream_drain(&s, err))) goto out;
        actual.crc32c = s.file_crc;
        have_crc = 1;
    }
    if ((rc = check_index(v, name, &actual, have_crc, walked_all, err))) goto out;
    if (zstd && deep && f.fd >= 0) check_seek_table(v, name, f.fd, f.size);
    if (ex && ex->have) {
        if (ex->bytes != actual.size)
            problem(v, 0, "manifest", name, 0, NULL, 0, "%llu bytes, the manifest says %llu",
                    (unsigned long long)actual.size, (unsigned long long)ex->bytes);
        if (walked_all && ex->samples != v->ns)
            problem(v, 0, "manifest", name, 0, NULL, 0, "%zu samples, the manifest says %llu",
                    v->ns, (unsigned long long)ex->samples);
        if (have_crc && ex->crc32c && ex->crc32c != actual.crc32c)
            problem(v, 0, "manifest", name, 0, NULL, 0, "CRC32C %08x, the manifest says %08x",
                    actual.crc32c, ex->crc32c);
        if (walked_all && ex->keys && ex->keys->first) check_key_range(v, name, ex->keys);
    }
    if (v->o->flags & SK_VERIFY_JPEG) {
        sk_stream_close(&s); /* its GET, for an object, before the JPEG pass opens another */
        rc = check_jpegs(v, &f, compressed, r.pos, err);
    }
out:
    v->pr.shards_done++;
    v->pr.bytes_done += f.size;
    if (have_reader) sk_tar_reader_release(&r);
    sk_stream_close(&s);
    src_close(&f);
    return rc;
}

/* --------------------------------------------------------- across shards */

static int exts_overlap(const char *a, const char *b)
{
    for (const char *p = a + 1; *p; p = strchr(p, ',') + 1) {
        size_t n = (size_t)(strchr(p, ',') - p);
        char pat[SK_TAR_NAME_MAX + 3];
        if (n + 2 >= sizeof pat) continue;
        pat[0] = ',';
        memcpy(pat + 1, p, n);
        pat[n + 1] = ',';
        pat[n + 2] = 0;
        if (strstr(b, pat)) return 1;
    }
    return 0;
}

/* Called with each key record in sorted order: equal neighbours are the
 * same key twice. */
static void check_key(void *ctx, const sk_keyrec *a, const sk_keyrec *b)
{
    vstate *v = ctx;
    if (!a || a->len != b->len || memcmp(a->key, b->key, a->len)) return;
    if (a->shard == b->shard && !exts_overlap(a->exts, b->exts))
        problem(v, 0, "split", v->shards[b->shard], b->offset, b->key, b->len,
                "members of this sample are not adjacent (another run at offset %llu); a "
                "WebDataset reader sees two samples", (unsigned long long)a->offset);
    else if (a->shard == b->shard)
        problem(v, 0, "duplicate", v->shards[b->shard], b->offset, b->key, b->len,
                "duplicate key (also at offset %llu)", (unsigned long long)a->offset);
    else
        problem(v, 0, "duplicate", v->shards[b->shard], b->offset, b->key, b->len,
                "duplicate key (also in %s at offset %llu)", v->shards[a->shard],
                (unsigned long long)a->offset);
}

/* ----------------------------------------------------------------- entry */

/* A damaged manifest is a finding, not a failure to run. */
static void bad_manifest(void *ctx, const char *path, const sk_error *why)
{
    problem(ctx, 0, "manifest", path, 0, NULL, 0, "%s", why->msg);
}

void sk_verify_options_init_sized(sk_verify_options *o, size_t size)
{
    static const sk_verify_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_verify(const char *const *targets, size_t n, const sk_verify_options *opts,
              sk_verify_stats *stats, sk_error *err)
{
    sk_verify_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_verify_options", err));
    if (o.images && o.images->image_size) o.flags |= SK_VERIFY_JPEG; /* the size check reads them */
    vstate v = {.o = &o};
    clock_gettime(CLOCK_MONOTONIC, &v.t0);
    v.last = v.t0;
    sk_store_env_init(&v.env, o.s3);
    int rc = sk_keysort_new(&v.keys, o.key_mem, err);
    uint64_t listed = 0, listed_bytes = 0;
    int bytes_known = 1;
    for (size_t i = 0; i < n && !rc; i++) {
        /* the one resolver (io/dataset.c): brace patterns, manifests, a
         * directory or an s3:// prefix (its manifest, else its shards) */
        sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = o.s3, .env = &v.env,
                         .bad_manifest = bad_manifest, .ctx = &v};
        sk_ds_shard *list = NULL;
        size_t k = 0;
        rc = sk_ds_resolve(targets[i], &ro, &list, &k, err);
        /* the totals are known once the last target is listed; the bytes
         * only when a manifest gave every shard's */
        listed += k;
        for (size_t j = 0; j < k; j++) list[j].known ? (void)(listed_bytes += list[j].bytes) : (void)(bytes_known = 0);
        if (i + 1 == n) v.pr.shards_total = listed, v.pr.bytes_total = bytes_known ? listed_bytes : 0;
        for (size_t j = 0; j < k && !rc; j++) {
            struct expect ex = {1, list[j].bytes, list[j].samples, list[j].crc32c, list[j].manifest,
                                &list[j].keys};
            rc = verify_shard(&v, list[j].url, list[j].known ? &ex : NULL, err);
        }
        sk_ds_free(list, k);
    }
    if (!rc) rc = sk_keysort_each(v.keys, check_key, &v, err);
    v.ns = 0;
    vprogress(&v, 0, 1);
    for (size_t i = 0; i < v.nshards; i++) free(v.shards[i]);
    sk_keysort_free(v.keys);
    free(v.ebuf);
    free(v.shards);
    free(v.s);
    free(v.m);
    free(v.pool);
    free(v.jobs);
    sk_store_env_release(&v.env);
    if (stats) *stats = v.st;
    return rc;
}
