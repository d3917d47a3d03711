/*
 * zstd_seekable.c - the zstd seekable format's seek table (a skippable
 * frame at the end of a .tar.zst listing every frame's compressed and
 * decompressed size), read through any sk_tar_src.  Every count and size
 * in it is checked against the file before it is believed.
 */
#include "core/internal.h"
#include "format/format.h"
#include "format/tar.h"

#include <stdlib.h>
#include <zstd.h>

int sk_zstd_seek_table(const sk_tar_src *f, sk_zstd_frame **frames, size_t *nframes,
                       sk_error *err)
{
    unsigned char foot[9], hdr[8];
    size_t got;
    *frames = NULL;
    *nframes = 0;
    if (f->size < 17) return SK_OK;
    SK_GUARD(f->read_at(f->ctx, f->size - 9, foot, 9, &got, err));
    if (got < 9 || sk_get_le32(foot + 5) != 0x8F92EAB1u) return SK_OK;
    uint32_t n = sk_get_le32(foot);
    unsigned desc = foot[4];
    SK_FAIL_IF(desc & 0x7c, err, SK_E_CORRUPT, "%s: zstd seek table descriptor has reserved bits set",
               f->name);
    size_t esize = desc & 0x80 ? 12 : 8;
    uint64_t tsize = (uint64_t)n * esize + 9;
    SK_FAIL_IF(tsize + 8 > f->size, err, SK_E_CORRUPT, "%s: zstd seek table larger than the file",
               f->name);
    uint64_t start = f->size - tsize - 8;
    SK_GUARD(f->read_at(f->ctx, start, hdr, 8, &got, err));
    SK_FAIL_IF(got < 8 || sk_get_le32(hdr) != 0x184D2A5Eu || sk_get_le32(hdr + 4) != tsize, err,
               SK_E_CORRUPT, "%s: zstd seek table frame header is wrong", f->name);
    unsigned char *t = sk_xmalloc(tsize, err);
    if (!t) return SK_E_NOMEM;
    sk_zstd_frame *fr = n ? sk_xmalloc(n * sizeof *fr, err) : NULL;
    int rc = (n && !fr) ? SK_E_NOMEM : f->read_at(f->ctx, start + 8, t, (size_t)tsize, &got, err);
    if (!rc && got < tsize) rc = sk_error_set(err, SK_E_CORRUPT, "%s: zstd seek table truncated", f->name);
    uint64_t c = 0, d = 0;
    for (uint32_t i = 0; !rc && i < n; i++) {
        fr[i].c_off = c;
        fr[i].d_off = d;
        fr[i].c_size = sk_get_le32(t + i * esize);
        fr[i].d_size = sk_get_le32(t + i * esize + 4);
        c += fr[i].c_size;
        d += fr[i].d_size;
    }
    if (!rc && c > start)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: zstd seek table frames run past the table",
                          f->name);
    free(t);
    if (rc) {
        free(fr);
        return rc;
    }
    *frames = fr;
    *nframes = n;
    return SK_OK;
}

/* ------------------------------------------------------ streaming decode */

int sk_zdec_init(sk_zdec *d, const char *name, uint64_t raw_pos, sk_error *err)
{
    memset(d, 0, sizeof *d);
    d->name = name;
    d->raw_pos = raw_pos;
    d->z = ZSTD_createDStream();
    d->buf = malloc(SK_ZDEC_IN);
    if (!d->z || !d->buf) {
        sk_zdec_free(d);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    ZSTD_initDStream(d->z);
    return SK_OK;
}

int sk_zdec_read(sk_zdec *d, sk_zdec_src read, void *ctx, void *dst, size_t n, size_t *got,
                 sk_error *err)
{
    ZSTD_outBuffer out = {dst, n, 0};
    while (out.pos == 0) {
        if (d->in.pos == d->in.size) {
            size_t k;
            SK_GUARD(read(ctx, d->buf, SK_ZDEC_IN, &k, err));
            if (k == 0) {
                /* the end of the stored bytes must be the end of a frame */
                SK_FAIL_IF(d->last != 0, err, SK_E_CORRUPT,
                           "%s: truncated at offset %llu, inside a zstd frame", d->name,
                           (unsigned long long)d->raw_pos);
                break;
            }
            d->in = (ZSTD_inBuffer){d->buf, k, 0};
            d->raw_pos += k;
        }
        size_t r = ZSTD_decompressStream(d->z, &out, &d->in);
        SK_FAIL_IF(ZSTD_isError(r), err, SK_E_CORRUPT, "%s: corrupt zstd data near offset %llu: %s",
                   d->name, (unsigned long long)(d->raw_pos - (d->in.size - d->in.pos)),
                   ZSTD_getErrorName(r));
        d->last = r;
    }
    *got = out.pos;
    return SK_OK;
}

void sk_zdec_free(sk_zdec *d)
{
    ZSTD_freeDStream(d->z);
    free(d->buf);
    d->z = NULL;
    d->buf = NULL;
}
