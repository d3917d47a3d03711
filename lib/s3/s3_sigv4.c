/*
 * s3_sigv4.c - AWS Signature Version 4: the canonical request, the string to
 * sign, the derived key and the Authorization header; plus the encodings the
 * signature depends on (RFC 3986 URI encoding, hex SHA-256, base64 CRC32C).
 *
 * The secret key only ever enters the HMAC; nothing here formats it.
 */
#include "s3/s3_internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int sk_s3_uri_encode(sk_buf *b, const char *s, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char e[3];
        if (isalnum(*p) || *p == '-' || *p == '_' || *p == '.' || *p == '~' ||
            (keep_slash && *p == '/')) {
            if (sk_buf_add(b, p, 1)) return SK_E_NOMEM;
            continue;
        }
        e[0] = '%', e[1] = hex[*p >> 4], e[2] = hex[*p & 15];
        if (sk_buf_add(b, e, 3)) return SK_E_NOMEM;
    }
    return sk_buf_add(b, "", 0);
}

static void to_hex(const unsigned char *d, size_t n, char *out)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[2 * i] = hex[d[i] >> 4], out[2 * i + 1] = hex[d[i] & 15];
    out[2 * n] = 0;
}

void sk_s3_sha256_hex(const void *data, size_t len, char out[65])
{
    unsigned char d[32];
    sk_s3_sha256(data, len, d);
    to_hex(d, sizeof d, out);
}

void sk_s3_crc32c_b64(uint32_t crc, char out[9])
{
    /* base64 of the 4 big-endian bytes: 6 characters and "==" */
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint64_t v = (uint64_t)crc << 16; /* 48 bits: 8 sextets, the last two padding */
    for (int i = 0; i < 6; i++) out[i] = b64[(v >> (42 - 6 * i)) & 63];
    out[6] = out[7] = '=';
    out[8] = 0;
}

static void hmac(const void *key, size_t klen, const char *msg, unsigned char out[32])
{
    sk_s3_hmac_sha256(key, klen, msg, strlen(msg), out);
}

/* One canonical header: lowercase name, value trimmed with inner runs of
 * spaces collapsed to one. */
typedef struct canon_hdr {
    char *name, *value;
} canon_hdr;

static int hdr_cmp(const void *a, const void *b)
{
    return strcmp(((const canon_hdr *)a)->name, ((const canon_hdr *)b)->name);
}

static int parse_hdr(const char *h, canon_hdr *out)
{
    const char *colon = strchr(h, ':');
    if (!colon) return -1;
    out->name = strndup(h, (size_t)(colon - h));
    out->value = malloc(strlen(colon) + 1);
    if (!out->name || !out->value) return -1;
    for (char *p = out->name; *p; p++) *p = (char)tolower((unsigned char)*p);
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    char *w = out->value;
    int space = 0;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            space = 1;
            continue;
        }
        if (space && w != out->value) *w++ = ' ';
        space = 0;
        *w++ = *v;
    }
    *w = 0;
    return 0;
}

static int str_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The canonical query: pairs sorted by encoded name then value, a bare
 * name given an empty value ("uploads" -> "uploads="). */
static int canon_query(const char *q, sk_buf *out)
{
    if (!q || !*q) return sk_buf_add(out, "", 0);
    char *copy = strdup(q);
    size_t n = 1;
    for (const char *p = q; *p; p++) n += *p == '&';
    char **parts = calloc(n, sizeof *parts);
    if (!copy || !parts) {
        free(copy), free(parts);
        return SK_E_NOMEM;
    }
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(copy, "&", &save); t; t = strtok_r(NULL, "&", &save))
        parts[k++] = t;
    qsort(parts, k, sizeof *parts, str_cmp);
    int rc = 0;
    for (size_t i = 0; i < k && !rc; i++) {
        if (i) rc |= sk_buf_add(out, "&", 1);
        rc |= sk_buf_add(out, parts[i], strlen(parts[i]));
        if (!strchr(parts[i], '=')) rc |= sk_buf_add(out, "=", 1);
    }
    free(copy), free(parts);
    return rc ? SK_E_NOMEM : sk_buf_add(out, "", 0);
}

int sk_s3_sigv4_sign(const sk_s3_sigv4_input *in, char *auth, size_t auth_capacity, sk_error *err)
{
    SK_GUARD(sk_s3_libs_load(err)); /* the digests' libcrypto */
    int rc = SK_E_NOMEM;
    sk_buf creq = {0}, signed_hdrs = {0}, sts = {0};
    canon_hdr *h = calloc(in->nheaders ? in->nheaders : 1, sizeof *h);
    if (!h) goto cleanup;
    for (size_t i = 0; i < in->nheaders; i++)
        if (parse_hdr(in->headers[i], &h[i])) goto cleanup;
    qsort(h, in->nheaders, sizeof *h, hdr_cmp);

    if (sk_buf_add(&creq, in->method, strlen(in->method)) || sk_buf_add(&creq, "\n", 1) ||
        sk_buf_add(&creq, in->canonical_uri, strlen(in->canonical_uri)) ||
        sk_buf_add(&creq, "\n", 1) || canon_query(in->query, &creq) ||
        sk_buf_add(&creq, "\n", 1))
        goto cleanup;
    for (size_t i = 0; i < in->nheaders; i++) {
        if (sk_buf_add(&creq, h[i].name, strlen(h[i].name)) || sk_buf_add(&creq, ":", 1) ||
            sk_buf_add(&creq, h[i].value, strlen(h[i].value)) || sk_buf_add(&creq, "\n", 1))
            goto cleanup;
        if ((i && sk_buf_add(&signed_hdrs, ";", 1)) ||
            sk_buf_add(&signed_hdrs, h[i].name, strlen(h[i].name)))
            goto cleanup;
    }
    if (sk_buf_add(&creq, "\n", 1) || sk_buf_add(&creq, signed_hdrs.p, signed_hdrs.len) ||
        sk_buf_add(&creq, "\n", 1) ||
        sk_buf_add(&creq, in->payload_hash, strlen(in->payload_hash)))
        goto cleanup;

    char date[9], creq_hash[65], scope[160];
    memcpy(date, in->amz_date, 8);
    date[8] = 0;
    snprintf(scope, sizeof scope, "%s/%s/%s/aws4_request", date, in->region, in->service);
    sk_s3_sha256_hex(creq.p, creq.len, creq_hash);
    char line[512];
    snprintf(line, sizeof line, "AWS4-HMAC-SHA256\n%s\n%s\n%s", in->amz_date, scope, creq_hash);
    if (sk_buf_add(&sts, line, strlen(line))) goto cleanup;

    /* kDate = HMAC("AWS4" + secret, date) ... kSigning = HMAC(kService, "aws4_request") */
    size_t slen = strlen(in->secret_key);
    char *k0 = malloc(slen + 5);
    if (!k0) goto cleanup;
    memcpy(k0, "AWS4", 4);
    memcpy(k0 + 4, in->secret_key, slen + 1);
    unsigned char k[32], sig[32];
    hmac(k0, slen + 4, date, k);
    explicit_bzero(k0, slen + 4);
    free(k0);
    hmac(k, 32, in->region, k);
    hmac(k, 32, in->service, k);
    hmac(k, 32, "aws4_request", k);
    hmac(k, 32, sts.p, sig);
    explicit_bzero(k, sizeof k);
    char sighex[65];
    to_hex(sig, 32, sighex);
    int n = snprintf(auth, auth_capacity,
                     "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
                     in->access_key, scope, signed_hdrs.p, sighex);
    rc = n < 0 || (size_t)n >= auth_capacity ? SK_E_USAGE : 0;
cleanup:
    if (h)
        for (size_t i = 0; i < in->nheaders; i++) free(h[i].name), free(h[i].value);
    free(h);
    sk_buf_free(&creq), sk_buf_free(&signed_hdrs), sk_buf_free(&sts);
    if (rc == SK_E_NOMEM) return sk_error_set(err, rc, "signing a request: out of memory");
    if (rc) return sk_error_set(err, rc, "signing a request: Authorization header too long");
    return 0;
}
