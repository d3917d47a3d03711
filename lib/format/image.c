/*
 * image.c - JPEG members resized and re-encoded while packing, as
 * img2dataset does it (its option names and meanings), at C speed.
 *
 * One image goes through: header (size, colour space, EXIF orientation),
 * the skip rules (minimum size, aspect ratio, pixel cap), a decode with
 * libjpeg-turbo's DCT scaling (straight to 1/2, 1/4 or 1/8 when the target
 * is that much smaller: most of the work of a big downscale is never done),
 * the orientation applied to the pixels, a separable resampling filter to
 * the exact size, the crop or border, and an encode at the asked quality.
 * The output carries no EXIF, so the upright pixels are all there is.
 *
 * The filter is written here rather than taken from a library: it is
 * small, integer-only (so the bytes are the same on every machine, which
 * the determinism promise needs), and measured against Pillow's in
 * tests/e2e/images.sh.  Down-scaling is an area average (each output pixel
 * is the mean of the input area it covers, as OpenCV's INTER_AREA, which
 * img2dataset uses to shrink); up-scaling is a triangle (bilinear) filter.
 */
#include "format/image.h"

/* The resampling loops are plain C written for the vectoriser; gcc's -O2
 * vectorises only what its cheapest cost model allows, which excludes the
 * widening multiply-adds here (clang's -O2 does them anyway). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("tree-vectorize")
#endif

#include <jansson.h>
#include <jpeglib.h>
#include <jerror.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

/* ------------------------------------------------------------- options */

void sk_image_options_init_sized(sk_image_options *o, size_t size)
{
    static const sk_image_options defaults = {.struct_size = sizeof defaults,
                                              .resize_mode = SK_RESIZE_BORDER,
                                              .encode_quality = 95,
                                              .bad_image = SK_BAD_IMAGE_SKIP};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_image_options_active(const sk_image_options *o)
{
    return o && (o->image_size || o->min_image_size || o->max_aspect_ratio > 0);
}

/* The option words, indexed by enum sk_resize_mode and enum
 * sk_bad_image: parsed from the command line and written back into a
 * dataset's recorded options, from the one table. */
static const char *const resize_mode_names[] = {"no", "keep_ratio", "keep_ratio_largest",
                                                "center_crop", "border"};
static const char *const bad_image_names[] = {"skip", "keep", "fail"};

static int name_index(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) return i;
    return -1;
}

int sk_image_mode_parse(const char *s)
{
    return name_index(resize_mode_names, (int)SK_ARRAY_LEN(resize_mode_names), s);
}

int sk_image_bad_parse(const char *s)
{
    return name_index(bad_image_names, (int)SK_ARRAY_LEN(bad_image_names), s);
}

const char *sk_image_mode_name(int mode)
{
    return mode >= 0 && mode < (int)SK_ARRAY_LEN(resize_mode_names) ? resize_mode_names[mode]
                                                                   : resize_mode_names[0];
}

const char *sk_image_bad_name(int policy)
{
    return policy >= 0 && policy < (int)SK_ARRAY_LEN(bad_image_names) ? bad_image_names[policy]
                                                                      : bad_image_names[0];
}

int sk_image_is_image(const sk_image_options *o, const char *ext, size_t ext_len)
{
    const char *list = o->image_ext && *o->image_ext ? o->image_ext : "jpg,jpeg";
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == ext_len && !strncasecmp(p, ext, n)) return 1;
        p += n;
        if (*p == ',') p++;
    }
    return 0;
}

/* Rounds a scaled side, never to zero. */
static unsigned scaled(double side, double f)
{
    double v = floor(side * f + 0.5);
    return v < 1 ? 1 : (unsigned)v;
}

void sk_image_target(const sk_image_options *o, unsigned w, unsigned h, unsigned *rw,
                     unsigned *rh, unsigned *cw, unsigned *ch, int *resize)
{
    unsigned s = o->image_size, small = w < h ? w : h, large = w < h ? h : w;
    *rw = *cw = w;
    *rh = *ch = h;
    *resize = 0;
    if (!s || o->resize_mode == SK_RESIZE_NO) return;
    /* keep_ratio and center_crop go by the smaller side, the others by
     * the larger; --resize-only-if-bigger leaves an image alone unless
     * that side is over the target (img2dataset's "downscale") */
    int by_small = o->resize_mode == SK_RESIZE_KEEP_RATIO || o->resize_mode == SK_RESIZE_CENTER_CROP;
    unsigned side = by_small ? small : large;
    if (o->resize_only_if_bigger && side <= s) return;
    double f = (double)s / side;
    *rw = w == side ? s : scaled(w, f);
    *rh = h == side ? s : scaled(h, f);
    if (w == h) *rw = *rh = s;
    *cw = *rw, *ch = *rh;
    if (o->resize_mode == SK_RESIZE_CENTER_CROP || o->resize_mode == SK_RESIZE_BORDER) *cw = *ch = s;
    *resize = 1;
}

/* --------------------------------------------------------- EXIF orientation */

static unsigned rd16(const unsigned char *p, int be)
{
    return be ? (unsigned)p[0] << 8 | p[1] : (unsigned)p[1] << 8 | p[0];
}

static uint32_t rd32(const unsigned char *p, int be)
{
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/* The Orientation tag (0x0112) of IFD0 in an APP1 "Exif" segment, 1..8, or
 * 1 when absent or malformed; every offset is checked against the segment,
 * which is untrusted bytes. */
static int exif_orientation(const unsigned char *d, size_t n)
{
    if (n < 14 || memcmp(d, "Exif\0\0", 6)) return 1;
    const unsigned char *t = d + 6;
    size_t tn = n - 6;
    int be;
    if (!memcmp(t, "II*\0", 4)) be = 0;
    else if (!memcmp(t, "MM\0*", 4)) be = 1;
    else return 1;
    uint32_t ifd = rd32(t + 4, be);
    if (ifd > tn || tn - ifd < 2) return 1;
    unsigned count = rd16(t + ifd, be);
    for (unsigned i = 0; i < count; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12;
        if (e + 12 > tn) return 1;
        if (rd16(t + e, be) == 0x0112 && rd16(t + e + 2, be) == 3 /* SHORT */) {
            unsigned v = rd16(t + e + 8, be);
            return v >= 1 && v <= 8 ? (int)v : 1;
        }
    }
    return 1;
}

/* ------------------------------------------------------------ libjpeg */

struct jerr {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    int warned;
    int oom; /* libjpeg ran out of memory: the machine's failure, not the image's */
    struct jpeg_progress_mgr progress;
    size_t in_len; /* bytes of the JPEG, for the work cap */
};

static void on_error(j_common_ptr c)
{
    struct jerr *e = (struct jerr *)c->err;
    c->err->format_message(c, e->msg);
    e->oom = c->err->msg_code == JERR_OUT_OF_MEMORY;
    longjmp(e->jump, 1);
}

/* A progressive JPEG may hold thousands of scans of a few bytes each, and
 * every scan is a pass over all the image's coefficients: 50 KB can cost a
 * minute of CPU.  libjpeg-turbo's own tools stop such files with a scan
 * limit in the progress monitor (djpeg -maxscans); so does this, and also
 * caps the work per byte of input (scans x pixels), which a few hundred
 * scans over a large image would otherwise still spend.  Real progressive
 * JPEGs have about ten scans; over the caps the image is a bad image. */
#define JPEG_MAX_SCANS 256
#define JPEG_WORK_FLOOR (1ull << 30)   /* scan-pixels any image may cost */
#define JPEG_WORK_PER_BYTE 8192ull    /* and more per byte of input */

static void on_progress(j_common_ptr c)
{
    if (!c->is_decompressor) return;
    struct jerr *e = (struct jerr *)c->err;
    j_decompress_ptr d = (j_decompress_ptr)c;
    uint64_t scans = (uint64_t)(d->input_scan_number > 0 ? d->input_scan_number : 0);
    uint64_t work = scans * d->image_width * d->image_height;
    uint64_t cap = JPEG_WORK_FLOOR + JPEG_WORK_PER_BYTE * (uint64_t)e->in_len;
    if (scans > JPEG_MAX_SCANS || work > cap) {
        snprintf(e->msg, sizeof e->msg,
                 "%llu scans of %ux%u from %zu bytes: over the cap of %d scans or %llu scan-pixels "
                 "per byte (a decompression bomb?)",
                 (unsigned long long)scans, d->image_width, d->image_height, e->in_len,
                 JPEG_MAX_SCANS, JPEG_WORK_PER_BYTE);
        e->oom = 0;
        longjmp(e->jump, 1);
    }
}

/* Sets up e as d's error manager and scan-cap progress monitor. */
static void jerr_init(struct jerr *e, struct jpeg_decompress_struct *d, size_t in_len)
{
    memset(e, 0, sizeof *e);
    d->err = jpeg_std_error(&e->mgr);
    e->mgr.error_exit = on_error;
    e->in_len = in_len;
    e->progress.progress_monitor = on_progress;
}

static void on_message(j_common_ptr c, int level)
{
    /* a corrupt-data warning (level -1) means a damaged image: bad */
    struct jerr *e = (struct jerr *)c->err;
    if (level < 0 && !e->warned) {
        e->warned = 1;
        c->err->format_message(c, e->msg);
    }
}

typedef struct pixels {
    unsigned char *p;
    unsigned w, h, ch; /* ch: 1 (gray) or 3 (RGB) */
} pixels;

/* ------------------------------------------------------------ geometry */

/* Applies EXIF orientation o (2..8) to px, replacing its buffer. */
static int orient(pixels *px, int o)
{
    if (o <= 1) return 0;
    int swap = o >= 5;
    unsigned W = swap ? px->h : px->w, H = swap ? px->w : px->h, c = px->ch;
    unsigned char *q = malloc((size_t)W * H * c);
    if (!q) return -1;
    for (unsigned y = 0; y < H; y++)
        for (unsigned x = 0; x < W; x++) {
            unsigned sx, sy; /* source pixel of output (x, y) */
            switch (o) {
            case 2: sx = px->w - 1 - x, sy = y; break;             /* mirror */
            case 3: sx = px->w - 1 - x, sy = px->h - 1 - y; break; /* 180 */
            case 4: sx = x, sy = px->h - 1 - y; break;             /* flip */
            case 5: sx = y, sy = x; break;                         /* transpose */
            case 6: sx = y, sy = px->h - 1 - x; break;             /* 90 clockwise */
            case 7: sx = px->w - 1 - y, sy = px->h - 1 - x; break; /* transverse */
            default: sx = px->w - 1 - y, sy = x; break;            /* 8: 90 counter */
            }
            memcpy(q + ((size_t)y * W + x) * c, px->p + ((size_t)sy * px->w + sx) * c, c);
        }
    free(px->p);
    px->p = q, px->w = W, px->h = H;
    return 0;
}

/* The weights of one resampling pass: for each output index, a run of
 * input indices [first, first + n) and their weights in 1/2^14. */
typedef struct taps {
    unsigned *first, *n;
    int32_t *w; /* maxn per output */
    unsigned maxn;
} taps;

#define WBITS 14

static void taps_free(taps *t)
{
    free(t->first), free(t->n), free(t->w);
}

static int taps_make(taps *t, unsigned in, unsigned out)
{
    double scale = (double)in / out;
    double support = scale > 1 ? scale / 2 : 1.0; /* area: half the covered span; else triangle */
    t->maxn = (unsigned)ceil(support * 2) + 2;
    t->first = calloc(out, sizeof *t->first);
    t->n = calloc(out, sizeof *t->n);
    t->w = calloc((size_t)out * t->maxn, sizeof *t->w);
    if (!t->first || !t->n || !t->w) return -1;
    double *f = malloc(t->maxn * sizeof *f);
    if (!f) return -1;
    for (unsigned o = 0; o < out; o++) {
        double c = (o + 0.5) * scale; /* the output pixel's centre, in input coordinates */
        long lo = (long)floor(c - support), hi = (long)ceil(c + support);
        if (lo < 0) lo = 0;
        if (hi > (long)in) hi = in;
        unsigned n = 0;
        double sum = 0;
        for (long i = lo; i < hi && n < t->maxn; i++) {
            double wgt;
            if (scale > 1) { /* the overlap of [i, i+1) with the covered span */
                double a = c - support, b = c + support;
                double l = i > a ? i : a, r = i + 1 < b ? i + 1 : b;
                wgt = r > l ? r - l : 0;
            } else { /* triangle around the centre */
                double d = fabs(i + 0.5 - c);
                wgt = d < 1 ? 1 - d : 0;
            }
            if (n == 0 && wgt <= 0) {
                lo = i + 1;
                continue;
            }
            f[n++] = wgt;
            sum += wgt;
        }
        while (n && f[n - 1] <= 0) n--;
        if (!n || sum <= 0) { /* a degenerate span: nearest input pixel */
            lo = (long)fmin(fmax(floor(c), 0), in - 1);
            f[0] = sum = 1;
            n = 1;
        }
        t->first[o] = (unsigned)lo;
        t->n[o] = n;
        /* integer weights that sum to exactly 1 << WBITS: the rounding
         * error goes to the largest tap */
        int32_t total = 0, *w = t->w + (size_t)o * t->maxn;
        unsigned big = 0;
        for (unsigned k = 0; k < n; k++) {
            w[k] = (int32_t)lround(f[k] / sum * (1 << WBITS));
            total += w[k];
            if (w[k] > w[big]) big = k;
        }
        w[big] += (1 << WBITS) - total;
    }
    free(f);
    return 0;
}

static unsigned char clamp8(int32_t v)
{
    /* weights are non-negative and sum to 1 << WBITS: v fits 0..255 << WBITS */
    v = (v + (1 << (WBITS - 1))) >> WBITS;
    return (unsigned char)(v > 255 ? 255 : v);
}

/* One RGB output pixel from N taps; with N a constant the loop unrolls
 * into straight multiply-adds. */
#define RGB_TAPS(N)                                                                            \
    do {                                                                                       \
        int32_t a0 = 0, a1 = 0, a2 = 0;                                                        \
        for (unsigned i = 0; i < (N); i++)                                                     \
            a0 += w[i] * p[i * 3], a1 += w[i] * p[i * 3 + 1], a2 += w[i] * p[i * 3 + 2];       \
        d[0] = clamp8(a0), d[1] = clamp8(a1), d[2] = clamp8(a2);                               \
    } while (0)

/* One row through the horizontal taps: c channels, interleaved.  This
 * pass does not vectorise (each output pixel reads its own run), so the
 * tap counts a shrink after the DCT scaling gives (2 to 4) have their own
 * unrolled loops: 8% off the resample, the same sums. */
static void resample_row(const unsigned char *row, unsigned char *dst, unsigned W, unsigned c,
                         const taps *t)
{
    for (unsigned x = 0; x < W; x++) {
        const int32_t *w = t->w + (size_t)x * t->maxn;
        if (c == 3) {
            const unsigned char *p = row + (size_t)t->first[x] * 3;
            unsigned char *d = dst + (size_t)x * 3;
            switch (t->n[x]) {
            case 1: RGB_TAPS(1); break;
            case 2: RGB_TAPS(2); break;
            case 3: RGB_TAPS(3); break;
            case 4: RGB_TAPS(4); break;
            default: RGB_TAPS(t->n[x]); break;
            }
        } else {
            const unsigned char *p = row + t->first[x];
            int32_t a0 = 0;
            for (unsigned i = 0; i < t->n[x]; i++) a0 += w[i] * p[i];
            dst[x] = clamp8(a0);
        }
    }
}

/* Output row y of the vertical taps ty over rows of len bytes at src:
 * each input row is added into acc (len sums), so memory is read in
 * order and the inner loop vectorises. */
static void vertical_row(const unsigned char *src, size_t len, const taps *ty, unsigned y,
                         int32_t *acc, unsigned char *dst)
{
    const int32_t *w = ty->w + (size_t)y * ty->maxn;
    memset(acc, 0, len * sizeof *acc);
    for (unsigned i = 0; i < ty->n[y]; i++) {
        const unsigned char *s = src + (size_t)(ty->first[y] + i) * len;
        int32_t wi = w[i];
        for (size_t x = 0; x < len; x++) acc[x] += wi * s[x];
    }
    for (size_t x = 0; x < len; x++) dst[x] = clamp8(acc[x]);
}

/* Resamples px to W x H, one axis at a time; an axis that keeps its size
 * is not passed at all.  When the image shrinks the vertical pass goes
 * first, output row by output row: it is the pass that vectorises, and it
 * leaves the scalar horizontal pass H rows to do instead of all the
 * input's (the two orders round differently, by at most one level; this
 * one is 3% less CPU per image on the benchmark's photos, and needs one
 * row of memory between the passes instead of a whole image).  When it
 * grows, horizontal first, on the fewer input rows. */
static int resample(pixels *px, unsigned W, unsigned H)
{
    if (px->w == W && px->h == H) return 0;
    unsigned c = px->ch;
    size_t rowlen = (size_t)W * c, inlen = (size_t)px->w * c;
    taps tx = {0}, ty = {0};
    unsigned char *mid = NULL, *out = NULL;
    int32_t *acc = NULL;
    int rc = -1;
    if (taps_make(&tx, px->w, W) || taps_make(&ty, px->h, H)) goto done;
    out = malloc(rowlen * H);
    acc = malloc((inlen > rowlen ? inlen : rowlen) * sizeof *acc);
    if (!out || !acc) goto done;
    if (H <= px->h) {
        if (H != px->h && W != px->w && !(mid = malloc(inlen))) goto done;
        for (unsigned y = 0; y < H; y++) {
            const unsigned char *src = px->p + (size_t)y * inlen;
            unsigned char *dst = out + (size_t)y * rowlen;
            if (H != px->h) {
                unsigned char *v = W == px->w ? dst : mid;
                vertical_row(px->p, inlen, &ty, y, acc, v);
                src = v;
            }
            if (W != px->w) resample_row(src, dst, W, c, &tx);
        }
    } else {
        const unsigned char *hp = px->p;
        if (W != px->w) {
            if (!(mid = malloc(rowlen * px->h))) goto done;
            for (unsigned y = 0; y < px->h; y++)
                resample_row(px->p + (size_t)y * inlen, mid + (size_t)y * rowlen, W, c, &tx);
            hp = mid;
        }
        for (unsigned y = 0; y < H; y++) vertical_row(hp, rowlen, &ty, y, acc, out + (size_t)y * rowlen);
    }
    free(px->p);
    px->p = out, px->w = W, px->h = H;
    out = NULL;
    rc = 0;
done:
    taps_free(&tx), taps_free(&ty);
    free(mid), free(out), free(acc);
    return rc;
}

/* The centre cw x ch of px, or px centred on a black cw x ch canvas. */
static int canvas(pixels *px, unsigned cw, unsigned ch)
{
    if (px->w == cw && px->h == ch) return 0;
    unsigned c = px->ch;
    unsigned char *q = calloc((size_t)cw * ch, c);
    if (!q) return -1;
    /* offsets of the source in the canvas (border) or of the canvas in the
     * source (crop), per axis; as img2dataset, the odd pixel goes after */
    long dx = ((long)cw - (long)px->w) / 2, dy = ((long)ch - (long)px->h) / 2;
    for (unsigned y = 0; y < ch; y++) {
        long sy = (long)y - dy;
        if (sy < 0 || sy >= (long)px->h) continue;
        for (unsigned x = 0; x < cw; x++) {
            long sx = (long)x - dx;
            if (sx < 0 || sx >= (long)px->w) continue;
            memcpy(q + ((size_t)y * cw + x) * c, px->p + ((size_t)sy * px->w + (size_t)sx) * c, c);
        }
    }
    free(px->p);
    px->p = q, px->w = cw, px->h = ch;
    return 0;
}

/* ------------------------------------------------------------ decode */

/* Decodes in at 1/denom of its size into px (gray or RGB; CMYK and YCCK
 * converted to RGB).  0, or -1 with why (a bad image), or -2 (memory). */
static int decode(struct jpeg_decompress_struct *d, struct jerr *e, int denom, pixels *px,
                  char *why, size_t cap)
{
    d->scale_num = 1;
    d->scale_denom = (unsigned)denom;
    d->dct_method = JDCT_ISLOW; /* the same pixels on every machine */
    int cmyk = d->jpeg_color_space == JCS_CMYK || d->jpeg_color_space == JCS_YCCK;
    d->out_color_space = cmyk ? JCS_CMYK : d->jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(d);
    px->w = d->output_width, px->h = d->output_height;
    px->ch = cmyk ? 3 : (unsigned)d->output_components;
    unsigned in_ch = (unsigned)d->output_components;
    px->p = malloc((size_t)px->w * px->h * px->ch);
    unsigned char *row = malloc((size_t)px->w * in_ch);
    if (!px->p || !row) {
        free(row);
        return -2;
    }
    while (d->output_scanline < d->output_height) {
        unsigned y = d->output_scanline;
        JSAMPROW r = cmyk ? row : px->p + (size_t)y * px->w * px->ch;
        if (jpeg_read_scanlines(d, &r, 1) != 1) break;
        if (cmyk) { /* Adobe writes CMYK inverted; plain CMYK is not */
            int inv = d->saw_Adobe_marker;
            unsigned char *o = px->p + (size_t)y * px->w * 3;
            for (unsigned x = 0; x < px->w; x++) {
                unsigned C = row[x * 4], M = row[x * 4 + 1], Y = row[x * 4 + 2], K = row[x * 4 + 3];
                if (!inv) C = 255 - C, M = 255 - M, Y = 255 - Y, K = 255 - K;
                o[x * 3] = (unsigned char)((C * K + 127) / 255);
                o[x * 3 + 1] = (unsigned char)((M * K + 127) / 255);
                o[x * 3 + 2] = (unsigned char)((Y * K + 127) / 255);
            }
        }
    }
    free(row);
    if (e->warned) {
        snprintf(why, cap, "damaged JPEG: %s", e->msg);
        return -1;
    }
    jpeg_finish_decompress(d);
    return 0;
}

static int encode(const pixels *px, int quality, unsigned char **out, size_t *out_len)
{
    struct jpeg_compress_struct c;
    struct jerr e = {0};
    unsigned char *buf = NULL;
    unsigned long len = 0;
    c.err = jpeg_std_error(&e.mgr);
    e.mgr.error_exit = on_error;
    if (setjmp(e.jump)) {
        jpeg_destroy_compress(&c);
        free(buf);
        return -1;
    }
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &buf, &len);
    c.image_width = px->w;
    c.image_height = px->h;
    c.input_components = (int)px->ch;
    c.in_color_space = px->ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    c.dct_method = JDCT_ISLOW;
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW r = px->p + (size_t)c.next_scanline * px->w * px->ch;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    *out = buf;
    *out_len = len;
    return 0;
}

/* ------------------------------------------------------------ checks */
/* (verify --jpeg and --image-size: the same decoder and error manager as
 * the resize pipeline, so a member verify passes is one pack can resize) */

int sk_jpeg_check(const void *data, size_t n, char *why, size_t cap)
{
    struct jpeg_decompress_struct d;
    struct jerr e;
    JSAMPARRAY row = NULL;
    jerr_init(&e, &d, n);
    e.mgr.emit_message = on_message;
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&d);
        snprintf(why, cap, "%s", e.msg);
        return e.oom ? -1 : 1;
    }
    jpeg_create_decompress(&d);
    d.progress = &e.progress;
    jpeg_mem_src(&d, (const unsigned char *)data, (unsigned long)n);
    jpeg_read_header(&d, TRUE);
    d.dct_method = JDCT_ISLOW;
    jpeg_start_decompress(&d);
    row = (*d.mem->alloc_sarray)((j_common_ptr)&d, JPOOL_IMAGE,
                                 d.output_width * (JDIMENSION)d.output_components, 1);
    while (d.output_scanline < d.output_height && !e.warned) jpeg_read_scanlines(&d, row, 1);
    if (!e.warned) jpeg_finish_decompress(&d);
    jpeg_destroy_decompress(&d);
    if (e.warned) {
        snprintf(why, cap, "%s", e.msg);
        return 1;
    }
    return 0;
}

int sk_jpeg_conforms(const void *data, size_t n, const sk_image_options *io, char *why, size_t cap)
{
    struct jpeg_decompress_struct d;
    struct jerr e;
    jerr_init(&e, &d, n);
    if (setjmp(e.jump)) {
        jpeg_destroy_decompress(&d);
        snprintf(why, cap, "has no readable header");
        return 1;
    }
    jpeg_create_decompress(&d);
    jpeg_mem_src(&d, (const unsigned char *)data, (unsigned long)n);
    jpeg_read_header(&d, TRUE);
    unsigned w = d.image_width, h = d.image_height, s = io->image_size;
    jpeg_destroy_decompress(&d);
    unsigned small = w < h ? w : h, large = w < h ? h : w;
    int ok, mode = io->resize_mode;
    const char *rule;
    if (mode == SK_RESIZE_KEEP_RATIO)
        ok = small == s || (io->resize_only_if_bigger && small < s), rule = "its smaller side";
    else if (mode == SK_RESIZE_KEEP_RATIO_LARGEST)
        ok = large == s || (io->resize_only_if_bigger && large < s), rule = "its larger side";
    else if (mode == SK_RESIZE_CENTER_CROP)
        ok = (w == s && h == s) || (io->resize_only_if_bigger && small <= s), rule = "a square of side";
    else if (mode == SK_RESIZE_BORDER)
        ok = (w == s && h == s) || (io->resize_only_if_bigger && large <= s), rule = "a square of side";
    else
        return 0;
    if (!ok) snprintf(why, cap, "is %ux%u, not %s %u", w, h, rule, s);
    return !ok;
}

/* ------------------------------------------------------------- the job */

static void bad(sk_image_result *r, const char *fmt, const char *detail)
{
    r->verdict = SK_IMAGE_BAD;
    snprintf(r->why, sizeof r->why, fmt, detail);
}

/* The bytes decoding d at 1/denom and what follows (orientation, resample
 * to rw x rh, canvas cw x ch, encode) will hold at the most, from the
 * header alone: the largest of the phases, each counting what is alive
 * in it.  A progressive (or multi-scan) JPEG makes libjpeg keep every DCT
 * coefficient of the full-size image until the last scan: for each
 * component its blocks, rounded up to whole MCUs, of 64 x 2 bytes. */
static uint64_t decode_need(struct jpeg_decompress_struct *d, int denom, int orientation,
                            int resize, unsigned rw, unsigned rh, unsigned cw, unsigned ch)
{
    d->scale_num = 1;
    d->scale_denom = (unsigned)denom;
    jpeg_calc_output_dimensions(d);
    uint64_t ow = d->output_width, oh = d->output_height, oc = (uint64_t)d->output_components;
    uint64_t pc = oc == 4 ? 3 : oc; /* CMYK becomes RGB */
    uint64_t coef = 0;
    if (d->progressive_mode || d->comps_in_scan < d->num_components)
        for (int i = 0; i < d->num_components; i++) {
            jpeg_component_info *c = &d->comp_info[i];
            uint64_t bw = c->width_in_blocks, bh = c->height_in_blocks;
            uint64_t hs = (uint64_t)c->h_samp_factor, vs = (uint64_t)c->v_samp_factor;
            coef += (bw + hs - 1) / hs * hs * ((bh + vs - 1) / vs * vs) * DCTSIZE2 * sizeof(JCOEF);
        }
    uint64_t dec = ow * oh * pc;
    uint64_t need = coef + dec + ow * oc * 17; /* a row of ours, ~16 of libjpeg's */
    if (!resize && orientation == 1) return need + ((uint64_t)1 << 20);
    uint64_t orient_peak = orientation != 1 ? dec * 2 : 0;
    uint64_t inh = orientation >= 5 ? ow : oh;
    uint64_t rs = (uint64_t)rw * pc, out = rs * rh;
    uint64_t wide = (ow > oh ? ow : oh) * pc; /* the longer row, before or after */
    uint64_t resample_peak = dec + rs * inh + out + (wide > rs ? wide : rs) * 5 +
                             (ow + oh + rw + rh) * 16;
    uint64_t canvas = (uint64_t)cw * ch * pc;
    uint64_t canvas_peak = out + canvas, encode_peak = canvas * 2 + ((uint64_t)64 << 10);
    if (orient_peak > need) need = orient_peak;
    if (resample_peak > need) need = resample_peak;
    if (canvas_peak > need) need = canvas_peak;
    if (encode_peak > need) need = encode_peak;
    return need + ((uint64_t)1 << 20); /* libjpeg's own tables and pools */
}

/* Reserves need from b for one decode, or makes the image bad when need
 * alone is over all of b (0: reserved, 1: bad). */
static int reserve(sk_image_budget *b, uint64_t need, sk_image_result *r)
{
    if (!b) return 0;
    uint64_t total = sk_image_budget_total(b);
    if (need > total) {
        char detail[96];
        snprintf(detail, sizeof detail, "%llu MiB to decode, over --image-memory %llu MiB",
                 (unsigned long long)((need + (1 << 20) - 1) >> 20),
                 (unsigned long long)(total >> 20));
        bad(r, "needs %s", detail);
        return 1;
    }
    sk_image_budget_take(b, need);
    return 0;
}

int sk_image_transform(const sk_image_options *o, const unsigned char *in, size_t len,
                       sk_image_result *r, sk_error *err)
{
    return sk_image_transform_in(o, NULL, in, len, r, err);
}

int sk_image_transform_in(const sk_image_options *o, sk_image_budget *b, const unsigned char *in,
                          size_t len, sk_image_result *r, sk_error *err)
{
    memset(r, 0, sizeof *r);
    struct jpeg_decompress_struct d;
    struct jerr e;
    pixels px = {0};
    volatile uint64_t held = 0; /* reserved from b; read after a longjmp */
    jerr_init(&e, &d, len);
    e.mgr.emit_message = on_message;
    if (setjmp(e.jump)) {
        sk_image_budget_give(b, held);
        jpeg_destroy_decompress(&d);
        free(px.p);
        free(r->out);
        r->out = NULL;
        if (e.oom) /* the machine's failure: the run stops, the image is not "bad" */
            return sk_error_set(err, SK_E_NOMEM, "out of memory decoding a JPEG (%zu bytes): %s",
                                len, e.msg);
        bad(r, "not a readable JPEG: %s", e.msg);
        return SK_OK;
    }
    jpeg_create_decompress(&d);
    d.progress = &e.progress;
    if (len < 4 || in[0] != 0xFF || in[1] != 0xD8) {
        jpeg_destroy_decompress(&d);
        bad(r, "not a JPEG%s", "");
        return SK_OK;
    }
    jpeg_mem_src(&d, in, (unsigned long)len);
    jpeg_save_markers(&d, JPEG_APP0 + 1, 0xFFFF);
    jpeg_read_header(&d, TRUE);
    int orientation = 1;
    for (jpeg_saved_marker_ptr m = d.marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && (orientation = exif_orientation(m->data, m->data_length)) != 1)
            break;
    unsigned w = d.image_width, h = d.image_height;
    uint64_t cap = o->max_pixels ? o->max_pixels : SK_IMAGE_MAX_PIXELS;
    if (!w || !h || (uint64_t)w * h > cap) {
        char detail[80];
        snprintf(detail, sizeof detail, "%ux%u", w, h);
        jpeg_destroy_decompress(&d);
        bad(r, "%s pixels: over the pixel cap (a decompression bomb?)", detail);
        return SK_OK;
    }
    if (orientation >= 5) { unsigned t = w; w = h; h = t; }
    r->original_width = r->width = w;
    r->original_height = r->height = h;
    unsigned small = w < h ? w : h, large = w < h ? h : w;
    if (o->min_image_size && small < o->min_image_size) {
        r->verdict = SK_IMAGE_TOO_SMALL;
        snprintf(r->why, sizeof r->why, "%ux%u is under --min-image-size %u", w, h, o->min_image_size);
        jpeg_destroy_decompress(&d);
        return SK_OK;
    }
    if (o->max_aspect_ratio > 0 && (double)large / small > o->max_aspect_ratio) {
        r->verdict = SK_IMAGE_ASPECT;
        snprintf(r->why, sizeof r->why, "%ux%u is over --max-aspect-ratio %g", w, h, o->max_aspect_ratio);
        jpeg_destroy_decompress(&d);
        return SK_OK;
    }
    unsigned rw, rh, cw, ch;
    int resize;
    sk_image_target(o, w, h, &rw, &rh, &cw, &ch, &resize);
    if (resize && ((uint64_t)rw * rh > cap || (uint64_t)cw * ch > cap || rw > JPEG_MAX_DIMENSION ||
                   rh > JPEG_MAX_DIMENSION)) {
        /* a 1-pixel-wide image whose smaller side becomes the target */
        char detail[96];
        snprintf(detail, sizeof detail, "%ux%u would become %ux%u", w, h, rw, rh);
        jpeg_destroy_decompress(&d);
        bad(r, "%s: over the pixel cap or JPEG's 65500-pixel side", detail);
        return SK_OK;
    }
    /* --resize-mode no, or only the filters (no --image-size): the bytes
     * stand as they are, orientation included; only a resize re-encodes */
    if (o->resize_mode == SK_RESIZE_NO || !o->image_size) {
        jpeg_destroy_decompress(&d);
        return SK_OK;
    }
    if (!resize && orientation == 1) {
        /* nothing to change; still prove it decodes when a size was asked
         * for, so a bad image is caught the same way in every mode */
        if (o->image_size && o->resize_mode != SK_RESIZE_NO) {
            uint64_t need = decode_need(&d, 1, 1, 0, 0, 0, 0, 0);
            if (reserve(b, need, r)) {
                jpeg_destroy_decompress(&d);
                return SK_OK;
            }
            held = need;
            int drc = decode(&d, &e, 1, &px, r->why, sizeof r->why);
            free(px.p);
            px.p = NULL;
            jpeg_destroy_decompress(&d);
            sk_image_budget_give(b, held);
            if (drc == -2) return sk_error_set(err, SK_E_NOMEM, "out of memory");
            if (drc) r->verdict = SK_IMAGE_BAD;
        } else {
            jpeg_destroy_decompress(&d);
        }
        return SK_OK;
    }
    /* the largest DCT scale that still decodes at least the size we need */
    unsigned nw = orientation >= 5 ? rh : rw, nh = orientation >= 5 ? rw : rh; /* in file orientation */
    int denom = 1;
    for (int k = 8; k > 1; k /= 2)
        if ((d.image_width + k - 1) / k >= nw && (d.image_height + k - 1) / k >= nh) {
            denom = k;
            break;
        }
    uint64_t need = decode_need(&d, denom, orientation, resize, rw, rh, cw, ch);
    if (reserve(b, need, r)) {
        jpeg_destroy_decompress(&d);
        return SK_OK;
    }
    held = need;
    int drc = decode(&d, &e, denom, &px, r->why, sizeof r->why);
    jpeg_destroy_decompress(&d);
    if (drc) {
        sk_image_budget_give(b, held);
        free(px.p);
        if (drc == -2) return sk_error_set(err, SK_E_NOMEM, "out of memory");
        r->verdict = SK_IMAGE_BAD;
        return SK_OK;
    }
    int mrc = orient(&px, orientation);
    if (!mrc) mrc = resample(&px, rw, rh);
    if (!mrc) mrc = canvas(&px, cw, ch);
    if (!mrc) mrc = encode(&px, o->encode_quality > 0 && o->encode_quality <= 100 ? o->encode_quality : 95,
                           &r->out, &r->out_len);
    free(px.p);
    sk_image_budget_give(b, held);
    if (mrc) return sk_error_set(err, SK_E_NOMEM, "out of memory (image of %ux%u)", w, h);
    r->width = cw;
    r->height = ch;
    r->verdict = SK_IMAGE_DONE;
    return SK_OK;
}

int sk_image_meta_json(const char *json, size_t json_len, const sk_image_result *r, char **out,
                       size_t *out_len, sk_error *err)
{
    json_t *obj;
    if (json) {
        json_error_t je;
        obj = json_loadb(json, json_len, 0, &je);
        if (!obj || !json_is_object(obj)) {
            json_decref(obj);
            return sk_error_set(err, SK_E_CORRUPT, "its .json member is not a JSON object%s%s",
                                obj ? "" : ": ", obj ? "" : je.text);
        }
    } else if (!(obj = json_object())) {
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    int bad_set = json_object_set_new(obj, "width", json_integer(r->width)) ||
                  json_object_set_new(obj, "height", json_integer(r->height)) ||
                  json_object_set_new(obj, "original_width", json_integer(r->original_width)) ||
                  json_object_set_new(obj, "original_height", json_integer(r->original_height));
    /* keys keep their order (existing ones first, ours after), so the
     * same input gives the same bytes */
    char *text = bad_set ? NULL : json_dumps(obj, JSON_PRESERVE_ORDER | JSON_COMPACT);
    json_decref(obj);
    SK_FAIL_IF(!text, err, SK_E_NOMEM, "out of memory");
    *out = text;
    *out_len = strlen(text);
    return SK_OK;
}
