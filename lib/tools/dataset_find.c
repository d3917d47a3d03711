/*
 * dataset_find.c - the dataset API's lookups: a sample by key (a binary
 * search over the manifest's key ranges when they are sorted, else every
 * index in turn) or by global ordinal, and a sample's member records.
 */
#include "tools/dataset_int.h"

static int hit_at(sk_dataset *ds, size_t i, uint64_t local, sk_hit *out, sk_error *err)
{
    struct shard *s = &ds->s[i];
    SK_GUARD(sk_index_sample(s->ix, local, &out->sample, err));
    out->shard = i;
    out->shard_path = s->path;
    out->global_ordinal = s->first_ordinal + local;
    return SK_OK;
}

/* The manifest's key range for a shard is a claim about its index: it
 * must name the index's own first and last key, else the manifest is not
 * this dataset's (or lies) and no answer drawn from it is given. */
static int check_key_range(struct shard *s, sk_error *err)
{
    const char *f, *l;
    size_t fl, ll;
    if (LOAD(s->keys_checked)) return SK_OK; /* a pure check: racing threads agree */
    SK_GUARD(sk_index_key_bounds(s->ix, &f, &fl, &l, &ll, err));
    SK_FAIL_IF(sk_key_cmp(f, fl, s->keys.first, s->keys.first_len) ||
                   sk_key_cmp(l, ll, s->keys.last, s->keys.last_len),
               err, SK_E_MISMATCH,
               "%s: index disagrees with the manifest's key range (index: '%.*s' to '%.*s'; "
               "manifest: '%.*s' to '%.*s')",
               s->index_path, (int)(fl > 200 ? 200 : fl), f, (int)(ll > 200 ? 200 : ll), l,
               (int)(s->keys.first_len > 200 ? 200 : s->keys.first_len), s->keys.first,
               (int)(s->keys.last_len > 200 ? 200 : s->keys.last_len), s->keys.last);
    PUBLISH(s->keys_checked);
    return SK_OK;
}

static int not_found(const sk_dataset *ds, const char *key, size_t key_len, sk_error *err)
{
    return sk_error_set(err, SK_E_NOTFOUND, "no sample with key '%.*s' in %zu shard(s)",
                        (int)(key_len > 200 ? 200 : key_len), key, ds->n);
}

/* Sorted datasets: the one shard whose range can hold the key, by a binary
 * search over the ranges; its index alone is opened and searched. */
static int find_in_ranges(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out,
                          sk_error *err)
{
    size_t lo = 0, hi = ds->nranged; /* first range starting after key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const sk_key_range *r = &ds->s[ds->ranged[mid]].keys;
        if (sk_key_cmp(r->first, r->first_len, key, key_len) <= 0) lo = mid + 1;
        else hi = mid;
    }
    if (lo == 0) return not_found(ds, key, key_len, err);
    size_t i = ds->ranged[lo - 1];
    struct shard *s = &ds->s[i];
    if (sk_key_cmp(key, key_len, s->keys.last, s->keys.last_len) > 0)
        return not_found(ds, key, key_len, err);
    uint64_t ord;
    SK_GUARD(sk_dsa_ensure_index(ds, s, err));
    SK_GUARD(check_key_range(s, err));
    int rc = sk_index_find(s->ix, key, key_len, &ord, NULL);
    if (rc == SK_E_NOTFOUND) return not_found(ds, key, key_len, err);
    if (rc) return sk_index_find(s->ix, key, key_len, &ord, err);
    return hit_at(ds, i, ord, out, err);
}

int sk_dataset_find(sk_dataset *ds, const char *key, size_t key_len, sk_hit *out, sk_error *err)
{
    if (ds->ranged) return find_in_ranges(ds, key, key_len, out, err);
    for (size_t i = 0; i < ds->n; i++) {
        struct shard *s = &ds->s[i];
        uint64_t ord;
        SK_GUARD(sk_dsa_ensure_index(ds, s, err));
        int rc = sk_index_find(s->ix, key, key_len, &ord, NULL);
        if (rc == SK_E_NOTFOUND) continue;
        if (rc) return sk_index_find(s->ix, key, key_len, &ord, err);
        if (!LOAD(ds->counted)) {
            uint64_t n;
            SK_GUARD(sk_dataset_samples(ds, &n, err));
        }
        return hit_at(ds, i, ord, out, err);
    }
    return not_found(ds, key, key_len, err);
}

int sk_dataset_at(sk_dataset *ds, uint64_t ordinal, sk_hit *out, sk_error *err)
{
    uint64_t total;
    SK_GUARD(sk_dataset_samples(ds, &total, err));
    SK_FAIL_IF(ordinal >= total, err, SK_E_NOTFOUND, "no sample #%llu (the dataset holds %llu)",
               (unsigned long long)ordinal, (unsigned long long)total);
    size_t lo = 0, hi = ds->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (ds->s[mid].first_ordinal <= ordinal) lo = mid;
        else hi = mid;
    }
    while (lo + 1 < ds->n && ds->s[lo].samples == 0) lo++; /* empty shards share ordinals */
    SK_GUARD(sk_dsa_ensure_index(ds, &ds->s[lo], err));
    return hit_at(ds, lo, ordinal - ds->s[lo].first_ordinal, out, err);
}

int sk_dataset_member(sk_dataset *ds, const sk_hit *h, uint32_t i, sk_member_ref *out,
                      sk_error *err)
{
    SK_FAIL_IF(h->shard >= ds->n || i >= h->sample.member_count, err, SK_E_USAGE,
               "member %u of a sample with %u", i, h->sample.member_count);
    struct shard *s = &ds->s[h->shard];
    SK_GUARD(sk_dsa_ensure_index(ds, s, err));
    return sk_index_member(s->ix, (uint64_t)h->sample.first_member + i, out, err);
}
