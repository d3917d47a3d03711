/*
 * serve.h - the parts of `shardkit serve` (the read-only web viewer):
 * libmicrohttpd opened on first use (mhd_libs.c), the server and its
 * rules for every response (serve.c), the pages (serve_pages.c) and the
 * bounded thumbnail cache (thumbs.c).  Internal to libshardkit.
 */
#ifndef SK_SERVE_H
#define SK_SERVE_H

#include "core/internal.h"
#include "tools/stats.h"

#include <microhttpd.h>
#include <pthread.h>

typedef struct sk_mhd_api {
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                       void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *d);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *d, enum MHD_DaemonInfoType t, ...);
    enum MHD_Result (*lookup_value_n)(struct MHD_Connection *c, enum MHD_ValueKind kind,
                                      const char *key, size_t key_size, const char **value,
                                      size_t *value_size);
    struct MHD_Response *(*response_from_buffer)(size_t size, void *buffer,
                                                 enum MHD_ResponseMemoryMode mode);
    enum MHD_Result (*add_header)(struct MHD_Response *r, const char *header, const char *content);
    enum MHD_Result (*queue_response)(struct MHD_Connection *c, unsigned int status,
                                      struct MHD_Response *r);
    void (*destroy_response)(struct MHD_Response *r);
} sk_mhd_api;
extern sk_mhd_api sk_mhd;
/* Opens libmicrohttpd once; an error names the library when it is missing. */
int sk_mhd_load(sk_error *err);

/* thumbs.c: thumbnails kept up to a byte bound, least recently used first out */
typedef struct sk_thumbs sk_thumbs;
int sk_thumbs_new(sk_thumbs **out, size_t max_bytes, sk_error *err);
void sk_thumbs_free(sk_thumbs *t);
/* A copy (malloc'd) of the thumbnail of (ordinal, member), or NULL. */
unsigned char *sk_thumbs_get(sk_thumbs *t, uint64_t ordinal, uint32_t member, size_t *len);
/* Keeps a copy of data; the oldest go when the bound is passed. */
void sk_thumbs_put(sk_thumbs *t, uint64_t ordinal, uint32_t member, const unsigned char *data,
                   size_t len);
/* Entries and bytes held, for the tests' bound check. */
void sk_thumbs_usage(sk_thumbs *t, size_t *entries, size_t *bytes);

/* The server's state, shared by the page handlers. */
typedef struct sk_srv {
    sk_dataset *ds;
    const char *name;
    sk_serve_options o;
    sk_thumbs *thumbs;
    pthread_mutex_t mu; /* the stats document, computed on first need */
    json_t *stats;
    int stats_rc;
    char stats_err[SK_ERROR_MAX];
} sk_srv;

/* What a handler answers: a status, a body (malloc'd, given to MHD), its
 * type, and for members a file name to download as. */
typedef struct sk_reply {
    unsigned status;
    char *body;
    size_t len;
    const char *type;
    char disposition[160];
    int cache; /* immutable bytes (members, thumbnails): may be cached */
} sk_reply;

/* Query parameter name (NULL when absent); *n its length (a %00 inside
 * is a byte of it, so a key with a NUL never matches a shorter one). */
typedef struct sk_query {
    struct MHD_Connection *c;
} sk_query;
const char *sk_q(const sk_query *q, const char *name, size_t *n);
/* A decimal parameter: 0 and *v set, -1 absent or not a plain number. */
int sk_q_u64(const sk_query *q, const char *name, uint64_t *v);

/* serve_pages.c: each fills r (status 404 for anything unknown). */
void sk_page_dataset(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_shard(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_sample(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_grid(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_search(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_member(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_thumb(sk_srv *s, const sk_query *q, sk_reply *r);
void sk_page_error(sk_reply *r, unsigned status, const char *msg);

#endif
