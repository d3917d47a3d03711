/*
 * order.c - the global sample order of an epoch and its split across
 * slots (order.h).  Every draw comes from core/rng.c, derived from the
 * user's seed with a tag per use, so the order is the same on every
 * machine, in every release that keeps rng.c, whatever the world size.
 */
#include "reader/order.h"
#include "core/rng.h"

#include <stdlib.h>

/* rng streams of one epoch: the shard permutation, and one per window */
#define TAG_SHARDS 0x5348415244530000ull /* "SHARDS" */
#define TAG_WINDOW 0x57494e0000000000ull /* "WIN" + window number */

static void fisher_yates(size_t *a, size_t n, uint64_t *rng)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)sk_uniform_below(rng, i), t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}

/* A unit's place in the mixed order: the middle of its samples in its
 * stream's sequence, as a fraction num / den of the stream's samples. */
struct place {
    size_t unit, stream, at; /* at: its place in the shuffle */
    uint64_t num, den; /* 2 * samples before it + its samples, 2 * the stream's */
};

static int by_place(const void *a, const void *b)
{
    const struct place *x = a, *y = b;
    unsigned __int128 l = (unsigned __int128)x->num * y->den, r = (unsigned __int128)y->num * x->den;
    if (l != r) return l < r ? -1 : 1;
    if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at; /* one stream: its shuffled order */
}

/* Orders the shuffled units (perm) so that every prefix holds each stream
 * at its share of the epoch (order.h, step 3): exact integer arithmetic,
 * the same on every machine. */
static int mix_places(sk_order *o, size_t *perm, size_t n, sk_error *err)
{
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) ns = o->stream[i] + 1 > ns ? o->stream[i] + 1 : ns;
    uint64_t *tot = calloc(ns ? ns : 1, sizeof *tot), *before = calloc(ns ? ns : 1, sizeof *before);
    struct place *pl = malloc((n ? n : 1) * sizeof *pl);
    if (!tot || !before || !pl) {
        free(tot), free(before), free(pl);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n; i++) tot[o->stream[i]] += o->counts[i];
    for (size_t i = 0; i < n; i++) {
        size_t u = perm[i], d = o->stream[u];
        pl[i] = (struct place){.unit = u, .stream = d, .at = i, .num = 2 * before[d] + o->counts[u],
                               .den = tot[d] ? 2 * tot[d] : 1};
        before[d] += o->counts[u];
    }
    qsort(pl, n, sizeof *pl, by_place);
    for (size_t i = 0; i < n; i++) perm[i] = pl[i].unit;
    free(tot), free(before), free(pl);
    return SK_OK;
}

int sk_order_plan(sk_order *o, uint64_t epoch, sk_error *err)
{
    o->epoch = epoch;
    o->held = SIZE_MAX;
    if (o->window < 1) o->window = 1;
    size_t n = o->nshards;
    size_t *perm = sk_xrealloc(o->perm, (n ? n : 1) * sizeof *perm, err);
    if (!perm) return SK_E_NOMEM;
    o->perm = perm;
    for (size_t i = 0; i < n; i++) perm[i] = i;
    uint64_t rng = sk_rng_derive(o->seed, epoch, TAG_SHARDS);
    if (o->shuffle) fisher_yates(perm, n, &rng);
    if (o->shuffle && o->stream) SK_GUARD(mix_places(o, perm, n, err));
    o->nwin = n ? (n + o->window - 1) / o->window : 0;
    uint64_t *ws = sk_xrealloc(o->win_start, (o->nwin + 1) * sizeof *ws, err);
    if (!ws) return SK_E_NOMEM;
    o->win_start = ws;
    uint64_t at = 0;
    for (size_t b = 0; b < o->nwin; b++) {
        ws[b] = at;
        for (size_t i = b * o->window; i < n && i < (b + 1) * o->window; i++) {
            SK_FAIL_IF(at + o->counts[perm[i]] < at, err, SK_E_INPUT, "sample counts overflow");
            at += o->counts[perm[i]];
        }
    }
    ws[o->nwin] = at;
    o->total = at;
    return SK_OK;
}

void sk_order_free(sk_order *o)
{
    free(o->perm);
    free(o->win_start);
    free(o->in_win);
    free(o->shard_start);
    o->perm = NULL, o->win_start = NULL, o->in_win = NULL, o->shard_start = NULL;
    o->in_win_cap = o->shard_start_cap = 0;
}

/* Makes window b's permutation the held one: its n samples shuffled by
 * (seed, epoch, b), O(n) time and 8n bytes. */
static int hold_window(sk_order *o, size_t b, sk_error *err)
{
    uint64_t n = o->win_start[b + 1] - o->win_start[b];
    SK_FAIL_IF(n > SIZE_MAX / sizeof(uint64_t), err, SK_E_NOMEM, "window of %llu samples",
               (unsigned long long)n);
    size_t lo = b * o->window, hi = lo + o->window < o->nshards ? lo + o->window : o->nshards;
    SK_GUARD(sk_grow((void **)&o->in_win, &o->in_win_cap, (size_t)n ? (size_t)n : 1,
                     sizeof *o->in_win, err));
    SK_GUARD(sk_grow((void **)&o->shard_start, &o->shard_start_cap, hi - lo + 1,
                     sizeof *o->shard_start, err));
    uint64_t at = 0;
    for (size_t i = lo; i < hi; i++) {
        o->shard_start[i - lo] = at;
        at += o->counts[o->perm[i]];
    }
    o->shard_start[hi - lo] = at;
    for (uint64_t i = 0; i < n; i++) o->in_win[i] = i;
    if (o->shuffle) {
        uint64_t rng = sk_rng_derive(o->seed, o->epoch, TAG_WINDOW | b);
        for (uint64_t i = n; i > 1; i--) {
            uint64_t j = sk_uniform_below(&rng, i), t = o->in_win[i - 1];
            o->in_win[i - 1] = o->in_win[j];
            o->in_win[j] = t;
        }
    }
    o->held = b;
    return SK_OK;
}

int sk_order_at(sk_order *o, uint64_t g, size_t *shard, uint64_t *ordinal, sk_error *err)
{
    SK_FAIL_IF(g >= o->total, err, SK_E_USAGE, "position %llu is past the epoch's %llu samples",
               (unsigned long long)g, (unsigned long long)o->total);
    size_t b = o->held;
    if (b == SIZE_MAX || g < o->win_start[b] || g >= o->win_start[b + 1]) {
        size_t lo = 0, hi = o->nwin; /* the last window starting at or before g */
        while (hi - lo > 1) {
            size_t mid = lo + (hi - lo) / 2;
            if (o->win_start[mid] <= g) lo = mid;
            else hi = mid;
        }
        while (o->win_start[lo + 1] <= g) lo++; /* skip empty windows */
        SK_GUARD(hold_window(o, lo, err));
        b = lo;
    }
    uint64_t i = o->in_win[g - o->win_start[b]];
    size_t first = b * o->window, nsh = (first + o->window < o->nshards ? o->window : o->nshards - first);
    size_t lo = 0, hi = nsh; /* the window's shard holding sample i */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (o->shard_start[mid] <= i) lo = mid;
        else hi = mid;
    }
    while (o->shard_start[lo + 1] <= i) lo++;
    *shard = o->perm[first + lo];
    *ordinal = i - o->shard_start[lo];
    return SK_OK;
}

/* ------------------------------------------------------------------ split */

static uint64_t slots_of(const sk_split *s)
{
    return (uint64_t)s->ranks * s->workers;
}

/* Samples each slot gets from the whole rounds. */
static uint64_t full_per_slot(const sk_split *s)
{
    return s->m / (slots_of(s) * s->batch) * s->batch;
}

/* The last, partial round: L positions, q each slot and one more for the
 * first rem slots (worker-major: slot w*R + r), laid out as one block per
 * slot in that order, so that the partial batches a DataLoader hands
 * (worker 0's, then worker 1's...) consume a prefix, rank by rank. */
static void tail_of(const sk_split *s, uint64_t *q, uint64_t *rem)
{
    uint64_t S = slots_of(s), L = s->m - full_per_slot(s) * S;
    *q = L / S;
    *rem = L % S;
}

uint64_t sk_split_count(const sk_split *s, uint32_t rank, uint32_t worker)
{
    uint64_t q, rem, me = (uint64_t)worker * s->ranks + rank;
    tail_of(s, &q, &rem);
    return full_per_slot(s) + q + (me < rem);
}

uint64_t sk_split_position(const sk_split *s, uint32_t rank, uint32_t worker, uint64_t k)
{
    uint64_t S = slots_of(s), B = s->batch, f = full_per_slot(s), q, rem;
    if (k < f)
        return (k / B) * S * B + (uint64_t)worker * s->ranks * B + (uint64_t)rank * B + k % B;
    tail_of(s, &q, &rem);
    uint64_t me = (uint64_t)worker * s->ranks + rank;
    return f * S + me * q + (me < rem ? me : rem) + (k - f);
}

/* Samples slot (rank, w) has in the tail. */
static uint64_t tail_n(const sk_split *s, uint32_t rank, uint64_t w, uint64_t q, uint64_t rem)
{
    return q + (w * s->ranks + rank < rem);
}

uint64_t sk_split_rank_index(const sk_split *s, uint32_t rank, uint32_t worker, uint64_t k)
{
    uint64_t W = s->workers, B = s->batch, f = full_per_slot(s), q, rem, before = 0;
    if (k < f) return (k / B) * W * B + (uint64_t)worker * B + k % B;
    tail_of(s, &q, &rem);
    for (uint64_t w = 0; w < worker; w++) before += tail_n(s, rank, w, q, rem);
    return f * W + before + (k - f);
}

uint64_t sk_split_consumed(const sk_split *s, uint32_t rank, uint64_t i)
{
    uint64_t W = s->workers, f = full_per_slot(s), q, rem;
    if (i <= f * W) {
        if (i && s->ranks > UINT64_MAX / i) return s->m;
        uint64_t c = i * s->ranks;
        return c < s->m ? c : s->m;
    }
    tail_of(s, &q, &rem);
    uint64_t t = i - f * W, mine = 0, done = 0;
    for (uint64_t w = 0; w < W; w++) mine += tail_n(s, rank, w, q, rem);
    if (t >= mine) return s->m; /* the rank read its whole share */
    /* whole tail blocks of the rank's workers, in the DataLoader's order:
     * the other ranks' blocks of those workers come before in the layout */
    for (uint64_t w = 0; w < W; w++) {
        uint64_t n = tail_n(s, rank, w, q, rem);
        if (n == 0 || t < n) break;
        t -= n;
        done = w + 1;
    }
    uint64_t S = slots_of(s), end = done * s->ranks;
    return f * S + end * q + (end < rem ? end : rem);
}
