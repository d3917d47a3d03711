/*
 * rng.c - splitmix64 and the draws built on it (rng.h).  Hand-written
 * rather than taken from a library: OpenSSL's and libc's generators are
 * neither seedable to the same sequence everywhere nor this cheap, and the
 * whole generator is four lines.
 */
#include "core/rng.h"

uint64_t sk_splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t sk_uniform_below(uint64_t *s, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n, r;
    do r = sk_splitmix64(s);
    while (r >= limit);
    return r % n;
}

uint64_t sk_rng_derive(uint64_t seed, uint64_t a, uint64_t b)
{
    uint64_t s = seed;
    s = sk_splitmix64(&s) ^ a;
    s = sk_splitmix64(&s) ^ b;
    return sk_splitmix64(&s);
}
