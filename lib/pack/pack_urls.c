/*
 * pack_urls.c - `pack --from-urls` (sk_pack_urls): a URL list -> shards,
 * img2dataset's job in one process.
 *
 * Three kinds of work, three places:
 *   - this thread reads the list a row at a time (format/urllist.c), hands
 *     URLs to the downloader (fetch_urls.c, libcurl multi), and writes
 *     finished rows in input order through the sample writer;
 *   - image threads (--jobs) check, hash and resize downloaded bodies
 *     (urls_row.c);
 *   - libcurl moves the bytes, driven from this thread.
 * Rows enter a ring in input order and leave it from its head only, so
 * the output is the same whatever order downloads end in, and memory is
 * bounded by the ring (about twice --concurrency rows, each holding at
 * most --max-image-bytes) whatever the list's length.
 *
 * Rows [k*N, (k+1)*N) are shard k (img2dataset's cut); a marker in the
 * ring says where each shard begins.  A shard of another --part, or one
 * an earlier run finished (--incremental: its status file and a sound
 * shard under its final name), has its rows skipped unread.  The status
 * file is written after the shard is published, so its presence means
 * the shard is complete.
 */
#include "pack/fetch_urls.h"
#include "pack/pack_out.h"
#include "pack/urls_int.h"
#include "format/urllist.h"
#include "io/io.h"
#include "io/sink.h"
#include "io/store.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_CATEGORIES 64 /* distinct error kinds counted in stats.json */

enum { SL_FREE, SL_FETCH, SL_WORK, SL_READY };
enum { K_ROW, K_SHARD };

typedef struct slot {
    int kind, state;
    int kept;       /* K_SHARD: finished by an earlier run (ix its index) */
    int ours;       /* K_SHARD: this part's */
    sk_index *ix;
    sk_url_item it;
} slot;

typedef struct cat {
    char name[80];
    uint64_t n;
} cat;

typedef struct job {
    sk_pack_options po;
    sk_urls_options uo;
    sk_s3 *s3;
    sk_url_job rowjob;
    char *pattern, *manifest; /* after {part} */
    sk_sample_writer *w;
    sk_urlfetch *f;
    /* the ring: rows between head and tail (sequence numbers) */
    slot *ring;
    size_t cap;
    uint64_t head, tail;
    /* image threads */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot **q; /* work queue (cap entries) */
    size_t qh, qn;
    size_t busy;      /* bodies the image threads are working on */
    int stop;
    pthread_t *th;
    int nth;
    int failed;       /* a thread's machine failure */
    sk_error terr;
    /* the list */
    sk_store *ls;
    sk_store_seq *seq;
    sk_urllist *list;
    int list_end;
    uint64_t next_shard; /* the next shard a marker is due for */
    int skipping;        /* the rows of the current shard are not fetched */
    uint64_t cur_shard;
    int in_ours;         /* a shard of ours is open in the writer */
    int in_kept;         /* the rows being skipped are a kept shard's */
    uint64_t kept_rows;  /* the rows its status file holds */
    uint64_t kept_seen;  /* the rows of the list skipped for it so far */
    char kept_status[4200];
    sk_buf status;       /* the open shard's status lines */
    size_t nextra;
    const char **cols;   /* the extra columns asked of the reader */
    int keyw;            /* digits of the row within a shard */
    sk_urls_stats st;
    cat cats[MAX_CATEGORIES + 1];
    size_t ncats;
    struct timespec t0, last;
    sk_store_env env;
} job;

static double since(const struct timespec *a)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - a->tv_sec) + (double)(now.tv_nsec - a->tv_nsec) / 1e9;
}

/* ------------------------------------------------------------ image threads */

static void *worker(void *arg)
{
    job *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->qn && !j->stop) pthread_cond_wait(&j->cv, &j->mu);
        if (!j->qn) break;
        slot *s = j->q[j->qh];
        j->qh = (j->qh + 1) % j->cap;
        j->qn--;
        j->busy++;
        pthread_mutex_unlock(&j->mu);
        sk_error e = SK_ERROR_INIT;
        int rc = sk_url_item_process(&j->rowjob, &s->it, &e);
        pthread_mutex_lock(&j->mu);
        j->busy--;
        if (rc && !j->failed) {
            j->failed = rc;
            j->terr = e;
        }
        s->state = SL_READY;
        sk_urlfetch_wakeup(j->f);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static void on_fetched(void *ctx, sk_urlfetch_result *r)
{
    job *j = ctx;
    slot *s = r->ctx;
    s->it.http = r->http;
    s->it.bytes = r->bytes;
    s->it.ms = r->ms;
    j->st.bytes += r->bytes;
    if (!r->ok) {
        sk_urlfetch_give_back(j->f, &r->body);
        s->it.status = URL_FAILED_DOWNLOAD;
        snprintf(s->it.error, sizeof s->it.error, "%s", r->error);
        pthread_mutex_lock(&j->mu);
        s->state = SL_READY;
        pthread_mutex_unlock(&j->mu);
        return;
    }
    s->it.body = r->body;
    pthread_mutex_lock(&j->mu);
    s->state = SL_WORK;
    j->q[(j->qh + j->qn) % j->cap] = s;
    j->qn++;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* ------------------------------------------------------------- the list */

static int seq_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    sk_store_seq *q = ctx;
    return q->read(q, buf, cap, got, err);
}

static char *dup_n(const char *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        memcpy(s, p, n);
        s[n] = 0;
    }
    return s;
}

/* The shard's name and its status file's: the name without .tar or
 * .tar.zst, then .status.jsonl. */
static int status_name(const job *j, uint64_t shard, char *shard_path, char *status, size_t cap,
                       sk_error *err)
{
    SK_GUARD(sk_shard_name(j->pattern, j->po.start + shard, shard_path, cap, err));
    size_t n = strlen(shard_path);
    if (n > 8 && !strcmp(shard_path + n - 8, ".tar.zst")) n -= 8;
    else if (n > 4 && !strcmp(shard_path + n - 4, ".tar")) n -= 4;
    SK_FAIL_IF(n + 14 > cap, err, SK_E_USAGE, "%s: name too long", shard_path);
    snprintf(status, cap, "%.*s.status.jsonl", (int)n, shard_path);
    return SK_OK;
}

static int exists(job *j, const char *url)
{
    if (!sk_store_is_remote(url)) return access(url, F_OK) == 0;
    sk_store *s = NULL;
    sk_store_stat st;
    sk_error e = SK_ERROR_INIT;
    int ok = !sk_store_open(&s, url, &j->env, &e) && !s->ops->stat(s, &st, &e);
    sk_store_close(s);
    return ok;
}

/* Row `in` of shard k's key: img2dataset's (shard on 5 digits, then the
 * row on as many digits as --number-sample-per-shard - 1 has). */
static void make_key(const job *j, uint64_t k, uint64_t in, char *key, size_t cap)
{
    if (j->keyw) snprintf(key, cap, "%05llu%0*llu", (unsigned long long)k, j->keyw, (unsigned long long)in);
    else snprintf(key, cap, "%05llu", (unsigned long long)k);
}

/* The lines of a kept shard's status file (one a row), and its first
 * line's start, read as a stream: memory does not grow with the file. */
static int status_lines(job *j, const char *url, uint64_t *lines, char *first, size_t cap, sk_error *err)
{
    sk_store *st = NULL;
    sk_store_seq *q = NULL;
    char buf[65536];
    size_t got, nf = 0;
    *lines = 0;
    int rc = sk_store_open(&st, url, &j->env, err);
    if (!rc) rc = st->ops->open_seq(st, 0, &q, err);
    while (!rc && !(rc = q->read(q, buf, sizeof buf, &got, err)) && got) {
        for (size_t i = 0; i < got; i++) {
            if (!*lines && nf + 1 < cap) first[nf++] = buf[i];
            *lines += buf[i] == '\n';
        }
    }
    first[nf] = 0;
    if (q) q->close(q);
    sk_store_close(st);
    return rc;
}

/* A shard an earlier run finished is kept only when it was cut as this
 * run cuts it: else its rows are not the ones its number now stands for
 * (another --number-sample-per-shard, or another list), and keeping it
 * would drop or repeat rows.  Its status file says how many rows it took
 * and, by its first key's width, the count it was cut with. */
static int kept_begin(job *j, uint64_t k, const char *status, sk_error *err)
{
    char key[48], want[64], first[64];
    make_key(j, k, 0, key, sizeof key);
    snprintf(want, sizeof want, "{\"key\":\"%s\",", key);
    SK_GUARD(status_lines(j, status, &j->kept_rows, first, sizeof first, err));
    snprintf(j->kept_status, sizeof j->kept_status, "%s", status);
    SK_FAIL_IF(strncmp(first, want, strlen(want)), err, SK_E_USAGE, "%s: the shard an earlier run "
               "finished was written with another --number-sample-per-shard (its first key is not %s, "
               "as --number-sample-per-shard %llu makes it): --incremental keeps only shards cut the "
               "same way; rerun with the earlier count, or write elsewhere", status, key,
               (unsigned long long)j->uo.per_shard);
    SK_FAIL_IF(j->kept_rows > j->uo.per_shard, err, SK_E_USAGE, "%s: the shard an earlier run "
               "finished holds %llu rows, more than --number-sample-per-shard %llu: it was written "
               "with %llu rows a shard or more; rerun with that count, or write elsewhere", status,
               (unsigned long long)j->kept_rows, (unsigned long long)j->uo.per_shard,
               (unsigned long long)j->kept_rows);
    j->in_kept = 1;
    j->kept_seen = 0;
    return SK_OK;
}

/* The kept shard's rows are over (the next shard's row, or the list's
 * end): as many as its status file holds, or it was cut another way. */
static int kept_end(job *j, sk_error *err)
{
    if (!j->in_kept) return SK_OK;
    j->in_kept = 0;
    SK_FAIL_IF(j->kept_seen != j->kept_rows, err, SK_E_USAGE, "%s: the shard an earlier run "
               "finished holds %llu rows, this run puts %llu in it (--number-sample-per-shard %llu): "
               "it was written with %llu rows a shard, or from another list; --incremental keeps only "
               "shards cut the same way: rerun with the same count and list, or write elsewhere",
               j->kept_status, (unsigned long long)j->kept_rows, (unsigned long long)j->kept_seen,
               (unsigned long long)j->uo.per_shard, (unsigned long long)j->kept_rows);
    return SK_OK;
}

/* A marker for shard k in slot s: whether it is ours, and kept. */
static int mark_shard(job *j, slot *s, uint64_t k, sk_error *err)
{
    char path[4200], status[4200];
    SK_GUARD(kept_end(j, err));
    s->kind = K_SHARD;
    s->state = SL_READY;
    s->it.shard = k;
    s->ours = !j->po.parts || (int)(k % (uint64_t)j->po.parts) == j->po.part;
    s->kept = 0;
    if (s->ours && j->uo.incremental) {
        SK_GUARD(status_name(j, k, path, status, sizeof path, err));
        if (exists(j, status) && sk_emit_shard_sound(j->s3, path, &s->ix)) s->kept = 1;
        if (s->kept) SK_GUARD(kept_begin(j, k, status, err));
    }
    j->skipping = !s->ours || s->kept;
    return SK_OK;
}

/* Reads rows into the ring while it has room (two slots: a row may bring
 * its shard's marker) and the downloader takes more.  Bodies not yet
 * through the image threads (downloading, queued, worked on) are kept to
 * --concurrency plus two a thread: when the threads are what bounds the
 * run, more downloads would only wait in the queue, each in memory of its
 * own (fresh pages to fault in: a fifth of the body buffers a run made);
 * when the downloads are, the queue is short and all of --concurrency
 * stays in flight. */
static int fill(job *j, sk_error *err)
{
    pthread_mutex_lock(&j->mu);
    size_t unworked = j->qn + j->busy; /* only falls until on_fetched, on this thread */
    pthread_mutex_unlock(&j->mu);
    size_t most = (size_t)j->uo.concurrency + 2 * (size_t)j->nth;
    while (!j->list_end && j->tail - j->head + 2 <= j->cap &&
           sk_urlfetch_pending(j->f) < (size_t)j->uo.concurrency &&
           sk_urlfetch_pending(j->f) + unworked < most) {
        sk_url_row r;
        int rc = sk_urllist_next(j->list, &r, err);
        if (rc < 0) return rc;
        if (!rc) {
            j->list_end = 1;
            SK_GUARD(kept_end(j, err));
            break;
        }
        uint64_t k = r.row / j->uo.per_shard;
        if (k >= j->next_shard || !j->tail) {
            slot *m = &j->ring[j->tail % j->cap];
            memset(m, 0, sizeof *m);
            SK_GUARD(mark_shard(j, m, k, err));
            j->tail++;
            j->next_shard = k + 1;
        }
        if (j->skipping) {
            j->kept_seen += j->in_kept;
            continue;
        }
        slot *s = &j->ring[j->tail % j->cap];
        memset(s, 0, sizeof *s);
        s->kind = K_ROW;
        sk_url_item *it = &s->it;
        it->row = r.row;
        it->shard = k;
        make_key(j, k, r.row % j->uo.per_shard, it->key, sizeof it->key);
        it->extra = calloc(j->nextra ? j->nextra : 1, sizeof *it->extra);
        it->extra_len = calloc(j->nextra ? j->nextra : 1, sizeof *it->extra_len);
        int oom = !it->extra || !it->extra_len;
        if (!oom && r.url && !(it->url = dup_n(r.url, r.url_len))) oom = 1;
        it->url_len = r.url_len;
        if (!oom && r.caption && !(it->caption = dup_n(r.caption, r.caption_len))) oom = 1;
        it->caption_len = r.caption_len;
        for (size_t i = 0; !oom && i < j->nextra; i++)
            if (r.extra[i]) {
                oom = !(it->extra[i] = dup_n(r.extra[i], r.extra_len[i]));
                it->extra_len[i] = r.extra_len[i];
            }
        if (oom) {
            sk_url_item_clear(it, j->nextra);
            return sk_error_set(err, SK_E_NOMEM, "out of memory (row %llu)", (unsigned long long)r.row);
        }
        j->tail++;
        j->st.rows++;
        it->status = URL_FAILED_DOWNLOAD;
        s->state = SL_READY;
        if (r.error) {
            snprintf(it->error, sizeof it->error, "unreadable row: %s", r.error);
        } else if (!it->url || !it->url_len) {
            snprintf(it->error, sizeof it->error, "no URL");
        } else if (memchr(it->url, 0, it->url_len) || !sk_store_is_http(it->url)) {
            /* the kind is the feature here: --from-urls downloads web URLs
             * (check-layers rule 5 spares this file for it) */
            snprintf(it->error, sizeof it->error, "not an http or https URL");
        } else {
            s->state = SL_FETCH;
            SK_GUARD(sk_urlfetch_add(j->f, it->url, s, err));
        }
    }
    return SK_OK;
}

/* ------------------------------------------------------------ the output */

/* A whole small file (a status file, stats.json) under its final name:
 * a temporary name then a rename, or one upload. */
static int put_file(job *j, const char *path, const sk_buf *b, sk_error *err)
{
    sk_sink *s;
    sk_sink_opts so = {j->s3, 0};
    SK_GUARD(sk_sink_open(&s, path, &so, err));
    struct iovec iov = {b->p ? b->p : "", b->len};
    int rc = s->ops->write(s, &iov, 1, b->len, err);
    if (rc) {
        s->ops->abort(s);
        return rc;
    }
    sk_index_shard_info info = {0};
    info.size = b->len;
    info.crc32c = sk_crc32c(0, b->p ? b->p : "", b->len); /* an upload is checked against it */
    return s->ops->publish(s, NULL, &info, err);
}

static void count_error(job *j, const char *e)
{
    char name[80];
    size_t n = strcspn(e, "(:");
    if (!strncmp(e, "refused: ", 9)) n = 9 + strcspn(e + 9, "(");
    const char *addr = strstr(e, " address ");
    if (addr && (size_t)(addr - e) < n) n = (size_t)(addr - e) + 8;
    while (n && e[n - 1] == ' ') n--;
    snprintf(name, sizeof name, "%.*s", (int)n, e);
    for (size_t i = 0; i < j->ncats; i++)
        if (!strcmp(j->cats[i].name, name)) {
            j->cats[i].n++;
            return;
        }
    if (j->ncats == MAX_CATEGORIES) {
        j->cats[MAX_CATEGORIES].n++;
        snprintf(j->cats[MAX_CATEGORIES].name, sizeof j->cats[0].name, "other");
        return;
    }
    snprintf(j->cats[j->ncats].name, sizeof j->cats[0].name, "%s", name);
    j->cats[j->ncats++].n = 1;
}

/* Ends the open shard of ours: publishes it, then its status file. */
static int end_ours(job *j, sk_error *err)
{
    char path[4200], status[4200];
    if (!j->in_ours) return SK_OK;
    j->in_ours = 0;
    SK_GUARD(sk_sample_writer_end_open(j->w, path, sizeof path, err));
    j->st.shards++;
    SK_GUARD(status_name(j, j->cur_shard, path, status, sizeof path, err));
    int rc = put_file(j, status, &j->status, err);
    j->status.len = 0;
    return rc;
}

static int emit(job *j, slot *s, sk_error *err)
{
    if (s->kind == K_SHARD) {
        SK_GUARD(end_ours(j, err));
        j->cur_shard = s->it.shard;
        if (s->kept) {
            sk_index *ix = s->ix;
            s->ix = NULL;
            SK_GUARD(sk_sample_writer_keep_at(j->w, s->it.shard, ix, err));
            j->st.shards_kept++;
        } else if (s->ours) {
            SK_GUARD(sk_sample_writer_begin_at(j->w, s->it.shard, err));
            j->in_ours = 1;
        }
        return SK_OK;
    }
    sk_url_item *it = &s->it;
    if (it->status == URL_OK) {
        sk_sample_member m[3] = {{"jpg", 3, it->img, it->img_len}, {"json", 4, it->json, it->json_len}};
        size_t n = 2;
        if (j->rowjob.has_caption)
            m[n++] = (sk_sample_member){"txt", 3, it->caption ? it->caption : "", it->caption_len};
        SK_GUARD(sk_sample_writer_add(j->w, it->key, 0, m, n, err));
        j->st.success++;
    } else {
        if (it->status == URL_FAILED_RESIZE) j->st.failed_to_resize++;
        else j->st.failed_to_download++;
        count_error(j, it->error);
    }
    return sk_url_item_status(it, &j->status, err);
}

/* Writes the finished rows at the ring's head. */
static int drain(job *j, sk_error *err)
{
    for (;;) {
        if (j->head == j->tail) return SK_OK;
        slot *s = &j->ring[j->head % j->cap];
        pthread_mutex_lock(&j->mu);
        int ready = s->state == SL_READY;
        int failed = j->failed;
        pthread_mutex_unlock(&j->mu);
        if (failed) {
            *err = j->terr;
            return failed;
        }
        if (!ready) return SK_OK;
        int rc = emit(j, s, err);
        sk_urlfetch_give_back(j->f, &s->it.body); /* written: the next download fills it */
        sk_index_close(s->ix);
        sk_url_item_clear(&s->it, j->nextra);
        s->state = SL_FREE;
        j->head++;
        if (rc) return rc;
    }
}

static void progress(job *j, int final)
{
    if (!j->uo.progress) return;
    if (!final && since(&j->last) < 0.5) return;
    clock_gettime(CLOCK_MONOTONIC, &j->last);
    j->st.seconds = since(&j->t0);
    j->st.in_flight = sk_urlfetch_pending(j->f);
    j->uo.progress(j->uo.ctx, &j->st);
}

static int write_stats(job *j, sk_pack_stats *ps, sk_error *err)
{
    char mpath[4200], mdir[4200], path[4300];
    sk_emit_manifest_path(j->pattern, j->manifest, mpath, sizeof mpath, mdir, sizeof mdir);
    if (j->po.parts) snprintf(path, sizeof path, "%s%sstats-%d.json", mdir, *mdir ? "/" : "", j->po.part);
    else snprintf(path, sizeof path, "%s%sstats.json", mdir, *mdir ? "/" : "");
    json_t *o = json_object(), *e = json_object();
    int bad = !o || !e;
    double secs = j->st.seconds > 0 ? j->st.seconds : 1e-9;
    for (size_t i = 0; !bad && i <= j->ncats && i <= MAX_CATEGORIES; i++)
        if (j->cats[i].n) bad = json_object_set_new(e, j->cats[i].name, json_integer((json_int_t)j->cats[i].n));
#define U(k, v) if (!bad) bad = json_object_set_new(o, k, json_integer((json_int_t)(v)))
    U("rows", j->st.rows);
    U("success", j->st.success);
    U("failed_to_download", j->st.failed_to_download);
    U("failed_to_resize", j->st.failed_to_resize);
#undef U
    if (!bad) bad = json_object_set(o, "errors", e);
#define U(k, v) if (!bad) bad = json_object_set_new(o, k, json_integer((json_int_t)(v)))
    U("bytes", j->st.bytes);
    U("body_buffers", sk_urlfetch_buffers_made(j->f));
    U("shards", j->st.shards);
    U("shards_kept", j->st.shards_kept);
    U("output_bytes", ps->output_bytes);
#undef U
    if (!bad) bad = json_object_set_new(o, "seconds", json_real(j->st.seconds)) ||
                    json_object_set_new(o, "images_per_second", json_real((double)j->st.success / secs));
    char *text = bad ? NULL : json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    json_decref(e);
    SK_FAIL_IF(!text, err, SK_E_NOMEM, "out of memory (stats.json)");
    sk_buf b = {text, strlen(text), strlen(text) + 1};
    int rc = sk_buf_add(&b, "\n", 1);
    if (!rc) rc = put_file(j, path, &b, err);
    else rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    sk_buf_free(&b);
    return rc;
}

/* ---------------------------------------------------------------- the run */

void sk_urls_options_init_sized(sk_urls_options *o, size_t size)
{
    static const sk_urls_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

/* Splits "a,b" into the extra columns asked of the reader; then the
 * --verify-hash column. */
static int columns(job *j, char **buf, sk_error *err)
{
    const char *save = j->uo.save_columns ? j->uo.save_columns : "";
    *buf = strdup(save);
    size_t n = 0, cap = 2;
    for (const char *p = save; *p; p++) cap += *p == ',';
    j->cols = calloc(cap + 1, sizeof *j->cols);
    SK_FAIL_IF(!*buf || !j->cols, err, SK_E_NOMEM, "out of memory");
    for (char *tok = strtok(*buf, ","); tok; tok = strtok(NULL, ","))
        if (*tok) j->cols[n++] = tok;
    j->rowjob.save = j->cols;
    j->rowjob.nsave = n;
    if (j->uo.verify_hash) {
        SK_FAIL_IF(j->rowjob.hash == HASH_NONE, err, SK_E_USAGE,
                   "--verify-hash %s needs a hash (--compute-hash sha256 or md5)", j->uo.verify_hash);
        j->cols[n++] = j->uo.verify_hash;
        j->rowjob.verify = 1;
    }
    j->nextra = n;
    return SK_OK;
}

static int open_list(job *j, sk_error *err)
{
    const char *name = j->uo.list;
    int fmt = j->uo.input_format ? sk_urllist_format_parse(j->uo.input_format) : sk_urllist_format_of(name);
    SK_FAIL_IF(j->uo.input_format && !fmt, err, SK_E_USAGE,
               "--input-format %s: want txt, csv, tsv or jsonl", j->uo.input_format);
    SK_FAIL_IF(!fmt, err, SK_E_USAGE, "%s: cannot tell the list's format from its name; give "
               "--input-format txt, csv, tsv or jsonl", name);
    SK_GUARD(sk_store_open(&j->ls, name, &j->env, err));
    SK_GUARD(j->ls->ops->open_seq(j->ls, 0, &j->seq, err));
    sk_urllist_opts lo = {.format = fmt, .url_col = j->uo.url_col, .caption_col = j->uo.caption_col,
                          .extra = j->cols, .nextra = j->nextra};
    return sk_urllist_open(&j->list, seq_read, j->seq, name, &lo, err);
}

static int check(job *j, sk_error *err)
{
    sk_urls_options *u = &j->uo;
    SK_FAIL_IF(!u->list, err, SK_E_USAGE, "--from-urls: no list");
    if (!u->per_shard) u->per_shard = 10000;
    if (!u->concurrency) u->concurrency = 64;
    SK_FAIL_IF(u->concurrency < 1 || u->concurrency > 4096, err, SK_E_USAGE,
               "--concurrency %d: want 1..4096", u->concurrency);
    SK_FAIL_IF(u->per_shard > 100000000, err, SK_E_USAGE, "--number-sample-per-shard %llu: want "
               "at most 100000000", (unsigned long long)u->per_shard);
    SK_FAIL_IF(u->timeout < 0 || u->timeout > 3600, err, SK_E_USAGE, "--timeout %g: want 0..3600 s",
               u->timeout);
    SK_FAIL_IF(u->retries < 0 || u->retries > 100, err, SK_E_USAGE, "--retries %d: want 0..100", u->retries);
    const char *h = u->compute_hash ? u->compute_hash : "sha256";
    j->rowjob.hash = !strcmp(h, "sha256") ? HASH_SHA256 : !strcmp(h, "md5") ? HASH_MD5
                   : !strcmp(h, "none") ? HASH_NONE : -1;
    SK_FAIL_IF(j->rowjob.hash < 0, err, SK_E_USAGE, "--compute-hash %s: want sha256, md5 or none", h);
    SK_FAIL_IF(j->po.shuffle, err, SK_E_USAGE, "--from-urls writes rows in list order (no --shuffle)");
    SK_FAIL_IF(j->po.resume, err, SK_E_USAGE, "--from-urls keeps finished shards with --incremental "
               "(not --resume)");
    SK_FAIL_IF(j->po.dry_run, err, SK_E_USAGE, "--from-urls has no --dry-run (nothing is known "
               "before the downloads)");
    for (uint64_t n = u->per_shard - 1; n; n /= 10) j->keyw++;
    return SK_OK;
}

static void stop_threads(job *j)
{
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (int i = 0; i < j->nth; i++) pthread_join(j->th[i], NULL);
    j->nth = 0;
}

static int run(job *j, sk_pack_stats *ps, sk_error *err)
{
    for (;;) {
        SK_GUARD(fill(j, err));
        SK_GUARD(drain(j, err));
        if (j->list_end && j->head == j->tail) break;
        progress(j, 0);
        SK_GUARD(sk_urlfetch_run(j->f, 200, on_fetched, j, err));
    }
    SK_GUARD(end_ours(j, err));
    SK_GUARD(sk_sample_writer_finish(j->w, ps, err));
    j->st.seconds = since(&j->t0);
    j->st.output_bytes = ps->output_bytes;
    progress(j, 1);
    return write_stats(j, ps, err);
}

int sk_pack_urls(const sk_pack_options *po, const sk_urls_options *uo, sk_s3 *s3,
                 sk_urls_stats *st, sk_error *err)
{
    job *j = calloc(1, sizeof *j);
    SK_FAIL_IF(!j, err, SK_E_NOMEM, "out of memory");
    char *colbuf = NULL, ua[400];
    sk_pack_stats ps = {0};
    int rc = sk_options_take(&j->po, sizeof j->po, po, NULL, "sk_pack_options", err);
    if (!rc) rc = sk_options_take(&j->uo, sizeof j->uo, uo, NULL, "sk_urls_options", err);
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    sk_store_env_init(&j->env, s3);
    j->s3 = s3;
    clock_gettime(CLOCK_MONOTONIC, &j->t0);
    j->last = j->t0;
    if (!rc) rc = check(j, err);
    if (!rc) rc = columns(j, &colbuf, err);
    if (!rc) rc = sk_part_output_names(j->po.pattern, j->po.manifest, j->po.part, j->po.parts,
                                       &j->pattern, &j->manifest, err);
    if (!rc) rc = open_list(j, err);
    const char *token = j->uo.user_agent_token;
    if (token && *token) snprintf(ua, sizeof ua, "shardkit/%s (compatible; %.200s)", SK_VERSION, token);
    else snprintf(ua, sizeof ua, "shardkit/%s", SK_VERSION);
    sk_urlfetch_opts fo = {
        .concurrency = j->uo.concurrency, .per_host = j->uo.per_host,
        .max_bytes = j->uo.max_image_bytes, .timeout_ms = (long)(j->uo.timeout * 1000),
        .retries = j->uo.retries, .allow_private = j->uo.allow_private, .user_agent = ua,
        .allow_cidrs = j->uo.allow_addresses,
        .robots_token = token,
        .robots_directives = j->uo.disallowed_header_directives
                                 ? j->uo.disallowed_header_directives
                                 : "noai,noimageai,noindex,noimageindex",
    };
    int want = j->po.jobs > 0 ? j->po.jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (want < 1) want = 1;
    j->cap = 2 * (size_t)j->uo.concurrency + 2 * (size_t)want + 4;
    fo.keep_bodies = (int)j->cap; /* the ring holds at most its cap of bodies */
    /* before any output is made: a CA bundle that cannot be read stops here */
    if (!rc) rc = sk_urlfetch_new(&j->f, &fo, err);
    if (!rc) {
        sk_pack_options wo = j->po;
        wo.pattern = j->pattern;
        wo.manifest = j->manifest;
        wo.parts = wo.part = 0;
        wo.images = NULL;
        wo.max_count = 0;
        wo.progress = NULL;
        rc = sk_sample_writer_open(&j->w, &wo, err);
        if (!rc) sk_sample_writer_manual(j->w);
        if (!rc && j->po.parts) sk_sample_writer_part(j->w, j->po.part, j->po.parts);
        if (!rc && s3) rc = sk_sample_writer_set_s3(j->w, s3, 0, err);
    }
    /* the image stage: its threads, its memory budget, its options */
    j->rowjob.images = j->po.images;
    sk_image_options_init(&j->rowjob.check);
    j->rowjob.has_caption = j->uo.caption_col != NULL;
    if (!rc) {
        const sk_image_options *io = j->po.images;
        uint64_t mem = io && io->memory ? io->memory : sk_image_memory_default();
        rc = sk_image_budget_new(&j->rowjob.budget, mem, err);
        if (io) j->rowjob.check.max_pixels = io->max_pixels;
    }
    j->nth = 0;
    if (!rc) {
        j->ring = calloc(j->cap, sizeof *j->ring);
        j->q = calloc(j->cap, sizeof *j->q);
        j->th = calloc((size_t)want, sizeof *j->th);
        if (!j->ring || !j->q || !j->th) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (int i = 0; !rc && i < want; i++) {
        if (pthread_create(&j->th[i], NULL, worker, j)) {
            rc = sk_error_set(err, SK_E_NOMEM, "cannot start an image thread");
            break;
        }
        j->nth++;
    }
    if (!rc) rc = run(j, &ps, err);
    stop_threads(j);
    if (st) *st = j->st;
    for (size_t i = 0; j->ring && i < j->cap; i++) {
        sk_index_close(j->ring[i].ix);
        sk_url_item_clear(&j->ring[i].it, j->nextra);
    }
    sk_urlfetch_free(j->f);
    sk_sample_writer_close(j->w);
    sk_urllist_close(j->list);
    if (j->seq) j->seq->close(j->seq);
    sk_store_close(j->ls);
    sk_store_env_release(&j->env);
    sk_image_budget_free(j->rowjob.budget);
    sk_buf_free(&j->status);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j->ring);
    free(j->q);
    free(j->th);
    free(j->cols);
    free(colbuf);
    free(j->pattern);
    free(j->manifest);
    free(j);
    return rc;
}
