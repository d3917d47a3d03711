/*
 * catalog.h - the inputs of a pack run, held compactly: every file's
 * directory (interned), basename, size and where to read it, sorted and
 * grouped into WebDataset samples.  Internal to libshardkit.
 */
#ifndef SK_CATALOG_H
#define SK_CATALOG_H

#include "core/internal.h"
#include "io/store.h"
#include <stdio.h>
#include <sys/types.h>

typedef struct sk_item {
    uint64_t size;
    uint64_t spool_off; /* archive members: where their bytes sit in the spool */
    uint32_t dir;       /* interned directory, "" or "a/b/" */
    uint32_t base;      /* arena offset of the NUL-terminated basename */
    uint16_t src;       /* which source: its root fd or spool fd */
    uint16_t key_end;   /* bytes of the basename before its first dot */
    uint32_t flags;     /* SK_ITEM_* */
} sk_item;
#define SK_ITEM_UNSIZED 1u /* found by the walk; size still to be read */
#define SK_ITEM_DROPPED 2u /* gone or not regular when sized; skipped */

typedef struct sk_source {
    int fd;        /* directory fd (files) or spool fd (archive members) */
    int is_spool;
    char *label;   /* for messages: the directory, list or archive path */
    /* a remote source (fd -1; s3:// or http(s)://, read through the
     * store): an item's object is base + its member name */
    int remote;
    char *base;         /* a location ending in '/': "s3://b/p/", "https://h/d/" */
    int keyed;          /* each item's object is base + a name of its own (in
                           the arena at the item's spool_off), not its member name */
    uint64_t spool_len; /* spool sources of sk_catalog_add_bytes: bytes written */
    struct sk_swalk *lazy; /* a directory not walked yet: sk_catalog_next_window
                              walks it in key order, a window at a time */
} sk_source;

typedef void (*sk_warn_fn)(void *ctx, const char *msg);

typedef struct sk_catalog {
    sk_item *items;
    size_t nitems, cap_items;
    char *arena;       /* basenames and directory strings */
    size_t arena_len, arena_cap;
    uint32_t *dirs;    /* arena offsets of directory strings, by id */
    uint32_t *dir_lens;
    size_t ndirs, cap_dirs;
    uint32_t *dir_hash; /* open addressing: dir id + 1, 0 = empty */
    size_t hash_cap;
    sk_source *srcs;
    size_t nsrcs;
    uint32_t *samples; /* after sk_catalog_group: first item of each sample */
    size_t nsamples;
    /* policy and accounting */
    int follow_symlinks, skip_errors;
    uint64_t skipped;
    const char *tmp_dir;
    int jobs;          /* threads for sizes and sorting (sk_catalog_group) */
    int defer_sizes;   /* group leaves walked files SK_ITEM_UNSIZED: the
                          caller learns their sizes as it opens them */
    int walk_done;     /* sk_catalog_next_window: the last window is out */
    int presorted;     /* items came in order (sk_catalog_next_window): group
                          does not sort them */
    uint64_t window_gen; /* which window the directory ids belong to */
    sk_warn_fn warn;
    void *warn_ctx;
    /* s3io: the client for S3 sources and sinks, the store env remote
     * sources are read through (made by sk_catalog_set_s3), the fetcher */
    sk_s3 *s3;
    sk_store_env env;
    int env_ready;
    int s3_concurrency;
    uint64_t s3_part_size; /* of multipart shard uploads; 0 = the writer's */
    struct sk_fetch *fetch;
} sk_catalog;

void sk_catalog_init(sk_catalog *c);
void sk_catalog_release(sk_catalog *c);
/* Every regular file under dir, named relative to it. */
int sk_catalog_add_dir(sk_catalog *c, const char *dir, sk_error *err);
/* The same, walked later: in key order, a window at a time, by
 * sk_catalog_next_window (or all at once by sk_catalog_walk_lazy). */
int sk_catalog_add_dir_lazy(sk_catalog *c, const char *dir, sk_error *err);
/* Whether every source is such a directory (and there is one at least). */
int sk_catalog_all_lazy(const sk_catalog *c);
/* Walks every directory still to walk now, as sk_catalog_add_dir would. */
int sk_catalog_walk_lazy(sk_catalog *c, sk_error *err);
/* Replaces the items with the next ones in key order from the directories
 * still to walk: max_items or a little more (a window ends between two
 * samples), none when all are walked.  Sources stay; sk_catalog_group
 * then groups the window without sorting it.  Memory: the window and, per
 * directory level being walked, that directory's entries. */
int sk_catalog_next_window(sk_catalog *c, size_t max_items, sk_error *err);
/* Paths read from list (NUL- or newline-separated), relative to root;
 * a listed directory is walked. */
int sk_catalog_add_list(sk_catalog *c, FILE *list, const char *list_name, const char *root,
                        int nul_separated, sk_error *err);
/* Every regular member of an archive in any format libarchive reads,
 * spooled to an unlinked temporary file so samples can be read in key order. */
int sk_catalog_add_archive(sk_catalog *c, const char *path, sk_error *err);
/* Sorts by key then extension and groups into samples; a sample with the
 * same extension twice is an error naming both files. */
int sk_catalog_group(sk_catalog *c, sk_error *err);

/* The member name "dir/base" of an item into buf (SK_TAR_NAME_MAX + 1). */
size_t sk_item_name(const sk_catalog *c, const sk_item *it, char *buf);
static inline const char *sk_item_base(const sk_catalog *c, const sk_item *it)
{
    return c->arena + it->base;
}
static inline size_t sk_sample_members(const sk_catalog *c, size_t s)
{
    size_t end = s + 1 < c->nsamples ? c->samples[s + 1] : c->nitems;
    return end - c->samples[s];
}
/* hooks for remote sources (catalog_remote.c): a source without an fd, and an item added by
 * its member name ("a/b.jpg": checked, split into directory and basename). */
int sk_catalog_add_source(sk_catalog *c, int fd, int is_spool, const char *label, uint16_t *id,
                          sk_error *err);
int sk_catalog_add_named(sk_catalog *c, uint16_t src, const char *name, uint64_t size,
                         sk_error *err);
/* Would sk_catalog_add_named take name as it is? */
int sk_catalog_name_usable(const char *name);
/* An item of a keyed S3 source: member name, size, and its object key. */
int sk_catalog_add_keyed(sk_catalog *c, uint16_t src, const char *name, uint64_t size,
                         const char *key, sk_error *err);
/* An item whose bytes are data (generated, such as a label file): appended
 * to a spool file, which becomes source *src when *src is UINT16_MAX. */
int sk_catalog_add_bytes(sk_catalog *c, uint16_t *src, const char *label, const char *name,
                         const void *data, size_t len, sk_error *err);
/* Reports a problem with one input: an error (returned) unless the catalog
 * skips errors, in which case it warns, counts, and returns 0. */
int sk_catalog_problem(sk_catalog *c, sk_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Remote objects as a source of pack (catalog_remote.c, fetch_remote.c) */

/* ------------------------------------------------------ catalog_remote.c */

/* The client for every S3 source and sink (and the settings of the one
 * made for http(s):// sources), requests in flight (0 = 64) and the part
 * size of shard uploads (0 = the writer's default). */
int sk_catalog_set_s3(sk_catalog *c, sk_s3 *s3, int concurrency, uint64_t part_size,
                      sk_error *err);
/* Every object under an s3:// prefix ("s3://b/p" means the prefix "p/"). */
int sk_catalog_add_s3(sk_catalog *c, const char *url, sk_error *err);
/* Names listed one a line (or NUL-separated), relative to base_url (an
 * s3:// prefix or an http(s):// directory), or full URLs under it. */
int sk_catalog_add_s3_list(sk_catalog *c, FILE *list, const char *list_name,
                           const char *base_url, int nul_separated, sk_error *err);
/* A remote source whose objects are base + member name, or (keyed) base +
 * a name each item carries (sk_catalog_add_keyed). */
int sk_catalog_remote_source(sk_catalog *c, const char *base, int keyed, uint16_t *id,
                             sk_error *err);
/* Objects to add: sized by HEAD (many in flight), then added as items of
 * src named name; the object is src's base + rel; a missing one is a
 * problem naming its URL. */
typedef struct sk_catalog_want {
    uint16_t src;
    const char *rel, *name;
} sk_catalog_want;
int sk_catalog_add_wants(sk_catalog *c, const sk_catalog_want *w, size_t n, sk_error *err);
/* The location of a remote item (its source's base + its name) into buf. */
size_t sk_item_url(const sk_catalog *c, const sk_item *it, char *buf, size_t cap);

/* ------------------------------------------------------ sagemaker.c */

/* A SageMaker ManifestFile or augmented manifest (a local file, '-' or an
 * s3:// object): its objects as S3 items, its labels as .json members. */
int sk_catalog_add_sagemaker(sk_catalog *c, const char *manifest, sk_error *err);
/* The manifest in f (label names it in messages), parsed and checked; with
 * add, its objects are then sized and added to c, without (the fuzz
 * target) no request is made. */
int sk_sagemaker_read(sk_catalog *c, FILE *f, const char *label, int add, sk_error *err);

/* ------------------------------------------------------- fetch_remote.c */

/* Starts downloading the remote items of the samples order[pending[0..npending)],
 * in that order, ahead of the readers.  A no-op without remote sources. */
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

/* --part: keeps only the samples whose key falls in part (of parts); c must
 * be grouped (sk_catalog_group) and stays grouped, in the same order
 * (catalog_group.c; a key's part is format/part.c's). */
int sk_part_filter(sk_catalog *c, int part, int parts, sk_error *err);

#endif
