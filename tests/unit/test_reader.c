/* test_reader.c - the reader (lib/reader*.c) on shards packed here with
 * sk_pack: every sample exactly once across 2 ranks x 3 workers; shuffles
 * deterministic per (seed, epoch); save/restore mid-epoch continues
 * exactly, with and without a shuffle buffer, plain and .tar.zst; member
 * bytes as written; a truncated shard names the shard and offset and skip
 * mode moves on; a sample wider than the ring grows it, one over
 * max_sample is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "shardkit.h"

#define NSAMPLES 400
#define PER_SHARD 37 /* 11 shards, the last one short */

static char root[256], shards[300], pattern[400];

#define OK(call)                                                                \
    do {                                                                        \
        sk_error e_ = SK_ERROR_INIT;                                            \
        int rc_ = (call);                                                       \
        if (rc_) fail_msg("%s:%d: %s -> %d: %s", __FILE__, __LINE__, #call, rc_, \
                          e_.msg);                                              \
    } while (0)
/* The calls below use `&e_` as their error argument through this macro. */
#define E (&e_)

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* Sample i: "s/NNNNN" with a .txt naming it and a .bin of i*37 % 5000
 * bytes whose content depends on i. */
static size_t bin_size(int i)
{
    return (size_t)(i * 37 % 5000);
}
static unsigned char bin_byte(int i, size_t j)
{
    return (unsigned char)(i * 7 + j * 13);
}

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/sk-test-reader.%d", (int)getpid());
    char p[512];
    snprintf(p, sizeof p, "%s/in/s", root);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", p);
    assert_int_equal(system(cmd), 0);
    unsigned char *buf = malloc(5000);
    for (int i = 0; i < NSAMPLES; i++) {
        char t[64];
        int tl = snprintf(t, sizeof t, "sample %d", i);
        snprintf(p, sizeof p, "%s/in/s/%05d.txt", root, i);
        write_file(p, t, (size_t)tl);
        for (size_t j = 0; j < bin_size(i); j++) buf[j] = bin_byte(i, j);
        snprintf(p, sizeof p, "%s/in/s/%05d.bin", root, i);
        write_file(p, buf, bin_size(i));
    }
    free(buf);
    snprintf(shards, sizeof shards, "%s/out", root);
    snprintf(pattern, sizeof pattern, "%s/out/train-%%06d.tar", root);
    sk_pack_options o = {0};
    o.pattern = pattern;
    o.max_count = PER_SHARD;
    o.jobs = 1;
    sk_pack *pk;
    sk_pack_stats st;
    snprintf(p, sizeof p, "%s/in", root);
    OK(sk_pack_new(&pk, &o, E));
    OK(sk_pack_add_dir(pk, p, E));
    OK(sk_pack_run(pk, &st, E));
    sk_pack_free(pk);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd);
}

static int key_num(const sk_reader_sample *s)
{
    assert_true(s->key_len == 7 && !memcmp(s->key, "s/", 2));
    return atoi(s->key + 2);
}

/* Checks a sample's members against what setup wrote. */
static void check_sample(const sk_reader_sample *s)
{
    int i = key_num(s);
    assert_int_equal(s->nmembers, bin_size(i) ? 2 : 2);
    assert_string_equal(s->members[0].ext, "bin");
    assert_string_equal(s->members[1].ext, "txt");
    assert_int_equal(s->members[0].size, bin_size(i));
    for (size_t j = 0; j < bin_size(i); j++)
        if (s->members[0].data[j] != bin_byte(i, j)) fail_msg("sample %d byte %zu differs", i, j);
    char t[64];
    int tl = snprintf(t, sizeof t, "sample %d", i);
    assert_int_equal(s->members[1].size, (uint64_t)tl);
    assert_memory_equal(s->members[1].data, t, (size_t)tl);
}

static sk_reader *open_with(const sk_reader_options *o, const char *url)
{
    sk_reader *r;
    const char *urls[] = {url ? url : shards};
    OK(sk_reader_open(&r, urls, 1, o, E));
    return r;
}

/* Reads up to max samples' key numbers into out; returns how many. */
static size_t read_keys(sk_reader *r, int *out, size_t max, int check)
{
    size_t n = 0;
    const sk_reader_sample *s;
    while (n < max) {
        OK(sk_reader_next(r, &s, E));
        if (!s) break;
        if (check) check_sample(s);
        out[n++] = key_num(s);
    }
    return n;
}

static void test_in_order(void **state)
{
    (void)state;
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    sk_reader *r = open_with(&o, NULL);
    assert_int_equal(sk_reader_shard_count(r), (NSAMPLES + PER_SHARD - 1) / PER_SHARD);
    int keys[NSAMPLES + 1];
    size_t n = read_keys(r, keys, NSAMPLES + 1, 1);
    assert_int_equal(n, NSAMPLES);
    for (int i = 0; i < NSAMPLES; i++) assert_int_equal(keys[i], i);
    /* a second epoch gives the same again */
    OK(sk_reader_start_epoch(r, 1, E));
    assert_int_equal(read_keys(r, keys, NSAMPLES + 1, 0), NSAMPLES);
    sk_reader_close(r);
}

static void test_split_exactly_once(void **state)
{
    (void)state;
    for (int shuffle = 0; shuffle < 2; shuffle++) {
        int seen[NSAMPLES] = {0};
        size_t total = 0;
        for (int rank = 0; rank < 2; rank++)
            for (int w = 0; w < 3; w++) {
                sk_reader_options o;
                sk_reader_options_init(&o);
                o.rank = rank;
                o.world_size = 2;
                o.worker = w;
                o.num_workers = 3;
                o.shuffle_shards = shuffle;
                o.shuffle_buffer = shuffle ? 50 : 0;
                o.seed = 7;
                o.epoch = 3;
                sk_reader *r = open_with(&o, NULL);
                int keys[NSAMPLES];
                size_t n = read_keys(r, keys, NSAMPLES, 1);
                assert_true(n > 0); /* 11 shards over 6 slots: each gets one or two */
                for (size_t i = 0; i < n; i++) seen[keys[i]]++;
                total += n;
                sk_reader_close(r);
            }
        assert_int_equal(total, NSAMPLES);
        for (int i = 0; i < NSAMPLES; i++)
            if (seen[i] != 1) fail_msg("shuffle %d: sample %d seen %d times", shuffle, i, seen[i]);
    }
}

static void test_env_split(void **state)
{
    (void)state;
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("WORKER", "2", 1);
    setenv("NUM_WORKERS", "3", 1);
    sk_reader *r = open_with(NULL, NULL);
    sk_reader_state st;
    sk_reader_get_state(r, &st);
    assert_int_equal(st.slot, 5);
    assert_int_equal(st.slots, 6);
    assert_int_equal(sk_reader_slot_shards(r), 1); /* shards 5 of 0..10 */
    sk_reader_close(r);
    setenv("RANK", "2", 1);
    sk_reader *bad;
    sk_error e = SK_ERROR_INIT;
    const char *urls[] = {shards};
    assert_int_equal(sk_reader_open(&bad, urls, 1, NULL, &e), SK_E_USAGE);
    assert_non_null(strstr(e.msg, "rank 2"));
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("WORKER");
    unsetenv("NUM_WORKERS");
}

static size_t order_of(uint64_t seed, uint64_t epoch, int *keys)
{
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    o.shuffle_shards = 1;
    o.shuffle_buffer = 64;
    o.seed = seed;
    o.epoch = epoch;
    sk_reader *r = open_with(&o, NULL);
    size_t n = read_keys(r, keys, NSAMPLES, 0);
    sk_reader_close(r);
    return n;
}

static void test_shuffle_deterministic(void **state)
{
    (void)state;
    int a[NSAMPLES], b[NSAMPLES], c[NSAMPLES], d[NSAMPLES];
    assert_int_equal(order_of(42, 0, a), NSAMPLES);
    assert_int_equal(order_of(42, 0, b), NSAMPLES);
    assert_int_equal(order_of(43, 0, c), NSAMPLES);
    assert_int_equal(order_of(42, 1, d), NSAMPLES);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    assert_memory_not_equal(a, d, sizeof a);
    int sorted = 1;
    for (int i = 1; i < NSAMPLES; i++) sorted &= a[i] > a[i - 1];
    assert_false(sorted);
}

/* Reads `stop` samples, saves the state, then reads on in a new reader
 * restored from it: the concatenation must equal an uninterrupted run. */
static void resume_case(const char *url, size_t shuffle, size_t stop, int world, int slot)
{
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = 0;
    o.world_size = 1;
    o.worker = slot;
    o.num_workers = world;
    o.shuffle_shards = shuffle > 0;
    o.shuffle_buffer = shuffle;
    o.seed = 11;
    o.epoch = 2;
    int full[NSAMPLES], part[NSAMPLES];
    sk_reader *r = open_with(&o, url);
    size_t n = read_keys(r, full, NSAMPLES, 0);
    sk_reader_close(r);
    assert_true(stop <= n);

    r = open_with(&o, url);
    size_t k = read_keys(r, part, stop, 0);
    assert_int_equal(k, stop);
    sk_reader_state st;
    sk_reader_get_state(r, &st);
    sk_reader_close(r);
    assert_int_equal(st.yielded, stop);

    o.epoch = 0; /* the state's epoch wins */
    r = open_with(&o, url);
    OK(sk_reader_restore(r, &st, E));
    k += read_keys(r, part + k, NSAMPLES - k, 1);
    sk_reader_close(r);
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i++)
        if (full[i] != part[i])
            fail_msg("%s shuffle %zu stop %zu: sample %zu is %d after restore, %d straight", url ? url : shards,
                     shuffle, stop, i, part[i], full[i]);
}

static void test_resume(void **state)
{
    (void)state;
    size_t stops[] = {0, 1, 36, 37, 38, 100, 399, 400};
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++) {
        resume_case(NULL, 0, stops[i], 1, 0);
        resume_case(NULL, 30, stops[i], 1, 0);
    }
    resume_case(NULL, 30, 50, 3, 1);
    resume_case(NULL, 0, 50, 3, 2);
    /* without indexes: the reader walks headers up to the position */
    char dir[512], cmd[1200];
    snprintf(dir, sizeof dir, "%s/noidx", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/out/*.tar %s/", dir, root, dir);
    assert_int_equal(system(cmd), 0);
    resume_case(dir, 0, 100, 1, 0);
    resume_case(dir, 30, 100, 1, 0);
}

/* A state of one split refuses to restore into another. */
static void test_resume_mismatch(void **state)
{
    (void)state;
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    sk_reader *r = open_with(&o, NULL);
    sk_reader_state st;
    sk_reader_get_state(r, &st);
    sk_reader_close(r);
    o.seed = 5;
    r = open_with(&o, NULL);
    sk_error e = SK_ERROR_INIT;
    assert_int_equal(sk_reader_restore(r, &st, &e), SK_E_MISMATCH);
    assert_non_null(strstr(e.msg, "another run"));
    sk_reader_close(r);
}

/* .tar.zst: one zstd frame per 16 KiB of tar, and an index, so resume
 * goes through the shard's index. */
static void test_zstd(void **state)
{
    (void)state;
    char src[512], dst[600];
    snprintf(src, sizeof src, "%s/out/train-000001.tar", root);
    snprintf(dst, sizeof dst, "%s/zst", root);
    mkdir(dst, 0755);
    snprintf(dst, sizeof dst, "%s/zst/train-000001.tar.zst", root);
    FILE *f = fopen(src, "rb");
    assert_non_null(f);
    static unsigned char in[1 << 21], out[1 << 22];
    size_t n = fread(in, 1, sizeof in, f);
    fclose(f);
    size_t outn = 0;
    for (size_t off = 0; off < n; off += 16384) {
        size_t len = n - off < 16384 ? n - off : 16384;
        size_t z = ZSTD_compress(out + outn, sizeof out - outn, in + off, len, 3);
        assert_false(ZSTD_isError(z));
        outn += z;
    }
    write_file(dst, out, outn);
    OK(sk_index_build(dst, NULL, NULL, E));
    int keys[PER_SHARD + 1];
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    sk_reader *r = open_with(&o, dst);
    assert_int_equal(read_keys(r, keys, PER_SHARD + 1, 1), PER_SHARD);
    assert_int_equal(keys[0], PER_SHARD);
    sk_reader_close(r);
    resume_case(dst, 0, 20, 1, 0);
    resume_case(dst, 8, 20, 1, 0);
    /* truncated inside a frame: named error */
    snprintf(src, sizeof src, "%s/zst/cut.tar.zst", root);
    write_file(src, out, outn - 100);
    r = open_with(&o, src);
    const sk_reader_sample *s;
    sk_error e = SK_ERROR_INIT;
    int rc;
    while (!(rc = sk_reader_next(r, &s, &e)) && s) {}
    assert_int_equal(rc, SK_E_CORRUPT);
    assert_non_null(strstr(e.msg, "cut.tar.zst: truncated at offset"));
    sk_reader_close(r);
}

static void test_truncated(void **state)
{
    (void)state;
    char dir[512], a[600], b[600], cmd[1400];
    snprintf(dir, sizeof dir, "%s/trunc", root);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/out/train-000000.tar %s/out/train-000001.tar %s/",
             dir, root, root, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(a, sizeof a, "%s/train-000000.tar", dir);
    snprintf(b, sizeof b, "%s/train-000001.tar", dir);
    assert_int_equal(truncate(a, 20000), 0);
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    sk_reader *r = open_with(&o, dir);
    const sk_reader_sample *s;
    sk_error e = SK_ERROR_INIT;
    int rc, n = 0;
    while (!(rc = sk_reader_next(r, &s, &e)) && s) n++;
    assert_int_equal(rc, SK_E_CORRUPT);
    char want[700];
    snprintf(want, sizeof want, "%s: truncated at offset 20000", a);
    if (!strstr(e.msg, want)) fail_msg("message '%s' lacks '%s'", e.msg, want);
    assert_true(n > 0 && n < PER_SHARD);
    /* sticky */
    assert_int_equal(sk_reader_next(r, &s, &e), SK_E_CORRUPT);
    sk_reader_close(r);

    o.skip_errors = 1;
    r = open_with(&o, dir);
    int m = 0, from_b = 0;
    while (!(rc = sk_reader_next(r, &s, &e)) && s) {
        m++;
        from_b += !strcmp(s->shard_url, b);
    }
    assert_int_equal(rc, SK_OK);
    assert_int_equal(from_b, PER_SHARD);
    assert_int_equal(m, n + PER_SHARD);
    sk_reader_stats st;
    sk_reader_get_stats(r, &st);
    assert_int_equal(st.shards_skipped, 1);
    sk_reader_close(r);

    /* a bad header checksum names the shard and the header's offset */
    FILE *f = fopen(b, "r+b");
    assert_non_null(f);
    fseek(f, 5, SEEK_SET);
    fputc('#', f);
    fclose(f);
    o.skip_errors = 0;
    r = open_with(&o, b);
    assert_int_equal(sk_reader_next(r, &s, &e), SK_E_CORRUPT);
    snprintf(want, sizeof want, "%s: corrupt tar header at offset 0", b);
    if (!strstr(e.msg, want)) fail_msg("message '%s' lacks '%s'", e.msg, want);
    sk_reader_close(r);
}

static void test_big_sample(void **state)
{
    (void)state;
    char dir[512], p[600];
    snprintf(dir, sizeof dir, "%s/big/in", root);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "mkdir -p %s", dir);
    assert_int_equal(system(cmd), 0);
    size_t big = 3u << 20;
    unsigned char *buf = malloc(big);
    for (size_t i = 0; i < big; i++) buf[i] = (unsigned char)(i * 31 + 1);
    snprintf(p, sizeof p, "%s/a.bin", dir);
    write_file(p, "small", 5);
    snprintf(p, sizeof p, "%s/b.bin", dir);
    write_file(p, buf, big);
    snprintf(p, sizeof p, "%s/c.bin", dir);
    write_file(p, "small", 5);
    char pat[600];
    snprintf(pat, sizeof pat, "%s/big/out-%%d.tar", root);
    sk_pack_options po = {0};
    po.pattern = pat;
    po.jobs = 1;
    sk_pack *pk;
    sk_pack_stats pst;
    OK(sk_pack_new(&pk, &po, E));
    OK(sk_pack_add_dir(pk, dir, E));
    OK(sk_pack_run(pk, &pst, E));
    sk_pack_free(pk);
    snprintf(p, sizeof p, "%s/big/out-0.tar", root);
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    o.buffer_size = 256 << 10;
    sk_reader *r = open_with(&o, p);
    const sk_reader_sample *s;
    OK(sk_reader_next(r, &s, E));
    assert_string_equal(s->key, "a");
    OK(sk_reader_next(r, &s, E));
    assert_string_equal(s->key, "b");
    assert_int_equal(s->members[0].size, big);
    assert_memory_equal(s->members[0].data, buf, big);
    OK(sk_reader_next(r, &s, E));
    assert_string_equal(s->key, "c");
    OK(sk_reader_next(r, &s, E));
    assert_null(s);
    sk_reader_stats st;
    sk_reader_get_stats(r, &st);
    assert_true(st.ring_grows >= 1);
    sk_reader_close(r);

    o.max_sample = 1 << 20;
    r = open_with(&o, p);
    sk_error e = SK_ERROR_INIT;
    int rc;
    while (!(rc = sk_reader_next(r, &s, &e)) && s) {}
    assert_int_equal(rc, SK_E_INPUT);
    assert_non_null(strstr(e.msg, "raise max_sample"));
    assert_non_null(strstr(e.msg, "out-0.tar"));
    sk_reader_close(r);
    free(buf);
}

static void test_write_tar(void **state)
{
    (void)state;
    /* cat of one shard through the reader gives back its bytes (pack and
     * the reader write the same headers) less nothing */
    char p[512], q[600];
    snprintf(p, sizeof p, "%s/out/train-000002.tar", root);
    snprintf(q, sizeof q, "%s/copy.tar", root);
    FILE *f = fopen(q, "wb");
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    sk_reader *r = open_with(&o, p);
    const sk_reader_sample *s;
    while (1) {
        OK(sk_reader_next(r, &s, E));
        if (!s) break;
        OK(sk_reader_write_tar(s, fileno(f), q, E));
    }
    OK(sk_reader_write_tar_end(fileno(f), q, E));
    fclose(f);
    sk_reader_close(r);
    char cmd[1300];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", p, q);
    assert_int_equal(system(cmd), 0);
}

/* sk_reader_tar_out: the bytes sk_reader_write_tar writes, in large writes,
 * into a file and into a pipe; with a member over the buffer (the big
 * sample of test_big_sample, written unbuffered) between small ones.  And
 * bound to the reader (sk_reader_tar_out_bind: members written from the
 * ring when their stored bytes are the ones written), with the shard read
 * by a thread or inline, the reader closed before or after finish: the
 * same bytes. */
static void tar_out_one(const char *shard, const char *dir, size_t buffer_size, int inl,
                        int close_first)
{
    char want[700], got[700], piped[700], bound[700], cmd[3000];
    snprintf(want, sizeof want, "%s/want.tar", dir);
    snprintf(got, sizeof got, "%s/got.tar", dir);
    snprintf(piped, sizeof piped, "%s/piped.tar", dir);
    snprintf(bound, sizeof bound, "%s/bound.tar", dir);
    sk_reader_options o;
    sk_reader_options_init(&o);
    o.rank = o.worker = 0;
    o.world_size = o.num_workers = 1;
    o.buffer_size = buffer_size;
    o.read_inline = inl;
    snprintf(cmd, sizeof cmd, "cat > %s", piped);
    FILE *fw = fopen(want, "wb"), *fg = fopen(got, "wb"), *fb = fopen(bound, "wb"),
         *fp = popen(cmd, "w");
    assert_non_null(fw);
    assert_non_null(fg);
    assert_non_null(fb);
    assert_non_null(fp);
    sk_reader_tar_out *tg, *tp, *tb;
    OK(sk_reader_tar_out_open(&tg, fileno(fg), got, E));
    OK(sk_reader_tar_out_open(&tp, fileno(fp), "pipe", E));
    OK(sk_reader_tar_out_open(&tb, fileno(fb), bound, E));
    sk_reader *r = open_with(&o, shard);
    sk_reader_tar_out_bind(tb, r);
    const sk_reader_sample *s;
    size_t n = 0;
    while (1) {
        OK(sk_reader_next(r, &s, E));
        if (!s) break;
        OK(sk_reader_write_tar(s, fileno(fw), want, E));
        OK(sk_reader_tar_out_add(tg, s, E));
        OK(sk_reader_tar_out_add(tp, s, E));
        OK(sk_reader_tar_out_add(tb, s, E));
        n++;
    }
    assert_true(n > 2);
    if (close_first) sk_reader_close(r); /* writes what tb holds of the ring */
    OK(sk_reader_write_tar_end(fileno(fw), want, E));
    OK(sk_reader_tar_out_finish(tg, E));
    OK(sk_reader_tar_out_finish(tp, E));
    OK(sk_reader_tar_out_finish(tb, E));
    sk_reader_tar_out_free(tg);
    sk_reader_tar_out_free(tp);
    sk_reader_tar_out_free(tb);
    if (!close_first) sk_reader_close(r);
    fclose(fw);
    fclose(fg);
    fclose(fb);
    assert_int_equal(pclose(fp), 0);
    snprintf(cmd, sizeof cmd, "cmp %s %s && cmp %s %s && cmp %s %s", want, got, want, piped, want,
             bound);
    if (system(cmd)) fail_msg("%s (buffer %zu, inline %d): tar_out differs", shard, buffer_size, inl);
}

static void tar_out_all(const char *shard, const char *dir)
{
    for (int inl = 0; inl < 2; inl++) {
        tar_out_one(shard, dir, 0, inl, 0);
        tar_out_one(shard, dir, 64 << 10, inl, inl); /* a ring smaller than some samples */
    }
}

static void test_tar_out(void **state)
{
    (void)state;
    char p[600];
    snprintf(p, sizeof p, "%s/out/train-000002.tar", root);
    tar_out_all(p, root);
    snprintf(p, sizeof p, "%s/big/out-0.tar", root); /* test_big_sample's */
    tar_out_one(p, root, 256 << 10, 0, 0);
    tar_out_one(p, root, 256 << 10, 1, 1);
}

/* Offset of the header of member name in a tar file written by pack (one
 * header block per member, names under 100 bytes). */
static long member_at(const char *path, const char *name)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char b[512];
    long at = 0, found = -1;
    while (fread(b, 1, sizeof b, f) == sizeof b) {
        if (!memcmp(b, name, strlen(name) + 1) && !memcmp(b + 257, "ustar", 5)) {
            found = at;
            break;
        }
        at += 512;
    }
    fclose(f);
    assert_true(found >= 0);
    return found;
}

/* The bound tar_out on shards whose members are partly not as cat writes
 * them: pax headers for long, non-ASCII and non-UTF-8 names, zero-size
 * members, an uppercase extension (lowercased on output), a member of
 * 600 KB (between half the output buffer and all of it), padding that is
 * not zero, and foreign tars (Python's GNU and pax formats: other header
 * fields, long names as 'L' entries, directories and metadata members
 * between samples).  Whatever the shard holds, the stream is the one
 * sk_reader_write_tar writes member by member. */
static void test_tar_out_crafted(void **state)
{
    (void)state;
    char dir[512], in[600], p[1200], cmd[3000];
    snprintf(dir, sizeof dir, "%s/craft", root);
    snprintf(in, sizeof in, "%s/in", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p %s", in);
    assert_int_equal(system(cmd), 0);
    static const char *const small[] = {
        "k0.txt", "k0.bin", /* .bin empty */
        ("llllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllllll"
         "llllllllllllllllllllllllllllllllllllllllllllllllllllll.txt"), /* one long key */
        "k2.TXT", "k2.bin", "k4\xc3\xa9.txt", "k5\xff.txt", "k6.txt", "k7.txt", "k8.txt"};
    for (size_t i = 0; i < sizeof small / sizeof *small; i++) {
        snprintf(p, sizeof p, "%s/%s", in, small[i]);
        write_file(p, small[i], strstr(small[i], ".bin") ? 0 : strlen(small[i]));
    }
    size_t mid = 600000;
    unsigned char *buf = malloc(mid);
    for (size_t i = 0; i < mid; i++) buf[i] = (unsigned char)(i * 131 + 7);
    snprintf(p, sizeof p, "%s/k3.bin", in);
    write_file(p, buf, mid);
    free(buf);
    char pat[600];
    snprintf(pat, sizeof pat, "%s/p-%%d.tar", dir);
    sk_pack_options po = {0};
    po.pattern = pat;
    po.jobs = 1;
    sk_pack *pk;
    sk_pack_stats pst;
    OK(sk_pack_new(&pk, &po, E));
    OK(sk_pack_add_dir(pk, in, E));
    OK(sk_pack_run(pk, &pst, E));
    sk_pack_free(pk);
    char packed[600];
    snprintf(packed, sizeof packed, "%s/p-0.tar", dir);
    tar_out_all(packed, dir);

    /* k6.txt's padding made non-zero (no checksum covers it) */
    snprintf(p, sizeof p, "%s/pad.tar", dir);
    snprintf(cmd, sizeof cmd, "cp %s %s", packed, p);
    assert_int_equal(system(cmd), 0);
    long at = member_at(p, "k6.txt");
    FILE *f = fopen(p, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, at + 512 + 6, SEEK_SET), 0);
    for (int i = 0; i < 512 - 6; i++) fputc(0xaa, f);
    fclose(f);
    tar_out_all(p, dir);

    /* foreign tars */
    for (int fmt = 0; fmt < 2; fmt++) {
        snprintf(p, sizeof p, "%s/f%d.tar", dir, fmt);
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import io, sys, tarfile\n"
                 "t = tarfile.open(sys.argv[1], \"w\", format=tarfile.%s)\n"
                 "def add(n, b, kind=tarfile.REGTYPE):\n"
                 "    i = tarfile.TarInfo(n); i.size = len(b); i.type = kind; i.mtime = 7\n"
                 "    t.addfile(i, io.BytesIO(b) if kind == tarfile.REGTYPE else None)\n"
                 "add(\"a.txt\", b\"aa\"); add(\"a.bin\", bytes(600000))\n"
                 "add(\"d\", b\"\", tarfile.DIRTYPE); add(\"__meta__\", b\"m\")\n"
                 "add(\"x\" * 120 + \".txt\", b\"long\"); add(\"b.TXT\", b\"\"); add(\"b.bin\", b\"b\")\n"
                 "add(\"c.txt\", b\"c\" * 513)\n"
                 "t.close()' %s",
                 fmt ? "PAX_FORMAT" : "GNU_FORMAT", p);
        assert_int_equal(system(cmd), 0);
        tar_out_all(p, dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_in_order),
        cmocka_unit_test(test_split_exactly_once),
        cmocka_unit_test(test_env_split),
        cmocka_unit_test(test_shuffle_deterministic),
        cmocka_unit_test(test_resume),
        cmocka_unit_test(test_resume_mismatch),
        cmocka_unit_test(test_zstd),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_big_sample),
        cmocka_unit_test(test_write_tar),
        cmocka_unit_test(test_tar_out),
        cmocka_unit_test(test_tar_out_crafted),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
