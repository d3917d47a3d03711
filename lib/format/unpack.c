/*
 * unpack.c - a compressed stream read whole: the pieces after the first
 * (whatever libarchive's filter leaves when its own stream ends) are found
 * by content and decoded in turn.  See unpack.h.
 */
#include "format/unpack.h"

#include "format/libarchive.h"
#include "format/tar.h"
#include "format/detect.h"
#include <stdlib.h>

/* The stored bytes: the ones a filter left (pend) first, then the source. */
static int raw_read(sk_unpack *u, void *dst, size_t n, size_t *got, sk_error *err)
{
    if (u->pend_off < u->pend_len) {
        size_t k = u->pend_len - u->pend_off;
        if (k > n) k = n;
        memcpy(dst, u->pend + u->pend_off, k);
        u->pend_off += k;
        *got = k;
    } else {
        SK_GUARD(u->src(u->ctx, dst, n, got, err));
    }
    u->raw += *got;
    return SK_OK;
}

static int zsrc(void *ctx, void *dst, size_t n, size_t *got, sk_error *err)
{
    return raw_read(ctx, dst, n, got, err);
}

static la_ssize_t la_cb(struct archive *a, void *ctx, const void **out)
{
    sk_unpack *u = ctx;
    (void)a;
    /* alternate the two blocks: libarchive is done with the one before the
     * last when it asks again (it copies what it still needs) */
    u->cur ^= 1;
    size_t got = 0;
    if ((u->cb_rc = raw_read(u, u->blk[u->cur], u->blk_cap, &got, &u->cb_err))) return -1;
    u->blk_len[u->cur] = got;
    *out = u->blk[u->cur];
    return (la_ssize_t)got;
}

static int la_start(sk_unpack *u, sk_error *err)
{
    struct archive_entry *ae;
    u->piece = 1;
    u->piece_at = u->raw;
    u->blk_len[0] = u->blk_len[1] = 0;
    SK_GUARD(sk_la_new(&u->a, err));
    sk_la_support_filters(u->a);
    sk_la.read_support_format_raw(u->a);
    if (sk_la.read_open(u->a, u, NULL, la_cb, NULL) != ARCHIVE_OK ||
        sk_la.read_next_header(u->a, &ae) != ARCHIVE_OK) {
        if (u->cb_rc) return *err = u->cb_err, u->cb_rc;
        return sk_error_set(err, SK_E_CORRUPT, "%s: %s (at offset %llu)", u->name,
                            sk_la.error_string(u->a), (unsigned long long)u->piece_at);
    }
    return SK_OK;
}

int sk_unpack_open(sk_unpack *u, sk_unpack_src src, void *ctx, const char *name, size_t blk,
                   sk_error *err)
{
    memset(u, 0, sizeof *u);
    u->src = src;
    u->ctx = ctx;
    u->name = name;
    u->blk_cap = blk;
    u->blk[0] = sk_xmalloc(blk, err);
    u->blk[1] = u->blk[0] ? sk_xmalloc(blk, err) : NULL;
    if (!u->blk[1]) return SK_E_NOMEM;
    return la_start(u, err);
}

/* The filter's stream ended: the stored bytes it read but did not consume
 * go back in front of the source, and what they start is found. */
static int next_piece(sk_unpack *u, int *more, sk_error *err)
{
    *more = 0;
    int64_t used = sk_la.filter_bytes(u->a, -1); /* stored bytes the filter consumed */
    uint64_t end = u->piece_at + (used > 0 ? (uint64_t)used : 0);
    uint64_t left = u->raw - end; /* read into the blocks, not consumed */
    sk_la.read_free(u->a);
    u->a = NULL;
    size_t last = u->blk_len[u->cur], prev = u->blk_len[u->cur ^ 1];
    SK_FAIL_IF(end > u->raw || left > last + prev, err, SK_E_CORRUPT,
               "%s: cannot tell where the compressed stream at offset %llu ends", u->name,
               (unsigned long long)u->piece_at);
    /* the leftover, still unread pend bytes after it */
    size_t rest = u->pend_len - u->pend_off;
    unsigned char *p = sk_xmalloc((size_t)left + rest + SK_TAR_BLOCK, err);
    if (!p) return SK_E_NOMEM;
    size_t k = 0;
    if (left > last) {
        memcpy(p, u->blk[u->cur ^ 1] + prev - (size_t)(left - last), (size_t)(left - last));
        k = (size_t)(left - last);
    }
    memcpy(p + k, u->blk[u->cur] + last - ((size_t)left - k), (size_t)left - k);
    if (rest) memcpy(p + left, u->pend + u->pend_off, rest); /* (pend may be NULL) */
    free(u->pend);
    u->pend = p;
    u->pend_len = (size_t)left + rest;
    u->pend_off = 0;
    u->raw = end;
    /* enough of what follows to know it */
    while (u->pend_len < SK_TAR_BLOCK) {
        size_t got = 0;
        SK_GUARD(u->src(u->ctx, u->pend + u->pend_len, SK_TAR_BLOCK - u->pend_len, &got, err));
        if (!got) break;
        u->pend_len += got;
    }
    if (u->pend_len == 0) return SK_OK; /* the end of the source: done */
    *more = 1;
    sk_stream_kind kind = sk_stream_detect(u->pend, u->pend_len);
    if (kind == SK_STREAM_ARCHIVE) return la_start(u, err);
    u->piece_at = u->raw;
    if (kind == SK_STREAM_ZSTD) {
        u->piece = 2;
        SK_GUARD(sk_zdec_init(&u->z, u->name, end, err));
        u->z_on = 1;
        return SK_OK;
    }
    u->piece = 0; /* a plain tar, or what the tar parser will refuse */
    return SK_OK;
}

int sk_unpack_read(sk_unpack *u, void *dst, size_t n, size_t *got, sk_error *err)
{
    *got = 0;
    for (;;) {
        if (u->piece == 0) return raw_read(u, dst, n, got, err);
        if (u->piece == 2) return sk_zdec_read(&u->z, zsrc, u, dst, n, got, err);
        if (!u->a) return SK_OK; /* the source ended after a filtered piece */
        la_ssize_t k = sk_la.read_data(u->a, dst, n);
        if (k < 0) {
            if (u->cb_rc) return *err = u->cb_err, u->cb_rc;
            return sk_error_set(err, SK_E_CORRUPT, "%s: %s (near compressed offset %llu)", u->name,
                                sk_la.error_string(u->a), (unsigned long long)u->raw);
        }
        if (k > 0) {
            *got = (size_t)k;
            return SK_OK;
        }
        int more;
        SK_GUARD(next_piece(u, &more, err));
        if (!more) return SK_OK;
    }
}

uint64_t sk_unpack_raw(const sk_unpack *u)
{
    return u->raw;
}

void sk_unpack_close(sk_unpack *u)
{
    if (u->a) sk_la.read_free(u->a);
    if (u->z_on) sk_zdec_free(&u->z);
    free(u->blk[0]);
    free(u->blk[1]);
    free(u->pend);
    memset(u, 0, sizeof *u);
}
