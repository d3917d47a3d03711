/*
 * image.h - JPEG members resized and re-encoded while packing (image.c),
 * with img2dataset's options and meanings.  Never installed; the options
 * struct, sk_image_options, is public (shardkit.h).
 */
#ifndef SK_IMAGE_H
#define SK_IMAGE_H

#include "core/internal.h"

/* What became of one image. */
typedef enum sk_image_verdict {
    SK_IMAGE_DONE,      /* *out holds the new JPEG (or the input, unchanged) */
    SK_IMAGE_TOO_SMALL, /* under --min-image-size: the sample is skipped */
    SK_IMAGE_ASPECT,    /* over --max-aspect-ratio: the sample is skipped */
    SK_IMAGE_BAD,       /* not a JPEG, truncated, or over the pixel cap: why says which */
} sk_image_verdict;

typedef struct sk_image_result {
    sk_image_verdict verdict;
    unsigned width, height;                   /* of the output */
    unsigned original_width, original_height; /* upright (after EXIF orientation) */
    unsigned char *out;                       /* malloc'd; NULL when passed through */
    size_t out_len;
    char why[160];                            /* for SK_IMAGE_BAD, and the skips */
} sk_image_result;

/* Transforms one JPEG (in, len) as o says.  Returns SK_OK with r filled for
 * every image, good or bad (r->verdict); an error only for a failure of
 * the machine (out of memory).  r->out == NULL with SK_IMAGE_DONE means the
 * input stands as it is (--resize-mode no, or nothing to do). */
int sk_image_transform(const sk_image_options *o, const unsigned char *in, size_t len,
                       sk_image_result *r, sk_error *err);

/* The image stage's memory budget (image_budget.c), shared by a run's
 * image workers: --image-memory bytes, 0 for sk_image_memory_default (a
 * quarter of physical memory, within SK_IMAGE_MEMORY_MIN..MAX). */
#define SK_IMAGE_MEMORY_MIN ((uint64_t)256 << 20)
#define SK_IMAGE_MEMORY_MAX ((uint64_t)2 << 30)
typedef struct sk_image_budget sk_image_budget;
uint64_t sk_image_memory_default(void);
int sk_image_budget_new(sk_image_budget **out, uint64_t bytes, sk_error *err);
void sk_image_budget_free(sk_image_budget *b);
uint64_t sk_image_budget_total(const sk_image_budget *b);
void sk_image_budget_take(sk_image_budget *b, uint64_t bytes);
void sk_image_budget_give(sk_image_budget *b, uint64_t bytes);
/* sk_image_transform within budget b (NULL: none): the decode waits until
 * the memory the header says it needs is free, and an image that needs
 * more than all of b is a bad image. */
int sk_image_transform_in(const sk_image_options *o, sk_image_budget *b, const unsigned char *in,
                          size_t len, sk_image_result *r, sk_error *err);

/* The words --resize-mode and --bad-image take for mode and policy (the
 * first, "no" and "skip", for a value out of range). */
const char *sk_image_mode_name(int mode);
const char *sk_image_bad_name(int policy);

/* Whether ext (lowercase, ext_len bytes) is an image member under o. */
int sk_image_is_image(const sk_image_options *o, const char *ext, size_t ext_len);

/* The output size for an upright w x h image (both > 0) under o; *resize
 * is 0 when the image keeps its size (mode no, or --resize-only-if-bigger
 * and it is not bigger).  For center_crop and border the final canvas is
 * size x size, and *rw x *rh is the size it is scaled to before the crop
 * or the border. */
void sk_image_target(const sk_image_options *o, unsigned w, unsigned h, unsigned *rw,
                     unsigned *rh, unsigned *cw, unsigned *ch, int *resize);

/* Adds width/height/original_width/original_height to a sample's JSON
 * member (json, json_len; NULL when the sample has none: a new object);
 * *out is malloc'd. */
int sk_image_meta_json(const char *json, size_t json_len, const sk_image_result *r,
                       char **out, size_t *out_len, sk_error *err);

/* 0 when libjpeg-turbo decodes data completely without a warning, within
 * the scan and work caps (image.c, on_progress); else 1 and why holds
 * libjpeg's message (verify --jpeg); -1 when the machine ran out of
 * memory (no verdict on the image). */
int sk_jpeg_check(const void *data, size_t n, char *why, size_t cap);
/* 0 when the JPEG's size is one io's --image-size rule can give (border,
 * center_crop: NxN; keep_ratio: the smaller side N; keep_ratio_largest:
 * the larger side N; with --resize-only-if-bigger also anything whose
 * side is under N); else 1 and why says what was found. */
int sk_jpeg_conforms(const void *data, size_t n, const sk_image_options *io, char *why, size_t cap);

#endif
