/*
 * pack_out.h - the rules every output shaped like pack's follows, kept in
 * one place so that `shardkit pack` (pack.c, pack_spread.c, pack_stream.c) and the streaming
 * sample writer (sample_writer.c) write the same bytes for the same
 * samples: when a shard is cut, what the manifest says about the options,
 * where the manifest and the run's lock go, how a shard is named in the
 * manifest, and how a member's index record and extension count are made.
 * Internal to libshardkit.
 */
#ifndef SK_PACK_OUT_H
#define SK_PACK_OUT_H

#include "format/format.h"
#include "io/writer.h"

#define SK_PACK_DEFAULT_MAX_SIZE (512ULL << 20)
#define SK_PACK_EOA (2 * 512ULL) /* the end-of-archive blocks every shard ends with */

/* Whether a sample of b tar bytes starts a new shard after one holding
 * count samples and bytes tar bytes (max_size 0 is taken as the default). */
static inline int sk_pack_rolls(const sk_pack_options *o, uint64_t bytes, uint64_t count,
                                uint64_t b)
{
    uint64_t max = o->max_size ? o->max_size : SK_PACK_DEFAULT_MAX_SIZE;
    return count && (bytes + b + SK_PACK_EOA > max || (o->max_count && count >= o->max_count));
}
/* The warning for a sample bigger than max_size alone (name: its first
 * member), when it is. */
void sk_pack_warn_oversized(const sk_pack_options *o, const char *name, uint64_t b);
/* Refuses (SK_E_USAGE) a pattern whose suffix names a compression the run
 * will not write: .zst with compress_level 0, or .gz/.tgz/.bz2/.xz (only
 * .tar and .tar.zst are written).  Readers -- ours, tar -a, WebDataset --
 * tell a shard's format by its name. */
int sk_pack_check_suffix(const char *pattern, int compress_level, sk_error *err);
/* The options that shaped the output, as the manifest records them
 * (pattern_tmpl: the caller's pattern, {part} unexpanded).  NULL when out
 * of memory. */
char *sk_pack_options_json(const char *pattern_tmpl, const sk_pack_options *o);
/* Where the run's lock goes: the manifest (given, or manifest.json beside
 * the shards). */
void sk_pack_lock_path(const char *pattern, const char *manifest, char *buf, size_t cap);
/* The run's locks: one on its manifest, one on its shard names (the
 * pattern, {part} expanded, in the shards' directory), so that two runs
 * cannot write one manifest, nor one set of shard names under two
 * manifests.  take: each lock not held yet whose directory exists (create:
 * make the directories first); a manifest name the run chose must be a
 * regular file or nothing, checked here before any shard is written.
 * Local outputs only (an s3:// one has no lock). */
typedef struct sk_run_lock {
    int mfd, pfd;
    char mpath[4200], pattern[4200];
} sk_run_lock;
#define SK_RUN_LOCK_INIT {.mfd = -1, .pfd = -1}
int sk_run_lock_take(sk_run_lock *l, const char *pattern, const char *manifest, const char *what,
                     int create, sk_error *err);
void sk_run_lock_release(sk_run_lock *l);
/* What a run reads (files and directories named as sources) and writes
 * beside its shards (manifest, exports): sk_run_files_check refuses, before
 * anything is written, an output that is an input (same file) or lies in
 * an input directory.  Zero-initialise. */
typedef struct sk_run_files {
    struct sk_run_file {
        char *path;
        const char *what; /* an output's role ("the manifest"); NULL: an input */
        int dir;
    } *v;
    size_t n, cap;
} sk_run_files;
int sk_run_files_add(sk_run_files *f, const char *path, const char *what, int dir, sk_error *err);
int sk_run_files_check(const sk_run_files *f, sk_error *err);
void sk_run_files_free(sk_run_files *f);
/* The manifest's path and its directory (shard URLs are relative to it). */
void sk_pack_manifest_path(const char *pattern, const char *manifest, char *mpath, size_t mcap,
                           char *mdir, size_t dcap);
/* How the manifest is written: with its lookup table, and (when the run
 * chose its name, manifest NULL) only over a regular file or nothing. */
#define sk_pack_manifest_flags(manifest) (SK_MANIFEST_TABLE | ((manifest) ? 0 : SK_OUT_REGULAR))
/* "<shard>.idx"; -1 when it does not fit. */
int sk_pack_index_path(const char *shard, char *buf, size_t cap);
/* Appends shard (its file at path, samples in it) to the manifest, named
 * relative to mdir. */
int sk_pack_manifest_add(sk_manifest *man, const char *path, const char *mdir,
                         const sk_index_shard_info *info, uint64_t samples, int part,
                         sk_error *err);
/* CRC32C of a whole local file, or -1 when it cannot be read in full. */
int64_t sk_pack_file_crc32c(const char *path, uint64_t size);
/* --resume: 1 when the shard at path (local, or s3:// through s3) is
 * complete as an earlier run published it: its index is sound, records the
 * file's size and the file's CRC32C; *out is then its index (caller
 * closes). */
int sk_pack_shard_sound(sk_s3 *s3, const char *path, sk_index **out);
/* A member's index record (extension lowercased, as readers compare it)
 * and its count in exts. */
int sk_pack_index_member(sk_shard_out *out, sk_manifest *exts, const char *ext, size_t el,
                         uint64_t data_offset, uint64_t size, uint32_t header_len, uint32_t crc,
                         sk_error *err);

/* The sample writer with its shards cut by the caller (sample_writer.c),
 * for `pack --from-urls` (pack_urls.c): a shard per range of list rows,
 * as img2dataset cuts them, whatever their sizes.  After
 * sk_sample_writer_manual, max_size and max_count never cut; a shard
 * begins at sk_sample_writer_begin_at (shard number start + n, also when
 * it stays empty) and is published by sk_sample_writer_end_open (*path
 * gets its name when one was open, else "").  sk_sample_writer_keep_at
 * records shard n, complete from an earlier run, in the manifest as it
 * is, from its index (sk_pack_shard_sound's; taken over). */
void sk_sample_writer_manual(sk_sample_writer *w);
int sk_sample_writer_begin_at(sk_sample_writer *w, uint64_t n, sk_error *err);
int sk_sample_writer_end_open(sk_sample_writer *w, char *path, size_t cap, sk_error *err);
int sk_sample_writer_keep_at(sk_sample_writer *w, uint64_t n, sk_index *ix, sk_error *err);

#endif
