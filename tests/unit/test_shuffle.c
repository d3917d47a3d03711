/* test_shuffle.c - the bucket shuffle emits every record exactly once,
 * the same order for the same seed, another for another seed, also when
 * the memory budget forces many buckets and recursive splits, and for
 * records of mixed sizes with some buckets in memory and some in files;
 * and records that weigh what they stand for (references) come out in the
 * order the records they stand for would, whatever the budget. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sk_assert.h"

#include "core/shuffle.h"
#include "core/rng.h"

#define N 2000

struct got {
    uint32_t order[N];
    size_t n;
};

static int collect(void *ctx, const unsigned char *rec, size_t len, sk_error *err)
{
    struct got *g = ctx;
    (void)err;
    assert_int_equal(len, 100);
    g->order[g->n++] = sk_get_le32(rec);
    return SK_OK;
}

struct order {
    uint32_t *order;
    size_t n;
};

static int check_mixed(void *ctx, const unsigned char *rec, size_t len, sk_error *err)
{
    struct order *g = ctx;
    (void)err;
    uint32_t i = sk_get_le32(rec);
    assert_int_equal(len, 4 + (i * 7919u) % (i % 10 ? 900 : 19000));
    for (size_t k = 4; k < len; k++) assert_int_equal(rec[k], i & 0xff);
    g->order[g->n++] = i;
    return SK_OK;
}

static void run(uint64_t seed, uint64_t mem, struct got *g)
{
    sk_shuffler *s;
    sk_error err = SK_ERROR_INIT;
    unsigned char rec[100] = {0};
    assert_sk_ok(sk_shuffler_new(&s, NULL, seed, mem, mem ? 4 * N * 108 : 0, &err), err);
    for (uint32_t i = 0; i < N; i++) {
        sk_put_le32(rec, i);
        assert_sk_ok(sk_shuffler_add(s, rec, sizeof rec, &err), err);
    }
    assert_int_equal(sk_shuffler_count(s), N);
    g->n = 0;
    assert_sk_ok(sk_shuffler_drain(s, collect, g, &err), err);
    sk_shuffler_free(s);
    assert_int_equal(g->n, N);
    char seen[N] = {0};
    for (size_t i = 0; i < N; i++) {
        assert_true(g->order[i] < N);
        assert_false(seen[g->order[i]]);
        seen[g->order[i]] = 1;
    }
}

static void test_permutation_deterministic(void **state)
{
    (void)state;
    static struct got a, b, c;
    run(1, 0, &a);
    run(1, 0, &b);
    run(2, 0, &c);
    assert_memory_equal(a.order, b.order, sizeof a.order);
    assert_memory_not_equal(a.order, c.order, sizeof a.order);
}

static void test_small_memory_recursion(void **state)
{
    (void)state;
    static struct got a, b;
    run(7, 4096, &a); /* ~40 records per bucket at most: many splits */
    run(7, 4096, &b);
    assert_memory_equal(a.order, b.order, sizeof a.order);
    size_t fixed = 0;
    for (size_t i = 0; i < N; i++) fixed += a.order[i] == i;
    assert_true(fixed < 20); /* a uniform permutation has ~1 fixed point */
}

/* Records of mixed sizes through addv, with a budget that keeps some
 * buckets in memory and sends others (and records larger than a write
 * buffer) to files: each record comes back once and intact, the order
 * is the same every time, and add and addv give the same order. */
static void mixed(uint64_t seed, int gathered, uint32_t *order)
{
    enum { M = 600 };
    static unsigned char rec[20000];
    sk_shuffler *s;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_shuffler_new(&s, NULL, seed, 256 << 10, 1 << 20, &err), err);
    for (uint32_t i = 0; i < M; i++) {
        size_t len = 4 + (i * 7919u) % (i % 10 ? 900 : 19000);
        sk_put_le32(rec, i);
        memset(rec + 4, (int)(i & 0xff), len - 4);
        if (gathered) {
            struct iovec v[3] = {{rec, 4}, {rec + 4, 0}, {rec + 4, len - 4}};
            assert_sk_ok(sk_shuffler_addv(s, v, 3, &err), err);
        } else {
            assert_sk_ok(sk_shuffler_add(s, rec, len, &err), err);
        }
    }
    struct order g = {order, 0};
    assert_sk_ok(sk_shuffler_drain(s, check_mixed, &g, &err), err);
    sk_shuffler_free(s);
    assert_int_equal(g.n, M);
    char seen[M] = {0};
    for (size_t i = 0; i < M; i++) {
        assert_true(order[i] < M);
        assert_false(seen[order[i]]);
        seen[order[i]] = 1;
    }
}

static void test_mixed_sizes_partial_spill(void **state)
{
    (void)state;
    static uint32_t a[600], b[600], c[600];
    mixed(5, 1, a);
    mixed(5, 1, b);
    mixed(5, 0, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(a, c, sizeof a);
}

/* Records of sizes len(i), added as their bytes (mode 0), as 4-byte
 * references weighing len(i) (mode 1), or alternately (mode 2). */
static size_t wlen(uint32_t i) { return 4 + (i * 7919u) % (i % 10 ? 900 : 19000); }

static int collect_any(void *ctx, const unsigned char *rec, size_t len, sk_error *err)
{
    struct order *g = ctx;
    (void)err;
    uint32_t i = sk_get_le32(rec);
    assert_true(len == 4 || len == wlen(i));
    g->order[g->n++] = i;
    return SK_OK;
}

static void weighed(uint64_t seed, uint64_t mem, uint64_t hint, int mode, uint32_t *order)
{
    enum { M = 600 };
    static unsigned char rec[20000];
    sk_shuffler *s;
    sk_error err = SK_ERROR_INIT;
    assert_sk_ok(sk_shuffler_new(&s, NULL, seed, mem, hint, &err), err);
    for (uint32_t i = 0; i < M; i++) {
        size_t len = wlen(i);
        sk_put_le32(rec, i);
        struct iovec v = {rec, mode == 1 || (mode == 2 && i % 2) ? 4 : len};
        assert_sk_ok(sk_shuffler_addw(s, &v, 1, len, &err), err);
    }
    struct order g = {order, 0};
    assert_sk_ok(sk_shuffler_drain(s, collect_any, &g, &err), err);
    sk_shuffler_free(s);
    assert_int_equal(g.n, M);
}

static void test_weights_order_as_bytes(void **state)
{
    (void)state;
    /* (budget, size hint): all in memory; partly spilled; no hint and a
     * small budget, so buckets are split again (by weight: references
     * held in memory are split too) */
    static const uint64_t cfg[][2] = {{64 << 20, 1 << 20}, {256 << 10, 1 << 20}, {16 << 10, 0},
                                      {4 << 10, 0}};
    static uint32_t a[600], b[600], c[600];
    for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++)
        for (uint64_t seed = 1; seed <= 3; seed++) {
            weighed(seed, cfg[k][0], cfg[k][1], 0, a);
            weighed(seed, cfg[k][0], cfg[k][1], 1, b);
            weighed(seed, cfg[k][0], cfg[k][1], 2, c);
            assert_memory_equal(a, b, sizeof a);
            assert_memory_equal(a, c, sizeof a);
        }
    /* and add() is addw() of its own length */
    static uint32_t d[600];
    mixed(5, 0, d);
    weighed(5, 256 << 10, 1 << 20, 0, a);
    assert_memory_equal(a, d, sizeof a);
}

static void test_uniform_below(void **state)
{
    (void)state;
    uint64_t s = 3, hist[7] = {0};
    for (int i = 0; i < 70000; i++) hist[sk_uniform_below(&s, 7)]++;
    for (int i = 0; i < 7; i++) assert_true(hist[i] > 9500 && hist[i] < 10500);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_permutation_deterministic),
        cmocka_unit_test(test_small_memory_recursion),
        cmocka_unit_test(test_mixed_sizes_partial_spill),
        cmocka_unit_test(test_weights_order_as_bytes),
        cmocka_unit_test(test_uniform_below),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
