/*
 * shard_out.c - the output side of a `shard` run as one piece that any
 * producer of samples feeds: begun (the shards' directory, the run's
 * locks, the manifest and what an earlier one left, S3 uploads a killed
 * run left, the image stage, the writer thread), given samples in order
 * (sk_shard_run_put: through the image stage when there is one, then into the
 * --shuffle buckets or out), finished (empty shards --num-shards asks
 * for, the last shard closed, the manifest written last) and released.
 * shard's inputs (tools/reshard.c) feed it, and so does pack with --image-size
 * (pack/pack_images.c): both write the same bytes the same way.
 */
#include "io/shard_run.h"
#include "format/image.h"
#include "io/emit.h"
#include "io/store.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------ the manifest */

/* The options that shaped the output, for the manifest (docs/format.md),
 * with jansson (extensions and names escaped whatever they hold).  NULL
 * when out of memory. */
static char *options_json(const sk_shard_run *r)
{
    const sk_shard_options *o = r->o;
    const char *tmpl = r->pattern_tmpl ? r->pattern_tmpl : o->pattern;
    const char *base = strrchr(tmpl, '/');
    base = base ? base + 1 : tmpl;
    json_t *sh = json_object(), *root = json_object(), *sel = json_array(), *drop = json_array(),
           *ren = json_object();
    int bad = !sh || !root || !sel || !drop || !ren;
    for (size_t i = 0; !bad && i < o->nselect; i++) bad = json_array_append_new(sel, sk_json_str(o->select[i]));
    for (size_t i = 0; !bad && i < o->ndrop; i++) bad = json_array_append_new(drop, sk_json_str(o->drop[i]));
    for (size_t i = 0; !bad && i < o->nrename; i++)
        bad = json_object_set_new(ren, o->rename_from[i], sk_json_str(o->rename_to[i]));
    char z[32];
    snprintf(z, sizeof z, "zstd:%d", o->compress_level);
    bad = bad || json_object_set_new(sh, "pattern", sk_json_str(base)) ||
          json_object_set_new(sh, "start", sk_json_u64(o->start)) ||
          json_object_set_new(sh, "max_size", sk_json_u64(r->max_size)) ||
          json_object_set_new(sh, "max_count", sk_json_u64(r->max_count)) ||
          json_object_set_new(sh, "num_shards", sk_json_u64(o->num_shards)) ||
          json_object_set_new(sh, "order", json_string(o->shuffle ? "shuffle" : "input")) ||
          json_object_set_new(sh, "seed", sk_json_u64(o->shuffle ? o->seed : 0)) ||
          json_object_set_new(sh, "mtime", sk_json_u64(o->mtime)) ||
          json_object_set(sh, "select", sel) || json_object_set(sh, "drop", drop) ||
          json_object_set(sh, "rename", ren) ||
          json_object_set_new(sh, "keys", json_boolean(o->keys_file != NULL)) ||
          json_object_set_new(sh, "compress", o->compress_level ? json_string(z) : json_null());
    if (!bad && sk_image_options_active(o->images)) { /* they shape the output too */
        const sk_image_options *io = o->images;
        json_t *im = json_pack("{s:I, s:s, s:b, s:i, s:I, s:f, s:b, s:s, s:I}", "image_size",
                               (json_int_t)io->image_size, "resize_mode",
                               sk_image_mode_name(io->resize_mode),
                               "resize_only_if_bigger", io->resize_only_if_bigger, "encode_quality",
                               io->encode_quality ? io->encode_quality : 95, "min_image_size",
                               (json_int_t)io->min_image_size, "max_aspect_ratio", io->max_aspect_ratio,
                               "image_meta", io->image_meta, "bad_image",
                               sk_image_bad_name(io->bad_image),
                               "max_pixels",
                               (json_int_t)(io->max_pixels ? io->max_pixels : SK_IMAGE_MAX_PIXELS));
        bad = json_object_set_new(sh, "images", im);
    }
    bad = bad || json_object_set(root, "shard", sh);
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(sel), json_decref(drop), json_decref(ren), json_decref(sh), json_decref(root);
    return text;
}


/* ----------------------------------------------------------------- a run */

/* The options' defaults: here, where they are read, since both of the
 * run's producers (tools/reshard.c, pack/pack_images.c) set them up. */
void sk_shard_options_init_sized(sk_shard_options *o, size_t size)
{
    static const sk_shard_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_shard_run_init(sk_shard_run *r, sk_shard_options *o, const char *pattern_tmpl, sk_error *err)
{
    *r = (sk_shard_run){.o = o, .pattern_tmpl = pattern_tmpl, .pbuf = -1,
              .lock = SK_RUN_LOCK_INIT};
    clock_gettime(CLOCK_MONOTONIC, &r->t0);
    r->last = r->t0;
    r->out.zlevel = o->compress_level;
    r->to_stdout = o->pattern && !strcmp(o->pattern, "-");
    r->max_size = o->max_size ? o->max_size : SK_EMIT_DEFAULT_MAX_SIZE;
    r->max_count = o->max_count;
    if (!o->pattern) return sk_error_set(err, SK_E_USAGE, "no output pattern");
    SK_FAIL_IF((sk_store_is_s3(o->pattern) || sk_store_is_s3(o->manifest)) && !o->s3, err,
               SK_E_USAGE, "%s: an s3:// output needs an S3 client", o->pattern);
    if (r->to_stdout && (o->num_shards > 1 || o->max_count || o->max_size || o->resume))
        return sk_error_set(err, SK_E_USAGE, "-o - writes one tar stream: --num-shards, "
                            "--max-size, --max-count and --resume do not apply");
    if (!r->to_stdout) {
        char probe[4200];
        SK_GUARD(sk_shard_name(o->pattern, 0, probe, sizeof probe, err));
        SK_GUARD(sk_emit_check_suffix(o->pattern, o->compress_level, err));
    }
    return SK_OK;
}

int sk_shard_run_output_open(sk_shard_run *r, const char *what, sk_error *err)
{
    sk_shard_options *o = r->o;
    if (r->to_stdout) return SK_OK;
    /* the shards' directory and the manifest's (when given apart), made;
     * a dry run creates nothing: no directory, no lock (shard_emit.c) */
    char sdir[4200];
    const char *slash = strrchr(o->pattern, '/');
    snprintf(sdir, sizeof sdir, "%.*s", slash ? (int)(slash - o->pattern) : 0, o->pattern);
    sk_emit_manifest_path(o->pattern, o->manifest, r->mpath, sizeof r->mpath, r->mdir,
                          sizeof r->mdir);
    for (int i = 0; i < 2 && !o->dry_run; i++) {
        const char *d = i ? r->mdir : sdir;
        if (d[0] && !sk_store_is_s3(d)) SK_GUARD(sk_mkdirs(d, err));
    }
    /* one run at a time per dataset and per shard names (the locks go
     * with the process) */
    if (!o->dry_run) SK_GUARD(sk_run_lock_take(&r->lock, o->pattern, o->manifest, what, 1, err));
    r->man = sk_manifest_new();
    SK_FAIL_IF(!r->man || !(r->man->options_json = options_json(r)), err, SK_E_NOMEM,
               "out of memory");
    /* a manifest already there: refused, appended to or replaced, before
     * any shard is written; an append starts after its last */
    r->existing.mode = o->existing;
    r->existing.parts = o->parts;
    return sk_existing_begin(&r->existing, o->s3, o->pattern, r->mpath, r->mdir,
                             r->man->options_json, &o->start,
                             o->num_shards ? o->num_shards : UINT64_MAX, err);
}

/* A sample back from the image stage, in order: counted, said, then
 * dropped or passed on. */
static int from_images(void *ctx, struct run_sample *s, const struct img_outcome *out, sk_error *err)
{
    sk_shard_run *r = ctx;
    r->st.images += out->images;
    r->st.image_skips += out->image_skips;
    r->st.bad_images += out->bad_images;
    if (out->warn[0]) sk_shard_run_warnf(r, "%s", out->warn);
    if (out->skip) {
        r->st.dropped++;
        return SK_OK;
    }
    return sk_shard_run_emit_sample(r, s, err);
}

int sk_shard_run_output_start(sk_shard_run *r, sk_error *err)
{
    const sk_shard_options *o = r->o;
    r->out.sink_opts = (sk_sink_opts){o->s3, o->s3_part_size};
    if (sk_store_is_s3(o->pattern) && !o->dry_run) /* a killed run's unfinished uploads go first */
        SK_GUARD(sk_sink_s3_prepare(o->s3, o->pattern, o->start, o->num_shards, o->warn, o->ctx,
                                    err));
    if (sk_image_options_active(o->images))
        SK_GUARD(sk_img_pool_new(&r->pool, o->images, o->jobs, o->mtime, from_images, r, err));
    if (!o->compress_level && !sk_store_is_s3(o->pattern))
        SK_GUARD(sk_outq_new(&r->q, &r->out, sysconf(_SC_NPROCESSORS_ONLN) > 1, err));
    return SK_OK;
}

int sk_shard_run_emit_sample(sk_shard_run *r, struct run_sample *s, sk_error *err)
{
    struct sview v;
    sk_shard_run_view_of(s, &v);
    return r->shuf ? sk_shard_run_serialize(r, &v, err) : sk_shard_run_emit(r, &v, err);
}

int sk_shard_run_put(sk_shard_run *r, struct run_sample *s, sk_error *err)
{
    return r->pool ? sk_img_pool_submit(r->pool, s, err) : sk_shard_run_emit_sample(r, s, err);
}

int sk_shard_run_put_done(sk_shard_run *r, sk_error *err)
{
    return r->pool ? sk_img_pool_emit(r->pool, 1, 1, err) : SK_OK;
}

int sk_shard_run_output_finish(sk_shard_run *r, sk_error *err)
{
    const sk_shard_options *o = r->o;
    /* --num-shards: shards left empty (fewer samples than shards) still exist */
    while (o->num_shards && !r->to_stdout && r->shard_no + (r->open ? 1 : 0) < o->num_shards) {
        if (r->open) SK_GUARD(sk_shard_run_close_shard(r, err));
        SK_GUARD(sk_shard_run_open_shard(r, err));
    }
    if (!r->open && !r->st.shards) SK_GUARD(sk_shard_run_open_shard(r, err)); /* an empty input: one empty shard */
    SK_GUARD(sk_shard_run_close_shard(r, err));
    if (r->man && o->parts) {
        r->man->part = o->part;
        r->man->parts = o->parts;
        for (size_t i = 0; i < r->man->nshards; i++) r->man->shards[i].part = o->part;
    }
    if (r->man && !o->dry_run) /* last of all: a reader never sees a manifest of missing shards */
        SK_GUARD(sk_existing_commit(&r->existing, o->s3, r->man, r->mpath,
                                    sk_emit_manifest_flags(o->manifest), o->warn, o->ctx, err));
    sk_shard_run_progress(r, 1);
    return SK_OK;
}

void sk_shard_run_release(sk_shard_run *r, int rc)
{
    sk_outq_free(r->q); /* before the abort: nothing writes to a removed file */
    if (rc && r->open && !r->resumed) sk_shard_out_abort(&r->out);
    for (int i = 0; i < 2; i++) {
        if (r->ob[i].map) munmap(r->ob[i].map, r->ob[i].maplen);
        free(r->ob[i].heap);
    }
    sk_img_pool_free(r->pool);
    sk_run_lock_release(&r->lock);
    if (r->resumed) sk_index_close(r->resumed);
    sk_shard_out_release(&r->out);
    sk_shuffler_free(r->shuf);
    sk_infiles_free(r->inf);
    sk_manifest_free(r->man);
    sk_existing_release(&r->existing);
    free(r->rec);
    free(r->vm);
    r->st.seconds = sk_shard_run_since(&r->t0);
}
