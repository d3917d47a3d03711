/*
 * global_zstd.c - what the global order (reader_global.c) needs to read
 * samples of a .tar.zst at random: the shard's zstd seekable-format seek
 * table (format/indexer.c reads it), and one sample's frames, read as
 * stored bytes like any range, decompressed in memory.  A sample's index
 * record names the frame its bytes start in (stored_offset) and the
 * frames' bytes (stored_span); the seek table says where that frame
 * starts in the tar stream, so the bytes before the sample in its frame
 * are decompressed and skipped, never those of the frames before it.
 */
#include "reader/reader_global.h"
#include "format/format.h"
#include "format/tar.h"
#include "io/store.h"

#include <stdlib.h>
#include <zstd.h>

static int store_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    sk_store *st = ctx;
    return st->ops->read_at(st, pos, buf, n, got, err);
}

int sk_gzstd_frames(const char *url, sk_store_env *env, uint64_t size, sk_zstd_frame **frames,
                    size_t *nframes, sk_error *err)
{
    *frames = NULL;
    *nframes = 0;
    sk_store *st;
    SK_GUARD(sk_store_open(&st, url, env, err));
    st->size_hint = size;
    int rc = SK_OK;
    if (!st->ops->read_at) {
        rc = sk_error_set(err, SK_E_USAGE, "%s: a stream cannot be read in the global order "
                          "(read it without global_order)", url);
    } else {
        sk_tar_src src = {.ctx = st, .read_at = store_read_at, .size = size, .name = url};
        rc = sk_zstd_seek_table(&src, frames, nframes, err);
    }
    sk_store_close(st);
    if (!rc && !*nframes)
        rc = sk_error_set(err, SK_E_USAGE, "%s: a .tar.zst without a seek table (one zstd stream): "
                          "a sample could only be reached by decompressing the shard from its "
                          "start; `shardkit shard --compress zstd` writes seekable ones, or read "
                          "it without global_order", url);
    return rc;
}

/* The frame starting at c_off: its place in frames, or n. */
static size_t frame_index(const sk_zstd_frame *frames, size_t n, uint64_t c_off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (frames[mid].c_off < c_off) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && frames[lo].c_off == c_off ? lo : n;
}

int sk_gzstd_frame_at(const sk_zstd_frame *frames, size_t n, uint64_t c_off, uint64_t *d_off)
{
    size_t i = frame_index(frames, n, c_off);
    if (i == n) return 0;
    *d_off = frames[i].d_off;
    return 1;
}

int sk_gzstd_frames_span(const sk_zstd_frame *frames, size_t n, uint64_t c_off, uint64_t c_len,
                         uint64_t *d_len)
{
    uint64_t at = c_off, d = 0;
    for (size_t i = frame_index(frames, n, c_off); i < n && at - c_off < c_len; i++) {
        if (frames[i].c_off != at) return 0;
        at += frames[i].c_size;
        d += frames[i].d_size;
    }
    if (at - c_off != c_len) return 0;
    *d_len = d;
    return 1;
}

int sk_gzstd_decompress(ZSTD_DCtx **dc, const unsigned char *src, size_t len, unsigned char *dst,
                        size_t cap, int whole, const char *url, uint64_t c_off, sk_error *err)
{
    if (!*dc) SK_FAIL_IF(!(*dc = ZSTD_createDCtx()), err, SK_E_NOMEM, "out of memory");
    if (whole) {
        /* every frame of src, straight into dst: a frame that would give
         * more than cap (its seek table lied, or a bomb) is an error */
        size_t r = ZSTD_decompressDCtx(*dc, dst, cap, src, len);
        SK_FAIL_IF(ZSTD_isError(r), err, SK_E_CORRUPT, "%s: zstd frames at offset %llu: %s", url,
                   (unsigned long long)c_off, ZSTD_getErrorName(r));
        SK_FAIL_IF(r != cap, err, SK_E_CORRUPT,
                   "%s: the zstd frames at offset %llu (%zu bytes) give %zu bytes, not the %zu "
                   "their seek table says", url, (unsigned long long)c_off, len, r, cap);
        return SK_OK;
    }
    ZSTD_DCtx_reset(*dc, ZSTD_reset_session_only);
    ZSTD_inBuffer in = {src, len, 0};
    ZSTD_outBuffer out = {dst, cap, 0};
    /* until the sample's last byte: what follows it in its frame is not
     * wanted, and a frame that would give more than asked (a bomb) is
     * never decompressed past cap */
    while (out.pos < cap) {
        size_t was_in = in.pos, was_out = out.pos;
        size_t r = ZSTD_decompressStream(*dc, &out, &in);
        SK_FAIL_IF(ZSTD_isError(r), err, SK_E_CORRUPT, "%s: zstd frames at offset %llu: %s", url,
                   (unsigned long long)c_off, ZSTD_getErrorName(r));
        if (in.pos == was_in && out.pos == was_out) break; /* the stored bytes are used up */
    }
    SK_FAIL_IF(out.pos < cap, err, SK_E_CORRUPT,
               "%s: the zstd frames at offset %llu (%zu bytes, as its index says) give %zu bytes, "
               "short of the %zu the sample needs", url, (unsigned long long)c_off, len, out.pos, cap);
    return SK_OK;
}
