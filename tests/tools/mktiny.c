/*
 * mktiny.c - a dataset of many tiny samples, fast, for the scale benchmarks
 * of index-only tools (bench/bench_stats.sh: 3,000,000 samples in 1,000
 * shards): each sample is a key "%09u" (in key order, as pack writes
 * them) with a .cls (its label) and a .json ({"i": N, "label": L}),
 * written through the public sample writer, so the shards, indexes and
 * manifest are exactly what `shardkit pack` writes for those files.
 *
 *   mktiny N MAX_COUNT PATTERN
 *
 * Exit status: 0 written, 1 error (message on stderr), 2 usage.
 */
#include "shardkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: mktiny N MAX_COUNT PATTERN\n");
        return 2;
    }
    unsigned long long n = strtoull(argv[1], NULL, 10), per = strtoull(argv[2], NULL, 10);
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = argv[3];
    o.max_count = per;
    sk_error err = SK_ERROR_INIT;
    sk_sample_writer *w;
    if (sk_sample_writer_open(&w, &o, &err)) {
        fprintf(stderr, "mktiny: %s\n", err.msg);
        return 1;
    }
    for (unsigned long long i = 0; i < n; i++) {
        char key[16], cls[8], json[64];
        snprintf(key, sizeof key, "%09llu", i);
        unsigned label = (unsigned)((i * 2654435761u) % 1000);
        int cl = snprintf(cls, sizeof cls, "%u", label);
        int jl = snprintf(json, sizeof json, "{\"i\": %llu, \"label\": %u}", i, label);
        sk_sample_member m[2] = {{.ext = "cls", .data = cls, .size = (uint64_t)cl},
                                 {.ext = "json", .data = json, .size = (uint64_t)jl}};
        if (sk_sample_writer_add(w, key, 0, m, 2, &err)) {
            fprintf(stderr, "mktiny: %s\n", err.msg);
            sk_sample_writer_close(w);
            return 1;
        }
    }
    sk_pack_stats st;
    if (sk_sample_writer_finish(w, &st, &err)) {
        fprintf(stderr, "mktiny: %s\n", err.msg);
        sk_sample_writer_close(w);
        return 1;
    }
    sk_sample_writer_close(w);
    printf("samples=%llu shards=%llu\n", (unsigned long long)st.samples,
           (unsigned long long)st.shards);
    return 0;
}
