/*
 * pack_images.c - `pack --image-size ...`: the images of a pack run are
 * resized on the way to the shards, as a stage of pack's own sample path.
 *
 * Pack plans its shards from the files' sizes before it reads a byte, and
 * a resized image has a size nobody knows until it is encoded.  So with
 * images pack plans no shards: its ring (pack.c) reads and builds the
 * samples in its order as always, and hands each, in order, to the stage
 * here instead of a shard.  The stage makes it a sample of the image
 * transform (shard_images.c: a pool of threads, results in sample order)
 * and gives what comes out to the shard output that `shard` writes through
 * (shard_out.c), which cuts the shards as samples arrive, indexes them,
 * resumes, and writes the manifest.  No tar stream between the two, no
 * thread of pack's own, no second parse of the bytes: the samples pass as
 * the memory they were built in.  Memory stays bounded (pack's ring, the
 * pool's ring bounded by count and bytes, and the decodes' shared
 * --image-memory budget), and the bytes are the same whatever --jobs is.
 */
#include "pack/pack_int.h"
#include "io/shard_run.h"
#include "format/tar.h"

#include <pthread.h>
#include <stdlib.h>

struct stage {
    sk_pack *p;
    sk_shard_run r;               /* the output (shard_out.c) */
    struct run_sample s;      /* the sample being handed on */
    unsigned char *piece; /* a member too big for a slot, read in pieces */
};

/* ------------------------------------------------------------ a big sample */

static int piece_put(void *ctx, unsigned char *buf, size_t n, uint32_t crc, sk_error *err)
{
    struct run_sample *s = ctx;
    SK_GUARD(sk_grow((void **)&s->img, &s->cap, s->len + n, 1, err));
    memcpy(s->img + s->len, buf, n);
    s->crc = sk_crc32c_combine(s->crc, crc, n);
    s->len += n;
    return SK_OK;
}

/* A sample too big for a slot (sl->stream): its tar bytes built in s, each
 * member read in bounded pieces (the transform needs it whole, as pack's
 * own writer does not); sl->m gets the members as sk_pack_fill_slot sets
 * them, a member that cannot be read skipped under --skip-errors. */
static int read_whole(struct stage *g, uint32_t id, struct slot *sl, sk_error *err)
{
    sk_pack *p = g->p;
    const sk_catalog *c = &p->cat;
    struct run_sample *s = &g->s;
    size_t first = c->samples[id], k = sk_sample_members(c, id);
    char name[SK_TAR_NAME_MAX + 1];
    if (!g->piece && !(g->piece = malloc(STREAM_PIECE + 1)))
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; i < k; i++) {
        const sk_item *it = &c->items[first + i];
        struct member_out *mo = &sl->m[i];
        size_t n = sk_item_name(c, it, name), at = s->len;
        uint32_t at_crc = s->crc;
        SK_GUARD(sk_grow((void **)&s->img, &s->cap, s->len + SK_TAR_HEADER_MAX, 1, err));
        size_t hl = sk_tar_header(s->img + s->len, name, n, it->size, p->o.mtime);
        s->crc = sk_crc32c(s->crc, s->img + s->len, hl);
        s->len += hl;
        sk_error e = {0};
        int rc = sk_pack_stream_member(c, it, name, g->piece, piece_put, s, &mo->crc, &e, err);
        if (rc && !e.code) return rc; /* out of memory: not the input's fault */
        mo->skipped = 0;
        if (rc) {
            if (!p->o.skip_errors) {
                *err = e;
                return rc;
            }
            sk_pack_slot_warn(sl, e.msg);
            mo->skipped = 1;
            s->len = at, s->crc = at_crc;
            continue;
        }
        size_t pad = (size_t)(sk_tar_pad(it->size) - it->size);
        SK_GUARD(sk_grow((void **)&s->img, &s->cap, s->len + pad, 1, err));
        memset(s->img + s->len, 0, pad);
        s->crc = sk_crc32c(s->crc, s->img + s->len, pad);
        s->len += pad;
        mo->header_len = (uint32_t)hl;
        mo->data_off = at + hl;
        mo->size = it->size;
    }
    return SK_OK;
}

/* ------------------------------------------------------------- the stage */

/* Pack's sample id, built in sl (pack_fill.c), as a sample of the
 * transform: its bytes (taken from the slot, not copied), key and members
 * (their extensions lowercased, then as named, as shard_read.c lays them
 * out); then into the output, in order. */
static int to_stage(void *ctx, uint32_t id, struct slot *sl, struct tally *t, sk_error *err)
{
    struct stage *g = ctx;
    const sk_catalog *c = &g->p->cat;
    struct run_sample *s = &g->s;
    size_t first = c->samples[id], k = sk_sample_members(c, id);
    s->klen = s->nm = s->elen = s->len = 0, s->crc = 0;
    if (sl->stream) {
        SK_GUARD(read_whole(g, id, sl, err));
    } else { /* the slot's buffer becomes the sample's, and the other way round */
        unsigned char *b = sl->buf;
        size_t cap = sl->cap;
        sl->buf = s->img, sl->cap = s->cap;
        s->img = b, s->cap = cap, s->len = sl->len, s->crc = sl->crc;
    }
    SK_GUARD(sk_grow((void **)&s->key, &s->kcap, SK_TAR_NAME_MAX + 1, 1, err));
    s->klen = sk_pack_sample_key(c, id, s->key);
    SK_GUARD(sk_grow((void **)&s->m, &s->mcap, k ? k : 1, sizeof *s->m, err));
    for (size_t i = 0; i < k; i++) {
        const struct member_out *mo = &sl->m[i];
        if (mo->skipped) continue;
        const sk_item *it = &c->items[first + i];
        const char *e = c->arena + it->base + it->key_end + 1;
        size_t el = strlen(e);
        SK_GUARD(sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * el + 1, 1, err));
        for (size_t j = 0; j < el; j++)
            s->exts[s->elen + j] = e[j] >= 'A' && e[j] <= 'Z' ? (char)(e[j] + 32) : e[j];
        memcpy(s->exts + s->elen + el, e, el);
        s->m[s->nm++] = (struct run_member){.data_off = mo->data_off, .size = mo->size,
                                      .hlen = mo->header_len, .crc = mo->crc,
                                      .ext_off = (uint32_t)s->elen, .ext_len = (uint32_t)el};
        s->elen += 2 * el;
        t->files++;
        t->bytes += mo->size;
    }
    if (!s->nm) return SK_OK; /* every member skipped: no sample, as pack writes none */
    t->samples++;
    g->r.st.samples_in++;
    return sk_shard_run_put(&g->r, s, err);
}

/* The output's progress: its shards, and pack's files and bytes, in one
 * report through pack's own callback; pack's reports carry these counts
 * too (sk_pack_progress_take). */
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
    /* the shards' shape is the output's to give (shard_out.c), with pack's
     * options; pack's own run writes none */
    sk_shard_options so;
    sk_shard_options_init(&so);
    so.pattern = p->o.pattern; /* {part} expanded already (sk_pack_new) */
    so.manifest = p->o.manifest;
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
    so.s3 = p->cat.s3;
    so.s3_part_size = p->cat.s3_part_size;
    so.images = p->o.images;
    so.jobs = p->o.jobs;
    /* the manifest is written over none of the inputs (pack.c checks the
     * same without images) */
    char mpath[4200];
    sk_emit_lock_path(p->o.pattern, p->o.manifest, mpath, sizeof mpath);
    SK_GUARD(sk_run_files_add(&p->files, mpath, "the manifest", 0, err));
    SK_GUARD(sk_run_files_check(&p->files, err));
    struct stage g = {.p = p};
    SK_GUARD(sk_shard_run_init(&g.r, &so, p->pattern_tmpl, err));
    sk_pack_stats pst = {0};
    int rc = sk_shard_run_output_open(&g.r, "pack", err);
    if (!rc) rc = sk_shard_run_output_start(&g.r, err);
    if (!rc) {
        p->images_live = 1;
        p->stage = to_stage;
        p->stage_ctx = &g;
        p->o.max_size = UINT64_MAX / 4; /* one stream: pack plans no shards */
        p->o.max_count = 0;
        p->o.compress_level = 0;
        p->o.resume = 0;
        rc = run(p, &pst, err);
        p->stage = NULL;
        if (!rc) rc = sk_shard_run_put_done(&g.r, err);
        if (!rc) rc = sk_shard_run_output_finish(&g.r, err);
    }
    sk_shard_run_release(&g.r, rc);
    free(g.s.key), free(g.s.m), free(g.s.exts), free(g.s.img);
    free(g.piece);
    if (stats) {
        const sk_shard_stats *sst = &g.r.st;
        *stats = pst;
        stats->samples = sst->samples;
        stats->shards = sst->shards;
        stats->shards_resumed = sst->shards_resumed;
        stats->output_bytes = sst->output_bytes;
        stats->images = sst->images;
        stats->image_skips = sst->image_skips;
        stats->bad_images = sst->bad_images;
        stats->seconds = pst.seconds > sst->seconds ? pst.seconds : sst->seconds;
    }
    return rc;
}
