/*
 * sample_writer.c - the streaming sample writer (sk_sample_writer_*):
 * samples handed over from memory become the shards, .idx sidecars and
 * manifest.json that `shardkit pack` writes for the same files in the same
 * order, byte for byte.
 *
 * It is pack without the catalog: the tar headers (sk_tar_header), the
 * shard cut (sk_pack_rolls), the index records and extension counts
 * (sk_emit_index_member), the manifest (sk_emit_manifest_add,
 * sk_pack_options_json) and the lock are pack's own code (pack_out.c); the
 * bytes go through the one shard writer (io/writer.c), so compression, the
 * temporary name and rename, and the S3 sink are the same too.  pack plans
 * every shard before writing, this writer decides as samples arrive; the
 * rule needs only the samples so far, so both cut at the same places.
 * resume keeps the shards a killed run completed while the samples added
 * again match them (keep_shard, check_kept), so a rerun ends with the
 * same files without rewriting or uploading those again.
 * Memory: a sample's headers, the open shard's index records, the manifest;
 * member bytes go from the caller's buffers (compressed shards: through the
 * writer's bounded frame buffer).
 */
#include "pack/pack_out.h"
#include "pack/keyset.h"
#include "io/io.h"
#include "format/tar.h"
#include "io/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PIECE (1u << 20) /* data handed to the writer at a time */
#define WIOV 64

enum { W_OPEN, W_FAILED, W_FINISHED };

struct sk_sample_writer {
    sk_pack_options o;
    char *pattern, *manifest; /* copies of the caller's strings */
    int state;
    sk_error failure; /* W_FAILED: what broke the output */
    sk_shard_out out;
    int in_shard;
    uint64_t shard_no;          /* shards begun */
    uint64_t cur_bytes, cur_count; /* the open shard's planned tar bytes and samples */
    sk_manifest *man;           /* shards published so far; extension counts */
    char mpath[4200], mdir[4200];
    sk_run_lock lock;
    sk_existing ex; /* the manifest already there (io/existing.c) */
    sk_s3 *s3;
    uint64_t s3_part_size;
    int s3_prepared;
    /* resume: the shards a killed run completed are kept, not rewritten,
     * when the samples added again match them (see check_kept) */
    int manual;          /* the caller cuts (sk_sample_writer_manual) */
    int part;            /* the caller's --part, recorded in the manifest */
    int resuming;        /* still before the first shard that is written */
    sk_index *kept;      /* in_kept: the earlier run's shard being matched */
    sk_index *next_kept; /* the shard after it, when sound (looked at once) */
    int in_kept;
    int kept_fd;         /* a plain local kept shard, to compare its headers */
    char *last_key; /* the previous sample's key: an equal one would merge with it */
    size_t last_len;
    sk_keyset keys; /* every key of the run: a repeat after other samples is refused */
    /* one sample's work space */
    unsigned char *hdrs;
    size_t hdrs_cap;
    size_t *order;
    uint32_t *crcs; /* the sorted members' CRC32C */
    size_t order_cap;
    sk_pack_stats st;
    struct timespec t0, last_progress;
};

static int fail(sk_sample_writer *w, int rc, const sk_error *err)
{
    if (w->in_shard) sk_shard_out_abort(&w->out);
    w->in_shard = 0;
    w->state = W_FAILED;
    w->failure.code = rc;
    snprintf(w->failure.msg, sizeof w->failure.msg, "%s", err && err->msg[0] ? err->msg : "failed");
    return rc;
}

/* The manifest already there, before the first shard: at open for a
 * local one (under the lock), at the first shard or at finish for an
 * s3:// one (its client comes after open). */
static int check_existing(sk_sample_writer *w, sk_error *err)
{
    if (w->ex.began) return SK_OK;
    w->ex.mode = w->o.existing;
    return sk_existing_begin(&w->ex, w->s3, w->pattern, w->mpath, w->mdir, w->man->options_json,
                             &w->o.start, UINT64_MAX, err);
}

int sk_sample_writer_open(sk_sample_writer **out, const sk_pack_options *opts_in, sk_error *err)
{
    sk_pack_options o;
    char probe[4200];
    SK_FAIL_IF(!out, err, SK_E_USAGE, "sample writer: no handle to open");
    *out = NULL;
    SK_GUARD(sk_options_take(&o, sizeof o, opts_in, NULL, "sk_pack_options", err));
    SK_FAIL_IF(!o.pattern, err, SK_E_USAGE, "sample writer: no output pattern");
    SK_GUARD(sk_shard_name(o.pattern, 0, probe, sizeof probe, err));
    /* what pack does with its inputs, which a writer handed samples has not */
    SK_FAIL_IF(o.shuffle, err, SK_E_USAGE, "sample writer: shuffle is pack's (samples are written "
               "in the order they are added)");
    SK_FAIL_IF(o.parts > 0, err, SK_E_USAGE, "sample writer: --part is pack's (each writer "
               "writes what it is given; give each its own pattern)");
    char *named = NULL; /* pack refuses "{part}" in names without --part: so do we */
    SK_GUARD(sk_part_name(o.pattern, 0, 0, 0, &named, err));
    free(named);
    if (o.manifest) {
        SK_GUARD(sk_part_name(o.manifest, 0, 0, 0, &named, err));
        free(named);
    }
    SK_FAIL_IF(sk_image_options_active(o.images), err, SK_E_USAGE,
               "sample writer: image resizing is pack's and shard's");
    SK_FAIL_IF(o.compress_level < 0 || o.compress_level > 22, err, SK_E_USAGE,
               "sample writer: zstd level %d out of range (1..22, 0 = none)", o.compress_level);
    SK_GUARD(sk_emit_check_places(o.pattern, o.manifest, "sample writer", err));
    SK_GUARD(sk_emit_check_suffix(o.pattern, o.compress_level, err));
    sk_sample_writer *w = calloc(1, sizeof *w);
    SK_FAIL_IF(!w, err, SK_E_NOMEM, "out of memory");
    w->kept_fd = -1;
    w->lock = (sk_run_lock)SK_RUN_LOCK_INIT;
    w->resuming = o.resume;
    w->o = o;
    w->o.images = NULL;
    if (!w->o.max_size) w->o.max_size = SK_PACK_DEFAULT_MAX_SIZE;
    w->pattern = strdup(o.pattern);
    w->manifest = o.manifest ? strdup(o.manifest) : NULL;
    w->man = sk_manifest_new();
    int rc = SK_OK;
    if (!w->pattern || (o.manifest && !w->manifest) || !w->man ||
        !(w->man->options_json = sk_pack_options_json(w->pattern, &w->o)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    w->o.pattern = w->pattern;
    w->o.manifest = w->manifest;
    w->out.zlevel = w->o.compress_level;
    w->out.gather = 1; /* a sample at a time: 1 MiB writes (io/writer.h) */
    sk_emit_manifest_path(w->pattern, w->manifest, w->mpath, sizeof w->mpath, w->mdir,
                          sizeof w->mdir);
    /* the shards' directory, and the run's lock, as pack takes them */
    if (!rc) rc = sk_sink_make_dir(w->pattern, err);
    if (!rc) rc = sk_run_lock_take(&w->lock, w->pattern, w->manifest, "sample writer", 1, err);
    if (!rc && !sk_store_is_remote(w->pattern) && !sk_store_is_remote(w->manifest))
        rc = check_existing(w, err); /* a local one refused now, not at the first sample */
    if (rc) {
        sk_sample_writer_close(w);
        return rc;
    }
    size_t pl = strlen(w->pattern);
    if (w->o.compress_level && (pl < 4 || strcmp(w->pattern + pl - 4, ".zst")) && w->o.warn) {
        char msg[SK_ERROR_MAX];
        snprintf(msg, sizeof msg, "%s: compress_level writes zstd data, but the shard names do "
                 "not end in .zst (readers tell the format by the name)", w->pattern);
        w->o.warn(w->o.ctx, msg);
    }
    clock_gettime(CLOCK_MONOTONIC, &w->t0);
    w->last_progress = w->t0;
    *out = w;
    return SK_OK;
}

int sk_sample_writer_set_s3(sk_sample_writer *w, sk_s3 *s3, uint64_t part_size, sk_error *err)
{
    SK_FAIL_IF(!w, err, SK_E_USAGE, "sample writer: no writer");
    SK_FAIL_IF(w->shard_no || w->state != W_OPEN, err, SK_E_USAGE,
               "%s: the S3 client is set before the first sample", w->pattern);
    w->s3 = s3;
    w->s3_part_size = part_size;
    w->out.sink_opts = (sk_sink_opts){s3, part_size};
    return SK_OK;
}

/* ------------------------------------------------------------ the names */

/* The rules pack's inputs obey, for a key and extension given as bytes:
 * "key.ext" must be a member name pack would take (a clean relative path
 * of at most SK_TAR_NAME_MAX bytes) that splits back into exactly this
 * key and extension (no dot in the key's last component); and, as every
 * name from outside, pass path.c's check (components of at most 255
 * bytes: what a file system holds, and what an index opener accepts). */
static int name_check(const char *name, size_t n, const char *what, sk_error *err)
{
    if (!sk_name_check(name, n, what, err)) return SK_OK;
    if (err) err->code = SK_E_INPUT;
    return SK_E_INPUT;
}

static int check_key(const char *key, size_t n, sk_error *err)
{
    int shown = n > 200 ? 200 : (int)n;
    const char *more = n > 200 ? "..." : "";
    SK_FAIL_IF(!n, err, SK_E_INPUT, "sample writer: empty key");
    SK_FAIL_IF(memchr(key, 0, n), err, SK_E_INPUT, "key \"%.*s\": holds a NUL byte",
               (int)strnlen(key, n), key);
    SK_FAIL_IF(n > SK_TAR_NAME_MAX, err, SK_E_INPUT, "key \"%.*s%s\" (%zu bytes): name longer "
               "than %d bytes", shown, key, more, n, SK_TAR_NAME_MAX);
    size_t at = 0;
    while (at <= n) {
        const char *e = memchr(key + at, '/', n - at);
        size_t end = e ? (size_t)(e - key) : n, len = end - at;
        SK_FAIL_IF(!len || (len == 1 && key[at] == '.') ||
                       (len == 2 && key[at] == '.' && key[at + 1] == '.'),
                   err, SK_E_INPUT, "key \"%.*s%s\": not a usable member name (empty, '.' or "
                   "'..' component, or a leading or trailing '/')", shown, key, more);
        if (!e) {
            /* the basename: WebDataset's key ends at its first dot */
            SK_FAIL_IF(memchr(key + at, '.', len), err, SK_E_INPUT, "key \"%.*s%s\": a dot in "
                       "its last component (readers would end the key there)", shown, key, more);
            break;
        }
        at = end + 1;
    }
    return name_check(key, n, "key", err);
}

static int check_ext(const char *key, size_t kl, const char *ext, size_t el, sk_error *err)
{
    int shown = kl > 200 ? 200 : (int)kl;
    SK_FAIL_IF(!el, err, SK_E_INPUT, "key \"%.*s\": a member with an empty extension", shown, key);
    SK_FAIL_IF(memchr(ext, 0, el), err, SK_E_INPUT, "key \"%.*s\": extension \"%.*s\" holds a "
               "NUL byte", shown, key, (int)strnlen(ext, el), ext);
    SK_FAIL_IF(memchr(ext, '/', el), err, SK_E_INPUT, "key \"%.*s\": extension \"%.*s\" holds "
               "a '/'", shown, key, el > 200 ? 200 : (int)el, ext);
    SK_FAIL_IF(kl + 1 + el > SK_TAR_NAME_MAX, err, SK_E_INPUT, "key \"%.*s%s\": name with "
               "extension \"%.*s%s\" longer than %d bytes", shown, key, kl > 200 ? "..." : "",
               el > 100 ? 100 : (int)el, ext, el > 100 ? "..." : "", SK_TAR_NAME_MAX);
    return SK_OK;
}

static size_t ext_len(const sk_sample_member *m)
{
    return m->ext_len ? m->ext_len : m->ext ? strlen(m->ext) : 0;
}

/* Members in pack's order: by extension, compared lowercased (stable);
 * the same extension twice is pack's error. */
static int sort_members(sk_sample_writer *w, const char *key, size_t kl,
                        const sk_sample_member *m, size_t n, sk_error *err)
{
    if (n > w->order_cap) {
        size_t *o = realloc(w->order, n * sizeof *o);
        SK_FAIL_IF(!o, err, SK_E_NOMEM, "out of memory");
        w->order = o;
        uint32_t *c = realloc(w->crcs, n * sizeof *c);
        SK_FAIL_IF(!c, err, SK_E_NOMEM, "out of memory");
        w->crcs = c;
        w->order_cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j && sk_ext_cmp(m[w->order[j - 1]].ext, ext_len(&m[w->order[j - 1]]), m[i].ext,
                               ext_len(&m[i])) > 0) {
            w->order[j] = w->order[j - 1];
            j--;
        }
        w->order[j] = i;
    }
    for (size_t i = 1; i < n; i++) {
        const sk_sample_member *a = &m[w->order[i - 1]], *b = &m[w->order[i]];
        SK_FAIL_IF(!sk_ext_cmp(a->ext, ext_len(a), b->ext, ext_len(b)), err, SK_E_INPUT,
                   "%.*s.%.*s and %.*s.%.*s: the same extension twice in one sample",
                   (int)kl, key, (int)ext_len(a), a->ext, (int)kl, key, (int)ext_len(b), b->ext);
    }
    return SK_OK;
}

/* ------------------------------------------------------------ the shards */

static int end_shard(sk_sample_writer *w, sk_error *err)
{
    char path[4200];
    sk_index_shard_info info;
    uint64_t samples = sk_index_builder_samples(w->out.index);
    w->in_shard = 0;
    SK_GUARD(sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, sizeof path, err));
    sk_key_range kr; /* for the manifest's key ranges, as pack writes them */
    SK_GUARD(sk_index_builder_key_range(w->out.index, &kr, err));
    int rc = sk_shard_out_finish(&w->out, &info, err);
    if (!rc) {
        w->st.output_bytes += info.size;
        w->st.shards++;
        rc = sk_emit_manifest_add(w->man, path, w->mdir, &info, samples, w->part, NULL, err);
    }
    if (!rc && kr.first)
        rc = sk_manifest_set_key_range(w->man, w->man->nshards - 1, kr.first, kr.first_len,
                                       kr.last, kr.last_len, err);
    sk_key_range_free(&kr);
    return rc;
}

static void drop_kept(sk_sample_writer *w)
{
    sk_index_close(w->kept);
    sk_index_close(w->next_kept);
    w->kept = w->next_kept = NULL;
    if (w->kept_fd >= 0) close(w->kept_fd);
    w->kept_fd = -1;
    w->in_kept = 0;
}

/* resume: whether shard n of the earlier run is kept.  A sound shard is
 * complete once published, but only its successor (or max_count samples)
 * proves it was cut where this run cuts: the earlier run's last shard may
 * have ended with that run.  The first shard not kept ends resuming. */
static int keep_shard(sk_sample_writer *w, uint64_t n, int *kept, sk_error *err)
{
    *kept = 0;
    char path[4200], next[4200];
    SK_GUARD(sk_shard_name(w->pattern, w->o.start + n, path, sizeof path, err));
    SK_GUARD(sk_shard_name(w->pattern, w->o.start + n + 1, next, sizeof next, err));
    sk_index *cur = w->next_kept;
    w->next_kept = NULL;
    if (!cur) sk_emit_shard_sound(w->s3, path, &cur);
    int keep = 0;
    if (cur) {
        keep = w->o.max_count && sk_index_sample_count(cur) == w->o.max_count;
        if (!keep) keep = sk_emit_shard_sound(w->s3, next, &w->next_kept);
    }
    if (!keep) {
        sk_index_close(cur);
        drop_kept(w);
        w->resuming = 0;
        return SK_OK;
    }
    w->kept = cur;
    w->in_kept = *kept = 1;
    if (!sk_store_is_remote(path) && !(sk_index_shard(cur)->flags & SK_INDEX_ZSTD)) /* a local file */
        w->kept_fd = open(path, O_RDONLY | O_CLOEXEC);
    return SK_OK;
}

static int begin_shard(sk_sample_writer *w, sk_error *err)
{
    char path[4200];
    int kept = 0;
    SK_GUARD(check_existing(w, err));
    if (w->resuming) SK_GUARD(keep_shard(w, w->shard_no, &kept, err));
    if (kept) {
        w->shard_no++;
        w->cur_bytes = w->cur_count = 0;
        return SK_OK;
    }
    if (!w->s3_prepared) { /* S3: aborts a killed run's uploads */
        SK_GUARD(sk_sink_prepare(w->s3, w->pattern, w->o.start, 0, w->o.warn, w->o.ctx, err));
        w->s3_prepared = 1;
    }
    SK_GUARD(sk_shard_name(w->pattern, w->o.start + w->shard_no, path, sizeof path, err));
    SK_GUARD(sk_shard_out_begin(&w->out, path, err));
    w->in_shard = 1;
    w->shard_no++;
    w->cur_bytes = w->cur_count = 0;
    return SK_OK;
}

/* resume: a kept shard whose samples all came again goes into the manifest
 * as the earlier run left it (extension counts and key range from its
 * index, as pack does with the shards it keeps). */
static int end_kept(sk_sample_writer *w, sk_error *err)
{
    char path[4200];
    sk_index *ix = w->kept;
    uint64_t n = sk_index_sample_count(ix);
    const char *lo = NULL, *hi = NULL;
    size_t lol = 0, hil = 0;
    int rc = sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, sizeof path, err);
    if (!rc) rc = sk_emit_manifest_add(w->man, path, w->mdir, sk_index_shard(ix), n, w->part, NULL, err);
    for (uint64_t i = 0; !rc && i < sk_index_member_count(ix); i++) {
        sk_member_ref m;
        if (!(rc = sk_index_member(ix, i, &m, err)))
            rc = sk_manifest_count_ext(w->man, m.ext, m.ext_len, 1, err);
    }
    for (uint64_t i = 0; !rc && i < n; i++) {
        sk_sample_ref s;
        if ((rc = sk_index_sample(ix, i, &s, err))) break;
        if (!lo || sk_key_cmp(s.key, s.key_len, lo, lol) < 0) lo = s.key, lol = s.key_len;
        if (!hi || sk_key_cmp(s.key, s.key_len, hi, hil) > 0) hi = s.key, hil = s.key_len;
    }
    if (!rc && lo)
        rc = sk_manifest_set_key_range(w->man, w->man->nshards - 1, lo, lol, hi, hil, err);
    if (!rc) {
        w->st.shards++;
        w->st.shards_resumed++;
    }
    sk_index_close(w->kept);
    w->kept = NULL;
    if (w->kept_fd >= 0) close(w->kept_fd);
    w->kept_fd = -1;
    w->in_kept = 0;
    return rc;
}

/* resume: the sample added must be the one the kept shard holds at this
 * position: the same key, members (extension, size, CRC32C) and offsets,
 * and in a plain local shard the same header bytes.  Anything else means
 * other samples or options than the earlier run's: SK_E_MISMATCH. */
static int check_kept(sk_sample_writer *w, const char *key, size_t kl, const sk_sample_member *m,
                      size_t n, const size_t *hl, sk_error *err)
{
    char path[4200];
    unsigned char old[SK_TAR_HEADER_MAX];
    sk_sample_ref s;
    SK_GUARD(sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, sizeof path, err));
    SK_GUARD(sk_index_sample(w->kept, w->cur_count, &s, err));
    int same = s.key_len == kl && !memcmp(s.key, key, kl) && s.member_count == n &&
               s.offset == w->cur_bytes;
    uint64_t at = w->cur_bytes;
    const unsigned char *h = w->hdrs;
    for (size_t i = 0; same && i < n; i++) {
        const sk_sample_member *mm = &m[w->order[i]];
        sk_member_ref r;
        size_t el = ext_len(mm);
        SK_GUARD(sk_index_member(w->kept, s.first_member + i, &r, err));
        same = r.ext_len == el && !sk_ext_cmp(r.ext, el, mm->ext, el) && r.size == mm->size &&
               r.header_len == hl[i] && r.data_offset == at + hl[i] &&
               r.crc32c == sk_crc32c(0, mm->data, (size_t)mm->size);
        if (same && w->kept_fd >= 0) /* the name's case, which the index lowercases */
            same = pread(w->kept_fd, old, hl[i], (off_t)at) == (ssize_t)hl[i] && !memcmp(old, h, hl[i]);
        h += hl[i];
        at += hl[i] + sk_tar_pad(mm->size);
    }
    SK_FAIL_IF(!same || at - s.offset != s.span, err, SK_E_MISMATCH,
               "%s: sample %llu (key \"%.*s\") is not the one an earlier run wrote there; resume "
               "needs the same samples in the same order (without resume the shards are replaced)",
               path, (unsigned long long)w->cur_count, kl > 200 ? 200 : (int)kl, key);
    for (size_t i = 0; i < n; i++) {
        w->st.files_done++;
        w->st.bytes_done += m[i].size;
    }
    return SK_OK;
}

/* Hands the gathered iovecs (len bytes, CRC32C crc) to the writer. */
static int flush(sk_sample_writer *w, struct iovec *iov, int *n, uint64_t *len, uint32_t *crc,
                 sk_error *err)
{
    int rc = *n ? sk_shard_out_writev(&w->out, iov, *n, *len, *crc, err) : SK_OK;
    *n = 0;
    *len = 0;
    *crc = 0;
    return rc;
}

/* Writes the sample's bytes (headers already in w->hdrs) and its index
 * records, which go first so the writer can end a compressed frame at the
 * sample's end. */
static int write_sample(sk_sample_writer *w, const char *key, size_t kl, const sk_sample_member *m,
                        size_t n, const size_t *hl, sk_error *err)
{
    static const unsigned char zeros[SK_TAR_BLOCK];
    sk_shard_out *out = &w->out;
    uint64_t off = out->bytes, at = 0, span = 0;
    for (size_t i = 0; i < n; i++) span += hl[i] + sk_tar_pad(m[w->order[i]].size);
    SK_GUARD(sk_index_add_sample(out->index, key, kl, off, span, off, span, err));
    for (size_t i = 0; i < n; i++) {
        const sk_sample_member *mm = &m[w->order[i]];
        /* kept for the shard's CRC below, which then reads the data once */
        uint32_t crc = w->crcs[i] = sk_crc32c(0, mm->data, (size_t)mm->size);
        SK_GUARD(sk_emit_index_member(out, w->man, mm->ext, ext_len(mm), off + at + hl[i],
                                      mm->size, (uint32_t)hl[i], crc, err));
        at += hl[i] + sk_tar_pad(mm->size);
    }
    struct iovec iov[WIOV];
    int k = 0;
    uint64_t len = 0;
    uint32_t crc = 0;
    const unsigned char *h = w->hdrs;
    for (size_t i = 0; i < n; i++) {
        const sk_sample_member *mm = &m[w->order[i]];
        if (k == WIOV) SK_GUARD(flush(w, iov, &k, &len, &crc, err));
        iov[k++] = (struct iovec){(void *)h, hl[i]};
        crc = sk_crc32c_combine(crc, sk_crc32c(0, h, hl[i]), hl[i]);
        len += hl[i];
        h += hl[i];
        for (uint64_t d = 0; d < mm->size;) {
            size_t piece = mm->size - d < PIECE ? (size_t)(mm->size - d) : PIECE;
            if (k == WIOV || len >= PIECE) SK_GUARD(flush(w, iov, &k, &len, &crc, err));
            const unsigned char *p = (const unsigned char *)mm->data + d;
            iov[k++] = (struct iovec){(void *)p, piece};
            uint32_t pc = piece == mm->size ? w->crcs[i] : sk_crc32c(0, p, piece);
            crc = sk_crc32c_combine(crc, pc, piece);
            len += piece;
            d += piece;
        }
        size_t pad = (size_t)(sk_tar_pad(mm->size) - mm->size);
        if (pad) {
            if (k == WIOV) SK_GUARD(flush(w, iov, &k, &len, &crc, err));
            iov[k++] = (struct iovec){(void *)zeros, pad};
            crc = sk_crc32c_combine(crc, sk_crc32c(0, zeros, pad), pad);
            len += pad;
        }
        w->st.files_done++;
        w->st.bytes_done += mm->size;
    }
    return flush(w, iov, &k, &len, &crc, err);
}

static void progress(sk_sample_writer *w, int final)
{
    if (!w->o.progress) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double since = (double)(now.tv_sec - w->last_progress.tv_sec) +
                   (double)(now.tv_nsec - w->last_progress.tv_nsec) / 1e9;
    if (!final && since < 0.5) return;
    w->last_progress = now;
    w->st.seconds = (double)(now.tv_sec - w->t0.tv_sec) + (double)(now.tv_nsec - w->t0.tv_nsec) / 1e9;
    w->st.files_total = w->st.files_done;
    w->st.bytes_total = w->st.bytes_done;
    w->o.progress(w->o.ctx, &w->st);
}

int sk_sample_writer_add(sk_sample_writer *w, const char *key, size_t kl,
                         const sk_sample_member *m, size_t n, sk_error *err)
{
    SK_FAIL_IF(!w, err, SK_E_USAGE, "sample writer: no writer");
    SK_FAIL_IF(w->state == W_FINISHED, err, SK_E_USAGE, "%s: sample added after the writer "
               "finished", w->pattern);
    if (w->state == W_FAILED)
        return sk_error_set(err, w->failure.code, "%s (the writer stopped there)", w->failure.msg);
    SK_FAIL_IF(!key, err, SK_E_USAGE, "sample writer: no key");
    if (!kl) kl = strlen(key);
    /* refusals leave the writer as it was: nothing of the sample is written */
    SK_GUARD(check_key(key, kl, err));
    SK_FAIL_IF(!n || !m, err, SK_E_INPUT, "key \"%.*s\": a sample with no members",
               kl > 200 ? 200 : (int)kl, key);
    for (size_t i = 0; i < n; i++) {
        SK_FAIL_IF(!m[i].ext, err, SK_E_USAGE, "key \"%.*s\": member %zu has no extension",
                   kl > 200 ? 200 : (int)kl, key, i);
        SK_FAIL_IF(!m[i].data && m[i].size, err, SK_E_USAGE, "key \"%.*s\": member %zu has no "
                   "data", kl > 200 ? 200 : (int)kl, key, i);
        SK_GUARD(check_ext(key, kl, m[i].ext, ext_len(&m[i]), err));
    }
    SK_FAIL_IF(w->last_key && w->last_len == kl && !memcmp(w->last_key, key, kl), err, SK_E_INPUT,
               "key \"%.*s\": the same key as the sample before it (readers would take both "
               "as one sample)", kl > 200 ? 200 : (int)kl, key);
    int seen;
    SK_GUARD(sk_keyset_check(&w->keys, key, kl, &seen, err));
    SK_FAIL_IF(seen, err, SK_E_INPUT, "key \"%.*s\": written before in this run (a key names one "
               "sample; pack never writes one twice)", kl > 200 ? 200 : (int)kl, key);
    SK_GUARD(sort_members(w, key, kl, m, n, err));
    /* the headers, and the sample's tar bytes */
    /* room for each header: a ustar block, or a pax block, its records
     * (path, hdrcharset and size: under the name plus 128 bytes) and the
     * ustar block; bounded by the names, not by SK_TAR_HEADER_MAX each */
    size_t need = 0;
    for (size_t i = 0; i < n; i++) need += 2 * SK_TAR_BLOCK + sk_tar_pad(kl + 1 + ext_len(&m[i]) + 128);
    if (need > w->hdrs_cap) {
        unsigned char *h = realloc(w->hdrs, need);
        SK_FAIL_IF(!h, err, SK_E_NOMEM, "out of memory");
        w->hdrs = h;
        w->hdrs_cap = need;
    }
    size_t *hl = malloc(n * sizeof *hl);
    char *name = malloc(SK_TAR_NAME_MAX + 1);
    char *last = malloc(kl);
    uint64_t b = 0, used = 0;
    int rc = SK_OK;
    if (!hl || !name || !last) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    char first_name[SK_TAR_NAME_MAX + 1];
    for (size_t i = 0; i < n && !rc; i++) {
        const sk_sample_member *mm = &m[w->order[i]];
        size_t el = ext_len(mm);
        memcpy(name, key, kl);
        name[kl] = '.';
        memcpy(name + kl + 1, mm->ext, el);
        name[kl + 1 + el] = 0;
        if (!i) memcpy(first_name, name, kl + el + 2);
        if ((rc = name_check(name, kl + 1 + el, "member name", err))) break;
        hl[i] = sk_tar_header(w->hdrs + used, name, kl + 1 + el, mm->size, w->o.mtime);
        used += hl[i];
        b += hl[i] + sk_tar_pad(mm->size);
    }
    /* pack's cut: before a sample that would pass max_size or max_count */
    int rolls = !w->manual && sk_pack_rolls(&w->o, w->cur_bytes, w->cur_count, b);
    if (!rc && w->in_kept) { /* resume: the kept shard must end where this run cuts */
        char path[4200];
        uint64_t have = sk_index_sample_count(w->kept);
        if (rolls != (w->cur_count == have)) {
            if (!(rc = sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, sizeof path, err)))
                rc = sk_error_set(err, SK_E_MISMATCH, "%s: an earlier run cut it after %llu samples, "
                                  "this run %s %llu (other options or samples?); without resume "
                                  "the shards are replaced", path, (unsigned long long)have,
                                  rolls ? "cuts it after" : "does not cut it after",
                                  (unsigned long long)w->cur_count);
            rc = fail(w, rc, err);
        } else if (rolls && (rc = end_kept(w, err))) {
            rc = fail(w, rc, err);
        }
    } else if (!rc && w->in_shard && rolls && (rc = end_shard(w, err))) {
        rc = fail(w, rc, err);
    }
    if (!rc) sk_pack_warn_oversized(&w->o, first_name, b);
    if (!rc && !w->in_shard && !w->in_kept && (rc = begin_shard(w, err))) rc = fail(w, rc, err);
    if (!rc && (rc = w->in_kept ? check_kept(w, key, kl, m, n, hl, err)
                                : write_sample(w, key, kl, m, n, hl, err)))
        rc = fail(w, rc, err);
    if (!rc && (rc = sk_keyset_add(&w->keys, key, kl, err))) rc = fail(w, rc, err);
    if (!rc) {
        w->cur_bytes += b;
        w->cur_count++;
        w->st.samples++;
        memcpy(last, key, kl);
        free(w->last_key);
        w->last_key = last;
        w->last_len = kl;
        last = NULL;
        progress(w, 0);
    }
    free(last);
    free(name);
    free(hl);
    return rc;
}

/* ------------------------------------------------- cuts by the caller */

void sk_sample_writer_manual(sk_sample_writer *w)
{
    w->manual = 1;
    w->resuming = 0; /* the caller keeps shards itself (keep_at) */
}

void sk_sample_writer_part(sk_sample_writer *w, int part, int parts)
{
    w->part = w->man->part = part;
    w->man->parts = parts;
}

int sk_sample_writer_end_open(sk_sample_writer *w, char *path, size_t cap, sk_error *err)
{
    if (path && cap) path[0] = 0;
    if (w->state == W_FAILED)
        return sk_error_set(err, w->failure.code, "%s (the writer stopped there)", w->failure.msg);
    if (!w->in_shard) return SK_OK;
    if (path) SK_GUARD(sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, cap, err));
    int rc = end_shard(w, err);
    return rc ? fail(w, rc, err) : SK_OK;
}

int sk_sample_writer_begin_at(sk_sample_writer *w, uint64_t n, sk_error *err)
{
    SK_FAIL_IF(w->state != W_OPEN, err, w->state == W_FAILED ? w->failure.code : SK_E_USAGE,
               "%s", w->state == W_FAILED ? w->failure.msg : "sample writer: finished");
    SK_GUARD(sk_sample_writer_end_open(w, NULL, 0, err));
    w->shard_no = n;
    int rc = begin_shard(w, err);
    return rc ? fail(w, rc, err) : SK_OK;
}

int sk_sample_writer_keep_at(sk_sample_writer *w, uint64_t n, sk_index *ix, sk_error *err)
{
    int rc = sk_sample_writer_end_open(w, NULL, 0, err);
    if (!rc) rc = check_existing(w, err);
    if (rc) {
        sk_index_close(ix);
        return rc;
    }
    w->shard_no = n + 1;
    w->kept = ix;
    w->in_kept = 1;
    rc = end_kept(w, err);
    return rc ? fail(w, rc, err) : SK_OK;
}

int sk_sample_writer_finish(sk_sample_writer *w, sk_pack_stats *stats, sk_error *err)
{
    SK_FAIL_IF(!w, err, SK_E_USAGE, "sample writer: no writer");
    SK_FAIL_IF(w->state == W_FINISHED, err, SK_E_USAGE, "%s: the writer finished already",
               w->pattern);
    if (w->state == W_FAILED)
        return sk_error_set(err, w->failure.code, "%s (the writer stopped there)", w->failure.msg);
    int rc = w->in_shard ? end_shard(w, err) : SK_OK;
    if (w->in_kept) {
        char path[4200];
        uint64_t have = sk_index_sample_count(w->kept);
        if (w->cur_count == have) {
            rc = end_kept(w, err);
        } else if (!(rc = sk_shard_name(w->pattern, w->o.start + w->shard_no - 1, path, sizeof path, err))) {
            rc = sk_error_set(err, SK_E_MISMATCH, "%s: an earlier run cut it after %llu samples, "
                              "this run ends after %llu; without resume the shards are replaced",
                              path, (unsigned long long)have, (unsigned long long)w->cur_count);
        }
    }
    if (!rc) rc = check_existing(w, err);
    if (!rc)
        rc = sk_existing_commit(&w->ex, w->s3, w->man, w->mpath, sk_emit_manifest_flags(w->manifest),
                                w->o.warn, w->o.ctx, err);
    if (rc) return fail(w, rc, err);
    w->state = W_FINISHED;
    /* the run's time whether or not a progress callback asked for it */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    w->st.seconds = (double)(now.tv_sec - w->t0.tv_sec) + (double)(now.tv_nsec - w->t0.tv_nsec) / 1e9;
    progress(w, 1);
    if (stats) *stats = w->st;
    sk_run_lock_release(&w->lock);
    return SK_OK;
}

void sk_sample_writer_close(sk_sample_writer *w)
{
    if (!w) return;
    if (w->in_shard) sk_shard_out_abort(&w->out);
    sk_shard_out_release(&w->out);
    drop_kept(w);
    sk_run_lock_release(&w->lock);
    sk_manifest_free(w->man);
    sk_existing_release(&w->ex);
    free(w->pattern);
    free(w->manifest);
    free(w->last_key);
    sk_keyset_free(&w->keys);
    free(w->hdrs);
    free(w->order);
    free(w->crcs);
    free(w);
}
