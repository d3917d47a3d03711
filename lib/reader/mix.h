/*
 * mix.h - mixing several datasets (streams) in one epoch (mix.c), with
 * MosaicML Streaming's semantics: each stream has a relative
 * `proportion`, or an absolute `repeat` (a multiple of its size) or
 * `choose` (a number of samples); the epoch's length is
 * samples_per_epoch (relative: required unless it defaults to the
 * streams' total; absolute: the sum, rescaled when samples_per_epoch is
 * set).  A stream taking k of its n samples takes floor(k/n) whole copies
 * and a uniform subset of k mod n drawn per (seed, epoch, stream): a new
 * subset each epoch, with replacement across epochs.
 *
 * The result is a list of units for order.c to permute and window: a
 * unit is a shard, whole (a copy) or a sorted subset of its ordinals.
 * Never installed.
 */
#ifndef SK_READER_MIX_H
#define SK_READER_MIX_H

#include "core/internal.h"

typedef struct sk_mix_unit {
    size_t shard;
    uint64_t count;
    size_t pick;   /* first of its ordinals in sk_mix.picks; SIZE_MAX: whole */
} sk_mix_unit;

typedef struct sk_mix {
    /* the caller's: streams and their shards */
    size_t nstreams;
    const size_t *first;          /* nstreams + 1: stream d's shards first[d] .. first[d+1]-1 */
    const uint64_t *counts;       /* per shard */
    const double *proportion;     /* per stream, 0: unset (NULL: all unset) */
    const double *repeat;         /* per stream, 0: unset */
    const uint64_t *choose;       /* per stream, 0: unset */
    uint64_t samples_per_epoch;   /* 0: as the streams say */
    uint64_t seed;
    /* computed */
    uint64_t *take;               /* per stream: samples it gives an epoch */
    uint64_t total;
    sk_mix_unit *units;
    size_t nunits, cap_units;
    uint64_t *picks;
    size_t npicks, cap_picks;
} sk_mix;

/* Checks the streams' settings and computes take[] (SK_E_USAGE naming
 * the stream at fault). */
int sk_mix_init(sk_mix *m, sk_error *err);
/* The units of epoch. */
int sk_mix_epoch(sk_mix *m, uint64_t epoch, sk_error *err);
void sk_mix_free(sk_mix *m);

#endif
