/*
 * fetch_urls.c - the downloader behind `pack --from-urls` (fetch_urls.h).
 *
 * One libcurl multi handle holds up to `concurrency` transfers; the easy
 * handles are reused, so the multi handle's connection cache keeps
 * HTTP/1.1 connections alive between URLs of a host and multiplexes
 * HTTP/2 where the server offers it.  Every URL is untrusted, so each
 * transfer is bounded: http and https only (redirects too, at most 5),
 * a body cap enforced as bytes arrive (and on Content-Length before), a
 * whole-attempt timeout and a low-speed floor, no proxy (the address
 * checked must be the one connected to), no compressed encodings asked
 * for (a small gzip body cannot become a large one), and the address
 * check on every socket curl opens (after DNS, for every redirect and
 * every happy-eyeballs attempt): a name that resolves to 127.0.0.1 or
 * 169.254.169.254 is refused there, which a check of the URL's host name
 * before the request could not do.  Retries: connection failures,
 * timeouts, 5xx and 429, after Retry-After when the server gives one (up
 * to retry_after_max_ms) or a short doubling backoff.
 *
 * Body buffers are the fetcher's and come back to it: a body (hundreds of
 * KB, over glibc's mmap threshold) malloc'd for each URL and freed after
 * its sample was written was mapped, faulted in page by page as curl's
 * bytes were copied in, and unmapped again, a third of a no-resize run's
 * CPU.  The caller gives each body back (sk_urlfetch_give_back) and the
 * next transfer fills it, its pages already there.  At most concurrency +
 * keep_bodies spares are kept: every body is in a transfer or held by the
 * caller, so no more are ever alive at once; memory stays bounded by what
 * is in flight, never by the list.
 */
#include "pack/fetch_urls.h"
#include "format/robots.h"
#include "s3/s3_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { T_FREE, T_QUEUED, T_RUNNING, T_SLEEPING };

typedef struct xfer {
    struct sk_urlfetch *f;
    int state;
    CURL *c;
    char *url;
    void *ctx;
    sk_buf body;
    double t0;      /* first attempt's start, ms */
    double wake_at; /* T_SLEEPING: when to try again */
    int attempts;
    uint64_t bytes;
    long http;
    /* the response now arriving (reset by each status line) */
    int robots_no;      /* an X-Robots-Tag forbids it */
    long retry_after;   /* seconds, -1 none */
    int body_started;
    /* why the attempt was stopped by us, "" when it was not */
    char stop[200];
    char refused[200];  /* the address check's refusal */
    char errbuf[CURL_ERROR_SIZE];
} xfer;

typedef struct cidr {
    int family;
    unsigned char a[16];
    unsigned bits;
} cidr;

struct sk_urlfetch {
    sk_urlfetch_opts o;
    sk_buf *spare;  /* body buffers given back, empty, for the next transfers */
    size_t nspare, spare_max;
    uint64_t made;  /* body buffers allocated, not taken from spare */
    cidr *allow; /* allow_cidrs parsed */
    size_t nallow;
    CURLM *m;
    xfer *x;
    size_t nx;
    size_t pending; /* queued, running or sleeping */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------ the address check */

static int v4_blocked(const unsigned char *b, char *why, size_t cap, const char *txt)
{
    const char *what = NULL;
    if (b[0] == 127) what = "loopback";
    else if (b[0] == 0) what = "unspecified (0.0.0.0/8)";
    else if (b[0] == 10 || (b[0] == 172 && (b[1] & 0xF0) == 16) || (b[0] == 192 && b[1] == 168))
        what = "private";
    else if (b[0] == 100 && (b[1] & 0xC0) == 64) what = "private (carrier-grade NAT)";
    else if (b[0] == 169 && b[1] == 254) what = "link-local";
    else if (b[0] >= 224 && b[0] < 240) what = "multicast";
    else if (b[0] >= 240) what = "reserved";
    else if (b[0] == 192 && b[1] == 0 && b[2] == 0) what = "reserved (IETF protocol assignments)";
    else if (b[0] == 198 && (b[1] & 0xFE) == 18) what = "reserved (benchmarking)";
    if (!what) return 0;
    snprintf(why, cap, "%s address %s", what, txt);
    return 1;
}

int sk_urlfetch_addr_blocked(const struct sockaddr *a, char *why, size_t cap)
{
    char txt[INET6_ADDRSTRLEN] = "?";
    if (a->sa_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        inet_ntop(AF_INET, &s->sin_addr, txt, sizeof txt);
        return v4_blocked((const unsigned char *)&s->sin_addr, why, cap, txt);
    }
    if (a->sa_family != AF_INET6) {
        snprintf(why, cap, "address family %d", a->sa_family);
        return 1;
    }
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
    const unsigned char *b = s->sin6_addr.s6_addr;
    inet_ntop(AF_INET6, &s->sin6_addr, txt, sizeof txt);
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF};
    static const unsigned char nat64[12] = {0, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0};
    if (!memcmp(b, mapped, 12) || !memcmp(b, nat64, 12)) return v4_blocked(b + 12, why, cap, txt);
    const char *what = NULL;
    static const unsigned char zero[15] = {0};
    if (!memcmp(b, zero, 15) && b[15] <= 1) what = b[15] ? "loopback" : "unspecified";
    else if ((b[0] & 0xFE) == 0xFC) what = "private (unique local)";
    else if (b[0] == 0xFE && (b[1] & 0xC0) == 0x80) what = "link-local";
    else if (b[0] == 0xFF) what = "multicast";
    else if (!memcmp(b, zero, 12)) what = "reserved (IPv4-compatible)";
    if (!what) return 0;
    snprintf(why, cap, "%s address %s", what, txt);
    return 1;
}

static int parse_cidrs(sk_urlfetch *f, const char *list, sk_error *err)
{
    char one[64];
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        SK_FAIL_IF(n >= sizeof one, err, SK_E_USAGE, "--allow-private-addresses: '%.*s' is not "
                   "an address range", (int)(n > 60 ? 60 : n), p);
        memcpy(one, p, n);
        one[n] = 0;
        p += n + (p[n] == ',');
        if (!n) continue;
        cidr c = {0};
        char *slash = strchr(one, '/'), *end = NULL;
        if (slash) *slash = 0;
        c.family = strchr(one, ':') ? AF_INET6 : AF_INET;
        unsigned max = c.family == AF_INET ? 32 : 128;
        c.bits = slash ? (unsigned)strtoul(slash + 1, &end, 10) : max;
        SK_FAIL_IF(inet_pton(c.family, one, c.a) != 1 || (slash && (end == slash + 1 || *end)) ||
                       c.bits > max, err, SK_E_USAGE, "--allow-private-addresses: '%s%s%s' is not "
                   "an address range such as 10.0.0.0/8", one, slash ? "/" : "", slash ? slash + 1 : "");
        cidr *g = realloc(f->allow, (f->nallow + 1) * sizeof *g);
        SK_FAIL_IF(!g, err, SK_E_NOMEM, "out of memory");
        f->allow = g;
        f->allow[f->nallow++] = c;
    }
    return SK_OK;
}

static int in_cidr(const cidr *c, const unsigned char *a)
{
    unsigned full = c->bits / 8, rest = c->bits % 8;
    if (memcmp(c->a, a, full)) return 0;
    return !rest || ((c->a[full] ^ a[full]) & (0xFF << (8 - rest))) == 0;
}

/* Whether the user allowed this blocked address (allow_private, within
 * allow_cidrs when given). */
static int allowed(const sk_urlfetch *f, const struct sockaddr *a)
{
    if (!f->o.allow_private) return 0;
    if (!f->nallow) return 1;
    const unsigned char *b = a->sa_family == AF_INET
                                 ? (const unsigned char *)&((const struct sockaddr_in *)a)->sin_addr
                                 : ((const struct sockaddr_in6 *)a)->sin6_addr.s6_addr;
    for (size_t i = 0; i < f->nallow; i++)
        if (f->allow[i].family == a->sa_family && in_cidr(&f->allow[i], b)) return 1;
    return 0;
}

static curl_socket_t on_open_socket(void *ud, curlsocktype purpose, struct curl_sockaddr *a)
{
    xfer *t = ud;
    char why[160];
    (void)purpose;
    if (sk_urlfetch_addr_blocked(&a->addr, why, sizeof why) && !allowed(t->f, &a->addr)) {
        snprintf(t->refused, sizeof t->refused,
                 "refused: %s (a URL list may not reach it; see --allow-private-addresses)", why);
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* ------------------------------------------------------------- callbacks */

static int hname(const char *p, size_t n, const char *name, const char **val, size_t *vlen)
{
    size_t l = strlen(name);
    if (n <= l || p[l] != ':' || strncasecmp(p, name, l)) return 0;
    *val = p + l + 1;
    *vlen = n - l - 1;
    return 1;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
    xfer *t = ud;
    const sk_urlfetch_opts *o = &t->f->o;
    size_t len = sz * n;
    const char *v;
    size_t vl;
    if (len >= 5 && !memcmp(p, "HTTP/", 5)) { /* a new response: a redirect's, or the last */
        t->robots_no = 0;
        t->retry_after = -1;
        return len;
    }
    if (hname(p, len, "x-robots-tag", &v, &vl)) {
        if (o->robots_directives && *o->robots_directives &&
            sk_robots_disallowed(v, vl, o->robots_token, o->robots_directives))
            t->robots_no = 1;
    } else if (hname(p, len, "retry-after", &v, &vl)) {
        t->retry_after = sk_retry_after_parse(v, vl, (int64_t)time(NULL));
    }
    return len;
}

#define BODY_RESERVE_MAX ((curl_off_t)8 << 20)
#define SPARE_MAX ((size_t)BODY_RESERVE_MAX) /* a larger buffer given back is freed */
/* A new buffer's least room: photos of a list range over a few powers of
 * two, and a spare too small for the next body is swapped for a new one
 * (fresh pages again: 40% of the buffers a resizing run made).  Room
 * never written costs address space, not memory. */
#define BODY_MIN_CAP ((size_t)1 << 20)

/* The transfer's body buffer, room for want bytes (0: as it comes): the
 * last given back that holds them, else a new one, the smallest spare
 * freed for it (a realloc would copy bytes no one wants): buffers only
 * grow (to powers of two), so after a few such swaps they all fit. */
static int take_body(sk_urlfetch *f, xfer *t, size_t want)
{
    size_t small = 0;
    for (size_t i = f->nspare; i-- > 0;) {
        if (f->spare[i].cap >= want) {
            t->body = f->spare[i];
            f->spare[i] = f->spare[--f->nspare];
            return SK_OK;
        }
        if (f->spare[i].cap < f->spare[small].cap) small = i;
    }
    if (f->nspare) {
        free(f->spare[small].p);
        f->spare[small] = f->spare[--f->nspare];
    }
    f->made++;
    t->body = (sk_buf){0};
    return sk_grow((void **)&t->body.p, &t->body.cap, want > BODY_MIN_CAP ? want : BODY_MIN_CAP, 1,
                   NULL);
}

void sk_urlfetch_give_back(sk_urlfetch *f, sk_buf *body)
{
    if (body->p && body->cap <= SPARE_MAX && f->nspare < f->spare_max) {
        body->len = 0;
        f->spare[f->nspare++] = *body;
    } else {
        sk_buf_free(body);
    }
    *body = (sk_buf){0};
}

uint64_t sk_urlfetch_buffers_made(const sk_urlfetch *f)
{
    return f->made;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    xfer *t = ud;
    const sk_urlfetch_opts *o = &t->f->o;
    size_t len = sz * n;
    if (!t->body_started) {
        long code = 0;
        t->body_started = 1;
        sk_curl.easy_getinfo(t->c, CURLINFO_RESPONSE_CODE, &code);
        t->http = code;
        if (code >= 200 && code < 300 && t->robots_no) {
            snprintf(t->stop, sizeof t->stop, "X-Robots-Tag forbids it (one of %.120s)",
                     o->robots_directives);
            return 0;
        }
        /* the body's room at once when its length is announced: growing
         * it by doubling from 64 bytes copied each body once more through
         * realloc (4% of a resizing run's CPU samples).  The length is the
         * server's claim: at most BODY_RESERVE_MAX is taken on its word (a
         * larger body still grows as it arrives, up to max_bytes). */
        curl_off_t cl = -1;
        sk_curl.easy_getinfo(t->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl);
        if (code >= 200 && code < 300 && !t->body.p &&
            take_body(t->f, t, cl > 0 && (uint64_t)cl <= o->max_bytes
                                   ? (size_t)(cl < BODY_RESERVE_MAX ? cl : BODY_RESERVE_MAX) + 1 : 0))
            return 0;
    }
    t->bytes += len;
    if (t->http < 200 || t->http >= 300) { /* an error page: counted, not kept */
        if (t->bytes > o->max_bytes) {
            snprintf(t->stop, sizeof t->stop, "HTTP %ld", t->http);
            return 0;
        }
        return len;
    }
    if (t->body.len + len > o->max_bytes) {
        snprintf(t->stop, sizeof t->stop, "body over --max-image-bytes (%llu bytes)",
                 (unsigned long long)o->max_bytes);
        return 0;
    }
    return sk_buf_add(&t->body, p, len) ? 0 : len;
}

/* ------------------------------------------------------------ transfers */

static int start(sk_urlfetch *f, xfer *t, sk_error *err)
{
    CURL *c = t->c;
    const sk_urlfetch_opts *o = &f->o;
    sk_curl.easy_reset(c);
    t->robots_no = 0;
    t->retry_after = -1;
    t->body_started = 0;
    t->http = 0;
    t->stop[0] = t->refused[0] = t->errbuf[0] = 0;
    t->body.len = 0;
    if (!t->attempts++) t->t0 = now_ms();
    sk_curl.easy_setopt(c, CURLOPT_URL, t->url);
    sk_curl.easy_setopt(c, CURLOPT_PRIVATE, t);
    sk_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sk_curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    sk_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    sk_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    sk_curl.easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
    sk_curl.easy_setopt(c, CURLOPT_PROXY, ""); /* never a proxy: the check is on the peer */
    sk_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, o->timeout_ms);
    sk_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o->timeout_ms < 10000 ? o->timeout_ms : 10000L);
    sk_curl.easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, o->low_speed);
    sk_curl.easy_setopt(c, CURLOPT_LOW_SPEED_TIME, o->timeout_ms >= 2000 ? o->timeout_ms / 2000 : 1L);
    sk_curl.easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)o->max_bytes);
    sk_curl_trust(c, 0);
    sk_curl.easy_setopt(c, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
    sk_curl.easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    sk_curl.easy_setopt(c, CURLOPT_USERAGENT, o->user_agent);
    sk_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, t->errbuf);
    sk_curl.easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, on_open_socket);
    sk_curl.easy_setopt(c, CURLOPT_OPENSOCKETDATA, t);
    sk_curl.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    sk_curl.easy_setopt(c, CURLOPT_HEADERDATA, t);
    sk_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    sk_curl.easy_setopt(c, CURLOPT_WRITEDATA, t);
    CURLMcode mc = sk_curl.multi_add_handle(f->m, c);
    SK_FAIL_IF(mc != CURLM_OK, err, SK_E_NET, "%s: curl_multi_add_handle failed (%d)", t->url, (int)mc);
    t->state = T_RUNNING;
    return SK_OK;
}

int sk_urlfetch_new(sk_urlfetch **out, const sk_urlfetch_opts *o, sk_error *err)
{
    *out = NULL;
    SK_GUARD(sk_s3_libs_load(err));
    SK_GUARD(sk_curl_trust_check(0, err));
    sk_urlfetch *f = calloc(1, sizeof *f);
    SK_FAIL_IF(!f, err, SK_E_NOMEM, "out of memory");
    f->o = *o;
    if (f->o.concurrency <= 0) f->o.concurrency = 64;
    if (f->o.per_host <= 0) f->o.per_host = 16;
    if (!f->o.max_bytes) f->o.max_bytes = (uint64_t)32 << 20;
    if (f->o.timeout_ms <= 0) f->o.timeout_ms = 10000;
    if (f->o.low_speed <= 0) f->o.low_speed = 1024;
    if (f->o.retry_after_max_ms <= 0) f->o.retry_after_max_ms = 60000;
    if (!f->o.user_agent) f->o.user_agent = "shardkit";
    if (f->o.allow_private && f->o.allow_cidrs) {
        int rc = parse_cidrs(f, f->o.allow_cidrs, err);
        if (rc) {
            sk_urlfetch_free(f);
            return rc;
        }
    }
    f->nx = (size_t)f->o.concurrency;
    f->x = calloc(f->nx, sizeof *f->x);
    f->spare_max = f->nx + (size_t)(f->o.keep_bodies > 0 ? f->o.keep_bodies : 0);
    f->spare = calloc(f->spare_max, sizeof *f->spare);
    f->m = sk_curl.multi_init();
    if (!f->x || !f->spare || !f->m) {
        sk_urlfetch_free(f);
        return sk_error_set(err, SK_E_NOMEM, "out of memory (curl multi handle)");
    }
    sk_curl.multi_setopt(f->m, CURLMOPT_MAX_HOST_CONNECTIONS, (long)f->o.per_host);
    sk_curl.multi_setopt(f->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)f->o.concurrency);
    sk_curl.multi_setopt(f->m, CURLMOPT_MAXCONNECTS, (long)f->o.concurrency);
    for (size_t i = 0; i < f->nx; i++) {
        f->x[i].f = f;
        if (!(f->x[i].c = sk_curl.easy_init())) {
            sk_urlfetch_free(f);
            return sk_error_set(err, SK_E_NOMEM, "out of memory (curl handle)");
        }
    }
    *out = f;
    return SK_OK;
}

int sk_urlfetch_add(sk_urlfetch *f, const char *url, void *ctx, sk_error *err)
{
    xfer *t = NULL;
    for (size_t i = 0; i < f->nx && !t; i++)
        if (f->x[i].state == T_FREE) t = &f->x[i];
    SK_FAIL_IF(!t, err, SK_E_USAGE, "downloader: more than %d URLs queued", f->o.concurrency);
    t->url = strdup(url);
    SK_FAIL_IF(!t->url, err, SK_E_NOMEM, "out of memory");
    t->ctx = ctx;
    t->attempts = 0;
    t->bytes = 0;
    t->state = T_QUEUED;
    f->pending++;
    return SK_OK;
}

size_t sk_urlfetch_pending(const sk_urlfetch *f)
{
    return f->pending;
}

void sk_urlfetch_wakeup(sk_urlfetch *f)
{
    sk_curl.multi_wakeup(f->m);
}

static int retryable(CURLcode cc, long http)
{
    switch (cc) {
    case CURLE_OK: return http == 429 || http >= 500;
    case CURLE_COULDNT_RESOLVE_HOST: case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT:
    case CURLE_RECV_ERROR: case CURLE_SEND_ERROR: case CURLE_PARTIAL_FILE: case CURLE_GOT_NOTHING:
    case CURLE_HTTP2: case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR:
        return 1;
    default: return 0;
    }
}

/* p past a number ("-1" too), and past the word w; NULL when it is not
 * there (or p is NULL). */
static const char *number(const char *p)
{
    if (p && *p == '-') p++;
    if (!p || *p < '0' || *p > '9') return NULL;
    while (*p >= '0' && *p <= '9') p++;
    return p;
}

static const char *word(const char *p, const char *w)
{
    size_t n = strlen(w);
    return p && !strncmp(p, w, n) ? p + n : NULL;
}

/* curl's messages say how long an attempt took and how much had arrived
 * ("Failed to connect to h port 80 after 3 ms: ...", "Operation timed out
 * after 10001 milliseconds with 512 out of 2048 bytes received").  A row's
 * status line says what happened and its "ms" how long: with these in the
 * message the same answers would give other status lines, and stats.json
 * would count one kind of error under many names.  Cut out in place. */
static void untimed(char *s)
{
    for (char *p = s; *p; p++) {
        const char *e = NULL, *n;
        if ((n = number(word(p, " after ")))) {
            e = word(n, " ms");
            if (!e) e = word(n, " milliseconds");
        } else if ((n = number(word(p, " with ")))) {
            if (word(n, " out of ")) n = number(word(n, " out of "));
            e = word(n, " bytes received");
        }
        if (e && (*e < 'a' || *e > 'z')) {
            memmove(p, e, strlen(e) + 1);
            p--;
        }
    }
}

/* Hands a finished transfer back and frees its place. */
static void hand_back(sk_urlfetch *f, xfer *t, int ok, const char *why, sk_urlfetch_done_fn done,
                      void *cb_ctx)
{
    sk_urlfetch_result r = {.ctx = t->ctx, .ok = ok, .http = t->http, .body = t->body,
                            .bytes = t->bytes, .ms = now_ms() - t->t0, .attempts = t->attempts};
    snprintf(r.error, sizeof r.error, "%s", ok ? "" : why);
    untimed(r.error);
    t->body = (sk_buf){0};
    free(t->url);
    t->url = NULL;
    t->state = T_FREE;
    f->pending--;
    done(cb_ctx, &r);
}

/* What one attempt came to: handed back, or asleep until its retry. */
static void finished(sk_urlfetch *f, xfer *t, CURLcode cc, sk_urlfetch_done_fn done, void *cb_ctx)
{
    char why[200];
    long http = 0;
    sk_curl.easy_getinfo(t->c, CURLINFO_RESPONSE_CODE, &http);
    sk_curl.multi_remove_handle(f->m, t->c);
    t->http = http;
    if (cc == CURLE_OK && http >= 200 && http < 300) {
        if (t->robots_no) { /* an empty body never reached on_body */
            snprintf(why, sizeof why, "X-Robots-Tag forbids it (one of %.120s)", f->o.robots_directives);
            hand_back(f, t, 0, why, done, cb_ctx);
        } else {
            if (!t->body.p && !take_body(f, t, 1)) t->body.p[0] = 0; /* an empty body */
            hand_back(f, t, 1, "", done, cb_ctx);
        }
        return;
    }
    /* ours first: a refusal or a stop is not the server's failure */
    if (t->refused[0]) { hand_back(f, t, 0, t->refused, done, cb_ctx); return; }
    if (t->stop[0]) { hand_back(f, t, 0, t->stop, done, cb_ctx); return; }
    if (cc == CURLE_OK) snprintf(why, sizeof why, "HTTP %ld", http);
    else if (cc == CURLE_TOO_MANY_REDIRECTS) snprintf(why, sizeof why, "more than 5 redirects");
    else if (cc == CURLE_OPERATION_TIMEDOUT)
        snprintf(why, sizeof why, "timed out (%s)", t->errbuf[0] ? t->errbuf : "no answer in time");
    else if (cc == CURLE_FILESIZE_EXCEEDED)
        snprintf(why, sizeof why, "body over --max-image-bytes (%llu bytes)",
                 (unsigned long long)f->o.max_bytes);
    else if (cc == CURLE_UNSUPPORTED_PROTOCOL)
        snprintf(why, sizeof why, "not an http or https URL (%s)", t->errbuf[0] ? t->errbuf : "refused");
    else
        snprintf(why, sizeof why, "%s", t->errbuf[0] ? t->errbuf : sk_curl.easy_strerror(cc));
    if (t->attempts > f->o.retries || !retryable(cc, http)) { hand_back(f, t, 0, why, done, cb_ctx); return; }
    double wait = 500.0 * (double)(1 << (t->attempts > 5 ? 5 : t->attempts - 1));
    if ((http == 429 || http == 503) && t->retry_after >= 0) {
        if ((double)t->retry_after * 1e3 > (double)f->o.retry_after_max_ms) {
            char more[260];
            snprintf(more, sizeof more, "%s (Retry-After %ld s is longer than we wait)", why,
                     t->retry_after);
            { hand_back(f, t, 0, more, done, cb_ctx); return; }
        }
        wait = (double)t->retry_after * 1e3;
    }
    t->state = T_SLEEPING;
    t->wake_at = now_ms() + wait;
}

int sk_urlfetch_run(sk_urlfetch *f, int wait_ms, sk_urlfetch_done_fn done, void *cb_ctx,
                    sk_error *err)
{
    double now = now_ms(), next = now + wait_ms;
    for (size_t i = 0; i < f->nx; i++) {
        xfer *t = &f->x[i];
        if (t->state == T_QUEUED || (t->state == T_SLEEPING && t->wake_at <= now))
            SK_GUARD(start(f, t, err));
        else if (t->state == T_SLEEPING && t->wake_at < next)
            next = t->wake_at;
    }
    int running = 0, left = 0;
    CURLMcode mc = sk_curl.multi_perform(f->m, &running);
    SK_FAIL_IF(mc != CURLM_OK, err, SK_E_NET, "curl_multi_perform: %d", (int)mc);
    int got = 0;
    CURLMsg *msg;
    while ((msg = sk_curl.multi_info_read(f->m, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        xfer *t = NULL;
        sk_curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        finished(f, t, msg->data.result, done, cb_ctx);
        got++;
    }
    if (got) return SK_OK;
    int wait = (int)(next - now_ms());
    if (wait < 0) wait = 0;
    mc = sk_curl.multi_poll(f->m, NULL, 0, wait, NULL);
    SK_FAIL_IF(mc != CURLM_OK, err, SK_E_NET, "curl_multi_poll: %d", (int)mc);
    mc = sk_curl.multi_perform(f->m, &running);
    SK_FAIL_IF(mc != CURLM_OK, err, SK_E_NET, "curl_multi_perform: %d", (int)mc);
    while ((msg = sk_curl.multi_info_read(f->m, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        xfer *t = NULL;
        sk_curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        finished(f, t, msg->data.result, done, cb_ctx);
    }
    return SK_OK;
}

void sk_urlfetch_free(sk_urlfetch *f)
{
    if (!f) return;
    for (size_t i = 0; f->x && i < f->nx; i++) {
        xfer *t = &f->x[i];
        if (t->state == T_RUNNING) sk_curl.multi_remove_handle(f->m, t->c);
        if (t->c) sk_curl.easy_cleanup(t->c);
        free(t->url);
        sk_buf_free(&t->body);
    }
    if (f->m) sk_curl.multi_cleanup(f->m);
    for (size_t i = 0; i < f->nspare; i++) free(f->spare[i].p);
    free(f->spare);
    free(f->x);
    free(f->allow);
    free(f);
}
