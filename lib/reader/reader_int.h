/*
 * reader_int.h - what the reader's sample-side files share (reader.c: the
 * shard list, epochs and the public calls; reader_cursor.c: a shard's
 * tar stream walked into samples; reader_state.c: saving and restoring
 * where a reader is).  Never installed.
 */
#ifndef SK_READER_INT_H
#define SK_READER_INT_H

#include "reader/reader_raw.h"
#include "reader/reader_global.h"
#include "format/format.h"
#include "format/tar.h"
#include "io/store.h"

#define MAX_PREFETCH 64

struct shard_ent {
    char *url, *index; /* index NULL: "<url>.idx" when it exists */
    int64_t samples;   /* -1 until known */
    uint64_t bytes;    /* as the manifest says; 0 when unknown */
    uint32_t crc32c;   /* as the manifest says, when crc_known */
    int crc_known;
    size_t dataset;    /* which url of sk_reader_open it came from */
};

struct cursor;

/* A sample copied out of the ring, for the shuffle buffer: one allocation
 * holding the view, its member array, names and data. */
struct owned {
    sk_reader_sample s;
};

/* Walks one shard's stream: tar headers through the ring, members grouped
 * into samples.  The entry that ends a sample (the next key) is kept as
 * pending, its header parsed but its data not yet asked for. */
struct cursor {
    sk_reader_stream *st;
    size_t shard;
    const char *url;
    sk_tar_reader tr;
    int tr_init, done;
    int size_checked; /* check_size has seen this shard */
    uint64_t ordinal; /* samples taken from this shard so far */
    int has_pending;
    char *pname;
    size_t pname_len, pname_cap;
    uint64_t phdr, pdata, psize;
    struct sk_reader_mem *m;
    size_t nm, cap_m;
    char *names;
    size_t names_len, names_cap;
    sk_reader_member *members;
    size_t cap_members;
    sk_reader_sample view;
    int view_ok; /* view is the sample cursor_next last made, read from st */
    const unsigned char *raw; /* the view's bytes in the ring, from m[0].hdr */
    size_t raw_len;
    /* The reader's cursor only: who may still hold bytes it is done with
     * (sk_reader_tar_out writing them from the ring), and how far the
     * cursor itself would release. */
    const sk_reader_holder *hold;
    uint64_t rel;
    /* the shard's keys so far (a file's, not a stream's: shards back to
     * back may share keys), so that a sample whose members are not
     * adjacent is refused, never handed out in two halves */
    sk_keyseen seen;
    int check_split;
};

struct sk_reader {
    sk_reader_options o;
    char *cache_dir, *s3_endpoint;
    int temp_pid; /* cache_dir is the global order's private one, made by this process */
    sk_s3 *s3; /* one client for every s3:// shard, made when the list has one */
    sk_store_env env; /* what the shards' stores are opened with (r->s3, the HTTP client) */
    struct shard_ent *sh;
    size_t nsh, cap_sh;
    uint32_t slot, slots;
    uint64_t epoch;
    size_t *order; /* this slot's shards, by position in sh */
    size_t norder, pos;
    int opened; /* streams are open for pos */
    struct cursor cur;
    sk_reader_stream *ahead[MAX_PREFETCH]; /* streams for order[pos+1 ..] */
    size_t nahead;
    struct owned **buf;
    size_t nbuf;
    uint64_t rng;
    struct owned *out;
    uint64_t yielded;
    sk_reader_stats stats;
    int failed;
    sk_error ferr;
    sk_reader_holder holder; /* cur.hold points here when set */
    sk_reader_spare spare;   /* a closed shard's ring, for the next one */
    sk_gread *g;             /* the global order (reader_global.c), when asked */
    sk_gshard *gs;           /* its view of sh */
    size_t url_now;          /* the url add_url is resolving */
    size_t nurls;
};

/* reader_cursor.c */
void sk_reader_cursor_begin(struct cursor *c, sk_reader_stream *st, size_t shard, const char *url,
                            uint64_t pos, uint64_t ordinal, int stream);
/* The next sample of the shard into c->view; *got = 0 at its end. */
int sk_reader_cursor_next(struct cursor *c, int *got, sk_error *err);
void sk_reader_cursor_end(struct cursor *c);
void sk_reader_cursor_free(struct cursor *c);

/* reader.c */
/* Points c at shard s's sample k (a stream given, or opened here). */
int sk_reader_cursor_at(sk_reader *r, struct cursor *c, size_t s, uint64_t k,
                        sk_reader_stream *given, sk_error *err);
/* Samples in shard s: the manifest's count, the index's, or a walk. */
int sk_reader_count_samples(sk_reader *r, size_t s, uint64_t *n, sk_error *err);
/* A sample copied out of the ring (the shuffle buffer's). */
struct owned *sk_reader_own(const sk_reader_sample *v, sk_error *err);
/* The slot's shards for epoch; the streams of the last one closed. */
int sk_reader_plan_epoch(sk_reader *r, uint64_t epoch, sk_error *err);
/* Opens the stream at order position p, sample k, and the prefetch behind it. */
int sk_reader_reposition(sk_reader *r, size_t p, uint64_t k, sk_error *err);
void sk_reader_close_streams(sk_reader *r);

#endif
