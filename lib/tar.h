/*
 * tar.h - tar format constants and the header writer shared inside the
 * library (tar_write.c).  Not installed.
 */
#ifndef SK_TAR_H
#define SK_TAR_H

#include <stddef.h>
#include <stdint.h>

#define SK_TAR_BLOCK 512
/* Longest member name a shard may hold; the header writer's worst case. */
#define SK_TAR_NAME_MAX 4096
#define SK_TAR_HEADER_MAX (3 * SK_TAR_BLOCK + SK_TAR_NAME_MAX + 512)

static inline uint64_t sk_tar_pad(uint64_t n)
{
    return (n + SK_TAR_BLOCK - 1) & ~(uint64_t)(SK_TAR_BLOCK - 1);
}

/* Bytes of header (pax + ustar, or ustar alone) for this member. */
size_t sk_tar_header_size(const char *name, size_t name_len, uint64_t size);
/* Writes them to dst (at least sk_tar_header_size bytes); returns the count. */
size_t sk_tar_header(unsigned char *dst, const char *name, size_t name_len,
                     uint64_t size, uint64_t mtime);
/* 1 when s[0..n) is well-formed UTF-8. */
int sk_utf8_valid(const char *s, size_t n);

#endif
