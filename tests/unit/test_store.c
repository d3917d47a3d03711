/* test_store.c - the store interface (lib/io/store.h) on local files and
 * pipes, the scheme rule, and what a manifest served over http(s):// may
 * name (sk_manifest_resolve). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/format.h"
#include "io/store.h"

static char dir[] = "/tmp/test_store.XXXXXX";

static void test_file_store(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/f.bin", dir);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 10000; i++) fputc(i & 0xff, f);
    fclose(f);
    sk_store_env env;
    sk_store_env_init(&env, NULL);
    sk_store *s;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_store_open(&s, path, &env, &err), SK_OK);
    sk_store_stat st;
    assert_int_equal(s->ops->stat(s, &st, &err), SK_OK);
    assert_int_equal(st.size, 10000);
    unsigned char b[100];
    size_t got;
    assert_int_equal(s->ops->read_at(s, 9950, b, sizeof b, &got, &err), SK_OK);
    assert_int_equal(got, 50); /* short only at the end */
    assert_int_equal(b[0], 9950 & 0xff);
    sk_store_seq *q;
    assert_int_equal(s->ops->open_seq(s, 300, &q, &err), SK_OK);
    assert_int_equal(q->read(q, b, 10, &got, &err), SK_OK);
    assert_true(got > 0 && b[0] == (300 & 0xff));
    q->close(q);
    sk_store_close(s);
    sk_store_env_release(&env);
}

static void test_pipe_is_sequential(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *w = fopen(path, "wb");
        fputs("hello", w);
        fclose(w);
        _exit(0);
    }
    sk_store *s;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_store_file_open(&s, path, &err), SK_OK);
    assert_null(s->ops->read_at); /* no offsets on a stream */
    sk_store_seq *q;
    assert_int_not_equal(s->ops->open_seq(s, 1, &q, &err), SK_OK);
    assert_non_null(strstr(err.msg, path));
    assert_int_equal(s->ops->open_seq(s, 0, &q, &err), SK_OK);
    char b[16] = {0};
    size_t got = 0, all = 0;
    do {
        assert_int_equal(q->read(q, b + all, sizeof b - 1 - all, &got, &err), SK_OK);
        all += got;
    } while (got);
    assert_string_equal(b, "hello");
    q->close(q);
    sk_store_close(s);
    int ws;
    waitpid(pid, &ws, 0);
}

static void test_schemes(void **state)
{
    (void)state;
    sk_loc_kind k;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_store_kind("s3://b/k", &k, &err), SK_OK);
    assert_int_equal(k, SK_LOC_S3);
    assert_int_equal(sk_store_kind("HTTPS://h/x.tar", &k, &err), SK_OK);
    assert_int_equal(k, SK_LOC_HTTP);
    assert_int_equal(sk_store_kind("dir/a:b.tar", &k, &err), SK_OK);
    assert_int_equal(k, SK_LOC_LOCAL);
    assert_int_equal(sk_store_kind("ftp://h/x.tar", &k, &err), SK_E_USAGE);
    assert_non_null(strstr(err.msg, "ftp://"));
    /* a scheme in any case (RFC 3986): "S3://" is S3, never a folder "S3:" */
    assert_int_equal(sk_store_kind("S3://b/k", &k, &err), SK_OK);
    assert_int_equal(k, SK_LOC_S3);
    assert_true(sk_store_is_s3("S3://b/k") && sk_store_is_remote("Http://h/x"));
    /* a lost slash is refused, naming the way to a local name that begins so */
    const char *lost[] = {"s3:/b/k", "s3:b/k", "s3:", "S3:/b", "http:/h/x.tar", "https:h/x", "HTTP:"};
    for (size_t i = 0; i < sizeof lost / sizeof *lost; i++) {
        err = (sk_error)SK_ERROR_INIT;
        if (sk_store_kind(lost[i], &k, &err) != SK_E_USAGE) fail_msg("%s was taken", lost[i]);
        assert_non_null(strstr(err.msg, lost[i]));
        assert_non_null(strstr(err.msg, "two slashes"));
        assert_false(sk_store_is_remote(lost[i]) || sk_store_is_s3(lost[i]));
    }
    assert_non_null(strstr(err.msg, "./HTTP:"));
    /* ... and written so it is one: a folder named "s3:", a name with ':' inside */
    const char *local[] = {"./s3:/b/k", "./s3:", "data/s3://x", "s3", "s3x:/y", "-"};
    for (size_t i = 0; i < sizeof local / sizeof *local; i++) {
        if (sk_store_kind(local[i], &k, &err)) fail_msg("%s: %s", local[i], err.msg);
        assert_int_equal(k, SK_LOC_LOCAL);
    }
    /* where the bucket or host and the key lie, and what can be done there */
    sk_store_where w;
    assert_int_equal(sk_store_classify("s3://bkt/a/b.tar", &w, &err), SK_OK);
    assert_true(w.remote && w.listable && w.writable);
    assert_int_equal(w.host, 5), assert_int_equal(w.host_len, 3), assert_int_equal(w.path, 9);
    assert_int_equal(sk_store_classify("https://h:8080", &w, &err), SK_OK);
    assert_true(w.remote && !w.listable && !w.writable);
    assert_int_equal(w.host_len, 6), assert_int_equal(w.path, 14);
    assert_int_equal(sk_store_classify("-", &w, &err), SK_OK);
    assert_true(!w.remote && !w.listable && w.writable);
    sk_store_env env;
    sk_store *s;
    sk_store_env_init(&env, NULL);
    assert_int_equal(sk_store_open(&s, "s3://b/k.tar", &env, &err), SK_E_USAGE); /* no client */
    assert_int_equal(sk_store_list("http://h/ds/", &env, NULL, NULL, NULL, &err), SK_E_USAGE);
    sk_store_env_release(&env);
}

static void resolves(const char *manifest, const char *url, const char *want)
{
    char *out = NULL;
    sk_error err = SK_ERROR_INIT;
    if (sk_manifest_resolve(manifest, url, &out, &err)) fail_msg("%s names %s: %s", manifest, url, err.msg);
    assert_string_equal(out, want);
    free(out);
}

static void refused(const char *manifest, const char *url)
{
    char *out = NULL;
    sk_error err = SK_ERROR_INIT;
    int rc = sk_manifest_resolve(manifest, url, &out, &err);
    if (rc == SK_OK) fail_msg("%s naming %s resolved to %s", manifest, url, out);
    assert_non_null(strstr(err.msg, manifest));
}

static void test_http_manifest_names(void **state)
{
    (void)state;
    const char *m = "https://example.org/ds/manifest.json";
    resolves(m, "shard-000.tar", "https://example.org/ds/shard-000.tar");
    resolves(m, "sub/shard-000.tar", "https://example.org/ds/sub/shard-000.tar");
    resolves(m, "https://example.org/ds/shard-001.tar", "https://example.org/ds/shard-001.tar");
    refused(m, "../secret.tar");
    refused(m, "sub/../../secret.tar");
    refused(m, "/etc/passwd");
    refused(m, "https://example.org/other/x.tar");
    refused(m, "https://evil.example/ds/x.tar");
    refused(m, "s3://b/x.tar");
    refused(m, "file:///etc/passwd");
    refused(m, "%2e%2e/secret.tar");
    refused(m, "x.tar?a=1");
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
        cmocka_unit_test(test_file_store),
        cmocka_unit_test(test_pipe_is_sequential),
        cmocka_unit_test(test_schemes),
        cmocka_unit_test(test_http_manifest_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
