/* test_sample_writer.c - the streaming sample writer (sk_sample_writer_*,
 * lib/pack/sample_writer.c): samples from memory become shards whose
 * index and manifest say what was added (members in extension order, the
 * extension lowercased in the index, CRC32Cs of the data), cut by
 * max_count and max_size by pack's rule; names pack would refuse are
 * refused with the name in the message and leave the writer usable; calls
 * after finish, a second writer on the same directory, pack-only options
 * and a failed write (sticky) are errors; close before finish publishes no
 * manifest and leaves no temporary file; a sample of 150 members (some
 * over the writer's 1 MiB piece), compressed, reads back unchanged; plain
 * shards written through the 1 MiB gather buffer (io/writer.h), with
 * samples that fill it exactly, cross it, and pass it whole, verify (file,
 * index and member CRC32Cs) and read back unchanged; a key repeated after
 * other samples is refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardkit.h"
#include "sk_assert.h"

static char dir[256];
static char pattern[400];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sk-test-writer.XXXXXX");
    if (!mkdtemp(dir)) return -1;
    snprintf(pattern, sizeof pattern, "%s/out/d-%%03d.tar", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static sk_sample_writer *open_writer(uint64_t max_count, uint64_t max_size)
{
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.max_count = max_count;
    o.max_size = max_size;
    sk_sample_writer *w = NULL;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_sample_writer_open(&w, &o, &err), err);
    return w;
}

static int exists(const char *name)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/out/%s", dir, name);
    return stat(p, &st) == 0;
}

/* Files in out/ whose name starts with '.' and ends in ".tmp". */
static int temporaries(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/out", dir);
    DIR *d = opendir(p);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t l = strlen(e->d_name);
        n += e->d_name[0] == '.' && l > 4 && !strcmp(e->d_name + l - 4, ".tmp");
    }
    if (d) closedir(d);
    return n;
}

static void test_index_and_manifest(void **state)
{
    (void)state;
    sk_sample_writer *w = open_writer(2, 0);
    sk_error err = SK_ERROR_INIT;
    const char *jpg = "JPEGDATA", *cls = "7";
    sk_sample_member a[2] = {{"JPG", 0, jpg, 8}, {"cls", 0, cls, 1}};
    sk_sample_member b[1] = {{"seg.png", 0, "", 0}};
    sk_sample_member c[1] = {{"jsonXX", 4, "{}", 2}}; /* ext_len: "json" */
    assert_sk_ok(sk_sample_writer_add(w, "a", 0, a, 2, &err), err);
    assert_sk_ok(sk_sample_writer_add(w, "d/b", 0, b, 1, &err), err);
    assert_sk_ok(sk_sample_writer_add(w, "d/cXX", 3, c, 1, &err), err);
    sk_pack_stats st;
    assert_sk_ok(sk_sample_writer_finish(w, &st, &err), err);
    sk_sample_writer_close(w);
    assert_int_equal(st.samples, 3);
    assert_int_equal(st.shards, 2);
    assert_int_equal(st.files_done, 4);

    char p[600];
    snprintf(p, sizeof p, "%s/out/d-000.tar.idx", dir);
    sk_index *ix;
    assert_sk_ok(sk_index_open(&ix, p, 0, &err), err);
    assert_int_equal(sk_index_sample_count(ix), 2);
    sk_sample_ref s;
    sk_member_ref m;
    assert_sk_ok(sk_index_sample(ix, 0, &s, &err), err);
    assert_int_equal(s.key_len, 1);
    assert_memory_equal(s.key, "a", 1);
    assert_int_equal(s.member_count, 2);
    assert_sk_ok(sk_index_member(ix, 0, &m, &err), err); /* extension order: cls, then jpg */
    assert_int_equal(m.ext_len, 3);
    assert_memory_equal(m.ext, "cls", 3);
    assert_int_equal(m.size, 1);
    assert_int_equal(m.data_offset, 512);
    assert_int_equal(m.crc32c, sk_crc32c(0, cls, 1));
    assert_sk_ok(sk_index_member(ix, 1, &m, &err), err);
    assert_memory_equal(m.ext, "jpg", 3); /* lowercased in the index */
    assert_int_equal(m.crc32c, sk_crc32c(0, jpg, 8));
    assert_int_equal(m.data_offset, 512 + 512 + 512);
    assert_sk_ok(sk_index_sample(ix, 1, &s, &err), err);
    assert_int_equal(s.key_len, 3);
    assert_memory_equal(s.key, "d/b", 3);
    assert_int_equal(s.offset, 2048);
    sk_index_close(ix);

    /* the tar names keep the extension as given */
    snprintf(p, sizeof p, "%s/out/d-000.tar", dir);
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    char hdr[512];
    assert_int_equal(fseek(f, 1024, SEEK_SET), 0);
    assert_int_equal(fread(hdr, 1, 512, f), 512);
    fclose(f);
    assert_string_equal(hdr, "a.JPG");

    sk_manifest *man;
    snprintf(p, sizeof p, "%s/out/manifest.json", dir);
    assert_sk_ok(sk_manifest_load(&man, p, &err), err);
    assert_int_equal(man->nshards, 2);
    assert_string_equal(man->shards[0].url, "d-000.tar");
    assert_string_equal(man->shards[0].index_url, "d-000.tar.idx");
    assert_int_equal(man->shards[1].samples, 1);
    assert_int_equal(man->shards[1].first_ordinal, 2);
    assert_int_equal(man->samples, 3);
    assert_int_equal(man->members, 4);
    assert_int_equal(man->nexts, 4);
    sk_manifest_free(man);
    assert_int_equal(temporaries(), 0);
}

static void test_rollover_by_size(void **state)
{
    (void)state;
    /* each sample is 1024 tar bytes; with the 1024 end blocks, 4096 holds 3 */
    sk_sample_writer *w = open_writer(0, 4096);
    sk_error err = SK_ERROR_INIT;
    sk_sample_member m = {"bin", 0, "x", 1};
    char key[16];
    for (int i = 0; i < 7; i++) {
        snprintf(key, sizeof key, "k%d", i);
        assert_sk_ok(sk_sample_writer_add(w, key, 0, &m, 1, &err), err);
    }
    sk_pack_stats st;
    assert_sk_ok(sk_sample_writer_finish(w, &st, &err), err);
    sk_sample_writer_close(w);
    assert_int_equal(st.shards, 3);
    assert_true(exists("d-002.tar") && !exists("d-003.tar"));
    struct stat sb;
    char p[600];
    snprintf(p, sizeof p, "%s/out/d-000.tar", dir);
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal(sb.st_size, 4096);
}

static void test_refusals_leave_writer_usable(void **state)
{
    (void)state;
    sk_sample_writer *w = open_writer(0, 0);
    static char longkey[4200];
    memset(longkey, 'k', sizeof longkey - 1);
    sk_sample_member ok = {"jpg", 0, "x", 1}, slash = {"a/b", 0, "x", 1}, nul = {"j\0g", 3, "x", 1};
    sk_sample_member dup[2] = {{"Txt", 0, "x", 1}, {"tXT", 0, "y", 1}};
    struct {
        const char *key;
        size_t kl;
        const sk_sample_member *m;
        size_t n;
        const char *says;
    } bad[] = {
        {"..", 0, &ok, 1, "key \"..\": not a usable member name"},
        {"x/../y", 0, &ok, 1, "key \"x/../y\": not a usable member name"},
        {"./y", 0, &ok, 1, "not a usable member name"},
        {"/etc/passwd", 0, &ok, 1, "not a usable member name"},
        {"x/", 0, &ok, 1, "not a usable member name"},
        {"a.b", 0, &ok, 1, "key \"a.b\": a dot in its last component"},
        {"a\0b", 3, &ok, 1, "holds a NUL byte"},
        {"k", 0, &slash, 1, "extension \"a/b\" holds a '/'"},
        {"k", 0, &nul, 1, "extension \"j\" holds a NUL byte"},
        {"k", 0, dup, 2, "k.Txt and k.tXT: the same extension twice"},
        {longkey, 0, &ok, 1, "name longer than 4096 bytes"},
        {"k", 0, &ok, 0, "a sample with no members"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sk_error err = SK_ERROR_INIT;
        int rc = sk_sample_writer_add(w, bad[i].key, bad[i].kl, bad[i].m, bad[i].n, &err);
        if (rc != SK_E_INPUT || !strstr(err.msg, bad[i].says))
            fail_msg("case %zu: rc %d, message \"%s\", wanted \"%s\"", i, rc, err.msg, bad[i].says);
    }
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_sample_writer_add(w, "k", 0, &ok, 1, &err), err);
    assert_int_equal(sk_sample_writer_add(w, "k", 0, &ok, 1, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, "the same key as the sample before it"));
    /* a dot in a directory is fine: only the basename holds the key's end */
    assert_sk_ok(sk_sample_writer_add(w, "v1.2/k", 0, &ok, 1, &err), err);
    /* components of at most 255 bytes, as file systems and index openers
     * take them: a 256-byte directory, or basename.ext, is refused */
    memset(longkey, 'k', 300);
    longkey[256] = '/';
    assert_int_equal(sk_sample_writer_add(w, longkey, 260, &ok, 1, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, "a component longer than 255 bytes"));
    longkey[255] = '/';
    assert_int_equal(sk_sample_writer_add(w, longkey, 256 + 252, &ok, 1, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, "member name"));
    /* exactly 4096 bytes with the extension, not UTF-8 (pax, hdrcharset) */
    memset(longkey, 'k', sizeof longkey - 1);
    for (size_t i = 200; i < 4092; i += 201) longkey[i] = '/';
    longkey[0] = 'z', longkey[1] = '\xff';
    assert_int_equal(sk_sample_writer_add(w, longkey, 4093, &ok, 1, &err), SK_E_INPUT);
    assert_sk_ok(sk_sample_writer_add(w, longkey, 4092, &ok, 1, &err), err);
    sk_pack_stats st;
    assert_sk_ok(sk_sample_writer_finish(w, &st, &err), err);
    assert_int_equal(st.samples, 3);
    char p[600];
    sk_index *ix;
    sk_sample_ref s;
    snprintf(p, sizeof p, "%s/out/d-000.tar.idx", dir);
    assert_sk_ok(sk_index_open(&ix, p, 0, &err), err);
    assert_sk_ok(sk_index_sample(ix, 2, &s, &err), err);
    assert_int_equal(s.key_len, 4092);
    assert_memory_equal(s.key, longkey, 4092);
    /* pax block, its records (hdrcharset 21 + path 4107 bytes: 9 blocks), ustar block, data */
    assert_int_equal(s.span, 512 + 9 * 512 + 512 + 512);
    sk_index_close(ix);
    assert_int_equal(sk_sample_writer_add(w, "z", 0, &ok, 1, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "after the writer finished"));
    assert_int_equal(sk_sample_writer_finish(w, NULL, &err), SK_E_USAGE);
    sk_sample_writer_close(w);
}

/* A key given again after other samples (a, b, a) is refused, in this
 * shard or an earlier one, in order or not; 20,000 distinct keys in a
 * scrambled order are all taken (no false repeat); the refusal leaves the
 * writer usable. */
static void test_repeated_key_refused(void **state)
{
    (void)state;
    sk_sample_writer *w = open_writer(3, 0);
    sk_sample_member ok = {"cls", 0, "1", 1};
    sk_error err = SK_ERROR_INIT;
    const char *first[] = {"a", "b", "c", "d"};
    for (size_t i = 0; i < 4; i++) assert_sk_ok(sk_sample_writer_add(w, first[i], 0, &ok, 1, &err), err);
    /* "a" is in the first shard, "c" in this run's previous samples */
    assert_int_equal(sk_sample_writer_add(w, "a", 0, &ok, 1, &err), SK_E_INPUT);
    assert_non_null(strstr(err.msg, "key \"a\": written before in this run"));
    assert_int_equal(sk_sample_writer_add(w, "c", 0, &ok, 1, &err), SK_E_INPUT);
    char key[32];
    for (uint64_t i = 0; i < 20000; i++) {
        snprintf(key, sizeof key, "k/%08llu", (unsigned long long)((i * 7919) % 20000));
        assert_sk_ok(sk_sample_writer_add(w, key, 0, &ok, 1, &err), err);
    }
    assert_int_equal(sk_sample_writer_add(w, "k/00000000", 0, &ok, 1, &err), SK_E_INPUT);
    assert_int_equal(sk_sample_writer_add(w, "b", 0, &ok, 1, &err), SK_E_INPUT);
    assert_sk_ok(sk_sample_writer_add(w, "e", 0, &ok, 1, &err), err);
    sk_pack_stats st;
    assert_sk_ok(sk_sample_writer_finish(w, &st, &err), err);
    assert_int_equal(st.samples, 20005);
    sk_sample_writer_close(w);
}

static void test_lock_and_close_before_finish(void **state)
{
    (void)state;
    sk_sample_writer *w = open_writer(1, 0), *w2 = NULL;
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    sk_error err = SK_ERROR_INIT;
    /* one run at a time per dataset, as pack */
    assert_int_not_equal(sk_sample_writer_open(&w2, &o, &err), SK_OK);
    assert_null(w2);
    assert_non_null(strstr(err.msg, "manifest.json"));
    sk_sample_member m = {"bin", 0, "x", 1};
    assert_sk_ok(sk_sample_writer_add(w, "a", 0, &m, 1, &err), err);
    assert_sk_ok(sk_sample_writer_add(w, "b", 0, &m, 1, &err), err);
    sk_sample_writer_close(w); /* abandoned: d-000 was published, d-001 was not */
    assert_true(exists("d-000.tar") && exists("d-000.tar.idx"));
    assert_false(exists("d-001.tar"));
    assert_false(exists("manifest.json"));
    assert_int_equal(temporaries(), 0);
    assert_sk_ok(sk_sample_writer_open(&w2, &o, &err), err); /* the lock went with it */
    sk_sample_writer_close(w2);
}

static void test_options_and_sticky_failure(void **state)
{
    (void)state;
    sk_pack_options o;
    sk_sample_writer *w = NULL;
    sk_error err = SK_ERROR_INIT;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.shuffle = 1;
    assert_int_equal(sk_sample_writer_open(&w, &o, &err), SK_E_USAGE);
    o.shuffle = 0;
    o.parts = 2;
    assert_int_equal(sk_sample_writer_open(&w, &o, &err), SK_E_USAGE);
    o.parts = 0;
    o.pattern = "x-{part}-%04d.tar"; /* {part} without parts: pack's refusal */
    assert_int_equal(sk_sample_writer_open(&w, &o, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "{part}"));
    o.pattern = "no-number.tar";
    assert_int_not_equal(sk_sample_writer_open(&w, &o, &err), SK_OK);
    assert_null(w);
    /* an s3:// pattern without a client fails at the first shard, for good */
    o.pattern = "s3://bucket/x-%04d.tar";
    assert_sk_ok(sk_sample_writer_open(&w, &o, &err), err);
    sk_sample_member m = {"bin", 0, "x", 1};
    int rc = sk_sample_writer_add(w, "a", 0, &m, 1, &err);
    assert_int_equal(rc, SK_E_USAGE);
    assert_non_null(strstr(err.msg, "S3 client"));
    assert_int_equal(sk_sample_writer_add(w, "b", 0, &m, 1, &err), rc);
    assert_non_null(strstr(err.msg, "the writer stopped there"));
    assert_int_equal(sk_sample_writer_finish(w, NULL, &err), rc);
    sk_sample_writer_close(w);
    sk_sample_writer_close(NULL);
}


static int progress_calls;
static void on_progress(void *ctx, const sk_pack_stats *st)
{
    (void)ctx;
    progress_calls++;
    assert_true(st->samples <= 3);
}

/* Many members (more than one writev gathers) and members over the 1 MiB
 * piece size, read back through the reader: the same bytes, in extension
 * order; progress is reported at the end. */
static void test_many_members_read_back(void **state)
{
    (void)state;
    sk_pack_options o;
    sk_pack_options_init(&o);
    char zpattern[420];
    snprintf(zpattern, sizeof zpattern, "%s.zst", pattern);
    o.pattern = zpattern;
    o.compress_level = 3;
    o.progress = on_progress;
    sk_sample_writer *w = NULL;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_sample_writer_open(&w, &o, &err), err);
    enum { N = 150 };
    static char exts[N][8];
    static sk_sample_member m[N];
    unsigned char *big = malloc(3u << 20);
    assert_non_null(big);
    for (size_t i = 0; i < 3u << 20; i++) big[i] = (unsigned char)(i * 2654435761u >> 13);
    for (int i = 0; i < N; i++) {
        snprintf(exts[i], sizeof exts[i], "e%03d", N - 1 - i); /* given in reverse order */
        m[i] = (sk_sample_member){exts[i], 0, big + i * 7, (uint64_t)(i % 3 == 0 ? 0 : i * 31)};
    }
    m[10].size = (2u << 20) + 5; /* e139: spans pieces */
    progress_calls = 0;
    assert_sk_ok(sk_sample_writer_add(w, "many", 0, m, N, &err), err);
    assert_sk_ok(sk_sample_writer_add(w, "one", 0, m + 10, 1, &err), err);
    assert_sk_ok(sk_sample_writer_finish(w, NULL, &err), err);
    sk_sample_writer_close(w);
    assert_true(progress_calls >= 1);

    char url[600];
    snprintf(url, sizeof url, "%s/out/manifest.json", dir);
    const char *urls[1] = {url};
    sk_reader *r;
    assert_sk_ok(sk_reader_open(&r, urls, 1, NULL, &err), err);
    const sk_reader_sample *s;
    assert_sk_ok(sk_reader_next(r, &s, &err), err);
    assert_non_null(s);
    assert_string_equal(s->key, "many");
    assert_int_equal(s->nmembers, N);
    for (int k = 0; k < N; k++) {
        const sk_sample_member *src = &m[N - 1 - k]; /* e000 is the last given */
        char want[8];
        snprintf(want, sizeof want, "e%03d", k);
        assert_string_equal(s->members[k].ext, want);
        assert_int_equal(s->members[k].size, src->size);
        assert_memory_equal(s->members[k].data, src->data, src->size);
    }
    assert_sk_ok(sk_reader_next(r, &s, &err), err);
    assert_non_null(s);
    assert_string_equal(s->key, "one");
    assert_int_equal(s->members[0].size, (2u << 20) + 5);
    assert_memory_equal(s->members[0].data, m[10].data, m[10].size);
    assert_sk_ok(sk_reader_next(r, &s, &err), err);
    assert_null(s);
    sk_reader_close(r);
    free(big);
}

/* Sizes around the gather buffer (SK_GATHER, 1 MiB, io/writer.h): small
 * samples, one that fills the buffer exactly, ones that cross its end, one
 * of 3 MiB (several buffers), an empty one, one of many members; the
 * shards must verify and read back unchanged. */
static void test_gather_read_back(void **state)
{
    (void)state;
    sk_sample_writer *w = open_writer(0, 5u << 20);
    sk_error err = SK_ERROR_INIT;
    enum { N = 40, M = 70 };
    unsigned char *big = malloc(4u << 20);
    assert_non_null(big);
    for (size_t i = 0; i < 4u << 20; i++) big[i] = (unsigned char)(i * 2654435761u >> 11);
    static uint64_t sizes[N];
    static char keys[N][16];
    static char exts[M][8];
    static sk_sample_member many[M];
    uint64_t at = 0; /* tar bytes so far, to make sample 3 end the buffer exactly */
    for (int i = 0; i < N; i++) {
        sizes[i] = (uint64_t)(15000 + i * 37);
        if (i == 3) sizes[i] = (1u << 20) - at - 512; /* header + data: to 1 MiB exactly */
        if (i == 7) sizes[i] = (1u << 20) - 100;            /* crosses the end */
        if (i == 11) sizes[i] = 3u << 20;                   /* more than the buffer */
        if (i == 12) sizes[i] = 0;
        if (i == 20) sizes[i] = (1u << 20) + 1;
        snprintf(keys[i], sizeof keys[i], "k%04d", i);
        if (i == 30) { /* many small members: many iovecs in one append */
            for (int k = 0; k < M; k++) {
                snprintf(exts[k], sizeof exts[k], "m%03d", k);
                many[k] = (sk_sample_member){exts[k], 0, big + k * 13, (uint64_t)(k * 977)};
            }
            assert_sk_ok(sk_sample_writer_add(w, keys[i], 0, many, M, &err), err);
            continue;
        }
        sk_sample_member m = {"bin", 0, big + i, sizes[i]};
        assert_sk_ok(sk_sample_writer_add(w, keys[i], 0, &m, 1, &err), err);
        at += 512 + ((sizes[i] + 511) / 512) * 512;
    }
    sk_pack_stats st;
    assert_sk_ok(sk_sample_writer_finish(w, &st, &err), err);
    sk_sample_writer_close(w);
    assert_true(st.shards >= 2);

    char url[600];
    snprintf(url, sizeof url, "%s/out/manifest.json", dir);
    const char *urls[1] = {url};
    sk_verify_options vo;
    sk_verify_options_init(&vo);
    sk_verify_stats vs;
    assert_sk_ok(sk_verify(urls, 1, &vo, &vs, &err), err);
    assert_int_equal(vs.errors, 0);
    assert_int_equal(vs.samples, N);

    sk_reader *r;
    assert_sk_ok(sk_reader_open(&r, urls, 1, NULL, &err), err);
    const sk_reader_sample *s;
    for (int i = 0; i < N; i++) {
        assert_sk_ok(sk_reader_next(r, &s, &err), err);
        assert_non_null(s);
        assert_string_equal(s->key, keys[i]);
        if (i == 30) {
            assert_int_equal(s->nmembers, M);
            for (int k = 0; k < M; k++) {
                assert_int_equal(s->members[k].size, many[k].size);
                assert_memory_equal(s->members[k].data, many[k].data, many[k].size);
            }
            continue;
        }
        assert_int_equal(s->nmembers, 1);
        assert_int_equal(s->members[0].size, sizes[i]);
        if (sizes[i]) assert_memory_equal(s->members[0].data, big + i, sizes[i]);
    }
    assert_sk_ok(sk_reader_next(r, &s, &err), err);
    assert_null(s);
    sk_reader_close(r);
    free(big);
}

/* Writes samples k0..k(n-1) (sample 3's data changed when alter) with
 * max_count 2; returns the stats. */
static int write_run(int resume, uint64_t max_count, size_t n, int alter, sk_pack_stats *st,
                     sk_error *err)
{
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.max_count = max_count;
    o.resume = resume;
    sk_sample_writer *w = NULL;
    int rc = sk_sample_writer_open(&w, &o, err);
    char key[16], data[64];
    for (size_t i = 0; i < n && !rc; i++) {
        snprintf(key, sizeof key, "k%zu", i);
        int dl = snprintf(data, sizeof data, "data of %zu%s", i, alter && i == 3 ? "!" : "");
        sk_sample_member m[2] = {{"txt", 0, data, (uint64_t)dl}, {"CLS", 0, "1", 1}};
        rc = sk_sample_writer_add(w, key, 0, m, 2, err);
    }
    if (!rc) rc = sk_sample_writer_finish(w, st, err);
    sk_sample_writer_close(w);
    return rc;
}

static ino_t inode(const char *name)
{
    char p[600];
    struct stat st;
    snprintf(p, sizeof p, "%s/out/%s", dir, name);
    return stat(p, &st) == 0 ? st.st_ino : 0;
}

static char *slurp(const char *name)
{
    char p[600];
    snprintf(p, sizeof p, "%s/out/%s", dir, name);
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    char *b = calloc(1, 1 << 16);
    if (b && fread(b, 1, (1 << 16) - 1, f) == 0) b[0] = 0;
    fclose(f);
    return b;
}

/* resume: the shards an earlier run completed are kept when the same
 * samples come again (not rewritten: same inode), the rest is written,
 * and the manifest is the one an uninterrupted run writes; other samples
 * or options are SK_E_MISMATCH naming the shard. */
static void test_resume(void **state)
{
    (void)state;
    sk_pack_stats st;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(write_run(0, 2, 7, 0, &st, &err), err); /* 2 2 2 1 */
    char *want = slurp("manifest.json");
    assert_non_null(want);
    char p[600];
    snprintf(p, sizeof p, "%s/out/manifest.json", dir);
    unlink(p); /* as a killed run leaves it */
    ino_t i0 = inode("d-000.tar"), i2 = inode("d-002.tar"), i3 = inode("d-003.tar");
    assert_sk_ok(write_run(1, 2, 7, 0, &st, &err), err);
    assert_int_equal(st.shards_resumed, 3); /* the last one cannot be proven complete */
    assert_int_equal(st.shards, 4);
    assert_int_equal(st.samples, 7);
    assert_true(inode("d-000.tar") == i0 && inode("d-002.tar") == i2);
    assert_true(inode("d-003.tar") != i3);
    char *got = slurp("manifest.json");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);

    /* other data in sample 3 (shard 1) */
    int rc = write_run(1, 2, 7, 1, &st, &err);
    assert_int_equal(rc, SK_E_MISMATCH);
    assert_non_null(strstr(err.msg, "d-001.tar: sample 1 (key \"k3\")"));
    /* other options: max_count 3 would not cut shard 0 after 2 samples */
    rc = write_run(1, 3, 7, 0, &st, &err);
    assert_int_equal(rc, SK_E_MISMATCH);
    assert_non_null(strstr(err.msg, "d-000.tar: an earlier run cut it after 2 samples"));
    /* fewer samples than the kept shards hold */
    rc = write_run(1, 2, 3, 0, &st, &err);
    assert_int_equal(rc, SK_E_MISMATCH);
    assert_non_null(strstr(err.msg, "d-001.tar: an earlier run cut it after 2 samples, this run ends after 1"));
    /* without resume everything is replaced, and the same manifest comes out */
    assert_sk_ok(write_run(0, 2, 7, 0, &st, &err), err);
    assert_int_equal(st.shards_resumed, 0);
    assert_true(inode("d-000.tar") != i0);
    got = slurp("manifest.json");
    assert_string_equal(got, want);
    free(got);
    free(want);
    assert_int_equal(temporaries(), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_index_and_manifest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_rollover_by_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refusals_leave_writer_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_repeated_key_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lock_and_close_before_finish, setup, teardown),
        cmocka_unit_test_setup_teardown(test_options_and_sticky_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_many_members_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gather_read_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
