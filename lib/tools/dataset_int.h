/*
 * dataset_int.h - what the files of the dataset API (sk_dataset_*) share:
 * the dataset and its shard table, the lazy opens and the reads they all
 * build on.  dataset_open.c opens a dataset and, lazily, each shard's index
 * and range reader; dataset_find.c finds a sample by key or ordinal;
 * dataset_read.c reads members, samples and byte ranges (plain,
 * compressed, one GET per member); dataset_get.c looks up and reads in
 * one call and writes a sample as tar.  Internal to libshardkit.
 *
 * Threads: every lookup and read may run at once on one dataset.  What is
 * opened lazily (an index, a shard's range reader, a .tar.zst seek table,
 * the sample counts) is opened under the dataset's mutex and published
 * through a flag stored with release order; a reader that loads the flag
 * (acquire) and sees it set uses the object without the lock, so a warm
 * dataset takes no lock at all.  Everything else a lookup touches (index
 * maps, the shard table) is read-only once opened.
 */
#ifndef SK_DATASET_INT_H
#define SK_DATASET_INT_H

#include "core/internal.h"
#include "io/io.h"
#include "io/store.h"
#include "format/format.h"
#include "format/tar.h"

#include <pthread.h>

struct shard {
    char *path, *index_path;
    uint64_t first_ordinal, samples, bytes;
    uint32_t crc;
    int known;         /* first_ordinal/samples known (manifest or opened) */
    int from_manifest; /* bytes/crc come from a manifest */
    /* the flags below are set once, under the dataset's mutex, with
     * release order, after what they announce is complete (see the top) */
    sk_index *ix;
    int ix_ok;         /* ix is open and agrees with the manifest */
    sk_range_reader rr;
    int rr_open;       /* rr is open (and, but for read_remote_member's shards, proven) */
    sk_zstd_frame *frames;
    size_t nframes;
    int frames_loaded;
    sk_key_range keys; /* the manifest's claim (first == NULL: none) */
    int keys_checked;  /* the claim equals the index's first and last key */
};

#define LOAD(flag) __atomic_load_n(&(flag), __ATOMIC_ACQUIRE)
#define PUBLISH(flag) __atomic_store_n(&(flag), 1, __ATOMIC_RELEASE)

struct sk_dataset {
    struct shard *s;
    size_t n, cap;
    unsigned flags;
    pthread_mutex_t mu; /* taken only to open something lazily */
    int counted;        /* every shard's first_ordinal and samples known */
    sk_s3 *s3; /* the caller's, for s3:// manifests, indexes and shards */
    sk_store_env env; /* remote shards' and indexes' stores (s3, the HTTP client) */
    sk_range_open_fn range_open; /* local shards (NULL: default_open) */
    void *range_open_ctx;
    size_t *ranged; /* shards with a key range, in key order; NULL: search every index */
    size_t nranged;
};

/* The index of shard s, opened (and checked against the manifest) once. */
int sk_dsa_ensure_index(sk_dataset *ds, struct shard *s, sk_error *err);
/* Shard s's range reader, opened once and proven to be the file its index
 * was built from (size and first-block CRC32C).  Needs its index. */
int sk_dsa_ensure_shard(sk_dataset *ds, struct shard *s, sk_error *err);
/* A remote shard (s3://, http(s)://) as a range reader over its store; size
 * UINT64_MAX: asked for with a HEAD. */
int sk_dsa_remote_range_open(sk_store_env *env, sk_range_reader *rr, const char *url,
                             uint64_t size, sk_error *err);
/* One read of a plain shard's sample span into buf, each member moved down
 * to its place and checked (dataset_read.c): 1 when done, 0 when it does
 * not apply, or -rc. */
int sk_dsa_read_span(sk_dataset *ds, struct shard *s, const sk_hit *h, unsigned char *buf,
                     size_t cap, const sk_member_ref *members, sk_error *err);

#endif
