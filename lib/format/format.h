/*
 * format.h - what the format layer (tar, index, manifest, naming) offers
 * the layers above beyond the public API.  Never installed.
 */
#ifndef SK_FORMAT_H
#define SK_FORMAT_H

#include "core/internal.h"

#include <zstd.h>

/* index.c: what writer.c needs of a builder's records (sample i's tar
 * range; setting its stored range once the compressed frames are known). */
int sk_index_builder_range(const sk_index_builder *b, uint64_t i, uint64_t *offset,
                           uint64_t *span);
void sk_index_builder_set_stored(sk_index_builder *b, uint64_t i, uint64_t stored_offset,
                                 uint64_t stored_span);
/* sk_index_from_memory over a malloc'd copy the index then owns (freed by
 * sk_index_close, or here when the bytes are refused). */
int sk_index_adopt(sk_index **out, void *data, size_t size, const char *name, sk_error *err);

/* index.c: one sample and its n members in one call, as
 * sk_index_add_sample followed by n sk_index_add_member would add them,
 * each extension lowercased (ASCII) on its way into the string pool; the
 * hot path of `shardkit index`, with one capacity check per sample. */
typedef struct sk_index_member_in {
    const char *ext;
    size_t ext_len;
    uint64_t data_offset, size;
    uint32_t header_len, crc32c;
} sk_index_member_in;
int sk_index_add_sample_members(sk_index_builder *b, const char *key, size_t key_len,
                                uint64_t offset, uint64_t span, uint64_t stored_offset,
                                uint64_t stored_span, const sk_index_member_in *m, size_t n,
                                sk_error *err);

/* index.c: SK_OK when the key order table is a permutation of the samples
 * sorted by key (verify --deep); else SK_E_CORRUPT saying where. */
int sk_index_check_order(const sk_index *ix, sk_error *err);

/* manifest.c: the path or URL of a shard (or index) a manifest names:
 * relative URLs are under the manifest's directory; a local manifest may
 * also name absolute paths and URLs; a manifest read from s3:// only
 * s3:// URLs and safe relative paths (never a local file).  *out: caller
 * frees. */
int sk_manifest_resolve(const char *manifest, const char *url, char **out, sk_error *err);

/* zstd_seekable.c: the one streaming zstd decoder (shard streams, the
 * reader, lookups of compressed samples): stored bytes come from read(ctx,
 * buf, cap, &got, err), *got = 0 at their end, which must end a frame. */
#define SK_ZDEC_IN (128u << 10)
typedef int (*sk_zdec_src)(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err);
typedef struct sk_zdec {
    ZSTD_DStream *z;
    ZSTD_inBuffer in;
    unsigned char *buf;
    size_t last;      /* ZSTD_decompressStream's last hint: 0 = at a frame end */
    uint64_t raw_pos; /* stored offset of the end of what was read, for messages */
    const char *name;
} sk_zdec;
int sk_zdec_init(sk_zdec *d, const char *name, uint64_t raw_pos, sk_error *err);
/* Up to n decompressed bytes at dst; *got = 0 at the end. */
int sk_zdec_read(sk_zdec *d, sk_zdec_src read, void *ctx, void *dst, size_t n, size_t *got,
                 sk_error *err);
void sk_zdec_free(sk_zdec *d);

/* recordio.c: a RecordIO stream (SageMaker's RecordWrapperType=RecordIO,
 * dmlc's format: magic 0xced7230a, a length word with a 3-bit flag, data,
 * padding to 4) unwrapped into its records' bytes, back to back, read
 * from read(ctx) on demand; no buffering beyond a header. */
typedef struct sk_recordio {
    const char *name;   /* for messages */
    uint64_t pos;       /* stored bytes consumed */
    uint64_t records;   /* records begun */
    uint32_t left;      /* data bytes left in the current part */
    unsigned pad;       /* padding bytes after them */
    unsigned inject;    /* bytes of the magic still to put back (multi-part) */
    int in_record;      /* a multi-part record awaits its last part */
} sk_recordio;
void sk_recordio_init(sk_recordio *r, const char *name);
/* Up to n record bytes at dst; *got = 0 at a clean end of the stream (a
 * truncated part, a bad magic or flag is SK_E_CORRUPT with the offset). */
int sk_recordio_read(sk_recordio *r, sk_zdec_src read, void *ctx, void *dst, size_t n,
                     size_t *got, sk_error *err);

/* manifest.c: JSON values for the options objects the tools record:
 * a string (bytes that are not UTF-8 become U+FFFD), a u64 (a decimal
 * string past INT64_MAX).  jansson's json_t; NULL when out of memory. */
struct json_t;
struct json_t *sk_json_str(const char *s);
struct json_t *sk_json_u64(uint64_t v);

/* naming.c: the number n for which pattern gives name (the inverse of
 * sk_shard_name); 0 when name is not one of pattern's. */
int sk_shard_number(const char *pattern, const char *name, uint64_t *n);

#endif
