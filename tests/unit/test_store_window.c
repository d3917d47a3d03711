/* test_store_window.c - the read windows (lib/io/store_window.c) over a
 * real file store: small reads served from aligned windows with one inner
 * read each, reads across windows and past the object's end, large reads
 * passed through, random access detected, the pool's memory bound, reads
 * from many threads at once, a failing inner read, and a store that
 * outlives its env's reference to the pool.  The inner reads are counted
 * by a thin store in front of the file store (and can be made to fail). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/store.h"

#define W 4096u
#define SIZE (10 * W + 123) /* ends inside the 11th window */

static char dir[] = "/tmp/test_store_window.XXXXXX";
static char path[256];

/* The file store behind a counter. */
struct counted {
    sk_store s;
    sk_store *file;
    unsigned reads; /* atomic */
    size_t biggest;
    int fail;       /* the next read_at fails */
};

static int c_stat(sk_store *s, sk_store_stat *out, sk_error *err)
{
    struct counted *c = (struct counted *)s;
    return c->file->ops->stat(c->file, out, err);
}

static int c_read_at(sk_store *s, uint64_t off, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct counted *c = (struct counted *)s;
    __atomic_add_fetch(&c->reads, 1, __ATOMIC_RELAXED);
    if (__atomic_exchange_n(&c->fail, 0, __ATOMIC_RELAXED))
        return sk_error_set(err, SK_E_NET, "%s: connection reset (the test's)", s->url);
    if (n > c->biggest) c->biggest = n;
    return c->file->ops->read_at(c->file, off, buf, n, got, err);
}

static int c_open_seq(sk_store *s, uint64_t off, sk_store_seq **out, sk_error *err)
{
    struct counted *c = (struct counted *)s;
    return c->file->ops->open_seq(c->file, off, out, err);
}

static void c_close(sk_store *s)
{
    struct counted *c = (struct counted *)s;
    sk_store_close(c->file);
    free(c);
}

static const struct sk_store_ops c_ops = {c_stat, c_read_at, c_open_seq, c_close, NULL};

/* A window store over the counted file; *cp: the counter. */
static sk_store *open_windowed(sk_window_pool *pool, struct counted **cp)
{
    struct counted *c = calloc(1, sizeof *c);
    sk_error err = SK_ERROR_INIT;
    assert_non_null(c);
    assert_int_equal(sk_store_file_open(&c->file, path, &err), SK_OK);
    c->s.ops = &c_ops;
    c->s.url = c->file->url;
    c->s.size_hint = UINT64_MAX;
    sk_store *w;
    assert_int_equal(sk_store_window_open(&w, &c->s, pool, &err), SK_OK);
    *cp = c;
    return w;
}

/* A pool of `memory` bytes of W-byte windows and one store over it. */
struct fx {
    sk_window_pool *p;
    struct counted *c;
    sk_store *s;
};

static struct fx fx_open(uint64_t memory)
{
    struct fx f;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_window_pool_new(&f.p, W, memory, &err), SK_OK);
    f.s = open_windowed(f.p, &f.c);
    return f;
}

static void fx_close(struct fx *f)
{
    sk_store_close(f->s);
    sk_window_pool_unref(f->p);
}

static unsigned char expect(uint64_t off)
{
    return (unsigned char)((off * 7 + off / 251) & 0xff);
}

static void check_bytes(const unsigned char *b, uint64_t off, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i] != expect(off + i)) fail_msg("byte %llu: %u, want %u", (unsigned long long)(off + i), b[i], expect(off + i));
}

static void read_ok(sk_store *s, uint64_t off, size_t n, size_t want_got)
{
    unsigned char *b = malloc(n ? n : 1);
    size_t got = 99;
    sk_error err = SK_ERROR_INIT;
    assert_non_null(b);
    if (s->ops->read_at(s, off, b, n, &got, &err)) fail_msg("read %llu+%zu: %s", (unsigned long long)off, n, err.msg);
    assert_int_equal(got, want_got);
    check_bytes(b, off, got);
    free(b);
}

static void test_neighbours_one_read(void **state)
{
    (void)state;
    struct fx f = fx_open(16 * W);
    /* members of 300 bytes, one after another: one inner read per window */
    for (uint64_t off = 0; off + 300 <= 3 * W; off += 300 + 212) read_ok(f.s, off, 300, 300);
    assert_int_equal(f.c->reads, 3);
    assert_int_equal(f.c->biggest, W);
    read_ok(f.s, W - 10, 20, 20); /* across two windows held: no read */
    assert_int_equal(f.c->reads, 3);
    read_ok(f.s, 5 * W - 10, 20, 20); /* across two windows not held: both fetched */
    assert_int_equal(f.c->reads, 5);
    sk_window_stats st;
    sk_window_pool_stats(f.p, &st);
    assert_int_equal(st.fetched, 5);
    assert_true(st.hits > 5);
    assert_true(st.held <= 16 * W);
    fx_close(&f);
}

static void test_end_of_object(void **state)
{
    (void)state;
    struct fx f = fx_open(4 * W);
    read_ok(f.s, SIZE - 100, 100, 100);          /* the last bytes */
    read_ok(f.s, SIZE - 50, 100, 50);            /* past the end: short, as the file is */
    read_ok(f.s, SIZE, 10, 0);                   /* at the end: nothing */
    read_ok(f.s, SIZE + 5 * W, 10, 0);           /* far past it: nothing, no over-read */
    read_ok(f.s, 10 * W - 20, 200, 143);         /* across the last window boundary */
    /* a crafted offset: what the inner store says (here pread's EINVAL,
     * naming the file), never bytes from elsewhere */
    unsigned char b[3];
    size_t got = 9, got_in = 9;
    sk_error e1 = SK_ERROR_INIT, e2 = SK_ERROR_INIT;
    int rc = f.s->ops->read_at(f.s, UINT64_MAX - 5, b, 3, &got, &e1);
    int rc_in = f.c->s.ops->read_at(&f.c->s, UINT64_MAX - 5, b, 3, &got_in, &e2);
    assert_int_equal(rc, rc_in);
    assert_int_equal(got, 0);
    if (rc) assert_non_null(strstr(e1.msg, path));
    fx_close(&f);
}

static void test_large_reads_pass(void **state)
{
    (void)state;
    struct fx f = fx_open(4 * W);
    read_ok(f.s, 100, 3 * W, 3 * W);
    assert_int_equal(f.c->reads, 1);
    assert_int_equal(f.c->biggest, 3 * W);
    sk_window_stats st;
    sk_window_pool_stats(f.p, &st);
    assert_int_equal(st.direct, 1);
    assert_int_equal(st.held, 0);
    fx_close(&f);
}

static void test_random_access_stops_windows(void **state)
{
    (void)state;
    struct fx f = fx_open(64 * W);
    /* one small read in each window, each window once (a shuffled reader):
     * the first 8 misses fetch whole windows, which serve nothing more;
     * the last 3 fetch their 10 bytes alone */
    static const int order[] = {7, 2, 9, 0, 5, 3, 8, 1, 6, 10, 4};
    for (size_t i = 0; i < 11; i++) read_ok(f.s, (uint64_t)order[i] * W + 100, 10, 10);
    sk_window_stats st;
    sk_window_pool_stats(f.p, &st);
    assert_int_equal(st.fetched, 8);
    assert_int_equal(st.direct, 3);
    assert_int_equal(f.c->reads, 11);
    assert_int_equal(f.c->biggest, W);
    /* read in order again: windows serve their neighbours, so whole ones
     * are fetched again */
    for (uint64_t off = 0; off + 100 <= SIZE; off += 100) read_ok(f.s, off, 100, 100);
    sk_window_pool_stats(f.p, &st);
    assert_true(st.fetched >= 10);
    fx_close(&f);
}

static void test_memory_bound(void **state)
{
    (void)state;
    sk_window_pool *p;
    sk_error err = SK_ERROR_INIT;
    assert_int_equal(sk_window_pool_new(&p, W, 2 * W, &err), SK_OK);
    struct counted *c1, *c2;
    sk_store *a = open_windowed(p, &c1), *b = open_windowed(p, &c2);
    for (uint64_t off = 0; off + 64 <= SIZE; off += 64) {
        read_ok(a, off, 64, 64);
        read_ok(b, off, 64, 64);
    }
    sk_window_stats st;
    sk_window_pool_stats(p, &st);
    assert_true(st.held <= 2 * W);
    sk_store_close(a);
    sk_store_close(b);
    sk_window_pool_unref(p);
    assert_int_equal(sk_window_pool_new(&p, W, W, &err), SK_E_USAGE); /* one window: refused */
    assert_int_equal(sk_window_pool_new(&p, 100, 1 << 20, &err), SK_E_USAGE);
}

static void test_failed_fetch_not_kept(void **state)
{
    (void)state;
    struct fx f = fx_open(4 * W);
    sk_error err = SK_ERROR_INIT;
    unsigned char b[10];
    size_t got = 7;
    f.c->fail = 1;
    assert_int_equal(f.s->ops->read_at(f.s, 50, b, sizeof b, &got, &err), SK_E_NET);
    assert_int_equal(got, 0);
    assert_non_null(strstr(err.msg, path)); /* names the object */
    read_ok(f.s, 50, 10, 10); /* fetched again, now whole */
    assert_int_equal(f.c->reads, 2);
    fx_close(&f);
}

struct worker {
    sk_store *s;
    unsigned seed;
    int bad;
};

static void *work(void *arg)
{
    struct worker *wk = arg;
    unsigned char b[700];
    for (int i = 0; i < 2000 && !wk->bad; i++) {
        uint64_t off = rand_r(&wk->seed) % (SIZE - sizeof b);
        size_t n = 1 + rand_r(&wk->seed) % sizeof b, got = 0;
        sk_error err = SK_ERROR_INIT;
        if (wk->s->ops->read_at(wk->s, off, b, n, &got, &err) || got != n) wk->bad = 1;
        for (size_t k = 0; k < got && !wk->bad; k++)
            if (b[k] != expect(off + k)) wk->bad = 2;
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    /* 4 windows for 11: evictions while other threads fetch and copy */
    struct fx f = fx_open(4 * W);
    pthread_t t[8];
    struct worker wk[8];
    for (int i = 0; i < 8; i++) {
        wk[i] = (struct worker){f.s, (unsigned)i * 7919u + 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, work, &wk[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(wk[i].bad, 0);
    }
    fx_close(&f);
}

/* The env lets go of its pool (released, or windows turned off) while a
 * store opened through it is still open: the store keeps the pool. */
static void test_store_outlives_env(void **state)
{
    (void)state;
    sk_store_env env;
    sk_error err = SK_ERROR_INIT;
    sk_store_env_init(&env, NULL);
    assert_int_equal(sk_store_env_windows(&env, W, 4 * W, &err), SK_OK);
    struct counted *c;
    sk_store *s = open_windowed(env.windows, &c);
    assert_int_equal(sk_store_env_windows(&env, 0, 0, &err), SK_OK);
    assert_null(env.windows);
    sk_store_env_release(&env);
    read_ok(s, 10, 10, 10);
    read_ok(s, 30, 10, 10);
    assert_int_equal(c->reads, 1);
    sk_store_close(s);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir)) return -1;
    snprintf(path, sizeof path, "%s/obj.bin", dir);
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    for (uint64_t i = 0; i < SIZE; i++) fputc(expect(i), f);
    return fclose(f);
}

static int teardown(void **state)
{
    (void)state;
    return unlink(path) == 0 && rmdir(dir) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_neighbours_one_read),
        cmocka_unit_test(test_end_of_object),
        cmocka_unit_test(test_large_reads_pass),
        cmocka_unit_test(test_random_access_stops_windows),
        cmocka_unit_test(test_memory_bound),
        cmocka_unit_test(test_failed_fetch_not_kept),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_store_outlives_env),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
