/*
 * libarchive.h - libarchive, opened on first use (libarchive.c).  Linked
 * at build time it brings a dozen libraries (XML, ICU and its 30 MB of
 * data, the C++ runtime, every compressor) into every process, though only
 * compressed shards other than .tar.zst and archives given to pack need
 * it.  Users include this instead of <archive.h>, open a reader with
 * sk_la_new (which loads the library the first time) and call the rest
 * through sk_la.  Never installed.
 */
#ifndef SK_LIBARCHIVE_H
#define SK_LIBARCHIVE_H

#include "core/internal.h"

#include <archive.h>
#include <archive_entry.h>

typedef struct sk_la_api {
    int (*read_free)(struct archive *);
    int (*read_support_filter_all)(struct archive *);
    int (*read_support_format_all)(struct archive *);
    int (*read_support_format_raw)(struct archive *);
    int (*read_support_format_tar)(struct archive *);
    int (*read_support_format_zip)(struct archive *);
    int (*read_support_format_7zip)(struct archive *);
    int (*read_support_format_cpio)(struct archive *);
    int (*read_open)(struct archive *, void *ctx, archive_open_callback *,
                     archive_read_callback *, archive_close_callback *);
    int (*read_open_filename)(struct archive *, const char *name, size_t block);
    int (*read_next_header)(struct archive *, struct archive_entry **);
    la_ssize_t (*read_data)(struct archive *, void *, size_t);
    const char *(*error_string)(struct archive *);
    __LA_MODE_T (*entry_filetype)(struct archive_entry *);
    const char *(*entry_pathname)(struct archive_entry *);
    const char *(*entry_pathname_utf8)(struct archive_entry *);
    la_int64_t (*entry_size)(struct archive_entry *);
    int (*entry_size_is_set)(struct archive_entry *);
    int (*read_support_filter_by_code)(struct archive *, int);
    la_int64_t (*filter_bytes)(struct archive *, int);
    la_int64_t (*read_header_position)(struct archive *);
} sk_la_api;
extern sk_la_api sk_la;

/* A new libarchive reader in *a, loading the library the first time;
 * SK_E_IO naming the library when it cannot be loaded. */
int sk_la_new(struct archive **a, sk_error *err);

/* Enables on a the compression filters shards are read through: every one
 * libarchive decodes in its own process (gzip, bzip2, compress, xz, lzma,
 * lzip, lz4, zstd), none that runs an external program.  sk_stream_detect
 * (shard_stream.c) knows each of them by its first bytes, as libarchive's
 * bidders do. */
void sk_la_support_filters(struct archive *a);

#endif
