/* sk_sample_set.h - the fixture of the dataset-reading unit tests
 * (test_lookup, test_dataset_get): a fresh directory per test, and a
 * dataset of SK_SET_SAMPLES samples written by the sample writer, plain or
 * .tar.zst, 7 samples a shard, keys k0000..., three members a.b.c of mixed
 * sizes (empty, under, at and over a tar block) whose bytes a test can
 * regenerate to compare.  Define SK_SET_SAMPLES and SK_SET_TEMPLATE (the
 * mkdtemp template: its X's become the unique part) before including. */
#ifndef SK_SAMPLE_SET_H
#define SK_SAMPLE_SET_H

static char dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", SK_SET_TEMPLATE);
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Member m of sample i: sizes 0, 1, 511, 512, 513, 1024 and 3000 + 97 i */
static size_t member_size(int i, int m)
{
    static const size_t base[] = {0, 1, 511, 512, 513, 1024};
    return m == 2 ? 3000 + 97 * (size_t)i : base[(i + m) % 6];
}

static unsigned char byte_at(size_t k, int i, int m)
{
    return (unsigned char)(k * 31 + (size_t)i * 7 + (size_t)m);
}

static void write_dataset(const char *sub, int compress)
{
    char pattern[400];
    snprintf(pattern, sizeof pattern, "%s/%s/t-%%03d.tar%s", dir, sub, compress ? ".zst" : "");
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.max_count = 7;
    o.compress_level = compress ? 3 : 0;
    sk_error err = SK_ERROR_INIT;
    sk_sample_writer *w = NULL;
    assert_sk_ok(sk_sample_writer_open(&w, &o, &err), err);
    static const char *const exts[] = {"a", "b", "c"};
    for (int i = 0; i < SK_SET_SAMPLES; i++) {
        sk_sample_member ms[3];
        unsigned char *data[3];
        for (int m = 0; m < 3; m++) {
            size_t n = member_size(i, m);
            data[m] = malloc(n ? n : 1);
            for (size_t k = 0; k < n; k++) data[m][k] = byte_at(k, i, m);
            ms[m] = (sk_sample_member){exts[m], 0, data[m], n};
        }
        char key[32];
        snprintf(key, sizeof key, "k%04d", i);
        assert_sk_ok(sk_sample_writer_add(w, key, 0, ms, 3, &err), err);
        for (int m = 0; m < 3; m++) free(data[m]);
    }
    assert_sk_ok(sk_sample_writer_finish(w, NULL, &err), err);
    sk_sample_writer_close(w);
}

#endif
