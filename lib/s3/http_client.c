/*
 * http_client.c - plain http(s):// URLs through the S3 engine: a web
 * server's shards and manifests are read with the same connection reuse,
 * retries with backoff, low-speed timeouts and streaming GETs as S3
 * objects, without a signature or credentials.
 *
 * A plain request's key is its whole URL (the bucket is unused).  What a
 * web server may do that S3 does not is refused here, naming the URL:
 *   - answer a ranged GET with 200 and the whole file (a server that
 *     ignores Range): never read silently as if it were the range;
 *   - send more than the range asked for (an endless body);
 *   - redirect without end, or to anything but http/https.
 * A body shorter than its Content-Length is curl's CURLE_PARTIAL_FILE,
 * which the engine retries from the byte where it stopped, then reports.
 */
#include "s3/s3_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Redirects followed per request: a web server moving files to a CDN
 * takes one or two; a loop is cut here. */
#define HTTP_MAX_REDIRS 5L

int sk_http_build(sk_s3_req *r)
{
    size_t n = strlen(r->key);
    if (n >= sizeof r->url) return sk_error_set(&r->err, SK_E_USAGE, "%.200s...: URL too long", r->key);
    memcpy(r->url, r->key, n + 1);
    sk_curl.slist_free_all(r->hl);
    r->hl = NULL;
    r->ranged = 0;
    for (int i = 0; i < r->nhdrs; i++) {
        if (!strncasecmp(r->hdrs[i], "range:", 6)) r->ranged = 1;
        r->hl = sk_curl.slist_append(r->hl, r->hdrs[i]);
    }
    /* the whole file as stored, not a gzip of it: offsets are into the bytes */
    r->hl = sk_curl.slist_append(r->hl, "Accept-Encoding: identity");
    return r->hl ? SK_OK : sk_error_set(&r->err, SK_E_NOMEM, "out of memory");
}

void sk_http_setopts(sk_s3_req *r, CURL *c)
{
    (void)r;
    sk_curl.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    sk_curl.easy_setopt(c, CURLOPT_MAXREDIRS, HTTP_MAX_REDIRS);
    sk_curl.easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    sk_curl.easy_setopt(c, CURLOPT_PATH_AS_IS, 0L); /* a URL's "../" is resolved as browsers do */
}

int sk_http_body_check(sk_s3_req *r, long code)
{
    if (r->ranged && code != 206) return SK_HTTP_RANGE_IGNORED;
    return 0;
}

int sk_http_classify(sk_s3_req *r)
{
    long st = 0;
    if (r->easy) sk_curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &st);
    r->status = st;
    if (r->refused == SK_HTTP_RANGE_IGNORED) {
        r->rc = sk_error_set(&r->err, SK_E_REMOTE,
                             "%s: the server answered a ranged GET with HTTP %ld and the whole file: "
                             "it does not serve byte ranges, which reading shards over HTTP needs",
                             r->url, st);
        return 0;
    }
    if (r->refused == SK_HTTP_TOO_LONG) {
        r->rc = sk_error_set(&r->err, SK_E_REMOTE,
                             "%s: the server sent more than the %llu bytes asked for (a body that does not end)",
                             r->url, (unsigned long long)r->range_len);
        return 0;
    }
    if (st >= 200 && st < 300) {
        r->rc = 0;
        return 0;
    }
    /* as S3: 5xx but 501 and 505, 408 and 429 are worth another try */
    int retry = (st >= 500 && st != 501 && st != 505) || st == 408 || st == 429;
    int kind = st == 404 || st == 410 ? SK_E_NOTFOUND : SK_E_REMOTE;
    if (st >= 300 && st < 400)
        r->rc = sk_error_set(&r->err, kind, "%s %s: HTTP %ld: a redirect not followed (more than %ld, "
                             "or not to http/https)", r->method, r->url, st, HTTP_MAX_REDIRS);
    else
        r->rc = sk_error_set(&r->err, kind, "%s %s: HTTP %ld", r->method, r->url, st);
    return retry;
}
