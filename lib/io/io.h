/*
 * io.h - the io layer: where shards go (sinks: sink.h) and where a
 * dataset's own objects come back from (the local directory listing, S3
 * manifests and index objects).  Never installed.
 */
#ifndef SK_IO_H
#define SK_IO_H

#include "format/format.h"
#include "io/sink.h"

/* shardlist.c: a dataset directory's contents.  *manifest = "DIR/manifest.json"
 * when that exists (caller frees; no listing then); else *names = the sorted
 * paths "DIR/NAME" of the entries not starting with '.' that keep(NAME,
 * path) accepts (free with sk_shard_list_free; may be none). */
int sk_shard_list_dir(const char *dir, int (*keep)(const char *name, const char *path),
                      char **manifest, char ***names, size_t *count, sk_error *err);
void sk_shard_list_free(char **names, size_t n);

/* dataset.c: the one dataset resolver.  One shard of what the user named,
 * with what its manifest promises when it came from one (known = 1). */
typedef struct sk_ds_shard {
    char *url;       /* local path, '-', or s3:// URL */
    char *index_url; /* from the manifest; NULL when not known */
    char *manifest;  /* the manifest that listed it; NULL when none */
    uint64_t bytes, samples, first_ordinal;
    uint32_t crc32c;
    int known;
    sk_key_range keys; /* the manifest's first_key/last_key, unchecked (NULL: none) */
} sk_ds_shard;

#define SK_DS_MANIFEST 1u /* NAME.json: the shards its manifest lists */
#define SK_DS_DIR 2u      /* a directory: its manifest.json, else its listed shards */
#define SK_DS_PREFIX 4u   /* s3://bucket/prefix/: its manifest.json, else its listed shards */
#define SK_DS_LISTING 8u  /* with SK_DS_PREFIX: the listed shards, never the manifest
                           * (index, which writes it) */
#define SK_DS_LOOKUP 16u  /* a local manifest may come from its .lookup table (lookups) */

typedef struct sk_ds_opts {
    unsigned flags;                                  /* SK_DS_* */
    sk_s3 *s3;                                       /* for s3:// manifests (NULL: refused) */
    struct sk_store_env *env; /* for http(s):// manifests (NULL: refused) */
    /* a directory's shards (SK_DS_DIR); NULL: the names sk_is_shard_name
     * takes, as an s3:// prefix's listing keeps */
    int (*keep)(const char *name, const char *path);
    const char *dir_wants; /* the error's words for an empty directory (NULL: the shard names) */
    /* when set, a manifest that cannot be read as one (corrupt, not JSON,
     * mismatched) is handed to it and skipped instead of failing */
    void (*bad_manifest)(void *ctx, const char *path, const sk_error *why);
    void *ctx;
} sk_ds_opts;

/* Appends to *list (*count entries, both may start empty) the shards typed
 * names, brace patterns expanded first.  Free with sk_ds_free. */
int sk_ds_resolve(const char *typed, const sk_ds_opts *o, sk_ds_shard **list, size_t *count,
                  sk_error *err);
void sk_ds_free(sk_ds_shard *list, size_t n);

/* -------------------------------------------------------- sink_s3.c */

/* Before the first shard: checks the client, aborts the multipart uploads
 * a killed run left under the names pattern gives shards start ..
 * start + nshards - 1 (nshards 0: every number from start on). */
int sk_sink_s3_prepare(sk_s3 *s3, const char *pattern, uint64_t start, size_t nshards,
                       void (*warn)(void *, const char *), void *warn_ctx, sk_error *err);
/* -------------------------------------------------------- store_s3.c */

/* The most a manifest or an index object read from S3 may hold. */
#define SK_S3_MANIFEST_MAX ((size_t)64 << 20)
#define SK_S3_INDEX_MAX ((size_t)1 << 30)

/* --resume: 1 when the shard object and its index object ("URL.idx")
 * exist, the index is sound and not empty, records the object's size, and
 * the object's CRC32C equals the recorded one; *out is then the index. */
int sk_s3_shard_sound(sk_s3 *s3, const char *url, sk_index **out);
/* sk_s3_shard_sound, and the index holds count samples from first_key to
 * last_key.  1 keep (info filled), 0 redo. */
int sk_sink_s3_matches(sk_s3 *s3, const char *url, uint64_t count, const char *first_key,
                       size_t first_len, const char *last_key, size_t last_len,
                       sk_index_shard_info *info);
/* Counts a kept shard's extensions from its index object. */
int sk_sink_s3_count_exts(sk_s3 *s3, const char *url, sk_manifest *man, sk_error *err);
/* Writes the manifest as an object (the last one of a run). */
int sk_sink_s3_put_manifest(sk_s3 *s3, sk_manifest *man, const char *url, sk_error *err);
/* The manifest written where place names: an object (one PUT through s3),
 * else a local file (sk_manifest_write_to's flags: temporary name, rename). */
int sk_sink_put_manifest(sk_s3 *s3, sk_manifest *man, const char *place, unsigned flags, sk_error *err);
/* The shard objects (names sk_is_shard_name takes) directly under
 * the prefix URL ("s3://b/p/"), sorted, as s3:// URLs, listed by the
 * store's one pager (sk_store_list): keys outside the prefix or below a
 * further '/' (a hostile listing's "p/../x" among them) and dot names are
 * not listed.  s3: the client.  Free with sk_shard_list_free. */
int sk_store_list_shards(sk_s3 *s3, const char *prefix_url, char ***urls, size_t *count, sk_error *err);
/* A shard's name, in a directory or under a prefix: a tar, plain or
 * compressed in a way the readers take (.tar, .tar.zst, .tar.gz, .tgz,
 * .tar.bz2, .tar.xz).  The one rule, so that a dataset copied between a
 * directory and a bucket has the same shards in both. */
int sk_is_shard_name(const char *name);
/* Uploads a local file as the object url in one PUT (small objects:
 * indexes, manifests); meta_etag (may be NULL): the ETag of the shard an
 * index object describes, kept as its metadata (sk_s3_index_tagged). */
int sk_s3_put_file(sk_s3 *s3, const char *path, const char *url, const char *meta_etag,
                   sk_error *err);
/* --resume without reading the shard: 1 when url's index object
 * ("URL.idx") carries the shard object's current ETag (put there by index
 * from the ETag it read), is sound, not empty and records the object's
 * size; *out is then the index.  0: decide another way. */
int sk_s3_index_tagged(sk_s3 *s3, const char *url, sk_index **out);
/* Makes an empty private scratch file in $TMPDIR (mkstemp) for an object
 * on its way up; buf gets its name.  The caller unlinks it. */
int sk_s3_scratch(char *buf, size_t cap, const char *what, sk_error *err);
/* Reads a manifest or an index object (SK_E_NOTFOUND when missing). */
int sk_s3_load_manifest(sk_s3 *s3, const char *url, sk_manifest **m, sk_error *err);
int sk_s3_load_index(sk_s3 *s3, const char *url, sk_index **out, sk_error *err);

/* -------------------------------------------------------- existing.c */

/* The manifest already where a run writes one (pack, shard, the sample
 * writer): refused, appended to or replaced, as mode says (SK_EXISTING_*).
 * Zero it, set mode, call sk_existing_begin before the first shard and
 * sk_existing_commit instead of writing the manifest. */
typedef struct sk_existing {
    int mode;
    int began;
    int parts;          /* the run is a --part (no append then) */
    sk_manifest *old;   /* what was there at the start (NULL: nothing) */
    char *mpath, *relpat;
    uint64_t start;     /* the first number this run writes */
} sk_existing;
/* Reads the manifest at mpath (local or s3://) and decides: refuses
 * (SK_E_USAGE naming it) a manifest listing a shard outside this run's
 * pattern (relative to mdir) does not name at *start or after (nshards,
 * the run's count or UINT64_MAX, is not held against it: a rerun with
 * fewer is warned of at commit); with append, options that differ
 * from options_json (but "start") and a --start inside the dataset, and
 * sets *start after its last shard when 0. */
int sk_existing_begin(sk_existing *g, sk_s3 *s3, const char *pattern, const char *mpath, const char *mdir,
                  const char *options_json, uint64_t *start, uint64_t nshards, sk_error *err);
/* Writes man (this run's shards) to mpath: with append, after the shards
 * already listed (read again: they must not have changed); otherwise in its
 * place, warning of earlier shards it no longer lists.  flags: those of
 * sk_manifest_write_to for a local manifest (its lookup table; a name the
 * run chose must be a regular file or nothing). */
int sk_existing_commit(sk_existing *g, sk_s3 *s3, sk_manifest *man, const char *mpath,
                       unsigned flags, void (*warn)(void *, const char *), void *ctx, sk_error *err);
void sk_existing_release(sk_existing *g);
/* index, merge: SK_E_USAGE naming it when the manifest at mpath lists a
 * shard URL man does not ("did not <verb>": index, merge). */
int sk_existing_listed(sk_s3 *s3, const char *mpath, const sk_manifest *man, const char *verb,
                       sk_error *err);

/* place_io.c: a remote object (s3://, http(s)://) copied whole into an
 * unlinked scratch file in dir ($TMPDIR when NULL): *fd, read from 0, for
 * a reader that needs to seek in it.  Errors name url. */
int sk_place_fetch_fd(const char *url, sk_s3 *s3, const char *dir, int *fd, sk_error *err);

#endif
