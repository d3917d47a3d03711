/*
 * s3_internal.h - what the S3 modules share and nothing outside them needs:
 * the client struct, one request as the engine sees it, the XML walker and
 * the blocking HTTP call used for credential endpoints.
 *
 * Threading: a client owns one engine thread that alone touches the curl
 * multi handle.  Callers queue requests with sk_s3_submit (any thread); the
 * engine signs each attempt (a fresh date after a backoff), sends it,
 * classifies the outcome, retries what is retryable and then calls the
 * request's done callback on the engine thread.
 */
#ifndef SK_S3_INTERNAL_H
#define SK_S3_INTERNAL_H

#include "core/internal.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdint.h>

/* s3_libs.c: libcurl and libcrypto, opened on first use (not linked), so
 * that a process that never touches S3 does not load them.  Load before
 * the first sk_curl call: sk_s3_new, sk_http_fetch and the signer do; the
 * digests load by themselves.  SK_E_IO names the library that failed. */
int sk_s3_libs_load(sk_error *err);
typedef struct sk_curl_api {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLcode (*easy_perform)(CURL *);
    void (*easy_cleanup)(CURL *);
    void (*easy_reset)(CURL *);
    CURLcode (*easy_pause)(CURL *, int bitmask);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *, CURLMoption, ...);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *running);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd extra[], unsigned n, int timeout_ms,
                            int *ret);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *left);
    CURLMcode (*multi_cleanup)(CURLM *);
} sk_curl_api;
extern sk_curl_api sk_curl;
/* tls_trust.c: peer and host name checks on for c, against the CA bundle
 * the environment names (AWS_CA_BUNDLE for an S3 endpoint, CURL_CA_BUNDLE,
 * SSL_CERT_FILE, SSL_CERT_DIR), else libcurl's default store.  Set after
 * every curl_easy_reset. */
void sk_curl_trust(CURL *c, int s3_endpoint);
/* SK_E_IO naming the variable and the file when the bundle it names cannot
 * be read (checked when a client is made, not on every request). */
int sk_curl_trust_check(int s3_endpoint, sk_error *err);
void sk_s3_sha256(const void *data, size_t len, unsigned char out[32]);
void sk_s3_md5(const void *data, size_t len, unsigned char out[16]);
/* The same over bytes given in pieces: begin (NULL when out of memory),
 * add any number of times, end (frees the context). */
void *sk_s3_md5_begin(void);
void sk_s3_md5_add(void *ctx, const void *data, size_t len);
void sk_s3_md5_end(void *ctx, unsigned char out[16]);
void sk_s3_hmac_sha256(const void *key, size_t klen, const void *msg, size_t len,
                       unsigned char out[32]);

/* Walks an XML document: cb gets every element start (end = 0, text NULL)
 * and end (end = 1, with the element's own text). */
typedef void (*sk_s3_xml_cb)(void *ud, int end, const char *name, const char *text);
int sk_s3_xml_parse(const char *buf, size_t len, sk_s3_xml_cb cb, void *ud, sk_error *err);
/* The <Code> and <Message> of an S3 error document, "" when absent. */
void sk_s3_xml_error(const char *buf, size_t len, char *code, size_t code_cap, char *msg,
                     size_t msg_cap);
/* Escapes &, <, > for element text. */
int sk_s3_xml_escape(sk_buf *b, const char *s);

/* RFC 3986 encoding as SigV4 wants it; keep_slash leaves '/' alone (paths). */
int sk_s3_uri_encode(sk_buf *b, const char *s, int keep_slash);

/* One blocking HTTP request for the credential endpoints (container, IMDS).
 * headers: NULL-terminated "Name: value" list.  Never logs. */
int sk_http_fetch(const char *method, const char *url, const char *const *headers,
                  long timeout_ms, sk_buf *out, long *status, sk_error *err);

/* ---- credentials that renew themselves (creds.c) */

/* As sk_creds_load; *expires is the credentials' Expiration in seconds since
 * the epoch, 0 when they do not expire (or say nothing). */
int sk_creds_load_exp(sk_creds *out, const char *profile, int64_t *expires, sk_error *err);
/* An ISO 8601 time ("2026-11-22T01:02:03Z") as seconds since the epoch, 0
 * when it is not one. */
int64_t sk_creds_parse_time(const char *s);

/* A client's credentials.  Loaded ones are fetched anew shortly before they
 * expire (see creds.c); given ones are used as they are.  Thread-safe. */
typedef struct sk_creds_provider {
    pthread_mutex_t mu;
    sk_creds cur;
    int64_t expires;   /* 0: never */
    int64_t next_try;  /* after a failed refresh, not before this time */
    int refreshable;   /* loaded through the chain (not given by the caller) */
    char *profile;
    int verbose;
    uint64_t refreshes;
    char last_err[256]; /* why the last fetch failed (names a URL, never a secret) */
} sk_creds_provider;
/* given NULL: load for profile (sk_creds_load's rules); else copy given. */
int sk_creds_provider_init(sk_creds_provider *p, const sk_creds *given, const char *profile,
                           int verbose, sk_error *err);
/* The current credentials, refreshed first when their expiration is near,
 * with p locked until sk_creds_provider_unlock; NULL (and not locked) when
 * they have expired and could not be refreshed. */
const sk_creds *sk_creds_provider_lock(sk_creds_provider *p, sk_error *err);
void sk_creds_provider_unlock(sk_creds_provider *p);
void sk_creds_provider_release(sk_creds_provider *p);

#define SK_S3_MAX_HDRS 8

typedef struct sk_s3_req sk_s3_req;
typedef void (*sk_s3_done_fn)(sk_s3_req *r);

struct sk_s3_req {
    /* --- set by the caller before sk_s3_submit */
    sk_s3 *s3;
    const char *method;           /* "GET", "PUT", "POST", "HEAD", "DELETE" */
    const char *bucket, *key;     /* kept alive by the caller; key may be "" */
    char query[6400];             /* encoded, "partNumber=2&uploadId=..."; a 1,024-byte
                                     key (start-after) and prefix, each percent-encoded */
    char hdrs[SK_S3_MAX_HDRS][320]; /* extra headers, lowercase names */
    int nhdrs;
    const unsigned char *body;    /* request body, body_len bytes... */
    size_t body_len;
    int body_from_fd;             /* ...or body_len bytes of body_fd from body_fd_off,
                                     read straight into curl's send buffer (never
                                     with a signed payload: there is no buffer to hash) */
    int body_fd;
    uint64_t body_fd_off;
    int body_signed;              /* hash the body even without sign_payload */
    unsigned char *dst;           /* response body into a caller buffer... */
    size_t dst_cap;
    sk_s3_sink sink;              /* ...or to a callback... */
    void *sink_ud;                /* ...else into resp */
    int check_body_error;         /* a 200 may carry <Error> (Complete, Copy) */
    /* ...or, for a streaming GET, to push: it takes all n bytes (returns
     * 0), or none (SK_S3_PUSH_PAUSE: the engine pauses the transfer until
     * sk_s3_req_resume), or stops it (anything else).  The engine sends the
     * range itself, from range_off + delivered, so that a retry resumes
     * where the last attempt stopped instead of fetching everything again. */
    int (*push)(void *ud, const void *p, size_t n);
    void *push_ud;
    uint64_t range_off, range_len; /* range_len 0: to the end */
    sk_s3_done_fn done;
    void *ud;
    /* --- results */
    long status;
    int rc;
    sk_error err;
    sk_buf resp;
    size_t dst_len;
    char etag[80];
    char crc32c[24];
    char meta_etag[80]; /* x-amz-meta-shardkit-etag (shardkit's index objects) */
    uint64_t content_length;
    int has_length;
    /* --- engine private */
    CURL *easy;
    struct curl_slist *hl;
    size_t body_off;
    int body_errno;   /* reading body_fd failed (errno; -1: the file shrank) */
    uint64_t delivered, skip; /* for sinks: bytes given out, bytes to drop */
    int attempt;
    uint64_t not_before_ms;
    int sink_stopped;
    int finished;
    int paused;        /* push said pause; the transfer is paused (engine thread only) */
    int body_seen;     /* this attempt's first body byte came (push) */
    int resume_queued; /* on the client's resume list (under mu) */
    int cancel;        /* sk_s3_req_cancel was called (under mu) */
    int ended;         /* done is about to run or ran: never queue it again (under mu) */
    char first_etag[80]; /* the ETag the first bytes came with: a resume must match it */
    int ranged;        /* plain HTTP: a Range was sent, so only a 206 is an answer */
    int refused;       /* plain HTTP: the body was refused (SK_HTTP_*) */
    char errbuf[CURL_ERROR_SIZE]; /* curl's words for a failed attempt (a TLS check: which) */
    sk_s3_req *resume_next;
    sk_s3_req *next;
    char url[10240]; /* the host, a 1,024-byte key percent-encoded, the query */
};

struct sk_s3 {
    char scheme[8];
    char host[256];      /* host[:port] as in the endpoint URL */
    char base[300];      /* scheme://host */
    char region[64];
    int path_style;
    int concurrency, max_attempts, read_timeout, sign_payload, verbose;
    int retry_notice, retry_told; /* sk_s3_config.retry_notice; the notice was given */
    long low_speed_limit; /* bytes/s over read_timeout seconds, or the transfer is retried */
    sk_creds_provider creds;
    /* engine */
    CURLM *multi;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    sk_s3_req *q_head, *q_tail; /* waiting to start (incl. backoff) */
    int inflight, pending, stop;
    CURL *pool[64];
    int npool;
    /* Paused streaming GETs do not count against concurrency: a consumer
     * that is slow to drain one stream must not keep others from starting
     * (the reader's current shard behind its paused prefetches). */
    int npaused;
    sk_s3_req *resume_head; /* resumes and cancels for the engine thread */
    uint64_t n_requests, n_retries;
    unsigned rng;
    int plain; /* a client for plain http(s):// URLs (http_client.c): a request's
                  key is its whole URL; no signature, redirects followed */
};

/* Queues r (its done callback runs on the engine thread). */
void sk_s3_submit(sk_s3_req *r);
/* Queues r and waits for it; returns r->rc. */
int sk_s3_run(sk_s3_req *r);
/* Resets a request's results so it can be filled and sent again. */
void sk_s3_req_reset(sk_s3_req *r);
/* Adds an extra header "name: value". */
void sk_s3_req_header(sk_s3_req *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
uint64_t sk_s3_now_ms(void);
/* One header line of a response as curl hands it ("Name: value\r\n", or a
 * status line): the ETag, CRC32C, shardkit ETag and Content-Length into
 * r's results (s3_resp.c). */
void sk_s3_header_line(sk_s3_req *r, const char *p, size_t len);

#define SK_S3_PUSH_PAUSE 1
/* Any thread: asks the engine thread to unpause r's transfer (curl allows
 * curl_easy_pause only there); harmless when r is not paused. */
void sk_s3_req_resume(sk_s3_req *r);
/* Any thread: ends r soon, queued or in flight (rc SK_E_IO); its done
 * callback still runs, once, on the engine thread. */
void sk_s3_req_cancel(sk_s3_req *r);

/* The S3 endpoint the config file (AWS_CONFIG_FILE, ~/.aws/config) gives
 * profile (NULL: AWS_PROFILE, else "default") into out ("" when none): the
 * s3 endpoint_url of the [services NAME] section the profile names, else
 * the profile's endpoint_url.  1 when the profile sets
 * ignore_configured_endpoint_urls = true (out is then ""), else 0. */
int sk_creds_config_endpoint(const char *profile, char *out, size_t cap);

/* ---- plain HTTP(S) through the same engine (http_client.c) */

/* A client for http(s):// URLs is an sk_s3 made with http_only
 * (io/store_open.c makes one): the engine, its retries, timeouts and
 * bounds, but no credentials and no signature; these are its hooks. */
/* Engine: an attempt's URL and headers (no signature). */
int sk_http_build(sk_s3_req *r);
/* Engine: the curl options a plain request adds (redirects, bounded). */
void sk_http_setopts(sk_s3_req *r, CURL *c);
/* Engine: whether a 2xx body may be taken (0), else why not (SK_HTTP_*). */
#define SK_HTTP_RANGE_IGNORED 1 /* 200 to a ranged GET: the whole file */
#define SK_HTTP_TOO_LONG 2      /* more bytes than the range asked for */
int sk_http_body_check(sk_s3_req *r, long code);
/* Engine: an attempt's fate once over (see classify): 0 done, 1 retry. */
int sk_http_classify(sk_s3_req *r);

/* One page (up to 1,000 objects, in key order) of the listing of prefix
 * that begins after the key start_after (NULL or "": from the start);
 * *truncated: more follow.  A merge-walk's step (upload_sync.c). */
int sk_s3_list_page(sk_s3 *s3, const char *bucket, const char *prefix, const char *start_after,
                    sk_s3_list_fn fn, void *ud, int *truncated, sk_error *err);

#endif

/* ---- multipart pieces shared by s3_ops.c and the transfers (s3_xfer*.c, s3_writer.c) */
typedef struct sk_s3_part {
    int number;
    uint64_t size;
    char etag[80];
    char crc32c[24];
} sk_s3_part;
/* A request for bucket/key with the common fields set. */
void sk_s3_req_init(sk_s3_req *r, sk_s3 *s3, const char *method, const char *bucket,
                    const char *key);
/* Appends "&name=value" (value encoded) to r->query. */
void sk_s3_req_query(sk_s3_req *r, const char *name, const char *value);
int sk_s3_mpu_create(sk_s3 *s3, const char *bucket, const char *key, char *upload_id,
                     size_t cap, sk_error *err);
/* Fills r (not sent) with a CompleteMultipartUpload; body is kept in *body. */
int sk_s3_mpu_complete_req(sk_s3_req *r, sk_s3 *s3, const char *bucket, const char *key,
                           const char *upload_id, const sk_s3_part *parts, int n,
                           sk_buf *body);
/* Every part of an upload; *parts is malloc'd, sorted by number. */
int sk_s3_mpu_list_parts(sk_s3 *s3, const char *bucket, const char *key, const char *upload_id,
                         sk_s3_part **parts, int *n, sk_error *err);
/* A PUT as sk_s3_put that also stores meta_etag (when not NULL) as the
 * object's x-amz-meta-shardkit-etag: an index object records the ETag of
 * the shard it was built from, so --resume can compare without a read. */
int sk_s3_put_meta(sk_s3 *s3, const char *bucket, const char *key, const void *data, size_t len,
                   const char *meta_etag, sk_error *err);
/* sk_s3_head, and that metadata ("" when none) into meta (cap bytes). */
int sk_s3_head_meta(sk_s3 *s3, const char *bucket, const char *key, sk_s3_object *out, char *meta,
                    size_t cap, sk_error *err);
/* The composite checksum S3 reports for a multipart object: CRC32C over
 * the parts' big-endian CRC32Cs, base64, "-N". */
void sk_s3_composite_crc(const uint32_t *crcs, int n, char out[24]);
