/* fuzz_urllist.c - URL lists (format/urllist.c) from any bytes, in each
 * format, with a small row cap and the input given in uneven pieces:
 * every row is read or reported, nothing read past its buffer. */
#include "format/urllist.h"

#include <stdlib.h>

struct piece {
    const uint8_t *p;
    size_t len, at;
};

static int feed(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct piece *s = ctx;
    (void)err;
    size_t n = s->len - s->at;
    size_t step = 1 + (s->at * 7) % 13; /* uneven reads cross every boundary */
    if (n > step) n = step;
    if (n > cap) n = cap;
    memcpy(buf, s->p + s->at, n);
    s->at += n;
    *got = n;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *extra[2] = {"a", "caption"};
    sk_urllist_opts o = {.format = SK_URLLIST_TXT + data[0] % 4, .max_row = 256};
    if (o.format != SK_URLLIST_TXT) o.caption_col = "caption", o.extra = extra, o.nextra = 1;
    struct piece s = {data + 1, size - 1, 0};
    sk_error err = SK_ERROR_INIT;
    sk_urllist *l;
    if (sk_urllist_open(&l, feed, &s, "fuzz", &o, &err)) return 0;
    sk_url_row r;
    volatile unsigned sum = 0; /* every byte handed out is read, so ASan sees any overrun */
    while (sk_urllist_next(l, &r, &err) == 1) {
        for (size_t i = 0; r.url && i < r.url_len; i++) sum += (unsigned char)r.url[i];
        for (size_t i = 0; r.caption && i < r.caption_len; i++) sum += (unsigned char)r.caption[i];
        for (size_t i = 0; r.extra[0] && i < r.extra_len[0]; i++) sum += (unsigned char)r.extra[0][i];
    }
    sk_urllist_close(l);
    return 0;
}
