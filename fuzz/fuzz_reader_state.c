/* fuzz_reader_state.c - the reader's saved position (sk_reader_state, the
 * bytes a training job stores and hands back) from any bytes: restore must
 * refuse a state of another job or read on from a sound one, never crash
 * or read outside the shards.  The reader runs over a small dataset packed
 * once, at start. */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char shards[2][256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char dir[] = "/tmp/fuzz_reader_state_XXXXXX", path[300];
    if (!mkdtemp(dir)) abort();
    snprintf(path, sizeof path, "%s/in", dir);
    mkdir(path, 0755);
    for (int i = 0; i < 24; i++) { /* 24 samples of two members */
        for (int m = 0; m < 2; m++) {
            snprintf(path, sizeof path, "%s/in/%04d.%s", dir, i, m ? "txt" : "cls");
            FILE *f = fopen(path, "w");
            if (!f) abort();
            fprintf(f, "%d-%d", i, m);
            fclose(f);
        }
    }
    char pattern[300], in[300];
    snprintf(pattern, sizeof pattern, "%s/out/s-%%02d.tar", dir);
    snprintf(in, sizeof in, "%s/in", dir);
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.max_count = 12;
    sk_pack *p;
    sk_error err = SK_ERROR_INIT;
    if (sk_pack_new(&p, &o, &err) || sk_pack_add_dir(p, in, &err) || sk_pack_run(p, NULL, &err)) {
        fprintf(stderr, "fuzz_reader_state: %s\n", err.msg);
        abort();
    }
    sk_pack_free(p);
    for (int i = 0; i < 2; i++) snprintf(shards[i], sizeof shards[i], "%s/out/s-%02d.tar", dir, i);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_reader_state st;
    if (size < sizeof st) return 0;
    memcpy(&st, data, sizeof st);
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = 0, o.world_size = 1, o.worker = 0, o.num_workers = 1;
    o.shuffle_buffer = data[size - 1] & 7; /* sometimes a shuffle buffer to replay */
    o.shuffle_shards = data[size - 1] >> 7;
    o.prefetch = 1;
    const char *urls[] = {shards[0], shards[1]};
    sk_reader *r;
    sk_error err = SK_ERROR_INIT;
    if (sk_reader_open(&r, urls, 2, &o, &err)) return 0;
    if (!sk_reader_restore(r, &st, &err)) {
        const sk_reader_sample *s;
        for (int i = 0; i < 64 && !sk_reader_next(r, &s, &err) && s; i++) {}
    }
    sk_reader_close(r);
    return 0;
}
