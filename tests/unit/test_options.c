/* test_options.c - the size rule of the public options structs: init
 * functions write no more than the caller's struct holds, a struct from an
 * older header (smaller struct_size) gets defaults for what it lacks, a
 * zeroed struct means this version's layout, and a struct_size this
 * library does not know is refused with a message naming the struct.
 * And hooks live on handles: sk_reshard reads its inputs through the
 * in_open of its options, not through a process-wide variable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"

/* A program built against an older header, whose reader options ended
 * before prefetch: the library must give it the default prefetch. */
typedef struct old_reader_options {
    size_t struct_size;
    int rank, world_size, worker, num_workers;
} old_reader_options;

static void init_writes_only_the_callers_size(void **state)
{
    (void)state;
    unsigned char *mem = malloc(sizeof(old_reader_options) + 16);
    memset(mem, 0xAB, sizeof(old_reader_options) + 16);
    sk_reader_options_init_sized((sk_reader_options *)mem, sizeof(old_reader_options));
    old_reader_options o;
    memcpy(&o, mem, sizeof o);
    assert_int_equal(o.struct_size, sizeof(old_reader_options));
    assert_int_equal(o.rank, -1);
    for (size_t i = sizeof(old_reader_options); i < sizeof(old_reader_options) + 16; i++)
        assert_int_equal(mem[i], 0xAB); /* past the caller's struct: untouched */
    free(mem);
}

static void init_sets_documented_defaults(void **state)
{
    (void)state;
    sk_reader_options ro;
    sk_reader_options_init(&ro);
    assert_int_equal(ro.struct_size, sizeof ro);
    assert_int_equal(ro.prefetch, 2);
    assert_int_equal(ro.world_size, -1);
    sk_s3_config c;
    sk_s3_config_init(&c);
    assert_int_equal(c.struct_size, sizeof c);
    assert_int_equal(c.concurrency, 16);
    assert_int_equal(c.max_attempts, 0); /* AWS_MAX_ATTEMPTS, the profile, else 8 */
    assert_int_equal(c.low_speed_limit, 1024);
    assert_int_equal(c.path_style, -1);
    sk_pack_options po;
    memset(&po, 0x5A, sizeof po);
    sk_pack_options_init(&po);
    assert_int_equal(po.struct_size, sizeof po);
    assert_null(po.pattern);
    assert_int_equal(po.max_size, 0);
}

static void unknown_struct_size_is_refused(void **state)
{
    (void)state;
    sk_pack_options po;
    sk_pack_options_init(&po);
    po.pattern = "x-%06d.tar";
    po.struct_size = sizeof po + 64; /* a newer header than this library */
    sk_error err = SK_ERROR_INIT;
    sk_pack *p = NULL;
    assert_int_equal(sk_pack_new(&p, &po, &err), SK_E_USAGE);
    assert_null(p);
    if (!strstr(err.msg, "sk_pack_options")) fail_msg("message does not name the struct: %s", err.msg);
    po.struct_size = 3; /* not even the size field */
    assert_int_equal(sk_pack_new(&p, &po, &err), SK_E_USAGE);
}

static void zeroed_struct_is_this_version(void **state)
{
    (void)state;
    sk_pack_options po;
    memset(&po, 0, sizeof po);
    po.pattern = "x-%06d.tar";
    sk_error err = SK_ERROR_INIT;
    sk_pack *p = NULL;
    int rc = sk_pack_new(&p, &po, &err);
    if (rc) fail_msg("a zeroed struct was refused: %s", err.msg);
    sk_pack_free(p);
}

/* --------------------------------------------- hooks live on handles */

struct mem_in {
    unsigned char *p;
    size_t len, pos;
};

static int mem_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    (void)err;
    struct mem_in *m = ctx;
    size_t n = m->len - m->pos < cap ? m->len - m->pos : cap;
    memcpy(buf, m->p + m->pos, n);
    m->pos += n;
    *got = n;
    return SK_OK;
}

static void mem_close(void *ctx) { free(ctx); }

/* A one-member tar ("k.txt" = "hello") made by hand: the hook is all the
 * input there is, so a shard out of it proves sk_reshard read through it. */
static int tar_in_open(void *ctx, sk_in_stream *s, const char *url, sk_error *err)
{
    (void)err;
    int *calls = ctx;
    ++*calls;
    assert_string_equal(url, "mem:one");
    static unsigned char tar[3 * 512 + 512];
    memset(tar, 0, sizeof tar);
    memcpy(tar, "k.txt", 5);
    memcpy(tar + 100, "0000644", 7);
    memcpy(tar + 108, "0000000", 7);
    memcpy(tar + 116, "0000000", 7);
    memcpy(tar + 124, "00000000005", 11);
    memcpy(tar + 136, "00000000000", 11);
    tar[156] = '0';
    memcpy(tar + 257, "ustar\0" "00", 8);
    memset(tar + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += tar[i];
    snprintf((char *)tar + 148, 8, "%06o", sum);
    memcpy(tar + 512, "hello", 5);
    struct mem_in *m = calloc(1, sizeof *m);
    m->p = tar;
    m->len = sizeof tar;
    s->ctx = m;
    s->read = mem_read;
    s->close = mem_close;
    s->size = sizeof tar;
    return SK_OK;
}

static void reshard_reads_through_its_in_open(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_options_XXXXXX", pattern[64], idx[80];
    assert_non_null(mkdtemp(dir));
    snprintf(pattern, sizeof pattern, "%s/o-%%02d.tar", dir);
    int calls = 0;
    sk_shard_options o;
    sk_shard_options_init(&o);
    o.pattern = pattern;
    o.in_open = tar_in_open;
    o.in_open_ctx = &calls;
    const char *inputs[] = {"mem:one"};
    sk_shard_stats st;
    sk_error err = SK_ERROR_INIT;
    int rc = sk_reshard(inputs, 1, &o, &st, &err);
    if (rc) fail_msg("sk_reshard: %s", err.msg);
    assert_int_equal(calls, 1);
    assert_int_equal(st.samples, 1);
    snprintf(idx, sizeof idx, "%s/o-00.tar.idx", dir);
    sk_index *ix = NULL;
    rc = sk_index_open(&ix, idx, 0, &err);
    if (rc) fail_msg("%s", err.msg);
    assert_int_equal(sk_index_sample_count(ix), 1);
    sk_index_close(ix);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_writes_only_the_callers_size),
        cmocka_unit_test(init_sets_documented_defaults),
        cmocka_unit_test(unknown_struct_size_is_refused),
        cmocka_unit_test(zeroed_struct_is_this_version),
        cmocka_unit_test(reshard_reads_through_its_in_open),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
