/*
 * store_remote.h - the object behind the S3 engine that the s3:// and
 * http(s):// stores share (store_remote.c).  Internal to lib/io.
 */
#ifndef SK_IO_STORE_REMOTE_H
#define SK_IO_STORE_REMOTE_H

#include "io/store.h"
#include "s3/s3_internal.h"

struct sk_remote {
    sk_store s;
    sk_s3 *client;      /* the caller's (S3) or the env's (plain HTTP) */
    char *bucket, *key; /* plain HTTP: "" and the whole URL */
    int have_head;
    uint64_t size;
    char etag[80];
    char crc32c[24];
};

/* Takes bucket and key (malloc'd) whatever happens. */
int sk_remote_new(sk_store **out, const char *url, sk_s3 *client, char *bucket, char *key,
                  sk_error *err);

#endif
