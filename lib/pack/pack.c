/*
 * pack.c - shardkit pack: the catalog of inputs becomes a plan of shards,
 * and the plan becomes files.
 *
 * Many small files are bound by open/read/close, not bandwidth, so samples
 * are read and built (headers, data, padding, CRC32Cs) on several threads;
 * output never depends on the number of jobs.  Which writer runs:
 *  - plain local shards (no compression, no --on-error skip, no S3): the
 *    positional writers (pack_stream.c), stream mode (sizes taken as files
 *    open, no plan needed first) or, with --resume, spread mode (planned,
 *    pack_spread.c);
 *  - otherwise, with two or more shards to write, shard-parallel workers,
 *    each reading and writing whole shards with its own slots;
 *  - otherwise (one job, one shard, or S3 sources fetched in plan order)
 *    the ring: reader threads fill slots in plan order and the main thread
 *    writes them.  A sample too big for a slot is copied in bounded pieces.
 * Memory: the catalog's names plus slots of at most SLOT_MAX bytes.
 */
#include "pack/pack_int.h"
#include "pack/pack_out.h"
#include "core/rng.h"
#include "io/io.h"
#include "format/tar.h"
#include "io/store.h"

#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ lifecycle */

void sk_pack_options_init_sized(sk_pack_options *o, size_t size)
{
    static const sk_pack_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

/* The run's locks (sk_run_lock: its manifest and its shard names);
 * create: make the directories first, else only lock where they exist.
 * With images the resharding half takes them (pack_images.c). */
static int take_lock(sk_pack *p, int create, sk_error *err)
{
    if (p->stream_fd >= 0 || sk_image_options_active(p->o.images)) return SK_OK;
    return sk_run_lock_take(&p->lock, p->o.pattern, p->o.manifest, "pack", create, err);
}

int sk_pack_new(sk_pack **out, const sk_pack_options *opts_in, sk_error *err)
{
    sk_pack_options opts_buf;
    const sk_pack_options *opts = &opts_buf;
    SK_GUARD(sk_options_take(&opts_buf, sizeof opts_buf, opts_in, NULL, "sk_pack_options", err));
    char probe[4096];
    *out = NULL;
    SK_FAIL_IF(!opts->pattern, err, SK_E_USAGE, "no output pattern");
    /* "-": the samples as one plain tar stream on standard output (the
     * stream mode pack feeds its image pool with): no index, no manifest */
    int to_stdout = !strcmp(opts->pattern, "-");
    SK_FAIL_IF(to_stdout && (opts->parts || opts->resume || opts->compress_level ||
                             opts->manifest || sk_image_options_active(opts->images)),
               err, SK_E_USAGE, "-o - writes one plain tar stream on stdout: --part, --resume, "
               "--compress, --manifest and image resizing do not apply (shard -o - resizes)");
    if (!to_stdout) SK_GUARD(sk_shard_name(opts->pattern, 0, probe, sizeof probe, err));
    SK_GUARD(sk_emit_check_places(opts->pattern, opts->manifest, "pack", err));
    SK_GUARD(sk_emit_check_suffix(opts->pattern, opts->compress_level, err));
    sk_pack *p = calloc(1, sizeof *p);
    SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory");
    p->o = *opts;
    p->stream_fd = -1;
    p->lock = (sk_run_lock)SK_RUN_LOCK_INIT;
    if (!p->o.max_size) p->o.max_size = SK_PACK_DEFAULT_MAX_SIZE;
    if (p->o.jobs <= 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        p->o.jobs = n > 0 ? (int)n : 1;
    }
    if (p->o.jobs > 256) p->o.jobs = 256;
    sk_catalog_init(&p->cat);
    p->cat.follow_symlinks = opts->follow_symlinks;
    p->cat.skip_errors = opts->skip_errors;
    p->cat.tmp_dir = opts->tmp_dir;
    p->cat.jobs = p->o.jobs;
    p->cat.warn = opts->warn;
    p->cat.warn_ctx = opts->ctx;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->slot_ready, NULL);
    pthread_cond_init(&p->slot_free, NULL);
    /* --part: {part} in the names becomes this part's number (format/part.c) */
    p->pattern_tmpl = opts->pattern;
    p->manifest_tmpl = opts->manifest;
    int rc = sk_part_output_names(opts->pattern, opts->manifest, opts->part, opts->parts,
                                  &p->part_pattern, &p->part_manifest, err);
    if (rc) {
        sk_pack_free(p);
        return rc;
    }
    p->o.pattern = p->part_pattern;
    if (p->part_manifest) p->o.manifest = p->part_manifest;
    if (to_stdout) {
        p->stream_fd = STDOUT_FILENO;
        p->o.max_size = UINT64_MAX / 4; /* one stream: no rolling over */
        p->o.max_count = 0;
    }
    /* one run at a time per dataset, from the start when its directory
     * exists (before the walk of the inputs, which may take long), else
     * once sk_pack_run has made it */
    if ((rc = take_lock(p, 0, err))) {
        sk_pack_free(p);
        return rc;
    }
    *out = p;
    return SK_OK;
}

void sk_pack_free(sk_pack *p)
{
    if (!p) return;
    sk_pack_slots_release(p->slots, p->nslots);
    free(p->slots);
    free(p->order);
    free(p->sbytes);
    for (size_t i = 0; p->shards && i < p->nshards; i++) sk_key_range_free(&p->shards[i].range);
    free(p->shards);
    free(p->pending);
    for (size_t i = 0; i < p->ext_tallies_n; i++) sk_manifest_free(p->ext_tallies[i]);
    free(p->ext_tallies);
    free(p->part_pattern);
    free(p->part_manifest);
    if (p->inline_fill) sk_pack_dir_cache_release(&p->inline_dc, &p->cat);
    sk_run_lock_release(&p->lock);
    sk_run_files_free(&p->files);
    sk_existing_release(&p->grow);
    sk_catalog_release(&p->cat);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->slot_ready);
    pthread_cond_destroy(&p->slot_free);
    free(p);
}

int sk_pack_add_dir(sk_pack *p, const char *dir, sk_error *err)
{
    /* Shards written inside a directory being walked would be packed into
     * later shards (and the run's lock and temporary files met as inputs):
     * refused before anything is written, as GNU tar skips its own archive. */
    const char *outs[] = {p->o.pattern, p->o.manifest};
    for (size_t i = 0; i < SK_ARRAY_LEN(outs); i++) {
        if (!outs[i] || !strcmp(outs[i], "-") || sk_store_is_remote(outs[i]) || p->stream_fd >= 0) continue;
        char *odir = sk_dir_of(outs[i]);
        SK_FAIL_IF(!odir, err, SK_E_NOMEM, "out of memory");
        int inside = sk_path_within(odir, dir);
        free(odir);
        SK_FAIL_IF(inside, err, SK_E_USAGE,
                   "%s: the output %s is inside this input directory, so shards would be packed "
                   "into later ones: write the output outside it", dir, outs[i]);
    }
    /* walked when the run starts: a window at a time in stream mode */
    SK_GUARD(sk_run_files_add(&p->files, dir, NULL, 1, err));
    return sk_catalog_add_dir_lazy(&p->cat, dir, err);
}

int sk_pack_add_list(sk_pack *p, FILE *list, const char *list_name, const char *root,
                     int nul_separated, sk_error *err)
{
    return sk_catalog_add_list(&p->cat, list, list_name, root, nul_separated, err);
}

int sk_pack_add_archive(sk_pack *p, const char *path, sk_error *err)
{
    SK_GUARD(sk_run_files_add(&p->files, path, NULL, 0, err));
    return sk_catalog_add_archive(&p->cat, path, err);
}

int sk_pack_add_output(sk_pack *p, const char *path, const char *what, sk_error *err)
{
    SK_FAIL_IF(!p || !what, err, SK_E_USAGE, "sk_pack_add_output: no pack or no role");
    return sk_run_files_add(&p->files, path, what, 0, err);
}

/* remote sources live in catalog_remote.c and fetch_remote.c (through the store), the S3 sink in io/sink_s3.c */
int sk_pack_set_s3(sk_pack *p, sk_s3 *s3, int concurrency, uint64_t part_size, sk_error *err)
{
    return sk_catalog_set_s3(&p->cat, s3, concurrency, part_size, err);
}

int sk_pack_add_s3(sk_pack *p, const char *url, sk_error *err)
{
    return sk_catalog_add_s3(&p->cat, url, err);
}

int sk_pack_add_sagemaker_manifest(sk_pack *p, const char *manifest, sk_error *err)
{
    SK_GUARD(sk_run_files_add(&p->files, manifest, NULL, 0, err));
    return sk_catalog_add_sagemaker(&p->cat, manifest, err);
}

int sk_pack_add_s3_list(sk_pack *p, FILE *list, const char *list_name, const char *base_url,
                        int nul_separated, sk_error *err)
{
    return sk_catalog_add_s3_list(&p->cat, list, list_name, base_url, nul_separated, err);
}

/* ------------------------------------------------------------- planning */

static int plan(sk_pack *p, sk_error *err)
{
    sk_catalog *c = &p->cat;
    SK_GUARD(sk_catalog_group(c, err));
    /* --part: keep only the samples of this part (format/part.c) */
    if (p->o.parts > 0) SK_GUARD(sk_part_filter(c, p->o.part, p->o.parts, err));
    p->order = sk_xmalloc((c->nsamples + 1) * sizeof *p->order, err);
    if (!p->order) return SK_E_NOMEM;
    for (size_t i = 0; i < c->nsamples; i++) p->order[i] = (uint32_t)i;
    p->sbytes = sk_xmalloc((c->nsamples + 1) * sizeof *p->sbytes, err);
    if (!p->sbytes) return SK_E_NOMEM;
    for (size_t i = 0; i < c->nsamples && !c->defer_sizes; i++)
        p->sbytes[i] = sk_pack_sample_bytes(c, (uint32_t)i);
    if (p->o.shuffle) {
        uint64_t s = p->o.seed;
        for (size_t i = c->nsamples; i > 1; i--) {
            size_t j = (size_t)sk_uniform_below(&s, i);
            uint32_t t = p->order[i - 1];
            p->order[i - 1] = p->order[j];
            p->order[j] = t;
        }
    }
    p->st.files_total = c->nitems;
    if (c->defer_sizes) return SK_OK; /* stream mode places samples as it sizes them */
    size_t cap = 16;
    p->shards = sk_xmalloc(cap * sizeof *p->shards, err);
    if (!p->shards) return SK_E_NOMEM;
    struct shard_plan cur = {0};
    const uint64_t eoa = 2 * SK_TAR_BLOCK;
    for (uint64_t pos = 0; pos < c->nsamples; pos++) {
        uint64_t b = p->sbytes[p->order[pos]];
        if (sk_pack_rolls(&p->o, cur.bytes, cur.count, b)) {
            if (p->nshards == cap) {
                struct shard_plan *q = sk_xrealloc(p->shards, (cap *= 2) * sizeof *q, err);
                if (!q) return SK_E_NOMEM;
                p->shards = q;
            }
            cur.bytes += eoa;
            p->shards[p->nshards++] = cur;
            memset(&cur, 0, sizeof cur);
            cur.first = pos;
        }
        if (b + eoa > p->o.max_size) {
            char name[SK_TAR_NAME_MAX + 1];
            sk_item_name(c, &c->items[c->samples[p->order[pos]]], name);
            sk_pack_warn_oversized(&p->o, name, b);
        }
        cur.bytes += b;
        cur.count++;
    }
    if (cur.count) {
        if (p->nshards == cap) {
            struct shard_plan *q = sk_xrealloc(p->shards, (cap + 1) * sizeof *q, err);
            if (!q) return SK_E_NOMEM;
            p->shards = q;
        }
        cur.bytes += eoa;
        p->shards[p->nshards++] = cur;
    }
    p->st.files_total = c->nitems;
    for (size_t i = 0; i < c->nitems; i++) p->st.bytes_total += c->items[i].size;
    return SK_OK;
}

/* A planned shard's smallest and largest key (in key order the first and
 * last sample; after --shuffle any), for the manifest's key ranges. */
static int shard_key_range(sk_pack *p, const struct shard_plan *sp, sk_manifest *man, size_t i,
                           sk_error *err)
{
    char lo[SK_TAR_NAME_MAX + 1], hi[SK_TAR_NAME_MAX + 1], k[SK_TAR_NAME_MAX + 1];
    size_t lol = sk_pack_sample_key(&p->cat, p->order[sp->first], lo), hil = lol;
    memcpy(hi, lo, lol);
    for (uint64_t j = 1; j < sp->count; j++) {
        size_t kl = sk_pack_sample_key(&p->cat, p->order[sp->first + j], k);
        if (sk_key_cmp(k, kl, lo, lol) < 0) memcpy(lo, k, kl), lol = kl;
        else if (sk_key_cmp(k, kl, hi, hil) > 0) memcpy(hi, k, kl), hil = kl;
    }
    return sk_manifest_set_key_range(man, i, lo, lol, hi, hil, err);
}

/* --resume: a shard is kept when its index is sound, agrees with the file
 * and holds exactly the planned samples (count, first and last key). */
static int shard_matches_plan(sk_pack *p, struct shard_plan *sp, const char *path)
{
    char ipath[4200], key[SK_TAR_NAME_MAX + 1];
    struct stat st;
    sk_index *ix = NULL;
    sk_sample_ref first, last;
    int ok = 0;
    if (sk_store_is_remote(path)) { /* s3io: the shard and its index are objects, checked by the sink */
        size_t k1 = sk_pack_sample_key(&p->cat, p->order[sp->first], ipath);
        size_t k2 = sk_pack_sample_key(&p->cat, p->order[sp->first + sp->count - 1], key);
        return sk_sink_s3_matches(p->cat.s3, path, sp->count, ipath, k1, key, k2, &sp->info);
    }
    if (stat(path, &st) != 0 || sk_emit_index_path(path, ipath, sizeof ipath)) return 0;
    if (sk_index_open(&ix, ipath, 0, NULL) != SK_OK) return 0;
    const sk_index_shard_info *info = sk_index_shard(ix);
    if (info->size == (uint64_t)st.st_size && sk_index_sample_count(ix) == sp->count &&
        sp->count && !sk_index_sample(ix, 0, &first, NULL) &&
        !sk_index_sample(ix, sp->count - 1, &last, NULL)) {
        size_t k = sk_pack_sample_key(&p->cat, p->order[sp->first], key);
        ok = k == first.key_len && !memcmp(key, first.key, k);
        k = sk_pack_sample_key(&p->cat, p->order[sp->first + sp->count - 1], key);
        ok = ok && k == last.key_len && !memcmp(key, last.key, k);
    }
    /* and every sample is this run's: the same members, sizes and bytes
     * in its inputs (an earlier run over other inputs with the same names
     * is not resumed) */
    ok = ok && sk_pack_shard_options_match(p, path, ix);
    for (uint64_t i = 0; ok && i < sp->count; i++)
        ok = sk_pack_sample_proven(p, p->order[sp->first + i], ix, i);
    /* The shard's bytes must still be the ones the index was made for:
     * reading it back costs far less than rewriting it. */
    if (ok) ok = sk_emit_file_crc32c(path, info->size) == (int64_t)info->crc32c;
    if (ok) sp->info = *info;
    sk_index_close(ix);
    return ok;
}

/* ------------------------------------------------------------- readers */


static void *reader_main(void *arg)
{
    sk_pack *p = arg;
    struct dir_cache dc = {0, 0, -1};
    pthread_mutex_lock(&p->mu);
    for (;;) {
        if (p->stop || p->next_claim >= p->npending) break;
        uint64_t seq = p->next_claim++;
        while (!p->stop && seq >= p->released + p->nslots) {
            p->readers_waiting++;
            pthread_cond_wait(&p->slot_free, &p->mu);
            p->readers_waiting--;
        }
        if (p->stop) break;
        struct slot *sl = &p->slots[seq % p->nslots];
        sl->state = FILLING;
        pthread_mutex_unlock(&p->mu);
        sk_pack_fill_slot(p, sl, p->order[p->pending[seq]], &dc, NULL);
        pthread_mutex_lock(&p->mu);
        sl->state = READY;
        /* wake the writer only when it sleeps on this very slot */
        if (p->writer_waits_for == seq) pthread_cond_signal(&p->slot_ready);
    }
    pthread_mutex_unlock(&p->mu);
    sk_pack_dir_cache_release(&dc, &p->cat);
    return NULL;
}

/* ------------------------------------------------------------- writing */

static int append_piece(void *out, unsigned char *buf, size_t n, uint32_t crc, sk_error *err)
{
    struct iovec iov = {buf, n};
    return sk_shard_out_writev(out, &iov, 1, n, crc, err);
}

/* The writer's own copy of a sample too big for a slot, in bounded pieces
 * appended to the shard; a member whose input fails is skipped (cut off
 * again) under --skip-errors. */
static int stream_sample(sk_pack *p, sk_shard_out *out, uint32_t s, struct slot *sl,
                         sk_error *err)
{
    const sk_catalog *c = &p->cat;
    size_t first = c->samples[s], k = sk_sample_members(c, s);
    unsigned char *buf = malloc(STREAM_PIECE + 1);
    uint64_t sample_off = out->bytes;
    int rc = SK_OK;
    SK_FAIL_IF(!buf, err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; i < k && !rc; i++) {
        const sk_item *it = &c->items[first + i];
        struct member_out *mo = &sl->m[i];
        uint64_t start = out->bytes;
        uint32_t start_crc = out->crc;
        size_t hl;
        sk_error e;
        e.code = 0;
        e.msg[0] = 0;
        mo->skipped = 0;
        rc = sk_pack_stream_tar_member(p, it, buf, append_piece, out, &hl, &mo->crc, &e, err);
        if (rc && !e.code) break; /* the shard's write failed: not the input's fault */
        if (rc) {
            if (!p->o.skip_errors) {
                *err = e;
                break;
            }
            sk_pack_slot_warn(sl, e.msg);
            mo->skipped = 1;
            rc = sk_shard_out_truncate(out, start, start_crc, err);
            continue;
        }
        mo->header_len = (uint32_t)hl;
        mo->data_off = start + hl - sample_off;
        mo->size = it->size;
    }
    free(buf);
    if (!rc) sl->len = out->bytes - sample_off;
    return rc;
}

static void print_warnings(sk_pack *p, struct slot *sl, struct tally *t)
{
    if (!sl->warnings) return;
    char *save = NULL;
    for (char *line = strtok_r(sl->warnings, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        t->skipped++;
        sk_pack_warnf(p, "skipped: %s", line);
    }
    free(sl->warnings);
    sl->warnings = NULL;
}

/* --jobs 1: no reader thread; the writer fills the next batch's slots
 * itself (up to what one writev gathers), then writes them.  One thread
 * does all the work, with no handoff between threads per sample. */
static void fill_inline(sk_pack *p, uint64_t end)
{
    uint64_t limit = p->released + p->nslots, bytes = 0;
    if (limit > end) limit = end;
    for (int n = 0; p->next_claim < limit && n < BATCH_IOV && bytes < BATCH_BYTES; n++) {
        uint64_t seq = p->next_claim++;
        struct slot *sl = &p->slots[seq % p->nslots];
        sk_pack_fill_slot(p, sl, p->order[p->pending[seq]], &p->inline_dc, NULL);
        sl->state = READY;
        bytes += sl->len;
        if (sl->stream || sl->failed) break;
    }
}

/* Ring mode: writes planned shard sp from pending positions [*seq, ...):
 * waits for each slot in order, batches ready slots into one writev. */
static int write_shard_ring(sk_pack *p, struct shard_plan *sp, uint64_t *seq, sk_shard_out *out,
                            struct tally *t, sk_error *err)
{
    uint64_t end = *seq + sp->count;
    struct iovec iov[BATCH_IOV];
    int rc = SK_OK;
    while (*seq < end && !rc) {
        int n = 0;
        uint64_t bytes = 0, batch_first = *seq;
        uint32_t crc = 0;
        if (p->inline_fill) fill_inline(p, end);
        pthread_mutex_lock(&p->mu);
        p->writer_waits_for = *seq;
        while (p->slots[*seq % p->nslots].state != READY)
            pthread_cond_wait(&p->slot_ready, &p->mu);
        p->writer_waits_for = UINT64_MAX;
        pthread_mutex_unlock(&p->mu);
        uint64_t off = out->bytes;
        if (p->stage) { /* --image-size: one sample at a time to the stage (pack_images.c) */
            struct slot *sl = &p->slots[*seq % p->nslots];
            if (sl->failed) *err = sl->err, rc = err->code ? err->code : SK_E_IO;
            else rc = p->stage(p->stage_ctx, p->order[p->pending[*seq]], sl, t, err);
            print_warnings(p, sl, t);
            (*seq)++;
        }
        while (!p->stage) {
            struct slot *sl = &p->slots[*seq % p->nslots];
            if (sl->failed) {
                *err = sl->err;
                rc = err->code ? err->code : SK_E_IO;
                break;
            }
            if (sl->stream) break;
            print_warnings(p, sl, t);
            iov[n].iov_base = sl->buf;
            iov[n].iov_len = sl->len;
            crc = sk_crc32c_combine(crc, sl->crc, sl->len);
            if ((rc = sk_pack_add_index_records(p, out, p->order[p->pending[*seq]], off + bytes, sl->m, t, err)))
                break;
            bytes += sl->len;
            n++;
            (*seq)++;
            /* Never gather more slots than the ring holds: the slot after
             * the last is this batch's first, still marked ready. */
            if (*seq >= end || n == BATCH_IOV || (size_t)n >= p->nslots || bytes >= BATCH_BYTES)
                break;
            pthread_mutex_lock(&p->mu);
            int ready = p->slots[*seq % p->nslots].state == READY;
            pthread_mutex_unlock(&p->mu);
            if (!ready) break;
        }
        if (!rc && n) rc = sk_shard_out_writev(out, iov, n, bytes, crc, err);
        if (!rc && !n && !p->stage) { /* the slot at *seq is a big sample to stream */
            struct slot *sl = &p->slots[*seq % p->nslots];
            uint64_t at = out->bytes;
            rc = stream_sample(p, out, p->order[p->pending[*seq]], sl, err);
            if (!rc) rc = sk_pack_add_index_records(p, out, p->order[p->pending[*seq]], at, sl->m, t, err);
            print_warnings(p, sl, t);
            (*seq)++;
        }
        pthread_mutex_lock(&p->mu);
        for (uint64_t q = batch_first; q < *seq; q++) p->slots[q % p->nslots].state = FREE;
        p->released = *seq;
        if (p->readers_waiting) pthread_cond_broadcast(&p->slot_free);
        pthread_mutex_unlock(&p->mu);
        sk_pack_tally_fold(p, t);
        sk_pack_progress(p, 0);
    }
    return rc;
}

/* Shard-parallel mode: one thread reads and writes a whole shard with its
 * own slots, batching samples into one writev; several threads write
 * different shards at once, so both the reading and the writing of bytes
 * spread over the cores, and nothing is handed between threads. */
struct shard_worker {
    sk_pack *p;
    struct slot slots[LOCAL_SLOTS];
    struct dir_cache dc;
    sk_shard_out out;
    struct tally t;
};

static int write_shard_local(struct shard_worker *w, struct shard_plan *sp, sk_error *err)
{
    sk_pack *p = w->p;
    sk_shard_out *out = &w->out;
    uint64_t pos = sp->first, end = sp->first + sp->count;
    struct iovec iov[LOCAL_SLOTS];
    int rc = SK_OK;
    while (pos < end && !rc) {
        int n = 0;
        uint64_t bytes = 0, off = out->bytes;
        uint32_t crc = 0;
        while (pos < end && n < LOCAL_SLOTS && bytes < BATCH_BYTES) {
            struct slot *sl = &w->slots[n];
            sk_pack_fill_slot(p, sl, p->order[pos], &w->dc, NULL);
            if (sl->failed) {
                *err = sl->err;
                return err->code ? err->code : SK_E_IO;
            }
            if (sl->stream) {
                if (n) break; /* write what is gathered, then stream this one */
                uint64_t at = out->bytes;
                rc = stream_sample(p, out, p->order[pos], sl, err);
                if (!rc) rc = sk_pack_add_index_records(p, out, p->order[pos], at, sl->m, &w->t, err);
                print_warnings(p, sl, &w->t);
                pos++;
                break;
            }
            print_warnings(p, sl, &w->t);
            iov[n].iov_base = sl->buf;
            iov[n].iov_len = sl->len;
            crc = sk_crc32c_combine(crc, sl->crc, sl->len);
            if ((rc = sk_pack_add_index_records(p, out, p->order[pos], off + bytes, sl->m, &w->t, err)))
                return rc;
            bytes += sl->len;
            n++;
            pos++;
        }
        if (!rc && n) rc = sk_shard_out_writev(out, iov, n, bytes, crc, err);
        sk_pack_stats snap;
        pthread_mutex_lock(&p->mu);
        sk_pack_tally_fold(p, &w->t);
        int due = sk_pack_progress_take(p, 0, &snap);
        if (p->stop && !rc) rc = -1; /* another shard failed: give up quietly */
        pthread_mutex_unlock(&p->mu);
        if (due) sk_pack_progress_report(p, &snap);
    }
    return rc;
}

static void *shard_worker_main(void *arg)
{
    struct shard_worker *w = arg;
    sk_pack *p = w->p;
    char path[4200];
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (p->next_shard < p->nshards && p->shards[p->next_shard].done) p->next_shard++;
        size_t i = p->next_shard < p->nshards && !p->stop ? p->next_shard++ : SIZE_MAX;
        pthread_mutex_unlock(&p->mu);
        if (i == SIZE_MAX) break;
        struct shard_plan *sp = &p->shards[i];
        sk_error e;
        e.code = 0;
        e.msg[0] = 0;
        int rc = sk_shard_name(p->o.pattern, p->o.start + i, path, sizeof path, &e);
        if (!rc) rc = sk_shard_out_begin(&w->out, path, &e);
        if (!rc) rc = write_shard_local(w, sp, &e);
        if (!rc) rc = sk_shard_out_finish(&w->out, &sp->info, &e);
        if (!rc) sp->written = sk_index_builder_samples(w->out.index);
        pthread_mutex_lock(&p->mu);
        if (rc) {
            sk_shard_out_abort(&w->out);
            if (rc > 0 && !p->first_err.code) {
                p->first_err = e;
                if (!p->first_err.code) p->first_err.code = rc;
            }
            p->stop = 1;
        } else {
            p->st.output_bytes += sp->info.size;
            p->st.shards++; /* live, for progress; recounted with the manifest */
        }
        pthread_mutex_unlock(&p->mu);
        if (rc) break;
    }
    return NULL;
}

/* Starts the ring's reader threads and writes every shard still to do,
 * in order, from the main thread. */
static int write_with_ring(sk_pack *p, sk_shard_out *out, pthread_t **threads, int *nthreads,
                           sk_error *err)
{
    char path[4200];
    struct tally t = {0};
    int rc = SK_OK;
    /* A deep ring lets the writer gather big batches (fewer writev calls)
     * and rides out slow files; typical slots hold tens of KB. */
    p->nslots = (size_t)p->o.jobs * 8 + 16;
    p->writer_waits_for = UINT64_MAX;
    p->slots = calloc(p->nslots, sizeof *p->slots);
    *threads = calloc((size_t)p->o.jobs, sizeof **threads);
    t.exts = sk_manifest_new();
    if (!p->slots || !*threads || !t.exts || sk_pack_add_tally(p, t.exts)) {
        sk_manifest_free(t.exts);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    p->inline_fill = p->o.jobs == 1;
    p->inline_dc = (struct dir_cache){0, 0, -1};
    for (int i = 0; i < p->o.jobs && p->npending && !p->inline_fill; i++) {
        if (pthread_create(&(*threads)[i], NULL, reader_main, p) != 0)
            return sk_error_set(err, SK_E_NOMEM, "cannot start reader thread: %s", strerror(errno));
        (*nthreads)++;
    }
    uint64_t seq = 0;
    for (size_t i = 0; i < p->nshards && !rc; i++) {
        struct shard_plan *sp = &p->shards[i];
        if (sp->done) continue;
        if (p->stage) { /* the samples go to the image stage, not to a shard */
            if ((rc = write_shard_ring(p, sp, &seq, out, &t, err))) break;
            continue;
        }
        if (p->stream_fd < 0 && (rc = sk_shard_name(p->o.pattern, p->o.start + i, path, sizeof path, err))) break;
        if ((rc = p->stream_fd >= 0 ? sk_shard_out_begin_fd(out, p->stream_fd, "pack's sample stream", err)
                                    : sk_shard_out_begin(out, path, err)))
            break;
        if ((rc = write_shard_ring(p, sp, &seq, out, &t, err))) break;
        if ((rc = sk_shard_out_finish(out, &sp->info, err))) break;
        sp->written = sk_index_builder_samples(out->index);
        pthread_mutex_lock(&p->mu);
        p->st.output_bytes += sp->info.size;
        p->st.shards++; /* live, for progress; recounted with the manifest */
        pthread_mutex_unlock(&p->mu);
    }
    return rc;
}

/* Runs min(jobs, shards to do) shard workers to the end. */
static int write_parallel(sk_pack *p, size_t pending_shards, sk_error *err)
{
    size_t n = (size_t)p->o.jobs < pending_shards ? (size_t)p->o.jobs : pending_shards;
    struct shard_worker *w = calloc(n, sizeof *w);
    pthread_t *th = calloc(n, sizeof *th);
    size_t started = 0;
    int rc = SK_OK;
    if (!w || !th) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; !rc && i < n; i++) {
        w[i].p = p;
        w[i].dc.fd = -1;
        w[i].out.zlevel = p->o.compress_level;
        w[i].out.sink_opts = (sk_sink_opts){p->cat.s3, p->cat.s3_part_size};
        w[i].t.exts = sk_manifest_new();
        if (!w[i].t.exts || sk_pack_add_tally(p, w[i].t.exts)) {
            sk_manifest_free(w[i].t.exts);
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        } else if (pthread_create(&th[i], NULL, shard_worker_main, &w[i]) != 0) {
            rc = sk_error_set(err, SK_E_NOMEM, "cannot start writer thread: %s", strerror(errno));
        } else {
            started++;
        }
    }
    if (rc) {
        pthread_mutex_lock(&p->mu);
        p->stop = 1;
        pthread_mutex_unlock(&p->mu);
    }
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    for (size_t i = 0; w && i < n; i++) {
        sk_pack_slots_release(w[i].slots, LOCAL_SLOTS);
        sk_pack_dir_cache_release(&w[i].dc, &p->cat);
        sk_shard_out_release(&w[i].out);
    }
    if (!rc && p->first_err.code) {
        if (err) *err = p->first_err;
        rc = p->first_err.code;
    }
    free(w);
    free(th);
    return rc;
}

int sk_pack_run(sk_pack *p, sk_pack_stats *stats, sk_error *err)
{
    char path[4200], mpath[4200], mdir[4200];
    sk_manifest *man = NULL;
    sk_shard_out out = {0};
    pthread_t *threads = NULL;
    int nthreads = 0, rc;
    SK_FAIL_IF(p->o.dry_run && sk_image_options_active(p->o.images), err, SK_E_USAGE,
               "--dry-run does not combine with --image-size: resized images have no size "
               "until they are encoded");
    if (sk_image_options_active(p->o.images) && !p->stage)
        return sk_pack_run_images(p, sk_pack_run, stats, err);
    clock_gettime(CLOCK_MONOTONIC, &p->t0);
    p->last_progress = p->t0;
    out.zlevel = p->o.compress_level; /* 0: plain tar */

    p->cat.defer_sizes = !p->o.dry_run && sk_pack_stream_eligible(p); /* a plan needs sizes */
    /* in key order from directories alone, stream mode walks them as it
     * writes; otherwise they are walked whole now */
    p->windowed = p->cat.defer_sizes && !p->o.shuffle && sk_catalog_all_lazy(&p->cat);
    if (!p->windowed && (rc = sk_catalog_walk_lazy(&p->cat, err))) goto cleanup;
    if ((rc = plan(p, err))) goto cleanup;
    if (p->o.dry_run) { /* the plan only: nothing made, nothing written */
        for (size_t i = 0; i < p->nshards; i++)
            p->st.samples += p->shards[i].count, p->st.output_bytes += p->shards[i].bytes;
        p->st.shards = p->nshards;
        goto cleanup;
    }
    /* where the manifest goes, and the output directory */
    const char *slash = strrchr(p->o.pattern, '/');
    snprintf(mdir, sizeof mdir, "%.*s", slash ? (int)(slash - p->o.pattern) : 0, p->o.pattern);
    if ((rc = sk_sink_make_dir(p->o.pattern, err))) goto cleanup;
    /* no output over an input: the manifest and the side outputs */
    sk_emit_lock_path(p->o.pattern, p->o.manifest, path, sizeof path);
    if (!sk_pack_one_stream(p) && ((rc = sk_run_files_add(&p->files, path, "the manifest", 0, err)) ||
                             (rc = sk_run_files_check(&p->files, err))))
        goto cleanup;
    if ((rc = take_lock(p, 1, err))) goto cleanup;
    sk_emit_manifest_path(p->o.pattern, p->o.manifest, mpath, sizeof mpath, mdir, sizeof mdir);
    man = sk_manifest_new();
    if (!man || !(man->options_json = sk_pack_options_json(p->pattern_tmpl, &p->o))) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
    /* a manifest already there: refused, appended to (numbering after its
     * last shard) or replaced, before any shard is written */
    p->grow.mode = p->o.existing;
    p->grow.parts = p->o.parts;
    if (!sk_pack_one_stream(p) &&
        (rc = sk_existing_begin(&p->grow, p->cat.s3, p->o.pattern, mpath, mdir, man->options_json,
                            &p->o.start, p->cat.defer_sizes ? UINT64_MAX : p->nshards, err)))
        goto cleanup;
    if (!sk_pack_one_stream(p) && /* s3io: aborts a killed run's uploads */
        (rc = sk_sink_prepare(p->cat.s3, p->o.pattern, p->o.start, p->nshards,
                              p->cat.warn, p->cat.warn_ctx, err)))
        goto cleanup;
    out.sink_opts = (sk_sink_opts){p->cat.s3, p->cat.s3_part_size};
    man->part = p->o.part; /* --part */
    man->parts = p->o.parts;

    /* which planned shards are already complete (--resume) */
    p->pending = sk_xmalloc((p->cat.nsamples + 1) * sizeof *p->pending, err);
    if (!p->pending) { rc = SK_E_NOMEM; goto cleanup; }
    for (size_t i = 0; i < p->nshards; i++) {
        struct shard_plan *sp = &p->shards[i];
        if (!sk_pack_one_stream(p) && (rc = sk_shard_name(p->o.pattern, p->o.start + i, path, sizeof path, err))) goto cleanup;
        if (p->o.resume && shard_matches_plan(p, sp, path)) {
            sp->done = 1;
            p->st.shards_resumed++;
            for (uint64_t k = 0; k < sp->count; k++) {
                uint32_t s = p->order[sp->first + k];
                p->st.files_done += sk_sample_members(&p->cat, s);
                for (size_t m = 0; m < sk_sample_members(&p->cat, s); m++)
                    p->st.bytes_done += p->cat.items[p->cat.samples[s] + m].size;
            }
            continue;
        }
        for (uint64_t k = 0; k < sp->count; k++) p->pending[p->npending++] = sp->first + k;
    }

    if ((rc = sk_fetch_start(&p->cat, p->order, p->pending, p->npending, err))) goto cleanup; /* s3io */
    size_t pending_shards = 0;
    for (size_t i = 0; i < p->nshards; i++) pending_shards += !p->shards[i].done;
    /* s3io: S3 sources are fetched ahead in plan order, which the ring
     * consumes in order; shard-parallel workers would not */
    if (p->cat.defer_sizes) {
        if ((rc = sk_pack_write_stream(p, err))) goto cleanup;
        p->st.bytes_total = p->st.bytes_done; /* known at last */
    } else if (sk_pack_one_stream(p)) { /* one stream, in order: the ring */
        if ((rc = write_with_ring(p, &out, &threads, &nthreads, err))) goto cleanup;
        if (!p->nshards && !p->stage) { /* nothing to pack: still a tar, an empty one */
            static const unsigned char eoa[2 * SK_TAR_BLOCK];
            rc = sk_write_all(p->stream_fd, eoa, sizeof eoa, "pack's sample stream", err);
        }
        goto cleanup; /* no manifest: the reading side writes it */
    } else if (p->o.jobs >= 2 && pending_shards && !p->cat.fetch && !p->o.skip_errors &&
        !p->o.compress_level && sk_sink_positional(p->o.pattern)) {
        if ((rc = sk_pack_write_spread(p, err))) goto cleanup;
    } else if (p->o.jobs >= 2 && pending_shards >= 2 && !p->cat.fetch) {
        if ((rc = write_parallel(p, pending_shards, err))) goto cleanup;
    } else {
        if ((rc = write_with_ring(p, &out, &threads, &nthreads, err))) goto cleanup;
    }

    /* the manifest, in shard order (its count replaces the live one) */
    p->st.shards = 0;
    for (size_t i = 0; i < p->nshards; i++) {
        struct shard_plan *sp = &p->shards[i];
        if ((rc = sk_shard_name(p->o.pattern, p->o.start + i, path, sizeof path, err))) goto cleanup;
        if (sp->done && (rc = sk_sink_count_exts(p->cat.s3, path, man, err)))
            goto cleanup;
        if (sp->done) p->st.samples += sp->count;
        if ((rc = sk_emit_manifest_add(man, path, mdir, &sp->info, sp->done ? sp->count : sp->written,
                                       p->o.part /* --part */, NULL, err)))
            goto cleanup;
        /* the plan knows every key of a shard that holds all it planned
         * (--skip-errors may have left some out: no range then) */
        if ((sp->done || sp->written == sp->count) && sp->count &&
            (rc = sp->range.first ? sk_manifest_set_key_range(man, man->nshards - 1, sp->range.first,
                                                              sp->range.first_len, sp->range.last,
                                                              sp->range.last_len, err)
                                  : shard_key_range(p, sp, man, man->nshards - 1, err)))
            goto cleanup;
        p->st.shards++;
    }
    for (size_t i = 0; i < p->ext_tallies_n; i++)
        for (size_t k = 0; k < p->ext_tallies[i]->nexts; k++)
            if ((rc = sk_manifest_count_ext(man, p->ext_tallies[i]->exts[k].ext,
                                            strlen(p->ext_tallies[i]->exts[k].ext),
                                            p->ext_tallies[i]->exts[k].count, err)))
                goto cleanup;
    if (!(rc = sk_existing_commit(&p->grow, p->cat.s3, man, mpath, sk_emit_manifest_flags(p->o.manifest),
                                  p->cat.warn, p->cat.warn_ctx, err)))
        sk_pack_progress(p, 1);

cleanup:
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->slot_free);
    pthread_mutex_unlock(&p->mu);
    sk_fetch_cancel(&p->cat); /* s3io: readers waiting on S3 objects give up */
    for (int t = 0; t < nthreads; t++) pthread_join(threads[t], NULL);
    sk_fetch_free(&p->cat);
    free(threads);
    if (rc) sk_shard_out_abort(&out);
    sk_shard_out_release(&out);
    sk_manifest_free(man);
    p->st.seconds = sk_pack_since(&p->t0);
    p->st.skipped += p->cat.skipped;
    if (stats) *stats = p->st;
    return rc;
}
