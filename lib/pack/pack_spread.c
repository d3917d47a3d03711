/*
 * pack_spread.c - spread mode of shardkit pack: every sample's place in its
 * shard comes from the plan, so --jobs threads write batches of any shard
 * with pwritev (pack_pos.c has what the positional writers share).
 */
#include "pack/pack_int.h"
#include "pack/pack_out.h"
#include "io/io.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------- spread mode */

/* Every sample's place in its shard is known from the plan, so any thread
 * can write any stretch of any shard with pwritev.  Shards are cut into
 * batches (up to LOCAL_SLOTS samples and BATCH_BYTES); threads claim
 * batches, each keeping to a shard of its own while unstarted shards
 * remain (two writers of one file contend for its inode lock), then
 * helping with the shard that has most batches left, so no core idles
 * while the last, often smaller, shard is written.  Member CRC32Cs are
 * kept per item; the thread that writes a shard's last batch builds its
 * index in sample order and publishes it.  Used for plain local shards
 * without --on-error skip, where a member can never change the layout. */
struct batch {
    uint64_t pos;   /* first position in p->order */
    uint64_t off;   /* offset in the shard */
    uint64_t bytes; /* planned tar bytes */
    uint32_t count; /* samples */
    uint32_t crc;   /* CRC32C of the bytes, once written */
};

struct spread_shard {
    sk_shard_out out;
    size_t first_batch, next_batch, end_batch, done_batches;
    int begun, finished;
};

struct spread {
    struct batch *b;
    size_t nb;
    struct spread_shard *sh; /* by planned shard */
    uint32_t *item_crc;      /* by catalog item */
    size_t next_new;         /* next shard no thread has begun */
    size_t stop_at;          /* a shard failed: it and later ones are abandoned */
    sk_error err;            /* the failure of shard stop_at */
};

struct spread_worker {
    sk_pack *p;
    struct spread *S;
    struct slot slots[LOCAL_SLOTS];
    struct dir_cache dc;
    struct member_out *m; /* index records being rebuilt */
    size_t mcap;
    struct tally t;
};

/* Records shard i's failure unless an earlier shard failed already (the
 * error of the earliest failing shard is the one reported, as when shards
 * are written in order).  Called with p->mu held. */
static void spread_fail(struct spread *S, size_t i, const sk_error *e, int rc)
{
    if (i >= S->stop_at) return;
    S->stop_at = i;
    S->err = *e;
    if (!S->err.code) S->err.code = rc > 0 ? rc : SK_E_IO;
}

/* The next batch for a thread last on shard *cur, or SIZE_MAX when none is
 * left; begins the output of a shard on its first claim.  p->mu held. */
static size_t spread_claim(sk_pack *p, struct spread *S, size_t *cur)
{
    struct spread_shard *sh = *cur < p->nshards ? &S->sh[*cur] : NULL;
    if (sh && *cur < S->stop_at && sh->next_batch < sh->end_batch) return sh->next_batch++;
    while (S->next_new < p->nshards && S->next_new < S->stop_at) {
        size_t i = S->next_new++;
        sh = &S->sh[i];
        if (p->shards[i].done || sh->first_batch == sh->end_batch) continue;
        char path[4200];
        sk_error e = SK_ERROR_INIT;
        int rc = sk_shard_name(p->o.pattern, p->o.start + i, path, sizeof path, &e);
        if (!rc) rc = sk_shard_out_begin(&sh->out, path, &e);
        if (rc) {
            spread_fail(S, i, &e, rc);
            break;
        }
        sh->begun = 1;
        *cur = i;
        return sh->next_batch++;
    }
    size_t best = SIZE_MAX, left = 0;
    for (size_t i = 0; i < p->nshards && i < S->stop_at; i++) {
        sh = &S->sh[i];
        if (sh->begun && sh->end_batch - sh->next_batch > left) {
            left = sh->end_batch - sh->next_batch;
            best = i;
        }
    }
    if (best == SIZE_MAX) return SIZE_MAX;
    *cur = best;
    return S->sh[best].next_batch++;
}

/* Reads batch b's samples into the worker's slots and writes them at the
 * batch's offset with one pwritev. */
static int spread_batch(struct spread_worker *w, struct batch *b, sk_shard_out *out,
                        sk_error *err)
{
    sk_pack *p = w->p;
    const sk_catalog *c = &p->cat;
    struct iovec iov[LOCAL_SLOTS];
    uint64_t bytes = 0;
    uint32_t crc = 0;
    for (uint32_t k = 0; k < b->count; k++) {
        uint32_t s = p->order[b->pos + k];
        struct slot *sl = &w->slots[k];
        sk_pack_fill_slot(p, sl, s, &w->dc, NULL);
        if (sl->failed) {
            *err = sl->err;
            return err->code ? err->code : SK_E_IO;
        }
        if (sl->stream) /* alone in its batch */
            return sk_pack_stream_sample_at(p, s, out, b->off, b->bytes, w->S->item_crc + c->samples[s],
                                    &b->crc, err);
        size_t first = c->samples[s], n = sk_sample_members(c, s);
        for (size_t i = 0; i < n; i++) w->S->item_crc[first + i] = sl->m[i].crc;
        iov[k].iov_base = sl->buf;
        iov[k].iov_len = sl->len;
        crc = sk_crc32c_combine(crc, sl->crc, sl->len);
        bytes += sl->len;
    }
    SK_FAIL_IF(bytes != b->bytes, err, SK_E_IO, "%s: internal error: batch is not its planned size",
               out->path);
    b->crc = crc;
    return sk_shard_out_pwritev(out, iov, (int)b->count, b->off, bytes, err);
}

/* The samples at positions [first, first + count) are all written to out
 * (bytes in all, CRC32C crc): the shard's index in sample order, from the
 * member sizes and item_crc, then finish (end-of-archive, index file,
 * rename).  m/mcap: the caller's scratch; t: its extension tally. */
static int finish_written_shard(sk_pack *p, uint64_t first, uint64_t count, uint64_t bytes,
                                uint32_t crc, const uint32_t *item_crc, sk_shard_out *out,
                                struct member_out **m, size_t *mcap, struct tally *t,
                                sk_index_shard_info *info, uint64_t *written, sk_error *err)
{
    const sk_catalog *c = &p->cat;
    char name[SK_TAR_NAME_MAX + 1];
    uint64_t off = 0;
    for (uint64_t pos = first; pos < first + count; pos++) {
        uint32_t s = p->order[pos];
        size_t i0 = c->samples[s], k = sk_sample_members(c, s);
        if (k > *mcap) {
            struct member_out *nm = sk_xrealloc(*m, k * sizeof *nm, err);
            if (!nm) return SK_E_NOMEM;
            *m = nm;
            *mcap = k;
        }
        uint64_t rel = 0;
        for (size_t j = 0; j < k; j++) {
            const sk_item *it = &c->items[i0 + j];
            size_t n = sk_item_name(c, it, name);
            size_t hl = sk_tar_header_size(name, n, it->size);
            (*m)[j] = (struct member_out){.data_off = rel + hl, .size = it->size,
                                          .crc = item_crc[i0 + j], .header_len = (uint32_t)hl};
            rel += hl + sk_tar_pad(it->size);
        }
        SK_GUARD(sk_pack_add_index_records(p, out, s, off, *m, t, err));
        off += rel;
    }
    /* files and bytes were counted batch by batch */
    t->files = t->bytes = 0;
    SK_FAIL_IF(off != bytes, err, SK_E_IO, "%s: internal error: shard is not its planned size",
               out->path);
    /* the first 512 bytes are the start of the first member's header */
    unsigned char hdr[SK_TAR_HEADER_MAX];
    const sk_item *it0 = &c->items[c->samples[p->order[first]]];
    size_t n0 = sk_item_name(c, it0, name);
    sk_tar_header(hdr, name, n0, it0->size, p->o.mtime);
    SK_GUARD(sk_shard_out_set_written(out, bytes, crc, sk_crc32c(0, hdr, SK_TAR_BLOCK), err));
    SK_GUARD(sk_shard_out_finish(out, info, err));
    *written = sk_index_builder_samples(out->index);
    return SK_OK;
}

/* Shard i of the plan is fully written. */
static int spread_finish(struct spread_worker *w, size_t i, sk_error *err)
{
    sk_pack *p = w->p;
    struct spread *S = w->S;
    struct shard_plan *sp = &p->shards[i];
    struct spread_shard *sh = &S->sh[i];
    uint64_t bytes = 0;
    uint32_t crc = 0;
    for (size_t k = sh->first_batch; k < sh->end_batch; k++) {
        crc = sk_crc32c_combine(crc, S->b[k].crc, S->b[k].bytes);
        bytes += S->b[k].bytes;
    }
    return finish_written_shard(p, sp->first, sp->count, bytes, crc, S->item_crc, &sh->out, &w->m,
                                &w->mcap, &w->t, &sp->info, &sp->written, err);
}

static void *spread_main(void *arg)
{
    struct spread_worker *w = arg;
    sk_pack *p = w->p;
    struct spread *S = w->S;
    size_t cur = SIZE_MAX;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        size_t bi = spread_claim(p, S, &cur);
        if (bi == SIZE_MAX) break;
        struct spread_shard *sh = &S->sh[cur];
        struct batch *b = &S->b[bi];
        pthread_mutex_unlock(&p->mu);
        sk_error e = SK_ERROR_INIT;
        int rc = spread_batch(w, b, &sh->out, &e);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            spread_fail(S, cur, &e, rc);
            continue;
        }
        for (uint32_t k = 0; k < b->count; k++) {
            uint32_t s = p->order[b->pos + k];
            size_t first = p->cat.samples[s], n = sk_sample_members(&p->cat, s);
            p->st.files_done += n;
            for (size_t j = 0; j < n; j++) p->st.bytes_done += p->cat.items[first + j].size;
        }
        sk_pack_stats snap;
        if (sk_pack_progress_take(p, 0, &snap)) {
            pthread_mutex_unlock(&p->mu);
            sk_pack_progress_report(p, &snap);
            pthread_mutex_lock(&p->mu);
        }
        if (++sh->done_batches < sh->end_batch - sh->first_batch || cur >= S->stop_at) continue;
        pthread_mutex_unlock(&p->mu);
        rc = spread_finish(w, cur, &e);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            spread_fail(S, cur, &e, rc);
            continue;
        }
        sh->finished = 1;
        p->st.output_bytes += p->shards[cur].info.size;
        p->st.shards++; /* live, for progress; recounted with the manifest */
        p->st.samples += w->t.samples;
        w->t.samples = 0;
        sk_shard_out_release(&sh->out); /* its index builder's memory */
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Cuts the shards still to write into batches. */
static int spread_plan(sk_pack *p, struct spread *S, sk_error *err)
{
    size_t cap = 1024;
    S->b = sk_xmalloc(cap * sizeof *S->b, err);
    S->sh = calloc(p->nshards + 1, sizeof *S->sh);
    S->item_crc = sk_xmalloc((p->cat.nitems + 1) * sizeof *S->item_crc, err);
    SK_FAIL_IF(!S->b || !S->sh || !S->item_crc, err, SK_E_NOMEM, "out of memory");
    S->stop_at = SIZE_MAX;
    for (size_t i = 0; i < p->nshards; i++) {
        struct shard_plan *sp = &p->shards[i];
        struct spread_shard *sh = &S->sh[i];
        sh->first_batch = sh->next_batch = S->nb;
        uint64_t pos = sp->first, end = sp->first + (sp->done ? 0 : sp->count), off = 0;
        while (pos < end) {
            if (S->nb == cap) {
                struct batch *nb = sk_xrealloc(S->b, (cap *= 2) * sizeof *nb, err);
                if (!nb) return SK_E_NOMEM;
                S->b = nb;
            }
            struct batch *b = &S->b[S->nb++];
            *b = (struct batch){.pos = pos, .off = off};
            while (pos < end && b->count < LOCAL_SLOTS) {
                uint64_t sb = p->sbytes[p->order[pos]];
                int big = sb + 1 > SLOT_MAX; /* as fill_slot decides */
                if (b->count && (big || b->bytes + sb > BATCH_BYTES)) break;
                b->bytes += sb;
                b->count++;
                pos++;
                if (big) break;
            }
            off += b->bytes;
        }
        sh->end_batch = S->nb;
    }
    return SK_OK;
}

/* Runs --jobs spread workers over every shard still to do. */
int sk_pack_write_spread(sk_pack *p, sk_error *err)
{
    struct spread S = {0};
    size_t n = sk_pack_workers_for(p);
    struct spread_worker *w = calloc(n, sizeof *w);
    pthread_t *th = calloc(n, sizeof *th);
    size_t started = 0;
    int rc = SK_OK;
    if (!w || !th) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (!rc) rc = spread_plan(p, &S, err);
    if (!rc && n > S.nb) n = S.nb ? S.nb : 1;
    for (size_t i = 0; !rc && i < n; i++) {
        w[i].p = p;
        w[i].S = &S;
        w[i].dc.fd = -1;
        w[i].t.exts = sk_manifest_new();
        if (!w[i].t.exts || sk_pack_add_tally(p, w[i].t.exts)) {
            sk_manifest_free(w[i].t.exts);
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        } else if (i + 1 < n && pthread_create(&th[i], NULL, spread_main, &w[i]) != 0) {
            rc = sk_error_set(err, SK_E_NOMEM, "cannot start writer thread: %s", strerror(errno));
        } else if (i + 1 < n) {
            started++;
        }
    }
    if (!rc) spread_main(&w[n - 1]); /* the calling thread is the last worker */
    if (rc) {
        pthread_mutex_lock(&p->mu);
        S.stop_at = 0;
        pthread_mutex_unlock(&p->mu);
    }
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (size_t i = 0; w && i < n; i++) {
        sk_pack_slots_release(w[i].slots, LOCAL_SLOTS);
        free(w[i].m);
        sk_pack_dir_cache_release(&w[i].dc, &p->cat);
    }
    for (size_t i = 0; S.sh && i < p->nshards; i++) {
        if (S.sh[i].begun && !S.sh[i].finished) sk_shard_out_abort(&S.sh[i].out);
        sk_shard_out_release(&S.sh[i].out);
    }
    if (!rc && S.stop_at != SIZE_MAX) {
        if (err) *err = S.err;
        rc = S.err.code;
    }
    free(S.b);
    free(S.sh);
    free(S.item_crc);
    free(w);
    free(th);
    return rc;
}

