/*
 * index.c - the index sidecar: one binary file beside each shard that finds
 * a sample by ordinal in O(1) and by key in O(log n), read through mmap
 * without parsing.  The byte layout is specified in docs/format.md; the
 * builder collects one shard's records in memory (bounded by the shard),
 * and the reader validates the header and bounds-checks every record it
 * hands out, so a corrupt index gives an error, never a wild read.
 */
#include "format/format.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define IDX_MAGIC "SKIDX\0\r\n"
#define IDX_VERSION 1
#define IDX_HEADER 96
#define IDX_SAMPLE 48
#define IDX_MEMBER 32

static uint64_t pad8(uint64_t n) { return (n + 7) & ~(uint64_t)7; }

/* ---------------------------------------------------------------- builder */

struct sk_index_builder {
    unsigned char *samples, *members, *strings;
    size_t nsamples, nmembers, nstrings;
    size_t cap_samples, cap_members, cap_strings;
};

/* What the last builder freed had grown to, in any thread.  The shards of
 * one run are usually alike, so a new builder starts at those capacities
 * instead of doubling its way there (every doubling copies the records so
 * far: a few percent of `shardkit index --fast`).  Only a hint: relaxed
 * atomics, and a builder that cannot get the memory starts empty. */
static _Atomic size_t hint_samples, hint_members, hint_strings;

static void reserve(unsigned char **buf, size_t *cap, size_t n)
{
    if (n && (*buf = malloc(n))) *cap = n;
}

sk_index_builder *sk_index_builder_new(void)
{
    sk_index_builder *b = calloc(1, sizeof(sk_index_builder));
    if (!b) return NULL;
    reserve(&b->samples, &b->cap_samples, atomic_load_explicit(&hint_samples, memory_order_relaxed));
    reserve(&b->members, &b->cap_members, atomic_load_explicit(&hint_members, memory_order_relaxed));
    reserve(&b->strings, &b->cap_strings, atomic_load_explicit(&hint_strings, memory_order_relaxed));
    return b;
}

void sk_index_builder_free(sk_index_builder *b)
{
    if (!b) return;
    atomic_store_explicit(&hint_samples, b->cap_samples, memory_order_relaxed);
    atomic_store_explicit(&hint_members, b->cap_members, memory_order_relaxed);
    atomic_store_explicit(&hint_strings, b->cap_strings, memory_order_relaxed);
    free(b->samples);
    free(b->members);
    free(b->strings);
    free(b);
}

void sk_index_builder_reset(sk_index_builder *b)
{
    b->nsamples = b->nmembers = b->nstrings = 0;
}

uint64_t sk_index_builder_samples(const sk_index_builder *b)
{
    return b->nsamples;
}

static int add_string(sk_index_builder *b, const char *s, size_t n, uint32_t *off, sk_error *err)
{
    SK_FAIL_IF(b->nstrings + n + 1 > UINT32_MAX, err, SK_E_INPUT, "index string pool over 4 GiB");
    SK_GUARD(sk_grow((void **)&b->strings, &b->cap_strings, b->nstrings + n + 1, 1, err));
    *off = (uint32_t)b->nstrings;
    memcpy(b->strings + b->nstrings, s, n);
    b->strings[b->nstrings + n] = 0; /* so C users can treat keys as strings */
    b->nstrings += n + 1;
    return SK_OK;
}

int sk_index_add_sample(sk_index_builder *b, const char *key, size_t key_len,
                        uint64_t offset, uint64_t span,
                        uint64_t stored_offset, uint64_t stored_span, sk_error *err)
{
    uint32_t koff;
    SK_FAIL_IF(b->nsamples >= UINT32_MAX, err, SK_E_INPUT, "more than 2^32 samples in one shard");
    SK_GUARD(sk_grow((void **)&b->samples, &b->cap_samples, (b->nsamples + 1) * IDX_SAMPLE, 1, err));
    SK_GUARD(add_string(b, key, key_len, &koff, err));
    unsigned char *r = b->samples + b->nsamples * IDX_SAMPLE;
    sk_put_le64(r, offset);
    sk_put_le64(r + 8, span);
    sk_put_le64(r + 16, stored_offset);
    sk_put_le64(r + 24, stored_span);
    sk_put_le32(r + 32, koff);
    sk_put_le32(r + 36, (uint32_t)key_len);
    sk_put_le32(r + 40, (uint32_t)b->nmembers);
    sk_put_le32(r + 44, 0);
    b->nsamples++;
    return SK_OK;
}

int sk_index_add_member(sk_index_builder *b, const char *ext, size_t ext_len,
                        uint64_t data_offset, uint64_t size, uint32_t header_len,
                        uint32_t crc32c, sk_error *err)
{
    uint32_t eoff;
    SK_FAIL_IF(!b->nsamples, err, SK_E_INPUT, "index member before any sample");
    SK_GUARD(sk_grow((void **)&b->members, &b->cap_members, (b->nmembers + 1) * IDX_MEMBER, 1, err));
    SK_GUARD(add_string(b, ext, ext_len, &eoff, err));
    unsigned char *r = b->members + b->nmembers * IDX_MEMBER;
    sk_put_le64(r, data_offset);
    sk_put_le64(r + 8, size);
    sk_put_le32(r + 16, crc32c);
    sk_put_le32(r + 20, eoff);
    sk_put_le32(r + 24, (uint32_t)ext_len);
    sk_put_le32(r + 28, header_len);
    b->nmembers++;
    unsigned char *s = b->samples + (b->nsamples - 1) * IDX_SAMPLE;
    sk_put_le32(s + 44, sk_get_le32(s + 44) + 1);
    return SK_OK;
}

int sk_index_add_sample_members(sk_index_builder *b, const char *key, size_t key_len,
                                uint64_t offset, uint64_t span, uint64_t stored_offset,
                                uint64_t stored_span, const sk_index_member_in *m, size_t n,
                                sk_error *err)
{
    size_t strings = key_len + 1; /* at most: a lowercase extension may be longer */
    for (size_t i = 0; i < n; i++) strings += SK_EXT_LOWER_MAX(m[i].ext_len) + 1;
    SK_FAIL_IF(b->nsamples >= UINT32_MAX, err, SK_E_INPUT, "more than 2^32 samples in one shard");
    SK_FAIL_IF(b->nstrings + strings > UINT32_MAX, err, SK_E_INPUT, "index string pool over 4 GiB");
    SK_GUARD(sk_grow((void **)&b->samples, &b->cap_samples, (b->nsamples + 1) * IDX_SAMPLE, 1, err));
    SK_GUARD(sk_grow((void **)&b->members, &b->cap_members, (b->nmembers + n) * IDX_MEMBER, 1, err));
    SK_GUARD(sk_grow((void **)&b->strings, &b->cap_strings, b->nstrings + strings, 1, err));
    unsigned char *r = b->samples + b->nsamples * IDX_SAMPLE;
    sk_put_le64(r, offset);
    sk_put_le64(r + 8, span);
    sk_put_le64(r + 16, stored_offset);
    sk_put_le64(r + 24, stored_span);
    sk_put_le32(r + 32, (uint32_t)b->nstrings);
    sk_put_le32(r + 36, (uint32_t)key_len);
    sk_put_le32(r + 40, (uint32_t)b->nmembers);
    sk_put_le32(r + 44, (uint32_t)n);
    b->nsamples++;
    unsigned char *str = b->strings + b->nstrings;
    memcpy(str, key, key_len);
    str[key_len] = 0;
    str += key_len + 1;
    r = b->members + b->nmembers * IDX_MEMBER;
    for (size_t i = 0; i < n; i++, r += IDX_MEMBER) {
        /* fields into locals first: stores through unsigned char * may
         * alias m[i], and would each reload it, one byte at a time */
        const sk_index_member_in mi = m[i];
        sk_put_le64(r, mi.data_offset);
        sk_put_le64(r + 8, mi.size);
        sk_put_le32(r + 16, mi.crc32c);
        sk_put_le32(r + 20, (uint32_t)(str - b->strings));
        sk_put_le32(r + 28, mi.header_len);
        unsigned high = 0;
        for (size_t k = 0; k < mi.ext_len; k++) {
            unsigned char c = (unsigned char)mi.ext[k];
            high |= c;
            str[k] = c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
        }
        size_t el = mi.ext_len;
        if (high & 0x80) el = sk_ext_lower(mi.ext, mi.ext_len, (char *)str); /* as Python's lower() */
        sk_put_le32(r + 24, (uint32_t)el);
        str[el] = 0;
        str += el + 1;
    }
    b->nmembers += n;
    b->nstrings = (size_t)(str - b->strings);
    return SK_OK;
}

uint64_t sk_index_builder_members(const sk_index_builder *b)
{
    return b->nmembers;
}

void sk_index_builder_set_crc(sk_index_builder *b, uint64_t member, uint32_t crc32c)
{
    if (member < b->nmembers) sk_put_le32(b->members + member * IDX_MEMBER + 16, crc32c);
}

int sk_index_builder_range(const sk_index_builder *b, uint64_t i, uint64_t *offset,
                           uint64_t *span)
{
    if (i >= b->nsamples) return SK_E_NOTFOUND;
    const unsigned char *r = b->samples + i * IDX_SAMPLE;
    *offset = sk_get_le64(r);
    *span = sk_get_le64(r + 8);
    return SK_OK;
}

void sk_index_builder_set_stored(sk_index_builder *b, uint64_t i, uint64_t stored_offset,
                                 uint64_t stored_span)
{
    if (i >= b->nsamples) return;
    unsigned char *r = b->samples + i * IDX_SAMPLE;
    sk_put_le64(r + 16, stored_offset);
    sk_put_le64(r + 24, stored_span);
}

int sk_index_builder_key_bounds(const sk_index_builder *b, const char **first,
                                size_t *first_len, const char **last, size_t *last_len)
{
    if (!b->nsamples) return 0;
    for (size_t i = 0; i < b->nsamples; i++) {
        const unsigned char *r = b->samples + i * IDX_SAMPLE;
        const char *k = (const char *)b->strings + sk_get_le32(r + 32);
        size_t kl = sk_get_le32(r + 36);
        if (!i || sk_key_cmp(k, kl, *first, *first_len) < 0) *first = k, *first_len = kl;
        if (!i || sk_key_cmp(k, kl, *last, *last_len) > 0) *last = k, *last_len = kl;
    }
    return 1;
}

int sk_index_builder_key_range(const sk_index_builder *b, sk_key_range *out, sk_error *err)
{
    const char *f, *l;
    *out = (sk_key_range){0};
    if (!sk_index_builder_key_bounds(b, &f, &out->first_len, &l, &out->last_len)) return SK_OK;
    out->first = malloc(out->first_len + 1);
    out->last = malloc(out->last_len + 1);
    if (!out->first || !out->last) {
        sk_key_range_free(out);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    memcpy(out->first, f, out->first_len), out->first[out->first_len] = 0;
    memcpy(out->last, l, out->last_len), out->last[out->last_len] = 0;
    return SK_OK;
}

void sk_key_range_free(sk_key_range *r)
{
    free(r->first);
    free(r->last);
    *r = (sk_key_range){0};
}

/* Sorting the key order table needs the builder's buffers; qsort_r keeps
 * this reentrant across threads that build several indexes at once. */
static int key_order_cmp(const void *pa, const void *pb, void *ctx)
{
    const sk_index_builder *b = ctx;
    uint32_t a = sk_get_le32(pa), c = sk_get_le32(pb);
    const unsigned char *ra = b->samples + (size_t)a * IDX_SAMPLE;
    const unsigned char *rc = b->samples + (size_t)c * IDX_SAMPLE;
    uint32_t la = sk_get_le32(ra + 36), lc = sk_get_le32(rc + 36);
    int d = memcmp(b->strings + sk_get_le32(ra + 32), b->strings + sk_get_le32(rc + 32),
                   la < lc ? la : lc);
    if (d) return d;
    if (la != lc) return la < lc ? -1 : 1;
    return a < c ? -1 : a > c;
}

int sk_index_builder_write(sk_index_builder *b, const char *path,
                           const sk_index_shard_info *shard, sk_error *err)
{
    uint64_t S = b->nsamples, M = b->nmembers;
    uint64_t samples_off = IDX_HEADER;
    uint64_t members_off = samples_off + S * IDX_SAMPLE;
    uint64_t order_off = members_off + M * IDX_MEMBER;
    uint64_t strings_off = order_off + pad8(S * 4);
    uint64_t total = strings_off + pad8(b->nstrings);
    int rc = SK_OK;
    unsigned char *order = calloc(1, pad8(S * 4) + 8);
    unsigned char zeros[8] = {0};
    unsigned char hdr[IDX_HEADER] = {0};
    if (!order) return sk_error_set(err, SK_E_NOMEM, "%s: out of memory", path);
    for (uint64_t i = 0; i < S; i++) sk_put_le32(order + i * 4, (uint32_t)i);
    /* Shards are usually written in key order, and then the identity is the
     * sorted order (the comparison breaks ties by ordinal, so the sorted
     * table is unique): one pass over neighbours instead of a sort. */
    uint64_t k = 1;
    while (k < S && key_order_cmp(order + (k - 1) * 4, order + k * 4, b) < 0) k++;
    if (k < S) qsort_r(order, S, 4, key_order_cmp, b);

    memcpy(hdr, IDX_MAGIC, 8);
    sk_put_le32(hdr + 8, IDX_VERSION);
    sk_put_le32(hdr + 12, shard->flags);
    sk_put_le64(hdr + 16, shard->size);
    sk_put_le32(hdr + 24, shard->crc32c);
    sk_put_le32(hdr + 28, shard->first_block_crc32c);
    sk_put_le64(hdr + 32, S);
    sk_put_le64(hdr + 40, M);
    sk_put_le64(hdr + 48, b->nstrings);
    sk_put_le64(hdr + 56, samples_off);
    sk_put_le64(hdr + 64, members_off);
    sk_put_le64(hdr + 72, order_off);
    sk_put_le64(hdr + 80, strings_off);
    uint32_t body = sk_crc32c(0, b->samples, S * IDX_SAMPLE);
    body = sk_crc32c(body, b->members, M * IDX_MEMBER);
    body = sk_crc32c(body, order, pad8(S * 4));
    body = sk_crc32c(body, b->strings, b->nstrings);
    body = sk_crc32c(body, zeros, pad8(b->nstrings) - b->nstrings);
    sk_put_le32(hdr + 88, body);
    sk_put_le32(hdr + 92, sk_crc32c(0, hdr, 92));
    (void)total;

    struct iovec iov[] = {
        {hdr, IDX_HEADER},
        {b->samples, S * IDX_SAMPLE},
        {b->members, M * IDX_MEMBER},
        {order, pad8(S * 4)},
        {b->strings, b->nstrings},
        {zeros, pad8(b->nstrings) - b->nstrings},
    };
    rc = sk_out_write_iov(path, SK_OUT_REGULAR, iov, (int)SK_ARRAY_LEN(iov), err);
    free(order);
    return rc;
}

/* ----------------------------------------------------------------- reader */

struct sk_index {
    const unsigned char *map;
    size_t map_size;
    sk_index_shard_info shard;
    uint64_t nsamples, nmembers, nstrings;
    const unsigned char *samples, *members, *order, *strings;
    char *path;
    int mapped; /* 1 when sk_index_open mapped it; from_memory bytes are the caller's */
    int owned;  /* sk_index_adopt: the bytes are ours to free */
};

int sk_index_open(sk_index **out, const char *path, unsigned flags, sk_error *err)
{
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    SK_FAIL_IF(fd < 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
               "%s: cannot open index: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return sk_error_set(err, SK_E_IO, "%s: %s", path, strerror(e));
    }
    if ((uint64_t)st.st_size < IDX_HEADER) {
        close(fd);
        return sk_error_set(err, SK_E_CORRUPT, "%s: index truncated (%lld bytes, header needs %d)",
                            path, (long long)st.st_size, IDX_HEADER);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    SK_FAIL_IF(map == MAP_FAILED, err, SK_E_IO, "%s: mmap failed: %s", path, strerror(errno));
    int rc = sk_index_from_memory(out, map, (size_t)st.st_size, path, flags, err);
    if (rc) {
        munmap(map, (size_t)st.st_size);
        return rc;
    }
    (*out)->mapped = 1;
    return SK_OK;
}

int sk_index_adopt(sk_index **out, void *data, size_t size, const char *name, sk_error *err)
{
    int rc = sk_index_from_memory(out, data, size, name, 0, err);
    if (rc) {
        free(data);
        return rc;
    }
    (*out)->owned = 1;
    return SK_OK;
}

static int string_at(const sk_index *ix, uint32_t off, uint32_t len, const char **out, sk_error *err);

/* Every key a safe relative name and every extension free of '/': an
 * index whose CRCs hold can still be crafted, and its keys become file
 * names (`get -o DIR`) and tar member names.  Once per index, with the
 * body checksum; SK_INDEX_TRUST_BODY skips both (the joins that make
 * files out of keys check again). */
static int check_names(const sk_index *ix, sk_error *err)
{
    for (uint64_t i = 0; i < ix->nsamples; i++) {
        const unsigned char *r = ix->samples + i * IDX_SAMPLE;
        const char *key = NULL;
        uint32_t klen = sk_get_le32(r + 36);
        SK_GUARD(string_at(ix, sk_get_le32(r + 32), klen, &key, err));
        if (sk_name_check(key, klen, "index key", err)) {
            char why[SK_ERROR_MAX];
            snprintf(why, sizeof why, "%s", err->msg);
            return sk_error_set(err, SK_E_CORRUPT, "%s: sample #%llu: %s", ix->path,
                                (unsigned long long)i, why);
        }
    }
    for (uint64_t i = 0; i < ix->nmembers; i++) {
        const unsigned char *r = ix->members + i * IDX_MEMBER;
        const char *ext = NULL;
        uint32_t elen = sk_get_le32(r + 24);
        SK_GUARD(string_at(ix, sk_get_le32(r + 20), elen, &ext, err));
        SK_GUARD(sk_ext_check(ext, elen, ix->path, err));
    }
    return SK_OK;
}

int sk_index_from_memory(sk_index **out, const void *data, size_t size,
                         const char *name, unsigned flags, sk_error *err)
{
    const unsigned char *h = data;
    *out = NULL;
    SK_FAIL_IF(size < IDX_HEADER, err, SK_E_CORRUPT, "%s: index truncated", name);
    SK_FAIL_IF(memcmp(h, IDX_MAGIC, 8) != 0, err, SK_E_CORRUPT, "%s: not a shardkit index", name);
    SK_FAIL_IF(sk_get_le32(h + 92) != sk_crc32c(0, h, 92), err, SK_E_CORRUPT,
               "%s: index header checksum mismatch", name);
    SK_FAIL_IF(sk_get_le32(h + 8) != IDX_VERSION, err, SK_E_CORRUPT,
               "%s: index version %u not supported (this build reads %d)", name,
               sk_get_le32(h + 8), IDX_VERSION);
    uint64_t S = sk_get_le64(h + 32), M = sk_get_le64(h + 40), N = sk_get_le64(h + 48);
    SK_FAIL_IF(S > UINT32_MAX || M > UINT32_MAX || N > UINT32_MAX, err, SK_E_CORRUPT,
               "%s: index counts out of range", name);
    uint64_t samples_off = IDX_HEADER, members_off = samples_off + S * IDX_SAMPLE;
    uint64_t order_off = members_off + M * IDX_MEMBER, strings_off = order_off + pad8(S * 4);
    SK_FAIL_IF(sk_get_le64(h + 56) != samples_off || sk_get_le64(h + 64) != members_off ||
                   sk_get_le64(h + 72) != order_off || sk_get_le64(h + 80) != strings_off,
               err, SK_E_CORRUPT, "%s: index section table is inconsistent", name);
    SK_FAIL_IF(strings_off + pad8(N) != size, err, SK_E_CORRUPT,
               "%s: index is %zu bytes, its header says %llu (truncated or padded)", name,
               size, (unsigned long long)(strings_off + pad8(N)));
    if (!(flags & SK_INDEX_TRUST_BODY))
        SK_FAIL_IF(sk_crc32c(0, h + IDX_HEADER, size - IDX_HEADER) != sk_get_le32(h + 88), err,
                   SK_E_CORRUPT, "%s: index body checksum mismatch", name);
    sk_index *ix = calloc(1, sizeof *ix);
    SK_FAIL_IF(!ix, err, SK_E_NOMEM, "out of memory");
    ix->path = strdup(name);
    if (!ix->path) {
        free(ix);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    ix->map = h;
    ix->map_size = size;
    ix->shard.flags = sk_get_le32(h + 12);
    ix->shard.size = sk_get_le64(h + 16);
    ix->shard.crc32c = sk_get_le32(h + 24);
    ix->shard.first_block_crc32c = sk_get_le32(h + 28);
    ix->nsamples = S;
    ix->nmembers = M;
    ix->nstrings = N;
    ix->samples = h + samples_off;
    ix->members = h + members_off;
    ix->order = h + order_off;
    ix->strings = h + strings_off;
    if (!(flags & SK_INDEX_TRUST_BODY)) {
        int rc = check_names(ix, err);
        if (rc) {
            sk_index_close(ix);
            return rc;
        }
    }
    *out = ix;
    return SK_OK;
}

void sk_index_close(sk_index *ix)
{
    if (!ix) return;
    if (ix->mapped) munmap((void *)ix->map, ix->map_size);
    if (ix->owned) free((void *)ix->map);
    free(ix->path);
    free(ix);
}

const sk_index_shard_info *sk_index_shard(const sk_index *ix) { return &ix->shard; }
uint64_t sk_index_sample_count(const sk_index *ix) { return ix->nsamples; }
uint64_t sk_index_member_count(const sk_index *ix) { return ix->nmembers; }

static int string_at(const sk_index *ix, uint32_t off, uint32_t len, const char **out, sk_error *err)
{
    SK_FAIL_IF((uint64_t)off + len > ix->nstrings, err, SK_E_CORRUPT, "%s: index string out of bounds", ix->path);
    *out = (const char *)ix->strings + off;
    return SK_OK;
}

int sk_index_sample(const sk_index *ix, uint64_t ordinal, sk_sample_ref *out, sk_error *err)
{
    SK_FAIL_IF(ordinal >= ix->nsamples, err, SK_E_NOTFOUND, "%s: no sample #%llu (index holds %llu)",
               ix->path, (unsigned long long)ordinal, (unsigned long long)ix->nsamples);
    const unsigned char *r = ix->samples + ordinal * IDX_SAMPLE;
    out->ordinal = ordinal;
    out->offset = sk_get_le64(r);
    out->span = sk_get_le64(r + 8);
    out->stored_offset = sk_get_le64(r + 16);
    out->stored_span = sk_get_le64(r + 24);
    out->key_len = sk_get_le32(r + 36);
    out->first_member = sk_get_le32(r + 40);
    out->member_count = sk_get_le32(r + 44);
    SK_FAIL_IF((uint64_t)out->first_member + out->member_count > ix->nmembers, err, SK_E_CORRUPT,
               "%s: sample #%llu points past the member table", ix->path,
               (unsigned long long)ordinal);
    return string_at(ix, sk_get_le32(r + 32), (uint32_t)out->key_len, &out->key, err);
}

void sk_index_prefetch(const sk_index *ix, uint64_t ordinal, int stage)
{
    if (ordinal >= ix->nsamples) return;
    const unsigned char *r = ix->samples + ordinal * IDX_SAMPLE;
    if (stage == 0) {
        __builtin_prefetch(r);
        __builtin_prefetch(r + IDX_SAMPLE - 1);
        return;
    }
    uint64_t key = sk_get_le32(r + 32), first = sk_get_le32(r + 40);
    if (key < ix->nstrings) __builtin_prefetch(ix->strings + key);
    if (first < ix->nmembers) {
        const unsigned char *m = ix->members + first * IDX_MEMBER;
        uint64_t n = sk_get_le32(r + 44);
        if (n > ix->nmembers - first) n = ix->nmembers - first;
        for (uint64_t i = 0; i < n * IDX_MEMBER; i += 64) __builtin_prefetch(m + i);
        if (n) __builtin_prefetch(m + n * IDX_MEMBER - 1);
    }
}

int sk_index_member(const sk_index *ix, uint64_t i, sk_member_ref *out, sk_error *err)
{
    SK_FAIL_IF(i >= ix->nmembers, err, SK_E_NOTFOUND, "%s: no member #%llu", ix->path,
               (unsigned long long)i);
    const unsigned char *r = ix->members + i * IDX_MEMBER;
    out->data_offset = sk_get_le64(r);
    out->size = sk_get_le64(r + 8);
    out->crc32c = sk_get_le32(r + 16);
    out->ext_len = sk_get_le32(r + 24);
    out->header_len = sk_get_le32(r + 28);
    return string_at(ix, sk_get_le32(r + 20), (uint32_t)out->ext_len, &out->ext, err);
}

int sk_index_check_order(const sk_index *ix, sk_error *err)
{
    /* a permutation of the samples, sorted by key (ties by ordinal): what
     * sk_index_find's binary search believes.  A damaged table would make
     * lookups miss or find the wrong sample, while the checksums of a
     * crafted index still hold. */
    uint64_t S = ix->nsamples;
    unsigned char *seen = calloc(S ? S : 1, 1);
    SK_FAIL_IF(!seen, err, SK_E_NOMEM, "out of memory");
    const char *pk = NULL;
    uint32_t pl = 0, po = 0;
    int rc = SK_OK;
    for (uint64_t i = 0; !rc && i < S; i++) {
        uint32_t o = sk_get_le32(ix->order + i * 4);
        if (o >= S || seen[o]) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: key order table entry %llu (%u) is %s", ix->path,
                              (unsigned long long)i, o, o >= S ? "out of range" : "a repeat");
            break;
        }
        seen[o] = 1;
        const unsigned char *r = ix->samples + (uint64_t)o * IDX_SAMPLE;
        const char *k = NULL;
        uint32_t kl = sk_get_le32(r + 36);
        if ((rc = string_at(ix, sk_get_le32(r + 32), kl, &k, err))) break;
        if (pk) {
            int d = memcmp(pk, k, pl < kl ? pl : kl);
            if (d > 0 || (!d && (pl > kl || (pl == kl && po > o))))
                rc = sk_error_set(err, SK_E_CORRUPT, "%s: key order table is not sorted at entry %llu "
                                  "(sample #%u '%.*s' after #%u '%.*s')", ix->path, (unsigned long long)i,
                                  o, (int)kl, k, po, (int)pl, pk);
        }
        pk = k, pl = kl, po = o;
    }
    free(seen);
    return rc;
}

int sk_index_key_bounds(const sk_index *ix, const char **first, size_t *first_len,
                        const char **last, size_t *last_len, sk_error *err)
{
    /* the ends of the key order table: O(1), what sk_index_find's binary
     * search treats as the smallest and largest key */
    SK_FAIL_IF(!ix->nsamples, err, SK_E_NOTFOUND, "%s: no samples, so no keys", ix->path);
    const char **out[2] = {first, last};
    size_t *lens[2] = {first_len, last_len};
    for (int e = 0; e < 2; e++) {
        uint32_t o = sk_get_le32(ix->order + (e ? ix->nsamples - 1 : 0) * 4);
        SK_FAIL_IF(o >= ix->nsamples, err, SK_E_CORRUPT, "%s: key order table corrupt", ix->path);
        const unsigned char *r = ix->samples + (uint64_t)o * IDX_SAMPLE;
        uint32_t kl = sk_get_le32(r + 36);
        SK_GUARD(string_at(ix, sk_get_le32(r + 32), kl, out[e], err));
        *lens[e] = kl;
    }
    return SK_OK;
}

int sk_index_find(const sk_index *ix, const char *key, size_t key_len, uint64_t *ordinal,
                  sk_error *err)
{
    size_t lo = 0, hi = ix->nsamples;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t o = sk_get_le32(ix->order + mid * 4);
        SK_FAIL_IF(o >= ix->nsamples, err, SK_E_CORRUPT, "%s: key order table corrupt", ix->path);
        const unsigned char *r = ix->samples + (uint64_t)o * IDX_SAMPLE;
        uint32_t koff = sk_get_le32(r + 32), klen = sk_get_le32(r + 36);
        SK_FAIL_IF((uint64_t)koff + klen > ix->nstrings, err, SK_E_CORRUPT,
                   "%s: index string out of bounds", ix->path);
        int d = memcmp(ix->strings + koff, key, klen < key_len ? klen : key_len);
        if (!d) d = klen < key_len ? -1 : klen > key_len;
        if (d < 0) lo = mid + 1;
        else if (d > 0) hi = mid;
        else {
            *ordinal = o;
            return SK_OK;
        }
    }
    return sk_error_set(err, SK_E_NOTFOUND, "%s: no sample with key '%.*s'", ix->path,
                        (int)(key_len > 200 ? 200 : key_len), key);
}

uint64_t sk_index_split_keys(const sk_index *ix, const char **first, size_t *first_len)
{
    /* equal keys sit side by side in the key order table; a table out of
     * range (a crafted index opened with SK_INDEX_TRUST_BODY) ends the count */
    uint64_t S = ix->nsamples, n = 0;
    const char *pk = NULL;
    uint32_t pl = 0;
    int counted = 0;
    *first = NULL, *first_len = 0;
    for (uint64_t i = 0; i < S; i++) {
        uint32_t o = sk_get_le32(ix->order + i * 4);
        if (o >= S) break;
        const unsigned char *r = ix->samples + (uint64_t)o * IDX_SAMPLE;
        const char *k = NULL;
        uint32_t kl = sk_get_le32(r + 36);
        if (string_at(ix, sk_get_le32(r + 32), kl, &k, NULL)) break;
        if (pk && pl == kl && !memcmp(pk, k, kl)) {
            if (!counted++) {
                n++;
                if (!*first) *first = k, *first_len = kl;
            }
        } else {
            counted = 0;
        }
        pk = k, pl = kl;
    }
    return n;
}
