/* verify_int.h - internal helpers of verify.c (not installed). */
#ifndef SK_VERIFY_INT_H
#define SK_VERIFY_INT_H
#include <stddef.h>
/* 0 when libjpeg-turbo decodes data completely without a warning; else 1
 * and why holds libjpeg's message. */
int sk_jpeg_check(const void *data, size_t n, char *why, size_t cap);
/* 0 when the JPEG's size is one io's --image-size rule can give (border,
 * center_crop: NxN; keep_ratio: the smaller side N; keep_ratio_largest:
 * the larger side N; with --resize-only-if-bigger also anything whose
 * side is under N); else 1 and why says what was found. */
struct sk_image_options;
int sk_jpeg_conforms(const void *data, size_t n, const struct sk_image_options *io, char *why,
                     size_t cap);
#endif
