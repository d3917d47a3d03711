/*
 * sample.c - the WebDataset rule that groups files into samples: the key is
 * a path up to the first dot of its basename, the rest is the extension,
 * compared lowercased.  "a/b.seg.png" is key "a/b", extension "seg.png".
 */
#include "core/internal.h"

int sk_sample_split(const char *path, size_t n, size_t *key_len, size_t *ext_off)
{
    /* memrchr/memchr: called for every member a scan or a pack sees */
    const char *sl = memrchr(path, '/', n);
    size_t base = sl ? (size_t)(sl - path) + 1 : 0;
    const char *dp = memchr(path + base, '.', n - base);
    size_t dot = dp ? (size_t)(dp - path) : n;
    /* Like WebDataset's base_plus_ext: at least one byte before the dot and
     * one after it, so ".hidden" and "name." hold no sample. */
    if (dot == n || dot == base || dot + 1 == n) return SK_E_INPUT;
    *key_len = dot;
    *ext_off = dot + 1;
    return SK_OK;
}

int sk_ext_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = (unsigned char)a[i], cb = (unsigned char)b[i];
        if (ca >= 'A' && ca <= 'Z') ca += 32;
        if (cb >= 'A' && cb <= 'Z') cb += 32;
        if (ca != cb) return ca < cb ? -1 : 1;
    }
    return an < bn ? -1 : an > bn;
}
