/*
 * reshard.c - `shardkit shard`: existing shards in, new shards out; this
 * file runs it (the files of its engine: shard_int.h).
 *
 * Inputs are byte streams (local files and stdin, or the caller's in_open; s3://
 * objects through one streaming GET each) parsed by libarchive, so any tar
 * dialect, compression filter, zip or 7z works; s3:// outputs stream into
 * multipart uploads (sink_s3.c), no local copy made.  Members group into
 * samples by the WebDataset rule (adjacent members with one key).  A sample is
 * assembled once, directly as the tar bytes it will have in the output
 * (headers, data, padding), so writing it is one writev; with --shuffle it
 * goes into a shuffle bucket instead (shuffle.c: in memory up to
 * --shuffle-mem, else a file) and is written after the scatter pass.
 * Without --shuffle only one sample is ever held in memory.
 *
 * Without filters or image work (--shuffle or not), a plain tar input
 * with a sound index is read through the index instead (direct_input:
 * 2 MiB batches of the file mapped private, or pread once headers must be
 * rewritten; the headers and CRC32Cs checked, no libarchive), each sample
 * written from the batch; plain output goes out in megabyte writes from a
 * second thread (io/outq.c).  With --shuffle such an input's samples go
 * into the buckets as references (input, offset: direct_refs), weighing
 * what their bytes would, and are read when the drain writes them
 * (emit_ref).  Either way the output bytes are the same.
 */
#include "pack/shard_int.h"
#include "pack/part.h"
#include "io/emit.h"
#include "format/image.h"

#include <jansson.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* ------------------------------------------------------------------ state */

void sk_rs_warnf(rs *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(r->o->warn, r->o->ctx, fmt, ap);
    va_end(ap);
}

static double since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

void sk_rs_progress(rs *r, int final)
{
    if (!r->o->progress) return;
    if (!final && since(&r->last) < 0.5) return;
    clock_gettime(CLOCK_MONOTONIC, &r->last);
    r->st.seconds = since(&r->t0);
    r->o->progress(r->o->ctx, &r->st);
}
/* ------------------------------------------------------------------ --keys */

static int keyset_add(struct keyset *k, const char *s, size_t n, sk_error *err)
{
    if ((k->n + 1) * 2 > k->cap) {
        size_t nc = k->cap ? k->cap * 2 : 1024;
        char **ns = calloc(nc, sizeof *ns);
        SK_FAIL_IF(!ns, err, SK_E_NOMEM, "out of memory");
        for (size_t i = 0; i < k->cap; i++) {
            if (!k->slot[i]) continue;
            size_t j = sk_fnv1a64(k->slot[i], strlen(k->slot[i])) & (nc - 1);
            while (ns[j]) j = (j + 1) & (nc - 1);
            ns[j] = k->slot[i];
        }
        free(k->slot);
        k->slot = ns;
        k->cap = nc;
    }
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return SK_OK;
        j = (j + 1) & (k->cap - 1);
    }
    SK_FAIL_IF(!(k->slot[j] = strndup(s, n)), err, SK_E_NOMEM, "out of memory");
    k->n++;
    return SK_OK;
}

static int keyset_has(const struct keyset *k, const char *s, size_t n)
{
    if (!k->cap) return 0;
    size_t j = sk_fnv1a64(s, n) & (k->cap - 1);
    while (k->slot[j]) {
        if (strlen(k->slot[j]) == n && !memcmp(k->slot[j], s, n)) return 1;
        j = (j + 1) & (k->cap - 1);
    }
    return 0;
}

static void keyset_free(struct keyset *k)
{
    for (size_t i = 0; i < k->cap; i++) free(k->slot[i]);
    free(k->slot);
}

static int load_keys(rs *r, const char *path, sk_error *err)
{
    sk_place_in *in; /* a local file, or s3:// and http(s):// streamed */
    SK_GUARD(sk_place_in_open(&in, path, r->o->s3, err));
    FILE *f = sk_place_in_file(in);
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = SK_OK;
    while (!rc && (n = getline(&line, &cap, f)) >= 0) {
        while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) n--;
        if (n) rc = keyset_add(&r->keys, line, (size_t)n, err);
    }
    if (!rc && ferror(f)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", path);
    free(line);
    return sk_place_in_close(in, rc, err);
}

/* ---------------------------------------------------------------- filters */

static int ext_in(const char *e, size_t n, const char *const *list, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (!sk_ext_cmp(e, n, list[i], strlen(list[i]))) return (int)i + 1;
    return 0;
}

/* Decides whether a member with extension e is kept, and its output
 * extension (*out, *out_len). */
int sk_rs_keep_member(const rs *r, const char *e, size_t n, const char **out, size_t *out_len)
{
    const sk_shard_options *o = r->o;
    if (o->nselect && !ext_in(e, n, o->select, o->nselect)) return 0;
    if (o->ndrop && ext_in(e, n, o->drop, o->ndrop)) return 0;
    int i = ext_in(e, n, o->rename_from, o->nrename);
    *out = i ? o->rename_to[i - 1] : e;
    *out_len = i ? strlen(o->rename_to[i - 1]) : n;
    return 1;
}

int sk_rs_keep_sample(const rs *r, const char *key, size_t klen)
{
    if (r->o->keys_file && !keyset_has(&r->keys, key, klen)) return 0;
    /* --part I/N: the sample's part depends on its key alone (lib/part.c) */
    if (r->o->parts && sk_part_of(key, klen, r->o->parts) != r->o->part) return 0;
    return 1;
}
/* ---------------------------------------------------------------- inputs */

/* Expands the user's inputs: brace patterns; a manifest, a directory or an
 * s3:// prefix become their shards (a directory's or prefix's manifest.json
 * when there is one, else the shards listed in it), as every reading tool
 * takes them. */
static int expand_inputs(rs *r, const char *const *in, size_t n, char ***out, size_t *nout,
                         sk_error *err)
{
    char **list = NULL;
    size_t cnt = 0, cap = 0;
    int rc = SK_OK;
    for (size_t i = 0; i < n && !rc; i++) { /* the one resolver (io/dataset.c) */
        sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = r->o->s3,
                         .env = &r->env};
        sk_ds_shard *ds = NULL;
        size_t k = 0;
        rc = sk_ds_resolve(in[i], &ro, &ds, &k, err);
        for (size_t j = 0; j < k && !rc; j++) {
            if ((rc = sk_grow((void **)&list, &cap, cnt + 2, sizeof *list, err))) break;
            list[cnt] = ds[j].url; /* moved */
            ds[j].url = NULL;
            cnt++;
        }
        sk_ds_free(ds, k);
    }
    if (list) list[cnt] = NULL;
    if (rc) {
        for (size_t i = 0; i < cnt; i++) free(list[i]);
        free(list);
        return rc;
    }
    *out = list;
    *nout = cnt;
    return SK_OK;
}

/* Refuses, before anything is written, a run whose output names include
 * one of its inputs: a finished shard (and its .idx) is renamed over its
 * final name, so `shard ds/ -o ds/s-%03d.tar` would replace inputs it had
 * not read yet and leave a dataset of duplicates.  Local inputs are
 * matched by file identity against the files in the output directory that
 * the pattern names (so "./ds/s-000.tar", a symbolic or hard link to it
 * are all caught); s3:// URLs as text. */
static int refuse_own_inputs(const char *pattern, const char *manifest, uint64_t start,
                             char *const *in, size_t n, sk_error *err)
{
    const char *problem = NULL;
    uint64_t k;
    int rc = SK_OK;
    sk_fileids ids = {0}; /* the inputs, by identity (core/fileid.c) */
    if (sk_is_s3_url(pattern)) {
        for (size_t i = 0; i < n && !problem; i++)
            if (sk_shard_number(pattern, in[i], &k) && k >= start) problem = in[i];
    } else {
        const char *slash = strrchr(pattern, '/');
        char odir[4200], name[8400];
        snprintf(odir, sizeof odir, "%.*s", slash ? (int)(slash - pattern) + 1 : 1,
                 slash ? pattern : ".");
        const char *obase = slash ? slash + 1 : pattern;
        for (size_t i = 0; i < n && !rc; i++) rc = sk_fileids_add(&ids, in[i], err);
        DIR *d = !rc && ids.n ? opendir(odir) : NULL; /* none there yet: nothing to replace */
        struct dirent *de;
        while (d && !problem && (de = readdir(d))) {
            if (!sk_shard_number(obase, de->d_name, &k) || k < start) continue;
            snprintf(name, sizeof name, "%s%s", slash ? odir : "", de->d_name);
            problem = sk_fileids_find(&ids, name);
        }
        if (d) closedir(d);
    }
    if (!rc && problem)
        rc = sk_error_set(err, SK_E_USAGE, "%s: an input of this run is also one of its output "
                          "names (%s): write the new shards to another directory or pattern",
                          problem, pattern);
    if (!rc) { /* nor is the manifest (given, or beside the shards) */
        char mpath[4200];
        sk_pack_lock_path(pattern, manifest, mpath, sizeof mpath);
        rc = sk_fileids_refuse(&ids, mpath, "the manifest", err);
    }
    sk_fileids_free(&ids);
    return rc;
}

/* The options that shaped the output, for the manifest (docs/format.md),
 * with jansson (extensions and names escaped whatever they hold).  NULL
 * when out of memory. */
static char *options_json(const rs *r)
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
        static const char *const modes[] = {"no", "keep_ratio", "keep_ratio_largest", "center_crop",
                                            "border"};
        static const char *const policies[] = {"skip", "keep", "fail"};
        const sk_image_options *io = o->images;
        json_t *im = json_pack("{s:I, s:s, s:b, s:i, s:I, s:f, s:b, s:s, s:I}", "image_size",
                               (json_int_t)io->image_size, "resize_mode",
                               modes[io->resize_mode >= 0 && io->resize_mode <= 4 ? io->resize_mode : 0],
                               "resize_only_if_bigger", io->resize_only_if_bigger, "encode_quality",
                               io->encode_quality ? io->encode_quality : 95, "min_image_size",
                               (json_int_t)io->min_image_size, "max_aspect_ratio", io->max_aspect_ratio,
                               "image_meta", io->image_meta, "bad_image",
                               policies[io->bad_image >= 0 && io->bad_image <= 2 ? io->bad_image : 0],
                               "max_pixels",
                               (json_int_t)(io->max_pixels ? io->max_pixels : SK_IMAGE_MAX_PIXELS));
        bad = json_object_set_new(sh, "images", im);
    }
    bad = bad || json_object_set(root, "shard", sh);
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(sel), json_decref(drop), json_decref(ren), json_decref(sh), json_decref(root);
    return text;
}

static int reshard_run(const char *const *inputs, size_t ninputs, sk_shard_options *opts,
                       const char *pattern_tmpl, sk_shard_stats *stats, sk_error *err)
{
    rs r = {.o = opts, .pattern_tmpl = pattern_tmpl, .rfd = -1};
    struct samp s = {0};
    char **in = NULL;
    sk_run_lock lock = SK_RUN_LOCK_INIT;
    size_t nin = 0;
    int rc = SK_OK;
    clock_gettime(CLOCK_MONOTONIC, &r.t0);
    r.last = r.t0;
    r.out.zlevel = opts->compress_level;
    r.to_stdout = opts->pattern && !strcmp(opts->pattern, "-");
    r.max_size = opts->max_size ? opts->max_size : SK_EMIT_DEFAULT_MAX_SIZE;
    r.max_count = opts->max_count;
    if (!opts->pattern) return sk_error_set(err, SK_E_USAGE, "no output pattern");
    SK_FAIL_IF((sk_is_s3_url(opts->pattern) || sk_is_s3_url(opts->manifest)) && !opts->s3, err,
               SK_E_USAGE, "%s: an s3:// output needs an S3 client", opts->pattern);
    if (r.to_stdout && (opts->num_shards > 1 || opts->max_count || opts->max_size || opts->resume))
        return sk_error_set(err, SK_E_USAGE, "-o - writes one tar stream: --num-shards, "
                            "--max-size, --max-count and --resume do not apply");
    if (!r.to_stdout) {
        char probe[4200];
        SK_GUARD(sk_shard_name(opts->pattern, 0, probe, sizeof probe, err));
        SK_GUARD(sk_pack_check_suffix(opts->pattern, opts->compress_level, err));
    }
    if (!ninputs) return sk_error_set(err, SK_E_USAGE, "no input shards");
    sk_store_env_init(&r.env, opts->s3); /* released at cleanup */
    if ((rc = expand_inputs(&r, inputs, ninputs, &in, &nin, err))) goto cleanup;
    if (!r.to_stdout &&
        (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err)))
        goto cleanup;
    r.st.inputs = nin;
    for (size_t i = 0; i < nin && !rc; i++) { /* for the ETA and the shuffle's buckets */
        uint64_t size;
        if (!(rc = sk_rs_input_size(&r, in[i], &size, err)) && size != UINT64_MAX)
            r.st.bytes_in_total += size;
    }
    if (rc) goto cleanup;
    if (opts->keys_file && (rc = load_keys(&r, opts->keys_file, err))) goto cleanup;

    if (!r.to_stdout) {
        const char *slash = strrchr(opts->pattern, '/');
        snprintf(r.mdir, sizeof r.mdir, "%.*s", slash ? (int)(slash - opts->pattern) : 0,
                 opts->pattern);
        /* a dry run creates nothing: no directory, no lock (shard_emit.c) */
        if (!opts->dry_run && r.mdir[0] && !sk_is_s3_url(r.mdir) && (rc = sk_mkdirs(r.mdir, err)))
            goto cleanup;
        if (opts->manifest) {
            snprintf(r.mpath, sizeof r.mpath, "%s", opts->manifest);
            const char *ms = strrchr(r.mpath, '/');
            snprintf(r.mdir, sizeof r.mdir, "%.*s", ms ? (int)(ms - r.mpath) : 0, r.mpath);
            if (!opts->dry_run && r.mdir[0] && !sk_is_s3_url(r.mdir) && (rc = sk_mkdirs(r.mdir, err)))
                goto cleanup;
        } else {
            snprintf(r.mpath, sizeof r.mpath, "%s%smanifest.json", r.mdir, r.mdir[0] ? "/" : "");
        }
        /* one run at a time per dataset and per shard names (the locks go
         * with the process) */
        if (!opts->dry_run && (rc = sk_run_lock_take(&lock, opts->pattern, opts->manifest, "shard", 1, err)))
            goto cleanup;
        r.man = sk_manifest_new();
        if (!r.man || !(r.man->options_json = options_json(&r))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            goto cleanup;
        }
        /* a manifest already there: refused, appended to or replaced,
         * before any shard is written; an append starts after its last */
        uint64_t start0 = opts->start;
        r.grow.mode = opts->existing;
        r.grow.parts = opts->parts;
        if ((rc = sk_existing_begin(&r.grow, opts->s3, opts->pattern, r.mpath, r.mdir,
                                r.man->options_json, &opts->start,
                                opts->num_shards ? opts->num_shards : UINT64_MAX, err)) ||
            (opts->start != start0 &&
             (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err))))
            goto cleanup;
    }

    r.out.sink_opts = (sk_sink_opts){opts->s3, opts->s3_part_size};
    if (sk_is_s3_url(opts->pattern) && !opts->dry_run && /* a killed run's unfinished uploads go first */
        (rc = sk_sink_s3_prepare(opts->s3, opts->pattern, opts->start, opts->num_shards, opts->warn,
                                 opts->ctx, err)))
        goto cleanup;
    if (sk_image_options_active(opts->images) && (rc = sk_rs_pool_new(&r.pool, opts, err))) goto cleanup;
    r.pbuf = -1;
    if (!opts->compress_level && !sk_is_s3_url(opts->pattern) &&
        (rc = sk_outq_new(&r.q, &r.out, sysconf(_SC_NPROCESSORS_ONLN) > 1, err)))
        goto cleanup;
    /* without filters or image work each sample passes whole: shards
     * with a sound index are read through it (direct_input), into the
     * shuffle's buckets too */
    r.direct = !opts->nselect && !opts->ndrop && !opts->nrename && !opts->keys_file &&
               !opts->parts && !r.pool;
    if (opts->shuffle) {
        /* scatter: every sample into a random bucket (a reference to it
         * when read through its index) */
        if ((rc = sk_shuffler_new(&r.shuf, opts->tmp_dir, opts->seed, opts->shuffle_mem,
                                  r.st.bytes_in_total, err)) ||
            (r.direct && (rc = sk_infiles_new(&r.inf, 0, err))))
            goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = sk_rs_take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
            sk_rs_progress(&r, 0);
        }
        if (!rc && r.pool) rc = sk_rs_pool_emit(&r, 1, 1, err);
        if (rc) goto cleanup;
        r.total = sk_shuffler_count(r.shuf);
        if ((rc = sk_shuffler_drain(r.shuf, sk_rs_emit_record, &r, err))) goto cleanup;
    } else {
        if (opts->num_shards && (rc = sk_rs_count_samples(&r, in, nin, &s, err))) goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = sk_rs_take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
        }
        if (!rc && r.pool) rc = sk_rs_pool_emit(&r, 1, 1, err);
        if (rc) goto cleanup;
    }
    /* --num-shards: shards left empty (fewer samples than shards) still exist */
    while (!rc && opts->num_shards && !r.to_stdout &&
           r.shard_no + (r.open ? 1 : 0) < opts->num_shards) {
        if (r.open && (rc = sk_rs_close_shard(&r, err))) break;
        rc = sk_rs_open_shard(&r, err);
    }
    if (!rc && !r.open && !r.st.shards) rc = sk_rs_open_shard(&r, err); /* an empty input: one empty shard */
    if (!rc) rc = sk_rs_close_shard(&r, err);
    if (!rc && r.man && opts->parts) {
        r.man->part = opts->part;
        r.man->parts = opts->parts;
        for (size_t i = 0; i < r.man->nshards; i++) r.man->shards[i].part = opts->part;
    }
    if (!rc && r.man && !opts->dry_run) /* last of all: a reader never sees a manifest of missing shards */
        rc = sk_existing_commit(&r.grow, opts->s3, r.man, r.mpath, sk_pack_manifest_flags(opts->manifest),
                                opts->warn, opts->ctx, err);
    if (!rc) sk_rs_progress(&r, 1);

cleanup:
    sk_outq_free(r.q); /* before the abort: nothing writes to a removed file */
    if (rc && r.open && !r.rix) sk_shard_out_abort(&r.out);
    for (int i = 0; i < 2; i++) {
        if (r.ob[i].map) munmap(r.ob[i].map, r.ob[i].maplen);
        free(r.ob[i].heap);
    }
    sk_rs_pool_free(r.pool);
    sk_run_lock_release(&lock);
    if (r.rix) sk_index_close(r.rix);
    sk_rs_resume_fd_close(&r);
    sk_shard_out_release(&r.out);
    sk_shuffler_free(r.shuf);
    sk_infiles_free(r.inf);
    sk_manifest_free(r.man);
    sk_existing_release(&r.grow);
    sk_store_env_release(&r.env);
    keyset_free(&r.keys);
    for (size_t i = 0; i < nin; i++) free(in[i]);
    free(in);
    free(s.key);
    free(s.m);
    free(s.exts);
    free(s.img);
    free(r.rec);
    free(r.vm);
    r.st.seconds = since(&r.t0);
    if (stats) *stats = r.st;
    return rc;
}

void sk_shard_options_init_sized(sk_shard_options *o, size_t size)
{
    static const sk_shard_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_reshard(const char *const *inputs, size_t ninputs, const sk_shard_options *opts,
               sk_shard_stats *stats, sk_error *err)
{
    /* --part: {part} in the pattern (and manifest) names this part's files */
    sk_shard_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_shard_options", err));
    const char *pattern_tmpl = o.pattern;
    char *pattern = NULL, *manifest = NULL;
    if (o.pattern && strcmp(o.pattern, "-")) {
        SK_GUARD(sk_part_output_names(o.pattern, o.manifest, o.part, o.parts,
                                      &pattern, &manifest, err));
        o.pattern = pattern;
        if (manifest) o.manifest = manifest;
    }
    int rc = reshard_run(inputs, ninputs, &o, pattern_tmpl, stats, err);
    free(pattern);
    free(manifest);
    return rc;
}
