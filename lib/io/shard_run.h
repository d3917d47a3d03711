/*
 * shard_run.h - the output side of a `shard` run, which any producer of
 * samples feeds: `shard`'s inputs (tools/reshard.c and the files of its
 * engine, tools/shard_int.h) and pack's image stage (pack/pack_images.c).
 * The run's state (sk_shard_run), a sample as it is assembled (struct
 * run_sample) and as it is written (struct sview), and what the files of
 * the output give the others.
 * Internal to libshardkit.
 *
 * From the top down (each file calls only files below it):
 *   shard_out.c     the output side as one piece: begun (locks, manifest,
 *                   the image stage), fed samples (sk_shard_run_put), finished
 *   shard_shuffle.c --shuffle: samples (or references to them) as records
 *   shard_emit.c    the output: shards cut, named, indexed, resumed, and
 *                   their bytes handed to the writer in large writes
 *   shard_images.c  --image-*: the resize stage and its worker pool, a
 *                   transform on samples that knows nothing of the run
 *   shard_report.c  the run's warnings and progress reports
 */
#ifndef SK_IO_SHARD_RUN_H
#define SK_IO_SHARD_RUN_H

#include "core/internal.h"
#include "core/shuffle.h"
#include "format/format.h"
#include "io/io.h"
#include "io/outq.h"
#include "io/emit.h"
#include "io/writer.h"
#include "io/infiles.h"

#include <time.h>

#define IN_BUF (1u << 20)
/* Plain output goes out in writes of about this size: the kernel's write
 * path costs twice as much per byte in 16 KiB writes as in megabytes. */
#define OUT_BUF (2u << 20)
/* The index-driven reader reads this much of a shard per pread. */
#define BATCH (2u << 20)
/* Bytes a reader may hold of one name: a ustar prefix, '/', and name. */
#define PLAIN_NAME (155 + 1 + 100 + 1)

struct img_pool;

/* ------------------------------------------------------------------ state */

struct run_member {
    uint64_t data_off; /* in the sample's tar image */
    uint64_t size;
    uint32_t hlen, crc;
    uint32_t ext_off, ext_len; /* in the sample's ext pool */
};

/* A sample: its key, members, and its tar image. */
struct run_sample {
    char *key;
    size_t klen, kcap;
    struct run_member *m;
    size_t nm, mcap;
    char *exts;
    size_t elen, ecap;
    unsigned char *img;
    size_t len, cap;
    uint32_t crc; /* CRC32C of img[0..len) */
};

/* A read-only view of a sample: a struct run_sample or a shuffle record. */
struct sview {
    const char *key;
    size_t klen;
    const struct run_member *m;
    size_t nm;
    const char *exts;
    const unsigned char *img;
    size_t len;
    uint32_t crc;   /* of img, when has_crc */
    int has_crc;
    int buf;        /* img lies in the output buffer ob[buf] (index-driven input), else -1 */
    size_t elen;    /* bytes of exts (serialize) */
};

/* An output buffer: bytes on their way to the writer (outq.h).  p is
 * heap (the buffer's own memory) or, for index-driven input, a private
 * mapping of the input (map, maplen): then cap == len, nothing is
 * appended to it, and it is unmapped when the buffer is claimed again. */
struct obuf {
    unsigned char *p;
    size_t cap, len;
    uint64_t seq; /* the last range queued from it */
    unsigned char *heap;
    size_t heap_cap;
    void *map;
    size_t maplen;
};

/* The inputs' own state (tools/shard_int.h): the output never reads it. */
struct rs_in;

typedef struct sk_shard_run {
    sk_shard_options *o; /* the run's own copy: o->start moves past an existing manifest's shards */
    const char *pattern_tmpl; /* the pattern as given: {part} unexpanded */
    sk_shard_stats st;
    struct timespec t0, last;
    int to_stdout;
    uint64_t max_size, max_count;
    /* num_shards: counts per shard */
    uint64_t total;
    /* output */
    sk_shard_out out;
    int open; /* a shard is open */
    uint64_t shard_no, in_shard;
    uint64_t target; /* samples for the open shard (num_shards), else 0 */
    sk_manifest *man;
    sk_existing existing; /* the manifest already there (io/existing.c) */
    char mdir[4200], mpath[4200];
    /* --resume: the existing shard being checked instead of written */
    sk_index *resumed;    /* its index (NULL: the open shard is written) */
    int resumed_opts_ok;  /* it was written with this run's --mtime and compression */
    uint64_t resumed_at;  /* its sample the next one is checked against */
    /* scratch */
    unsigned char *rec;
    size_t rec_cap;
    struct run_member *vm;
    size_t vm_cap;
    sk_shuffler *shuf;
    struct img_pool *pool; /* image workers (sk_shard_options.images) */
    /* plain output: samples collect in ob[] and go out in large writes
     * from a second thread (q; NULL: one writev per sample, as for
     * compressed and S3 output) */
    sk_outq *q;
    struct obuf ob[2];
    int cur;              /* the buffer being filled */
    int pbuf;             /* the buffer holding the pending range, -1 none */
    size_t pstart, pend;  /* the pending range: bytes not yet queued */
    uint32_t pcrc;
    uint64_t opos;        /* bytes of the open shard, pending ones included */
    /* --shuffle of inputs read through their indexes: the buckets hold
     * references (input, offset), the inputs stay open for the drain */
    sk_infiles *inf;
    uint32_t in_no;       /* the input direct_input is reading, in inf */
    struct rs_in *in;     /* shard's inputs (tools/); NULL for pack's image stage */
    sk_run_lock lock;     /* the run's locks (io/emit.h) */
} sk_shard_run;

/* shard_images.c: the image stage, a transform on samples (no run state) */
/* What the image work on one sample found: counted and said by the
 * thread that takes the samples back, in sample order, so that the
 * counts, the warnings and the output never depend on which worker ran. */
struct img_outcome {
    int skip; /* drop the sample (too small, too elongated, a bad image) */
    uint64_t images, image_skips, bad_images;
    char warn[SK_ERROR_MAX];
};
/* Where the pool hands each finished sample, in the order they were
 * submitted (s is the pool's: its buffers are reused after put returns). */
typedef int (*sk_img_put)(void *ctx, struct run_sample *s, const struct img_outcome *out,
                          sk_error *err);
int sk_img_pool_new(struct img_pool **out, const sk_image_options *io, int jobs, uint64_t mtime,
                    sk_img_put put, void *put_ctx, sk_error *err);
void sk_img_pool_free(struct img_pool *p);
/* Hands the finished jobs at the head to put, in order; block: wait for
 * the head job (all of them when drain). */
int sk_img_pool_emit(struct img_pool *p, int block, int drain, sk_error *err);
/* Hands s to the workers (its buffers are swapped with a free job's). */
int sk_img_pool_submit(struct img_pool *p, struct run_sample *s, sk_error *err);

/* shard_report.c: the run's reports */
void sk_shard_run_warnf(sk_shard_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Seconds since t0 (CLOCK_MONOTONIC). */
double sk_shard_run_since(const struct timespec *t0);
/* Reports progress at most twice a second (final: now). */
void sk_shard_run_progress(sk_shard_run *r, int final);

/* shard_emit.c */
void sk_shard_run_view_of(const struct run_sample *s, struct sview *v);
/* Writes one sample, rolling over to a new shard first when it is due. */
int sk_shard_run_emit(sk_shard_run *r, const struct sview *v, sk_error *err);
int sk_shard_run_open_shard(sk_shard_run *r, sk_error *err);
int sk_shard_run_close_shard(sk_shard_run *r, sk_error *err);
/* Queues the pending range. */
int sk_shard_run_out_flush(sk_shard_run *r, sk_error *err);
/* Makes ob[i] free for new bytes (at least need of them). */
int sk_shard_run_out_claim(sk_shard_run *r, int i, size_t need, sk_error *err);
/* Makes ob[i] the bytes [pos, pos + want) of fd, mapped private
 * (*mapped = 0: not mapped, the caller preads instead). */
int sk_shard_run_out_map(sk_shard_run *r, int i, int fd, uint64_t pos, size_t want, int *mapped, sk_error *err);
/* need bytes at the end of the buffer being filled, else in a scratch buffer. */
int sk_shard_run_out_reserve(sk_shard_run *r, size_t need, unsigned char **p, sk_error *err);

/* shard_shuffle.c */
int sk_shard_run_serialize(sk_shard_run *r, const struct sview *s, sk_error *err);
int sk_shard_run_serialize_ref(sk_shard_run *r, const struct sview *s, uint64_t offset, sk_error *err);
/* The drain's callback: one record out (sk_shuffler_drain). */
int sk_shard_run_emit_record(void *ctx, const unsigned char *p, size_t len, sk_error *err);

/* shard_out.c: the output side of a run, whoever produces its samples */
/* Sets r up for the options o (checked: SK_E_USAGE); pattern_tmpl is the
 * pattern as given ({part} unexpanded), for the manifest.  Nothing to
 * release when it fails; else sk_shard_run_release, whatever follows. */
int sk_shard_run_init(sk_shard_run *r, sk_shard_options *o, const char *pattern_tmpl, sk_error *err);
/* The shards' directory, the run's locks (what: the tool, for the lock's
 * message), the manifest and what an earlier one left (o->start may move
 * past an existing manifest's last shard). */
int sk_shard_run_output_open(sk_shard_run *r, const char *what, sk_error *err);
/* S3 uploads a killed run left, the image stage, the writer thread. */
int sk_shard_run_output_start(sk_shard_run *r, sk_error *err);
/* A kept sample, in order: through the image stage when there is one,
 * then out (sk_shard_run_emit_sample).  s's buffers may be swapped for others. */
int sk_shard_run_put(sk_shard_run *r, struct run_sample *s, sk_error *err);
/* Waits for every sample handed to the image stage to go out. */
int sk_shard_run_put_done(sk_shard_run *r, sk_error *err);
/* A sample goes into the shuffle, or out. */
int sk_shard_run_emit_sample(sk_shard_run *r, struct run_sample *s, sk_error *err);
/* The empty shards --num-shards asks for, the last shard, the manifest. */
int sk_shard_run_output_finish(sk_shard_run *r, sk_error *err);
/* Frees all of r (rc != 0: the open shard's temporary file is removed). */
void sk_shard_run_release(sk_shard_run *r, int rc);

#endif
