/*
 * store_http.c - a file published on a web server (http:// or https://)
 * as a store: a HEAD for its size, ranged GETs, one streaming GET per
 * sequential read, all through the S3 engine's plain-HTTP client
 * (s3/http_client.c): the same retries, low-speed timeouts and caps as S3,
 * TLS verified, redirects followed (at most five, to http/https only), and
 * a server that ignores Range refused with the URL named.
 */
#include "io/store_remote.h"

#include <stdlib.h>
#include <string.h>

int sk_store_http_open(sk_store **out, const char *url, sk_s3 *http, sk_error *err)
{
    *out = NULL;
    SK_FAIL_IF(!sk_store_is_http(url), err, SK_E_USAGE, "%s: not an http:// or https:// URL", url);
    const char *host = strstr(url, "://") + 3;
    SK_FAIL_IF(!*host || *host == '/', err, SK_E_USAGE, "%s: no host in the URL", url);
    /* the URL goes into a request line: no spaces or control bytes */
    for (const unsigned char *p = (const unsigned char *)url; *p; p++)
        SK_FAIL_IF(*p <= ' ' || *p == 0x7f, err, SK_E_USAGE,
                   "%s: a URL holds no spaces or control characters", url);
    SK_FAIL_IF(strlen(url) >= 2000, err, SK_E_USAGE, "%.200s...: URL too long", url);
    char *bucket = strdup(""), *key = strdup(url);
    return sk_remote_new(out, url, http, bucket, key, err);
}
