/* test_order.c - the global order's arithmetic (lib/reader/order.c,
 * mix.c), without I/O: the split of m positions among R ranks x W
 * workers with batch B is a bijection with counts within one; a rank
 * consuming whole batches in the DataLoader's order consumes a prefix
 * (sk_split_consumed); the epoch's sequence is a permutation that depends
 * on (seed, epoch) and stays inside its windows; mixing apportions
 * exactly and draws a new subset each epoch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "reader/order.h"
#include "reader/mix.h"

static void split_is_a_bijection(void **state)
{
    (void)state;
    static const uint64_t ms[] = {0, 1, 5, 31, 100, 1000, 1023, 1024, 1025};
    for (size_t a = 0; a < sizeof ms / sizeof *ms; a++)
        for (uint32_t R = 1; R <= 8; R++)
            for (uint32_t W = 1; W <= 4; W++)
                for (uint32_t B = 1; B <= 5; B += 2) {
                    sk_split s = {.m = ms[a], .ranks = R, .workers = W, .batch = B};
                    unsigned char *hit = calloc(ms[a] + 1, 1);
                    uint64_t lo = UINT64_MAX, hi = 0, sum = 0;
                    for (uint32_t r = 0; r < R; r++)
                        for (uint32_t w = 0; w < W; w++) {
                            uint64_t n = sk_split_count(&s, r, w);
                            lo = n < lo ? n : lo, hi = n > hi ? n : hi, sum += n;
                            for (uint64_t k = 0; k < n; k++) {
                                uint64_t p = sk_split_position(&s, r, w, k);
                                assert_true(p < ms[a]);
                                assert_false(hit[p]);
                                hit[p] = 1;
                            }
                        }
                    assert_int_equal(sum, ms[a]);
                    assert_true(hi - lo <= 1);
                    free(hit);
                }
}

/* A rank's DataLoader: batch t from worker t mod W (an exhausted worker's
 * turn skipped); after each whole batch on every rank, the positions
 * consumed are exactly 0 .. consumed-1. */
static void whole_batches_consume_a_prefix(void **state)
{
    (void)state;
    for (uint64_t m = 1; m <= 200; m += 13)
        for (uint32_t R = 1; R <= 4; R++)
            for (uint32_t W = 1; W <= 3; W++)
                for (uint32_t B = 1; B <= 4; B++) {
                    sk_split s = {.m = m, .ranks = R, .workers = W, .batch = B};
                    uint64_t taken[4][3] = {{0}}, rank_n[4] = {0};
                    unsigned char *hit = calloc(m, 1);
                    for (uint64_t step = 0;; step++) {
                        int any = 0;
                        for (uint32_t r = 0; r < R; r++) {
                            /* the next worker with samples left, from step mod W */
                            for (uint32_t tries = 0; tries < W; tries++) {
                                uint32_t w = (uint32_t)((step + tries) % W);
                                uint64_t n = sk_split_count(&s, r, w);
                                if (taken[r][w] >= n) continue;
                                for (uint32_t b = 0; b < B && taken[r][w] < n; b++) {
                                    uint64_t k = taken[r][w]++;
                                    hit[sk_split_position(&s, r, w, k)] = 1;
                                    rank_n[r]++;
                                    assert_int_equal(sk_split_rank_index(&s, r, w, k) + 1,
                                                     rank_n[r]);
                                }
                                any = 1;
                                break;
                            }
                        }
                        if (!any) break;
                        uint64_t c = sk_split_consumed(&s, 0, rank_n[0]);
                        for (uint64_t p = 0; p < c; p++) assert_true(hit[p]);
                        for (uint32_t r = 1; r < R; r++)
                            assert_true(sk_split_consumed(&s, r, rank_n[r]) <= m);
                    }
                    for (uint64_t p = 0; p < m; p++) assert_true(hit[p]);
                    free(hit);
                }
}

static void sequence_is_a_windowed_permutation(void **state)
{
    (void)state;
    uint64_t counts[10] = {7, 0, 13, 5, 21, 1, 9, 9, 3, 17};
    sk_order o = {.nshards = 10, .counts = counts, .seed = 42, .window = 3, .shuffle = 1};
    assert_int_equal(sk_order_plan(&o, 5, NULL), 0);
    assert_int_equal(o.total, 85);
    unsigned char seen[10][32] = {{0}};
    size_t first_win[10];
    uint64_t seq0[85];
    for (uint64_t g = 0; g < o.total; g++) {
        size_t sh;
        uint64_t k;
        assert_int_equal(sk_order_at(&o, g, &sh, &k, NULL), 0);
        assert_true(sh < 10 && k < counts[sh]);
        assert_false(seen[sh][k]);
        seen[sh][k] = 1;
        seq0[g] = sh * 100 + k;
        /* every sample of a shard falls inside its window's positions */
        size_t pos_in_perm = 0;
        while (o.perm[pos_in_perm] != sh) pos_in_perm++;
        size_t b = pos_in_perm / 3;
        assert_true(g >= o.win_start[b] && g < o.win_start[b + 1]);
        first_win[sh] = b;
    }
    (void)first_win;
    /* the same (seed, epoch) again, reading backwards: the same sequence */
    sk_order o2 = {.nshards = 10, .counts = counts, .seed = 42, .window = 3, .shuffle = 1};
    assert_int_equal(sk_order_plan(&o2, 5, NULL), 0);
    for (uint64_t g = o2.total; g-- > 0;) {
        size_t sh;
        uint64_t k;
        assert_int_equal(sk_order_at(&o2, g, &sh, &k, NULL), 0);
        assert_int_equal(sh * 100 + k, seq0[g]);
    }
    /* another epoch: another sequence */
    assert_int_equal(sk_order_plan(&o2, 6, NULL), 0);
    int same = 1;
    for (uint64_t g = 0; g < o2.total; g++) {
        size_t sh;
        uint64_t k;
        assert_int_equal(sk_order_at(&o2, g, &sh, &k, NULL), 0);
        same &= sh * 100 + k == seq0[g];
    }
    assert_false(same);
    sk_order_free(&o);
    sk_order_free(&o2);
}

static void mixing_apportions_exactly(void **state)
{
    (void)state;
    uint64_t counts[5] = {10, 10, 5, 3, 4}; /* stream 0: shards 0-1, 1: 2-4 */
    size_t first[3] = {0, 2, 5};
    double prop[2] = {1, 2};
    sk_mix m = {.nstreams = 2, .first = first, .counts = counts, .proportion = prop,
                .samples_per_epoch = 1001, .seed = 9};
    assert_int_equal(sk_mix_init(&m, NULL), 0);
    assert_int_equal(m.take[0] + m.take[1], 1001);
    assert_int_equal(m.take[0], 334); /* 333.67 rounds up: the larger remainder */
    assert_int_equal(m.take[1], 667);
    uint64_t sums[2][2] = {{0}};
    uint64_t first_pick = UINT64_MAX;
    for (uint64_t epoch = 0; epoch < 2; epoch++) {
        assert_int_equal(sk_mix_epoch(&m, epoch, NULL), 0);
        for (size_t u = 0; u < m.nunits; u++) {
            const sk_mix_unit *un = &m.units[u];
            sums[epoch][un->shard < 2 ? 0 : 1] += un->count;
            assert_true(un->count <= counts[un->shard]);
            for (uint64_t i = 0; un->pick != SIZE_MAX && i < un->count; i++) {
                assert_true(m.picks[un->pick + i] < counts[un->shard]);
                if (i) assert_true(m.picks[un->pick + i] > m.picks[un->pick + i - 1]);
            }
        }
        assert_int_equal(sums[epoch][0], 334);
        assert_int_equal(sums[epoch][1], 667);
        /* stream 0 takes 16 copies and 14 of 20 more: the subset changes */
        uint64_t h = 0;
        for (size_t i = 0; i < m.npicks; i++) h = h * 31 + m.picks[i];
        if (epoch == 0) first_pick = h;
        else assert_true(h != first_pick);
    }
    sk_mix_free(&m);
    /* relative with absolute: refused */
    double rep[2] = {0, 2};
    sk_mix bad = {.nstreams = 2, .first = first, .counts = counts, .proportion = prop,
                  .repeat = rep};
    prop[1] = 0;
    assert_int_equal(sk_mix_init(&bad, NULL), SK_E_USAGE);
    sk_mix_free(&bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(split_is_a_bijection),
        cmocka_unit_test(whole_batches_consume_a_prefix),
        cmocka_unit_test(sequence_is_a_windowed_permutation),
        cmocka_unit_test(mixing_apportions_exactly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
