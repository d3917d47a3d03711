/*
 * internal.h - the core layer: helpers every module of libshardkit shares
 * (errors, allocation, byte order, hashing, file writes).  Never installed.
 *
 * The error macros keep failure paths to one line, in the manner of zstd's
 * RETURN_ERROR_IF and s2n's GUARD: every failure both sets the caller's
 * sk_error and returns its code.
 */
#ifndef SK_INTERNAL_H
#define SK_INTERNAL_H

#include "shardkit.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

/* Fail with code and a formatted message when cond holds. */
#define SK_FAIL_IF(cond, err, code, ...)                                     \
    do {                                                                     \
        if (cond) return sk_error_set((err), (code), __VA_ARGS__);           \
    } while (0)

/* Propagate a failure from a call that already set the error. */
#define SK_GUARD(call)                                                       \
    do {                                                                     \
        int sk_guard_rc_ = (call);                                           \
        if (sk_guard_rc_) return sk_guard_rc_;                               \
    } while (0)

#define SK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* "s3://" begins s, in any case (RFC 3986: a scheme is case-insensitive;
 * "S3://b/k" is the object, never a local folder "S3:").  The lib/io and
 * lib/s3 layers' test; the jobs ask the store (sk_store_classify). */
static inline int sk_is_s3_url(const char *s)
{
    return s && !strncasecmp(s, "s3://", 5);
}

/* Allocation that reports exhaustion through sk_error instead of crashing. */
void *sk_xmalloc(size_t n, sk_error *err);
void *sk_xrealloc(void *p, size_t n, sk_error *err);
/* Grows the array *p of *cap elements of unit bytes to hold at least need
 * (capacity doubles from 64); *p and *cap are kept on failure (core/buf.c). */
int sk_grow(void **p, size_t *cap, size_t need, size_t unit, sk_error *err);

/* A growable byte buffer, always NUL-terminated once anything is added;
 * zero-initialise it.  sk_buf_add returns SK_E_NOMEM (no message) on
 * exhaustion. */
typedef struct sk_buf {
    char *p;
    size_t len, cap;
} sk_buf;
int sk_buf_add(sk_buf *b, const void *p, size_t n);
void sk_buf_free(sk_buf *b);

/* Little-endian stores and loads for the on-disk formats. */
static inline void sk_put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static inline void sk_put_le64(unsigned char *p, uint64_t v)
{
    sk_put_le32(p, (uint32_t)v);
    sk_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint32_t sk_get_le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}
static inline uint64_t sk_get_le64(const unsigned char *p)
{
    return (uint64_t)sk_get_le32(p) | (uint64_t)sk_get_le32(p + 4) << 32;
}

/* FNV-1a 64 of n bytes: the hash of keys in the tables of catalog.c and
 * reshard.c, and the first step of part.c's partition hash. */
static inline uint64_t sk_fnv1a64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* error.c: formats a warning (at most SK_ERROR_MAX + 128 bytes) and hands
 * it to warn(ctx, msg); returns 0 when warn is NULL (nothing said), else 1. */
int sk_vwarnf(void (*warn)(void *, const char *), void *ctx, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* options.c: the size rule of the public options structs (struct_size
 * first).  take copies the caller's src (NULL: none) over defaults (NULL:
 * zeros) into dst, the library's own struct of dst_size bytes, refusing a
 * struct_size it does not know; what names the struct in that error. */
int sk_options_take(void *dst, size_t dst_size, const void *src, const void *defaults,
                    const char *what, sk_error *err);
/* The body of every sk_*_init_sized: the defaults, cut to the caller's size. */
void sk_options_init(void *o, size_t size, const void *defaults, size_t dsize);

/* path.c: the one way untrusted bytes (member names, index keys and
 * extensions, manifest URLs, S3 keys) become a local path. */
#define SK_NAME_MAX 4096
#define SK_NAME_COMPONENT_MAX 255
/* SK_OK when name[0..len) is a safe relative path (no leading '/', no "..",
 * "." or empty component, no NUL byte, within the length limits); else
 * SK_E_CORRUPT with what (e.g. "index key") and the reason. */
int sk_name_check(const char *name, size_t len, const char *what, sk_error *err);
/* SK_OK when an extension holds no '/' nor NUL and fits. */
int sk_ext_check(const char *ext, size_t len, const char *what, sk_error *err);
/* GNU tar's rule for a foreign member name: *skip = the bytes of leading
 * '/', "./" and "../" to drop; returns 1 when a '/' or "../" is dropped
 * (worth a warning), 0 otherwise, -1 when a ".." remains further in (the
 * member is skipped). */
int sk_name_strip(const char *name, size_t len, size_t *skip);

/* path.c: path as a manifest in dir names it (docs/format.md: relative
 * to the manifest's directory): the part under dir when it lies there by
 * name, else through the real directories ("../out/s-000.tar"); a URL is
 * relative only under dir's prefix.  -1 when it does not fit cap. */
int sk_path_rel(const char *path, const char *dir, char *buf, size_t cap);

/* fileid.c: the files a run reads, by identity (device, inode), so that
 * none of its outputs is written over one.  Zero-initialise; names are
 * not copied (they must outlive the set). */
struct sk_fileid;
typedef struct sk_fileids {
    struct sk_fileid *v;
    size_t n, cap;
    int sorted;
} sk_fileids;
/* Adds the file at path (links followed); "-", a URL or a missing file is
 * no local input and is left out. */
int sk_fileids_add(sk_fileids *s, const char *path, sk_error *err);
/* The name of the input that path is (the same file), or NULL. */
const char *sk_fileids_find(sk_fileids *s, const char *path);
/* SK_E_USAGE naming output, what it is ("--wids", "the manifest") and the
 * input, when output is one of the inputs; checked before anything is
 * written. */
int sk_fileids_refuse(sk_fileids *s, const char *output, const char *what, sk_error *err);
void sk_fileids_free(sk_fileids *s);

/* fsutil.c */
/* A private scratch file with no name: in dir (NULL or "": $TMPDIR, else
 * /tmp), O_TMPFILE where the file system has it, else mkstemp and an
 * unlink at once -- nothing is left behind, even by a killed run.  Returns
 * the fd, or -1 with err naming the directory and what it was for. */
int sk_scratch_fd(const char *dir, const char *what, sk_error *err);
int sk_write_all(int fd, const void *buf, size_t n, const char *path, sk_error *err);
/* Writes every buffer of iov in order (writev, resumed after short writes);
 * iov is consumed. */
struct iovec;
int sk_writev_all(int fd, struct iovec *iov, int iovcnt, const char *path, sk_error *err);
/* Steps *iov / *iovcnt past n bytes a writev or pwritev just wrote. */
void sk_iov_advance(struct iovec **iov, int *iovcnt, size_t n);
/* ".NAME.PID.N.tmp" beside path: unique to this process and call. */
char *sk_tmp_name_unique(const char *path, sk_error *err);
/* Takes ".NAME.lock" beside output (a run's manifest: the one file every
 * pack or shard run owns) with flock, so that two runs writing the same
 * dataset cannot mix their shards: a second fails at once, naming the
 * first (the lock file holds "pid N: shardkit WHAT"); --part runs, whose
 * manifests differ, share a directory freely.  A killed run's lock goes
 * with its process, and its temporary files (".NAME.PID.N.tmp" of a PID no
 * longer running) are removed.  *fd is the lock, for sk_out_unlock. */
int sk_out_lock(const char *output, const char *what, int *fd, sk_error *err);
void sk_out_unlock(const char *output, int fd);
/* sk_out_open with flags: SK_OUT_REGULAR for a name shardkit chose itself
 * (an index sidecar, a manifest, a shard): it must be a regular file or
 * nothing; a link, FIFO or device there is refused, never written through.
 * Without it (a name the user gave) a device or FIFO is written in place,
 * opened without blocking.  Errors name path, never the temporary name. */
#define SK_OUT_REGULAR 0x100u
int sk_out_open_as(sk_out **out, const char *path, unsigned flags, sk_error *err);
/* SK_OK when path is a regular file or nothing (lstat: a link is not);
 * else SK_E_USAGE naming it and what it is.  For a name a run will write
 * later, checked before anything is written. */
int sk_out_check_regular(const char *path, sk_error *err);
/* Creates path (O_EXCL, O_NOFOLLOW, mode 0644) for writing: the fd, or -1
 * with err naming shown (the user's name for a temporary file; NULL: path). */
int sk_create_excl(const char *path, const char *shown, sk_error *err);
/* "a FIFO", "a symbolic link"...: the kind of a file of mode st_mode. */
const char *sk_file_kind(unsigned mode);
/* Writes a whole file at path through sk_out (shardkit.h): a temporary
 * name renamed on success, a device or FIFO written in place, an existing
 * file untouched on failure; flags as sk_out_open_as.  iov is consumed. */
int sk_out_write_iov(const char *path, unsigned flags, struct iovec *iov, int iovcnt, sk_error *err);
/* mkdir -p. */
int sk_mkdirs(const char *dir, sk_error *err);
/* The directory part of path: "." when it has none, "/" for the root;
 * caller frees (NULL when out of memory). */
char *sk_dir_of(const char *path);
/* 1 when path, or the nearest of its ancestors that exists, is dir or lies
 * below it (by file identity: links and "." or ".." spellings included). */
int sk_path_within(const char *path, const char *dir);

#endif /* SK_INTERNAL_H */
