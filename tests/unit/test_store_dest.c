/* test_store_dest.c - what a writing job asks of its place (lib/io/
 * store_dest.c, sink.h, store.h), so that no job asks the kind: each
 * answer is the kind's.  The S3 side of each (a PUT, a listing page, an
 * ETag compared) runs against moto in the e2e scripts (s3io_index,
 * s3_upload_sync, s3io_pack, writer_s3); here the local and read-only
 * answers, and the refusals that need no server. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "io/store.h"

static char dir[] = "/tmp/test_store_dest.XXXXXX";

/* a local output is built under its final name: no scratch file, nothing
 * left to put; a web server takes none */
static void test_beside(void **state)
{
    (void)state;
    char url[256];
    snprintf(url, sizeof url, "%s/a.tar.idx", dir);
    sk_store_env env;
    sk_store_env_init(&env, NULL);
    sk_beside b;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_beside_begin(&b, &env, url, NULL, "idx", &err), SK_OK);
    assert_string_equal(b.path, url);
    assert_string_equal(b.scratch, "");
    assert_int_equal(sk_beside_put(&b, &env, &err), SK_OK);
    sk_beside_end(&b);
    assert_int_equal(access(url, F_OK), -1); /* put made nothing of its own */

    assert_int_equal(sk_beside_begin(&b, &env, "http://127.0.0.1:9/d/a.tar.idx", NULL, "idx", &err),
                     SK_E_USAGE);
    assert_non_null(strstr(err.msg, "http://127.0.0.1:9/d/a.tar.idx"));
    assert_non_null(strstr(err.msg, "takes no writes"));
    sk_beside_end(&b);
    /* a name the grammar refuses is refused by name, never a local path */
    assert_int_not_equal(sk_beside_begin(&b, &env, "s3:/b/a.tar.idx", NULL, "idx", &err), SK_OK);
    sk_beside_end(&b);
    /* an S3 output with a shard to tag asks the store for its ETag first:
     * without a client that is refused, naming the shard, and no scratch
     * file is made */
    assert_int_not_equal(sk_beside_begin(&b, &env, "s3://b/a.tar.idx", "s3://b/a.tar", "idx", &err), SK_OK);
    assert_non_null(strstr(err.msg, "s3://b/a.tar"));
    assert_string_equal(b.scratch, "");
    sk_beside_end(&b);
    sk_store_env_release(&env);
}

/* the shards' directory is made for a local pattern only */
static void test_make_dir(void **state)
{
    (void)state;
    char pat[256], d[256];
    snprintf(pat, sizeof pat, "%s/x/y/shard-%%06d.tar", dir);
    snprintf(d, sizeof d, "%s/x/y", dir);
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_sink_make_dir(pat, &err), SK_OK);
    struct stat st;
    assert_int_equal(stat(d, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    assert_int_equal(sk_sink_make_dir("s3://b/p/shard-%06d.tar", &err), SK_OK);
    assert_int_equal(access("s3:", F_OK), -1); /* no local folder named for a bucket */
    assert_int_equal(sk_sink_make_dir("shard-%06d.tar", &err), SK_OK);
    /* nothing to prepare for a local run; positional writes only to a file */
    assert_int_equal(sk_sink_prepare(NULL, pat, 0, 0, NULL, NULL, &err), SK_OK);
    assert_true(sk_sink_positional(pat));
    assert_false(sk_sink_positional("s3://b/p/shard-%06d.tar"));
}

/* the client check before a job starts, and the client made for s3:// */
static void test_reach(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_store_reach("s3://b/m.json", NULL, "manifest", &err), SK_E_USAGE);
    assert_string_equal(err.msg, "s3://b/m.json: an s3:// manifest needs an S3 client");
    assert_int_equal(sk_store_reach("local/m.json", NULL, "manifest", &err), SK_OK);
    assert_int_equal(sk_store_reach("https://h/m.json", NULL, "manifest", &err), SK_OK);
    assert_int_not_equal(sk_store_reach("gopher://h/m.json", NULL, "manifest", &err), SK_OK);
    sk_store_env env;
    sk_store_env_init(&env, NULL);
    assert_int_equal(sk_store_env_for(&env, "local.tar", NULL, &err), SK_OK);
    assert_null(env.s3);
    setenv("AWS_ACCESS_KEY_ID", "test", 1); /* a client is made, none is asked */
    setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
    setenv("AWS_DEFAULT_REGION", "us-east-1", 1);
    int rc = sk_store_env_for(&env, "s3://b/x.tar", "http://127.0.0.1:9", &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    assert_int_equal(rc, SK_OK);
    assert_non_null(env.s3);
    sk_store_env_release(&env);
    sk_store_where w;
    assert_int_equal(sk_store_classify("s3://b/k", &w, &err), SK_OK);
    assert_true(w.copyable);
    assert_string_equal(w.host_word, "bucket");
    assert_int_equal(sk_store_classify("https://h/k", &w, &err), SK_OK);
    assert_false(w.copyable);
    assert_string_equal(w.host_word, "host");
    assert_int_equal(sk_store_classify("d/k", &w, &err), SK_OK);
    assert_false(w.copyable);
}

/* a paged listing is an S3 prefix's; an entry is the same as a file only
 * when what its store keeps proves it */
static void test_list_page_and_same(void **state)
{
    (void)state;
    sk_store_env env;
    sk_store_env_init(&env, NULL);
    sk_error err = SK_ERROR_INIT;
    int more = 1;
    assert_int_equal(sk_store_list_page(dir, &env, NULL, NULL, NULL, &more, &err), SK_E_USAGE);
    assert_int_equal(more, 0);
    assert_int_equal(sk_store_list_page("s3://b/p/", &env, NULL, NULL, NULL, &more, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "needs an S3 client"));
    sk_store_env_release(&env);

    char path[256];
    snprintf(path, sizeof path, "%s/hello", dir);
    FILE *f = fopen(path, "wb");
    fputs("hello\n", f);
    fclose(f);
    /* md5("hello\n") */
    sk_store_entry v = {NULL, "hello", 6, "b1946ac92492d2347c6235b4d2611184", ""};
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 1);
    v.etag = "B1946AC92492D2347C6235B4D2611184";
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 1);
    v.etag = "00000000000000000000000000000000";
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 0);
    v.etag = ""; /* none known: sent again */
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 0);
    v.etag = "b1946ac92492d2347c6235b4d2611184";
    v.size = 7; /* another size */
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 0);
    /* one part of "hello\n": md5 of its md5, "-1" */
    v.size = 6;
    v.etag = "6a6d8d4533507d490ab007dfe8314ab7-1";
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 1);
    v.etag = "6a6d8d4533507d490ab007dfe8314ab7-2"; /* cut in two parts: not at this part size */
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 0);
    v.etag = "x-20000"; /* more parts than S3 allows */
    assert_int_equal(sk_store_entry_same(&v, path, 6, 8 << 20, &err), 0);
    /* a file that cannot be opened is an error, never "the same" */
    char gone[300];
    snprintf(gone, sizeof gone, "%s/gone", dir);
    v.etag = "b1946ac92492d2347c6235b4d2611184";
    int rc = sk_store_entry_same(&v, gone, 6, 8 << 20, &err);
    assert_true(rc < 0);
    assert_non_null(strstr(err.msg, gone));
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_beside),
        cmocka_unit_test(test_make_dir),
        cmocka_unit_test(test_reach),
        cmocka_unit_test(test_list_page_and_same),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
