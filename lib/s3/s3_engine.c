/*
 * s3_engine.c - the client and its request engine: one thread per client
 * drives a libcurl multi handle (connections are kept and reused across
 * requests), starts at most `concurrency` requests at a time, signs each
 * attempt, and retries what S3 says is worth retrying (500, 502, 503, 504,
 * SlowDown, RequestTimeout, InternalError, resets, stalls) with exponential
 * backoff and full jitter up to max_attempts.  Other 4xx answers fail at once
 * with an explanation, so a wrong key gives one clear error, not a storm.
 */
#include "s3/s3_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

uint64_t sk_s3_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

const char *sk_s3_endpoint(const sk_s3 *s3) { return s3->base; }

void sk_s3_stats(const sk_s3 *s3, uint64_t *requests, uint64_t *retries)
{
    sk_s3 *m = (sk_s3 *)s3;
    pthread_mutex_lock(&m->mu);
    if (requests) *requests = m->n_requests;
    if (retries) *retries = m->n_retries;
    pthread_mutex_unlock(&m->mu);
}

int sk_s3_parse_url(const char *url, char **bucket, char **key, sk_error *err)
{
    SK_FAIL_IF(!sk_is_s3_url(url) || !url[5] || url[5] == '/', err, SK_E_USAGE,
               "%s: not an s3://bucket/key URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    *bucket = slash ? strndup(b, (size_t)(slash - b)) : strdup(b);
    *key = strdup(slash ? slash + 1 : "");
    SK_FAIL_IF(!*bucket || !*key, err, SK_E_NOMEM, "out of memory");
    return 0;
}

void sk_s3_req_reset(sk_s3_req *r)
{
    r->status = 0, r->rc = 0, r->err.code = 0, r->err.msg[0] = 0;
    r->resp.len = 0;
    r->dst_len = 0, r->etag[0] = 0, r->crc32c[0] = 0, r->content_length = 0, r->has_length = 0;
    r->meta_etag[0] = 0;
    r->body_off = 0, r->delivered = 0, r->skip = 0, r->attempt = 0, r->not_before_ms = 0;
    r->sink_stopped = 0, r->finished = 0, r->next = NULL;
    r->paused = 0, r->body_seen = 0, r->first_etag[0] = 0;
}

void sk_s3_req_header(sk_s3_req *r, const char *fmt, ...)
{
    if (r->nhdrs >= SK_S3_MAX_HDRS) abort(); /* a programming error, never input */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->hdrs[r->nhdrs++], sizeof r->hdrs[0], fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ callbacks */

static size_t on_read(char *buf, size_t sz, size_t n, void *ud)
{
    sk_s3_req *r = ud;
    size_t left = r->body_len - r->body_off, k = sz * n < left ? sz * n : left;
    if (!r->body_from_fd) {
        memcpy(buf, r->body + r->body_off, k);
        r->body_off += k;
        return k;
    }
    /* A file body goes from the page cache straight into curl's buffer: no
     * part-sized copy in between (the producer read it once for its CRC32C
     * moments ago, so this is a cache hit, not disk I/O on the engine). */
    size_t got = 0;
    while (got < k) {
        ssize_t m = pread(r->body_fd, buf + got, k - got, (off_t)(r->body_fd_off + r->body_off + got));
        if (m < 0 && errno == EINTR) continue;
        if (m <= 0) {
            r->body_errno = m < 0 ? errno : -1;
            return CURL_READFUNC_ABORT;
        }
        got += (size_t)m;
    }
    r->body_off += got;
    return got;
}

/* A retry re-sends the body from its start. */
static int on_seek(void *ud, curl_off_t off, int origin)
{
    sk_s3_req *r = ud;
    if (origin != SEEK_SET || off < 0 || (size_t)off > r->body_len) return CURL_SEEKFUNC_FAIL;
    r->body_off = (size_t)off;
    return CURL_SEEKFUNC_OK;
}

/* A streaming GET's body.  The bytes of one call are pushed whole or not at
 * all: after CURL_WRITEFUNC_PAUSE libcurl hands the same bytes again on
 * unpause, so nothing here may change before push has taken them. */
static size_t on_push(sk_s3_req *r, char *p, size_t len, long code)
{
    if (r->s3->plain && r->range_len && len && r->delivered >= r->range_len)
        return r->refused = SK_HTTP_TOO_LONG, 0; /* an endless body */
    if (!r->body_seen) {
        r->body_seen = 1;
        /* A server that ignores Range answers 200 with the whole object:
         * skip to where this attempt should begin. */
        r->skip = code == 206 ? 0 : r->range_off + r->delivered;
        if (!r->first_etag[0]) snprintf(r->first_etag, sizeof r->first_etag, "%s", r->etag);
    }
    size_t off = r->skip < len ? (size_t)r->skip : len, k = len - off;
    if (r->range_len && k > r->range_len - r->delivered) k = (size_t)(r->range_len - r->delivered);
    if (k) {
        int v = r->push(r->push_ud, p + off, k);
        if (v == SK_S3_PUSH_PAUSE) {
            r->paused = 1;
            pthread_mutex_lock(&r->s3->mu);
            r->s3->npaused++;
            pthread_mutex_unlock(&r->s3->mu);
            return CURL_WRITEFUNC_PAUSE;
        }
        if (v) {
            r->sink_stopped = 1;
            return 0;
        }
        r->delivered += k;
    }
    r->skip -= off;
    return len;
}

static size_t on_write(char *p, size_t sz, size_t n, void *ud)
{
    sk_s3_req *r = ud;
    size_t len = sz * n;
    long code = 0;
    sk_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (r->s3->plain && code >= 200 && code < 300 && (r->refused = sk_http_body_check(r, code)))
        return 0;
    if (code < 200 || code >= 300 || (!r->dst && !r->sink && !r->push)) {
        if (r->resp.len + len > (64u << 20)) return 0;
        return sk_buf_add(&r->resp, p, len) ? 0 : len;
    }
    if (r->push) return on_push(r, p, len, code);
    if (r->dst) {
        if (r->dst_len + len > r->dst_cap) return 0;
        memcpy(r->dst + r->dst_len, p, len);
        r->dst_len += len;
        return len;
    }
    /* A sink after a retry: drop what was already delivered. */
    size_t off = 0;
    if (r->skip) {
        off = r->skip < len ? (size_t)r->skip : len;
        r->skip -= off;
    }
    if (off < len) {
        if (r->sink(r->sink_ud, p + off, len - off)) {
            r->sink_stopped = 1;
            return 0;
        }
        r->delivered += len - off;
    }
    return len;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    sk_s3_header_line(ud, p, sz * n); /* s3_resp.c */
    return sz * n;
}

/* --------------------------------------------------------------- start */

static int build_and_sign(sk_s3 *s3, sk_s3_req *r)
{
    sk_buf path = {0}, hostb = {0};
    int rc = 0;
    if (s3->plain) return sk_http_build(r);
    if (s3->path_style) {
        sk_buf_add(&hostb, s3->host, strlen(s3->host));
        sk_buf_add(&path, "/", 1);
        if (r->bucket && *r->bucket) {
            sk_s3_uri_encode(&path, r->bucket, 0);
            sk_buf_add(&path, "/", 1);
        }
    } else {
        if (r->bucket && *r->bucket) {
            sk_buf_add(&hostb, r->bucket, strlen(r->bucket));
            sk_buf_add(&hostb, ".", 1);
        }
        sk_buf_add(&hostb, s3->host, strlen(s3->host));
        sk_buf_add(&path, "/", 1);
    }
    if (r->key) sk_s3_uri_encode(&path, r->key, 1);
    if (!path.p || !hostb.p) {
        rc = SK_E_NOMEM;
        goto out;
    }
    snprintf(r->url, sizeof r->url, "%s://%s%s%s%s", s3->scheme, hostb.p, path.p,
             r->query[0] ? "?" : "", r->query);

    char date[20], hash[65];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y%m%dT%H%M%SZ", &tm);
    if ((r->body_signed || s3->sign_payload) && r->body_from_fd) {
        rc = sk_error_set(&r->err, SK_E_USAGE, "a file body cannot be signed"); /* a programming error */
        goto out;
    }
    if (r->body_signed || s3->sign_payload) sk_s3_sha256_hex(r->body ? (const void *)r->body : "", r->body_len, hash);
    else snprintf(hash, sizeof hash, "UNSIGNED-PAYLOAD");

    char h_host[300], h_date[40], h_sha[100], h_tok[4200];
    const char *hdrs[SK_S3_MAX_HDRS + 4];
    size_t nh = 0;
    snprintf(h_host, sizeof h_host, "host:%s", hostb.p);
    snprintf(h_date, sizeof h_date, "x-amz-date:%s", date);
    snprintf(h_sha, sizeof h_sha, "x-amz-content-sha256:%s", hash);
    hdrs[nh++] = h_host, hdrs[nh++] = h_date, hdrs[nh++] = h_sha;
    /* every attempt asks for the credentials: temporary ones are fetched
     * anew here when their expiration is near (creds.c) */
    const sk_creds *cr = sk_creds_provider_lock(&s3->creds, &r->err);
    if (!cr) {
        rc = r->err.code ? r->err.code : SK_E_REMOTE;
        goto out;
    }
    if (cr->token) {
        snprintf(h_tok, sizeof h_tok, "x-amz-security-token:%s", cr->token);
        hdrs[nh++] = h_tok;
    }
    for (int i = 0; i < r->nhdrs; i++) hdrs[nh++] = r->hdrs[i];
    char auth[1024];
    sk_s3_sigv4_input in = {r->method, path.p, r->query, hdrs, nh, hash, date, s3->region,
                            "s3", cr->access_key, cr->secret_key};
    rc = sk_s3_sigv4_sign(&in, auth, sizeof auth, &r->err);
    sk_creds_provider_unlock(&s3->creds);
    if (rc) goto out;

    sk_curl.slist_free_all(r->hl);
    r->hl = NULL;
    char line[4300];
    for (size_t i = 1; i < nh; i++) r->hl = sk_curl.slist_append(r->hl, hdrs[i]);
    snprintf(line, sizeof line, "Authorization: %s", auth);
    r->hl = sk_curl.slist_append(r->hl, line);
    memset(line, 0, sizeof line);
    r->hl = sk_curl.slist_append(r->hl, "Expect:"); /* no 100-continue round trip */
    if (!r->body && !r->body_from_fd) r->hl = sk_curl.slist_append(r->hl, "Content-Type:");
out:
    sk_buf_free(&path), sk_buf_free(&hostb);
    if (rc == SK_E_NOMEM) sk_error_set(&r->err, rc, "out of memory");
    return rc;
}

/* A streaming GET's headers, per attempt: the range from what was already
 * delivered, and after the first bytes the ETag they came with, so that an
 * object replaced meanwhile fails (412) instead of being spliced. */
static void push_headers(sk_s3_req *r)
{
    uint64_t from = r->range_off + r->delivered;
    r->nhdrs = 0;
    if (r->range_len)
        sk_s3_req_header(r, "range:bytes=%llu-%llu", (unsigned long long)from,
                         (unsigned long long)(r->range_off + r->range_len - 1));
    else if (from)
        sk_s3_req_header(r, "range:bytes=%llu-", (unsigned long long)from);
    if (r->delivered && r->first_etag[0]) sk_s3_req_header(r, "if-match:\"%s\"", r->first_etag);
}

static int start(sk_s3 *s3, sk_s3_req *r)
{
    if (r->push) push_headers(r);
    r->body_seen = 0;
    int rc = build_and_sign(s3, r);
    if (rc) return rc;
    CURL *c = s3->npool ? s3->pool[--s3->npool] : sk_curl.easy_init();
    if (!c) return sk_error_set(&r->err, SK_E_NOMEM, "cannot create a curl handle");
    r->easy = c;
    r->resp.len = 0, r->dst_len = 0, r->body_off = 0, r->body_errno = 0, r->skip = r->delivered;
    r->etag[0] = r->crc32c[0] = r->meta_etag[0] = 0, r->has_length = 0, r->status = 0;
    sk_curl.easy_setopt(c, CURLOPT_URL, r->url);
    sk_curl.easy_setopt(c, CURLOPT_PATH_AS_IS, 1L);
    sk_curl.easy_setopt(c, CURLOPT_HTTPHEADER, r->hl);
    sk_curl.easy_setopt(c, CURLOPT_PRIVATE, r);
    sk_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sk_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    sk_curl.easy_setopt(c, CURLOPT_WRITEDATA, r);
    sk_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    sk_curl.easy_setopt(c, CURLOPT_HEADERDATA, r);
    sk_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    /* A transfer slower than low_speed_limit bytes/s over read_timeout
     * seconds (a stall, or a server dripping a few bytes a second) fails
     * and is retried, within max_attempts: no request lives forever. */
    sk_curl.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, s3->low_speed_limit);
    sk_curl.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)s3->read_timeout);
    sk_curl_trust(c, !s3->plain);
    r->errbuf[0] = 0;
    sk_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
    sk_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    sk_curl.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    if (s3->plain) sk_http_setopts(r, c);
    if (!strcmp(r->method, "HEAD")) {
        sk_curl.easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (r->body || r->body_from_fd || !strcmp(r->method, "PUT") || !strcmp(r->method, "POST")) {
        sk_curl.easy_setopt(c, CURLOPT_UPLOAD, 1L);
        sk_curl.easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->body_len);
        sk_curl.easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        sk_curl.easy_setopt(c, CURLOPT_READDATA, r);
        sk_curl.easy_setopt(c, CURLOPT_SEEKFUNCTION, on_seek);
        sk_curl.easy_setopt(c, CURLOPT_SEEKDATA, r);
        /* 512 KiB, not curl's maximum of 2 MiB: measured against moto, 2 MiB
         * sends saved no CPU (fewer send() calls, but the buffer no longer
         * stays in cache between the pread into it and the send out of
         * it) and cost 3x the page faults, as curl reallocates it per
         * request. */
        sk_curl.easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, 512L * 1024);
    }
    sk_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, r->method);
    sk_curl.easy_setopt(c, CURLOPT_BUFFERSIZE, 256L * 1024);
    if (s3->verbose)
        fprintf(stderr, "s3: %s %s%s\n", r->method, r->url,
                r->attempt ? " (retry)" : "");
    s3->n_requests++;
    if (r->attempt) s3->n_retries++;
    sk_curl.multi_add_handle(s3->multi, c);
    return 0;
}

/* ------------------------------------------------------------- finish */

static const char *explain(const char *code)
{
    static const struct { const char *code, *why; } tab[] = {
        {"SignatureDoesNotMatch", "the request signature does not match: check the secret access key and the system clock"},
        {"InvalidAccessKeyId", "the access key id is not known to the server: check the access key"},
        {"AccessDenied", "access denied: the credentials lack permission for this bucket or key"},
        {"NoSuchBucket", "the bucket does not exist"},
        {"NoSuchKey", "the object does not exist"},
        {"NoSuchUpload", "the multipart upload does not exist (completed or aborted)"},
        {"RequestTimeTooSkewed", "the system clock is too far from the server's: fix the clock"},
        {"ExpiredToken", "the session token has expired: refresh the credentials"},
        {"InvalidToken", "the session token is invalid: check the credentials"},
        {"EntityTooSmall", "a part other than the last is smaller than 5 MiB"},
        {"InvalidPart", "a part is missing or its ETag does not match"},
        {"BadDigest", "the checksum sent does not match the data received"},
        {"PermanentRedirect", "the bucket is in another region: pass --region"},
        {"AuthorizationHeaderMalformed", "the region in the signature is wrong for this bucket: pass --region"},
        {"PreconditionFailed", "the object changed while it was being read"},
    };
    for (size_t i = 0; i < SK_ARRAY_LEN(tab); i++)
        if (!strcmp(code, tab[i].code)) return tab[i].why;
    return NULL;
}

static int retryable_code(const char *code)
{
    return !strcmp(code, "SlowDown") || !strcmp(code, "RequestTimeout") ||
           !strcmp(code, "InternalError") || !strcmp(code, "ServiceUnavailable") ||
           !strcmp(code, "RequestTimeTooSkewed_") || !strcmp(code, "Throttling");
}

/* Decides an attempt's fate: 0 done (r->rc set), 1 retry. */
static int classify(sk_s3 *s3, sk_s3_req *r, CURLcode cc)
{
    char code[128] = "", msg[512] = "";
    const char *what = r->url;
    if (s3->plain && (r->refused || cc == CURLE_OK)) return sk_http_classify(r);
    if (cc != CURLE_OK) {
        if (r->sink_stopped) {
            r->rc = sk_error_set(&r->err, SK_E_IO, "%s: stopped by the receiver", what);
            return 0;
        }
        if (r->body_errno) { /* the local file, not the network: retrying cannot help */
            r->rc = sk_error_set(&r->err, SK_E_IO, "%s: reading the body: %s", what,
                                 r->body_errno < 0 ? "the file shrank while being uploaded"
                                                   : strerror(r->body_errno));
            return 0;
        }
        if (cc == CURLE_WRITE_ERROR && r->dst) {
            r->rc = sk_error_set(&r->err, SK_E_MISMATCH, "%s: more data than the %zu-byte buffer", what, r->dst_cap);
            return 0;
        }
        int net = cc == CURLE_COULDNT_CONNECT || cc == CURLE_SEND_ERROR || cc == CURLE_RECV_ERROR ||
                  cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_GOT_NOTHING ||
                  cc == CURLE_PARTIAL_FILE || cc == CURLE_COULDNT_RESOLVE_HOST ||
                  cc == CURLE_HTTP2 || cc == CURLE_HTTP2_STREAM || cc == CURLE_SSL_CONNECT_ERROR ||
                  cc == CURLE_SEND_FAIL_REWIND || cc == CURLE_WEIRD_SERVER_REPLY;
        /* curl's class of failure, then its words for this one (which
         * certificate check, how many bytes were missing) */
        r->rc = sk_error_set(&r->err, SK_E_NET, "%s %s: %s%s%s", r->method, what, sk_curl.easy_strerror(cc),
                             r->errbuf[0] ? ": " : "", r->errbuf);
        return net;
    }
    sk_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status >= 200 && r->status < 300) {
        if (r->check_body_error && r->resp.len) {
            sk_s3_xml_error(r->resp.p, r->resp.len, code, sizeof code, msg, sizeof msg);
            if (code[0]) {
                r->rc = sk_error_set(&r->err, SK_E_REMOTE, "%s %s: %s (%s) inside a 200 answer",
                                     r->method, what, code, msg);
                return 1;
            }
        }
        r->rc = 0;
        return 0;
    }
    sk_s3_xml_error(r->resp.p, r->resp.len, code, sizeof code, msg, sizeof msg);
    if (!code[0] && r->status == 404) snprintf(code, sizeof code, "%s", r->key && *r->key ? "NoSuchKey" : "NoSuchBucket");
    if (!code[0] && r->status == 403) snprintf(code, sizeof code, "AccessDenied");
    /* 5xx but 501 (Not Implemented) and 505 (HTTP Version Not Supported),
     * which answer the same way every time; 408, 429; S3's throttling and
     * timeout codes */
    int retry = (r->status >= 500 && r->status != 501 && r->status != 505) || r->status == 408 ||
                r->status == 429 || retryable_code(code);
    const char *why = explain(code);
    int kind = r->status == 404 ? SK_E_NOTFOUND : SK_E_REMOTE;
    if (r->bucket && !strcmp(code, "NoSuchBucket"))
        r->rc = sk_error_set(&r->err, kind, "s3://%s: %s (HTTP %ld)", r->bucket, why, r->status);
    else
        r->rc = sk_error_set(&r->err, kind, "%s s3://%s/%s: HTTP %ld %s%s%s%s%s", r->method,
                             r->bucket ? r->bucket : "", r->key ? r->key : "", r->status, code,
                             why ? ": " : "", why ? why : "", msg[0] && !why ? ": " : "",
                             msg[0] && !why ? msg : "");
    (void)s3;
    return retry;
}

static uint64_t backoff_ms(sk_s3 *s3, int attempt)
{
    /* full jitter: uniform in [0, min(cap, base * 2^attempt)] */
    uint64_t cap = 8000, base = 100, top = base << (attempt < 10 ? attempt : 10);
    if (top > cap) top = cap;
    s3->rng = s3->rng * 1103515245u + 12345u;
    return (uint64_t)((s3->rng >> 8) % (top + 1));
}

/* Marks r ended and takes it off the resume list (under mu, just before its
 * done callback, which may free it): nothing may queue it after this. */
static void resume_unlink(sk_s3 *s3, sk_s3_req *r)
{
    r->ended = 1;
    if (!r->resume_queued) return;
    for (sk_s3_req **pp = &s3->resume_head; *pp; pp = &(*pp)->resume_next)
        if (*pp == r) {
            *pp = r->resume_next;
            break;
        }
    r->resume_queued = 0;
    r->resume_next = NULL;
}

/* Ends a cancelled request (called without mu); in flight or queued. */
static void cancel_now(sk_s3 *s3, sk_s3_req *r)
{
    pthread_mutex_lock(&s3->mu);
    if (r->easy) {
        CURL *c = r->easy;
        pthread_mutex_unlock(&s3->mu);
        sk_curl.multi_remove_handle(s3->multi, c);
        sk_curl.easy_cleanup(c); /* its connection was mid-body: not reusable */
        pthread_mutex_lock(&s3->mu);
        r->easy = NULL;
        s3->inflight--;
        if (r->paused) s3->npaused--;
        r->paused = 0;
    } else {
        sk_s3_req **pp = &s3->q_head, *prev = NULL;
        while (*pp && *pp != r) prev = *pp, pp = &(*pp)->next;
        if (!*pp) { /* neither in flight nor queued: already finished */
            pthread_mutex_unlock(&s3->mu);
            return;
        }
        *pp = r->next;
        if (s3->q_tail == r) s3->q_tail = prev;
        r->next = NULL;
    }
    resume_unlink(s3, r);
    s3->pending--;
    pthread_mutex_unlock(&s3->mu);
    r->rc = sk_error_set(&r->err, SK_E_IO, "%s: cancelled", r->url[0] ? r->url : r->key);
    sk_curl.slist_free_all(r->hl);
    r->hl = NULL;
    r->done(r);
    pthread_mutex_lock(&s3->mu);
    pthread_cond_broadcast(&s3->cv);
    pthread_mutex_unlock(&s3->mu);
}

/* Runs the resumes and cancels other threads asked for (engine thread). */
static void run_resumes(sk_s3 *s3)
{
    for (;;) {
        pthread_mutex_lock(&s3->mu);
        sk_s3_req *r = s3->resume_head;
        if (r) {
            s3->resume_head = r->resume_next;
            r->resume_queued = 0;
            r->resume_next = NULL;
        }
        int cancel = r && r->cancel;
        pthread_mutex_unlock(&s3->mu);
        if (!r) return;
        if (cancel) {
            cancel_now(s3, r);
        } else if (r->easy && r->paused) {
            r->paused = 0;
            pthread_mutex_lock(&s3->mu);
            s3->npaused--;
            pthread_mutex_unlock(&s3->mu);
            /* may call on_write at once, which may pause again */
            sk_curl.easy_pause(r->easy, CURLPAUSE_CONT);
        }
    }
}

static void resume_push(sk_s3_req *r)
{
    sk_s3 *s3 = r->s3;
    if (!r->resume_queued && !r->ended) {
        r->resume_queued = 1;
        r->resume_next = s3->resume_head;
        s3->resume_head = r;
    }
}

void sk_s3_req_resume(sk_s3_req *r)
{
    pthread_mutex_lock(&r->s3->mu);
    resume_push(r);
    pthread_mutex_unlock(&r->s3->mu);
    sk_curl.multi_wakeup(r->s3->multi);
}

void sk_s3_req_cancel(sk_s3_req *r)
{
    pthread_mutex_lock(&r->s3->mu);
    r->cancel = 1;
    resume_push(r);
    pthread_mutex_unlock(&r->s3->mu);
    sk_curl.multi_wakeup(r->s3->multi);
}

static void *engine(void *arg)
{
    sk_s3 *s3 = arg;
    for (;;) {
        pthread_mutex_lock(&s3->mu);
        if (s3->stop && !s3->q_head && !s3->inflight) {
            pthread_mutex_unlock(&s3->mu);
            break;
        }
        uint64_t now = sk_s3_now_ms(), wake = now + 1000;
        sk_s3_req **pp = &s3->q_head, *prev = NULL;
        while (*pp && s3->inflight - s3->npaused < s3->concurrency) {
            sk_s3_req *r = *pp;
            if (r->not_before_ms > now) {
                if (r->not_before_ms < wake) wake = r->not_before_ms;
                prev = r, pp = &r->next;
                continue;
            }
            *pp = r->next;
            if (s3->q_tail == r) s3->q_tail = prev;
            r->next = NULL;
            if (start(s3, r)) {
                /* could not even build the request: finish it now */
                r->rc = r->err.code ? r->err.code : SK_E_NOMEM;
                resume_unlink(s3, r);
                s3->pending--;
                pthread_mutex_unlock(&s3->mu);
                r->done(r);
                pthread_mutex_lock(&s3->mu);
                pp = &s3->q_head, prev = NULL;
                continue;
            }
            s3->inflight++;
        }
        for (sk_s3_req *r = *pp; r; r = r->next)
            if (r->not_before_ms > now && r->not_before_ms < wake) wake = r->not_before_ms;
        pthread_mutex_unlock(&s3->mu);

        run_resumes(s3);
        int running;
        sk_curl.multi_perform(s3->multi, &running);
        CURLMsg *m;
        int left;
        while ((m = sk_curl.multi_info_read(s3->multi, &left))) {
            if (m->msg != CURLMSG_DONE) continue;
            CURL *c = m->easy_handle;
            CURLcode cc = m->data.result;
            sk_s3_req *r;
            sk_curl.easy_getinfo(c, CURLINFO_PRIVATE, (char **)&r);
            int retry = classify(s3, r, cc);
            sk_curl.multi_remove_handle(s3->multi, c);
            if (cc == CURLE_OK && s3->npool < (int)SK_ARRAY_LEN(s3->pool)) {
                sk_curl.easy_reset(c);
                s3->pool[s3->npool++] = c;
            } else {
                sk_curl.easy_cleanup(c); /* a broken connection's handle is not reused */
            }
            r->easy = NULL;
            r->attempt++;
            pthread_mutex_lock(&s3->mu);
            s3->inflight--;
            if (r->paused) s3->npaused--;
            r->paused = 0;
            if (retry && r->attempt < s3->max_attempts) {
                if (s3->verbose) {
                    fprintf(stderr, "s3: will retry (%d/%d): %s\n", r->attempt, s3->max_attempts, r->err.msg);
                } else if (s3->retry_notice >= 0 && !s3->retry_told) {
                    /* the backoff of all attempts can add up to a quarter
                     * of a minute: say once what is being waited for */
                    s3->retry_told = 1;
                    fprintf(stderr, "shardkit: %s; retrying, up to %d attempts in all (further "
                            "retries are not reported)\n", r->err.msg, s3->max_attempts);
                }
                r->not_before_ms = sk_s3_now_ms() + backoff_ms(s3, r->attempt);
                r->next = NULL;
                if (s3->q_tail) s3->q_tail->next = r;
                else s3->q_head = r;
                s3->q_tail = r;
                pthread_mutex_unlock(&s3->mu);
                continue;
            }
            if (retry && r->rc && r->attempt > 1) {
                char why[SK_ERROR_MAX];
                snprintf(why, sizeof why, "%s", r->err.msg);
                sk_error_set(&r->err, r->rc, "%s (gave up after %d attempts)", why, r->attempt);
            }
            resume_unlink(s3, r);
            s3->pending--;
            pthread_mutex_unlock(&s3->mu);
            sk_curl.slist_free_all(r->hl);
            r->hl = NULL;
            r->done(r);
            pthread_mutex_lock(&s3->mu);
            pthread_cond_broadcast(&s3->cv);
            pthread_mutex_unlock(&s3->mu);
        }
        now = sk_s3_now_ms();
        int timeout = wake > now ? (int)(wake - now) : 0;
        if (timeout > 1000) timeout = 1000;
        sk_curl.multi_poll(s3->multi, NULL, 0, timeout, NULL);
    }
    return NULL;
}

void sk_s3_submit(sk_s3_req *r)
{
    sk_s3 *s3 = r->s3;
    r->next = NULL;
    r->finished = 0;
    r->ended = 0;
    pthread_mutex_lock(&s3->mu);
    if (s3->q_tail) s3->q_tail->next = r;
    else s3->q_head = r;
    s3->q_tail = r;
    s3->pending++;
    pthread_mutex_unlock(&s3->mu);
    sk_curl.multi_wakeup(s3->multi);
}

static void sync_done(sk_s3_req *r)
{
    pthread_mutex_lock(&r->s3->mu);
    r->finished = 1;
    pthread_cond_broadcast(&r->s3->cv);
    pthread_mutex_unlock(&r->s3->mu);
}

int sk_s3_run(sk_s3_req *r)
{
    r->done = sync_done;
    sk_s3_submit(r);
    pthread_mutex_lock(&r->s3->mu);
    while (!r->finished) pthread_cond_wait(&r->s3->cv, &r->s3->mu);
    pthread_mutex_unlock(&r->s3->mu);
    return r->rc;
}

void sk_s3_drain(sk_s3 *s3)
{
    pthread_mutex_lock(&s3->mu);
    while (s3->pending) pthread_cond_wait(&s3->cv, &s3->mu);
    pthread_mutex_unlock(&s3->mu);
}

/* ------------------------------------------------------------ client */

static int parse_endpoint(sk_s3 *s3, const char *url, sk_error *err)
{
    const char *p = strstr(url, "://");
    SK_FAIL_IF(!p, err, SK_E_USAGE, "%s: an endpoint URL starts with https:// or http://", url);
    size_t sl = (size_t)(p - url);
    SK_FAIL_IF(!((sl == 5 && !strncasecmp(url, "https", 5)) || (sl == 4 && !strncasecmp(url, "http", 4))),
               err, SK_E_USAGE, "%s: only https:// and http:// endpoints are supported", url);
    snprintf(s3->scheme, sizeof s3->scheme, "%.*s", (int)sl, url);
    for (char *c = s3->scheme; *c; c++) *c = (char)(*c | 0x20);
    p += 3;
    size_t hl = strcspn(p, "/?");
    SK_FAIL_IF(!hl || hl >= sizeof s3->host, err, SK_E_USAGE, "%s: no host in the endpoint URL", url);
    snprintf(s3->host, sizeof s3->host, "%.*s", (int)hl, p);
    /* curl leaves a default port out of Host; the signature must agree. */
    size_t n = strlen(s3->host);
    if ((!strcmp(s3->scheme, "https") && n > 4 && !strcmp(s3->host + n - 4, ":443")) ||
        (!strcmp(s3->scheme, "http") && n > 3 && !strcmp(s3->host + n - 3, ":80")))
        *strrchr(s3->host, ':') = 0;
    return 0;
}

void sk_s3_config_init_sized(sk_s3_config *o, size_t size)
{
    static const sk_s3_config defaults = SK_S3_CONFIG_INIT;
    sk_options_init(o, size, &defaults, sizeof defaults);
}

/* The concurrency that fits the open-file limit: a request in flight may
 * hold a file open and curl keeps up to two connections per request, so
 * under a low limit (ulimit -n 128) fewer requests rather than EMFILE part
 * way through a dataset. */
static int fit_open_files(int want, int verbose)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY) return want;
    long fit = ((long)rl.rlim_cur - 32) / 3;
    if (fit < 1) fit = 1;
    if (want <= fit) return want;
    if (verbose)
        fprintf(stderr, "s3: concurrency %d lowered to %ld: the limit of open files is %ld\n", want,
                fit, (long)rl.rlim_cur);
    return (int)fit;
}

int sk_s3_new(sk_s3 **out, const sk_s3_config *cfg_in, sk_error *err)
{
    static const sk_s3_config defaults = SK_S3_CONFIG_INIT;
    sk_s3_config cfg_buf;
    const sk_s3_config *cfg = &cfg_buf;
    SK_GUARD(sk_options_take(&cfg_buf, sizeof cfg_buf, cfg_in, &defaults, "sk_s3_config", err));
    SK_GUARD(sk_s3_libs_load(err)); /* libcurl and its global init, once */
    *out = NULL;
    sk_s3 *s3 = calloc(1, sizeof *s3);
    SK_FAIL_IF(!s3, err, SK_E_NOMEM, "out of memory");
    s3->concurrency = fit_open_files(cfg->concurrency > 0 ? cfg->concurrency : 16, cfg->verbose);
    s3->read_timeout = cfg->read_timeout > 0 ? cfg->read_timeout : 30;
    s3->low_speed_limit = cfg->low_speed_limit > 0 ? cfg->low_speed_limit : 1024;
    s3->sign_payload = cfg->sign_payload;
    s3->verbose = cfg->verbose;
    s3->retry_notice = cfg->retry_notice;
    s3->rng = (unsigned)sk_s3_now_ms() ^ (unsigned)(uintptr_t)s3;
    pthread_mutex_init(&s3->mu, NULL);
    pthread_cond_init(&s3->cv, NULL);

    /* a plain-HTTP client signs nothing: no credentials to look for */
    sk_creds none = SK_CREDS_INIT;
    none.access_key = none.secret_key = "";
    snprintf(none.source, sizeof none.source, "none (plain HTTP)");
    s3->plain = cfg->http_only;
    int rc = sk_creds_provider_init(&s3->creds, s3->plain ? &none : cfg->creds, cfg->profile,
                                    cfg->verbose, err);
    if (rc) goto fail;
    /* tries per request, as the aws cli takes them: the option, then
     * AWS_MAX_ATTEMPTS, then the profile's max_attempts, then 8 */
    const char *ma = getenv("AWS_MAX_ATTEMPTS");
    char *ma_end = NULL;
    long ma_n = ma && *ma ? strtol(ma, &ma_end, 10) : 0;
    if (ma && *ma && (*ma_end || ma_n < 1 || ma_n > 100)) {
        rc = sk_error_set(err, SK_E_USAGE, "AWS_MAX_ATTEMPTS=%s: want 1..100", ma);
        goto fail;
    }
    s3->max_attempts = cfg->max_attempts > 0 ? cfg->max_attempts
                       : ma_n > 0            ? (int)ma_n
                       : s3->creds.cur.max_attempts > 0 ? s3->creds.cur.max_attempts
                                                         : 8;

    const char *region = cfg->region;
    if (!region || !*region) region = getenv("AWS_REGION");
    if (!region || !*region) region = getenv("AWS_DEFAULT_REGION");
    if (!region || !*region) region = s3->creds.cur.region;
    if (!region || !*region) region = "us-east-1";
    snprintf(s3->region, sizeof s3->region, "%s", region);

    /* the aws cli v2's order: --endpoint-url; then, unless configured
     * endpoints are ignored (AWS_IGNORE_CONFIGURED_ENDPOINT_URLS or the
     * profile's ignore_configured_endpoint_urls), AWS_ENDPOINT_URL_S3,
     * AWS_ENDPOINT_URL, the profile's services section, its endpoint_url */
    /* plain: the URL names its server, no endpoint is used */
    const char *ep = s3->plain ? "http://plain.invalid" : cfg->endpoint_url, *ign = getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
    char conf_ep[1024] = "";
    int ignore = ign && !strcasecmp(ign, "true");
    if ((!ep || !*ep) && !ignore) ignore = sk_creds_config_endpoint(cfg->profile, conf_ep, sizeof conf_ep);
    if ((!ep || !*ep) && !ignore) ep = getenv("AWS_ENDPOINT_URL_S3");
    if ((!ep || !*ep) && !ignore) ep = getenv("AWS_ENDPOINT_URL");
    if ((!ep || !*ep) && !ignore) ep = conf_ep;
    if (ep && *ep) {
        if ((rc = parse_endpoint(s3, ep, err))) goto fail;
        s3->path_style = cfg->path_style < 0 ? 1 : cfg->path_style;
    } else {
        snprintf(s3->scheme, sizeof s3->scheme, "https");
        snprintf(s3->host, sizeof s3->host, "s3.%s.amazonaws.com", s3->region);
        s3->path_style = cfg->path_style < 0 ? 0 : cfg->path_style;
    }
    snprintf(s3->base, sizeof s3->base, "%s://%s", s3->scheme, s3->host);
    /* an endpoint over plain http checks no certificate: a bundle named for
     * other work does not stop it */
    if ((s3->plain || !strcmp(s3->scheme, "https")) && (rc = sk_curl_trust_check(!s3->plain, err)))
        goto fail;
    if (s3->verbose)
        fprintf(stderr, "s3: endpoint %s, region %s, %s style, credentials from %s\n", s3->base,
                s3->region, s3->path_style ? "path" : "virtual-hosted", s3->creds.cur.source);

    s3->multi = sk_curl.multi_init();
    if (!s3->multi) {
        rc = sk_error_set(err, SK_E_NOMEM, "cannot create a curl multi handle");
        goto fail;
    }
    /* No connection limit in curl: the engine starts at most concurrency
     * requests itself, and a limit here would make a new request wait in
     * curl for the connection of a paused stream (sk_s3_stream), which may
     * only resume after that request is served. */
    sk_curl.multi_setopt(s3->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 0L);
    sk_curl.multi_setopt(s3->multi, CURLMOPT_MAXCONNECTS, (long)s3->concurrency * 2);
    if (pthread_create(&s3->thread, NULL, engine, s3)) {
        rc = sk_error_set(err, SK_E_NOMEM, "cannot start the S3 engine thread");
        goto fail;
    }
    s3->thread_started = 1;
    *out = s3;
    return 0;
fail:
    sk_s3_free(s3);
    return rc;
}

void sk_s3_free(sk_s3 *s3)
{
    if (!s3) return;
    if (s3->thread_started) {
        pthread_mutex_lock(&s3->mu);
        s3->stop = 1;
        pthread_mutex_unlock(&s3->mu);
        sk_curl.multi_wakeup(s3->multi);
        pthread_join(s3->thread, NULL);
    }
    for (int i = 0; i < s3->npool; i++) sk_curl.easy_cleanup(s3->pool[i]);
    if (s3->multi) sk_curl.multi_cleanup(s3->multi);
    sk_creds_provider_release(&s3->creds);
    pthread_mutex_destroy(&s3->mu);
    pthread_cond_destroy(&s3->cv);
    free(s3);
}
