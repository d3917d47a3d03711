/*
 * libarchive.c - libarchive opened (dlopen, by its ABI soname) the first
 * time a reader is made, so that the processes that never need it (every
 * local plain or .tar.zst shard, `--version`, S3 lookups) do not load it
 * and the dozen libraries it links.  See libarchive.h.
 */
#include "format/libarchive.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define LA_SONAME "libarchive.so.13" /* the libarchive ABI since 3.0 */

sk_la_api sk_la;
static struct archive *(*read_new)(void);
static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[SK_ERROR_MAX] = "libarchive not loaded"; /* "" once loaded */

static void load(void)
{
    void *h = dlopen(LA_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load %s: %s", LA_SONAME, dlerror());
        return;
    }
    int bad = 0;
#define F(ptr, name)                                                                         \
    if (!bad && !(*(void **)&(ptr) = dlsym(h, name))) {                                      \
        snprintf(load_error, sizeof load_error, "%s: no symbol %s", LA_SONAME, name);      \
        bad = 1;                                                                             \
    }
    F(read_new, "archive_read_new");
    F(sk_la.read_free, "archive_read_free");
    F(sk_la.read_support_filter_all, "archive_read_support_filter_all");
    F(sk_la.read_support_format_all, "archive_read_support_format_all");
    F(sk_la.read_support_format_raw, "archive_read_support_format_raw");
    F(sk_la.read_support_format_tar, "archive_read_support_format_tar");
    F(sk_la.read_support_format_zip, "archive_read_support_format_zip");
    F(sk_la.read_support_format_7zip, "archive_read_support_format_7zip");
    F(sk_la.read_support_format_cpio, "archive_read_support_format_cpio");
    F(sk_la.read_open, "archive_read_open");
    F(sk_la.read_open_filename, "archive_read_open_filename");
    F(sk_la.read_next_header, "archive_read_next_header");
    F(sk_la.read_data, "archive_read_data");
    F(sk_la.error_string, "archive_error_string");
    F(sk_la.entry_filetype, "archive_entry_filetype");
    F(sk_la.entry_pathname, "archive_entry_pathname");
    F(sk_la.entry_pathname_utf8, "archive_entry_pathname_utf8");
    F(sk_la.entry_size, "archive_entry_size");
    F(sk_la.entry_size_is_set, "archive_entry_size_is_set");
    F(sk_la.read_support_filter_by_code, "archive_read_support_filter_by_code");
    F(sk_la.filter_bytes, "archive_filter_bytes");
    F(sk_la.read_header_position, "archive_read_header_position");
#undef F
    if (!bad) load_error[0] = 0;
}

int sk_la_new(struct archive **a, sk_error *err)
{
    *a = NULL;
    pthread_once(&once, load);
    SK_FAIL_IF(load_error[0], err, SK_E_IO, "%s", load_error);
    SK_FAIL_IF(!(*a = read_new()), err, SK_E_NOMEM, "out of memory");
    return SK_OK;
}

void sk_la_support_filters(struct archive *a)
{
    static const int codes[] = {ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_BZIP2, ARCHIVE_FILTER_COMPRESS,
                                ARCHIVE_FILTER_XZ,   ARCHIVE_FILTER_LZMA,  ARCHIVE_FILTER_LZIP,
                                ARCHIVE_FILTER_LZ4,  ARCHIVE_FILTER_ZSTD};
    for (size_t i = 0; i < SK_ARRAY_LEN(codes); i++)
        (void)sk_la.read_support_filter_by_code(a, codes[i]); /* one libarchive lacks: not offered */
}

