/*
 * fetch_urls.h - the downloader of `pack --from-urls` (fetch_urls.c): many
 * GETs of untrusted URLs at once through one libcurl multi handle, each
 * bounded in bytes and time, retried as asked, and refused when the
 * address actually connected to is one a URL list must not reach.
 * Internal to libshardkit.
 *
 * One thread drives a fetcher (sk_urlfetch_run); another may only wake it
 * (sk_urlfetch_wakeup).
 */
#ifndef SK_PACK_FETCH_URLS_H
#define SK_PACK_FETCH_URLS_H

#include "core/internal.h"

struct sockaddr;

typedef struct sk_urlfetch_opts {
    int concurrency;          /* transfers at once (0: 64) */
    int per_host;             /* connections to one host at once (0: 16) */
    uint64_t max_bytes;       /* a body over it is refused while it arrives (0: 32 MiB) */
    long timeout_ms;          /* one attempt, connection to last byte (0: 10 s) */
    long low_speed;           /* bytes/s an attempt must keep up over timeout_ms/2 (0: 1024) */
    int retries;              /* further attempts after a retryable failure */
    long retry_after_max_ms;  /* longest Retry-After honoured (0: 60 s); longer fails */
    int allow_private;        /* fetch loopback, private, link-local, multicast too */
    const char *allow_cidrs;  /* with allow_private: only within these ("127.0.0.0/8,
                               * fd00::/8"); NULL: any */
    const char *user_agent;   /* the User-Agent header */
    const char *robots_token; /* our token in X-Robots-Tag (NULL: none) */
    const char *robots_directives; /* that forbid use (NULL or "": no check) */
    int keep_bodies;          /* bodies the caller holds at once after they are handed back
                               * (its reorder window): spare body buffers are kept for at
                               * most concurrency + keep_bodies of them */
} sk_urlfetch_opts;

/* What became of one URL. */
typedef struct sk_urlfetch_result {
    void *ctx;        /* the caller's, from sk_urlfetch_add */
    int ok;           /* 1: body holds a 2xx response's whole body */
    long http;        /* the last response's status, 0 when none came */
    sk_buf body;      /* the caller's now: sk_urlfetch_give_back (or sk_buf_free) */
    char error[200];  /* why not ok: "HTTP 404", "timed out", "refused: ..." */
    uint64_t bytes;   /* body bytes received, all attempts */
    double ms;        /* from the first attempt's start to the end */
    int attempts;
} sk_urlfetch_result;

typedef struct sk_urlfetch sk_urlfetch;
typedef void (*sk_urlfetch_done_fn)(void *cb_ctx, sk_urlfetch_result *r);

/* Loads libcurl (on first use) and makes a fetcher; SK_E_USAGE names an
 * allow_cidrs entry that is not an address/prefix. */
int sk_urlfetch_new(sk_urlfetch **out, const sk_urlfetch_opts *o, sk_error *err);
/* Queues url (copied); the caller keeps at most concurrency queued (the
 * transfers not yet handed back, sk_urlfetch_pending).  A URL that is not
 * http or https is handed back failed at the next run. */
int sk_urlfetch_add(sk_urlfetch *f, const char *url, void *ctx, sk_error *err);
/* Transfers queued and not handed back yet (waiting retries included). */
size_t sk_urlfetch_pending(const sk_urlfetch *f);
/* Moves the transfers on, waiting at most wait_ms for something to
 * happen; done gets each finished one.  An error only when libcurl itself
 * fails. */
int sk_urlfetch_run(sk_urlfetch *f, int wait_ms, sk_urlfetch_done_fn done, void *cb_ctx,
                    sk_error *err);
/* Takes a body handed back (a result's, once the caller is done with it)
 * back into the fetcher's spare buffers, for a later transfer to fill:
 * its pages stay mapped and touched.  *body is emptied.  Called from the
 * thread that drives the fetcher. */
void sk_urlfetch_give_back(sk_urlfetch *f, sk_buf *body);
/* Body buffers made so far (the rest of the bodies reused spare ones):
 * at most concurrency + keep_bodies when every body is given back. */
uint64_t sk_urlfetch_buffers_made(const sk_urlfetch *f);
/* Makes a sk_urlfetch_run waiting in another thread return early. */
void sk_urlfetch_wakeup(sk_urlfetch *f);
void sk_urlfetch_free(sk_urlfetch *f);

/* Whether a URL list may not reach address a (IPv4 or IPv6): loopback,
 * unspecified, private (RFC 1918, CGNAT 100.64/10, IPv6 ULA fc00::/7),
 * link-local (169.254/16 -- cloud metadata --, fe80::/10), multicast,
 * reserved, and IPv4 inside an IPv4-mapped IPv6 address.  1 with what in
 * why (and the address), else 0. */
int sk_urlfetch_addr_blocked(const struct sockaddr *a, char *why, size_t cap);

#endif
