/*
 * shard_int.h - what the files of `shardkit shard`'s input side share: the
 * functions one file gives the others.  The run's state and its output
 * are io/shard_run.h's (pack's image stage feeds the same output).
 * Internal to libshardkit.
 *
 * From the top down (each file calls only files below it, and the output
 * in io/):
 *   reshard.c       drives a run: inputs expanded and checked, the order
 *                   of the passes (count, scatter, drain)
 *   shard_read.c    inputs as byte streams through libarchive, samples
 *                   assembled as their output tar bytes
 *   shard_direct.c  plain tar inputs with a sound index, read through it
 *   shard_filter.c  the filters (--select ... --keys, --part)
 */
#ifndef SK_TOOLS_SHARD_INT_H
#define SK_TOOLS_SHARD_INT_H

#include "io/shard_run.h"
#include "io/store.h"

struct keyset { /* --keys: open addressing over key strings */
    char **slot;
    size_t cap, n;
};

/* What the run's inputs keep of their own, beside the output's state
 * (sk_shard_run, io/shard_run.h), which points here (r->in). */
struct rs_in {
    struct keyset keys;   /* --keys */
    sk_store_env env;     /* what the inputs are read through (io/store.h) */
    int direct;           /* inputs may be read through their indexes */
    uint64_t rewrites;    /* headers and paddings sk_shard_run_direct_input changed */
};

/* shard_filter.c */
/* --keys: the keys listed in path (a local file, s3:// or http(s)://). */
int sk_shard_run_load_keys(sk_shard_run *r, const char *path, sk_error *err);
void sk_shard_run_keyset_free(struct keyset *k);
/* Whether a member with extension e is kept, and its output extension. */
int sk_shard_run_keep_member(const sk_shard_run *r, const char *e, size_t n, const char **out, size_t *out_len);
/* Whether a sample is kept (--keys, --part). */
int sk_shard_run_keep_sample(const sk_shard_run *r, const char *key, size_t klen);

/* shard_direct.c: *from is where libarchive is to go on (0: all of it),
 * UINT64_MAX when the index read it all. */
int sk_shard_run_direct_input(sk_shard_run *r, const char *url, struct run_sample *s, uint64_t *from, sk_error *err);

/* shard_read.c */
/* An input's size (UINT64_MAX: not known before it is read). */
int sk_shard_run_input_size(sk_shard_run *r, const char *url, uint64_t *size, sk_error *err);
/* --num-shards: the samples the run will write, into r->total. */
int sk_shard_run_count_samples(sk_shard_run *r, char **in, size_t n, struct run_sample *s, sk_error *err);
/* Reads one input through libarchive, feeding its samples on (counting:
 * only counts them); from > 0: a local tar from that header on. */
int sk_shard_run_read_input(sk_shard_run *r, const char *url, struct run_sample *s, int counting, uint64_t from,
                     sk_error *err);
/* One input: through its index while that agrees with it, then libarchive. */
int sk_shard_run_take_input(sk_shard_run *r, const char *url, struct run_sample *s, sk_error *err);

#endif
