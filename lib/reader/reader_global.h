/*
 * reader_global.h - the reader's global-order mode (reader_global.c), as
 * reader.c drives it: a slot's share of the epoch's global sequence
 * (order.h) read through the shards' indexes, neighbours in one shard
 * coalesced into one read, the next batch read ahead by a thread.
 * Never installed.
 */
#ifndef SK_READER_GLOBAL_H
#define SK_READER_GLOBAL_H

#include "core/internal.h"

typedef struct sk_store_env sk_store_env;

/* A shard as reader.c resolved it (pointers valid while the reader is). */
typedef struct sk_gshard {
    const char *url, *index; /* index NULL: "<url>.idx" */
    int64_t samples;         /* -1: from its index */
    uint64_t bytes;          /* the manifest's, 0: unknown */
    size_t dataset;          /* which of the reader's urls it came from */
} sk_gshard;

typedef struct sk_gread_opts {
    const sk_gshard *shards;
    size_t nshards;
    sk_store_env *env;
    uint32_t rank, ranks, worker, workers, batch;
    uint64_t seed;
    int shuffle;
    size_t window;      /* shards per shuffle window */
    size_t read_ahead;  /* bytes a batch reads at most (at least one sample) */
    uint64_t max_gap;   /* bytes of a gap between two samples read through */
    size_t max_sample;  /* largest sample span accepted */
    /* mixing (mix.c): shards are in dataset order; per dataset (ndatasets
     * entries each, NULL: unset); mix 0: one sequence over every shard */
    int mix;
    size_t ndatasets;
    const double *proportion, *repeat;
    const uint64_t *choose;
    uint64_t samples_per_epoch;
} sk_gread_opts;

typedef struct sk_gread sk_gread;

/* Loads what the order needs (sample counts: the manifest's, else each
 * index's) and plans epoch. */
int sk_gread_open(sk_gread **out, const sk_gread_opts *o, uint64_t epoch, sk_error *err);
void sk_gread_close(sk_gread *g);
/* Starts epoch from its start (base 0). */
int sk_gread_plan(sk_gread *g, uint64_t epoch, sk_error *err);
/* The slot's next sample, or *out NULL at the end of its share. */
int sk_gread_next(sk_gread *g, const sk_reader_sample **out, sk_error *err);

/* The position state (shardkit.h, sk_reader_position). */
void sk_gread_position(const sk_gread *g, int have_rank_samples, uint64_t rank_samples,
                       sk_reader_position *p);
int sk_gread_seek(sk_gread *g, const sk_reader_position *p, sk_error *err);
/* Samples in the epoch, samples left for this slot from where it is. */
uint64_t sk_gread_epoch_samples(const sk_gread *g);
uint64_t sk_gread_slot_left(const sk_gread *g);
/* The largest shard's bytes, as far as the manifest or the loaded
 * indexes tell (0: none known). */
uint64_t sk_gread_largest_shard(const sk_gread *g);
/* Ranged reads made (the coalescing's measure). */
uint64_t sk_gread_reads(const sk_gread *g);

/* global_zstd.c: random access to .tar.zst samples.  The seek table of
 * the shard at url (size bytes): SK_E_USAGE naming it when it has none. */
typedef struct sk_zstd_frame sk_zstd_frame;
int sk_gzstd_frames(const char *url, sk_store_env *env, uint64_t size, sk_zstd_frame **frames,
                    size_t *nframes, sk_error *err);
/* The tar-stream offset of the frame starting at stored offset c_off:
 * 1 with *d_off, 0 when no frame starts there. */
int sk_gzstd_frame_at(const sk_zstd_frame *frames, size_t n, uint64_t c_off, uint64_t *d_off);
/* Exactly cap bytes decompressed from the stored bytes src (len, frames
 * from c_off) into dst, through *dc (made on first use): the first cap
 * bytes, or with whole every frame of src, which must give cap bytes
 * exactly; SK_E_CORRUPT naming url and c_off when they give other than
 * that or are not zstd. */
typedef struct ZSTD_DCtx_s ZSTD_DCtx;
int sk_gzstd_decompress(ZSTD_DCtx **dc, const unsigned char *src, size_t len, unsigned char *dst,
                        size_t cap, int whole, const char *url, uint64_t c_off, sk_error *err);
/* The tar bytes of the frames that tile stored bytes c_off..c_off+c_len
 * exactly, as the seek table says: 1 with *d_len, else 0. */
int sk_gzstd_frames_span(const sk_zstd_frame *frames, size_t n, uint64_t c_off, uint64_t c_len,
                         uint64_t *d_len);

#endif
