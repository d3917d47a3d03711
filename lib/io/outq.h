/*
 * outq.h - appends to an sk_shard_out done on a second thread, in order.
 *
 * A plain reshard is mostly two kernel copies, the input into memory and
 * the output into the page cache; with one thread they add up, with two
 * they overlap.  The producer hands over ranges of its own buffers (each
 * with its CRC32C); the writer thread appends them with
 * sk_shard_out_writev.  A range must stay untouched until
 * sk_outq_wait(its sequence number) returns.  While ranges are queued the
 * producer must not touch the sk_shard_out (sk_outq_wait for all first, as
 * before sk_shard_out_finish).  Local files and file descriptors only: the
 * S3 sink shares its client with the reading thread.
 */
#ifndef SK_OUTQ_H
#define SK_OUTQ_H

#include "io/writer.h"

typedef struct sk_outq sk_outq;

/* threaded = 0: sk_outq_put writes at once, in the caller's thread. */
int sk_outq_new(sk_outq **q, sk_shard_out *out, int threaded, sk_error *err);
/* Queues (p, len) whose CRC32C is crc; *seq (may be NULL) receives its
 * sequence number.  Fails with the writer's error once a write failed. */
int sk_outq_put(sk_outq *q, const void *p, size_t len, uint32_t crc, uint64_t *seq, sk_error *err);
/* Waits until every range up to seq (0: all queued so far) is written. */
int sk_outq_wait(sk_outq *q, uint64_t seq, sk_error *err);
/* Stops the thread; ranges still queued are dropped (the caller aborts). */
void sk_outq_free(sk_outq *q);

#endif
