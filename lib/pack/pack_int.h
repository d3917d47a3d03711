/*
 * pack_int.h - what pack.c (catalog to plan, the ring and shard-parallel
 * writers, the manifest) and the positional writers (pack_pos.c, what
 * they share; pack_spread.c and pack_stream.c, the two modes) share, and what pack_fill.c gives both of them: the run's state, the slots samples are built
 * in, and the helpers that read inputs and record index entries.
 * Internal to libshardkit.
 */
#ifndef SK_PACK_INT_H
#define SK_PACK_INT_H

#include "pack/catalog.h"
#include "io/io.h"
#include "io/writer.h"
#include "pack/pack_out.h"
#include "format/format.h"

#include <pthread.h>
#include <time.h>

#define SLOT_MAX (4u << 20)   /* bigger samples are streamed by the writer */
#define STREAM_PIECE (1u << 20)
#define BATCH_BYTES (1u << 20)
#define BATCH_IOV 64

struct member_out {
    uint64_t data_off; /* within the slot's bytes */
    uint64_t size;
    uint32_t crc, header_len;
    int skipped;
};

struct slot {
    int state; /* FREE, FILLING, READY */
    unsigned char *buf;
    size_t len, cap;
    uint32_t crc;
    int stream;  /* too big: the writer copies it */
    int failed;
    sk_error err;
    char *warnings; /* skip messages, in member order */
    struct member_out *m;
    size_t mcap;
};
enum { FREE, FILLING, READY };

struct shard_plan {
    uint64_t first;   /* position in the sample order */
    uint64_t count;   /* samples */
    uint64_t bytes;   /* planned size, end-of-archive included */
    int done;         /* kept from an earlier run (--resume) */
    uint64_t written; /* samples written (fewer than count if all skipped) */
    sk_index_shard_info info;
    sk_key_range range; /* stream mode: its keys' range, from its index */
};

/* A reader's open directory: consecutive samples mostly share one, and
 * opening "name" in it costs one path component instead of the whole path. */
struct dir_cache {
    uint32_t src, dir;
    int fd;
};

/* What a writer has done since it last reported: folded into the run's
 * stats (and extension counts) by whoever owns them. */
struct tally {
    sk_manifest *exts;
    uint64_t files, bytes, samples, skipped;
};

struct sk_pack {
    sk_pack_options o;
    sk_catalog cat;
    uint32_t *order;          /* sample ids in output order */
    uint64_t *sbytes;         /* tar bytes of each sample, by sample id */
    struct shard_plan *shards;
    size_t nshards;
    uint64_t *pending;           /* positions still to write, in order */
    uint64_t npending;
    /* the ring */
    pthread_mutex_t mu;
    pthread_cond_t slot_ready, slot_free;
    struct slot *slots;
    size_t nslots;
    uint64_t next_claim, released;
    uint64_t writer_waits_for; /* seq the writer sleeps on, or UINT64_MAX */
    int readers_waiting;       /* readers asleep on a full ring */
    int stop;
    size_t next_shard;  /* shard-parallel mode: next shard to claim */
    sk_manifest **ext_tallies; /* each writer's extension counts */
    size_t ext_tallies_n;
    sk_error first_err; /* shard-parallel mode: the error that stopped it */
    sk_pack_stats st;
    struct timespec t0, last_progress;
    int reporting; /* a progress report is being made (atomic) */
    /* `-o -`: the whole run goes as one tar stream to this descriptor, no
     * index, no manifest; -1 otherwise */
    int stream_fd;
    /* --image-size (pack_images.c): each sample, in order, goes to this
     * stage instead of a shard of pack's own (the image transform, then
     * the shard output that cuts, indexes and lists what it gives); NULL
     * otherwise.  It counts what it took in t. */
    int (*stage)(void *ctx, uint32_t s, struct slot *sl, struct tally *t, sk_error *err);
    void *stage_ctx;
    /* the run's locks (manifest and shard names: pack_out.h), from sk_pack_new */
    sk_run_lock lock;
    /* the run's local inputs (files, directories) and side outputs, checked
     * against each other before anything is written (pack_out.h) */
    sk_run_files files;
    sk_existing grow; /* the manifest already there (io/existing.c) */
    /* --image-size: what the stage's output has written (atomics), so
     * that progress counts its shards, not pack's one stream */
    int images_live;
    uint64_t img_shards, img_samples, img_out;
    /* the inputs are directories walked in key order a window at a time
     * while writing (stream mode, pack_stream.c): memory does not grow with
     * the number of files */
    int windowed;
    /* --jobs 1: the writer fills slots itself (pack.c, fill_inline) */
    int inline_fill;
    struct dir_cache inline_dc;
    /* --part: the caller's pattern, and the names with {part} expanded */
    const char *pattern_tmpl, *manifest_tmpl;
    char *part_pattern, *part_manifest;
};




/* Slots a shard-parallel or positional worker builds a batch in. */
#define LOCAL_SLOTS 32

void sk_pack_warnf(sk_pack *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Tar bytes of sample s (headers, data, padding), from its members' sizes. */
uint64_t sk_pack_sample_bytes(const sk_catalog *c, uint32_t s);
/* Sample s's key (directory and basename up to the key's end) into buf
 * (room for SK_TAR_NAME_MAX + 1); returns its length. */
size_t sk_pack_sample_key(const sk_catalog *c, uint32_t s, char *buf);
/* --resume (pack_resume.c): 1 when sample ordinal of the shard indexed by
 * ix holds exactly catalog sample s: its members' extensions, sizes and
 * CRC32C, read again from the inputs. */
int sk_pack_sample_proven(sk_pack *p, uint32_t s, const sk_index *ix, uint64_t ordinal);
/* --resume: 1 when the shard at path (indexed by ix) was written with this
 * run's --mtime and compression. */
int sk_pack_shard_options_match(sk_pack *p, const char *path, const sk_index *ix);
/* Adds a skip message to the slot's warnings, in member order. */
void sk_pack_slot_warn(struct slot *s, const char *msg);
/* Opens name under dirfd for reading (O_NOATIME where allowed), plus extra flags. */
int sk_pack_open_at(int dirfd, const char *name, int extra);
int sk_pack_open_input(const sk_source *src, const char *name);
/* Sets err for a member that cannot be opened (errno): SK_E_NOTFOUND when
 * it vanished since the listing, else SK_E_IO; returns the code. */
int sk_pack_open_failed(const sk_catalog *c, const sk_item *it, const char *name, sk_error *err);
/* Where a member streamed in pieces goes: n bytes of buf whose CRC32C is crc. */
typedef int (*sk_piece_put)(void *ctx, unsigned char *buf, size_t n, uint32_t crc, sk_error *err);
/* The body of a member too big for a slot, read in STREAM_PIECE pieces into
 * buf (room for STREAM_PIECE + 1) and handed to put; *crc_out gets the
 * member's CRC32C.  A failure to open or read the input is reported in
 * in_err, one of put in out_err (the caller tells them apart: only the
 * first may be skipped). */
int sk_pack_stream_member(const sk_catalog *c, const sk_item *it, const char *name,
                          unsigned char *buf, sk_piece_put put, void *ctx, uint32_t *crc_out,
                          sk_error *in_err, sk_error *out_err);
/* One member of a sample too big for a slot, as tar: its header, its body
 * (sk_pack_stream_member) and its padding, each handed to put, so the
 * appending writer (pack.c) and the positional ones (pack_pos.c) differ
 * only in where the pieces go.  *hl_out gets the header's length, *crc_out
 * the body's CRC32C; failures as sk_pack_stream_member. */
int sk_pack_stream_tar_member(const sk_pack *p, const sk_item *it, unsigned char *buf,
                              sk_piece_put put, void *ctx, size_t *hl_out, uint32_t *crc_out,
                              sk_error *in_err, sk_error *out_err);
/* Reads exactly want bytes of an input at `at` into dst (room for want+1;
 * probe: also check that the file ends there). */
int sk_pack_read_input(const sk_catalog *c, const sk_item *it, const char *name, int fd,
                       uint64_t at, unsigned char *dst, uint64_t want, int probe, sk_error *err);
/* Builds sample s's tar bytes into slot (sl->stream: too big, not built).
 * fds (or NULL): members already opened (-1: open here); each is closed
 * and set to -1. */
void sk_pack_fill_slot(sk_pack *p, struct slot *sl, uint32_t s, struct dir_cache *dc, int *fds);
/* Frees the buffers of n slots (the slots themselves are the caller's). */
void sk_pack_slots_release(struct slot *slots, size_t n);
/* The descriptor of it's directory through the cache; -1 (errno) if it
 * cannot be opened. */
int sk_pack_member_dirfd(const sk_catalog *c, const sk_item *it, struct dir_cache *dc);
void sk_pack_dir_cache_release(struct dir_cache *dc, const sk_catalog *c);
/* Seconds since t0 (CLOCK_MONOTONIC). */
double sk_pack_since(const struct timespec *t0);
/* Folds a writer's tally into the run's stats and extension counts; p->mu
 * held by callers on worker threads. */
void sk_pack_tally_fold(sk_pack *p, struct tally *t);
/* Progress, at most twice a second unless final, in two steps so the
 * caller's callback never runs under p->mu: take (p->mu held by callers
 * on worker threads) says whether a report is due and copies the stats;
 * report (no lock held) makes it.  sk_pack_progress does both, taking
 * p->mu itself. */
int sk_pack_progress_take(sk_pack *p, int final, sk_pack_stats *snap);
void sk_pack_progress_report(sk_pack *p, const sk_pack_stats *snap);
void sk_pack_progress(sk_pack *p, int final);
/* Index records of sample s written at sample_off, members as in m. */
int sk_pack_add_index_records(sk_pack *p, sk_shard_out *out, uint32_t s, uint64_t sample_off,
                              const struct member_out *m, struct tally *t, sk_error *err);
/* Keeps a writer's extension counts for the manifest (freed with p). */
int sk_pack_add_tally(sk_pack *p, sk_manifest *m);

/* The run writes no shards of its own: one stream of samples in order, to
 * stream_fd (`-o -`) or to the image stage. */
static inline int sk_pack_one_stream(const sk_pack *p)
{
    return p->stream_fd >= 0 || p->stage;
}

/* pack_images.c: the run with images resized (sk_pack_run calls it).  run
 * is pack's own run, which it makes with its stage set: passed in, so
 * that this file sits above pack.c and nothing calls back into it. */
typedef int (*sk_pack_run_fn)(sk_pack *p, sk_pack_stats *stats, sk_error *err);
int sk_pack_run_images(sk_pack *p, sk_pack_run_fn run, sk_pack_stats *stats, sk_error *err);

/* pack_pos.c: what the positional writers share */
/* Worker threads for --jobs: each holds a directory and a file open at
 * least, so a low ulimit -n caps them (the run goes on with fewer). */
size_t sk_pack_workers_for(const sk_pack *p);
/* A sample too big for a slot: each member read and written in bounded
 * pieces at its planned offset (off0, planned bytes); member CRCs go to
 * member_crc[0..members), the CRC of the sample's bytes to *crc_out. */
int sk_pack_stream_sample_at(sk_pack *p, uint32_t s, sk_shard_out *out, uint64_t off0,
                             uint64_t planned, uint32_t *member_crc, uint32_t *crc_out,
                             sk_error *err);
/* pack_spread.c */
/* Spread mode: the planned shards still to do, by --jobs threads. */
int sk_pack_write_spread(sk_pack *p, sk_error *err);
/* pack_stream.c */
/* Stream mode: whether this run can use it (decided before planning, which
 * then leaves walked files unsized), and the run itself; fills p->shards. */
int sk_pack_stream_eligible(const sk_pack *p);
int sk_pack_write_stream(sk_pack *p, sk_error *err);

#endif
