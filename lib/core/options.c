/*
 * options.c - the size rule of the public options structs (shardkit.h):
 * each starts with struct_size, the sizeof the caller compiled with, so a
 * newer library can add fields at the end and still read an older
 * program's struct, filling what that struct lacks with defaults.
 */
#include "core/internal.h"

int sk_options_take(void *dst, size_t dst_size, const void *src, const void *defaults,
                    const char *what, sk_error *err)
{
    if (defaults) memcpy(dst, defaults, dst_size);
    else memset(dst, 0, dst_size);
    if (src) {
        size_t size = *(const size_t *)src;
        if (!size) size = dst_size; /* zeroed by the caller: this version's layout */
        SK_FAIL_IF(size < sizeof(size_t) || size > dst_size, err, SK_E_USAGE,
                   "%s: struct_size %zu is not one this library knows (at most %zu): "
                   "built against another shardkit.h?", what, size, dst_size);
        memcpy(dst, src, size);
    }
    *(size_t *)dst = dst_size;
    return SK_OK;
}

void sk_options_init(void *o, size_t size, const void *defaults, size_t dsize)
{
    memset(o, 0, size);
    memcpy(o, defaults, size < dsize ? size : dsize);
    *(size_t *)o = size < dsize ? size : dsize;
}
