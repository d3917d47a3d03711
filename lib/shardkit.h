/*
 * shardkit.h - the public API of libshardkit.
 *
 * libshardkit turns many small files into indexed tar (WebDataset) shards and
 * reads them back.  This is the only header a program needs; the shardkit
 * command line tool itself includes nothing else from lib/.
 *
 * Conventions, for every call below:
 *   - Functions return 0 (SK_OK) on success or a positive sk_code on failure,
 *     and fill the caller's sk_error with a message that names the file or
 *     URL and the cause.  Passing a NULL sk_error is allowed.
 *   - Handles are opaque, created by an _open or _new call and released by
 *     the matching _close or _free, which accepts NULL.
 */
#ifndef SHARDKIT_H
#define SHARDKIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- version */

#define SK_VERSION_MAJOR 0
#define SK_VERSION_MINOR 1
#define SK_VERSION_PATCH 0
/* The library's version at run time, "MAJOR.MINOR.PATCH". */
const char *sk_version(void);

/* ----------------------------------------------------------------- errors */

typedef enum sk_code {
    SK_OK = 0,
    SK_E_USAGE = 1,   /* bad argument or option */
    SK_E_IO = 2,      /* a read, write, open or rename failed */
    SK_E_INPUT = 3,   /* input breaks a rule (no key, duplicate member...) */
    SK_E_CORRUPT = 4, /* a shard, index or manifest is damaged or truncated */
    SK_E_NOMEM = 5,
    SK_E_NET = 6,     /* connection, DNS, TLS or timeout */
    SK_E_REMOTE = 7,  /* the server answered with an error */
    SK_E_NOTFOUND = 8,
    SK_E_MISMATCH = 9 /* checksums, sizes or counts disagree */
} sk_code;

#define SK_ERROR_MAX 1024
typedef struct sk_error {
    int code;               /* sk_code, 0 when no error */
    char msg[SK_ERROR_MAX]; /* names the file or URL and the cause */
} sk_error;
#define SK_ERROR_INIT {0, {0}}

/* A short, constant name for an sk_code ("I/O error", ...). */
const char *sk_code_name(int code);
/* Sets *err (when not NULL) and returns code, so a caller can write
 * `return sk_error_set(err, SK_E_IO, "%s: %s", path, strerror(errno));`. */
int sk_error_set(sk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --------------------------------------------------------------- checksums */

/* CRC32C (Castagnoli), the checksum S3 calls x-amz-checksum-crc32c.
 * Start with crc = 0 and feed the previous result to continue a stream. */
uint32_t sk_crc32c(uint32_t crc, const void *data, size_t len);
/* The CRC32C of A followed by B, from crc(A), crc(B) and B's length. */
uint32_t sk_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* ------------------------------------------------------------ sample keys */

/* The WebDataset rule: the key of "a/b.seg.png" is "a/b" (key_len 3) and its
 * extension "seg.png" starts at ext_off 4.  Returns SK_E_INPUT when the
 * basename holds no key (no dot, a leading dot, or nothing after the dot).
 * Extensions compare lowercased: see sk_ext_cmp. */
int sk_sample_split(const char *path, size_t n, size_t *key_len, size_t *ext_off);
/* Compares two extensions bytewise after ASCII lowercasing; <0, 0 or >0. */
int sk_ext_cmp(const char *a, size_t an, const char *b, size_t bn);

/* ------------------------------------------------------------------ index */
/* The sidecar index beside each shard ("<shard>.idx"); layout in
 * docs/format.md.  Ordinals are positions within the shard. */

typedef struct sk_index_shard_info {
    uint64_t size;               /* bytes of the shard file */
    uint32_t crc32c;             /* CRC32C of the whole shard file */
    uint32_t first_block_crc32c; /* CRC32C of its first 512 bytes */
    uint32_t flags;              /* SK_INDEX_ZSTD when the shard is .tar.zst */
} sk_index_shard_info;
#define SK_INDEX_ZSTD 1u

typedef struct sk_sample_ref {
    uint64_t ordinal;
    const char *key;        /* not NUL-terminated in general; use key_len */
    size_t key_len;
    uint64_t offset;        /* first header byte, in the tar stream */
    uint64_t span;          /* bytes from offset to the end of the last member */
    uint64_t stored_offset; /* where to read in the shard file (differs from */
    uint64_t stored_span;   /* offset/span only in compressed shards) */
    uint32_t first_member, member_count;
} sk_sample_ref;

typedef struct sk_member_ref {
    const char *ext; /* lowercase extension, ext_len bytes */
    size_t ext_len;
    uint64_t data_offset; /* first data byte, in the tar stream */
    uint64_t size;
    uint32_t header_len; /* header bytes (pax + ustar) before data_offset */
    uint32_t crc32c;
} sk_member_ref;

typedef struct sk_index_builder sk_index_builder;
sk_index_builder *sk_index_builder_new(void);
void sk_index_builder_free(sk_index_builder *b);
/* Forgets all records, keeping the buffers, to build the next shard's. */
void sk_index_builder_reset(sk_index_builder *b);
uint64_t sk_index_builder_samples(const sk_index_builder *b);
/* Starts the next sample (ordinal = samples added so far). */
int sk_index_add_sample(sk_index_builder *b, const char *key, size_t key_len,
                        uint64_t offset, uint64_t span, uint64_t stored_offset,
                        uint64_t stored_span, sk_error *err);
/* Adds a member to the sample added last. */
int sk_index_add_member(sk_index_builder *b, const char *ext, size_t ext_len,
                        uint64_t data_offset, uint64_t size, uint32_t header_len,
                        uint32_t crc32c, sk_error *err);
/* Writes the index to path through a temporary name and a rename. */
int sk_index_builder_write(sk_index_builder *b, const char *path,
                           const sk_index_shard_info *shard, sk_error *err);

typedef struct sk_index sk_index;
/* Skip the body checksum at open, so opening costs O(1) whatever the size;
 * every record is still bounds-checked as it is read. */
#define SK_INDEX_TRUST_BODY 1u
/* Maps and validates an index (header checksum, version, section table,
 * size, and the body checksum unless SK_INDEX_TRUST_BODY). */
int sk_index_open(sk_index **out, const char *path, unsigned flags, sk_error *err);
/* The same over bytes the caller keeps alive (e.g. fetched from S3); name
 * is used in messages. */
int sk_index_from_memory(sk_index **out, const void *data, size_t size,
                         const char *name, unsigned flags, sk_error *err);
void sk_index_close(sk_index *ix);
const sk_index_shard_info *sk_index_shard(const sk_index *ix);
uint64_t sk_index_sample_count(const sk_index *ix);
uint64_t sk_index_member_count(const sk_index *ix);
/* Sample by ordinal, O(1). */
int sk_index_sample(const sk_index *ix, uint64_t ordinal, sk_sample_ref *out, sk_error *err);
/* Member i of the shard (a sample's are first_member .. +member_count). */
int sk_index_member(const sk_index *ix, uint64_t i, sk_member_ref *out, sk_error *err);
/* Ordinal of the sample with this key, O(log n); SK_E_NOTFOUND if none. */
int sk_index_find(const sk_index *ix, const char *key, size_t key_len, uint64_t *ordinal,
                  sk_error *err);

/* --------------------------------------------------------------- manifest */
/* manifest.json: the dataset's shards in order, with their first global
 * ordinals, sizes and checksums; layout in docs/format.md. */

typedef struct sk_manifest_shard {
    char *url;       /* relative to the manifest's location */
    char *index_url; /* NULL when the shard has no index */
    uint64_t bytes, samples;
    uint64_t first_ordinal; /* set by sk_manifest_add_shard */
    uint32_t crc32c;        /* of the whole shard file */
    int part;               /* which --part wrote it (when parts > 0) */
} sk_manifest_shard;

typedef struct sk_manifest_ext {
    char *ext;
    uint64_t count;
} sk_manifest_ext;

typedef struct sk_manifest {
    char *tool;         /* "shardkit X.Y.Z"; NULL writes this build's */
    char *options_json; /* JSON object of the options that shaped the output */
    int part, parts;    /* parts = 0 when the run was not split */
    sk_manifest_shard *shards;
    size_t nshards, cap_shards;
    sk_manifest_ext *exts;
    size_t nexts;
    uint64_t samples, members, bytes; /* totals */
} sk_manifest;

sk_manifest *sk_manifest_new(void);
void sk_manifest_free(sk_manifest *m);
/* Appends a shard (strings are copied); its first_ordinal is the number of
 * samples before it. */
int sk_manifest_add_shard(sk_manifest *m, const sk_manifest_shard *s, sk_error *err);
/* Adds count members with this extension to the totals. */
int sk_manifest_count_ext(sk_manifest *m, const char *ext, size_t ext_len, uint64_t count,
                          sk_error *err);
/* Writes the manifest through a temporary name and a rename. */
int sk_manifest_write(sk_manifest *m, const char *path, sk_error *err);
int sk_manifest_load(sk_manifest **out, const char *path, sk_error *err);
/* Parses manifest text (e.g. fetched from S3); name is used in messages. */
int sk_manifest_parse(sk_manifest **out, const char *text, size_t len, const char *name,
                      sk_error *err);

/* ------------------------------------------------------------------- pack */
/* Many small files -> indexed tar shards and a manifest.  Inputs are sorted
 * by WebDataset key (or shuffled with a seed), grouped into samples, and
 * cut into shards before a sample would pass max_size or max_count. */

typedef struct sk_pack_stats {
    uint64_t files_total, files_done;
    uint64_t bytes_total, bytes_done; /* input bytes */
    uint64_t samples, shards, shards_resumed;
    uint64_t skipped; /* inputs skipped: unreadable (with skip_errors), links, devices */
    uint64_t output_bytes;
    double seconds;
} sk_pack_stats;

typedef struct sk_pack_options {
    const char *pattern;  /* printf-style shard path with one integer field */
    const char *manifest; /* NULL: manifest.json beside the shards */
    uint64_t max_size;    /* bytes per shard, headers included; 0 = 512 MiB */
    uint64_t max_count;   /* samples per shard; 0 = no limit */
    uint64_t start;       /* number of the first shard */
    int shuffle;          /* seeded shuffle of samples instead of key order */
    uint64_t seed;
    uint64_t mtime;       /* mtime in every header (default 0) */
    int jobs;             /* reader threads; 0 = number of cores */
    int resume;           /* keep complete shards that match the plan */
    int skip_errors;      /* skip unreadable inputs instead of stopping */
    int follow_symlinks;
    const char *tmp_dir;  /* where archive members are spooled */
    /* --part: pack only the samples of part (0..parts-1); parts = 0 packs all.
     * pattern (and manifest) then need "{part}" (see sk_part_name); the
     * default manifest is manifest-{part}.json beside the shards. */
    int part, parts;
    /* Called with each warning (skipped input, oversized sample). */
    void (*warn)(void *ctx, const char *msg);
    /* Called about twice a second and once at the end. */
    void (*progress)(void *ctx, const sk_pack_stats *stats);
    void *ctx;
} sk_pack_options;

typedef struct sk_pack sk_pack;
int sk_pack_new(sk_pack **out, const sk_pack_options *opts, sk_error *err);
void sk_pack_free(sk_pack *p);
/* Adds every regular file under dir, named relative to dir. */
int sk_pack_add_dir(sk_pack *p, const char *dir, sk_error *err);
/* Adds the files listed in list (newline- or NUL-separated paths relative
 * to root, or absolute); list_name is used in messages. */
int sk_pack_add_list(sk_pack *p, FILE *list, const char *list_name, const char *root,
                     int nul_separated, sk_error *err);
/* Adds every regular member of an archive libarchive can read. */
int sk_pack_add_archive(sk_pack *p, const char *path, sk_error *err);
/* Plans and writes the shards, their indexes and the manifest. */
int sk_pack_run(sk_pack *p, sk_pack_stats *stats, sk_error *err);
/* Formats a shard name from a pattern; fails on a pattern without exactly
 * one integer conversion (%d, %06d, %u, %x...). */
int sk_shard_name(const char *pattern, uint64_t n, char *buf, size_t cap, sk_error *err);
/* ---------------------------------------------- index building and lookup */

/* Brace patterns as WebDataset users write shard lists:
 * "train-{000000..000099}.tar" (a numeric range, zero padded to the width
 * of its first bound) and "{train,val}.tar" (alternatives); several groups
 * multiply out, left to right.  *out is a NULL-terminated array the caller
 * releases with sk_brace_free; *count (may be NULL) its length.  A string
 * without braces expands to itself. */
int sk_brace_expand(const char *pattern, char ***out, size_t *count, sk_error *err);
void sk_brace_free(char **list);

/* More sk_index_shard_info.flags: */
#define SK_INDEX_GZIP 2u   /* compressed through libarchive (gzip, bzip2, xz): */
                           /* read by streaming from stored_offset 0 */
#define SK_INDEX_NO_CRC 4u /* built header-only (--fast): every crc32c is 0, */
                           /* meaning unknown, and is not verified */

/* Build flags for sk_index_build. */
#define SK_BUILD_FAST 1u /* plain .tar only: read headers, never data; no CRCs */

typedef struct sk_build_opts {
    unsigned flags;         /* SK_BUILD_* */
    const char *index_path; /* NULL: "<shard>.idx" */
    const char *dali_path;  /* NULL: none; else write DALI's wds2idx v1.2 here */
    /* Called with a warning (non-adjacent members of one key, skipped
     * names); NULL prints nothing. */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} sk_build_opts;

typedef struct sk_build_stats {
    uint64_t samples, members, bytes; /* bytes: the shard file */
    uint32_t crc32c, flags;           /* as written into the index header */
    uint64_t dirs, links, meta, unkeyed; /* entries skipped, by kind */
    uint64_t split_keys; /* keys that occur as more than one sample */
} sk_build_stats;

/* Indexes an existing shard (.tar, .tar.gz, .tar.zst, told apart by their
 * magic bytes) and writes its sidecar.  A truncated shard is indexed up to
 * its last complete member, the index is written, and SK_E_CORRUPT names
 * the offset.  s3:// is not supported yet (SK_E_USAGE). */
int sk_index_build(const char *shard, const sk_build_opts *opts, sk_build_stats *stats,
                   sk_error *err);

/* How lookups read shard bytes: a local file now, an S3 ranged GET later.
 * read_at fills buf with n bytes at off, *got < n only at the end. */
typedef struct sk_range_reader {
    void *ctx;
    int (*read_at)(void *ctx, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err);
    uint64_t size;     /* bytes of the object */
    void (*close)(void *ctx);
} sk_range_reader;
/* Opens a local file as a range reader (pread). */
int sk_range_reader_file(sk_range_reader *rr, const char *path, sk_error *err);
/* Opens url; a hook the S3 client replaces; today local paths only. */
typedef int (*sk_range_open_fn)(sk_range_reader *rr, const char *url, sk_error *err);
extern sk_range_open_fn sk_range_open;

/* A dataset: a manifest, a directory (its manifest.json, or every
 * *.tar / *.tar.gz / *.tar.zst in it with a sidecar), or one shard. */
typedef struct sk_dataset sk_dataset;
/* flags: SK_INDEX_TRUST_BODY opens every index in O(1); without it each
 * index's body checksum is verified once, when first used. */
int sk_dataset_open(sk_dataset **out, const char *path, unsigned flags, sk_error *err);
void sk_dataset_close(sk_dataset *ds);
/* Opens every index now (so the count is known); returns the sample count. */
int sk_dataset_samples(sk_dataset *ds, uint64_t *count, sk_error *err);

typedef struct sk_hit {
    size_t shard;            /* position of the shard in the dataset */
    const char *shard_path;  /* valid while the dataset is open */
    uint64_t global_ordinal; /* across the dataset */
    sk_sample_ref sample;    /* within the shard; sample.key valid while open */
} sk_hit;
/* The sample with this key (shards searched in order, each O(log n)). */
int sk_dataset_find(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out, sk_error *err);
/* The sample at a global ordinal (O(log shards) with a manifest). */
int sk_dataset_at(sk_dataset *ds, uint64_t ordinal, sk_hit *out, sk_error *err);
/* Member i (0 .. member_count-1) of a sample. */
int sk_dataset_member(sk_dataset *ds, const sk_hit *h, uint32_t i, sk_member_ref *out,
                      sk_error *err);
/* Reads member i's data into buf (cap >= its size): one pread for a plain
 * tar; verified against its CRC32C (SK_E_MISMATCH names member and shard).
 * The first read from a shard checks that the index belongs to it (size
 * and first-block CRC32C), else SK_E_MISMATCH. */
int sk_dataset_read(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t cap,
                    sk_error *err);
/* Writes the sample as a one-sample tar (members named key.ext, verified
 * data, end blocks) to fd. */
int sk_dataset_write_tar(sk_dataset *ds, const sk_hit *h, int fd, const char *fd_name,
                         sk_error *err);

/* Joins manifests of parallel runs into one with continuous ordinals;
 * shard and index URLs are rewritten relative to out_path's directory.
 * Duplicate shard URLs, duplicate keys across shards (checked through
 * their indexes), and missing or repeated parts are errors naming them. */
int sk_manifest_merge(const char *const *paths, size_t n, const char *out_path, sk_error *err);

/* Writes wids' shard-index JSON (wids-shard-index-v1) for a manifest's
 * shards, URLs relative to out_path's directory. */
int sk_manifest_write_wids(const sk_manifest *m, const char *manifest_path,
                           const char *out_path, sk_error *err);

/* -------------------------------------------------------------- scale-out */
/* --part I/N: N copies of a tool (a Slurm job array, a Kubernetes Indexed
 * Job, an AWS Batch array job) each take a disjoint, deterministic slice of
 * the samples, chosen by a fixed hash of the sample key alone: every sample
 * is in exactly one part, whatever order the input is listed in, and
 * `shardkit index merge` joins the parts' manifests.  Parts are numbered
 * 0..N-1.  Details and recipes: docs/scale-out.md. */

#define SK_PART_MAX 65536 /* most parts a run can be split into */

/* The 64-bit hash behind the partition: FNV-1a 64 of the key's bytes, then
 * murmur3's fmix64.  Fixed forever: changing it would move samples. */
uint64_t sk_part_hash(const char *key, size_t key_len);
/* The part (0..parts-1) of the sample with this key: the high 32 bits of
 * sk_part_hash times parts, shifted right by 32.  parts <= 1 gives 0. */
int sk_part_of(const char *key, size_t key_len, int parts);
/* Parses --part: "I/N" (0 <= I < N), or "auto", which reads the scheduler's
 * variables: SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (or _MIN/_MAX;
 * the array must be tasks 0..N-1), Kubernetes' JOB_COMPLETION_INDEX or AWS
 * Batch's AWS_BATCH_JOB_ARRAY_INDEX, these two with parts_hint.  parts_hint
 * is --parts N (0 when not given); when given it sets N for Slurm too, so a
 * rerun of one array task keeps the same N.  SK_E_USAGE names the variable
 * or value at fault. */
int sk_part_parse(const char *spec, int parts_hint, int *part, int *parts, sk_error *err);
/* Expands every "{part}" in a file name template to the part number, zero
 * padded to the width of parts-1 (N = 4: "0".."3"; N = 16: "00".."15").
 * SK_E_USAGE when the template has {part} but parts = 0, or (with required)
 * has none though parts > 0, since the parts' files would then collide.
 * *out is malloc'ed, the caller frees it. */
int sk_part_name(const char *tmpl, int part, int parts, int required, char **out,
                 sk_error *err);

#ifdef __cplusplus
}
#endif
#endif /* SHARDKIT_H */
