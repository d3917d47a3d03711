/*
 * bench_lookup.c - lookup latency for bench/bench_index.sh: opens a dataset
 * (SK_INDEX_TRUST_BODY), draws random keys and times sk_dataset_find alone
 * and find + read of every member (verified CRC32C), printing p50/p99; then
 * times sk_index_open of the index files given after the dataset.
 *   bench_lookup DATASET LOOKUPS [INDEX...]
 */
#include "shardkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int dcmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *t, size_t n)
{
    qsort(t, n, sizeof *t, dcmp);
    printf("%s: p50 %.2f us, p99 %.2f us (n=%zu)\n", what, t[n / 2] / 1e3, t[n * 99 / 100] / 1e3, n);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_lookup DATASET LOOKUPS [INDEX...]\n");
        return 2;
    }
    sk_error err = SK_ERROR_INIT;
    sk_dataset *ds;
    size_t n = strtoul(argv[2], NULL, 10);
    uint64_t total;
    if (sk_dataset_open(&ds, argv[1], SK_INDEX_TRUST_BODY, &err) ||
        sk_dataset_samples(ds, &total, &err)) {
        fprintf(stderr, "bench_lookup: %s\n", err.msg);
        return 1;
    }
    char **keys = malloc(n * sizeof *keys);
    double *tf = malloc(n * sizeof *tf), *tr = malloc(n * sizeof *tr);
    unsigned char *buf = malloc(64 << 20);
    srand(42);
    for (size_t i = 0; i < n; i++) { /* random keys, copied out first */
        sk_hit h;
        uint64_t ord = ((uint64_t)rand() << 31 ^ (uint64_t)rand()) % total;
        if (sk_dataset_at(ds, ord, &h, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
        keys[i] = strndup(h.sample.key, h.sample.key_len);
    }
    for (int pass = 0; pass < 2; pass++) /* pass 0 warms the page cache */
        for (size_t i = 0; i < n; i++) {
            sk_hit h;
            double t0 = now_ns();
            if (sk_dataset_find(ds, keys[i], strlen(keys[i]), &h, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            double t1 = now_ns();
            for (uint32_t k = 0; k < h.sample.member_count; k++)
                if (sk_dataset_read(ds, &h, k, buf, 64 << 20, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
            double t2 = now_ns();
            tf[i] = t1 - t0;
            tr[i] = t2 - t0;
        }
    printf("dataset: %llu samples\n", (unsigned long long)total);
    report("lookup (find by key)", tf, n);
    report("lookup + read all members (pread, CRC32C verified)", tr, n);
    for (int a = 3; a < argc; a++) {
        for (unsigned fl = SK_INDEX_TRUST_BODY, k = 0; k < 2; k++, fl = 0) {
            double t[200];
            for (int r = 0; r < 200; r++) {
                sk_index *ix;
                double t0 = now_ns();
                if (sk_index_open(&ix, argv[a], fl, &err)) { fprintf(stderr, "%s\n", err.msg); return 1; }
                t[r] = now_ns() - t0;
                if (r == 0 && k == 0) printf("index %s: %llu samples\n", argv[a], (unsigned long long)sk_index_sample_count(ix));
                sk_index_close(ix);
            }
            report(fl ? "  open, SK_INDEX_TRUST_BODY" : "  open, body verified", t, 200);
        }
    }
    for (size_t i = 0; i < n; i++) free(keys[i]);
    free(keys);
    free(tf);
    free(tr);
    free(buf);
    sk_dataset_close(ds);
    return 0;
}
