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
/* Members recorded so far, and a member's CRC32C set afterwards (pack's
 * stream mode records a sample when it is placed, before it is read). */
uint64_t sk_index_builder_members(const sk_index_builder *b);
void sk_index_builder_set_crc(sk_index_builder *b, uint64_t member, uint32_t crc32c);
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

/* index.c: asks the CPU to fetch what sk_index_sample and sk_index_member
 * will read of sample `ordinal` (a random sample's records are cache
 * misses): stage 0 its record, stage 1 (the record fetched by then) its key
 * and its members' records.  Reads nothing out of bounds; a prefetch of a
 * bad ordinal does nothing. */
void sk_index_prefetch(const sk_index *ix, uint64_t ordinal, int stage);

/* index.c: SK_OK when the key order table is a permutation of the samples
 * sorted by key (verify --deep); else SK_E_CORRUPT saying where. */
int sk_index_check_order(const sk_index *ix, sk_error *err);

/* index.c: the shard's smallest and largest key (the ends of the key
 * order table, O(1)); pointers into the index.  SK_E_NOTFOUND when it
 * holds no sample. */
int sk_index_key_bounds(const sk_index *ix, const char **first, size_t *first_len,
                        const char **last, size_t *last_len, sk_error *err);

/* The smallest and largest key a builder holds so far (pointers into it,
 * valid until its next add or write); 0 when it holds no sample. */
int sk_index_builder_key_bounds(const sk_index_builder *b, const char **first,
                                size_t *first_len, const char **last, size_t *last_len);

/* The order of keys everywhere (index key order table, manifest key
 * ranges, pack's catalog): bytewise, a prefix before the longer key. */
static inline int sk_key_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    int d = memcmp(a, b, al < bl ? al : bl);
    return d ? d : al < bl ? -1 : al > bl;
}

/* manifest.c: each shard's key range ("first_key", "last_key" in
 * manifest.json; docs/format.md).  Writers set it for shard i (after
 * sk_manifest_add_shard; keys copied); sk_manifest_write writes the ranges
 * only when every shard with samples has one and they rise strictly from
 * shard to shard (keys sorted within and across shards), so that their
 * presence means a key's shard can be found by a binary search.  Parsing
 * keeps what a manifest says, unchecked: a reader checks the order
 * (sk_key_ranges_ordered) and each range against the shard's index. */
int sk_manifest_set_key_range(sk_manifest *m, size_t i, const char *first, size_t first_len,
                              const char *last, size_t last_len, sk_error *err);
/* 1 with shard i's range, 0 when it has none. */
int sk_manifest_key_range(const sk_manifest *m, size_t i, const char **first, size_t *first_len,
                          const char **last, size_t *last_len);
/* A range as a reader holds it (no range: first == NULL). */
typedef struct sk_key_range {
    char *first, *last;
    size_t first_len, last_len;
} sk_key_range;
/* 1 when every range with samples[i] > 0 is set, first <= last, and each
 * last is below the next set range's first; empty shards need none. */
int sk_key_ranges_ordered(const sk_key_range *r, const uint64_t *samples, size_t n);
/* index.c: a copy of the builder's smallest and largest key (first NULL
 * when it holds no sample), to outlive sk_shard_out_finish. */
int sk_index_builder_key_range(const sk_index_builder *b, sk_key_range *out, sk_error *err);
void sk_key_range_free(sk_key_range *r);

/* manifest.c: the manifest's JSON written to path (through sk_out), and
 * what its lookup table needs to be tied to it: the file's length and
 * CRC32C, and whether the key ranges went in. */
int sk_manifest_write_json(sk_manifest *m, const char *path, unsigned out_flags, uint64_t *file_len,
                           uint32_t *file_crc, int *with_ranges, sk_error *err);
/* manifest_table.c: sk_manifest_write, with (table = 1, what the public
 * call does) or without MANIFEST.lookup beside it (a scratch file on its
 * way to S3).  Here, above manifest.c, so that the JSON writer does not
 * call back into the table.  flags: SK_MANIFEST_TABLE, and SK_OUT_REGULAR
 * for a manifest name the run chose (not the user's --manifest): a link,
 * FIFO or device there is refused (core/internal.h). */
#define SK_MANIFEST_TABLE 1u
int sk_manifest_write_to(sk_manifest *m, const char *path, unsigned flags, sk_error *err);
/* manifest_table.c: PATH.lookup, the binary table of the manifest just
 * written to PATH (file_len bytes, CRC32C file_crc), when it lists at
 * least SK_MANIFEST_TABLE_MIN shards and PATH is a regular local file
 * (docs/format.md).  ranges: the key ranges go in too. */
#define SK_MANIFEST_TABLE_MIN 64
int sk_manifest_table_write(const sk_manifest *m, const char *path, uint64_t file_len,
                            uint32_t file_crc, int ranges, sk_error *err);
/* The manifest at local path for a lookup: from PATH.lookup when that
 * matches the manifest's bytes and is sound (no JSON parse), else parsed
 * as sk_manifest_load does.  Only what a lookup needs is filled (shards,
 * key ranges; not tool, options or extensions when from the table). */
int sk_manifest_load_for_lookup(sk_manifest **out, const char *path, sk_error *err);
/* The manifest table t[0..n) describes, when it is sound and bound to the
 * manifest bytes text[0..text_len); else NULL (the JSON decides). */
sk_manifest *sk_manifest_from_table(const unsigned char *t, size_t n, const char *text,
                                    size_t text_len);

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


/* keyseen.c: the sample keys of one shard in the order a streaming reader
 * meets them; *again = 1 (nothing added) when key was met before, in a
 * sample not adjacent to this one: a split sample.  Zero it to start;
 * reset between shards.  sk_keyseen_add_at also keeps where each key's
 * first member was (pos: a byte offset), and on a repeat gives it back in
 * *first, so that a refusal names both places. */
typedef struct sk_keyseen {
    char *arena;
    size_t alen, acap;
    size_t *off, *len, *slot;
    uint64_t *pos;
    size_t n, ocap, lcap, scap, pcap;
    int unsorted;
} sk_keyseen;
int sk_keyseen_add(sk_keyseen *k, const char *key, size_t len, int *again, sk_error *err);
int sk_keyseen_add_at(sk_keyseen *k, const char *key, size_t len, uint64_t pos, int *again,
                      uint64_t *first, sk_error *err);
void sk_keyseen_reset(sk_keyseen *k);
void sk_keyseen_free(sk_keyseen *k);
/* index.c: how many keys occur as more than one sample of the shard (the
 * key order table holds them side by side), and the first of them. */
uint64_t sk_index_split_keys(const sk_index *ix, const char **first, size_t *first_len);

#endif
