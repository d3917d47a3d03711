/*
 * order.h - the reader's global sample order (order.c): one sequence of
 * an epoch's samples that depends only on the datasets, the seed and the
 * epoch, never on how many ranks and workers read it, and the share of
 * that sequence each slot (rank, worker) reads.  Pure arithmetic over
 * sample counts: no I/O, so the order can be computed (and tested, and
 * replayed for a resume) without reading a byte of data.  Never
 * installed; docs/reader.md describes the order for users.
 *
 * The sequence of epoch e:
 *   1. the shards (of every dataset, in list order) are permuted by
 *      (seed, e) when shuffling, else kept in list order;
 *   2. the permuted shards are cut into windows of `window` consecutive
 *      shards; window b's samples (its shards' samples back to back) are
 *      permuted by (seed, e, b), so memory and the shards being read at
 *      once are bounded by the window;
 *   3. with mixing (mix.c), the units (whole shards or subsets, each of
 *      one stream) are permuted by (seed, e), then ordered so that every
 *      prefix holds each stream at its share: a unit's place is the
 *      middle of its samples as a fraction of its stream's samples in the
 *      epoch, units merged by that fraction (each stream's own units
 *      keep their shuffled order).  So at any point of the epoch a
 *      stream is off its share by at most about a window of samples,
 *      not only at the epoch's end.
 *
 * A slot's share is by position, for R ranks, W workers a rank and a
 * batch size B (the DataLoader's: a worker hands B samples at once):
 * positions come in rounds of R*W*B; in a round, worker w of rank r takes
 * the B positions at w*R*B + r*B; the last, partial round (fewer than
 * R*W*B positions) gives each slot one block of consecutive positions,
 * slots in the order (w, r), block sizes within one of each other.  So a rank consuming its batches in
 * the DataLoader's order consumes a prefix of the sequence together with
 * the other ranks, and every slot's count is within one of the others'.
 */
#ifndef SK_READER_ORDER_H
#define SK_READER_ORDER_H

#include "core/internal.h"

/* The epoch's sequence over shards with known sample counts. */
typedef struct sk_order {
    size_t nshards;
    const uint64_t *counts; /* the caller's, nshards: samples per shard */
    uint64_t seed, epoch;
    size_t window; /* shards per window (>= 1) */
    int shuffle;   /* 0: list order, no sample shuffle (windows are moot) */
    const size_t *stream; /* mixing: each shard's (unit's) stream, NULL: none */
    /* computed by sk_order_plan */
    size_t *perm;          /* shard order of the epoch */
    size_t nwin;
    uint64_t *win_start;   /* nwin + 1: first position of each window */
    uint64_t total;
    /* the window whose permutation is held */
    size_t held;           /* SIZE_MAX: none */
    uint64_t *in_win;      /* its positions -> sample index within the window */
    size_t in_win_cap;
    uint64_t *shard_start; /* window's shards: first index within the window */
    size_t shard_start_cap;
} sk_order;

/* (Re)computes the shard order and windows for epoch (o's counts set). */
int sk_order_plan(sk_order *o, uint64_t epoch, sk_error *err);
void sk_order_free(sk_order *o);
/* The sample at position g (< total): shard (index into counts) and its
 * ordinal within that shard.  Cheap when g stays in the held window. */
int sk_order_at(sk_order *o, uint64_t g, size_t *shard, uint64_t *ordinal, sk_error *err);

/* The slot split of a sequence of m positions (those left after a
 * resume's base).  ranks, workers, batch >= 1. */
typedef struct sk_split {
    uint64_t m;
    uint32_t ranks, workers, batch;
} sk_split;
/* Samples slot (rank, worker) gets. */
uint64_t sk_split_count(const sk_split *s, uint32_t rank, uint32_t worker);
/* Position (0..m-1) of the slot's k-th sample (k < its count). */
uint64_t sk_split_position(const sk_split *s, uint32_t rank, uint32_t worker, uint64_t k);
/* The rank-local index (the order a rank's DataLoader yields its
 * workers' batches in) of the slot's k-th sample. */
uint64_t sk_split_rank_index(const sk_split *s, uint32_t rank, uint32_t worker, uint64_t k);
/* Positions consumed when every rank has consumed i samples of its share
 * in the DataLoader's order: i*R in the whole rounds; in the last round,
 * the workers' whole blocks; m when the rank read its whole share. */
uint64_t sk_split_consumed(const sk_split *s, uint32_t rank, uint64_t i);

#endif
