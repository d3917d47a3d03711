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

/* Options structs (sk_pack_options, sk_reader_options, ...) start with
 * struct_size, which their init function sets to the caller's sizeof, so
 * the library can add fields at the end without breaking programs built
 * against an older header: it reads only the fields the caller's struct
 * has.  A zeroed struct (struct_size 0) means this version's layout. */

/* What libshardkit exports: the library is built with -fvisibility=hidden,
 * so exactly the functions declared here are visible in libshardkit.so. */
#if defined(__GNUC__) || defined(__clang__)
#define SK_API __attribute__((visibility("default")))
#else
#define SK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The S3 client handle (sk_s3_new), declared once up here because several
 * sections take one; C99 forbids a typedef repeated. */
typedef struct sk_s3 sk_s3;

/* ---------------------------------------------------------------- version */

#define SK_VERSION_MAJOR 0
#define SK_VERSION_MINOR 1
#define SK_VERSION_PATCH 0
/* The library's version at run time, "MAJOR.MINOR.PATCH". */
SK_API const char *sk_version(void);

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
SK_API const char *sk_code_name(int code);
/* Sets *err (when not NULL) and returns code, so a caller can write
 * `return sk_error_set(err, SK_E_IO, "%s: %s", path, strerror(errno));`. */
SK_API int sk_error_set(sk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* --------------------------------------------------------------- checksums */

/* CRC32C (Castagnoli), the checksum S3 calls x-amz-checksum-crc32c.
 * Start with crc = 0 and feed the previous result to continue a stream. */
SK_API uint32_t sk_crc32c(uint32_t crc, const void *data, size_t len);
/* The CRC32C of A followed by B, from crc(A), crc(B) and B's length. */
SK_API uint32_t sk_crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* ------------------------------------------------------------ sample keys */

/* The WebDataset rule: the key of "a/b.seg.png" is "a/b" (key_len 3) and its
 * extension "seg.png" starts at ext_off 4.  Returns SK_E_INPUT when the
 * basename holds no key (no dot, a leading dot, or nothing after the dot).
 * Extensions compare lowercased: see sk_ext_cmp. */
SK_API int sk_sample_split(const char *path, size_t n, size_t *key_len, size_t *ext_off);
/* Lowercases an extension as WebDataset does (Python's str.lower() of the
 * name tarfile decoded): valid UTF-8 by Unicode's full lowercase mapping,
 * bytes that are not valid UTF-8 kept as they are.  Writes the result to
 * out, which must hold SK_EXT_LOWER_MAX(n) bytes (a lowercase character
 * can be longer: "İ" -> "i̇"), and returns its length; no NUL is added. */
#define SK_EXT_LOWER_MAX(n) ((n) + (n) / 2 + 1)
SK_API size_t sk_ext_lower(const char *in, size_t n, char *out);
/* Compares two extensions bytewise after sk_ext_lower; <0, 0 or >0. */
SK_API int sk_ext_cmp(const char *a, size_t an, const char *b, size_t bn);

/* ----------------------------------------------------------------- places */
/* The one grammar of a place a user names, which every tool applies to
 * every option and argument naming one: a local path, '-' (standard input
 * or output, where a stream fits), s3://BUCKET/KEY, http(s):// (read
 * only).  Any other scheme ("gs://", "az://", "hf://", "file://", "xyz://")
 * and "pipe:" are refused by name, never taken as a local path.  Schemes
 * in any case ("S3://b/k" is S3); a lost slash ("s3:/b/k", "s3:b",
 * "http:/h/x", "s3:") is refused: a local name that begins so is written
 * "./s3:..." (docs/places.md).  what NULL: the message names place alone. */
enum sk_place_kind { SK_PLACE_FILE, SK_PLACE_STDIO, SK_PLACE_S3, SK_PLACE_HTTP };
#define SK_PLACE_READ 1u     /* the place is read */
#define SK_PLACE_WRITE 2u    /* the place is written */
#define SK_PLACE_STREAM 4u   /* '-' is taken here */
#define SK_PLACE_S3_OK 8u    /* s3:// is taken here */
#define SK_PLACE_HTTP_OK 16u /* http(s):// is taken here (reading) */
/* SK_OK and *kind (may be NULL) when place fits flags; else SK_E_USAGE
 * naming what ("pack -o", "--files-from"), the place and why. */
SK_API int sk_place_check(const char *place, unsigned flags, const char *what, int *kind,
                          sk_error *err);

/* --------------------------------------------------- places read, written */
/* A place (sk_place_check's grammar) opened as a file for what is not a
 * dataset: a list read line by line, one object written whole.  Local
 * paths and '-' are plain files and standard input or output; s3:// (and,
 * for reading, http(s)://) stream through the library's stores and sinks,
 * with s3 the client for s3:// (NULL: refused, naming the URL). */
typedef struct sk_place_in sk_place_in;
/* Opens place for reading (a remote one: one streaming GET; a missing
 * object is an error naming its URL).  A remote line of over 64 KiB is an
 * error (a list holds names), so memory stays bounded whatever it holds. */
SK_API int sk_place_in_open(sk_place_in **out, const char *place, sk_s3 *s3, sk_error *err);
SK_API FILE *sk_place_in_file(sk_place_in *in);
/* Closes; returns rc, or the remote read's own error (in err) when one
 * stopped the stream. */
SK_API int sk_place_in_close(sk_place_in *in, int rc, sk_error *err);
/* A place written whole: a local path (sk_out: temporary name, rename at
 * commit), NULL or '-' (standard output), or s3://BUCKET/KEY (the object
 * appears at commit, one PUT, or parts past 8 MiB; nothing on abort). */
typedef struct sk_place_out sk_place_out;
SK_API int sk_place_out_open(sk_place_out **out, const char *place, sk_s3 *s3, sk_error *err);
/* Where to write (a descriptor), and its name for messages. */
SK_API int sk_place_out_fd(const sk_place_out *o);
SK_API const char *sk_place_out_name(const sk_place_out *o);
/* Publishes and frees o, whatever happens. */
SK_API int sk_place_out_commit(sk_place_out *o, sk_error *err);
/* Frees o, publishing nothing; accepts NULL. */
SK_API void sk_place_out_abort(sk_place_out *o);

/* ------------------------------------------------ text safe for a terminal */
/* Copies src to dst (cap bytes, always NUL-terminated, cut at a whole
 * character): C0 controls (ESC, BEL, newline...), DEL, C1 controls and
 * bytes that are not valid UTF-8 become "\xHH"; the rest is kept.  Every
 * sk_error message and library warning is made so; the command line
 * passes what it prints of its own through it too.  Returns the length. */
SK_API size_t sk_escape_text(char *dst, size_t cap, const char *src);

/* ---------------------------------------------------------- output files */
/* A file written the safe way: under a temporary name beside path
 * (".NAME.PID.N.tmp", unique to the process), renamed onto path only by
 * sk_out_commit, so an existing file at path survives any failure.  A path
 * that exists and is not a regular file (a device, a FIFO, /dev/stdout) is
 * written in place and never renamed over or unlinked; NULL or "-" is
 * standard output (left open). */
typedef struct sk_out sk_out;
/* The one way an untrusted name (an index key, an archive member, a
 * manifest URL, an S3 key) becomes a path under dir: *out = "dir/name"
 * (caller frees) when name[0..len) is a safe relative path - no leading
 * '/', no "..", "." or empty component, no NUL byte, at most
 * 255 bytes a component and 4096 in all - else SK_E_CORRUPT naming what
 * ("index key", ...) and why.  The joined path cannot leave dir. */
SK_API int sk_path_join(const char *dir, const char *name, size_t len, const char *what, char **out,
                        sk_error *err);
SK_API int sk_out_open(sk_out **out, const char *path, sk_error *err);
SK_API int sk_out_fd(const sk_out *o);
/* The name writes go to (the temporary one, or path), for messages. */
SK_API const char *sk_out_name(const sk_out *o);
/* Closes and renames onto path; frees o whatever happens (after removing
 * the temporary file on failure). */
SK_API int sk_out_commit(sk_out *o, sk_error *err);
/* Closes and removes the temporary file; accepts NULL. */
SK_API void sk_out_abort(sk_out *o);

/* ---------------------------------------------------- an existing dataset */
/* What a run that writes shards and a manifest (sk_pack_options.existing,
 * sk_shard_options.existing, the sample writer's sk_pack_options) does
 * with a manifest already at its manifest path, local or s3:// (docs/pack.md,
 * "Adding to a dataset"). */
/* The default: SK_E_USAGE, naming the manifest and a shard, before any
 * shard is written, when it lists a shard this run would not write (not
 * named by its pattern at start or after); a run that rewrites the same
 * names replaces it. */
#define SK_EXISTING_REFUSE 0
/* The run continues the dataset: numbering after its last shard (start 0;
 * a start inside it is refused), the options it records but "start" must
 * be this run's (else SK_E_USAGE naming the first difference), and the
 * manifest is rewritten with its shards first and this run's after (first
 * ordinals continuing), under the run's lock, temporary name and rename. */
#define SK_EXISTING_APPEND 1
/* The manifest is replaced whatever it lists. */
#define SK_EXISTING_OVERWRITE 2

/* ------------------------------------------------------------------ index */
/* The sidecar index beside each shard ("<shard>.idx"); layout in
 * docs/format.md.  Ordinals are positions within the shard.  This reads
 * one; writing one record by record is the index builder (unstable, at
 * the end). */

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

typedef struct sk_index sk_index;
/* Skip the body checksum at open, so opening costs O(1) whatever the size;
 * every record is still bounds-checked as it is read. */
#define SK_INDEX_TRUST_BODY 1u
/* Maps and validates an index (header checksum, version, section table,
 * size, and the body checksum unless SK_INDEX_TRUST_BODY). */
SK_API int sk_index_open(sk_index **out, const char *path, unsigned flags, sk_error *err);
/* The same over bytes the caller keeps alive (e.g. fetched from S3); name
 * is used in messages. */
SK_API int sk_index_from_memory(sk_index **out, const void *data, size_t size,
                         const char *name, unsigned flags, sk_error *err);
SK_API void sk_index_close(sk_index *ix);
SK_API const sk_index_shard_info *sk_index_shard(const sk_index *ix);
SK_API uint64_t sk_index_sample_count(const sk_index *ix);
SK_API uint64_t sk_index_member_count(const sk_index *ix);
/* Sample by ordinal, O(1). */
SK_API int sk_index_sample(const sk_index *ix, uint64_t ordinal, sk_sample_ref *out, sk_error *err);
/* Member i of the shard (a sample's are first_member .. +member_count). */
SK_API int sk_index_member(const sk_index *ix, uint64_t i, sk_member_ref *out, sk_error *err);
/* Ordinal of the sample with this key, O(log n); SK_E_NOTFOUND if none. */
SK_API int sk_index_find(const sk_index *ix, const char *key, size_t key_len, uint64_t *ordinal,
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
    /* each shard's first and last key (NULL: none known); the library's,
     * through its own calls (docs/format.md, "first_key") */
    struct sk_key_range *key_ranges;
} sk_manifest;

SK_API sk_manifest *sk_manifest_new(void);
SK_API void sk_manifest_free(sk_manifest *m);
/* Appends a shard (strings are copied); its first_ordinal is the number of
 * samples before it. */
SK_API int sk_manifest_add_shard(sk_manifest *m, const sk_manifest_shard *s, sk_error *err);
/* Adds count members with this extension to the totals. */
SK_API int sk_manifest_count_ext(sk_manifest *m, const char *ext, size_t ext_len, uint64_t count,
                          sk_error *err);
/* Writes the manifest through a temporary name and a rename; with 64
 * shards or more, to a local regular file, also PATH.lookup, the binary
 * table lookups read instead of the JSON (docs/format.md). */
SK_API int sk_manifest_write(sk_manifest *m, const char *path, sk_error *err);
SK_API int sk_manifest_load(sk_manifest **out, const char *path, sk_error *err);
/* Parses manifest text (e.g. fetched from S3); name is used in messages. */
SK_API int sk_manifest_parse(sk_manifest **out, const char *text, size_t len, const char *name,
                      sk_error *err);

/* --------------------------------------------------------------------- S3 */
/* An S3 client: credentials (the aws cli's order), SigV4 signing, a libcurl
 * multi engine on a background thread with connection reuse, bounded
 * requests in flight, retries with exponential backoff and full jitter.
 * Every call is safe from several threads on one client.  Credentials never
 * appear in messages or logs.  Details and an example: docs/s3.md. */

/* Credentials, resolved like the aws cli: environment, the shared
 * credentials file, the config file, container credentials, EC2 instance
 * metadata (IMDSv2).  Strings are owned by the struct. */
typedef struct sk_creds {
    char *access_key, *secret_key, *token; /* token NULL when none */
    char *region;                          /* the profile's region, or NULL */
    char source[64];                       /* "environment", "shared credentials file"... */
    int max_attempts;                      /* the profile's max_attempts, or 0 */
} sk_creds;
#define SK_CREDS_INIT {NULL, NULL, NULL, NULL, {0}, 0}
/* Resolves credentials for profile (NULL: AWS_PROFILE, else "default").  An
 * explicit profile skips the environment variables, as the aws cli does.
 * SK_E_NOTFOUND when no source has any. */
SK_API int sk_creds_load(sk_creds *out, const char *profile, sk_error *err);
SK_API void sk_creds_release(sk_creds *c);

typedef struct sk_s3_config {
    size_t struct_size; /* sizeof, set by sk_s3_config_init; 0: this version's */
    const char *endpoint_url; /* NULL: AWS_ENDPOINT_URL, else AWS by region (https) */
    const char *region;       /* NULL: AWS_REGION, AWS_DEFAULT_REGION, profile, us-east-1 */
    const char *profile;      /* NULL: AWS_PROFILE or "default" */
    const sk_creds *creds;    /* NULL: sk_creds_load(profile); copied when given */
    int path_style;           /* 1 path style, 0 virtual-hosted, -1 auto (path style
                                 for custom endpoints, virtual-hosted for AWS) */
    int concurrency;          /* requests in flight (default 16) */
    int max_attempts;         /* tries per request, including the first; 0: AWS_MAX_ATTEMPTS,
                                 else the profile's max_attempts, else 8 */
    int read_timeout;         /* the low-speed window in seconds (default 30): a transfer
                                 slower than low_speed_limit over it is retried */
    int sign_payload;         /* 1: SHA-256 of bodies in the signature (slow) */
    int verbose;              /* 1: one line per request on stderr (never secrets) */
    long low_speed_limit;     /* bytes per second a transfer must keep up over
                                 read_timeout (default 1024; docs/s3.md) */
    int retry_notice;         /* 0 (default): the client's first retry is told in one
                                 line on stderr (the URL, the cause, the attempts
                                 left), as a wait is otherwise silent; -1: never */
    int http_only;            /* 1: a client for plain http(s):// files (shards on a
                                 web server): no credentials looked up, nothing
                                 signed, s3:// refused; the same retries and
                                 timeouts (docs/http.md) */
} sk_s3_config;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_s3_config_init_sized(sk_s3_config *o, size_t size);
#define sk_s3_config_init(o) sk_s3_config_init_sized((o), sizeof *(o))
#define SK_S3_CONFIG_INIT                                                                 \
    {.struct_size = sizeof(sk_s3_config), .path_style = -1, .concurrency = 16,            \
     .max_attempts = 0, .read_timeout = 30, .low_speed_limit = 1024}

/* Creates a client and starts its engine thread. */
SK_API int sk_s3_new(sk_s3 **out, const sk_s3_config *cfg, sk_error *err);
SK_API void sk_s3_free(sk_s3 *s3);
/* Requests sent (counting retries) and retries, since creation. */
SK_API void sk_s3_stats(const sk_s3 *s3, uint64_t *requests, uint64_t *retries);
/* The base URL of the endpoint the client talks to ("https://s3.us-east-1.amazonaws.com"). */
SK_API const char *sk_s3_endpoint(const sk_s3 *s3);

/* Splits "s3://bucket/key/path" into bucket and key (key may be ""); the
 * caller frees both.  SK_E_USAGE if url is not an s3:// URL. */
SK_API int sk_s3_parse_url(const char *url, char **bucket, char **key, sk_error *err);

typedef struct sk_s3_object {
    uint64_t size;
    char etag[80];       /* with its quotes removed */
    char crc32c[24];     /* x-amz-checksum-crc32c as returned (base64, may end "-N"), or "" */
    char key[1025];      /* in listings: S3 keys are at most 1024 bytes */
} sk_s3_object;

/* -------------------------------------------------- SageMaker ManifestFile */
/* A dataset's shards as a SageMaker ManifestFile (S3DataType=ManifestFile):
 * [{"prefix": "s3://bucket/prefix/"}, "train-000000.tar", ...], the shards
 * in dataset order and nothing else (no .idx, no manifest.json). */
typedef struct sk_sagemaker_opts {
    size_t struct_size; /* sizeof, set by sk_sagemaker_opts_init; 0: this version's */
    /* NULL: the s3:// shards' common prefix; else the prefix the shards are
     * (or will be) under: s3:// shards must lie under it, local ones are
     * named by their path under the manifest's directory */
    const char *prefix;
    /* > 0: warn when the shard count is not a multiple of it (ShardedByS3Key
     * gives every instance whole shards: equal data only when it divides) */
    unsigned instances;
    sk_s3 *s3; /* for an s3:// manifest or output */
    void (*warn)(void *ctx, const char *msg);
    void *ctx;
} sk_sagemaker_opts;
SK_API void sk_sagemaker_opts_init_sized(sk_sagemaker_opts *o, size_t size);
#define sk_sagemaker_opts_init(o) sk_sagemaker_opts_init_sized((o), sizeof *(o))
/* Writes the ManifestFile of the dataset manifest `manifest` (local or
 * s3://) to out (a local file through a temporary name and a rename, or an
 * s3:// object).  Errors: mixed local and s3:// shards, several buckets,
 * local shards without a prefix, a shard outside the prefix. */
SK_API int sk_sagemaker_manifest_write(const char *manifest, const char *out,
                                       const sk_sagemaker_opts *o, sk_error *err);

/* ------------------------------------------------------------------- pack */
/* Many small files -> indexed tar shards and a manifest.  Inputs are sorted
 * by WebDataset key (or shuffled with a seed), grouped into samples, and
 * cut into shards before a sample would pass max_size or max_count. */

/* ----------------------------------------------------------------- images */
/* JPEG members resized and re-encoded while packing (pack and shard), with
 * img2dataset's options and meanings; docs/images.md. */

enum sk_resize_mode {
    SK_RESIZE_NO,                 /* sizes kept; the bytes pass unchanged */
    SK_RESIZE_KEEP_RATIO,         /* the smaller side becomes image_size */
    SK_RESIZE_KEEP_RATIO_LARGEST, /* the larger side becomes image_size */
    SK_RESIZE_CENTER_CROP,        /* keep_ratio, then the centre image_size square */
    SK_RESIZE_BORDER,             /* keep_ratio_largest, then black borders to a square */
};
enum sk_bad_image {
    SK_BAD_IMAGE_SKIP, /* drop the sample, count and name it (the default) */
    SK_BAD_IMAGE_KEEP, /* keep the member's bytes as they are */
    SK_BAD_IMAGE_FAIL, /* stop with an error naming the member */
};
/* Default pixel cap: a decoded image above it is a bad image (a
 * decompression bomb), as Pillow's MAX_IMAGE_PIXELS. */
#define SK_IMAGE_MAX_PIXELS 89478485ull

typedef struct sk_image_options {
    size_t struct_size;        /* sizeof, set by sk_image_options_init; 0: this version's */
    unsigned image_size;       /* --image-size: target side in pixels; 0: no resizing */
    int resize_mode;           /* enum sk_resize_mode (default border, as img2dataset) */
    int resize_only_if_bigger; /* leave images not bigger than the target as they are */
    int encode_quality;        /* JPEG quality 1..100 (default 95) */
    unsigned min_image_size;   /* samples with an image whose smaller side is under it are skipped */
    double max_aspect_ratio;   /* samples with an image whose sides' ratio is over it are skipped */
    const char *image_ext;     /* comma-separated extensions that are images (default "jpg,jpeg") */
    int image_meta;            /* add width, height, original_width, original_height to .json */
    int bad_image;             /* enum sk_bad_image */
    uint64_t max_pixels;       /* 0: SK_IMAGE_MAX_PIXELS */
    uint64_t memory;           /* --image-memory: bytes all image workers share for
                                * decoding; 0: a quarter of physical memory,
                                * 256 MiB..2 GiB (docs/images.md) */
} sk_image_options;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_image_options_init_sized(sk_image_options *o, size_t size);
#define sk_image_options_init(o) sk_image_options_init_sized((o), sizeof *(o))
/* Whether o asks for any image work (a size, a minimum size or an aspect cap). */
SK_API int sk_image_options_active(const sk_image_options *o);
/* Parses img2dataset's names: a --resize-mode ("border", "keep_ratio",
 * "keep_ratio_largest", "center_crop", "no") into an enum sk_resize_mode,
 * a --bad-image policy ("skip", "keep", "fail") into an enum sk_bad_image;
 * -1 when unknown. */
SK_API int sk_image_mode_parse(const char *s);
SK_API int sk_image_bad_parse(const char *s);

typedef struct sk_pack_stats {
    uint64_t files_total, files_done;
    uint64_t bytes_total, bytes_done; /* input bytes */
    uint64_t samples, shards, shards_resumed;
    uint64_t skipped; /* inputs skipped: unreadable (with skip_errors), links, devices */
    uint64_t output_bytes;
    double seconds;
    uint64_t images, image_skips, bad_images; /* as sk_shard_stats (images set) */
} sk_pack_stats;

typedef struct sk_pack_options {
    size_t struct_size; /* sizeof, set by sk_pack_options_init; 0: this version's */
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
    int compress_level;   /* zstd level 1..22: .tar.zst shards in the zstd seekable
                           * format, one frame per sample or run of small
                           * samples; 0 = plain tar */
    /* --part: pack only the samples of part (0..parts-1); parts = 0 packs all.
     * pattern (and manifest) then need "{part}" (see sk_part_name); the
     * default manifest is manifest-{part}.json beside the shards. */
    int part, parts;
    /* Called with each warning (skipped input, oversized sample). */
    void (*warn)(void *ctx, const char *msg);
    /* Called about twice a second and once at the end. */
    void (*progress)(void *ctx, const sk_pack_stats *stats);
    void *ctx;
    /* Resize JPEG members on the way (NULL or inactive: untouched).  Shards
     * then roll over by their real sizes, as `shard` does (docs/images.md). */
    const sk_image_options *images;
    /* A manifest already at the manifest path: SK_EXISTING_REFUSE (0),
     * _APPEND or _OVERWRITE (section "an existing dataset", at the end). */
    int existing;
    /* 1: plan only (`pack --dry-run`): the sources are listed and sized and
     * the shards cut as a run would, stats says shards, samples and
     * output_bytes (tar bytes, before any compression); nothing is read,
     * created or written.  SK_E_USAGE with active images (their sizes are
     * known only once encoded). */
    int dry_run;
} sk_pack_options;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_pack_options_init_sized(sk_pack_options *o, size_t size);
#define sk_pack_options_init(o) sk_pack_options_init_sized((o), sizeof *(o))

typedef struct sk_pack sk_pack;
SK_API int sk_pack_new(sk_pack **out, const sk_pack_options *opts, sk_error *err);
SK_API void sk_pack_free(sk_pack *p);
/* Adds every regular file under dir, named relative to dir. */
SK_API int sk_pack_add_dir(sk_pack *p, const char *dir, sk_error *err);
/* Adds the files listed in list (newline- or NUL-separated paths relative
 * to root, or absolute); list_name is used in messages. */
SK_API int sk_pack_add_list(sk_pack *p, FILE *list, const char *list_name, const char *root,
                     int nul_separated, sk_error *err);
/* Adds every regular member of an archive libarchive can read. */
SK_API int sk_pack_add_archive(sk_pack *p, const char *path, sk_error *err);
/* Plans and writes the shards, their indexes and the manifest. */
SK_API int sk_pack_run(sk_pack *p, sk_pack_stats *stats, sk_error *err);
/* Formats a shard name from a pattern; fails on a pattern without exactly
 * one integer conversion (%d, %06d, %u, %x...). */
SK_API int sk_shard_name(const char *pattern, uint64_t n, char *buf, size_t cap, sk_error *err);

/* ------------------------------------------- outputs that are not inputs */
/* Declares a further file the caller writes for this pack run (a SageMaker
 * ManifestFile, an export); what names its role in messages ("--sagemaker-
 * manifest", a string that outlives p).  sk_pack_run refuses (SK_E_USAGE),
 * before anything is written, a run where it, or the manifest, is one of
 * the inputs (the same file, by device and inode) or lies inside an input
 * directory.  A local path only ("-" and URLs are ignored). */
SK_API int sk_pack_add_output(sk_pack *p, const char *path, const char *what, sk_error *err);

/* ------------------------------------------------- pack from and to S3 */
/* s3:// sources and an s3:// output pattern for sk_pack (docs/s3-pipelines.md).
 * The client must outlive sk_pack_run; concurrency is the number of GETs in
 * flight when fetching sources (0 = 64; give the client a little more, as
 * shard uploads share it); part_size that of multipart shard uploads (0 =
 * 8 MiB).  Set it before adding s3:// sources. */
SK_API int sk_pack_set_s3(sk_pack *p, sk_s3 *s3, int concurrency, uint64_t part_size, sk_error *err);
/* Adds every object under an s3:// prefix (ListObjectsV2, all pages); the
 * member name is the key relative to the prefix ("s3://b/data" is the
 * prefix "data/"), so samples group exactly as the same files on disk. */
SK_API int sk_pack_add_s3(sk_pack *p, const char *url, sk_error *err);
/* Adds the keys listed in list (one a line, or NUL-separated), relative to
 * base_url (an s3:// prefix, or an http(s):// directory: a web server's
 * files, read with the client's settings and no credentials) or full URLs
 * under it; sized by HEAD. */
SK_API int sk_pack_add_s3_list(sk_pack *p, FILE *list, const char *list_name, const char *base_url,
                        int nul_separated, sk_error *err);
/* Adds what a SageMaker manifest names (a local file, "-" for stdin, or an
 * s3:// object; docs/sagemaker.md).  A ManifestFile ([{"prefix": URI},
 * "key", ...]): each object prefix + key, named by its key.  An augmented
 * manifest (JSON Lines): line i is sample "%08u" of i, each "NAME-ref"
 * attribute's object a member KEY.NAME.EXT (KEY.EXT for source-ref), the
 * other attributes member KEY.json (sorted keys).  Needs sk_pack_set_s3;
 * objects are sized by HEAD and fetched as for sk_pack_add_s3. */
SK_API int sk_pack_add_sagemaker_manifest(sk_pack *p, const char *manifest, sk_error *err);

/* --------------------------------------------------- pack from a URL list */
/* `pack --from-urls LIST` (docs/urls.md): img2dataset's job in one
 * process.  Each row of a URL list (txt, csv, tsv, jsonl; local, s3:// or
 * "-") is downloaded (libcurl multi: many transfers at once, each bounded
 * in bytes and time, only http/https, no loopback, private, link-local or
 * multicast address unless allowed), checked and resized as the
 * sk_pack_options' images say (none: kept as served, a JPEG header
 * check), and written as sample KEY (.jpg, .txt caption, .json) in input
 * order whatever order the downloads end in.  Rows [k*N, (k+1)*N) make
 * shard k (N = per_shard), numbered from sk_pack_options.start; key is k
 * zero-padded to 5 digits then the row within the shard, zero-padded to
 * the digits of N-1 (img2dataset's keys).  Every row, failed ones too, is
 * a line of the shard's status file (the shard's name without .tar or
 * .tar.zst, then ".status.jsonl"), and the run's counts go to stats.json
 * beside the manifest (stats-{part}.json with parts). */

typedef struct sk_urls_stats {
    uint64_t rows;               /* rows of this run's shards, read so far */
    uint64_t success, failed_to_download, failed_to_resize;
    uint64_t bytes;              /* body bytes downloaded */
    uint64_t shards, shards_kept; /* shards written; kept from an earlier run (incremental) */
    uint64_t output_bytes;
    uint64_t in_flight;          /* downloads under way now */
    double seconds;
} sk_urls_stats;

typedef struct sk_urls_options {
    size_t struct_size;      /* sizeof, set by sk_urls_options_init; 0: this version's */
    const char *list;        /* the URL list: a path, "-" (stdin) or s3:// */
    const char *input_format; /* "txt", "csv", "tsv", "jsonl"; NULL: by the list's extension */
    const char *url_col;     /* NULL: "url" */
    const char *caption_col; /* NULL: no caption (.txt) */
    const char *save_columns; /* comma-separated columns copied into .json, or NULL */
    uint64_t per_shard;      /* rows a shard (--number-sample-per-shard; 0: 10000) */
    int concurrency;         /* downloads at once (0: 64) */
    int per_host;            /* connections to one host at once (0: 16) */
    uint64_t max_image_bytes; /* a body over it fails while it arrives (0: 32 MiB) */
    double timeout;          /* seconds one attempt may take (0: 10) */
    int retries;             /* further attempts after a 5xx, 429, timeout or reset */
    const char *user_agent_token; /* named in User-Agent, and obeyed in X-Robots-Tag */
    const char *disallowed_header_directives; /* NULL: "noai,noimageai,noindex,noimageindex"; "": none */
    int allow_private;       /* also fetch from loopback, private, link-local, multicast addresses */
    const char *allow_addresses; /* with allow_private: only those within these ranges
                                  * ("127.0.0.0/8,fd00::/8"); NULL: all of them */
    const char *compute_hash; /* "sha256" (NULL), "md5" or "none": of the bytes downloaded */
    const char *verify_hash; /* a column holding the expected hash, or NULL */
    int incremental;         /* keep shards (and status files) an earlier run finished */
    /* Called about twice a second and once at the end (may be NULL). */
    void (*progress)(void *ctx, const sk_urls_stats *st);
    void *ctx;
} sk_urls_options;
SK_API void sk_urls_options_init_sized(sk_urls_options *o, size_t size);
#define sk_urls_options_init(o) sk_urls_options_init_sized((o), sizeof *(o))


/* Runs the job: po gives the output (pattern, manifest, start, mtime,
 * compress_level, existing, part/parts, jobs: image threads, images,
 * warn, ctx; max_size, max_count, shuffle and resume are not used: shards
 * are cut by rows; incremental is uo's); s3: the client for an s3:// list
 * or output (NULL when neither).  A failed row is not an error (its
 * status says why); an error is a run that cannot go on (the list or an
 * output fails), naming it. */
SK_API int sk_pack_urls(const sk_pack_options *po, const sk_urls_options *uo, sk_s3 *s3,
                        sk_urls_stats *st, sk_error *err);

/* ---------------------------------------------------------- sample writer */
/* Samples from memory -> the shards, .idx sidecars and manifest.json that
 * sk_pack writes for the same files (byte for byte), with pack's options:
 * pattern, manifest, max_size, max_count, start, mtime, compress_level
 * (.tar.zst, seekable), resume, warn, progress and ctx; an s3:// pattern or
 * manifest uploads (sk_sample_writer_set_s3).  Shards are cut where pack
 * cuts them, published as pack publishes them (a temporary name, then the
 * index, then the rename; S3: a multipart upload), and the manifest is
 * written last, by sk_sample_writer_finish; the run's lock (pack's) is held
 * from open to finish.  pack sorts samples by key: add them in key order
 * (bytewise) to get pack's bytes; any other order is written as given.
 * resume: shards a killed run completed are kept (not rewritten, not
 * uploaded again) while the samples added again match them (key,
 * extensions, sizes, CRC32C, where the shard ends); a mismatch is
 * SK_E_MISMATCH naming the shard and the sample, and is sticky.
 * shuffle, parts and images are pack's and refused (SK_E_USAGE); jobs,
 * skip_errors, follow_symlinks and tmp_dir are ignored.  Details and an
 * example: docs/writer.md.  A writer is used by one thread at a time. */

typedef struct sk_sample_member {
    const char *ext;  /* "jpg", "seg.png": written as given, indexed lowercased */
    size_t ext_len;   /* 0: ext is NUL-terminated */
    const void *data; /* size bytes, read during the call only */
    uint64_t size;
} sk_sample_member;

typedef struct sk_sample_writer sk_sample_writer;
/* Checks the options, makes the shards' directory and takes the run's lock
 * (SK_E_USAGE naming the holder while another pack or writer has it). */
SK_API int sk_sample_writer_open(sk_sample_writer **out, const sk_pack_options *opts, sk_error *err);
/* The client for an s3:// pattern or manifest (it must outlive the
 * writer) and the part size of shard uploads (0 = 8 MiB); before the
 * first sample. */
SK_API int sk_sample_writer_set_s3(sk_sample_writer *w, sk_s3 *s3, uint64_t part_size, sk_error *err);
/* Writes one sample: members "key.ext", in extension order (lowercased,
 * as pack orders them) whatever order they come in.  key_len 0: key is
 * NUL-terminated.  The key is refused (SK_E_INPUT, naming it) unless
 * "key.ext" is a name pack takes and splits back the same way: a relative
 * path with no empty, "." or ".." component, no dot in its last component,
 * no NUL, at most 4096 bytes with the extension and 255 a component (the
 * last one with the extension); an extension is refused
 * when empty or holding '/' or NUL; so are a sample with no members, the
 * same extension twice (compared lowercased), and the key of the sample
 * just before (readers would merge the two).  A refusal writes nothing and
 * the writer goes on; a failure to write (I/O, S3) removes the shard being
 * written and is sticky: every later call returns it. */
SK_API int sk_sample_writer_add(sk_sample_writer *w, const char *key, size_t key_len,
                                const sk_sample_member *members, size_t n, sk_error *err);
/* Publishes the last shard and writes the manifest (also when no sample
 * was added: a manifest with no shards), then releases the lock; stats
 * (may be NULL) as sk_pack_run's.  SK_E_USAGE when called twice; after it,
 * sk_sample_writer_add fails with SK_E_USAGE. */
SK_API int sk_sample_writer_finish(sk_sample_writer *w, sk_pack_stats *stats, sk_error *err);
/* Frees the writer; before finish, it abandons the run: the shard being
 * written is removed, shards already published stay, no manifest is
 * written.  Accepts NULL. */
SK_API void sk_sample_writer_close(sk_sample_writer *w);

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
SK_API uint64_t sk_part_hash(const char *key, size_t key_len);
/* The part (0..parts-1) of the sample with this key: the high 32 bits of
 * sk_part_hash times parts, shifted right by 32.  parts <= 1 gives 0. */
SK_API int sk_part_of(const char *key, size_t key_len, int parts);
/* Parses --part: "I/N" (0 <= I < N), or "auto", which reads the scheduler's
 * variables: SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT (or _MIN/_MAX;
 * the array must be tasks 0..N-1), Kubernetes' JOB_COMPLETION_INDEX or AWS
 * Batch's AWS_BATCH_JOB_ARRAY_INDEX, these two with parts_hint.  parts_hint
 * is --parts N (0 when not given); when given it sets N for Slurm too, so a
 * rerun of one array task keeps the same N.  SK_E_USAGE names the variable
 * or value at fault. */
SK_API int sk_part_parse(const char *spec, int parts_hint, int *part, int *parts, sk_error *err);
/* Expands every "{part}" in a file name template to the part number, zero
 * padded to the width of parts-1 (N = 4: "0".."3"; N = 16: "00".."15").
 * SK_E_USAGE when the template has {part} but parts = 0, or (with required)
 * has none though parts > 0, since the parts' files would then collide.
 * *out is malloc'ed, the caller frees it. */
SK_API int sk_part_name(const char *tmpl, int part, int parts, int required, char **out,
                 sk_error *err);
/* The output names of a pack or shard run with --part: *pattern_out is
 * pattern with {part} expanded (required when parts > 0); *manifest_out is
 * manifest expanded, or when manifest is NULL and parts > 0 the default
 * "manifest-{part}.json" beside the shards, else NULL.  Both malloc'ed. */
SK_API int sk_part_output_names(const char *pattern, const char *manifest, int part, int parts,
                                char **pattern_out, char **manifest_out, sk_error *err);

/* ------------------------------------------------------------------ shard */
/* Existing shards -> new shards: another size or count, a seeded global
 * shuffle, filters, other compression.  Inputs are byte streams (sk_in_stream)
 * (libarchive parses them: tar, .tar.gz/.bz2/.xz/.zst, zip, 7z, cpio). */

/* A sequential byte stream an input is read from.  s3:// inputs are read
 * through sk_shard_options.s3; every other input through
 * sk_shard_options.in_open (by default a local file, or stdin for "-"),
 * which a caller may set to add a source.  read fills up to cap bytes, *got = 0 at the end. */
typedef struct sk_in_stream {
    void *ctx;
    int (*read)(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err);
    void (*close)(void *ctx);
    uint64_t size; /* bytes when known (a local file), else UINT64_MAX */
} sk_in_stream;
/* Opens url ("-" = stdin); ctx is the caller's (sk_shard_options.in_open). */
typedef int (*sk_in_open_fn)(void *ctx, sk_in_stream *s, const char *url, sk_error *err);

typedef struct sk_shard_stats {
    uint64_t inputs, inputs_done;
    uint64_t bytes_in;        /* input bytes (as stored: compressed size) read */
    uint64_t bytes_in_total;  /* of all inputs, when known (else 0) */
    uint64_t samples_in;      /* samples read */
    uint64_t samples;         /* samples written */
    uint64_t members;         /* members written */
    uint64_t dropped;         /* samples dropped by the filters */
    uint64_t skipped;         /* entries skipped: no key, directories, links */
    uint64_t shards, shards_resumed;
    uint64_t output_bytes;
    double seconds;
    uint64_t images;          /* images resized / re-encoded (sk_shard_options.images) */
    uint64_t image_skips;     /* samples skipped by --min-image-size / --max-aspect-ratio */
    uint64_t bad_images;      /* images that would not decode (skipped, kept or fatal) */
} sk_shard_stats;

typedef struct sk_shard_options {
    size_t struct_size; /* sizeof, set by sk_shard_options_init; 0: this version's */
    const char *pattern;   /* printf pattern with one integer field, or "-":
                            * one tar stream on stdout, no index or manifest */
    const char *manifest;  /* NULL: manifest.json beside the shards */
    uint64_t max_size;     /* bytes of tar per shard; 0 = 512 MiB (none for "-") */
    uint64_t max_count;    /* samples per shard; 0 = no limit */
    uint64_t num_shards;   /* exactly N shards, counts within one of even; 0 = off */
    uint64_t start;        /* number of the first shard */
    const char *const *select; size_t nselect; /* keep only these extensions */
    const char *const *drop; size_t ndrop;     /* drop these extensions */
    const char *const *rename_from;            /* extension renames, */
    const char *const *rename_to; size_t nrename; /* applied after select/drop */
    const char *keys_file; /* keep only the keys listed (one per line) */
    int shuffle;           /* uniform seeded permutation of all samples */
    uint64_t seed;
    const char *tmp_dir;   /* shuffle buckets (default $TMPDIR or /tmp) */
    uint64_t shuffle_mem;  /* memory the shuffle may hold; 0 = 256 MiB */
    int compress_level;    /* zstd level 1..22 (.tar.zst, seekable); 0 = none */
    uint64_t mtime;        /* mtime in every header (default 0) */
    int resume;            /* keep complete shards an earlier run wrote */
    int part, parts;       /* --part I/N (parts 0: off) */
    void (*warn)(void *ctx, const char *msg);
    void (*progress)(void *ctx, const sk_shard_stats *stats); /* ~2/s + at end */
    void *ctx;
    sk_s3 *s3;             /* client for s3:// inputs, outputs and manifest */
    uint64_t s3_part_size; /* multipart part size of shard uploads; 0 = 8 MiB */
    sk_in_open_fn in_open; /* opens inputs that are not s3://; NULL: local files, "-" stdin */
    void *in_open_ctx;
    const sk_image_options *images; /* resize JPEG members (NULL or inactive: untouched) */
    int jobs;              /* threads for the image work; 0 = one per core */
    int existing;          /* a manifest already there: SK_EXISTING_* (at the end) */
    /* 1: plan only (`shard --dry-run`): every input read and every shard
     * made as a run would make it, but into a sink that only counts (no
     * directory, shard, index, manifest, lock or upload), so stats and
     * on_shard tell what a run would write. */
    int dry_run;
    /* Called as each shard is complete (written, resumed or, dry_run,
     * planned), with its name ("-" for -o -), samples and bytes; NULL: not. */
    void (*on_shard)(void *ctx, const char *name, uint64_t samples, uint64_t bytes);
} sk_shard_options;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_shard_options_init_sized(sk_shard_options *o, size_t size);
#define sk_shard_options_init(o) sk_shard_options_init_sized((o), sizeof *(o))

/* Reads every input (a shard path, a brace pattern, a manifest.json, or
 * "-" for stdin), applies the filters, and writes shards, their indexes
 * and the manifest.  Deterministic: same inputs and options give the same
 * bytes.  Members keep their input order within a sample. */
SK_API int sk_reshard(const char *const *inputs, size_t ninputs, const sk_shard_options *opts,
               sk_shard_stats *stats, sk_error *err);

/* ---------------------------------------------- index building and lookup */

/* Brace patterns as WebDataset users write shard lists:
 * "train-{000000..000099}.tar" (a numeric range, zero padded to the width
 * of its first bound) and "{train,val}.tar" (alternatives); several groups
 * multiply out, left to right.  *out is a NULL-terminated array the caller
 * releases with sk_brace_free; *count (may be NULL) its length.  A string
 * without braces expands to itself. */
SK_API int sk_brace_expand(const char *pattern, char ***out, size_t *count, sk_error *err);
SK_API void sk_brace_free(char **list);

/* More sk_index_shard_info.flags: */
#define SK_INDEX_GZIP 2u   /* compressed through libarchive (gzip, bzip2, xz): */
                           /* read by streaming from stored_offset 0 */
#define SK_INDEX_NO_CRC 4u /* built header-only (--fast): every crc32c is 0, */
                           /* meaning unknown, and is not verified */

/* Build flags for sk_index_build. */
#define SK_BUILD_FAST 1u /* plain .tar only: read headers, never data; no CRCs */

typedef struct sk_build_opts {
    size_t struct_size; /* sizeof, set by sk_build_opts_init; 0: this version's */
    unsigned flags;         /* SK_BUILD_* */
    const char *index_path; /* NULL: "<shard>.idx" */
    const char *dali_path;  /* NULL: none; else write DALI's wds2idx v1.2 here */
    /* Called with a warning (non-adjacent members of one key, skipped
     * names); NULL prints nothing. */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
    /* The client for an s3:// shard (read with one streaming GET; --fast
     * does not apply there); index_path and dali_path stay local files. */
    sk_s3 *s3;
} sk_build_opts;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_build_opts_init_sized(sk_build_opts *o, size_t size);
#define sk_build_opts_init(o) sk_build_opts_init_sized((o), sizeof *(o))

typedef struct sk_build_stats {
    uint64_t samples, members, bytes; /* bytes: the shard file */
    uint32_t crc32c, flags;           /* as written into the index header */
    uint64_t dirs, links, meta, unkeyed; /* entries skipped, by kind */
    uint64_t split_keys; /* keys that occur as more than one sample */
    int kept; /* sk_index_dataset --resume: the index object already matched */
} sk_build_stats;

/* Indexes an existing shard (.tar, .tar.gz, .tar.zst, told apart by their
 * magic bytes) and writes its sidecar.  A truncated shard is indexed up to
 * its last complete member, the index is written, and SK_E_CORRUPT names
 * the offset.  s3:// is not supported yet (SK_E_USAGE). */
SK_API int sk_index_build(const char *shard, const sk_build_opts *opts, sk_build_stats *stats,
                   sk_error *err);

/* How lookups read shard bytes: pread from a local file (s3:// objects are
 * read with ranged GETs through the dataset's client).  read_at fills buf
 * with n bytes at off, *got < n only at the end. */
typedef struct sk_range_reader {
    void *ctx;
    int (*read_at)(void *ctx, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err);
    uint64_t size;     /* bytes of the object */
    void (*close)(void *ctx);
} sk_range_reader;
/* Opens a local file as a range reader (pread). */
SK_API int sk_range_reader_file(sk_range_reader *rr, const char *path, sk_error *err);
/* Opens a shard url that is not s3:// as a range reader; ctx is the
 * caller's.  A dataset uses sk_range_reader_file unless told otherwise. */
typedef int (*sk_range_open_fn)(void *ctx, sk_range_reader *rr, const char *url, sk_error *err);

/* A dataset: a manifest, a directory (its manifest.json, or every
 * *.tar / *.tar.gz / *.tar.zst in it with a sidecar), or one shard. */
typedef struct sk_dataset sk_dataset;
/* flags: SK_INDEX_TRUST_BODY opens every index in O(1); without it each
 * index's body checksum is verified once, when first used. */
SK_API int sk_dataset_open(sk_dataset **out, const char *path, unsigned flags, sk_error *err);
/* The same, where path may also be s3:// (a manifest, a shard, or a prefix
 * ending in '/', meaning its manifest.json): an index object is fetched
 * whole once per shard, when first used; a member is then one ranged GET
 * (of a plain shard listed by a manifest: its header and data, the header
 * proving the index belongs to the object; otherwise, on the shard's first
 * read, a HEAD and a 512-byte GET prove it).  s3 stays the caller's; free it after the dataset. */
SK_API int sk_dataset_open_s3(sk_dataset **out, const char *path, sk_s3 *s3, unsigned flags,
                       sk_error *err);
SK_API void sk_dataset_close(sk_dataset *ds);
/* Reads the dataset's local (not s3://) shards through open instead of
 * pread, e.g. to add a source; call before the first read. */
SK_API void sk_dataset_set_range_open(sk_dataset *ds, sk_range_open_fn open, void *ctx);
/* Opens every index now (so the count is known); returns the sample count. */
SK_API int sk_dataset_samples(sk_dataset *ds, uint64_t *count, sk_error *err);

typedef struct sk_hit {
    size_t shard;            /* position of the shard in the dataset */
    const char *shard_path;  /* valid while the dataset is open */
    uint64_t global_ordinal; /* across the dataset */
    sk_sample_ref sample;    /* within the shard; sample.key valid while open */
} sk_hit;
/* The sample with this key: with a manifest's key ranges (sorted
 * datasets) only the shard whose range holds it, O(log shards + log n);
 * otherwise shards searched in order, each O(log n).  SK_E_MISMATCH when
 * the shard's index does not match its range in the manifest. */
SK_API int sk_dataset_find(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out, sk_error *err);
/* The sample at a global ordinal (O(log shards) with a manifest). */
SK_API int sk_dataset_at(sk_dataset *ds, uint64_t ordinal, sk_hit *out, sk_error *err);
/* Member i (0 .. member_count-1) of a sample. */
SK_API int sk_dataset_member(sk_dataset *ds, const sk_hit *h, uint32_t i, sk_member_ref *out,
                      sk_error *err);
/* Reads member i's data into buf (cap >= its size): one pread for a plain
 * tar; verified against its CRC32C (SK_E_MISMATCH names member and shard).
 * The first read from a shard checks that the index belongs to it (size
 * and first-block CRC32C), else SK_E_MISMATCH. */
SK_API int sk_dataset_read(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t cap,
                    sk_error *err);
/* Reads every member of a sample at once (one call for bindings such as
 * Python's, where each call costs): members[0 .. member_count-1] filled as
 * by sk_dataset_member, their data back to back in buf in that order,
 * each checked as by sk_dataset_read.  With cap >= sample.span, a plain
 * shard's sample is one read of its span (headers included), compacted in
 * buf.  SK_E_USAGE when max_members or cap is too small for the members. */
SK_API int sk_dataset_read_sample(sk_dataset *ds, const sk_hit *h, void *buf, size_t cap,
                                  sk_member_ref *members, size_t max_members, sk_error *err);
/* Looks a sample up and reads it in one call (for bindings, where each
 * call costs, and for threads: like every lookup and read above, it may
 * run on one dataset from several threads at once; a dataset whose
 * indexes and shards are open takes no lock).  key != NULL: the sample
 * with this key (key_len bytes, or NUL-terminated when key_len is 0, as
 * sk_sample_writer_add takes it), as sk_dataset_find; key == NULL: the
 * sample at a global ordinal, as sk_dataset_at.  buf (aligned as malloc
 * aligns) receives, in order: the member records (member_count
 * sk_member_refs, as sk_dataset_member gives them, but each ext pointing
 * at its copy in buf); the key and a NUL; each extension and a NUL; zeros
 * up to a multiple of 8 bytes; the members' data back to back, each
 * checked against its CRC32C (SK_E_MISMATCH).  *out (struct_size as
 * sk_get_result_init sets it) gets hit, need and pointers into buf.  need
 * is set whenever the sample was found: the bytes of buf that serve it
 * best (a plain shard's sample is then one read of its span; with less,
 * but room for the records, names and data, it is read member by
 * member).  Below that minimum: SK_E_USAGE, nothing read from the shard
 * and nothing written past cap; grow buf to need and call again.  An
 * index record pointing past the end of its plain shard is SK_E_CORRUPT,
 * and need stays 0. */
typedef struct sk_get_result {
    size_t struct_size;           /* sizeof, set by sk_get_result_init; 0: this version's */
    sk_hit hit;                   /* where the sample is */
    size_t need;                  /* bytes of buf for this sample (see above) */
    const sk_member_ref *members; /* in buf: hit.sample.member_count records */
    const char *key;              /* in buf: hit.sample.key_len bytes and a NUL */
    const unsigned char *data;    /* in buf: the members' data, in order */
} sk_get_result;
SK_API void sk_get_result_init_sized(sk_get_result *f, size_t size);
#define sk_get_result_init(f) sk_get_result_init_sized((f), sizeof *(f))
SK_API int sk_dataset_get(sk_dataset *ds, const char *key, size_t key_len, uint64_t ordinal,
                            void *buf, size_t cap, sk_get_result *out, sk_error *err);
/* The samples at ordinals[0 .. n-1] in one call (a DataLoader's batch, for
 * bindings where each call costs): each as sk_dataset_get gives it, into
 * buf one after another (each starting at a multiple of 8 bytes), and
 * into out[i] (an array of n, out[0].struct_size set as for
 * sk_dataset_get).  *done: the samples complete.  Stops at the first that
 * fails and returns its error; SK_E_USAGE with out[*done].need when the
 * rest of buf is too small for it (call again for the rest with buf
 * emptied, or, when *done is 0, with a larger one). */
SK_API int sk_dataset_get_many(sk_dataset *ds, const uint64_t *ordinals, size_t n, void *buf,
                               size_t cap, sk_get_result *out, size_t *done, sk_error *err);
/* Writes the sample as a one-sample tar (members named key.ext, verified
 * data, end blocks) to fd. */
SK_API int sk_dataset_write_tar(sk_dataset *ds, const sk_hit *h, int fd, const char *fd_name,
                         sk_error *err);

/* Joins manifests of parallel runs into one with continuous ordinals;
 * shard and index URLs are rewritten relative to out_path's directory.
 * Duplicate shard URLs, duplicate keys across shards (checked through
 * their indexes), and missing or repeated parts are errors naming them. */
SK_API int sk_manifest_merge(const char *const *paths, size_t n, const char *out_path, sk_error *err);
/* The same, where any manifest (and the indexes it names) and out_path
 * may be s3:// objects, read and written through s3. */
SK_API int sk_manifest_merge_s3(const char *const *paths, size_t n, const char *out_path, sk_s3 *s3,
                                sk_error *err);

/* Writes wids' shard-index JSON (wids-shard-index-v1) for a manifest's
 * shards, local ones relative to out_path's directory, URLs as they are
 * (wids resolves the one and keeps the other); SK_E_INPUT for a name that
 * is not UTF-8 (JSON cannot hold it). */
SK_API int sk_manifest_write_wids(const sk_manifest *m, const char *manifest_path,
                           const char *out_path, sk_error *err);

/* ------------------------------------------------------------ index many */
/* `shardkit index` as one call: every shard (brace patterns expanded) gets
 * its sidecar index, on several threads, then the dataset gets its
 * manifest (and wids' index).  What a build reports is handed on in shard
 * order (warn, done), so output never depends on jobs. */
typedef struct sk_index_dataset_opts {
    size_t struct_size;   /* sizeof, set by sk_index_dataset_opts_init; 0: this version's */
    unsigned flags;       /* SK_BUILD_* */
    int dali;             /* also SHARD.dali.idx (DALI's wds2idx v1.2) */
    int jobs;             /* shards built at once; 0: one per core */
    const char *manifest; /* NULL: manifest.json in the shards' common directory */
    int no_manifest;      /* the indexes only */
    const char *wids;     /* NULL: none; "": wids.json beside the manifest; else its path
                             (local; local and http(s):// shards, not s3://) */
    void (*warn)(void *ctx, const char *msg);
    /* each shard's result, in order: stats, or err when it failed */
    void (*done)(void *ctx, const char *shard, const sk_build_stats *stats, const sk_error *err);
    void *ctx;
    /* s3:// shards and prefixes ("s3://b/p/": the shard objects listed
     * directly under it) are read in place with one streaming GET each;
     * their SHARD.idx (and SHARD.dali.idx) go up beside them and the
     * manifest to the shards' common prefix (or -o).  http(s):// shards
     * are read in place too, but a web server takes no writes: their
     * indexes go into the manifest's directory, which must be local */
    sk_s3 *s3;
    /* s3:// shards only: keep a shard whose index object is sound and
     * records the object's size and CRC32C (nothing is uploaded then) */
    int resume;
    /* also a SageMaker ManifestFile of the shards, written there after the
     * manifest (sk_sagemaker_manifest_write with sagemaker_opts; its s3,
     * warn and ctx default to these) */
    const char *sagemaker;
    const sk_sagemaker_opts *sagemaker_opts;
    /* A manifest already at the manifest path that lists a shard this run
     * did not index is refused (SK_E_USAGE naming it) unless overwrite. */
    int overwrite;
    /* after each shard's done (NULL: never): shards finished out of all,
     * and the samples and shard bytes of those indexed */
    void (*progress)(void *ctx, uint64_t shards_done, uint64_t shards_total, uint64_t samples,
                     uint64_t bytes);
} sk_index_dataset_opts;
SK_API void sk_index_dataset_opts_init_sized(sk_index_dataset_opts *o, size_t size);
#define sk_index_dataset_opts_init(o) sk_index_dataset_opts_init_sized((o), sizeof *(o))
typedef struct sk_index_dataset_stats {
    uint64_t shards, failed, samples, members;
} sk_index_dataset_stats;
/* SK_OK when every shard was indexed and the manifest written; a failed
 * shard (reported through done) fails the call, and no manifest is
 * written then. */
SK_API int sk_index_dataset(const char *const *patterns, size_t n, const sk_index_dataset_opts *o,
                            sk_index_dataset_stats *stats, sk_error *err);

/* ------------------------------------------------------------ upload plan */
/* What `shardkit upload` sends where: local files and directory trees
 * (walked in sorted order, skipping shardkit's temporary and lock files),
 * or one s3:// object or prefix read with src_s3, as items in upload order:
 * data, then *.idx, then manifest.json (phase 0, 1, 2), so a manifest is
 * never published before the objects it names.  Keys are prefix + the
 * path under a source directory (dir_dst), or prefix itself for one file. */
typedef struct sk_upload_item {
    const char *src; /* a local path, or the source key of an s3:// source */
    const char *key;
    uint64_t size;
    int phase;
    const sk_s3_object *obj; /* s3:// sources: the source as listed or HEADed (size, ETag,
                                CRC32C where known), valid during the call; else NULL */
} sk_upload_item;
/* Streams the plan: calls each for every item in upload order (phase 0,
 * then 1, then 2), walking the sources once per phase so that memory stays
 * bounded by one directory's names or one S3 listing page however many
 * objects there are (a later phase's walk is left out when the first walk
 * met nothing of it).  src_bucket is the s3:// source's bucket, or NULL.
 * The sources are checked (they exist; one s3:// source at most) before
 * the first call.  A non-zero return from each (which sets err) stops the
 * walk and is returned. */
typedef int (*sk_upload_each_fn)(void *ud, const sk_upload_item *it, const char *src_bucket, sk_error *err);
SK_API int sk_upload_plan_each(const char *const *sources, size_t n, sk_s3 *src_s3, const char *prefix,
                               int dir_dst, sk_upload_each_fn each, void *ud, sk_error *err);
/* The same plan collected in memory (one item per object). */
typedef struct sk_upload_plan sk_upload_plan;
SK_API int sk_upload_plan_make(sk_upload_plan **out, const char *const *sources, size_t n, sk_s3 *src_s3,
                               const char *prefix, int dir_dst, sk_error *err);
SK_API size_t sk_upload_plan_count(const sk_upload_plan *p);
SK_API const sk_upload_item *sk_upload_plan_item(const sk_upload_plan *p, size_t i);
/* The bucket of an s3:// source, or NULL. */
SK_API const char *sk_upload_plan_source_bucket(const sk_upload_plan *p);
SK_API void sk_upload_plan_free(sk_upload_plan *p);

/* ------------------------------------------------------------ upload sync */
/* `upload --sync`: a rerun sends only what the destination does not hold
 * yet.  sk_upload_sync_open makes the walk over s3://bucket/prefix (sizes,
 * ETags), one listing page held at a time, merged with the keys asked
 * about in key order (a key out of order starts a page just before it);
 * sk_upload_sync_same says whether key already holds the size bytes of the
 * local file path: 1 same (its size, and its ETag is the MD5 of the bytes,
 * or of the parts' MD5s at part_size, upload's rule); 0 different or not
 * known (an opaque ETag, another part size): send it; a negative SK_E_*
 * when path cannot be read (err says why). */
typedef struct sk_upload_sync sk_upload_sync;
SK_API int sk_upload_sync_open(sk_upload_sync **out, sk_s3 *s3, const char *bucket, const char *prefix,
                               uint64_t part_size, uint64_t multipart_threshold, sk_error *err);
SK_API int sk_upload_sync_same(sk_upload_sync *s, const char *path, const char *key, uint64_t size,
                               sk_error *err);
SK_API void sk_upload_sync_free(sk_upload_sync *s);

/* ------------------------------------------------ dataset: shards, heads */
/* What stats and serve need of a dataset beyond one sample: its shards
 * (each index opened, so every count is the index's own) and the first
 * bytes of a member (a JPEG's header) without reading the rest. */

typedef struct sk_dataset_shard_info {
    const char *path;       /* the shard's URL or path; valid while the dataset is open */
    const char *index_path; /* its index */
    uint64_t bytes;         /* the shard file's size, as its index records it */
    uint64_t samples, members;
    uint64_t first_ordinal; /* global ordinal of its first sample */
    uint32_t flags;         /* SK_INDEX_ZSTD, ... as the index header has them */
} sk_dataset_shard_info;
/* Shards of the dataset, in dataset order (nothing is opened). */
SK_API size_t sk_dataset_shard_count(const sk_dataset *ds);
/* Shard i (0 .. count-1); opens every index the first time (the first
 * ordinals need all the counts). */
SK_API int sk_dataset_shard(sk_dataset *ds, size_t i, sk_dataset_shard_info *out,
                                 sk_error *err);
/* The first n bytes of member i into buf (*got = n, or the member's size
 * when smaller).  A whole member is checked against its CRC32C as by
 * sk_dataset_read; a part cannot be, and is only bounds-checked.  A plain
 * shard: one read of n bytes; a compressed one decompresses from the
 * sample's frame to the member's n-th byte. */
SK_API int sk_dataset_read_head(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t n,
                                size_t *got, sk_error *err);

/* ------------------------------------------------ dataset: the disk cache */

/* Reads the dataset's remote (s3://, http(s)://) shards and indexes opened
 * from now on through the on-disk cache in dir (kept; it must outlive the
 * dataset), at most bytes (0: no bound), least recently used out first.
 * Reads at an offset are kept by 1 MiB block, a whole index as one file,
 * each found by the object's ETag (one HEAD per object when it is opened),
 * so a later open serves them without a GET.  Call before the first read. */
SK_API void sk_dataset_set_cache(sk_dataset *ds, const char *dir, uint64_t bytes);

/* ------------------------------------------ dataset: remote read windows */
/* A small read of a remote (s3://, http(s)://) shard at an offset (one
 * member, its tar header) fetches the aligned window of `window` bytes
 * holding it, one ranged GET, and keeps it in memory, so the members
 * beside it (the sample's other files, the next samples) are served with
 * no request.  All the dataset's windows share `memory` bytes at most
 * (least recently used out first); a shard read at random stops fetching
 * whole windows after a few that served nothing more.  The defaults
 * (SK_READ_WINDOW, SK_READ_WINDOW_MEMORY) are on from sk_dataset_open;
 * window 0 turns them off.  For the shards opened from now on: call
 * before the first read.  SK_E_USAGE: window not 4 KiB .. 64 MiB, or
 * memory not 2 .. 65,536 windows. */
#define SK_READ_WINDOW (256u << 10)
#define SK_READ_WINDOW_MEMORY (32u << 20)
SK_API int sk_dataset_set_read_window(sk_dataset *ds, size_t window, uint64_t memory,
                                      sk_error *err);

/* ----------------------------------------------------------------- reader */
/* Sequential iteration over a shard list, the way a training job reads:
 * each shard streams through a bounded ring buffer filled by a background
 * thread (the next `prefetch` shards are read ahead), its tar headers are
 * walked and members grouped into samples by the WebDataset rule; a sample
 * hands out pointers into that buffer (one copy: read()/decompression
 * straight into it).  Shards are split by node and worker, shuffled per
 * epoch, samples go through an optional shuffle buffer, and a small state
 * saves and restores the position.  .tar and .tar.zst; docs/reader.md. */

typedef struct sk_reader sk_reader;

typedef struct sk_reader_options {
    size_t struct_size; /* sizeof, set by sk_reader_options_init; 0: this version's */
    int rank, world_size;    /* node split; -1: $RANK / $WORLD_SIZE, else 0 / 1 */
    int worker, num_workers; /* worker split; -1: $WORKER / $NUM_WORKERS, else 0 / 1 */
    int shuffle_shards;      /* 1: the shard list is shuffled per (seed, epoch) */
    size_t shuffle_buffer;   /* samples held for the sample shuffle; 0 or 1: none */
    uint64_t seed;
    uint64_t epoch;          /* the first epoch (sk_reader_start_epoch for others) */
    int prefetch;            /* shards read ahead in the background (default 2) */
    size_t buffer_size;      /* ring bytes per shard being read (default 4 MiB) */
    size_t max_sample;       /* largest sample span accepted (default 1 GiB); a
                                sample over buffer_size grows its shard's ring */
    int skip_errors;         /* a corrupt shard: report it through warn and go on
                                with the next shard instead of failing */
    const char *cache_dir;   /* remote (s3://) shards are kept here, so later
                                epochs read local disk; NULL: no cache (the
                                global order: a private one in $TMPDIR,
                                removed at close; docs/reader.md) */
    uint64_t cache_size;     /* bytes the cache may hold; 0: no bound (the
                                private cache: two shuffle windows of shards) */
    void (*warn)(void *ctx, const char *msg); /* NULL: print to stderr */
    void *warn_ctx;
    const char *s3_endpoint; /* for s3:// shards; NULL: as sk_s3_config says
                                (AWS_ENDPOINT_URL, else AWS) */
    sk_s3 *s3;               /* the caller's client for s3:// shards (all of its
                                settings); NULL: one made from s3_endpoint */
    int recordio;            /* 1: every URL holds RecordIO records, one shard
                                each (a SageMaker Pipe channel with
                                RecordWrapperType=RecordIO): unwrapped as they
                                stream, read from the start, indexes unused */
    int read_inline;         /* 1: local uncompressed shards are read on the
                                calling thread when a sample needs their bytes,
                                in small reads, not by a thread per shard
                                (prefetch then only opens them): no handoff,
                                and the bytes are still in this core's cache
                                when they are used.  For a consumer slower
                                than the disk (`shardkit cat` into a pipe).
                                s3:// and compressed shards keep their thread */
    /* The global order (docs/reader.md): one sequence of the epoch's
     * samples, a function of (shards, seed, epoch) only, each slot taking
     * its share by position, read through the shards' indexes.  Plain
     * .tar and seekable .tar.zst shards with indexes; the stream mode
     * above stays for the rest. */
    int global_order;        /* 1: this mode (shuffle_buffer must be 0 or 1) */
    size_t shuffle_window;   /* shards whose samples are shuffled together
                                (default 8); shuffle_shards 0: list order */
    int batch_size;          /* samples a DataLoader worker hands at once
                                (default 1): the split keeps a rank's
                                consumption a prefix of the sequence */
    size_t read_ahead;       /* bytes a slot reads ahead (default 8 MiB) */
    uint64_t max_gap;        /* bytes between two samples of a shard read
                                through, joining two reads into one
                                (default 64 KiB; 1 MiB for remote shards) */
    /* Mixing (global order): each url of sk_reader_open is a stream, these
     * arrays have one entry per url (NULL, or 0 in an entry: unset), as
     * MosaicML's Streams: a relative proportion, or an absolute repeat
     * (a multiple of the stream's size) or choose (samples); one kind for
     * all streams.  A stream taking fewer samples than it has gets a new
     * uniform subset each epoch.  sk_reader_sample.dataset names it. */
    const double *proportion;
    const double *repeat;
    const uint64_t *choose;
    uint64_t samples_per_epoch; /* the epoch's length; 0: the streams' sizes
                                   (proportion) or their sum (absolute) */
} sk_reader_options;
/* Defaults: every field as documented above, struct_size included. */
SK_API void sk_reader_options_init_sized(sk_reader_options *o, size_t size);
#define sk_reader_options_init(o) sk_reader_options_init_sized((o), sizeof *(o))

typedef struct sk_reader_member {
    const char *ext; /* lowercase WebDataset extension, NUL-terminated */
    size_t ext_len;
    const unsigned char *data; /* valid until the next sk_reader_next */
    uint64_t size;
} sk_reader_member;

typedef struct sk_reader_sample {
    const char *key; /* NUL-terminated; key_len bytes */
    size_t key_len;
    const char *shard_url; /* as the shard list names it */
    size_t shard;          /* the shard's position in the whole list */
    uint64_t ordinal;      /* the sample's position within its shard */
    uint64_t offset;       /* tar-stream offset of its first header */
    size_t nmembers;
    const sk_reader_member *members;
    uint64_t position; /* global order: its position in the epoch's sequence */
    size_t dataset;    /* which of the urls given to sk_reader_open it came from */
} sk_reader_sample;

/* Opens a shard list.  Each url is a shard (.tar, .tar.zst), a brace
 * pattern of shards, a manifest (*.json), or a directory (its
 * manifest.json, else every *.tar / *.tar.zst in it, sorted).  Starts
 * epoch opts->epoch; opts NULL means the defaults. */
SK_API int sk_reader_open(sk_reader **out, const char *const *urls, size_t n,
                   const sk_reader_options *opts, sk_error *err);
SK_API void sk_reader_close(sk_reader *r);
/* The next sample of the epoch in *out (valid until the next call), or
 * *out = NULL at the end of the epoch.  A corrupt shard fails with
 * SK_E_CORRUPT naming the shard and offset (with skip_errors: a warning,
 * and the next shard); a failure is sticky. */
SK_API int sk_reader_next(sk_reader *r, const sk_reader_sample **out, sk_error *err);
/* Starts another epoch from its beginning (new shard and sample shuffle). */
SK_API int sk_reader_start_epoch(sk_reader *r, uint64_t epoch, sk_error *err);
/* Shards in the whole list, and in this reader's slot for this epoch.  A
 * slot (rank * num_workers + worker) gets shards i with i mod slots ==
 * slot after the epoch's shard shuffle; with fewer shards than slots the
 * last slots get none and yield nothing. */
SK_API size_t sk_reader_shard_count(const sk_reader *r);
SK_API size_t sk_reader_slot_shards(const sk_reader *r);
SK_API const char *sk_reader_shard_url(const sk_reader *r, size_t i);

/* Where a reader is, to continue after a restart.  Plain old data: save
 * its bytes anywhere. */
typedef struct sk_reader_state {
    uint32_t magic;       /* SK_READER_STATE_MAGIC */
    uint32_t version;     /* 1 */
    uint32_t slot, slots; /* checked on restore */
    uint64_t shards;      /* size of the shard list, checked on restore */
    uint64_t seed, epoch;
    uint64_t shuffle_shards, shuffle_buffer;
    uint64_t yielded;   /* samples returned in this epoch */
    uint64_t shard_pos; /* position in the slot's shard order of the stream */
    uint64_t ordinal;   /* samples of that shard already pulled from it */
} sk_reader_state;
#define SK_READER_STATE_MAGIC 0x534b5253u /* "SRKS" */
SK_API void sk_reader_get_state(const sk_reader *r, sk_reader_state *st);
/* Continues from a saved state: the stream reopens at (shard_pos, ordinal)
 * through the shard's index (a seek; without an index, headers are read up
 * to it); with a shuffle buffer the buffer's history is replayed from
 * sample counts alone (manifest or indexes) and only the samples still in
 * the buffer are read again, one ranged read each.  SK_E_MISMATCH when the
 * state belongs to another split, seed or shard list. */
SK_API int sk_reader_restore(sk_reader *r, const sk_reader_state *st, sk_error *err);

typedef struct sk_reader_stats {
    uint64_t samples, bytes;  /* returned, member bytes */
    uint64_t shards_done, shards_skipped;
    uint64_t cache_hits, cache_misses; /* remote shards, with cache_dir */
    uint64_t ring_grows;      /* samples that did not fit buffer_size */
} sk_reader_stats;
SK_API void sk_reader_get_stats(const sk_reader *r, sk_reader_stats *st);

/* Writes a sample as tar members "key.ext" with the headers pack writes
 * (mtime 0, mode 0644, uid/gid 0) to fd; fd_name is for messages. */
SK_API int sk_reader_write_tar(const sk_reader_sample *s, int fd, const char *fd_name, sk_error *err);
/* Writes the two end blocks of a tar stream. */
SK_API int sk_reader_write_tar_end(int fd, const char *fd_name, sk_error *err);
/* The same stream in large writes, for many samples (a pipe, `shardkit
 * cat`): members collect in a 1 MiB buffer written at once (a member over
 * half of it goes out unbuffered); when fd is a pipe it is asked to hold
 * 1 MiB.  Bytes as sk_reader_write_tar and _end write them.  finish writes
 * what is buffered and the end blocks; free releases without writing. */
typedef struct sk_reader_tar_out sk_reader_tar_out;
SK_API int sk_reader_tar_out_open(sk_reader_tar_out **out, int fd, const char *fd_name, sk_error *err);
SK_API int sk_reader_tar_out_add(sk_reader_tar_out *t, const sk_reader_sample *s, sk_error *err);
SK_API int sk_reader_tar_out_finish(sk_reader_tar_out *t, sk_error *err);
SK_API void sk_reader_tar_out_free(sk_reader_tar_out *t);
/* Lets t write samples of r (the ones sk_reader_next returns, without a
 * shuffle buffer) from r's own ring buffer instead of copying them: a
 * member stored with the very header t writes (any shard `shardkit pack`
 * wrote) goes out as its stored bytes, so the stream is the same, one copy
 * fewer.  r then keeps those bytes until t writes them (at about 1 MiB,
 * before r moves to another shard or closes, and at finish).  A write
 * failing while r moves on is reported by t's next call.  free unbinds
 * (dropping what t held); closing r first writes what t held.  r NULL
 * unbinds. */
SK_API void sk_reader_tar_out_bind(sk_reader_tar_out *t, sk_reader *r);

/* ------------------------------------------------- reader: global order */
/* Where a reader in the global order (sk_reader_options.global_order) is
 * in its epoch, as a count of the epoch's global sequence: the positions
 * 0 .. consumed-1 were consumed.  It names no rank or worker, so it
 * restores into a reader with any world size and workers: the positions
 * left are split among the new slots as a whole epoch's would be, and
 * across the runs every sample of the epoch is read exactly once, when
 * the saved count was a prefix (docs/reader.md: the resume contract;
 * layout in docs/format.md).  Plain old data: save its bytes anywhere. */
typedef struct sk_reader_position {
    uint32_t magic;       /* SK_READER_POSITION_MAGIC */
    uint32_t version;     /* 1 */
    uint64_t epoch;
    uint64_t consumed;    /* positions of the epoch's sequence consumed */
    uint64_t samples;     /* the epoch's length, checked on seek */
    uint64_t fingerprint; /* shard names, sample counts, seed, window,
                             shuffle: checked on seek */
} sk_reader_position;
#define SK_READER_POSITION_MAGIC 0x504b5253u /* "SRKP" */
/* The position after every rank consumed as many samples as this slot's
 * rank has, judged from this slot alone: its last sample handed out and
 * everything the rank's DataLoader hands before it (batch_size) counts as
 * consumed.  SK_E_USAGE without global_order. */
SK_API int sk_reader_get_position(const sk_reader *r, sk_reader_position *p, sk_error *err);
/* The position after every rank consumed rank_samples samples of this
 * epoch's run (from the start, or from the position last sought): what a
 * job's main process saves after a step (steps x batch size). */
SK_API int sk_reader_position_at(const sk_reader *r, uint64_t rank_samples,
                                 sk_reader_position *p, sk_error *err);
/* Continues from p: its epoch, the positions from p->consumed on, split
 * among this reader's slots.  SK_E_MISMATCH when p belongs to other
 * shards, seed, window or shuffle. */
SK_API int sk_reader_seek(sk_reader *r, const sk_reader_position *p, sk_error *err);
/* Samples in the epoch's sequence, and those this slot has still to hand
 * out of it (exact: a DataLoader's len()). */
SK_API uint64_t sk_reader_epoch_samples(const sk_reader *r);
SK_API uint64_t sk_reader_slot_left(const sk_reader *r);
/* Ranged reads the global order made (coalesced neighbours count once). */
SK_API uint64_t sk_reader_global_reads(const sk_reader *r);

/* ----------------------------------------------------------------- verify */
/* Proves shards sound: tar structure (header checksums, sizes,
 * end-of-archive, trailing garbage), truncation, index agreement, manifest
 * agreement, sample adjacency, duplicate keys, required extensions, empty
 * members, and (SK_VERIFY_JPEG) JPEG decodability.  Every problem goes to
 * the report callback with the shard, offset and key. */

#define SK_VERIFY_DEEP 1u /* read all data: member CRC32Cs, shard CRC32C */
#define SK_VERIFY_JPEG 2u /* decode every .jpg/.jpeg member with libjpeg-turbo */

typedef struct sk_verify_problem {
    int warning;        /* 1: a warning (empty member), 0: an error */
    const char *kind;   /* "tar", "truncated", "index", "manifest", "split",
                         * "duplicate", "missing", "empty", "jpeg", "crc" */
    const char *shard;  /* the shard (or manifest) it was found in */
    uint64_t offset;    /* tar position (decompressed stream for .tar.zst) */
    const char *key;    /* the sample's key, or NULL */
    const char *msg;
} sk_verify_problem;

/* What sk_verify has done so far, for a progress line (cmd/verify.c). */
typedef struct sk_verify_progress {
    uint64_t shards_done, shards_total; /* total 0: not known yet (targets still to list) */
    uint64_t samples;                   /* samples walked, the current shard's included */
    uint64_t bytes_done, bytes_total;   /* shard bytes walked; total 0: not known */
    uint64_t jpegs_done;                /* JPEG members decoded (SK_VERIFY_JPEG) */
    double seconds;
} sk_verify_progress;

typedef struct sk_verify_options {
    size_t struct_size; /* sizeof, set by sk_verify_options_init; 0: this version's */
    unsigned flags;                /* SK_VERIFY_* */
    const char *const *require;    /* extensions every sample must have */
    size_t nrequire;
    int jobs;                      /* JPEG decoding threads; 0 = cores */
    void (*report)(void *ctx, const sk_verify_problem *p);
    void *ctx;
    sk_s3 *s3;                     /* client for s3:// targets */
    /* With image_size set: image members (image_ext) must have a size the
     * --image-size rule gives ("image" problems); implies SK_VERIFY_JPEG. */
    const sk_image_options *images;
    /* Memory for the duplicate-key check across the run (0: 64 MiB): past
     * it, sorted runs of key records go to unlinked temp files in $TMPDIR
     * and are merged, so a dataset of any size verifies in bounded memory. */
    uint64_t key_mem;
    /* About twice a second and once at the end (NULL: never); calls never
     * overlap, though they may come from the JPEG threads. */
    void (*progress)(void *ctx, const sk_verify_progress *p);
} sk_verify_options;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_verify_options_init_sized(sk_verify_options *o, size_t size);
#define sk_verify_options_init(o) sk_verify_options_init_sized((o), sizeof *(o))

typedef struct sk_verify_stats {
    uint64_t shards, samples, members, bytes, jpegs;
    uint64_t errors, warnings;
} sk_verify_stats;

/* Verifies each target (a shard, a brace pattern, or a manifest.json and
 * all its shards; local or s3://, an object always read whole so its
 * CRC32C is checked).  Returns SK_OK when the check ran (stats->errors
 * says whether problems were found), or an error for a usage, I/O or
 * network failure (unreadable target, no S3 client for s3://). */
SK_API int sk_verify(const char *const *targets, size_t n, const sk_verify_options *opts,
              sk_verify_stats *stats, sk_error *err);

/* ------------------------------------------------------------------ stats */
/* What a dataset holds (`shardkit stats`, docs/stats.md): counts and bytes
 * per shard and in all, shard balance, extensions, member sizes, missing
 * extensions, duplicate keys, and on request JPEG sizes from their headers
 * and the keys of .json members, in one pass over the indexes through the
 * dataset API and bounded memory.  The result is a JSON document (schema
 * in docs/stats.md), printed as a table, written as JSON or as an HTML
 * page with inline SVG plots. */

#define SK_STATS_IMAGES 1u    /* JPEG width and height from the first bytes of each */
#define SK_STATS_JSON_KEYS 2u /* the keys of .json members and their types */

typedef struct sk_stats_options {
    size_t struct_size; /* sizeof, set by sk_stats_options_init; 0: this version's */
    unsigned flags;        /* SK_STATS_* */
    const char *image_ext; /* comma-separated image extensions (NULL: "jpg,jpeg") */
    uint64_t key_mem;      /* memory of the duplicate-key sort when keys do not
                              rise (0: 64 MiB; past it sorted runs go to
                              unlinked temp files) */
} sk_stats_options;
SK_API void sk_stats_options_init_sized(sk_stats_options *o, size_t size);
#define sk_stats_options_init(o) sk_stats_options_init_sized((o), sizeof *(o))

typedef struct sk_stats sk_stats;
/* Computes the statistics of an open dataset; name is what the document
 * calls it (the DATASET typed). */
SK_API int sk_stats_run(sk_dataset *ds, const char *name, const sk_stats_options *o,
                        sk_stats **out, sk_error *err);
/* The document as JSON text (malloc'd; NULL when out of memory). */
SK_API char *sk_stats_json(const sk_stats *st);
/* A table with small text histograms, for a terminal. */
SK_API int sk_stats_print(const sk_stats *st, FILE *f, sk_error *err);
/* A self-contained HTML page (inline SVG, no script, nothing fetched),
 * written to path through a temporary name and a rename. */
SK_API int sk_stats_write_html(const sk_stats *st, const char *path, sk_error *err);
SK_API void sk_stats_free(sk_stats *st);

/* How fast this machine reads a dataset (resolved as the reader resolves
 * it) the way the reader does
 * (sk_reader: prefetch, a thread per shard): its first shards, read
 * whole, with no cache, then through a fresh disk cache twice (the first
 * fills it, the second reads it back; only remote shards are cached). */
typedef struct sk_read_rate {
    double first_sample;  /* seconds from open to the first sample */
    double seconds;       /* from open to the last sample */
    uint64_t samples, bytes, shards;
    uint64_t requests;    /* requests made through o->s3 (0 for local shards) */
} sk_read_rate_run;
typedef struct sk_read_rate_options {
    size_t struct_size; /* sizeof, set by sk_read_rate_options_init; 0: this version's */
    size_t shards;      /* the first N shards (0: 4) */
    int prefetch;       /* as sk_reader_options (0: its default) */
    sk_s3 *s3;          /* the client for s3:// shards, or a plain one (http_only) for
                         * http(s)://; the requests it makes are counted */
    const char *cache_dir; /* where the temporary cache goes (NULL: $TMPDIR, /tmp) */
} sk_read_rate_options;
SK_API void sk_read_rate_options_init_sized(sk_read_rate_options *o, size_t size);
#define sk_read_rate_options_init(o) sk_read_rate_options_init_sized((o), sizeof *(o))
/* runs[0]: no cache; runs[1]: cache filled; runs[2]: cache read back. */
SK_API int sk_read_rate(const char *dataset, const sk_read_rate_options *o,
                        sk_read_rate_run runs[3], sk_error *err);

/* ------------------------------------------------------------------ serve */
/* `shardkit serve` (docs/view.md): a read-only web viewer of a dataset
 * (libmicrohttpd, opened on first use): the dataset's statistics and
 * shards, a shard's samples (paged through the index), a sample's members,
 * a grid of thumbnails, search by key prefix, jump to an ordinal.  Nothing
 * from a URL becomes a path; members are never served as HTML. */

typedef struct sk_serve_options {
    size_t struct_size;       /* sizeof, set by sk_serve_options_init; 0: this version's */
    const char *bind;         /* address to listen on (NULL: 127.0.0.1) */
    unsigned port;            /* 0: a free port (the ready callback says which) */
    unsigned max_connections; /* at once (0: 64); more wait in the kernel's backlog */
    unsigned threads;         /* request threads (0: 4; at most max_connections) */
    size_t thumb_cache;       /* bytes of thumbnails kept (0: 64 MiB) */
    unsigned thumb_size;      /* a thumbnail's larger side (0: 160) */
    void (*ready)(void *ctx, const char *url); /* once listening: the base URL */
    void *ctx;
} sk_serve_options;
SK_API void sk_serve_options_init_sized(sk_serve_options *o, size_t size);
#define sk_serve_options_init(o) sk_serve_options_init_sized((o), sizeof *(o))
/* Serves ds until the process gets SIGINT or SIGTERM (blocked in the
 * calling thread and the server's, and waited for), then stops cleanly. */
SK_API int sk_serve(sk_dataset *ds, const char *name, const sk_serve_options *o, sk_error *err);

/* ------------------------------------------------------------------ mount */
/* `shardkit mount`: a dataset as a read-only file tree through FUSE
 * (libfuse3, opened when a mount starts); docs/mount.md. */

/* Reads n bytes of the sample's tar stream at position off (inside
 * [sample.offset, sample.offset + span): a part of a member's data, or its
 * headers), unchecked: one pread or one ranged GET for a plain shard; for
 * a .tar.zst with a seek table, decompressed from the frame holding off.
 * SK_E_CORRUPT when the shard ends before off + n. */
SK_API int sk_dataset_read_at(sk_dataset *ds, const sk_hit *h, uint64_t off, void *buf, size_t n,
                              sk_error *err);

typedef struct sk_mount_options {
    size_t struct_size;  /* sizeof, set by sk_mount_options_init; 0: this version's */
    int by_shard;        /* one directory per shard (its name) holding its members */
    int foreground;      /* -f: stay in the foreground, messages on stderr */
    int allow_other;     /* -o allow_other */
    int verify;          /* check each member's CRC32C on its first read (EIO on a mismatch) */
    int threads;         /* FUSE worker threads at most; 0: libfuse's default (10) */
    const char *fuse_opts; /* more -o options for libfuse (comma-separated), or NULL */
    /* Opens the dataset (the caller's: it makes the S3 client an s3://
     * DATASET needs); called once, in the process that serves the mount
     * (after the fork into the background), and close after unmounting. */
    int (*open)(void *ctx, sk_dataset **ds, sk_error *err);
    void (*close)(void *ctx, sk_dataset *ds);
    void *ctx;
    /* Warnings (members skipped for their names, failed reads): NULL
     * prints them on stderr (and to syslog once in the background). */
    void (*warn)(void *ctx, const char *msg);
    /* Remote (s3://, http(s)://) shards and indexes read through the
     * on-disk cache in cache_dir (NULL: none), at most cache_size bytes
     * (0: no bound): kept across mounts, found by each object's ETag. */
    const char *cache_dir;
    uint64_t cache_size;
    /* Remote shards' small reads served from windows kept in memory
     * (sk_dataset_set_read_window): window bytes each, window_memory in
     * all; 0: the defaults (256 KiB, 32 MiB); window SIZE_MAX: none. */
    size_t read_window;
    uint64_t window_memory;
} sk_mount_options;
SK_API void sk_mount_options_init_sized(sk_mount_options *o, size_t size);
#define sk_mount_options_init(o) sk_mount_options_init_sized((o), sizeof *(o))
/* Mounts the dataset on mountpoint (an empty directory) read-only and
 * serves it until unmounted (fusermount3 -u, SIGINT, SIGTERM).  Refused
 * with the reason: no /dev/fuse, mountpoint missing or not empty, no index,
 * a shard the index cannot serve at random (.tar.gz: named).  In the
 * background (foreground 0) it returns in the parent once the mount is up
 * (0) or failed (its error). */
SK_API int sk_mount_run(const char *dataset, const char *mountpoint, const sk_mount_options *o,
                        sk_error *err);

/* ======================================================================
 * Not meant to stay stable: the index builder, and the S3 client's
 * requests, transfers and signing, which the tools and the store are
 * built on.  A program that uses them defines SHARDKIT_UNSTABLE_API
 * before including this header, and rebuilds with each release.
 * ====================================================================== */
#ifdef SHARDKIT_UNSTABLE_API

/* ---------------------------------------------- index builder (unstable) */
/* Writes an index record by record, as pack, shard and the sample writer
 * do for each shard. */
typedef struct sk_index_builder sk_index_builder;
SK_API sk_index_builder *sk_index_builder_new(void);
SK_API void sk_index_builder_free(sk_index_builder *b);
/* Forgets all records, keeping the buffers, to build the next shard's. */
SK_API void sk_index_builder_reset(sk_index_builder *b);
SK_API uint64_t sk_index_builder_samples(const sk_index_builder *b);
/* Starts the next sample (ordinal = samples added so far). */
SK_API int sk_index_add_sample(sk_index_builder *b, const char *key, size_t key_len,
                        uint64_t offset, uint64_t span, uint64_t stored_offset,
                        uint64_t stored_span, sk_error *err);
/* Adds a member to the sample added last. */
SK_API int sk_index_add_member(sk_index_builder *b, const char *ext, size_t ext_len,
                        uint64_t data_offset, uint64_t size, uint32_t header_len,
                        uint32_t crc32c, sk_error *err);
/* Writes the index to path through a temporary name and a rename. */
SK_API int sk_index_builder_write(sk_index_builder *b, const char *path,
                           const sk_index_shard_info *shard, sk_error *err);

/* ------------------------------------------------ S3 requests (unstable) */
/* The S3 client's requests one by one, its transfers and its signing:
 * what the tools and the store are built on. */
/* HEAD: size, ETag and the CRC32C checksum when the server keeps one.
 * SK_E_NOTFOUND when the object does not exist. */
SK_API int sk_s3_head(sk_s3 *s3, const char *bucket, const char *key, sk_s3_object *out, sk_error *err);
/* Ranged GET of len bytes at offset (len 0: to the end) into dst; *got is
 * the number of bytes stored.  SK_E_MISMATCH if the object holds more than
 * dst_capacity in that range. */
SK_API int sk_s3_get(sk_s3 *s3, const char *bucket, const char *key, uint64_t offset, uint64_t len,
              void *dst, size_t dst_capacity, size_t *got, sk_error *err);
/* Ranged GET delivered to a callback in order; the callback returns 0 to
 * go on, non-zero to stop (the call then fails with SK_E_IO).  A retried
 * request never delivers a byte twice. */
typedef int (*sk_s3_sink)(void *ud, const void *data, size_t len);
SK_API int sk_s3_get_cb(sk_s3 *s3, const char *bucket, const char *key, uint64_t offset, uint64_t len,
                 sk_s3_sink sink, void *ud, sk_error *err);
/* A single PUT of a buffer, with its CRC32C in x-amz-checksum-crc32c. */
SK_API int sk_s3_put(sk_s3 *s3, const char *bucket, const char *key, const void *data, size_t len,
              sk_error *err);
SK_API int sk_s3_delete(sk_s3 *s3, const char *bucket, const char *key, sk_error *err);
/* ListObjectsV2 of every object under prefix, page after page; fn returns
 * 0 to go on, non-zero to stop early. */
typedef int (*sk_s3_list_fn)(void *ud, const sk_s3_object *obj);
SK_API int sk_s3_list(sk_s3 *s3, const char *bucket, const char *prefix, sk_s3_list_fn fn, void *ud,
               sk_error *err);
/* ListMultipartUploads under prefix: fn gets each in-progress upload. */
typedef int (*sk_s3_uploads_fn)(void *ud, const char *key, const char *upload_id);
SK_API int sk_s3_list_uploads(sk_s3 *s3, const char *bucket, const char *prefix, sk_s3_uploads_fn fn,
                       void *ud, sk_error *err);
SK_API int sk_s3_abort_upload(sk_s3 *s3, const char *bucket, const char *key, const char *upload_id,
                       sk_error *err);

/* Asynchronous GETs, for many small objects at once: sk_s3_get_async
 * queues a GET whose body goes to a growing buffer; done is called on the
 * engine thread with the result (rc, err, data, len), after which the data
 * is freed.  sk_s3_drain waits until every queued request has finished. */
typedef void (*sk_s3_get_done)(void *ud, int rc, const sk_error *err, const void *data, size_t len);
SK_API int sk_s3_get_async(sk_s3 *s3, const char *bucket, const char *key, sk_s3_get_done done, void *ud,
                    sk_error *err);
SK_API void sk_s3_drain(sk_s3 *s3);

/* Streaming GET: one request for bytes [offset, offset + len) of an object
 * (len 0: to its end), read in order with sk_s3_stream_read.  The engine
 * keeps at most SK_S3_STREAM_WINDOW bytes of the body; when the reader falls
 * behind it pauses the transfer (TCP then holds the server back) rather
 * than block its thread, which serves every other request of the client,
 * and resumes it once the reader has drained half the window.  A transfer
 * that fails midway is retried from the first byte not yet delivered
 * (Range: bytes=N-, If-Match the first attempt's ETag, so a replaced object
 * is an error, never a splice).  A paused stream does not count against
 * the client's concurrency.  Close every stream before sk_s3_free. */
#define SK_S3_STREAM_WINDOW (1u << 20)
typedef struct sk_s3_stream sk_s3_stream;
SK_API int sk_s3_stream_open(sk_s3_stream **out, sk_s3 *s3, const char *bucket, const char *key,
                      uint64_t offset, uint64_t len, sk_error *err);
/* Copies up to n bytes into buf, waiting for at least one; *got = 0 at the
 * end of the range.  An error names the object and comes after every byte
 * that arrived before it. */
SK_API int sk_s3_stream_read(sk_s3_stream *st, void *buf, size_t n, size_t *got, sk_error *err);
/* Stops the transfer if it is still running (at any point) and frees st. */
SK_API void sk_s3_stream_close(sk_s3_stream *st);

/* Streaming multipart upload: a writer fed sequentially, parts sent in
 * parallel in the background, memory bounded by max_parts_in_flight x
 * part_size.  Objects that end below the part size go up in one PUT. */
typedef struct sk_s3_writer_opts {
    size_t struct_size; /* sizeof, set by sk_s3_writer_opts_init; 0: this version's */
    uint64_t part_size;      /* default 8 MiB, at least 5 MiB */
    int max_parts_in_flight; /* default: the client's concurrency */
} sk_s3_writer_opts;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_s3_writer_opts_init_sized(sk_s3_writer_opts *o, size_t size);
#define sk_s3_writer_opts_init(o) sk_s3_writer_opts_init_sized((o), sizeof *(o))
typedef struct sk_s3_writer sk_s3_writer;
SK_API int sk_s3_writer_open(sk_s3_writer **out, sk_s3 *s3, const char *bucket, const char *key,
                      const sk_s3_writer_opts *opts, sk_error *err);
/* Appends bytes; blocks only while max_parts_in_flight parts are unsent.
 * A failure is final: later calls fail too and abort() cleans up. */
SK_API int sk_s3_writer_write(sk_s3_writer *w, const void *data, size_t len, sk_error *err);
/* Sends what is left, completes the upload and confirms it (by the answer's
 * CRC32C or MD5 ETag for a small single PUT, else a HEAD);
 * returns the object's size and CRC32C, then frees the writer. */
SK_API int sk_s3_writer_finish(sk_s3_writer *w, uint64_t *size, uint32_t *crc32c, sk_error *err);
/* Abandons the upload (AbortMultipartUpload: no orphaned parts) and frees
 * the writer.  Accepts NULL. */
SK_API void sk_s3_writer_abort(sk_s3_writer *w);

/* Transfers: local files and s3 objects to s3, several at once, each in
 * one PUT below the threshold or in parallel parts above it. */
typedef struct sk_s3_xfer_opts {
    size_t struct_size; /* sizeof, set by sk_s3_xfer_opts_init; 0: this version's */
    uint64_t multipart_threshold; /* default 8 MiB */
    uint64_t part_size;           /* default 8 MiB; raised to keep <= 10,000 parts */
    int max_parts_in_flight;      /* default: the client's concurrency, of which at most 16
                                     hold a part buffer (copies across endpoints,
                                     sign_payload); set: both */
    int resume;                   /* 1: continue matching in-progress multipart uploads */
    int verify;                   /* 1: read every object back and compare CRC32C */
} sk_s3_xfer_opts;
/* Fills *o with the defaults documented above, struct_size included. */
SK_API void sk_s3_xfer_opts_init_sized(sk_s3_xfer_opts *o, size_t size);
#define sk_s3_xfer_opts_init(o) sk_s3_xfer_opts_init_sized((o), sizeof *(o))
/* What happened to one transfer, passed to the done callback. */
typedef struct sk_s3_xfer_result {
    const char *src, *bucket, *key;
    int rc;               /* 0 or an sk_code; err holds the message */
    const sk_error *err;
    uint64_t size;
    uint32_t crc32c;      /* of the whole object */
    int parts;            /* 0 for a single PUT */
    int parts_reused;     /* parts kept from an interrupted upload (resume) */
} sk_s3_xfer_result;
typedef void (*sk_s3_xfer_done)(void *ud, const sk_s3_xfer_result *res);
typedef struct sk_s3_xfer sk_s3_xfer;
/* done (may be NULL) runs on the caller's thread, inside sk_s3_xfer_wait. */
SK_API int sk_s3_xfer_new(sk_s3_xfer **out, sk_s3 *s3, const sk_s3_xfer_opts *opts, sk_s3_xfer_done done,
                   void *ud, sk_error *err);
SK_API void sk_s3_xfer_free(sk_s3_xfer *x);
/* Queues a local file to upload to bucket/key. */
SK_API int sk_s3_xfer_add_file(sk_s3_xfer *x, const char *path, const char *bucket, const char *key,
                        sk_error *err);
/* Queues a copy of src_bucket/src_key read through src (the same client:
 * server-side CopyObject/UploadPartCopy; another client: ranged GETs into
 * parallel part uploads). */
SK_API int sk_s3_xfer_add_copy(sk_s3_xfer *x, sk_s3 *src, const char *src_bucket, const char *src_key,
                        const char *bucket, const char *key, sk_error *err);
/* The same for a source described already (by a listing or a HEAD: its
 * size, ETag and CRC32C, "" where unknown; the key is src_key): the copy
 * starts without a HEAD of the source, which, one at a time on the
 * caller's thread, set the pace of a copy of many small objects.  The
 * copy is confirmed by its answer when that names the source's ETag or
 * CRC32C, else by a HEAD compared with them. */
SK_API int sk_s3_xfer_add_copy_known(sk_s3_xfer *x, sk_s3 *src, const char *src_bucket, const char *src_key,
                                     const sk_s3_object *known, const char *bucket, const char *key,
                                     sk_error *err);
/* Runs everything queued to the end.  progress (may be NULL) is called
 * about every 200 ms with bytes done and bytes known so far.  Returns 0
 * when every transfer succeeded, else the first failure's code; after a
 * failure meaning no request can succeed (bad key, no bucket) the rest are
 * not started. */
typedef void (*sk_s3_progress_fn)(void *ud, uint64_t done, uint64_t total);
SK_API int sk_s3_xfer_wait(sk_s3_xfer *x, sk_s3_progress_fn progress, void *ud, sk_error *err);
/* Starts what is queued, as far as the client's concurrency allows (it
 * blocks while every connection is busy), and reports what has finished,
 * without waiting for the last transfers: call it after each add to keep
 * only about `concurrency` items in memory however many are sent.  Returns
 * the first failure among those it reported, as sk_s3_xfer_wait. */
SK_API int sk_s3_xfer_start(sk_s3_xfer *x, sk_s3_progress_fn progress, void *ud, sk_error *err);

/* SigV4 over a request given piece by piece, for tests and other services.
 * headers are "Name: value" strings and must include host and x-amz-date;
 * canonical_uri and query are already URI-encoded.  Writes the value of
 * the Authorization header. */
typedef struct sk_s3_sigv4_input {
    const char *method, *canonical_uri, *query;
    const char *const *headers;
    size_t nheaders;
    const char *payload_hash; /* hex SHA-256 or "UNSIGNED-PAYLOAD" */
    const char *amz_date;     /* "20150830T123600Z" */
    const char *region, *service, *access_key, *secret_key;
} sk_s3_sigv4_input;
SK_API int sk_s3_sigv4_sign(const sk_s3_sigv4_input *in, char *auth, size_t auth_capacity, sk_error *err);
/* Hex SHA-256 of data (65 bytes with the NUL). */
SK_API void sk_s3_sha256_hex(const void *data, size_t len, char out[65]);
/* Base64 of a CRC32C as S3 writes it (big-endian bytes), 9 bytes with the NUL. */
SK_API void sk_s3_crc32c_b64(uint32_t crc, char out[9]);

#endif /* SHARDKIT_UNSTABLE_API */

#ifdef __cplusplus
}
#endif
#endif /* SHARDKIT_H */
