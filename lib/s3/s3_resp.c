/*
 * s3_resp.c - what the engine takes from a response's header lines, S3's
 * and a web server's alike: the ETag, S3's CRC32C, shardkit's own
 * x-amz-meta-shardkit-etag and the Content-Length.  Every line comes from
 * the server, so this is a parser of untrusted bytes, kept apart from the
 * engine (s3_engine.c hands it each line curl gives its header callback)
 * so that fuzz/fuzz_http_resp.c can feed it any lines.
 *
 * Values are copied bounded into the request's fixed fields (a longer one
 * is cut, never overrun); a new status line (after 100 Continue, or a
 * redirect's answer before the one followed) forgets what earlier
 * answers said, so only the final answer's headers count.
 */
#include "s3/s3_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The value of "Name: value\r\n" into out: leading and trailing blanks
 * (space or tab, HTTP's OWS) and quotes and the line end dropped, at most
 * cap - 1 bytes. */
static void hdr_value(const char *line, size_t n, char *out, size_t cap)
{
    const char *v = memchr(line, ':', n);
    if (!v) return;
    v++;
    const char *e = line + n;
    while (v < e && (*v == ' ' || *v == '\t' || *v == '"')) v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '"'))
        e--;
    size_t k = (size_t)(e - v) < cap - 1 ? (size_t)(e - v) : cap - 1;
    memcpy(out, v, k);
    out[k] = 0;
}

void sk_s3_header_line(sk_s3_req *r, const char *p, size_t len)
{
    /* A value is a C string from here on: a NUL byte ends the line (curl
     * refuses such lines today; a value must not end in a quote because
     * one hid behind a NUL, found by fuzz_http_resp) */
    const char *nul = memchr(p, 0, len);
    if (nul) len = (size_t)(nul - p);
    if (len >= 5 && !strncmp(p, "HTTP/", 5)) { /* a new status line */
        r->etag[0] = r->crc32c[0] = r->meta_etag[0] = 0;
        r->has_length = 0;
    } else if (len > 5 && !strncasecmp(p, "etag:", 5)) {
        hdr_value(p, len, r->etag, sizeof r->etag);
    } else if (len > 22 && !strncasecmp(p, "x-amz-checksum-crc32c:", 22)) {
        hdr_value(p, len, r->crc32c, sizeof r->crc32c);
    } else if (len > 25 && !strncasecmp(p, "x-amz-meta-shardkit-etag:", 25)) {
        hdr_value(p, len, r->meta_etag, sizeof r->meta_etag);
    } else if (len > 15 && !strncasecmp(p, "content-length:", 15)) {
        char v[32];
        hdr_value(p, len, v, sizeof v);
        r->content_length = strtoull(v, NULL, 10);
        r->has_length = 1;
    }
}
