/*
 * buf.c - the one growable memory of libshardkit: sk_grow for arrays of any
 * element type, and sk_buf, a NUL-terminated byte buffer for text built a
 * piece at a time (S3 request paths, XML bodies, manifests read whole).
 *
 * Capacity doubles so that n appends cost O(n) copies in all; every size is
 * checked for overflow first, because need often comes from untrusted counts.
 */
#include "core/internal.h"

#include <stdint.h>
#include <stdlib.h>

int sk_grow(void **p, size_t *cap, size_t need, size_t unit, sk_error *err)
{
    if (need <= *cap) return SK_OK;
    size_t n = *cap ? *cap : 64;
    while (n < need) {
        if (n > SIZE_MAX / 2) { n = need; break; }
        n *= 2;
    }
    if (unit && n > SIZE_MAX / unit)
        return sk_error_set(err, SK_E_NOMEM, "cannot allocate %zu elements of %zu bytes", need, unit);
    void *q = sk_xrealloc(*p, n * unit, err);
    if (!q) return SK_E_NOMEM;
    *p = q;
    *cap = n;
    return SK_OK;
}

int sk_buf_add(sk_buf *b, const void *p, size_t n)
{
    if (n > SIZE_MAX - b->len - 1) return SK_E_NOMEM;
    /* The callers (curl write callbacks, XML builders) report a bare code;
     * the request they serve names the URL in its own error. */
    if (sk_grow((void **)&b->p, &b->cap, b->len + n + 1, 1, NULL)) return SK_E_NOMEM;
    if (n) memcpy(b->p + b->len, p, n);
    b->len += n;
    b->p[b->len] = 0;
    return SK_OK;
}

void sk_buf_free(sk_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}
