/*
 * naming.c - shard names from an output pattern ("train-%06d.tar"), and
 * back: which shard number a name is, for finding a killed run's uploads.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>

int sk_shard_name(const char *pattern, uint64_t n, char *buf, size_t cap, sk_error *err)
{
    /* Formatted by hand: a user's pattern never reaches printf, so "%s" or
     * "%n" in it cannot do harm; exactly one integer field is allowed. */
    size_t o = 0;
    int fields = 0;
    for (const char *p = pattern; *p; p++) {
        char tmp[1024]; /* widths up to 999 parse below; all of them must fit */
        const char *piece = p;
        size_t plen = 1;
        if (*p == '%') {
            if (p[1] == '%') {
                piece = "%";
                p++;
            } else {
                const char *q = p + 1;
                int zero = 0, width = 0;
                if (*q == '0') zero = 1, q++;
                while (*q >= '0' && *q <= '9' && width < 100) width = width * 10 + (*q++ - '0');
                if (*q == 'l') q++;
                if (*q == 'l') q++;
                SK_FAIL_IF(!strchr("diux", *q) || !*q, err, SK_E_USAGE,
                           "output pattern '%s': only an integer field (%%d, %%06d, %%u, %%x) "
                           "is allowed", pattern);
                snprintf(tmp, sizeof tmp, *q == 'x' ? (zero ? "%0*llx" : "%*llx")
                                                    : (zero ? "%0*llu" : "%*llu"),
                         width, (unsigned long long)n);
                piece = tmp;
                fields++;
                p = q;
            }
            plen = strlen(piece);
        }
        SK_FAIL_IF(o + plen >= cap, err, SK_E_USAGE, "output pattern '%s': name too long", pattern);
        memcpy(buf + o, piece, plen);
        o += plen;
    }
    buf[o] = 0;
    SK_FAIL_IF(fields != 1, err, SK_E_USAGE,
               "output pattern '%s' needs exactly one integer field such as %%06d", pattern);
    return SK_OK;
}

/* The number n for which the pattern gives name, if any: the name must be
 * the pattern's text before and after its integer field around a run of
 * digits, and formatting n must give the name back (widths, zeros). */
int sk_shard_number(const char *pattern, const char *name, uint64_t *n)
{
    char pre[2048], post[2048], back[2100];
    size_t pl = 0, ql = 0;
    const char *p = pattern;
    for (; *p && pl + 1 < sizeof pre; p++) { /* the text before the field */
        if (*p == '%' && p[1] != '%') break;
        pre[pl++] = *p;
        if (*p == '%') p++;
    }
    if (*p != '%') return 0;
    p += strspn(p + 1, "0123456789l") + 2; /* past "%", flags, width, 'l's and the conversion */
    int hex = p[-1] == 'x';
    for (; *p && ql + 1 < sizeof post; p++) {
        post[ql++] = *p;
        if (*p == '%') p++;
    }
    size_t nl = strlen(name);
    if (nl <= pl + ql || memcmp(name, pre, pl) || memcmp(name + nl - ql, post, ql)) return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(name + pl, &end, hex ? 16 : 10);
    if (errno || end != name + nl - ql || name[pl] == '-' || name[pl] == '+') return 0;
    if (sk_shard_name(pattern, v, back, sizeof back, NULL) || strcmp(back, name)) return 0;
    *n = v;
    return 1;
}
