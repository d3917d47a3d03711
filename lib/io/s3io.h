/*
 * s3io.h - S3 as a source and a sink of pack and shard: the pieces
 * the shared modules (catalog.c, pack.c, writer.c) call through small hooks,
 * so the logic itself stays in catalog_s3.c, fetch_s3.c and sink_s3.c.
 * Internal to libshardkit.
 *
 *   catalog_s3.c  s3:// prefixes and key lists become catalog items whose
 *                 member name is the key relative to the prefix;
 *   fetch_s3.c    downloads those items ahead of the readers, in plan
 *                 order, with many GETs in flight and a bounded window;
 *   sink_s3.c     an output shard streams into a multipart upload; its
 *                 index and the manifest follow; --resume checks objects.
 */
#ifndef SK_S3IO_H
#define SK_S3IO_H

#include "pack/catalog.h"

#include <sys/uio.h>

struct sk_shard_out;

static inline int sk_is_s3_url(const char *s)
{
    return s && !strncmp(s, "s3://", 5);
}

/* ------------------------------------------------------ catalog_s3.c */

/* The client for every S3 source and sink, GETs in flight (0 = 64) and the
 * part size of shard uploads (0 = the writer's default). */
int sk_catalog_set_s3(sk_catalog *c, sk_s3 *s3, int concurrency, uint64_t part_size,
                      sk_error *err);
/* Every object under an s3:// prefix ("s3://b/p" means the prefix "p/"). */
int sk_catalog_add_s3(sk_catalog *c, const char *url, sk_error *err);
/* Keys listed one a line (or NUL-separated), relative to base_url. */
int sk_catalog_add_s3_list(sk_catalog *c, FILE *list, const char *list_name,
                           const char *base_url, int nul_separated, sk_error *err);
/* The full key of an S3 item ("prefix" + member name) into buf. */
size_t sk_s3_item_key(const sk_catalog *c, const sk_item *it, char *buf, size_t cap);

/* ------------------------------------------------------- fetch_s3.c */

/* Starts downloading the S3 items of the samples order[pending[0..npending)],
 * in that order, ahead of the readers.  A no-op without S3 sources. */
int sk_fetch_start(sk_catalog *c, const uint32_t *order, const uint64_t *pending, uint64_t npending,
                   sk_error *err);
/* Reads want bytes at offset at of item it (want + 1 must fit in dst when
 * probe is set, as for files).  Objects fetched ahead are taken from the
 * window; big ones are read by ranged GETs. */
int sk_fetch_read(const sk_catalog *c, const sk_item *it, const char *name, uint64_t at,
                  unsigned char *dst, uint64_t want, int probe, sk_error *err);
/* Wakes and fails every waiting read (before joining reader threads). */
void sk_fetch_cancel(sk_catalog *c);
/* Stops the fetcher and frees it. */
void sk_fetch_free(sk_catalog *c);

/* -------------------------------------------------------- sink_s3.c */

/* Before the first shard: checks the client, aborts the multipart uploads
 * a killed run left under the names pattern gives shards start ..
 * start + nshards - 1 (nshards 0: every number from start on). */
int sk_sink_s3_prepare(sk_s3 *s3, const char *pattern, uint64_t start, size_t nshards,
                       void (*warn)(void *, const char *), void *warn_ctx, sk_error *err);
/* sk_shard_out's S3 flavour (writer.c calls these for s3:// names). */
int sk_sink_s3_begin(struct sk_shard_out *o, sk_error *err);
int sk_sink_s3_write(struct sk_shard_out *o, const struct iovec *iov, int iovcnt, sk_error *err);
int sk_sink_s3_finish(struct sk_shard_out *o, sk_index_shard_info *info, sk_error *err);
void sk_sink_s3_abort(struct sk_shard_out *o);
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
/* Reads a manifest or an index object (SK_E_NOTFOUND when missing). */
int sk_s3_load_manifest(sk_s3 *s3, const char *url, sk_manifest **m, sk_error *err);
int sk_s3_load_index(sk_s3 *s3, const char *url, sk_index **out, sk_error *err);

#endif
