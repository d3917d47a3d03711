/*
 * mix.c - how many samples each stream gives an epoch, and which (mix.h).
 * The subset of a stream is drawn by selection sampling (Knuth's
 * Algorithm S): one pass over the stream's ordinals, O(1) memory beyond
 * the picks themselves, and they come out sorted, so each shard's picks
 * are one run of the list.
 */
#include "reader/mix.h"
#include "core/rng.h"

#include <math.h>
#include <stdlib.h>

#define TAG_MIX 0x4d49580000000000ull /* "MIX" + stream number */

static uint64_t stream_size(const sk_mix *m, size_t d)
{
    uint64_t n = 0;
    for (size_t s = m->first[d]; s < m->first[d + 1]; s++) n += m->counts[s];
    return n;
}

/* Rounds want[] (summing to total, fractional) to integers summing to
 * total: floors, then one more for the largest remainders (ties: the
 * first stream). */
static void apportion(const double *want, size_t n, uint64_t total, uint64_t *out)
{
    uint64_t sum = 0;
    for (size_t d = 0; d < n; d++) {
        out[d] = (uint64_t)floor(want[d]);
        sum += out[d];
    }
    while (sum < total) {
        size_t best = 0;
        double bf = -1;
        for (size_t d = 0; d < n; d++) {
            double f = want[d] - (double)out[d];
            if (f > bf) bf = f, best = d;
        }
        out[best]++;
        sum++;
    }
}

int sk_mix_init(sk_mix *m, sk_error *err)
{
    size_t n = m->nstreams;
    int relative = 0, absolute = 0;
    for (size_t d = 0; d < n; d++) {
        double p = m->proportion ? m->proportion[d] : 0, r = m->repeat ? m->repeat[d] : 0;
        uint64_t c = m->choose ? m->choose[d] : 0;
        SK_FAIL_IF(p < 0 || r < 0 || p != p || r != r, err, SK_E_USAGE,
                   "stream %zu: a negative proportion or repeat", d);
        SK_FAIL_IF((p > 0) + (r > 0) + (c > 0) > 1, err, SK_E_USAGE,
                   "stream %zu: give one of proportion, repeat and choose", d);
        relative |= p > 0;
        absolute |= r > 0 || c > 0;
    }
    SK_FAIL_IF(relative && absolute, err, SK_E_USAGE,
               "streams mix proportions (relative) with repeat or choose (absolute): use one kind");
    m->take = calloc(n ? n : 1, sizeof *m->take);
    double *want = calloc(n ? n : 1, sizeof *want);
    if (!m->take || !want) {
        free(want);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    uint64_t all = 0, sum = 0;
    double psum = 0;
    for (size_t d = 0; d < n; d++) {
        uint64_t size = stream_size(m, d);
        all += size;
        if (relative) {
            double p = m->proportion[d];
            if (p <= 0) {
                free(want);
                return sk_error_set(err, SK_E_USAGE, "stream %zu has no proportion, where "
                                    "others have: give every stream one", d);
            }
            psum += p;
        } else {
            double r = m->repeat ? m->repeat[d] : 0;
            uint64_t c = m->choose ? m->choose[d] : 0;
            want[d] = c ? (double)c : r > 0 ? r * (double)size : (double)size;
            sum += (uint64_t)llround(want[d]);
        }
        if (size == 0 && (relative || (m->choose && m->choose[d]))) {
            free(want);
            return sk_error_set(err, SK_E_USAGE, "stream %zu has no samples to choose from", d);
        }
    }
    uint64_t total = m->samples_per_epoch;
    if (relative) {
        if (!total) total = all;
        for (size_t d = 0; d < n; d++) want[d] = (double)total * m->proportion[d] / psum;
    } else if (total && sum) {
        for (size_t d = 0; d < n; d++) want[d] = want[d] * (double)total / (double)sum;
    } else {
        /* the streams' own numbers, each rounded to the nearest */
        total = 0;
        for (size_t d = 0; d < n; d++) total += (uint64_t)llround(want[d]);
        for (size_t d = 0; d < n; d++) want[d] = (double)llround(want[d]);
    }
    apportion(want, n, total, m->take);
    free(want);
    m->total = total;
    return SK_OK;
}

static int add_unit(sk_mix *m, size_t shard, uint64_t count, size_t pick, sk_error *err)
{
    if (!count) return SK_OK;
    SK_GUARD(sk_grow((void **)&m->units, &m->cap_units, m->nunits + 1, sizeof *m->units, err));
    m->units[m->nunits++] = (sk_mix_unit){.shard = shard, .count = count, .pick = pick};
    return SK_OK;
}

int sk_mix_epoch(sk_mix *m, uint64_t epoch, sk_error *err)
{
    m->nunits = m->npicks = 0;
    for (size_t d = 0; d < m->nstreams; d++) {
        uint64_t n = stream_size(m, d), k = m->take[d];
        if (!n) continue;
        for (uint64_t c = 0; c < k / n; c++)
            for (size_t s = m->first[d]; s < m->first[d + 1]; s++)
                SK_GUARD(add_unit(m, s, m->counts[s], SIZE_MAX, err));
        uint64_t want = k % n;
        if (!want) continue;
        SK_FAIL_IF(want > SIZE_MAX / sizeof *m->picks, err, SK_E_NOMEM, "too many picks");
        SK_GUARD(sk_grow((void **)&m->picks, &m->cap_picks, m->npicks + (size_t)want,
                         sizeof *m->picks, err));
        uint64_t rng = sk_rng_derive(m->seed, epoch, TAG_MIX | d), left = n, need = want;
        size_t s = m->first[d];
        uint64_t in_shard = 0, start = m->npicks;
        for (uint64_t i = 0; i < n && need; i++, left--) {
            while (in_shard >= m->counts[s]) { /* the shard holding stream ordinal i */
                SK_GUARD(add_unit(m, s, m->npicks - start, (size_t)start, err));
                start = m->npicks;
                s++;
                in_shard = 0;
            }
            if (sk_uniform_below(&rng, left) < need) {
                m->picks[m->npicks++] = in_shard;
                need--;
            }
            in_shard++;
        }
        SK_GUARD(add_unit(m, s, m->npicks - start, (size_t)start, err));
    }
    return SK_OK;
}

void sk_mix_free(sk_mix *m)
{
    free(m->take);
    free(m->units);
    free(m->picks);
    m->take = NULL, m->units = NULL, m->picks = NULL;
    m->nunits = m->npicks = m->cap_units = m->cap_picks = 0;
}
