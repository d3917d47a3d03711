/*
 * reader_state.c - where a reader is, to continue after a restart: the
 * stream mode's state (a slot's shard and sample, the shuffle buffer's
 * history replayed from sample counts alone) and the global order's
 * position (a count of the epoch's sequence, for any world size:
 * reader_global.c).
 */
#include "reader/reader_int.h"
#include "core/rng.h"

#include <stdlib.h>

void sk_reader_get_state(const sk_reader *r, sk_reader_state *st)
{
    memset(st, 0, sizeof *st);
    st->magic = SK_READER_STATE_MAGIC;
    st->version = 1;
    st->slot = r->slot;
    st->slots = r->slots;
    st->shards = r->nsh;
    st->seed = r->o.seed;
    st->epoch = r->epoch;
    st->shuffle_shards = (uint64_t)r->o.shuffle_shards;
    st->shuffle_buffer = r->o.shuffle_buffer;
    st->yielded = r->yielded;
    st->shard_pos = r->pos;
    st->ordinal = r->pos < r->norder ? r->cur.ordinal : 0;
}

/* A sample of the replay: which shard of the order, which ordinal. */
struct ref {
    size_t p;
    uint64_t k;
};

struct replay {
    sk_reader *r;
    size_t p;
    uint64_t k, count; /* count of order[p], when p < norder */
    int counted;
};

static int replay_input(struct replay *rp, struct ref *out, int *got, sk_error *err)
{
    *got = 0;
    while (rp->p < rp->r->norder) {
        if (!rp->counted) {
            SK_GUARD(sk_reader_count_samples(rp->r, rp->r->order[rp->p], &rp->count, err));
            rp->counted = 1;
        }
        if (rp->k < rp->count) {
            out->p = rp->p;
            out->k = rp->k++;
            *got = 1;
            return SK_OK;
        }
        rp->p++;
        rp->k = 0;
        rp->counted = 0;
    }
    return SK_OK;
}

/* Reads sample k of shard s into an owned copy. */
static int read_one(sk_reader *r, size_t s, uint64_t k, struct owned **out, sk_error *err)
{
    struct cursor c = {0};
    int got = 0, rc = sk_reader_cursor_at(r, &c, s, k, NULL, err);
    if (!rc) rc = sk_reader_cursor_next(&c, &got, err);
    if (!rc && !got)
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: has no sample %llu (the saved state says so)",
                          r->sh[s].url, (unsigned long long)k);
    if (!rc && !(*out = sk_reader_own(&c.view, err))) rc = SK_E_NOMEM;
    sk_reader_cursor_free(&c);
    return rc;
}

int sk_reader_restore(sk_reader *r, const sk_reader_state *st, sk_error *err)
{
    SK_FAIL_IF(r->g, err, SK_E_USAGE, "a reader in the global order resumes from its position "
               "(sk_reader_get_position, sk_reader_seek), not from a stream state");
    SK_FAIL_IF(st->magic != SK_READER_STATE_MAGIC || st->version != 1, err, SK_E_USAGE,
               "not a reader state (magic %08x, version %u)", st->magic, st->version);
    SK_FAIL_IF(st->slot != r->slot || st->slots != r->slots || st->shards != r->nsh ||
                   st->seed != r->o.seed || st->shuffle_shards != (uint64_t)r->o.shuffle_shards ||
                   st->shuffle_buffer != r->o.shuffle_buffer,
               err, SK_E_MISMATCH,
               "the saved reader state belongs to another run (slot %u/%u, %llu shards, seed "
               "%llu, shuffle %llu/%llu; this reader: slot %u/%u, %zu shards, seed %llu, "
               "shuffle %d/%zu)",
               st->slot, st->slots, (unsigned long long)st->shards, (unsigned long long)st->seed,
               (unsigned long long)st->shuffle_shards, (unsigned long long)st->shuffle_buffer,
               r->slot, r->slots, r->nsh, (unsigned long long)r->o.seed, r->o.shuffle_shards,
               r->o.shuffle_buffer);
    SK_GUARD(sk_reader_plan_epoch(r, st->epoch, err));
    size_t p = (size_t)st->shard_pos;
    uint64_t k = st->ordinal;
    int rc = SK_OK;
    if (r->o.shuffle_buffer > 1) {
        /* Replay the buffer from sample identities alone. */
        size_t K = r->o.shuffle_buffer;
        struct ref *b = sk_xmalloc(K * sizeof *b, err);
        if (!b) return SK_E_NOMEM;
        size_t nb = 0;
        struct replay rp = {.r = r};
        for (uint64_t y = 0; !rc && y < st->yielded; y++) {
            int got = 1;
            while (!rc && nb < K && got && (rc = replay_input(&rp, &b[nb], &got, err)) == 0)
                nb += (size_t)got;
            if (rc) break;
            if (nb == 0) {
                rc = sk_error_set(err, SK_E_MISMATCH,
                                  "the saved state has %llu samples returned, more than the "
                                  "slot's shards hold",
                                  (unsigned long long)st->yielded);
                break;
            }
            size_t j = (size_t)(sk_splitmix64(&r->rng) % nb);
            b[j] = b[--nb];
        }
        if (!rc && (rp.p != p || (p < r->norder && rp.k != k)))
            rc = sk_error_set(err, SK_E_MISMATCH,
                              "the saved state (shard %zu, sample %llu) disagrees with the "
                              "replay from the shards' sample counts (shard %zu, sample %llu): "
                              "were the shards changed?",
                              p, (unsigned long long)k, rp.p, (unsigned long long)rp.k);
        if (!rc && !(r->buf = r->buf ? r->buf : sk_xmalloc(K * sizeof *r->buf, err)))
            rc = SK_E_NOMEM;
        for (size_t i = 0; !rc && i < nb; i++) {
            struct owned *o;
            rc = read_one(r, r->order[b[i].p], b[i].k, &o, err);
            if (!rc) r->buf[r->nbuf++] = o;
        }
        free(b);
    }
    if (!rc) rc = sk_reader_reposition(r, p, k, err);
    if (rc) {
        sk_reader_close_streams(r);
        return rc;
    }
    r->yielded = st->yielded;
    return SK_OK;
}

/* ------------------------------------------------- global order: position */

int sk_reader_get_position(const sk_reader *r, sk_reader_position *p, sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    sk_gread_position(r->g, 0, 0, p);
    return SK_OK;
}

int sk_reader_position_at(const sk_reader *r, uint64_t rank_samples, sk_reader_position *p,
                          sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    sk_gread_position(r->g, 1, rank_samples, p);
    return SK_OK;
}

int sk_reader_seek(sk_reader *r, const sk_reader_position *p, sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    r->failed = 0;
    return sk_gread_seek(r->g, p, err);
}

uint64_t sk_reader_epoch_samples(const sk_reader *r)
{
    return r->g ? sk_gread_epoch_samples(r->g) : 0;
}

uint64_t sk_reader_slot_left(const sk_reader *r)
{
    return r->g ? sk_gread_slot_left(r->g) : 0;
}

uint64_t sk_reader_global_reads(const sk_reader *r)
{
    return r->g ? sk_gread_reads(r->g) : 0;
}
