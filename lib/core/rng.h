/*
 * rng.h - the one random number generator of the library: splitmix64
 * (Steele, Lea, Flood 2014), tiny, fast and the same on every platform, so
 * a seed gives the same shuffle on any machine and in any release.  The
 * reader's epoch order, pack's --shuffle and the shuffler's buckets all
 * draw from it; changing a constant here changes every seeded output.
 */
#ifndef SK_CORE_RNG_H
#define SK_CORE_RNG_H

#include <stdint.h>

/* One step: advances *state and returns the next 64 random bits. */
uint64_t sk_splitmix64(uint64_t *state);
/* Uniform in [0, n), n > 0, without modulo bias (the short tail of the
 * 64-bit range is rejected and drawn again). */
uint64_t sk_uniform_below(uint64_t *state, uint64_t n);
/* A state for the stream (seed, a, b): independent streams per epoch,
 * slot, bucket... from one user seed. */
uint64_t sk_rng_derive(uint64_t seed, uint64_t a, uint64_t b);

#endif
