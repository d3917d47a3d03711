/*
 * mount.h - what the three parts of `shardkit mount` share: the libfuse3
 * table (mount_libs.c: the library opened when a mount starts), the tree
 * of names built from the indexes (mount_tree.c) and the FUSE operations
 * that serve it (mount_fuse.c).
 */
#ifndef SK_TOOLS_MOUNT_H
#define SK_TOOLS_MOUNT_H

#include "core/internal.h"

#define FUSE_USE_VERSION 35
#include <fuse3/fuse_lowlevel.h>
#include <pthread.h>
#include <sys/stat.h>

/* libfuse3, called through this table (filled by sk_fuse_load). */
typedef struct sk_fuse_api {
    struct fuse_session *(*session_new)(struct fuse_args *, const struct fuse_lowlevel_ops *,
                                        size_t, void *);
    int (*session_mount)(struct fuse_session *, const char *);
    void (*session_unmount)(struct fuse_session *);
    void (*session_destroy)(struct fuse_session *);
    int (*session_loop_mt)(struct fuse_session *, struct fuse_loop_config *);
    int (*set_signal_handlers)(struct fuse_session *);
    void (*remove_signal_handlers)(struct fuse_session *);
    int (*reply_err)(fuse_req_t, int);
    void (*reply_none)(fuse_req_t);
    int (*reply_entry)(fuse_req_t, const struct fuse_entry_param *);
    int (*reply_attr)(fuse_req_t, const struct stat *, double);
    int (*reply_open)(fuse_req_t, const struct fuse_file_info *);
    int (*reply_buf)(fuse_req_t, const char *, size_t);
    int (*reply_statfs)(fuse_req_t, const struct statvfs *);
    size_t (*add_direntry)(fuse_req_t, char *, size_t, const char *, const struct stat *, off_t);
    void *(*req_userdata)(fuse_req_t);
    int (*opt_add_arg)(struct fuse_args *, const char *);
    void (*opt_free_args)(struct fuse_args *);
} sk_fuse_api;
extern sk_fuse_api sk_fuse;
/* Opens libfuse3.so.3 once; an error names it when it cannot. */
int sk_fuse_load(sk_error *err);

/* ------------------------------------------------------------------ tree */

/* Inode numbers, stable across mounts of the same dataset: the root is 1,
 * a file 2 + (its sample's global ordinal << 16 | its member number), a
 * directory the FNV-1a hash of its path with the top bit set. */
#define SK_MT_DIR_BIT (1ull << 63)
#define SK_MT_MAX_MEMBERS 1024u /* each member is checked against the ones before it */
#define SK_MT_MAX_ORDINAL (1ull << 46)

typedef struct sk_mt_dir {
    uint64_t ino;
    uint32_t parent;           /* dir id (the root is its own parent) */
    uint32_t name_off, name_len; /* the last component, in the arena */
    uint32_t path_off, path_len; /* the key prefix (without the shard's name), in the arena */
    int64_t shard;             /* --by-shard: the shard this dir's files come from; -1 any */
    uint32_t child, sibling;   /* first child dir, next sibling (UINT32_MAX: none) */
    uint32_t nchildren;
    size_t run_lo, run_hi;     /* its files: runs[run_lo .. run_hi) */
} sk_mt_dir;

typedef struct sk_mt_run {
    uint32_t dir;
    uint64_t start, end; /* global ordinals [start, end) */
} sk_mt_run;

typedef struct sk_mt_tree {
    sk_dataset *ds;
    int by_shard;
    sk_mt_dir *dirs;
    size_t ndirs, cap_dirs;
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *name_slots; /* (parent, name) -> dir id + 1, open addressing */
    uint32_t *ino_slots;  /* ino -> dir id + 1 */
    size_t slots;         /* power of two, both tables */
    sk_mt_run *runs;
    size_t nruns, cap_runs;
    uint64_t files, skipped;
    size_t nshards;       /* highest shard position seen + 1 */
    int64_t *mtimes;      /* per shard; INT64_MIN: not read yet */
    uint64_t *first;      /* per shard: its first sample served (UINT64_MAX: none) */
    pthread_mutex_t mu;   /* mtimes */
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
} sk_mt_tree;

/* Builds the tree: one pass over every sample's index record (no shard
 * byte read), members with unsafe names skipped with a warning naming the
 * shard and offset; a shard the index cannot serve at random refused. */
int sk_mt_build(sk_mt_tree *t, sk_dataset *ds, int by_shard, sk_error *err);
void sk_mt_free(sk_mt_tree *t);
/* The directory with this inode number, or NULL. */
const sk_mt_dir *sk_mt_dir_by_ino(const sk_mt_tree *t, uint64_t ino);
/* The child directory `name` of dir, or NULL. */
const sk_mt_dir *sk_mt_child(const sk_mt_tree *t, const sk_mt_dir *dir, const char *name, size_t n);
static inline const char *sk_mt_str(const sk_mt_tree *t, uint32_t off) { return t->arena + off; }

/* A file: its sample and member. */
typedef struct sk_mt_file {
    sk_hit hit;
    sk_member_ref m;
    uint32_t member;
} sk_mt_file;
/* Whether member i of the sample is served (safe name, not a duplicate
 * extension): 1 yes, 0 no.  In two steps for a walk of many members (a
 * listing): the sample's key once, then each member. */
int sk_mt_member_ok(const sk_hit *h, const sk_member_ref *m, uint32_t i, sk_dataset *ds);
int sk_mt_sample_ok(const sk_hit *h);
int sk_mt_member_ok_in(const sk_hit *h, const sk_member_ref *m, uint32_t i, sk_dataset *ds);
/* The file `name` in dir (lookup through the index, O(log n)): 0, or
 * SK_E_NOTFOUND, or another error. */
int sk_mt_find(sk_mt_tree *t, const sk_mt_dir *dir, const char *name, size_t n, sk_mt_file *f,
               sk_error *err);
/* The file with this inode number. */
int sk_mt_file_by_ino(sk_mt_tree *t, uint64_t ino, sk_mt_file *f, sk_error *err);
static inline uint64_t sk_mt_file_ino(uint64_t ordinal, uint32_t member)
{
    return 2 + ((ordinal << 16) | member);
}
/* The mtime of a shard's members: the mtime field of the ustar header
 * before the shard's first member, read once (pack writes one mtime in
 * every header, --mtime). */
int64_t sk_mt_shard_mtime(sk_mt_tree *t, size_t shard);
void sk_mt_warn(sk_mt_tree *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
