/*
 * pack_stream.c - stream mode of shardkit pack: directories walked in key
 * order a window at a time, each sample's size taken as its files open,
 * its offset in its shard known from the sizes before it, so --jobs
 * threads write with pwritev as in spread mode (pack_pos.c has what the
 * positional writers share) and memory does not grow with the files.
 */
#include "pack/pack_int.h"
#include "pack/pack_out.h"
#include "io/io.h"
#include "format/tar.h"
#include "io/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------- stream mode */

/* Without --resume nothing needs shard boundaries before writing starts,
 * so walked files get no sizing pass of their own (an fstatat each, with
 * a path lookup, a sixth of the run on a tree of small files).  A worker
 * claims the next samples, opens their files and takes each size from
 * fstat on the descriptor; then, in claim order, it places them: the
 * rollover rule of plan() gives each sample its shard and offset, and its
 * index records go into the shard's index then, in order (their CRC32Cs
 * are filled in once the bytes are read).  Then it reads and writes them
 * at those offsets as spread mode does, and the thread that completes a
 * shard combines its samples' CRCs and publishes it.  A failure stops
 * placement at the failing position (or the first sample of the failing
 * shard): shards before it are still completed, as when shards are
 * written in order.  Same conditions as spread mode, plus no --resume.
 *
 * Nothing is kept per position of the whole run, so when the inputs are
 * directories walked in key order a window at a time (p->windowed), the
 * memory is a window of the catalog, the open shards' indexes and the
 * walk's directory levels, whatever the number of files: the workers run
 * over one window, then the next is walked, and a shard goes on across
 * windows. */
#define STREAM_BATCH 32 /* samples claimed at once */
#define STREAM_FDS 64   /* files a worker holds open from sizing to reading */
#define WINDOW_ITEMS (8u << 10) /* files walked into the catalog at once */

struct stream_shard {
    sk_shard_out out;
    uint64_t first, count; /* positions; count final once closed */
    uint64_t bytes;        /* tar bytes placed so far */
    uint64_t written;      /* samples written */
    int closed, finished;
    uint32_t first_block_crc; /* CRC32C of the first 512 bytes (first header) */
    uint32_t *scrc;        /* by sample of the shard: CRC32C of its tar bytes */
    size_t scap;
    sk_index_shard_info info;
    uint64_t index_samples;
    sk_key_range range;
};

struct stream {
    uint64_t base;           /* position of the catalog's sample 0 (windowed runs) */
    uint64_t n;              /* positions up to the catalog's end */
    int final;               /* no samples after the catalog's: the last shard closes */
    uint64_t next_claim, placed;
    uint64_t stop_pos;       /* after a failure: positions from here are not written */
    sk_error err;            /* that failure */
    struct stream_shard *cur; /* open for placement */
    struct stream_shard **sh;
    size_t nsh, capsh;
    size_t ocap, bcap;       /* of p->order and p->sbytes, windowed */
    uint64_t files_seen;     /* files of the windows walked so far */
    pthread_cond_t turn;     /* placed moved on */
};

struct stream_worker {
    sk_pack *p;
    struct stream *T;
    struct slot slots[LOCAL_SLOTS];
    struct dir_cache dc;
    int *fds;                /* the batch's members: descriptor or -1 */
    size_t nf, fcap;
    size_t fd_budget;        /* held open at most: STREAM_FDS, less under ulimit -n */
    struct member_out *m;
    size_t mcap;
    uint32_t *mcrc;          /* a big sample's member CRCs */
    size_t mcrc_cap;
    /* by sample of the claimed batch: its number in its shard and its first
     * member record in the shard's index */
    uint64_t sidx[STREAM_BATCH], midx[STREAM_BATCH];
    /* by filled slot: its sample and its place in the batch */
    uint32_t slot_s[LOCAL_SLOTS], slot_q[LOCAL_SLOTS];
    int prefetch;            /* the last batch's reads waited for the disk */
    struct tally t;
};

static inline uint32_t sample_at(const sk_pack *p, const struct stream *T, uint64_t pos)
{
    return p->order[pos - T->base];
}

/* Failure at position pos; p->mu held. */
static void stream_fail(struct stream *T, uint64_t pos, const sk_error *e, int rc)
{
    if (pos >= T->stop_pos) return;
    T->stop_pos = pos;
    T->err = *e;
    if (!T->err.code) T->err.code = rc > 0 ? rc : SK_E_IO;
}

/* Opens the members of samples [pos, pos + k) (up to fd_budget files) and
 * sizes the walked ones from their descriptors.  Returns how many samples
 * are ready; fewer than k after a failure (recorded at the failing one). */
static uint64_t stream_size(struct stream_worker *w, uint64_t pos, uint64_t k, size_t *fbase)
{
    sk_pack *p = w->p;
    sk_catalog *c = &p->cat;
    size_t opened = 0;
    size_t *nfp = &w->nf, nf = 0;
    char name[SK_TAR_NAME_MAX + 1];
    *nfp = 0;
    for (uint64_t q = 0; q < k; q++) {
        uint32_t s = sample_at(p, w->T, pos + q);
        size_t first = c->samples[s], km = sk_sample_members(c, s);
        fbase[q] = nf;
        sk_error grow_err;
        if (sk_grow((void **)&w->fds, &w->fcap, nf + km, sizeof *w->fds, &grow_err)) {
            pthread_mutex_lock(&p->mu);
            stream_fail(w->T, pos + q, &grow_err, SK_E_NOMEM);
            pthread_mutex_unlock(&p->mu);
            return q;
        }
        for (size_t j = 0; j < km; j++) {
            sk_item *it = &c->items[first + j];
            const sk_source *src = &c->srcs[it->src];
            int unsized = (it->flags & SK_ITEM_UNSIZED) != 0, fd = -1, e = 0;
            struct stat st;
            w->fds[nf++] = -1;
            *nfp = nf;
            if (src->is_spool) continue; /* sized when spooled */
            if (opened < w->fd_budget || unsized) {
                int dfd = sk_pack_member_dirfd(c, it, &w->dc);
                if (dfd < 0) {
                    e = errno;
                } else if (opened < w->fd_budget) {
                    /* a walked entry must still be the regular file it was */
                    fd = sk_pack_open_at(dfd, c->arena + it->base,
                                         unsized ? O_NOFOLLOW | O_NONBLOCK : 0);
                    if (fd < 0 && (errno == EMFILE || errno == ENFILE))
                        opened = w->fd_budget; /* out of descriptors: open it when read */
                    else if (fd < 0) e = errno;
                    else if (unsized && fstat(fd, &st) != 0) e = errno;
                    /* from a cold cache: every file of the batch is read from
                     * the disk at once instead of one after the other */
                    else if (w->prefetch && unsized && st.st_size > 0)
                        posix_fadvise(fd, 0, st.st_size, POSIX_FADV_WILLNEED);
                    if (fd >= 0) w->fds[nf - 1] = fd, opened++;
                }
                if (dfd >= 0 && fd < 0 && !e && unsized &&
                    fstatat(dfd, c->arena + it->base, &st, AT_SYMLINK_NOFOLLOW) != 0)
                    e = errno;
                if (!e && unsized && !S_ISREG(st.st_mode)) e = EINVAL;
                if (!e && unsized) {
                    it->size = (uint64_t)st.st_size;
                    it->flags &= ~SK_ITEM_UNSIZED;
                }
            }
            if (e) {
                sk_error err;
                sk_item_name(c, it, name);
                sk_error_set(&err, e == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s/%s: %s%s",
                             src->label, name, e == ELOOP || e == EINVAL ? "" : "cannot open: ",
                             e == ENOENT ? "file vanished since it was listed"
                             : e == ELOOP || e == EINVAL ? "no longer a regular file"
                                                         : strerror(e));
                pthread_mutex_lock(&p->mu);
                stream_fail(w->T, pos + q, &err, err.code);
                pthread_mutex_unlock(&p->mu);
                return q;
            }
        }
        p->sbytes[s] = sk_pack_sample_bytes(c, s);
    }
    return k;
}

/* Sample s placed at off in sh: its index records, CRC32Cs to come, and
 * where they are (*sidx: its number in sh, *midx: its first member's
 * record).  p->mu held. */
static int place_records(struct stream_worker *w, struct stream_shard *sh, uint32_t s,
                         uint64_t off, uint64_t *sidx, uint64_t *midx, sk_error *err)
{
    sk_pack *p = w->p;
    const sk_catalog *c = &p->cat;
    size_t i0 = c->samples[s], k = sk_sample_members(c, s);
    char name[SK_TAR_NAME_MAX + 1];
    SK_GUARD(sk_grow((void **)&w->m, &w->mcap, k, sizeof *w->m, err));
    SK_GUARD(sk_grow((void **)&sh->scrc, &sh->scap, sh->count + 1, sizeof *sh->scrc, err));
    uint64_t rel = 0;
    for (size_t j = 0; j < k; j++) {
        const sk_item *it = &c->items[i0 + j];
        size_t n = sk_item_name(c, it, name);
        size_t hl = sk_tar_header_size(name, n, it->size);
        if (!sh->count && !j) { /* the shard's first 512 bytes */
            unsigned char hdr[SK_TAR_HEADER_MAX];
            sk_tar_header(hdr, name, n, it->size, p->o.mtime);
            sh->first_block_crc = sk_crc32c(0, hdr, SK_TAR_BLOCK);
        }
        w->m[j] = (struct member_out){.data_off = rel + hl, .size = it->size,
                                      .header_len = (uint32_t)hl};
        rel += hl + sk_tar_pad(it->size);
    }
    SK_FAIL_IF(rel != p->sbytes[s], err, SK_E_IO,
               "%s: internal error: sample of %s is not its planned size", sh->out.path, name);
    *sidx = sh->count;
    *midx = sk_index_builder_members(sh->out.index);
    SK_GUARD(sk_pack_add_index_records(p, &sh->out, s, off, w->m, &w->t, err));
    w->t.files = w->t.bytes = w->t.samples = 0; /* counted as written */
    return SK_OK;
}

/* Places samples [pos, pos + k) when their turn comes: each gets its shard
 * and offset, and its index records.  Shards closed here with nothing left
 * to write are returned in done[] for the caller to finish.  p->mu held. */
static void stream_place(struct stream_worker *w, uint64_t pos, uint64_t k,
                         struct stream_shard **where, uint64_t *offs, struct stream_shard **done,
                         int *ndone)
{
    sk_pack *p = w->p;
    struct stream *T = w->T;
    const uint64_t eoa = 2 * SK_TAR_BLOCK;
    uint64_t lim = pos + k < T->stop_pos ? pos + k : T->stop_pos;
    for (uint64_t q = pos; q < lim; q++) {
        uint32_t s = sample_at(p, T, q);
        uint64_t b = p->sbytes[s];
        struct stream_shard *cur = T->cur;
        if (cur && sk_pack_rolls(&p->o, cur->bytes, cur->count, b)) {
            cur->closed = 1;
            if (cur->written == cur->count) cur->finished = 1, done[(*ndone)++] = cur;
            T->cur = cur = NULL;
        }
        if (!cur) {
            char path[4200];
            sk_error e = SK_ERROR_INIT;
            int rc = SK_OK;
            rc = sk_grow((void **)&T->sh, &T->capsh, T->nsh + 1, sizeof *T->sh, &e);
            if (!rc && !(cur = calloc(1, sizeof *cur))) rc = sk_error_set(&e, SK_E_NOMEM, "out of memory");
            if (!rc) {
                T->sh[T->nsh++] = cur;
                cur->first = q;
                rc = sk_shard_name(p->o.pattern, p->o.start + T->nsh - 1, path, sizeof path, &e);
            }
            if (!rc) rc = sk_shard_out_begin(&cur->out, path, &e);
            if (rc) {
                stream_fail(T, q, &e, rc);
                break;
            }
            T->cur = cur;
        }
        if (b + eoa > p->o.max_size) {
            char name[SK_TAR_NAME_MAX + 1];
            sk_item_name(&p->cat, &p->cat.items[p->cat.samples[s]], name);
            sk_pack_warn_oversized(&p->o, name, b);
        }
        sk_error e = SK_ERROR_INIT;
        int rc = place_records(w, cur, s, cur->bytes, &w->sidx[q - pos], &w->midx[q - pos], &e);
        if (rc) {
            stream_fail(T, q, &e, rc);
            break;
        }
        where[q - pos] = cur;
        offs[q - pos] = cur->bytes;
        cur->bytes += b;
        cur->count++;
    }
    T->placed = pos + k;
    if (T->placed == T->n && T->final && T->stop_pos == UINT64_MAX && T->cur) { /* the last shard */
        T->cur->closed = 1;
        if (T->cur->written == T->cur->count) T->cur->finished = 1, done[(*ndone)++] = T->cur;
        T->cur = NULL;
    }
    pthread_cond_broadcast(&T->turn);
}

/* A closed shard with every sample written: checksums from its samples',
 * its key range, then the index file and publish. */
static void stream_finish(struct stream_worker *w, struct stream_shard *sh)
{
    sk_pack *p = w->p;
    struct stream *T = w->T;
    sk_shard_out *out = &sh->out;
    sk_error e = SK_ERROR_INIT;
    uint32_t crc = 0;
    uint64_t total = 0;
    for (uint64_t i = 0; i < sh->count; i++) {
        uint64_t off, span;
        sk_index_builder_range(out->index, i, &off, &span);
        crc = sk_crc32c_combine(crc, sh->scrc[i], span);
        total += span;
    }
    int rc = SK_OK;
    if (total != sh->bytes)
        rc = sk_error_set(&e, SK_E_IO, "%s: internal error: shard is not its planned size", out->path);
    if (!rc) rc = sk_index_builder_key_range(out->index, &sh->range, &e);
    if (!rc) rc = sk_shard_out_set_written(out, sh->bytes, crc, sh->first_block_crc, &e);
    if (!rc) rc = sk_shard_out_finish(out, &sh->info, &e);
    if (!rc) sh->index_samples = sk_index_builder_samples(out->index);
    free(sh->scrc);
    sh->scrc = NULL;
    sh->scap = 0;
    pthread_mutex_lock(&p->mu);
    if (rc) {
        sh->finished = 0; /* aborted with the others */
        stream_fail(T, sh->first, &e, rc);
    } else {
        p->st.output_bytes += sh->info.size;
        p->st.samples += sh->index_samples;
        p->st.shards++; /* live, for progress; recounted with the manifest */
        sk_shard_out_release(out); /* its index builder's memory */
    }
    pthread_mutex_unlock(&p->mu);
}

/* Writes n filled slots (n samples, files and data bytes of input) at off
 * in sh, then records their CRCs and counts them written; finishes sh if
 * that completes it.  n = 0: only the counts (a big sample written on its
 * own, its CRCs recorded by the caller). */
static int stream_flush(struct stream_worker *w, struct stream_shard *sh, struct iovec *iov,
                        int n, uint64_t off, uint64_t bytes, uint64_t files, uint64_t data)
{
    sk_pack *p = w->p;
    const sk_catalog *c = &p->cat;
    sk_error e = SK_ERROR_INIT;
    int rc = n ? sk_shard_out_pwritev(&sh->out, iov, n, off, bytes, &e) : SK_OK;
    sk_pack_stats snap;
    pthread_mutex_lock(&p->mu);
    int fin = 0, due = 0;
    if (rc) {
        stream_fail(w->T, sh->first, &e, rc);
    } else {
        for (int i = 0; i < n; i++) {
            const struct slot *sl = &w->slots[i];
            uint32_t q = w->slot_q[i];
            size_t km = sk_sample_members(c, w->slot_s[i]);
            for (size_t j = 0; j < km; j++)
                sk_index_builder_set_crc(sh->out.index, w->midx[q] + j, sl->m[j].crc);
            sh->scrc[w->sidx[q]] = sl->crc;
        }
        sh->written += (uint64_t)n;
        p->st.files_done += files;
        p->st.bytes_done += data;
        /* sizes are learned as files open: bytes_total stays 0 (unknown)
         * until the end, rather than an estimate that moves */
        due = sk_pack_progress_take(p, 0, &snap);
        if (sh->closed && sh->written == sh->count && sh->first < w->T->stop_pos && !sh->finished)
            fin = sh->finished = 1;
    }
    pthread_mutex_unlock(&p->mu);
    if (due) sk_pack_progress_report(p, &snap);
    if (fin) stream_finish(w, sh);
    return rc;
}

/* Reads and writes the placed samples [pos, pos + k). */
static void stream_write(struct stream_worker *w, uint64_t pos, uint64_t k,
                         struct stream_shard **where, const uint64_t *offs, const size_t *fbase)
{
    sk_pack *p = w->p;
    const sk_catalog *c = &p->cat;
    struct stream *T = w->T;
    struct iovec iov[LOCAL_SLOTS];
    struct stream_shard *seg = NULL;
    uint64_t seg_off = 0, bytes = 0, files = 0, data = 0;
    int n = 0;
    for (uint64_t q = 0; q < k; q++) {
        uint32_t s = sample_at(p, T, pos + q);
        struct stream_shard *sh = where[q];
        if (n && (sh != seg || n == LOCAL_SLOTS || bytes >= BATCH_BYTES)) {
            if (stream_flush(w, seg, iov, n, seg_off, bytes, files, data)) return;
            n = 0, bytes = files = data = 0;
        }
        struct slot *sl = &w->slots[n];
        sk_pack_fill_slot(p, sl, s, &w->dc, w->fds + fbase[q]);
        size_t first = c->samples[s], km = sk_sample_members(c, s);
        if (sl->failed) {
            pthread_mutex_lock(&p->mu);
            stream_fail(T, sh->first, &sl->err, sl->err.code);
            pthread_mutex_unlock(&p->mu);
            return;
        }
        uint64_t sdata = 0;
        for (size_t j = 0; j < km; j++) sdata += c->items[first + j].size;
        if (sl->stream) { /* too big for a slot: written on its own */
            if (n && stream_flush(w, seg, iov, n, seg_off, bytes, files, data)) return;
            n = 0, bytes = files = data = 0;
            for (size_t j = 0; j < km; j++) /* opened by name as it goes */
                if (w->fds[fbase[q] + j] >= 0) close(w->fds[fbase[q] + j]), w->fds[fbase[q] + j] = -1;
            sk_error e = SK_ERROR_INIT;
            uint32_t scrc = 0;
            int rc = sk_grow((void **)&w->mcrc, &w->mcrc_cap, km, sizeof *w->mcrc, &e);
            if (!rc) rc = sk_pack_stream_sample_at(p, s, &sh->out, offs[q], p->sbytes[s], w->mcrc, &scrc, &e);
            pthread_mutex_lock(&p->mu);
            if (rc) {
                stream_fail(T, sh->first, &e, rc);
                pthread_mutex_unlock(&p->mu);
                return;
            }
            for (size_t j = 0; j < km; j++)
                sk_index_builder_set_crc(sh->out.index, w->midx[q] + j, w->mcrc[j]);
            sh->scrc[w->sidx[q]] = scrc;
            pthread_mutex_unlock(&p->mu);
            if (stream_flush(w, sh, iov, 0, 0, 0, km, sdata)) return;
            pthread_mutex_lock(&p->mu); /* the flush above counted no samples */
            int fin = 0;
            if (++sh->written == sh->count && sh->closed && sh->first < T->stop_pos && !sh->finished)
                fin = sh->finished = 1;
            pthread_mutex_unlock(&p->mu);
            if (fin) stream_finish(w, sh);
            continue;
        }
        if (!n) seg = sh, seg_off = offs[q];
        w->slot_s[n] = s;
        w->slot_q[n] = (uint32_t)q;
        iov[n].iov_base = sl->buf;
        iov[n].iov_len = sl->len;
        n++;
        bytes += sl->len;
        files += km;
        data += sdata;
    }
    if (n) stream_flush(w, seg, iov, n, seg_off, bytes, files, data);
}

static void *stream_main(void *arg)
{
    struct stream_worker *w = arg;
    sk_pack *p = w->p;
    const sk_catalog *c = &p->cat;
    struct stream *T = w->T;
    size_t fbase[STREAM_BATCH];
    struct stream_shard *where[STREAM_BATCH], *done[STREAM_BATCH + 1];
    uint64_t offs[STREAM_BATCH];
    pthread_mutex_lock(&p->mu);
    for (;;) {
        uint64_t pos = T->next_claim, k = 0;
        size_t members = 0;
        while (pos + k < T->n && pos + k < T->stop_pos && k < STREAM_BATCH) {
            size_t km = sk_sample_members(c, sample_at(p, T, pos + k));
            if (k && members + km > STREAM_FDS) break;
            members += km;
            k++;
        }
        if (!k) break;
        T->next_claim = pos + k;
        pthread_mutex_unlock(&p->mu);
        uint64_t ready = stream_size(w, pos, k, fbase);
        pthread_mutex_lock(&p->mu);
        while (T->placed != pos) pthread_cond_wait(&T->turn, &p->mu);
        int ndone = 0;
        /* after a failure at pos + ready, stop_pos is at most that */
        stream_place(w, pos, k, where, offs, done, &ndone);
        uint64_t lim = T->stop_pos > pos ? T->stop_pos - pos : 0;
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < ndone; i++) stream_finish(w, done[i]);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        stream_write(w, pos, ready < lim ? ready : lim, where, offs, fbase);
        /* files read from the page cache take microseconds each; far
         * slower means the disk: ask for the next batch's files ahead */
        w->prefetch = w->nf && sk_pack_since(&t0) > 100e-6 * (double)w->nf;
        for (size_t i = 0; i < w->nf; i++) /* what was not read */
            if (w->fds[i] >= 0) close(w->fds[i]), w->fds[i] = -1;
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* The next window of a windowed run into p->cat, grouped and cut to this
 * --part; *more = 0 once the walk is done. */
static int next_window(sk_pack *p, struct stream *T, int *more, sk_error *err)
{
    sk_catalog *c = &p->cat;
    SK_GUARD(sk_catalog_next_window(c, WINDOW_ITEMS, err));
    *more = c->nitems > 0;
    SK_GUARD(sk_catalog_group(c, err));
    if (p->o.parts > 0) SK_GUARD(sk_part_filter(c, p->o.part, p->o.parts, err));
    SK_GUARD(sk_grow((void **)&p->order, &T->ocap, c->nsamples + 1, sizeof *p->order, err));
    SK_GUARD(sk_grow((void **)&p->sbytes, &T->bcap, c->nsamples + 1, sizeof *p->sbytes, err));
    for (size_t i = 0; i < c->nsamples; i++) p->order[i] = (uint32_t)i;
    /* the total is known once the walk is: until then 0 (unknown), never
     * a count that grows window by window */
    T->files_seen += c->nitems;
    if (c->walk_done) p->st.files_total = T->files_seen;
    return SK_OK;
}

/* Runs n stream workers over the catalog's positions (the calling thread
 * is the last; one that cannot start leaves its share to the others). */
static void stream_run(sk_pack *p, struct stream_worker *w, size_t n, pthread_t *th)
{
    size_t started = 0;
    while (started + 1 < n && pthread_create(&th[started], NULL, stream_main, &w[started]) == 0)
        started++;
    stream_main(&w[n - 1]);
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (size_t i = 0; i < n; i++) /* a window's directory ids are its own */
        sk_pack_dir_cache_release(&w[i].dc, &p->cat);
}

/* Runs --jobs stream workers over the whole order (window by window when
 * p->windowed); fills p->shards. */
int sk_pack_write_stream(sk_pack *p, sk_error *err)
{
    struct stream T = {0};
    size_t n = sk_pack_workers_for(p);
    struct stream_worker *w = calloc(n, sizeof *w);
    pthread_t *th = calloc(n, sizeof *th);
    int rc = SK_OK;
    /* descriptors held between sizing and reading stay well inside the limit */
    struct rlimit rl;
    size_t budget = STREAM_FDS;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        size_t spare = rl.rlim_cur > 64 ? (size_t)(rl.rlim_cur - 64) / (2 * n) : 0;
        if (spare < budget) budget = spare;
    }
    T.stop_pos = UINT64_MAX;
    T.final = !p->windowed;
    if (p->windowed) { /* plan() sized them for an empty catalog */
        free(p->order), free(p->sbytes);
        p->order = NULL, p->sbytes = NULL;
        p->st.files_total = 0;
    }
    pthread_cond_init(&T.turn, NULL);
    if (!w || !th) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        w[i].p = p;
        w[i].T = &T;
        w[i].dc.fd = -1;
        w[i].fd_budget = budget;
        w[i].t.exts = sk_manifest_new();
        if (!w[i].t.exts || sk_pack_add_tally(p, w[i].t.exts)) {
            sk_manifest_free(w[i].t.exts);
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        }
    }
    for (int more = 1; !rc && more;) {
        if (p->windowed) {
            if ((rc = next_window(p, &T, &more, err)) || !more) break;
        } else {
            more = 0;
        }
        T.n = T.base + p->cat.nsamples;
        stream_run(p, w, n, th);
        if (T.stop_pos != UINT64_MAX) break;
        T.base = T.n;
    }
    /* a windowed run's last shard closes when the walk is done */
    if (!rc && T.stop_pos == UINT64_MAX && T.cur) {
        struct stream_shard *sh = T.cur;
        sh->closed = 1;
        T.cur = NULL;
        if (sh->written == sh->count) {
            sh->finished = 1;
            stream_finish(&w[n - 1], sh);
        }
    }
    for (size_t i = 0; w && i < n; i++) {
        sk_pack_slots_release(w[i].slots, LOCAL_SLOTS);
        free(w[i].m);
        free(w[i].mcrc);
        free(w[i].fds);
        sk_pack_dir_cache_release(&w[i].dc, &p->cat);
    }
    if (!rc && T.stop_pos != UINT64_MAX) {
        if (err) *err = T.err;
        rc = T.err.code;
    }
    /* the plan as it came out, for the manifest */
    free(p->shards);
    p->shards = rc ? NULL : calloc(T.nsh + 1, sizeof *p->shards);
    if (!rc && !p->shards) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    p->nshards = rc ? 0 : T.nsh;
    for (size_t i = 0; i < T.nsh; i++) {
        struct stream_shard *sh = T.sh[i];
        if (!rc) {
            p->shards[i] = (struct shard_plan){.first = sh->first, .count = sh->count,
                                               .bytes = sh->bytes + 2 * SK_TAR_BLOCK,
                                               .written = sh->index_samples, .info = sh->info,
                                               .range = sh->range};
            sh->range = (sk_key_range){0};
        }
        if (!sh->finished) sk_shard_out_abort(&sh->out);
        sk_shard_out_release(&sh->out);
        sk_key_range_free(&sh->range);
        free(sh->scrc);
        free(sh);
    }
    pthread_cond_destroy(&T.turn);
    free(T.sh);
    free(w);
    free(th);
    return rc;
}

/* Stream mode's conditions (see there): spread mode's, plus no --resume
 * (which needs the plan before writing).  --jobs 1 too: one worker, the
 * calling thread, and no thread started. */
int sk_pack_stream_eligible(const sk_pack *p)
{
    if (p->o.skip_errors || p->o.compress_level || p->o.resume ||
        !sk_sink_positional(p->o.pattern) || sk_pack_one_stream(p))
        return 0;
    for (size_t i = 0; i < p->cat.nsrcs; i++)
        if (p->cat.srcs[i].remote) return 0;
    return 1;
}
