/*
 * urls_int.h - what the modules of `pack --from-urls` share: one row of the
 * list on its way from the downloader to the shard (pack_urls.c drives,
 * urls_row.c turns a downloaded body into a sample's members and every
 * row into its status line).  Internal to libshardkit.
 */
#ifndef SK_PACK_URLS_INT_H
#define SK_PACK_URLS_INT_H

#include "core/internal.h"
#include "format/image.h"

enum { URL_OK = 0, URL_FAILED_DOWNLOAD, URL_FAILED_RESIZE };
enum { HASH_NONE, HASH_SHA256, HASH_MD5 };

/* A row of the list, copied out of the reader (its pointers last only
 * until the next row), and what became of it. */
typedef struct sk_url_item {
    uint64_t row, shard;
    char key[48];
    char *url, *caption; /* NUL-terminated copies; caption NULL when none */
    size_t url_len, caption_len;
    char **extra;        /* the saved columns, then the hash column (NULL: absent) */
    size_t *extra_len;
    /* the outcome */
    int status;          /* URL_* */
    char error[256];     /* "" when status is URL_OK */
    long http;
    uint64_t bytes;
    double ms;
    sk_buf body;         /* the bytes downloaded */
    unsigned char *img;  /* the image member: body.p or out (resized) */
    size_t img_len;
    unsigned char *out;  /* malloc'd by the resize, or NULL */
    char *json;          /* the .json member (malloc'd) */
    size_t json_len;
} sk_url_item;

/* What every row's processing reads, the same for the whole run. */
typedef struct sk_url_job {
    const sk_image_options *images; /* active: resize; else a header check */
    sk_image_options check;         /* the header check's options */
    sk_image_budget *budget;
    int hash;                       /* HASH_* */
    const char *const *save;        /* the saved columns' names */
    size_t nsave;
    int verify;                     /* the last extra column holds the expected hash */
    int has_caption;
} sk_url_job;

/* The downloaded body -> the image member (checked, resized as asked),
 * the hash, the .json member; a failure is the item's status and error.
 * An error only when the machine fails (out of memory). */
int sk_url_item_process(const sk_url_job *j, sk_url_item *it, sk_error *err);
/* The item's line of the shard's status file, appended to out (with its
 * newline). */
int sk_url_item_status(const sk_url_item *it, sk_buf *out, sk_error *err);
/* The status's name in status files: "success", "failed_to_download",
 * "failed_to_resize" (img2dataset's). */
const char *sk_url_status_name(int status);
/* Frees what the item holds and zeroes it. */
void sk_url_item_clear(sk_url_item *it, size_t nextra);

#endif
