/* test_keysort.c - verify's key records sorted in bounded memory: the same
 * sequence whether everything fits the budget or goes through many spilled
 * runs, in (key, shard, offset) order, with each record's neighbour. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/keysort.h"

struct seen {
    char *text; /* one line per record: "prev|key shard offset exts" */
    size_t len, cap;
    size_t n;
};

static void collect(void *ctx, const sk_keyrec *prev, const sk_keyrec *cur)
{
    struct seen *s = ctx;
    char line[1024];
    int n = snprintf(line, sizeof line, "%.*s|%.*s %u %llu %s\n", prev ? (int)prev->len : 1,
                     prev ? prev->key : "-", (int)cur->len, cur->key, cur->shard,
                     (unsigned long long)cur->offset, cur->exts);
    if (s->len + (size_t)n + 1 > s->cap) {
        s->cap = (s->len + (size_t)n + 1) * 2;
        s->text = realloc(s->text, s->cap);
        assert_non_null(s->text);
    }
    memcpy(s->text + s->len, line, (size_t)n + 1);
    s->len += (size_t)n;
    s->n++;
}

/* n records with keys from a small alphabet (so many repeat), shards and
 * offsets out of order, sorted with the given budget. */
static struct seen run(size_t n, uint64_t budget, size_t *spills)
{
    sk_error err = SK_ERROR_INIT;
    sk_keysort *ks;
    assert_int_equal(sk_keysort_new(&ks, budget, &err), SK_OK);
    unsigned seed = 7;
    for (size_t i = 0; i < n; i++) {
        char key[64], exts[32];
        seed = seed * 1103515245u + 12345u;
        int kl = snprintf(key, sizeof key, "k%u/%u", (seed >> 8) % 50, (seed >> 16) % 7);
        snprintf(exts, sizeof exts, ",%s,", (seed >> 4) & 1 ? "jpg" : "cls");
        sk_keyrec r = {key, (uint32_t)kl, (uint32_t)((seed >> 20) % 5), (uint64_t)(n - i) * 512,
                       exts};
        assert_int_equal(sk_keysort_add(ks, &r, &err), SK_OK);
    }
    struct seen s = {0};
    assert_int_equal(sk_keysort_each(ks, collect, &s, &err), SK_OK);
    *spills = sk_keysort_spills(ks);
    sk_keysort_free(ks);
    return s;
}

static void test_spilled_equals_in_memory(void **state)
{
    (void)state;
    size_t sp_mem, sp_disk;
    struct seen a = run(5000, 0, &sp_mem), b = run(5000, 4096, &sp_disk);
    assert_int_equal(sp_mem, 0);
    assert_true(sp_disk > 20); /* many runs, merged through the heap */
    assert_int_equal(a.n, 5000);
    assert_int_equal(b.n, 5000);
    assert_string_equal(a.text, b.text);
    free(a.text);
    free(b.text);
}

static void test_order_and_neighbours(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    sk_keysort *ks;
    assert_int_equal(sk_keysort_new(&ks, 64, &err), SK_OK); /* a run per record or two */
    sk_keyrec r[] = {
        {"b", 1, 1, 100, ",x,"}, {"a", 1, 2, 5, ",x,"}, {"ab", 2, 0, 9, ",y,"},
        {"a", 1, 0, 50, ",z,"},  {"a", 1, 0, 7, ",x,"},
    };
    for (size_t i = 0; i < sizeof r / sizeof *r; i++)
        assert_int_equal(sk_keysort_add(ks, &r[i], &err), SK_OK);
    struct seen s = {0};
    assert_int_equal(sk_keysort_each(ks, collect, &s, &err), SK_OK);
    assert_true(sk_keysort_spills(ks) > 1);
    assert_string_equal(s.text, "-|a 0 7 ,x,\n"
                                "a|a 0 50 ,z,\n"
                                "a|a 2 5 ,x,\n"
                                "a|ab 0 9 ,y,\n"
                                "ab|b 1 100 ,x,\n");
    free(s.text);
    sk_keysort_free(ks);
}

static void test_empty_and_refused(void **state)
{
    (void)state;
    sk_error err = SK_ERROR_INIT;
    sk_keysort *ks;
    assert_int_equal(sk_keysort_new(&ks, 0, &err), SK_OK);
    struct seen s = {0};
    assert_int_equal(sk_keysort_each(ks, collect, &s, &err), SK_OK);
    assert_int_equal(s.n, 0);
    sk_keyrec huge = {"k", 1u << 21, 0, 0, ","}; /* a length no tar name has */
    assert_int_not_equal(sk_keysort_add(ks, &huge, &err), SK_OK);
    sk_keysort_free(ks);
    sk_keysort_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spilled_equals_in_memory),
        cmocka_unit_test(test_order_and_neighbours),
        cmocka_unit_test(test_empty_and_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
