/*
 * s3_resp.c - what the engine takes from a response's header lines, S3's
 * and a web server's alike: the ETag, S3's CRC32C, shardkit's own
 * x-amz-meta-shardkit-etag and the Content-Length.  Every line comes from
 * the server, so this is a parser of untrusted bytes, kept apart from the
 * engine (s3_engine.c hands it each line curl gives its header callback)
 * so that fuzz/fuzz_http_resp.c can feed it any lines.
 *
 * Values are copied bounded into the request's fixed fields (a longer one
 * keeps a hash of the rest, never overruns them); a new status line
 * (after 100 Continue, or a redirect's answer before the one followed)
 * forgets what earlier answers said, so only the final answer's headers
 * count.
 */
#include "s3/s3_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int blank(char c)
{
    return c == ' ' || c == '\t'; /* HTTP's optional white space */
}

/* The value of "Name: value\r\n" as [*v, *e): leading and trailing blanks
 * (space or tab) and the line end dropped; quotes too when strip_quotes. */
static void hdr_span(const char *line, size_t n, int strip_quotes, const char **vp, const char **ep)
{
    const char *v = memchr(line, ':', n), *e = line + n;
    v = v ? v + 1 : e;
    while (v < e && (blank(*v) || (strip_quotes && *v == '"'))) v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || blank(e[-1]) || (strip_quotes && e[-1] == '"')))
        e--;
    *vp = v, *ep = e;
}

/* The value into out (cap bytes, NUL-terminated).  One longer than the
 * field keeps its first bytes and ends in "~" and 16 hex digits of a
 * 64-bit FNV-1a hash of the whole value: two long ETags that differ only
 * past the field are still two validators (cut off, they were one, and a
 * cache keyed by the ETag served the replaced object's old copy), and an
 * If-Match with it is refused (412) rather than matched. */
static void hdr_value(const char *line, size_t n, char *out, size_t cap)
{
    const char *v, *e;
    hdr_span(line, n, 1, &v, &e);
    size_t len = (size_t)(e - v);
    if (len < cap) {
        memcpy(out, v, len);
        out[len] = 0;
        return;
    }
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *q = v; q < e; q++) h = (h ^ (unsigned char)*q) * 0x100000001b3ull;
    size_t keep = cap - 18; /* "~" + 16 hex + NUL */
    memcpy(out, v, keep);
    snprintf(out + keep, 18, "~%016llx", (unsigned long long)h);
}

/* Content-Length: digits only (leading zeros allowed, as curl takes them),
 * within 64 bits; anything else is no length (curl refuses a negative or
 * non-numeric one; a cut-off copy of a long one used to read as 0). */
static void hdr_length(sk_s3_req *r, const char *line, size_t n)
{
    const char *v, *e;
    hdr_span(line, n, 0, &v, &e);
    uint64_t x = 0;
    r->has_length = 0;
    if (v == e) return;
    for (; v < e; v++) {
        if (*v < '0' || *v > '9' || x > (UINT64_MAX - (uint64_t)(*v - '0')) / 10) return;
        x = x * 10 + (uint64_t)(*v - '0');
    }
    r->content_length = x;
    r->has_length = 1;
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
        hdr_length(r, p, len);
    }
}
