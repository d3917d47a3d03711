/*
 * pack_images.c - `pack --image-size ...`: the images of a pack run are
 * resized on the way to the shards.
 *
 * Pack plans its shards from the files' sizes before it reads a byte, and
 * a resized image has a size nobody knows until it is encoded; resharding
 * rolls shards over as samples arrive, and already runs the image work on
 * a pool of threads in sample order (reshard.c).  So a pack with images is
 * the two joined by a pipe: pack writes its samples, in its order, as one
 * plain tar stream into the pipe on a thread of its own; sk_reshard reads
 * the pipe as its only input, resizes, and writes the shards, their
 * indexes and the manifest with the caller's options.  Memory stays
 * bounded (the pipe, the pool's ring bounded by count and bytes, and the
 * decodes' shared --image-memory budget), no temporary copy touches disk,
 * and the bytes are the same whatever --jobs is, as for both halves.
 */
#include "pack/pack_int.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

struct packer {
    sk_pack *p;
    sk_pack_run_fn run; /* pack's own run, writing the one tar stream */
    sk_pack_stats st;
    sk_error err;
    int rc;
    int done; /* pack's run returned (set under no lock: read after join or
                 through __atomic) */
};

static void *pack_thread(void *arg)
{
    struct packer *k = arg;
    /* if the reading side gives up, our writes fail with EPIPE instead of
     * a SIGPIPE that would end the process */
    sigset_t pipe_sig;
    sigemptyset(&pipe_sig);
    sigaddset(&pipe_sig, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
    k->err = (sk_error)SK_ERROR_INIT;
    k->rc = k->run(k->p, &k->st, &k->err);
    __atomic_store_n(&k->done, 1, __ATOMIC_RELEASE);
    close(k->p->stream_fd); /* the end of the stream, also after a failure */
    k->p->stream_fd = -1;
    return NULL;
}

struct pipe_in {
    int fd;
};

static int pipe_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct pipe_in *in = ctx;
    for (;;) {
        ssize_t n = read(in->fd, buf, cap);
        if (n < 0 && errno == EINTR) continue;
        SK_FAIL_IF(n < 0, err, SK_E_IO, "pack's sample stream: read failed: %s", strerror(errno));
        *got = (size_t)n;
        return SK_OK;
    }
}

static void pipe_close(void *ctx)
{
    (void)ctx; /* the pipe is closed by sk_pack_run_images */
}

static int pipe_open(void *ctx, sk_in_stream *s, const char *url, sk_error *err)
{
    (void)url, (void)err;
    s->ctx = ctx;
    s->read = pipe_read;
    s->close = pipe_close;
    s->size = UINT64_MAX;
    return SK_OK;
}

/* The resharding side's progress: its shards, and pack's files and bytes,
 * in one report through pack's own callback; pack's reports, made while
 * it still reads, carry these counts too (sk_pack_progress_take). */
static void img_progress(void *ctx, const sk_shard_stats *st)
{
    sk_pack *p = ctx;
    __atomic_store_n(&p->img_shards, st->shards, __ATOMIC_RELAXED);
    __atomic_store_n(&p->img_samples, st->samples, __ATOMIC_RELAXED);
    __atomic_store_n(&p->img_out, st->output_bytes, __ATOMIC_RELAXED);
    sk_pack_stats snap;
    pthread_mutex_lock(&p->mu);
    int due = sk_pack_progress_take(p, 1, &snap);
    pthread_mutex_unlock(&p->mu);
    if (due) sk_pack_progress_report(p, &snap);
}

static void img_warn(void *ctx, const char *msg)
{
    sk_pack *p = ctx;
    if (p->o.warn) p->o.warn(p->o.ctx, msg);
}

int sk_pack_run_images(sk_pack *p, sk_pack_run_fn run, sk_pack_stats *stats, sk_error *err)
{
    int fds[2];
    SK_FAIL_IF(pipe2(fds, O_CLOEXEC) != 0, err, SK_E_IO, "cannot make a pipe: %s", strerror(errno));
    /* the shards' shape is the reshard's to give; pack writes one stream */
    sk_shard_options so;
    sk_shard_options_init(&so);
    so.pattern = p->pattern_tmpl;
    so.manifest = p->manifest_tmpl;
    so.max_size = p->o.max_size;
    so.max_count = p->o.max_count;
    so.start = p->o.start;
    so.compress_level = p->o.compress_level;
    so.mtime = p->o.mtime;
    so.resume = p->o.resume;
    so.existing = p->o.existing;
    so.part = p->o.part;
    so.parts = p->o.parts;
    so.warn = p->o.warn ? img_warn : NULL;
    so.progress = p->o.progress ? img_progress : NULL;
    so.ctx = p;
    p->images_live = 1;
    so.s3 = p->cat.s3;
    so.s3_part_size = p->cat.s3_part_size;
    so.images = p->o.images;
    so.jobs = p->o.jobs;
    so.in_open = pipe_open;
    struct pipe_in in = {fds[0]};
    so.in_open_ctx = &in;

    p->stream_fd = fds[1];
    p->o.max_size = UINT64_MAX / 4; /* one stream: no rolling over on pack's side */
    p->o.max_count = 0;
    p->o.compress_level = 0;
    p->o.resume = 0;
    struct packer k = {.p = p, .run = run};
    pthread_t th;
    if (pthread_create(&th, NULL, pack_thread, &k) != 0) {
        close(fds[0]), close(fds[1]);
        p->stream_fd = -1;
        return sk_error_set(err, SK_E_NOMEM, "cannot start the pack thread: %s", strerror(errno));
    }
    sk_shard_stats sst;
    const char *inputs[] = {"pack"};
    int rc = sk_reshard(inputs, 1, &so, &sst, err);
    /* Whether pack had finished before the reading side stopped: if not,
     * and the reading side failed (a bad image under --bad-image fail, a
     * full disk), pack's own failure is only the EPIPE of the close below
     * and the reading side's error is the cause the user must see. */
    int pack_was_done = __atomic_load_n(&k.done, __ATOMIC_ACQUIRE);
    close(fds[0]); /* a pack thread still writing now fails with EPIPE */
    pthread_join(th, NULL);
    if (k.rc && (!rc || pack_was_done)) { /* pack's own failure explains the rest */
        *err = k.err;
        rc = k.rc;
    }
    if (stats) {
        *stats = k.st;
        stats->samples = sst.samples;
        stats->shards = sst.shards;
        stats->shards_resumed = sst.shards_resumed;
        stats->output_bytes = sst.output_bytes;
        stats->images = sst.images;
        stats->image_skips = sst.image_skips;
        stats->bad_images = sst.bad_images;
        stats->seconds = k.st.seconds > sst.seconds ? k.st.seconds : sst.seconds;
    }
    return rc;
}
