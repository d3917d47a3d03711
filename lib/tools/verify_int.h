/* verify_int.h - internal helpers of verify.c (not installed). */
#ifndef SK_VERIFY_INT_H
#define SK_VERIFY_INT_H
#include <stddef.h>
/* 0 when libjpeg-turbo decodes data completely without a warning; else 1
 * and why holds libjpeg's message. */
int sk_jpeg_check(const void *data, size_t n, char *why, size_t cap);
#endif
