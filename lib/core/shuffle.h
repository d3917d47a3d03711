/*
 * shuffle.h - a seeded, uniform, bounded-memory shuffle of opaque records
 * (serialized samples) through buckets in memory or temporary files.
 * Internal.
 *
 * Method (Rao-Sandelius): every record gets an independent, uniformly
 * random bucket label from a seeded generator and is appended to that
 * bucket, kept in memory while the budget allows, else in a file; then
 * the buckets are emitted in order, each shuffled in memory with
 * Fisher-Yates.  A bucket larger than the memory budget is split the same
 * way again, recursively.  The result is a uniformly random permutation,
 * the same for the same seed, budget and input order, wherever the
 * buckets were kept.  Bucket files are unlinked as soon as they are
 * created, so a killed run leaves nothing.
 */
#ifndef SK_SHUFFLE_H
#define SK_SHUFFLE_H

#include "core/internal.h"

#include <sys/uio.h>

typedef struct sk_shuffler sk_shuffler;

/* bytes_hint: expected total record bytes (0 = unknown) to size the
 * bucket count; mem: the memory budget (0 = 256 MiB): buckets held in
 * memory, write buffers and a mapped bucket never exceed it together. */
int sk_shuffler_new(sk_shuffler **out, const char *tmp_dir, uint64_t seed, uint64_t mem,
                    uint64_t bytes_hint, sk_error *err);
void sk_shuffler_free(sk_shuffler *s);
/* Appends a record (copied). */
int sk_shuffler_add(sk_shuffler *s, const void *rec, size_t len, sk_error *err);
/* Appends one record gathered from n (at most 64) pieces, copied once:
 * the caller need not assemble it first. */
int sk_shuffler_addv(sk_shuffler *s, const struct iovec *iov, int n, sk_error *err);
/* The same, for a record that stands for weight bytes it does not hold
 * (a reference to a sample in an input): the buckets are chosen, split
 * and shuffled as for a record of weight bytes, so references are put in
 * the order the records they stand for would be.  0: its own length. */
int sk_shuffler_addw(sk_shuffler *s, const struct iovec *iov, int n, uint64_t weight,
                     sk_error *err);
uint64_t sk_shuffler_count(const sk_shuffler *s);
/* Calls emit with every record once, in shuffled order. */
typedef int (*sk_shuffle_emit)(void *ctx, const unsigned char *rec, size_t len, sk_error *err);
int sk_shuffler_drain(sk_shuffler *s, sk_shuffle_emit emit, void *ctx, sk_error *err);


#endif
