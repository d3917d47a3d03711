/*
 * sink.h - where the bytes of one output shard go, and how it is published.
 * Internal to libshardkit.
 *
 * The shard writer (writer.c) frames, compresses and checksums; a sink only
 * stores.  Three kinds exist, chosen by sk_sink_open from the output name:
 *
 *   file (sink_file.c)  a temporary name beside the final one; publish
 *                       writes the index beside it and renames, so a shard
 *                       under its final name always has its index;
 *   fd   (sink_file.c)  a caller's descriptor (`-o -`): no index, nothing
 *                       to publish or remove;
 *   S3   (sink_s3.c)    a multipart upload; S3 shows the object only when
 *                       the upload completes, which is the rename's
 *                       guarantee; its index object follows.
 *
 * A sink is consumed by exactly one of publish and abort.  Positional
 * writes and truncation exist only where the medium allows them (a local
 * file); elsewhere they are NULL and the writer reports why it cannot.
 */
#ifndef SK_IO_SINK_H
#define SK_IO_SINK_H

#include "core/internal.h"
#include <sys/uio.h>

typedef struct sk_sink sk_sink;

struct sk_sink_ops {
    /* Appends iov (len bytes in all). */
    int (*write)(sk_sink *s, const struct iovec *iov, int iovcnt, uint64_t len, sk_error *err);
    /* Writes iov at off; safe from several threads at once.  May be NULL. */
    int (*pwrite)(sk_sink *s, const struct iovec *iov, int iovcnt, uint64_t off, uint64_t len,
                  sk_error *err);
    /* Makes size the end of what is written (after positional writes, or
     * to drop a member that failed mid-copy).  May be NULL. */
    int (*truncate)(sk_sink *s, uint64_t size, int shrink, sk_error *err);
    /* Completes the shard and its index (index NULL: none) under the
     * final name, then frees the sink, also on failure (after removing
     * what it wrote). */
    int (*publish)(sk_sink *s, sk_index_builder *index, const sk_index_shard_info *info,
                   sk_error *err);
    /* Removes what was written (never anything it did not create), frees. */
    void (*abort)(sk_sink *s);
};

struct sk_sink {
    const struct sk_sink_ops *ops;
    const char *where; /* the name write errors give: temporary file or URL */
};

/* What an output needs beyond its name: the client for s3:// names and
 * the part size of their uploads (0: the S3 writer's default). */
typedef struct sk_sink_opts {
    sk_s3 *s3;
    uint64_t s3_part_size;
} sk_sink_opts;

/* A sink for path: s3:// URLs upload, anything else is a local file. */
int sk_sink_open(sk_sink **out, const char *path, const sk_sink_opts *o, sk_error *err);
/* A sink writing to the caller's fd (named name in messages). */
int sk_sink_open_fd(sk_sink **out, int fd, const char *name, sk_error *err);

/* ------------------------------------------------ a small output beside
 * (store_dest.c): an index or a DALI index beside the shard it describes,
 * wherever the shard is.  The job builds it as a local file at b->path,
 * then asks for it to be put at b->url; how is the kind's:
 *   local  b->path is url itself: the builder's own temporary name and
 *          rename put it there, and put has nothing left to do;
 *   S3     b->path is a private scratch file (mkstemp in $TMPDIR); put
 *          sends it in one PUT, keeping the ETag the shard had at begin
 *          (tag_shard) as the object's metadata: what --resume checks
 *          (sk_store_index_kept);
 *   HTTP   refused at begin: a web server takes no writes.
 * sk_beside_end removes the scratch file; call it whatever happened. */
struct sk_store_env;
typedef struct sk_beside {
    const char *url;    /* the output's location (the caller's string) */
    const char *path;   /* where to build it */
    char scratch[4200]; /* S3: the scratch file's name; "" when none */
    char etag[80];      /* the shard's ETag at begin */
    int tagged;
} sk_beside;
/* tag_shard: the shard whose ETag the output keeps (NULL: none); what:
 * the scratch file's word ("idx", "dali"). */
int sk_beside_begin(sk_beside *b, struct sk_store_env *e, const char *url, const char *tag_shard,
                    const char *what, sk_error *err);
int sk_beside_put(sk_beside *b, struct sk_store_env *e, sk_error *err);
void sk_beside_end(sk_beside *b);

/* ------------------------------------- what a writer asks of its place
 * (store_dest.c), so that none asks which kind the place is.
 * The directory the shards of pattern go in, before the first: a local one
 * is made (and its parents); an S3 prefix needs none. */
int sk_sink_make_dir(const char *pattern, sk_error *err);
/* Before the first shard of a run numbered from start (nshards of them; 0:
 * every number from start on): S3 aborts the multipart uploads a killed
 * run left under those names (sk_sink_s3_prepare); a local place needs
 * nothing (a killed run's temporary names are its own to clean). */
int sk_sink_prepare(sk_s3 *s3, const char *pattern, uint64_t start, size_t nshards,
                    void (*warn)(void *, const char *), void *warn_ctx, sk_error *err);
/* Whether the sink for path takes writes at an offset (a local file:
 * several workers fill one shard at once); an upload is written in order. */
int sk_sink_positional(const char *path);
/* A kept shard's (--resume) extension counts into man, from its index
 * beside it: a local file, or the index object. */
int sk_sink_count_exts(sk_s3 *s3, const char *path, sk_manifest *man, sk_error *err);

/* The kinds (sink_file.c, sink_s3.c). */
int sk_sink_file_open(sk_sink **out, const char *path, sk_error *err);
int sk_sink_s3_open(sk_sink **out, const char *url, const sk_sink_opts *o, sk_error *err);

#endif
