/*
 * error.c - the one error scheme of libshardkit: a pinned code plus a message
 * kept in the caller's sk_error, and the library's version.
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

int sk_error_set(sk_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
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
    char msg[SK_ERROR_MAX + 128];
    vsnprintf(msg, sizeof msg, fmt, ap);
    warn(ctx, msg);
    return 1;
}
