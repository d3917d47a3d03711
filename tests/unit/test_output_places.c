/* test_output_places.c - the library's entry points that write shards
 * (sk_pack_new, sk_reshard, sk_sample_writer_open) apply the place grammar
 * (docs/places.md) to their outputs as the command line does: a lost slash
 * ("s3:/b/x", "s3:b/x") in the pattern or the manifest is refused with
 * SK_E_USAGE naming it, and nothing is made (no local folder "s3:" holding
 * a dataset the program believes is in S3); http(s):// is refused as read
 * only; "./s3:/x" stays the local path it says it is. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardkit.h"
#include "sk_assert.h"

static char dir[64], home[4096];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sk-test-places.XXXXXX");
    if (!mkdtemp(dir) || !getcwd(home, sizeof home)) return -1;
    return chdir(dir); /* the lost-slash names are relative: they would land here */
}

static int teardown(void **state)
{
    (void)state;
    char cmd[200];
    if (chdir(home)) return -1;
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int made(const char *name)
{
    struct stat st;
    return lstat(name, &st) == 0;
}

/* The lost-slash forms (docs/places.md), as patterns and as manifests. */
static const char *const lost[] = {"s3:/b/o-%02d.tar", "s3:b/o-%02d.tar", "S3:/b/o-%02d.tar"};
static const char *const lost_manifest[] = {"s3:/b/manifest.json", "s3:b/manifest.json", "s3:"};

static void expect_refused(int rc, const sk_error *err, const char *name)
{
    if (rc != SK_E_USAGE) fail_msg("'%s' was taken (code %d): %s", name, rc, err->msg);
    if (!strstr(err->msg, name)) fail_msg("the message does not name '%s': %s", name, err->msg);
    if (made("s3:") || made("S3:")) fail_msg("'%s' made a local folder", name);
}

/* --------------------------------------------------------------- shard */

struct mem_in {
    unsigned char tar[4 * 512];
    size_t pos;
};

static int mem_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    (void)err;
    struct mem_in *m = ctx;
    size_t n = sizeof m->tar - m->pos < cap ? sizeof m->tar - m->pos : cap;
    memcpy(buf, m->tar + m->pos, n);
    m->pos += n;
    *got = n;
    return SK_OK;
}

static void mem_close(void *ctx) { free(ctx); }

/* One sample ("k.txt" = "hello"), a tar made by hand. */
static int one_sample(void *ctx, sk_in_stream *s, const char *url, sk_error *err)
{
    (void)ctx, (void)url, (void)err;
    struct mem_in *m = calloc(1, sizeof *m);
    unsigned char *t = m->tar;
    memcpy(t, "k.txt", 5);
    memcpy(t + 100, "0000644", 7);
    memcpy(t + 108, "0000000", 7);
    memcpy(t + 116, "0000000", 7);
    memcpy(t + 124, "00000000005", 11);
    memcpy(t + 136, "00000000000", 11);
    t[156] = '0';
    memcpy(t + 257, "ustar\0" "00", 8);
    memset(t + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += t[i];
    snprintf((char *)t + 148, 8, "%06o", sum);
    memcpy(t + 512, "hello", 5);
    s->ctx = m;
    s->read = mem_read;
    s->close = mem_close;
    s->size = sizeof m->tar;
    return SK_OK;
}

static int reshard_to(const char *pattern, const char *manifest, sk_error *err)
{
    sk_shard_options o;
    sk_shard_options_init(&o);
    o.pattern = pattern;
    o.manifest = manifest;
    o.in_open = one_sample;
    const char *inputs[] = {"mem:one"};
    return sk_reshard(inputs, 1, &o, NULL, err);
}

static void reshard_refuses_a_lost_slash(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    for (size_t i = 0; i < sizeof lost / sizeof *lost; i++)
        expect_refused(reshard_to(lost[i], NULL, &err), &err, lost[i]);
    for (size_t i = 0; i < sizeof lost_manifest / sizeof *lost_manifest; i++)
        expect_refused(reshard_to("out/o-%02d.tar", lost_manifest[i], &err), &err,
                       lost_manifest[i]);
    assert_false(made("out"));
    assert_int_equal(reshard_to("http://127.0.0.1:9/o-%02d.tar", NULL, &err), SK_E_USAGE);
    if (!strstr(err.msg, "read only")) fail_msg("%s", err.msg);
    /* a local folder named "s3:" is written with a path in front */
    assert_sk_ok(reshard_to("./s3:/o-%02d.tar", NULL, &err), err);
    assert_true(made("s3:/o-00.tar") && made("s3:/manifest.json"));
}

/* ---------------------------------------------------------------- pack */

static int pack_to(const char *pattern, const char *manifest, sk_error *err)
{
    sk_pack_options o;
    sk_pack_options_init(&o);
    o.pattern = pattern;
    o.manifest = manifest;
    sk_pack *p = NULL;
    int rc = sk_pack_new(&p, &o, err);
    if (!rc) rc = sk_pack_add_dir(p, "in", err);
    if (!rc) rc = sk_pack_run(p, NULL, err);
    sk_pack_free(p);
    return rc;
}

static void pack_refuses_a_lost_slash(void **state)
{
    (void)state;
    assert_int_equal(mkdir("in", 0755), 0);
    FILE *f = fopen("in/a.txt", "w");
    assert_non_null(f);
    fputs("a", f);
    fclose(f);
    sk_error err = SK_ERROR_INIT;
    for (size_t i = 0; i < sizeof lost / sizeof *lost; i++)
        expect_refused(pack_to(lost[i], NULL, &err), &err, lost[i]);
    for (size_t i = 0; i < sizeof lost_manifest / sizeof *lost_manifest; i++)
        expect_refused(pack_to("out/o-%02d.tar", lost_manifest[i], &err), &err, lost_manifest[i]);
    assert_false(made("out"));
    assert_int_equal(pack_to("https://127.0.0.1:9/o-%02d.tar", NULL, &err), SK_E_USAGE);
    if (!strstr(err.msg, "read only")) fail_msg("%s", err.msg);
    assert_sk_ok(pack_to("./s3:/o-%02d.tar", NULL, &err), err);
    assert_true(made("s3:/o-00.tar"));
}

/* ------------------------------------------------------- sample writer */

static void sample_writer_refuses_a_lost_slash(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    for (size_t i = 0; i < sizeof lost / sizeof *lost; i++) {
        sk_pack_options o;
        sk_pack_options_init(&o);
        o.pattern = lost[i];
        sk_sample_writer *w = NULL;
        expect_refused(sk_sample_writer_open(&w, &o, &err), &err, lost[i]);
        assert_null(w);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reshard_refuses_a_lost_slash, setup, teardown),
        cmocka_unit_test_setup_teardown(pack_refuses_a_lost_slash, setup, teardown),
        cmocka_unit_test_setup_teardown(sample_writer_refuses_a_lost_slash, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
