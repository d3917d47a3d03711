/*
 * store.h - where a dataset's bytes come back from: the read side's one
 * interface, as sink.h is the write side's.  Internal to libshardkit.
 *
 * A store is one object opened by its location; every job that reads a
 * shard, an index or a manifest reads it through one.  The kinds, chosen
 * by sk_store_open from the location:
 *
 *   file  (store_file.c)   a local regular file: pread, and sequential
 *                          reads with the kernel's read-ahead;
 *   pipe  (store_file.c)   '-', a FIFO or a character device: sequential
 *                          only, from its start (read_at is NULL);
 *   S3    (store_s3.c)     s3://bucket/key: HEAD for stat, one ranged GET
 *                          per read_at, one streaming GET for open_seq;
 *   HTTP  (store_http.c)   http(s)://: the same, through the same engine
 *                          (s3/http_client.c: retries, timeouts, bounds;
 *                          a server that ignores Range is refused);
 *   cache (store_cache.c)  wraps a remote store: sequential reads from 0
 *                          are kept on disk whole, reads at an offset by
 *                          1 MiB block, bounded, and served from there
 *                          only when they match what is expected.
 *   window (store_window.c) wraps a remote store (or the cache over one):
 *                          a small read at an offset fetches the aligned
 *                          window holding it, kept in memory (a pool per
 *                          env, bounded), so neighbouring reads cost no
 *                          request.
 *
 * list (the names under a directory or prefix) is sk_store_list: it is a
 * question about a location, not about one object.
 */
#ifndef SK_IO_STORE_H
#define SK_IO_STORE_H

#include "core/internal.h"

#include <pthread.h>

typedef struct sk_store sk_store;
typedef struct sk_store_seq sk_store_seq;
typedef struct sk_window_pool sk_window_pool;

typedef struct sk_store_stat {
    uint64_t size;  /* bytes; UINT64_MAX when not known (a pipe) */
    char etag[80];  /* the server's ETag without quotes, "" when none */
    char crc32c[24]; /* S3: x-amz-checksum-crc32c (base64, may end "-N"); "" when none */
    int64_t mtime;  /* local files: seconds since the epoch; 0 when not known */
} sk_store_stat;

struct sk_store_ops {
    /* Size and version; remote kinds ask once (HEAD) and keep the answer. */
    int (*stat)(sk_store *s, sk_store_stat *out, sk_error *err);
    /* n bytes at off into buf, *got < n only at the end; one pread or one
     * ranged GET.  NULL for sequential-only kinds. */
    int (*read_at)(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err);
    /* A sequential reader from off to the end (a pipe: off 0 only), with
     * read-ahead: the kernel's for files, one streaming GET for remote. */
    int (*open_seq)(sk_store *s, uint64_t off, sk_store_seq **out, sk_error *err);
    void (*close)(sk_store *s);
    /* The whole object into out, at most max bytes (SK_E_CORRUPT beyond,
     * naming what): one GET, no HEAD.  NULL: read through open_seq. */
    int (*load)(sk_store *s, size_t max, const char *what, sk_buf *out, sk_error *err);
};

struct sk_store {
    const struct sk_store_ops *ops;
    char *url;          /* the location as the user gave it: every error names it */
    uint64_t size_hint; /* a size already known (a manifest's, proven later by
                           the index): remote stat need not ask; UINT64_MAX: none */
    int cache_state;    /* cache: -1 not cached, 0 fetched into it, 1 served from it */
};

struct sk_store_seq {
    /* Up to n bytes into buf; *got = 0 only at the end. */
    int (*read)(sk_store_seq *q, void *buf, size_t n, size_t *got, sk_error *err);
    void (*close)(sk_store_seq *q);
};

/* What opening a location may need: the caller's S3 client, and the
 * client for http(s):// made on first use (with the S3 client's settings
 * when there is one).  One per job (reader, dataset, verify run). */
typedef struct sk_store_env {
    sk_s3 *s3; /* for s3:// (NULL: refused, naming the URL) */
    pthread_mutex_t mu;
    sk_s3 *http; /* ours */
    int own_s3;  /* s3 was made by sk_store_env_need_s3: freed with the env */
    /* set: every remote store opened through this env is read through the
     * on-disk cache there (store_cache.c), at most cache_size bytes (0: no
     * bound) */
    const char *cache_dir;
    uint64_t cache_size;
    int cache_temp; /* cache_dir is a job's private one (sk_store_cache_temp) */
    int cache_ahead; /* sk_store_cache_opts.ahead */
    /* set (sk_store_env_windows): every remote store opened through this
     * env serves small reads at an offset from windows in this pool */
    sk_window_pool *windows;
} sk_store_env;
/* s3: the caller's client (stays theirs), or NULL. */
void sk_store_env_init(sk_store_env *e, sk_s3 *s3);
void sk_store_env_release(sk_store_env *e);
/* Makes e->s3 when there is none: a client with the default settings for
 * endpoint (NULL: AWS_ENDPOINT_URL, else AWS), freed with the env. */
int sk_store_env_need_s3(sk_store_env *e, const char *endpoint, sk_error *err);
/* The read windows of the remote stores opened from now on (store_window.c):
 * window bytes each (4 KiB .. 64 MiB), memory bytes in all; window 0: none. */
int sk_store_env_windows(sk_store_env *e, size_t window, uint64_t memory, sk_error *err);

/* What a location names: the jobs' one question about a name (no job
 * compares a prefix with "s3://"; scripts/check-layers rule 4).  The
 * grammar is sk_place_check's, the tools' (docs/places.md): schemes in any
 * case ("S3://b/k" is S3); an unknown scheme, "pipe:", "file://" and a
 * lost slash ("s3:/b/k", "http:/h/x", "s3:") are refused by name, never
 * taken as a local path ("./s3:/x" is one). */
typedef enum { SK_LOC_LOCAL, SK_LOC_S3, SK_LOC_HTTP } sk_loc_kind;
typedef struct sk_store_where {
    sk_loc_kind kind; /* local: a path or '-' */
    int remote;       /* read from another machine: s3://, http(s):// */
    int listable;     /* sk_store_list takes it: a directory, an s3:// prefix (not '-', not
                         a web server, which has no listing) */
    int writable;     /* a sink takes it: a local path, '-', s3:// (http(s):// is read only) */
    int copyable;     /* its objects can be copied server-side, the bytes never passing
                         here (upload's copies): s3:// */
    const char *host_word; /* remote: what host_len names in messages ("bucket", "host") */
    /* remote: the bucket or host[:port] is host_len bytes at url + host; the
     * key or path after its '/' at url + path ("" when none) */
    size_t host, host_len, path;
} sk_store_where;
int sk_store_classify(const char *url, sk_store_where *w, sk_error *err);
/* Views of it: the kind alone (refused names as sk_store_classify), and
 * yes/no questions that take a refused name for none of them. */
int sk_store_kind(const char *url, sk_loc_kind *kind, sk_error *err);
int sk_store_is_remote(const char *url);
int sk_store_is_http(const char *url);
int sk_store_is_s3(const char *url);
/* url's scheme in lower case, in place, as manifests write it (the grammar
 * takes schemes in any case); a local path is left as it is. */
void sk_store_lower_scheme(char *url);

/* Whether url can be opened with the S3 client s3 (NULL: none): SK_E_USAGE
 * "URL: an s3:// WHAT needs an S3 client" when url is one and s3 is NULL,
 * a name the grammar refuses by name, else SK_OK.  The jobs' check before
 * they start, so that none asks which kind a location is. */
int sk_store_reach(const char *url, sk_s3 *s3, const char *what, sk_error *err);
/* The location of the key (or key prefix) key in an S3 bucket, for the
 * calls of the public API that are given a bucket and a key (malloc'd;
 * NULL when out of memory). */
char *sk_store_bucket_url(const char *bucket, const char *key);
/* Makes what opening url through e needs and e lacks: for s3://, an S3
 * client (sk_store_env_need_s3 with endpoint); nothing for other kinds. */
int sk_store_env_for(sk_store_env *e, const char *url, const char *endpoint, sk_error *err);

/* Opens url (no request is made yet for remote kinds). */
int sk_store_open(sk_store **out, const char *url, sk_store_env *e, sk_error *err);
void sk_store_close(sk_store *s);
/* Reads a whole object into *out, at most max bytes (a bigger one, or a
 * body that does not end, is SK_E_CORRUPT naming what and url); SK_E_NOTFOUND
 * when it does not exist. */
int sk_store_load(const char *url, sk_store_env *e, size_t max, const char *what, sk_buf *out,
                  sk_error *err);

/* A manifest, or a shard's index (flags: sk_index_open's, for a local
 * one), from any location: a local file, or one capped GET (SK_E_NOTFOUND
 * when none is there). */
int sk_store_load_manifest(const char *url, sk_store_env *e, sk_manifest **m, sk_error *err);
int sk_store_load_index(const char *url, sk_store_env *e, unsigned flags, sk_index **ix, sk_error *err);

/* The kinds (store_file.c, store_s3.c, store_http.c). */
int sk_store_file_open(sk_store **out, const char *path, sk_error *err);
int sk_store_s3_open(sk_store **out, const char *url, sk_s3 *s3, sk_error *err);
int sk_store_http_open(sk_store **out, const char *url, sk_s3 *http, sk_error *err);
/* A local regular file's descriptor (read it with pread only: it is the
 * store's), -1 for every other kind. */
int sk_store_file_fd(const sk_store *s);

/* store_cache.c: inner (taken over, closed with the cache) read through the
 * on-disk cache in dir (bound bytes at most, least recently used first
 * out; 0: no bound).  A copy is served only when it is the object the
 * caller expects: crc known, the bytes' CRC32C (checked as they are
 * fetched, before the copy is kept); else the object's ETag at open.  An
 * object with neither is read without caching. */
typedef struct sk_store_cache_opts {
    const char *dir;
    uint64_t bound;
    uint32_t crc32c;
    int crc_known;
    int temp; /* dir is a job's private cache (sk_store_cache_temp): files not fsync'd */
    int ahead; /* a read at an offset fetches the missing blocks after it too, up to
                  64 MiB in one streaming GET, each block usable as soon as it is in
                  (a reader that will want them: the global order) */
} sk_store_cache_opts;
int sk_store_cache_open(sk_store **out, sk_store *inner, const sk_store_cache_opts *o,
                        sk_error *err);
/* Whether a name in a cache directory is one the cache makes (HASH.skc,
 * or a temporary of one): the only names removed from a private cache. */
int sk_store_cache_own(const char *name);
/* The cache's estimate of dir's size is dropped (dir was removed). */
void sk_store_cache_forget(const char *dir);

/* cache_private.c: a job's private cache directory: $TMPDIR (else
 * /tmp)/shardkit-cache-XXXXXX made by mkdtemp (mode 0700, a name that did
 * not exist), marked live (a marker file locked with flock until
 * sk_store_cache_temp_remove) after the stale ones of killed jobs there
 * were swept; *dir malloc'd, *avail the bytes free on its file system (0:
 * not known); SK_E_IO naming the place and the cause when it cannot be
 * made. */
int sk_store_cache_temp(char **dir, uint64_t *avail, sk_error *err);
/* Removes such a directory: the cache's files in it (its own name shapes
 * only, links removed, never followed) and the marker, then the
 * directory, which stays when anything else is in it; then its lock. */
void sk_store_cache_temp_remove(const char *dir);
/* Removes the private caches under base that no live job holds (this
 * user's directories with an unlocked marker written on this machine),
 * the same way, a bounded number of entries a call; how many went whole. */
size_t sk_store_cache_temp_sweep(const char *base);

/* store_window.c: a pool of read windows (memory / window of them, 2 ..
 * 65,536), shared by the stores that hold a reference; freed with the
 * last.  A window store takes inner over and a reference to pool. */
int sk_window_pool_new(sk_window_pool **out, size_t window, uint64_t memory, sk_error *err);
void sk_window_pool_unref(sk_window_pool *p);
int sk_store_window_open(sk_store **out, sk_store *inner, sk_window_pool *pool, sk_error *err);
typedef struct sk_window_stats {
    uint64_t fetched; /* windows fetched (one read of the inner store each) */
    uint64_t hits;    /* reads served from a window already held */
    uint64_t direct;  /* reads passed to the inner store as they were */
    uint64_t held;    /* bytes of windows allocated now */
} sk_window_stats;
void sk_window_pool_stats(sk_window_pool *p, sk_window_stats *out);

/* The whole object behind s, at most max bytes, through its load or its
 * sequential reader (what sk_store_load does once it has opened it). */
int sk_store_read_whole(sk_store *s, size_t max, const char *what, sk_buf *out, sk_error *err);

/* A directory's or an s3:// prefix's entries, a page at a time: page gets
 * up to 1000 full locations ("DIR/NAME", "s3://b/p/NAME"), unsorted, only
 * names keep accepts; a nonzero return stops the listing (and is
 * returned).  http(s):// has no listing (SK_E_USAGE: name a manifest or a
 * brace pattern). */
typedef int (*sk_store_page_fn)(void *ctx, char **names, size_t n);
int sk_store_list(const char *url, sk_store_env *e, int (*keep)(const char *name),
                  sk_store_page_fn page, void *ctx, sk_error *err);

/* The same with each entry's size, ETag and CRC32C (S3's listing gives
 * them: what a server-side copy is checked against; UINT64_MAX and "" for
 * a directory's, unread) and its name relative to url.  deep: an s3://
 * prefix's whole tree, names below further '/'s included (checked by the
 * caller like any name), "dir/" placeholders left out; a local deep
 * listing is refused (walk the directory). */
typedef struct sk_store_entry {
    const char *url; /* the full location */
    const char *rel; /* inside url: the name under the listed prefix */
    uint64_t size;
    const char *etag;   /* without quotes; "" when not known */
    const char *crc32c; /* x-amz-checksum-crc32c as listed (base64); "" when not known */
} sk_store_entry;
typedef int (*sk_store_entries_fn)(void *ctx, const sk_store_entry *v, size_t n);
int sk_store_list_entries(const char *url, sk_store_env *e, int deep, int (*keep)(const char *name),
                          sk_store_entries_fn page, void *ctx, sk_error *err);

/* One page (up to 1000 entries) of url's deep listing, for a writer that
 * compares what it would send with what is there (upload --sync): the
 * entries whose names sort after `after` (a name relative to url; NULL or
 * "": from the start), as sk_store_list_entries gives them; *more when the
 * listing goes on past the page.  A server that says more follows yet
 * lists nothing after `after` is refused (SK_E_REMOTE: it would be asked
 * forever).  An s3:// prefix's (one ListObjectsV2 with start-after); other
 * kinds have no paged listing (SK_E_USAGE). */
int sk_store_list_page(const char *url, sk_store_env *e, const char *after, sk_store_entries_fn page,
                       void *ctx, int *more, sk_error *err);

/* Whether the local file path (size bytes) holds the bytes of the listed
 * entry v, as far as what its store keeps of an object tells (store_dest.c):
 * for S3 the size and the ETag, which is the MD5 of the bytes for an
 * object sent in one PUT (files up to 256 MiB compared so), and the MD5 of
 * the parts' MD5s then "-N" for a multipart one cut at part_size (doubled
 * as upload doubles it past 10,000 parts).  1 the same, 0 different or not
 * known (an opaque ETag: a doubt costs a send, never a stale object), or
 * minus an error naming path. */
int sk_store_entry_same(const sk_store_entry *v, const char *path, uint64_t size, uint64_t part_size,
                        sk_error *err);

/* --resume's question about a remote shard's index object (url + ".idx",
 * store_s3.c): is it this very shard's, built from the object's current
 * ETag (kept on the index object), else agreeing with it in size and
 * CRC32C?  1 with *ix that index, else 0 (and for kinds that keep no
 * index objects beside their shards). */
int sk_store_index_kept(sk_store_env *e, const char *url, sk_index **ix);

/* The public range reader over a store (the view lookups and callers use);
 * takes s over. */
void sk_store_range_view(sk_store *s, uint64_t size, sk_range_reader *rr);

/* ------------------------------------------- many small objects at once
 * (store_batch.c): a request for one remote object (s3://, http(s)://),
 * queued on its client's engine with as many others as the caller keeps
 * in flight; done runs on the engine's thread when it ends.  A request
 * may be started again once done (a retry). */
typedef struct sk_store_req sk_store_req;
typedef void (*sk_store_req_fn)(sk_store_req *q, void *ud);
int sk_store_req_new(sk_store_req **out, sk_store_env *e, const char *url, sk_error *err);
/* Its size (one HEAD). */
void sk_store_req_head(sk_store_req *q, sk_store_req_fn done, void *ud);
/* The whole object into dst (at most cap bytes: a longer body is
 * SK_E_MISMATCH, so cap = expected size + 1 catches one that grew). */
void sk_store_req_get(sk_store_req *q, void *dst, size_t cap, sk_store_req_fn done, void *ud);
/* Once done: SK_OK with *len (HEAD: the size; GET: the bytes got), or the
 * error naming the URL (SK_E_NOTFOUND: none there). */
int sk_store_req_result(const sk_store_req *q, uint64_t *len, sk_error *err);
/* Once done: its code alone (SK_E_NET: failed in transit after retries). */
int sk_store_req_rc(const sk_store_req *q);
void sk_store_req_free(sk_store_req *q);
/* Retries the env's clients have made so far: a server pushing back. */
uint64_t sk_store_env_retries(sk_store_env *e);

#endif
