/*
 * read_many.h - reads at offsets of stores made several at once by a few
 * threads (read_many.c): for the reader's global order over remote
 * shards, where every read may wait on the network (a GET, or a block of
 * the disk cache another read is fetching) and one at a time the reads'
 * waits add up.  Internal to libshardkit.
 */
#ifndef SK_IO_READ_MANY_H
#define SK_IO_READ_MANY_H

#include "io/store.h"

typedef struct sk_rmany sk_rmany;

/* One read: len bytes of st at off into dst; got is set by the run. */
typedef struct sk_rmany_job {
    sk_store *st;
    uint64_t off;
    size_t len;
    void *dst;
    size_t got;
} sk_rmany_job;
/* Jobs of one store are taken in turn with the other stores' (the first
 * of each, then the second, ...): taken in store order, every reader
 * would wait on the one fetching the first store's bytes. */

/* threads readers (the caller of sk_rmany_run is one of them: threads - 1
 * are started; fewer when the system refuses more). */
int sk_rmany_open(sk_rmany **out, int threads, sk_error *err);
/* Makes the n jobs (each store's jobs next to each other), each taken by
 * whichever reader is free, and returns when all are done or one failed
 * (its error); a job that got fewer bytes than it asked is SK_E_CORRUPT
 * naming the store's URL and the bytes (truncated).  A store may be in
 * several jobs: it must be safe to read from several threads at once
 * (stat it first: a remote store asks its size once, on the first call). */
int sk_rmany_run(sk_rmany *m, sk_rmany_job *jobs, size_t n, sk_error *err);
void sk_rmany_close(sk_rmany *m);

#endif
