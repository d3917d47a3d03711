/*
 * emit.h - the shard emitter's rules: what every writer of shards (pack,
 * the streaming sample writer, shard) does the same way, so that none of
 * them can drift from the others: when a shard is cut, which names a
 * pattern may end in, where the manifest and the run's lock go, how a shard
 * and its index are named in the manifest, how a member's index record and
 * extension count are made, and when a shard an earlier run left is sound
 * enough to keep (--resume).  The bytes themselves go through io/writer.h
 * (temp, then renamed when complete, with the .idx); the names through
 * format/naming.c.  Internal to libshardkit.
 */
#ifndef SK_IO_EMIT_H
#define SK_IO_EMIT_H

#include "format/format.h"
#include "io/writer.h"

#define SK_EMIT_DEFAULT_MAX_SIZE (512ULL << 20)
#define SK_EMIT_EOA (2 * 512ULL) /* the end-of-archive blocks every shard ends with */

/* The cut rule: whether a sample of b tar bytes starts a new shard after
 * one holding count samples and bytes tar bytes.  max_size 0 is the
 * default; max_count 0 no limit; eoa the bytes the shard's end adds to
 * what is counted against max_size (pack and the sample writer:
 * SK_EMIT_EOA; shard has always counted the samples alone, 0, and its
 * outputs keep their bytes). */
static inline int sk_emit_rolls(uint64_t max_size, uint64_t max_count, uint64_t eoa,
                                uint64_t bytes, uint64_t count, uint64_t b)
{
    uint64_t max = max_size ? max_size : SK_EMIT_DEFAULT_MAX_SIZE;
    return count && (bytes + b + eoa > max || (max_count && count >= max_count));
}

/* Refuses (SK_E_USAGE) a pattern whose suffix names a compression the run
 * will not write: .zst with compress_level 0, or .gz/.tgz/.bz2/.xz (only
 * .tar and .tar.zst are written).  Readers -- ours, tar -a, WebDataset --
 * tell a shard's format by its name. */
int sk_emit_check_suffix(const char *pattern, int compress_level, sk_error *err);
/* Refuses (SK_E_USAGE, naming what and the name) an output pattern or
 * manifest the place grammar does not take for writing (docs/places.md,
 * sk_place_check): a lost slash ("s3:/b/x", "s3:b", "s3:"), another
 * scheme, http(s):// (read only); '-' only as the pattern.  The library's
 * entry points (sk_pack_new, sk_reshard, sk_sample_writer_open) ask it,
 * not only the command line: else a program's "s3:/b/x" becomes a local
 * folder "s3:" holding the dataset it believes is in S3.  what: the entry
 * point ("pack"), for the message. */
int sk_emit_check_places(const char *pattern, const char *manifest, const char *what,
                         sk_error *err);
/* Where the run's lock goes: the manifest (given, or manifest.json beside
 * the shards). */
void sk_emit_lock_path(const char *pattern, const char *manifest, char *buf, size_t cap);
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
void sk_emit_manifest_path(const char *pattern, const char *manifest, char *mpath, size_t mcap,
                           char *mdir, size_t dcap);
/* How the manifest is written: with its lookup table, and (when the run
 * chose its name, manifest NULL) only over a regular file or nothing. */
#define sk_emit_manifest_flags(manifest) (SK_MANIFEST_TABLE | ((manifest) ? 0 : SK_OUT_REGULAR))
/* "<shard>.idx"; -1 when it does not fit. */
int sk_emit_index_path(const char *shard, char *buf, size_t cap);
/* CRC32C of a whole local file, or -1 when it cannot be read in full. */
int64_t sk_emit_file_crc32c(const char *path, uint64_t size);
/* --resume: 1 when the shard at path (local, or s3:// through s3) is
 * complete as an earlier run published it: its index is sound, records the
 * file's size and the file's CRC32C; *out is then its index (caller
 * closes). */
int sk_emit_shard_sound(sk_s3 *s3, const char *path, sk_index **out);
/* A member's index record (extension lowercased, as readers compare it)
 * and its count in exts. */
int sk_emit_index_member(sk_shard_out *out, sk_manifest *exts, const char *ext, size_t el,
                         uint64_t data_offset, uint64_t size, uint32_t header_len, uint32_t crc,
                         sk_error *err);

/* Appends shard (its file at path, samples in it) to the manifest, named
 * relative to mdir, with its smallest and largest key when keys (may be
 * NULL) has first set. */
int sk_emit_manifest_add(sk_manifest *man, const char *path, const char *mdir,
                         const sk_index_shard_info *info, uint64_t samples, int part,
                         const sk_key_range *keys, sk_error *err);

/* --resume, the one check pack and shard make of a kept shard's samples:
 * whether member `member` of its index records extension e (lowercased
 * here as the record was), size and CRC32C (crc < 0: not known, the
 * extension and size alone).  An index without CRCs proves no CRC. */
int sk_emit_member_matches(const sk_index *ix, uint64_t member, const char *e, size_t el,
                           uint64_t size, int64_t crc);
/* --resume: 1 when the local shard at path (indexed by ix) was written with
 * this run's compression and --mtime (in its first header: no member's
 * CRC covers it). */
int sk_emit_shard_options_match(const char *path, const sk_index *ix, int compress_level,
                                uint64_t mtime);

#endif
