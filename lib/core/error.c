/*
 * error.c - the one error scheme of libshardkit: a pinned code plus a message
 * kept in the caller's sk_error, and the library's version.  Every message
 * made here has its control characters escaped (sk_escape_text): names in
 * them come from tars, keys, manifests and listings, and an ESC or BEL in
 * one must not reach a terminal.
 */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

const char *sk_version(void)
{
    return SK_VERSION;
}

const char *sk_code_name(int code)
{
    static const char *const names[] = {
        [SK_OK] = "success",
        [SK_E_USAGE] = "usage error",
        [SK_E_IO] = "I/O error",
        [SK_E_INPUT] = "bad input",
        [SK_E_CORRUPT] = "corrupt data",
        [SK_E_NOMEM] = "out of memory",
        [SK_E_NET] = "network error",
        [SK_E_REMOTE] = "server error",
        [SK_E_NOTFOUND] = "not found",
        [SK_E_MISMATCH] = "mismatch",
    };
    if (code < 0 || (size_t)code >= SK_ARRAY_LEN(names) || !names[code])
        return "unknown error";
    return names[code];
}

/* The length of the valid UTF-8 sequence at p (at most n bytes) that is
 * not a C1 control (U+0080..U+009F, which terminals act on); 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    size_t len = p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : p[0] >= 0xe0 && p[0] <= 0xef ? 3
               : p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80) return 0;
    if (len == 2 && p[0] == 0xc2 && p[1] < 0xa0) return 0;           /* C1 */
    if (len == 3 && ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0)))
        return 0;                                                     /* overlong, surrogate */
    if (len == 4 && ((p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90)))
        return 0;                                                     /* overlong, > U+10FFFF */
    return len;
}

size_t sk_escape_text(char *dst, size_t cap, const char *src)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t n = strlen(src), k = 0;
    if (!cap) return 0;
    for (size_t i = 0; i < n;) {
        size_t len = s[i] < 0x20 || s[i] == 0x7f ? 0 : s[i] < 0x80 ? 1 : utf8_len(s + i, n - i);
        if (len) {
            if (k + len >= cap) break;
            memcpy(dst + k, s + i, len);
            k += len, i += len;
        } else {
            if (k + 4 >= cap) break;
            k += (size_t)snprintf(dst + k, cap - k, "\\x%02x", s[i++]);
        }
    }
    dst[k] = 0;
    return k;
}

int sk_error_set(sk_error *err, int code, const char *fmt, ...)
{
    if (err) {
        char raw[SK_ERROR_MAX];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof raw, fmt, ap);
        va_end(ap);
        sk_escape_text(err->msg, sizeof err->msg, raw);
        err->code = code;
    }
    return code;
}

void *sk_xmalloc(size_t n, sk_error *err)
{
    void *p = malloc(n ? n : 1);
    if (!p) sk_error_set(err, SK_E_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *sk_xrealloc(void *p, size_t n, sk_error *err)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) sk_error_set(err, SK_E_NOMEM, "out of memory allocating %zu bytes", n);
    return q;
}

int sk_vwarnf(void (*warn)(void *, const char *), void *ctx, const char *fmt, va_list ap)
{
    if (!warn) return 0;
    char raw[SK_ERROR_MAX + 128], msg[SK_ERROR_MAX + 128];
    vsnprintf(raw, sizeof raw, fmt, ap);
    sk_escape_text(msg, sizeof msg, raw);
    warn(ctx, msg);
    return 1;
}
