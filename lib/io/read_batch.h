/*
 * read_batch.h - positioned reads of local files made together
 * (read_batch.c): a batch's reads are queued, then submitted with one
 * system call through io_uring where the kernel allows it, else read one
 * pread each.  For the reader's global order, whose samples lie far apart
 * in their shards, so that every sample is a read of its own: from the
 * page cache the system call's entry and exit cost as much as the copy.
 * Internal to libshardkit.
 */
#ifndef SK_IO_READ_BATCH_H
#define SK_IO_READ_BATCH_H

#include "core/internal.h"

/* Reads a batch holds at most. */
#define SK_RBATCH_MAX 32

typedef struct sk_rbatch sk_rbatch;

/* A batch reader.  It uses io_uring when a ring can be made; when the
 * kernel refuses one (no io_uring, a seccomp filter, the io_uring_disabled
 * sysctl) or SHARDKIT_IO_URING=0 is set, every read is a pread: the same
 * results, one system call each.  A forked child using a batch reader made
 * before the fork makes its own ring first.  Fails only for want of
 * memory. */
int sk_rbatch_open(sk_rbatch **out, sk_error *err);
void sk_rbatch_close(sk_rbatch *b);
/* 1 when reads go through io_uring. */
int sk_rbatch_uring(const sk_rbatch *b);
/* Queues n bytes of fd at off into buf; url names the file in errors (kept,
 * not copied, until sk_rbatch_run returns).  At most SK_RBATCH_MAX queued. */
void sk_rbatch_add(sk_rbatch *b, int fd, const char *url, uint64_t off, void *buf, size_t n);
/* Reads what is queued and empties the queue: got[i] the bytes of the
 * i-th read, fewer than asked only at the end of its file.  SK_E_IO naming
 * the file and offset when a read fails. */
int sk_rbatch_run(sk_rbatch *b, size_t *got, sk_error *err);

#endif
