/* test_options.c - the size rule of the public options structs: init
 * functions write no more than the caller's struct holds, a struct from an
 * older header (smaller struct_size) gets defaults for what it lacks, a
 * zeroed struct means this version's layout, and a struct_size this
 * library does not know is refused with a message naming the struct. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
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
    assert_int_equal(c.max_attempts, 8);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(init_writes_only_the_callers_size),
        cmocka_unit_test(init_sets_documented_defaults),
        cmocka_unit_test(unknown_struct_size_is_refused),
        cmocka_unit_test(zeroed_struct_is_this_version),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
