/* fuzz_http_resp.c - a response's header lines as the S3 engine takes
 * them from S3 or a web server (s3/s3_resp.c): status lines, ETag,
 * x-amz-checksum-crc32c, x-amz-meta-shardkit-etag and Content-Length, any
 * bytes cut into lines at '\n' as curl hands them over, then whether a
 * body of the answer may be taken (s3/http_client.c: a 200 to a ranged
 * GET never is).  What must hold: every value kept fits its field,
 * NUL-terminated, with no line end, blank or quote left at either end;
 * a status line forgets what an earlier answer said (the target traps
 * otherwise). */
#include "s3/s3_internal.h"

#include <stdlib.h>

static void check_value(const char *v, size_t cap)
{
    size_t n = strnlen(v, cap);
    if (n == cap) abort(); /* not terminated inside its field */
    if (n && (v[0] == ' ' || v[0] == '"')) abort();
    if (n && strchr("\r\n \"", v[n - 1])) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_s3_req *r = calloc(1, sizeof *r);
    if (!r) return 0;
    const char *p = (const char *)data, *end = p + size;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        /* curl hands each line in a buffer of its own: a copy, so that
         * ASan sees any read past the line's end */
        char *line = malloc(len ? len : 1);
        if (!line) break;
        memcpy(line, p, len);
        sk_s3_header_line(r, line, len);
        int status = len >= 5 && !memcmp(line, "HTTP/", 5);
        free(line);
        if (status && (r->etag[0] || r->crc32c[0] || r->meta_etag[0] || r->has_length)) abort();
        check_value(r->etag, sizeof r->etag);
        check_value(r->crc32c, sizeof r->crc32c);
        check_value(r->meta_etag, sizeof r->meta_etag);
        p += len;
    }
    /* the body check: only a 206 answers a ranged GET */
    for (int ranged = 0; ranged < 2; ranged++) {
        r->ranged = ranged;
        long code = size ? 200 + data[0] % 8 : 200;
        int v = sk_http_body_check(r, code);
        if (ranged && code != 206 && v != SK_HTTP_RANGE_IGNORED) abort();
        if ((!ranged || code == 206) && v) abort();
    }
    free(r);
    return 0;
}
