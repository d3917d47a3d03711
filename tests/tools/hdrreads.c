/*
 * hdrreads.c - the floor under a cold `index --fast` that reads header
 * blocks only: each shard's header runs (every member's header blocks, as
 * its SHARD.idx records them, joined where less than 2 KiB of small
 * members' data lies between, as the walk joins them) read from the disk
 * with every offset known in advance, which no walk knows: one thread per
 * shard, POSIX_FADV_RANDOM (no read-ahead past a run), every run requested
 * at once (POSIX_FADV_WILLNEED), then one pread per run.  The walk can do
 * no better than this without reading the data between the runs too; for
 * bench/bench_index.sh's cold rows, run on shards evicted by dropcache.
 * Prints the runs, their bytes and the seconds the reads took.
 *   hdrreads SHARD...   (each with its SHARD.idx beside it)
 */
#include "shardkit.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GAP 2048u /* data bytes between two headers that still join their runs (HDR_GAP) */

struct shard {
    const char *path;
    uint64_t *off, *len; /* the runs */
    size_t n;
    int failed;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The header runs of one shard, from its index. */
static int load_runs(struct shard *s)
{
    char idx[4096];
    sk_error err = SK_ERROR_INIT;
    sk_index *ix;
    if (snprintf(idx, sizeof idx, "%s.idx", s->path) >= (int)sizeof idx) {
        fprintf(stderr, "hdrreads: %s: name too long\n", s->path);
        return 1;
    }
    if (sk_index_open(&ix, idx, 0, &err)) {
        fprintf(stderr, "hdrreads: %s\n", err.msg);
        return 1;
    }
    uint64_t nm = sk_index_member_count(ix), prev = 0; /* the last data offset */
    s->off = malloc((nm ? nm : 1) * sizeof *s->off);
    s->len = malloc((nm ? nm : 1) * sizeof *s->len);
    if (!s->off || !s->len) {
        fprintf(stderr, "hdrreads: %s: out of memory\n", idx);
        sk_index_close(ix);
        return 1;
    }
    for (uint64_t i = 0; i < nm; i++) {
        sk_member_ref m;
        if (sk_index_member(ix, i, &m, &err)) {
            fprintf(stderr, "hdrreads: %s: %s\n", idx, err.msg);
            sk_index_close(ix);
            return 1;
        }
        uint64_t h = m.data_offset - m.header_len;
        if (s->n && h >= prev && h - prev <= GAP) {
            s->len[s->n - 1] = m.data_offset - s->off[s->n - 1]; /* the run goes on */
        } else {
            s->off[s->n] = h;
            s->len[s->n++] = m.header_len;
        }
        prev = m.data_offset;
    }
    sk_index_close(ix);
    return 0;
}

static void *read_runs(void *arg)
{
    struct shard *s = arg;
    static __thread unsigned char buf[1 << 20];
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        perror(s->path);
        s->failed = 1;
        return NULL;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    for (size_t i = 0; i < s->n; i++)
        (void)posix_fadvise(fd, (off_t)s->off[i], (off_t)s->len[i], POSIX_FADV_WILLNEED);
    for (size_t i = 0; i < s->n && !s->failed; i++) {
        size_t n = s->len[i] < sizeof buf ? (size_t)s->len[i] : sizeof buf;
        if (pread(fd, buf, n, (off_t)s->off[i]) < 0) {
            perror(s->path);
            s->failed = 1;
        }
    }
    close(fd);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: hdrreads SHARD...\n");
        return 2;
    }
    int n = argc - 1, bad = 0;
    struct shard *s = calloc((size_t)n, sizeof *s);
    pthread_t *t = calloc((size_t)n, sizeof *t);
    if (!s || !t) return 1;
    size_t runs = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < n; i++) {
        s[i].path = argv[i + 1];
        if (load_runs(&s[i])) return 1;
        runs += s[i].n;
        for (size_t k = 0; k < s[i].n; k++) bytes += s[i].len[k];
    }
    double t0 = now();
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, read_runs, &s[i])) {
            fprintf(stderr, "hdrreads: cannot start a thread\n");
            return 1;
        }
    for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
    double t1 = now();
    for (int i = 0; i < n; i++) {
        bad |= s[i].failed;
        free(s[i].off);
        free(s[i].len);
    }
    printf("%zu header runs, %llu bytes, read in %.3f s\n", runs, (unsigned long long)bytes, t1 - t0);
    free(s);
    free(t);
    return bad;
}
