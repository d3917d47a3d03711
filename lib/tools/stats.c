/*
 * stats.c - `shardkit stats`: what a dataset holds, in one streaming pass
 * over its indexes (and, when asked, over the first bytes of its JPEGs
 * and its .json members), read only through the public dataset API
 * (sk_dataset_*), so local, s3:// and any store the resolver takes give the
 * same numbers.  The result is one JSON document (schema: docs/stats.md);
 * the terminal table, the HTML page and `serve` render it.
 *
 * Memory is bounded whatever the dataset's size: per shard a few numbers;
 * per extension fixed histograms (member sizes in 1/16-octave buckets, so
 * a percentile is within 1/32 of the true value); image sizes in two
 * 65,536-entry tables (JPEG sides are 16-bit, so percentiles are exact)
 * and at most 4,096 distinct width x height pairs; at most 256 extensions
 * and 256 JSON keys.  Duplicate keys: pass one compares each key with the
 * one before it, which finds every duplicate of a dataset whose keys rise
 * (pack's default order) in O(1) memory; only when a key falls does a
 * second pass feed every key to the external sort verify uses
 * (tools/keysort.c: sorted runs spill to unlinked temp files past
 * key_mem), so a shuffled dataset is checked in bounded memory too.
 */
#include "core/internal.h"
#include "tools/keysort.h"
#include "tools/stats.h"

#include <math.h>
#include <stdlib.h>
#include <time.h>

#define MAX_EXTS 256
#define FINE 1024 /* member size buckets: 0..15 exact, then 16 per octave */
#define COARSE 65 /* display buckets: 0, then [2^(k-1), 2^k) */
#define MAX_PAIRS 4096
#define MAX_POINTS 1000
#define EXAMPLES 5
#define OFF_LIST 100
#define JSON_MAX (16u << 20)

struct ext {
    char *name;
    size_t len;
    uint64_t members, samples, bytes, min, max;
    uint64_t fine[FINE], coarse[COARSE];
    json_t *missing; /* example keys of samples without it */
};

struct pair {
    uint32_t w, h; /* w == 0: empty */
    uint64_t n;
};

struct st {
    sk_dataset *ds;
    sk_stats_options o;
    sk_error *err;
    struct ext *ext[MAX_EXTS];
    size_t next;
    uint64_t ext_overflow;
    uint64_t samples, members, data_bytes, bytes;
    /* keys */
    sk_buf prev;
    int have_prev, sorted;
    uint64_t dups;
    json_t *dup_examples;
    /* images */
    uint64_t *wh, *hh; /* width, height histograms, 65,536 each */
    uint64_t images, bad_images, image_bytes_read, image_bytes;
    struct pair *pairs;
    uint64_t pair_overflow;
    uint64_t aspect[12];
    uint32_t points[MAX_POINTS][2];
    size_t npoints;
    uint64_t rng;
    json_t *bad_examples;
    unsigned char *head;
    size_t head_cap;
    /* json keys (stats_jkeys.c) */
    sk_jkeys jk;
};

static const double aspect_le[11] = {0.25, 0.5, 0.67, 0.8, 0.95, 1.05, 1.25, 1.5, 2.0, 4.0, 1e300};

static int nomem(sk_error *err)
{
    return sk_error_set(err, SK_E_NOMEM, "stats: out of memory");
}

/* Steals v into obj[k]; a failure is out of memory. */
static int put(json_t *obj, const char *k, json_t *v)
{
    return !v || json_object_set_new(obj, k, v) ? SK_E_NOMEM : SK_OK;
}

static int fine_of(uint64_t v)
{
    if (v < 16) return (int)v;
    int k = 63 - __builtin_clzll(v); /* >= 4 */
    return 16 + (k - 4) * 16 + (int)((v >> (k - 4)) & 15);
}

/* The middle of a fine bucket. */
static uint64_t fine_mid(int i)
{
    if (i < 16) return (uint64_t)i;
    int k = (i - 16) / 16 + 4, sub = (i - 16) % 16;
    uint64_t lo = (uint64_t)(16 + sub) << (k - 4), width = (uint64_t)1 << (k - 4);
    return lo + width / 2;
}

static int coarse_of(uint64_t v)
{
    return v ? 64 - __builtin_clzll(v) : 0;
}

static struct ext *ext_get(struct st *s, const char *name, size_t len)
{
    for (size_t i = 0; i < s->next; i++)
        if (s->ext[i]->len == len && !memcmp(s->ext[i]->name, name, len)) return s->ext[i];
    if (s->next == MAX_EXTS) return NULL;
    struct ext *e = calloc(1, sizeof *e);
    if (!e || !(e->name = malloc(len + 1)) || !(e->missing = json_array())) {
        if (e) free(e->name);
        free(e);
        return (struct ext *)-1;
    }
    memcpy(e->name, name, len);
    e->name[len] = 0;
    e->len = len;
    e->min = UINT64_MAX;
    s->ext[s->next++] = e;
    return e;
}

static int key_json(json_t *arr, const char *k, size_t n)
{
    return json_array_append_new(arr, json_stringn_nocheck(k, n)) ? SK_E_NOMEM : SK_OK;
}

/* ------------------------------------------------------------------ images */

static int is_image(const struct st *s, const char *ext, size_t len)
{
    const char *p = s->o.image_ext ? s->o.image_ext : "jpg,jpeg";
    while (*p) {
        const char *q = strchr(p, ',');
        size_t n = q ? (size_t)(q - p) : strlen(p);
        if (n == len && !memcmp(p, ext, len)) return 1;
        if (!q) break;
        p = q + 1;
    }
    return 0;
}

static void add_pair(struct st *s, uint32_t w, uint32_t h)
{
    uint32_t x = (w * 2654435761u) ^ (h * 40503u);
    for (size_t i = 0; i < MAX_PAIRS; i++) {
        struct pair *p = &s->pairs[(x + i) & (MAX_PAIRS - 1)];
        if (p->w == w && p->h == h) { p->n++; return; }
        if (!p->w) {
            if (i > MAX_PAIRS / 2) break; /* keep probes short: count it as "other" */
            *p = (struct pair){w, h, 1};
            return;
        }
    }
    s->pair_overflow++;
}

static int image(struct st *s, const sk_hit *h, uint32_t i, const sk_member_ref *m)
{
    size_t want = 4096;
    s->image_bytes += m->size;
    for (;;) {
        if (want > m->size) want = (size_t)m->size;
        if (want > s->head_cap) {
            unsigned char *p = realloc(s->head, want);
            if (!p) return nomem(s->err);
            s->head = p, s->head_cap = want;
        }
        size_t got = 0;
        SK_GUARD(sk_dataset_read_head(s->ds, h, i, s->head, want, &got, s->err));
        s->image_bytes_read += got;
        unsigned w = 0, ht = 0;
        char why[200] = "";
        int r = sk_jpeg_dims(s->head, got, &w, &ht, why, sizeof why);
        if (r == 1 && got < m->size && want < ((size_t)1 << 30)) {
            want *= 8; /* the header is longer (EXIF, ICC): read more */
            continue;
        }
        s->images++;
        if (r) {
            s->bad_images++;
            if (json_array_size(s->bad_examples) < EXAMPLES) {
                json_t *b = json_object();
                if (!b || put(b, "key", json_stringn_nocheck(h->sample.key, h->sample.key_len)) ||
                    put(b, "why", json_string(r == 1 ? "the header is truncated" : why)) ||
                    json_array_append_new(s->bad_examples, b))
                    return nomem(s->err);
            }
            return SK_OK;
        }
        w &= 0xffff, ht &= 0xffff;
        s->wh[w]++, s->hh[ht]++;
        add_pair(s, w, ht);
        double a = (double)w / ht;
        int k = 0;
        while (a > aspect_le[k]) k++;
        s->aspect[k]++;
        /* a fixed-seed reservoir of points for the scatter plot */
        s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
        size_t slot = s->npoints < MAX_POINTS ? s->npoints++ : (size_t)((s->rng >> 33) % s->images);
        if (slot < MAX_POINTS) s->points[slot][0] = w, s->points[slot][1] = ht;
        return SK_OK;
    }
}

/* -------------------------------------------------------------- json keys */

static int json_member(struct st *s, const sk_hit *h, uint32_t i, const sk_member_ref *m)
{
    s->jk.members++;
    if (m->size > JSON_MAX) {
        s->jk.skipped++;
        return SK_OK;
    }
    char *buf = malloc(m->size ? (size_t)m->size : 1);
    if (!buf) return nomem(s->err);
    int rc = sk_dataset_read(s->ds, h, i, buf, (size_t)m->size, s->err);
    if (!rc && sk_jkeys_add(&s->jk, buf, (size_t)m->size)) rc = nomem(s->err);
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------- pass */

static int sample(struct st *s, const sk_hit *h, uint64_t *members, uint64_t *data)
{
    const sk_sample_ref *sr = &h->sample;
    /* keys: rising keys are checked against the one before only */
    if (s->have_prev) {
        size_t pl = s->prev.len;
        int d = memcmp(s->prev.p, sr->key, pl < sr->key_len ? pl : sr->key_len);
        if (!d) d = pl < sr->key_len ? -1 : pl > sr->key_len;
        if (d > 0) s->sorted = 0;
        if (!d) {
            s->dups++;
            if (json_array_size(s->dup_examples) < EXAMPLES &&
                key_json(s->dup_examples, sr->key, sr->key_len))
                return nomem(s->err);
        }
    }
    s->prev.len = 0;
    if (sk_buf_add(&s->prev, sr->key, sr->key_len)) return nomem(s->err);
    s->have_prev = 1;
    struct ext *seen[64];
    size_t nseen = 0;
    for (uint32_t i = 0; i < sr->member_count; i++) {
        sk_member_ref m;
        SK_GUARD(sk_dataset_member(s->ds, h, i, &m, s->err));
        (*members)++;
        *data += m.size;
        struct ext *e = ext_get(s, m.ext, m.ext_len);
        if (e == (struct ext *)-1) return nomem(s->err);
        if (!e) {
            s->ext_overflow++;
            continue;
        }
        e->members++;
        e->bytes += m.size;
        if (m.size < e->min) e->min = m.size;
        if (m.size > e->max) e->max = m.size;
        e->fine[fine_of(m.size)]++;
        e->coarse[coarse_of(m.size)]++;
        size_t j = 0;
        while (j < nseen && seen[j] != e) j++;
        if (j == nseen) {
            e->samples++;
            if (nseen < 64) seen[nseen++] = e;
        }
        if ((s->o.flags & SK_STATS_IMAGES) && is_image(s, m.ext, m.ext_len))
            SK_GUARD(image(s, h, i, &m));
        if ((s->o.flags & SK_STATS_JSON_KEYS) && m.ext_len == 4 && !memcmp(m.ext, "json", 4))
            SK_GUARD(json_member(s, h, i, &m));
    }
    return SK_OK;
}

/* Example keys of samples missing an extension others have: a second
 * pass, only when something is missing, that stops once every missing
 * extension has its examples. */
static int missing_examples(struct st *s, uint64_t total)
{
    size_t want = 0;
    for (size_t i = 0; i < s->next; i++)
        if (s->ext[i]->samples < s->samples) want++;
    for (uint64_t g = 0; want && g < total; g++) {
        sk_hit h;
        SK_GUARD(sk_dataset_at(s->ds, g, &h, s->err));
        uint64_t have[MAX_EXTS / 64] = {0};
        for (uint32_t i = 0; i < h.sample.member_count; i++) {
            sk_member_ref m;
            SK_GUARD(sk_dataset_member(s->ds, &h, i, &m, s->err));
            for (size_t j = 0; j < s->next; j++)
                if (s->ext[j]->len == m.ext_len && !memcmp(s->ext[j]->name, m.ext, m.ext_len))
                    have[j / 64] |= 1ull << (j % 64);
        }
        for (size_t j = 0; j < s->next; j++) {
            struct ext *e = s->ext[j];
            if (e->samples == s->samples || (have[j / 64] >> (j % 64) & 1) ||
                json_array_size(e->missing) >= EXAMPLES)
                continue;
            if (key_json(e->missing, h.sample.key, h.sample.key_len)) return nomem(s->err);
            if (json_array_size(e->missing) == EXAMPLES ||
                json_array_size(e->missing) == s->samples - e->samples)
                want--;
        }
    }
    return SK_OK;
}

static void dup_each(void *ctx, const sk_keyrec *prev, const sk_keyrec *cur)
{
    struct st *s = ctx;
    if (!prev || prev->len != cur->len || memcmp(prev->key, cur->key, cur->len)) return;
    s->dups++;
    if (json_array_size(s->dup_examples) < EXAMPLES) key_json(s->dup_examples, cur->key, cur->len);
}

/* Keys that do not rise: every key through the bounded external sort. */
static int dups_sorted(struct st *s, uint64_t total)
{
    sk_keysort *ks;
    SK_GUARD(sk_keysort_new(&ks, s->o.key_mem, s->err));
    int rc = SK_OK;
    for (uint64_t g = 0; !rc && g < total; g++) {
        sk_hit h;
        if ((rc = sk_dataset_at(s->ds, g, &h, s->err))) break;
        sk_keyrec r = {.key = h.sample.key, .len = (uint32_t)h.sample.key_len,
                       .shard = (uint32_t)h.shard, .offset = h.sample.offset, .exts = ""};
        rc = sk_keysort_add(ks, &r, s->err);
    }
    s->dups = 0;
    json_array_clear(s->dup_examples);
    if (!rc) rc = sk_keysort_each(ks, dup_each, s, s->err);
    sk_keysort_free(ks);
    return rc;
}

/* ---------------------------------------------------------------- results */

static uint64_t fine_pct(const struct ext *e, double q)
{
    uint64_t rank = (uint64_t)ceil(q * (double)e->members), acc = 0;
    if (rank < 1) rank = 1;
    for (int i = 0; i < FINE; i++) {
        acc += e->fine[i];
        if (acc >= rank) {
            uint64_t v = fine_mid(i);
            return v < e->min ? e->min : v > e->max ? e->max : v;
        }
    }
    return e->max;
}

static uint64_t hist_pct(const uint64_t *hist, uint64_t n, double q)
{
    uint64_t rank = (uint64_t)ceil(q * (double)n), acc = 0;
    if (rank < 1) rank = 1;
    for (unsigned i = 0; i < 65536; i++)
        if ((acc += hist[i]) >= rank) return i;
    return 0;
}

static json_t *u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static json_t *mmm(uint64_t *v, size_t n)
{
    if (!n) return json_pack("{s:i,s:i,s:i}", "min", 0, "median", 0, "max", 0);
    qsort(v, n, sizeof *v, cmp_u64);
    return json_pack("{s:I,s:I,s:I}", "min", (json_int_t)v[0], "median", (json_int_t)v[n / 2],
                     "max", (json_int_t)v[n - 1]);
}

static double off_pct(uint64_t v, uint64_t median)
{
    return median ? ((double)v - (double)median) * 100.0 / (double)median : 0;
}

static int shards_and_balance(struct st *s, json_t *doc, size_t n)
{
    json_t *arr = json_array(), *off = json_array(), *bal = json_object();
    uint64_t *sv = calloc(n ? n : 1, sizeof *sv), *bv = calloc(n ? n : 1, sizeof *bv);
    int rc = !arr || !off || !bal || !sv || !bv ? SK_E_NOMEM : SK_OK;
    for (size_t i = 0; !rc && i < n; i++) {
        sk_dataset_shard_info si;
        if ((rc = sk_dataset_shard(s->ds, i, &si, s->err))) goto out;
        sv[i] = si.samples, bv[i] = si.bytes;
        s->bytes += si.bytes;
        if (json_array_append_new(arr, json_pack("{s:s,s:I,s:I,s:I,s:I}", "url", si.path, "bytes",
                                                 (json_int_t)si.bytes, "samples",
                                                 (json_int_t)si.samples, "members",
                                                 (json_int_t)si.members, "first_ordinal",
                                                 (json_int_t)si.first_ordinal)))
            rc = SK_E_NOMEM;
    }
    if (rc) goto out;
    json_t *ms = mmm(sv, n), *mb = mmm(bv, n);
    uint64_t med_s = n ? sv[n / 2] : 0, med_b = n ? bv[n / 2] : 0;
    uint64_t noff = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        json_t *e = json_array_get(arr, i);
        uint64_t xs = (uint64_t)json_integer_value(json_object_get(e, "samples"));
        uint64_t xb = (uint64_t)json_integer_value(json_object_get(e, "bytes"));
        double ps = off_pct(xs, med_s), pb = off_pct(xb, med_b);
        if (fabs(ps) <= 10 && fabs(pb) <= 10) continue;
        if (noff++ >= OFF_LIST) continue;
        if (json_array_append_new(off, json_pack("{s:O,s:I,s:I,s:f,s:f,s:b}", "url",
                                                 json_object_get(e, "url"), "samples",
                                                 (json_int_t)xs, "bytes", (json_int_t)xb,
                                                 "samples_off_pct", round(ps * 10) / 10,
                                                 "bytes_off_pct", round(pb * 10) / 10, "last",
                                                 i + 1 == n)))
            rc = SK_E_NOMEM;
    }
    if (!rc && (put(bal, "tolerance_pct", json_integer(10)) || put(bal, "samples", ms) ||
                put(bal, "bytes", mb) || put(bal, "off_count", u64(noff)) ||
                put(bal, "off", off) || put(doc, "shards", arr) || put(doc, "balance", bal)))
        rc = SK_E_NOMEM;
    off = arr = bal = NULL;
out:
    json_decref(arr), json_decref(off), json_decref(bal);
    free(sv), free(bv);
    return rc == SK_E_NOMEM ? nomem(s->err) : rc;
}

static json_t *ext_json(const struct ext *e)
{
    json_t *o = json_pack("{s:I,s:I,s:I}", "samples", (json_int_t)e->samples, "members",
                          (json_int_t)e->members, "bytes", (json_int_t)e->bytes);
    json_t *size = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "min", (json_int_t)e->min, "p50",
                             (json_int_t)fine_pct(e, 0.5), "p90", (json_int_t)fine_pct(e, 0.9),
                             "p99", (json_int_t)fine_pct(e, 0.99), "max", (json_int_t)e->max,
                             "mean", (json_int_t)(e->members ? e->bytes / e->members : 0));
    json_t *hist = json_array();
    int lo = COARSE, hi = -1;
    for (int i = 0; i < COARSE; i++)
        if (e->coarse[i]) lo = i < lo ? i : lo, hi = i;
    for (int i = lo; hist && i <= hi; i++) {
        /* bucket i holds sizes below 2^i (and at least 2^(i-1)) */
        json_t *b = i == 64 ? json_pack("{s:n,s:I}", "lt", "count", (json_int_t)e->coarse[i])
                            : json_pack("{s:I,s:I}", "lt", (json_int_t)((uint64_t)1 << i), "count",
                                        (json_int_t)e->coarse[i]);
        if (json_array_append_new(hist, b)) break;
    }
    if (!o || put(o, "size", size) || put(o, "histogram", hist)) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int cmp_ext(const void *a, const void *b)
{
    const struct ext *x = *(struct ext *const *)a, *y = *(struct ext *const *)b;
    return sk_ext_cmp(x->name, x->len, y->name, y->len);
}

static int cmp_pair(const void *a, const void *b)
{
    const struct pair *x = a, *y = b;
    if (x->n != y->n) return x->n > y->n ? -1 : 1;
    return x->w != y->w ? (x->w < y->w ? -1 : 1) : (x->h < y->h ? -1 : x->h > y->h);
}

static json_t *images_json(struct st *s)
{
    uint64_t ok = s->images - s->bad_images;
    json_t *o = json_pack("{s:s,s:I,s:I,s:I,s:I}", "ext", s->o.image_ext ? s->o.image_ext : "jpg,jpeg",
                          "count", (json_int_t)s->images, "bad", (json_int_t)s->bad_images,
                          "bytes", (json_int_t)s->image_bytes, "bytes_read",
                          (json_int_t)s->image_bytes_read);
    if (!o) return NULL;
    json_t *w = ok ? json_pack("{s:I,s:I,s:I,s:I,s:I}", "min", (json_int_t)hist_pct(s->wh, ok, 0),
                               "p10", (json_int_t)hist_pct(s->wh, ok, 0.1), "p50",
                               (json_int_t)hist_pct(s->wh, ok, 0.5), "p90",
                               (json_int_t)hist_pct(s->wh, ok, 0.9), "max",
                               (json_int_t)hist_pct(s->wh, ok, 1))
                   : json_null();
    json_t *h = ok ? json_pack("{s:I,s:I,s:I,s:I,s:I}", "min", (json_int_t)hist_pct(s->hh, ok, 0),
                               "p10", (json_int_t)hist_pct(s->hh, ok, 0.1), "p50",
                               (json_int_t)hist_pct(s->hh, ok, 0.5), "p90",
                               (json_int_t)hist_pct(s->hh, ok, 0.9), "max",
                               (json_int_t)hist_pct(s->hh, ok, 1))
                   : json_null();
    qsort(s->pairs, MAX_PAIRS, sizeof *s->pairs, cmp_pair);
    json_t *sizes = json_array(), *asp = json_array(), *pts = json_array();
    for (size_t i = 0; sizes && i < MAX_PAIRS && s->pairs[i].w; i++)
        json_array_append_new(sizes, json_pack("{s:i,s:i,s:I}", "width", (int)s->pairs[i].w,
                                               "height", (int)s->pairs[i].h, "count",
                                               (json_int_t)s->pairs[i].n));
    for (int i = 0; asp && i < 11; i++)
        json_array_append_new(asp, i < 10 ? json_pack("{s:f,s:I}", "le", aspect_le[i], "count",
                                                      (json_int_t)s->aspect[i])
                                          : json_pack("{s:n,s:I}", "le", "count",
                                                      (json_int_t)s->aspect[i]));
    for (size_t i = 0; pts && i < s->npoints; i++)
        json_array_append_new(pts, json_pack("[i,i]", (int)s->points[i][0], (int)s->points[i][1]));
    if (put(o, "width", w) || put(o, "height", h) || put(o, "sizes", sizes) ||
        put(o, "sizes_other", u64(s->pair_overflow)) || put(o, "aspect", asp) ||
        put(o, "points", pts) || put(o, "bad_examples", json_incref(s->bad_examples))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int finish(struct st *s, json_t *doc)
{
    json_t *exts = json_object(), *missing = json_object();
    if (!exts || !missing) goto fail;
    qsort(s->ext, s->next, sizeof *s->ext, cmp_ext);
    for (size_t i = 0; i < s->next; i++) {
        struct ext *e = s->ext[i];
        if (put(exts, e->name, ext_json(e))) goto fail;
        if (e->samples < s->samples &&
            put(missing, e->name,
                json_pack("{s:I,s:O}", "samples", (json_int_t)(s->samples - e->samples),
                          "examples", e->missing)))
            goto fail;
    }
    json_t *keys = json_pack("{s:b,s:I,s:O,s:s}", "sorted", s->sorted, "duplicates",
                             (json_int_t)s->dups, "examples", s->dup_examples, "method",
                             s->sorted ? "adjacent" : "external-sort");
    json_t *tot = json_pack("{s:I,s:I,s:I,s:I,s:I}", "shards",
                            (json_int_t)sk_dataset_shard_count(s->ds), "samples",
                            (json_int_t)s->samples, "members", (json_int_t)s->members, "bytes",
                            (json_int_t)s->bytes, "data_bytes", (json_int_t)s->data_bytes);
    if (put(doc, "totals", tot) || put(doc, "extensions", exts) ||
        put(doc, "extensions_other", u64(s->ext_overflow)) || put(doc, "missing", missing) ||
        put(doc, "keys", keys))
        return nomem(s->err);
    if ((s->o.flags & SK_STATS_IMAGES) && put(doc, "images", images_json(s))) return nomem(s->err);
    if ((s->o.flags & SK_STATS_JSON_KEYS) && put(doc, "json_keys", sk_jkeys_json(&s->jk)))
        return nomem(s->err);
    return SK_OK;
fail:
    json_decref(exts), json_decref(missing);
    return nomem(s->err);
}

static void st_free(struct st *s)
{
    for (size_t i = 0; i < s->next; i++) {
        json_decref(s->ext[i]->missing);
        free(s->ext[i]->name);
        free(s->ext[i]);
    }
    sk_jkeys_free(&s->jk);
    free(s->wh), free(s->hh), free(s->pairs), free(s->head);
    sk_buf_free(&s->prev);
    json_decref(s->dup_examples), json_decref(s->bad_examples);
}

void sk_stats_options_init_sized(sk_stats_options *o, size_t size)
{
    static const sk_stats_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_stats_run(sk_dataset *ds, const char *name, const sk_stats_options *opts, sk_stats **out,
                 sk_error *err)
{
    struct st s;
    memset(&s, 0, sizeof s);
    *out = NULL;
    SK_GUARD(sk_options_take(&s.o, sizeof s.o, opts, NULL, "sk_stats_options", err));
    s.ds = ds, s.err = err, s.sorted = 1, s.rng = 0x5eed;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    json_t *doc = json_pack("{s:s,s:i,s:s}", "format", "shardkit-stats", "version", 1, "dataset",
                            name ? name : "");
    s.dup_examples = json_array(), s.bad_examples = json_array();
    int rc = !doc || !s.dup_examples || !s.bad_examples ? nomem(err) : SK_OK;
    if (!rc && (s.o.flags & SK_STATS_IMAGES) &&
        (!(s.wh = calloc(65536, sizeof *s.wh)) || !(s.hh = calloc(65536, sizeof *s.hh)) ||
         !(s.pairs = calloc(MAX_PAIRS, sizeof *s.pairs))))
        rc = nomem(err);
    if (!rc && (s.o.flags & SK_STATS_JSON_KEYS) && sk_jkeys_init(&s.jk))
        rc = nomem(err);
    uint64_t total = 0;
    size_t n = sk_dataset_shard_count(ds);
    if (!rc) rc = sk_dataset_samples(ds, &total, err);
    if (!rc) rc = shards_and_balance(&s, doc, n);
    for (uint64_t g = 0; !rc && g < total; g++) {
        sk_hit h;
        if (!(rc = sk_dataset_at(ds, g, &h, err))) rc = sample(&s, &h, &s.members, &s.data_bytes);
        s.samples++;
    }
    if (!rc && !s.sorted) rc = dups_sorted(&s, total);
    if (!rc) rc = missing_examples(&s, total);
    if (!rc) rc = finish(&s, doc);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!rc && put(doc, "seconds", json_real((double)(t1.tv_sec - t0.tv_sec) +
                                             (double)(t1.tv_nsec - t0.tv_nsec) / 1e9)))
        rc = nomem(err);
    st_free(&s);
    if (!rc && !(*out = malloc(sizeof **out))) rc = nomem(err);
    if (rc) {
        json_decref(doc);
        return rc;
    }
    (*out)->doc = doc;
    return SK_OK;
}

char *sk_stats_json(const sk_stats *st)
{
    return json_dumps(st->doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

void sk_stats_free(sk_stats *st)
{
    if (!st) return;
    json_decref(st->doc);
    free(st);
}
