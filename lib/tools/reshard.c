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
#include "tools/shard_int.h"
#include "io/emit.h"
#include "io/store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------------------------------------------------------- inputs */

/* Expands the user's inputs: brace patterns; a manifest, a directory or an
 * s3:// prefix become their shards (a directory's or prefix's manifest.json
 * when there is one, else the shards listed in it), as every reading tool
 * takes them. */
static int expand_inputs(sk_shard_run *r, const char *const *in, size_t n, char ***out, size_t *nout,
                         sk_error *err)
{
    char **list = NULL;
    size_t cnt = 0, cap = 0;
    int rc = SK_OK;
    for (size_t i = 0; i < n && !rc; i++) { /* the one resolver (io/dataset.c) */
        sk_ds_opts ro = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = r->o->s3,
                         .env = &r->in->env};
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
 * are all caught); a remote place's objects by their names, which are
 * their only identity. */
static int refuse_own_inputs(const char *pattern, const char *manifest, uint64_t start,
                             char *const *in, size_t n, sk_error *err)
{
    const char *problem = NULL;
    uint64_t k;
    int rc = SK_OK;
    sk_fileids ids = {0}; /* the inputs, by identity (core/fileid.c) */
    if (sk_store_is_remote(pattern)) {
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
        sk_emit_lock_path(pattern, manifest, mpath, sizeof mpath);
        rc = sk_fileids_refuse(&ids, mpath, "the manifest", err);
    }
    sk_fileids_free(&ids);
    return rc;
}

static int reshard_run(const char *const *inputs, size_t ninputs, sk_shard_options *opts,
                       const char *pattern_tmpl, sk_shard_stats *stats, sk_error *err)
{
    sk_shard_run r;
    struct rs_in own = {0}; /* the inputs' own state */
    struct run_sample s = {0};
    char **in = NULL;
    size_t nin = 0;
    int rc = sk_shard_run_init(&r, opts, pattern_tmpl, err);
    if (!rc && !ninputs) rc = sk_error_set(err, SK_E_USAGE, "no input shards");
    if (rc) return rc;
    r.in = &own;
    sk_store_env_init(&own.env, opts->s3); /* released at cleanup */
    if ((rc = expand_inputs(&r, inputs, ninputs, &in, &nin, err))) goto cleanup;
    if (!r.to_stdout &&
        (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err)))
        goto cleanup;
    r.st.inputs = nin;
    for (size_t i = 0; i < nin && !rc; i++) { /* for the ETA and the shuffle's buckets */
        uint64_t size;
        if (!(rc = sk_shard_run_input_size(&r, in[i], &size, err)) && size != UINT64_MAX)
            r.st.bytes_in_total += size;
    }
    if (rc) goto cleanup;
    if (opts->keys_file && (rc = sk_shard_run_load_keys(&r, opts->keys_file, err))) goto cleanup;
    /* the output (shard_out.c); an append to an existing manifest numbers
     * after its last shard, which must not be an input either */
    uint64_t start0 = opts->start;
    if ((rc = sk_shard_run_output_open(&r, "shard", err)) ||
        (opts->start != start0 &&
         (rc = refuse_own_inputs(opts->pattern, opts->manifest, opts->start, in, nin, err))) ||
        (rc = sk_shard_run_output_start(&r, err)))
        goto cleanup;
    /* without filters or image work each sample passes whole: shards
     * with a sound index are read through it (direct_input), into the
     * shuffle's buckets too */
    r.in->direct = !opts->nselect && !opts->ndrop && !opts->nrename && !opts->keys_file &&
               !opts->parts && !r.pool;
    if (opts->shuffle) {
        /* scatter: every sample into a random bucket (a reference to it
         * when read through its index) */
        if ((rc = sk_shuffler_new(&r.shuf, opts->tmp_dir, opts->seed, opts->shuffle_mem,
                                  r.st.bytes_in_total, err)) ||
            (r.in->direct && (rc = sk_infiles_new(&r.inf, 0, err))))
            goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = sk_shard_run_take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
            sk_shard_run_progress(&r, 0);
        }
        if (!rc) rc = sk_shard_run_put_done(&r, err);
        if (rc) goto cleanup;
        r.total = sk_shuffler_count(r.shuf);
        if ((rc = sk_shuffler_drain(r.shuf, sk_shard_run_emit_record, &r, err))) goto cleanup;
    } else {
        if (opts->num_shards && (rc = sk_shard_run_count_samples(&r, in, nin, &s, err))) goto cleanup;
        for (size_t i = 0; i < nin && !rc; i++) {
            rc = sk_shard_run_take_input(&r, in[i], &s, err);
            r.st.inputs_done++;
        }
        if (!rc) rc = sk_shard_run_put_done(&r, err);
        if (rc) goto cleanup;
    }
    rc = sk_shard_run_output_finish(&r, err);

cleanup:
    sk_shard_run_release(&r, rc);
    sk_shard_run_keyset_free(&own.keys);
    sk_store_env_release(&own.env);
    for (size_t i = 0; i < nin; i++) free(in[i]);
    free(in);
    free(s.key);
    free(s.m);
    free(s.exts);
    free(s.img);
    if (stats) *stats = r.st;
    return rc;
}

int sk_reshard(const char *const *inputs, size_t ninputs, const sk_shard_options *opts,
               sk_shard_stats *stats, sk_error *err)
{
    /* --part: {part} in the pattern (and manifest) names this part's files */
    sk_shard_options o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_shard_options", err));
    /* the place grammar first: a lost slash is no local folder "s3:" */
    SK_GUARD(sk_emit_check_places(o.pattern, o.manifest, "shard", err));
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
