/*
 * dataset_get.c - the dataset API's lookup and read in one call
 * (sk_dataset_get, sk_dataset_get_many: records, names and data laid out
 * in the caller's buffer) and a sample written as a tar stream
 * (sk_dataset_write_tar).
 */
#include "tools/dataset_int.h"

#include <stdalign.h>
#include <stdlib.h>

/* ------------------------------------------- lookup and read in one call */

void sk_get_result_init_sized(sk_get_result *f, size_t size)
{
    memset(f, 0, size);
    f->struct_size = size;
}

#define ROUND8(n) (((n) + 7) & ~(uint64_t)7)

struct get_sizes {
    uint64_t total; /* the members' data */
    uint64_t whole; /* one read of the span (0: that path does not apply) */
    uint64_t exts;  /* the extensions, each with a NUL */
};

/* The sample's member records (into table when it is not NULL) and what
 * they need (read_span's test decides `whole`).  A plain shard's members
 * must lie inside the shard the index describes, and no extension may
 * hold a NUL (the names are NUL-separated in buf): a lying record is
 * SK_E_CORRUPT here, before any caller sizes a buffer from it. */
static int get_sizes(sk_dataset *ds, const sk_hit *h, sk_member_ref *table, struct get_sizes *z,
                     sk_error *err)
{
    struct shard *s = &ds->s[h->shard];
    const sk_sample_ref *sr = &h->sample;
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    int plain = !(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP));
    int span_ok = plain && !(s->from_manifest && sk_store_is_remote(s->path));
    int kl = (int)(sr->key_len > 200 ? 200 : sr->key_len);
    memset(z, 0, sizeof *z);
    SK_FAIL_IF(plain && (sr->offset > in->size || sr->span > in->size - sr->offset), err,
               SK_E_CORRUPT, "%s: index points past the end of the shard (sample '%.*s' at %llu, "
               "%llu bytes; the shard has %llu)", s->index_path, kl, sr->key,
               (unsigned long long)sr->offset, (unsigned long long)sr->span,
               (unsigned long long)in->size);
    for (uint32_t i = 0; i < sr->member_count; i++) {
        sk_member_ref m;
        SK_GUARD(sk_index_member(s->ix, (uint64_t)sr->first_member + i, &m, err));
        SK_FAIL_IF(plain && (m.data_offset > in->size || m.size > in->size - m.data_offset), err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member '%.*s.%.*s' "
                   "at %llu, %llu bytes; the shard has %llu)", s->index_path, kl, sr->key,
                   (int)m.ext_len, m.ext, (unsigned long long)m.data_offset,
                   (unsigned long long)m.size, (unsigned long long)in->size);
        SK_FAIL_IF(m.size > UINT64_MAX / 2 - z->total, err, SK_E_CORRUPT,
                   "%s: member sizes of sample '%.*s' overflow", s->index_path, kl, sr->key);
        SK_FAIL_IF(memchr(m.ext, 0, m.ext_len) != NULL, err, SK_E_CORRUPT,
                   "%s: an extension of sample '%.*s' holds a NUL byte", s->index_path, kl,
                   sr->key);
        z->total += m.size;
        z->exts += (uint64_t)m.ext_len + 1;
        if (m.data_offset < sr->offset || m.data_offset - sr->offset > sr->span ||
            m.size > sr->span - (m.data_offset - sr->offset))
            span_ok = 0; /* an odd index: the member path judges it */
        if (table) table[i] = m;
    }
    z->whole = span_ok ? sr->span : 0;
    return SK_OK;
}

int sk_dataset_get(sk_dataset *ds, const char *key, size_t key_len, uint64_t ordinal, void *buf,
                   size_t cap, sk_get_result *out, sk_error *err)
{
    size_t have = out->struct_size ? out->struct_size : sizeof *out;
    SK_FAIL_IF(have < offsetof(sk_get_result, data) + sizeof out->data, err, SK_E_USAGE,
               "sk_get_result of %zu bytes (struct_size); this library needs %zu at least", have,
               offsetof(sk_get_result, data) + sizeof out->data);
    if (have > sizeof *out) have = sizeof *out;
    SK_FAIL_IF((!buf && cap) || ((uintptr_t)buf % alignof(sk_member_ref)), err, SK_E_USAGE,
               "sk_dataset_get: the buffer must be aligned as malloc aligns");
    sk_get_result f;
    memset(&f, 0, sizeof f);
    f.struct_size = out->struct_size;
    if (key && !key_len) key_len = strlen(key); /* NUL-terminated, as sk_sample_writer_add */
    int rc = key ? sk_dataset_find(ds, key, key_len, &f.hit, err)
                 : sk_dataset_at(ds, ordinal, &f.hit, err);
    const sk_sample_ref *sr = &f.hit.sample;
    /* buf: the member records; the key and a NUL; each extension and a NUL;
     * zeros to a multiple of 8; the data */
    uint64_t table = (uint64_t)sr->member_count * sizeof(sk_member_ref);
    struct get_sizes z = {0, 0, 0};
    if (!rc) rc = get_sizes(ds, &f.hit, table <= cap ? (sk_member_ref *)buf : NULL, &z, err);
    uint64_t names = table + sr->key_len + 1, data_off = ROUND8(names + z.exts);
    if (!rc) {
        uint64_t best = data_off + (z.whole > z.total ? z.whole : z.total);
        f.need = best > SIZE_MAX ? SIZE_MAX : (size_t)best;
        if (data_off > cap || z.total > cap - data_off)
            rc = sk_error_set(err, SK_E_USAGE,
                              "buffer of %zu bytes for sample '%.*s' (it needs %zu)", cap,
                              (int)(sr->key_len > 200 ? 200 : sr->key_len), sr->key, f.need);
    }
    if (!rc) {
        unsigned char *b = buf, *data = b + data_off;
        sk_member_ref *ms = (sk_member_ref *)buf;
        memcpy(b + table, sr->key, sr->key_len);
        b[table + sr->key_len] = 0;
        unsigned char *e = b + names;
        for (uint32_t i = 0; i < sr->member_count; i++) {
            memcpy(e, ms[i].ext, ms[i].ext_len); /* the records then point here */
            e[ms[i].ext_len] = 0;
            ms[i].ext = (const char *)e;
            e += ms[i].ext_len + 1;
        }
        memset(e, 0, (size_t)(data - e));
        int r = z.whole && z.whole <= cap - data_off
                    ? sk_dsa_read_span(ds, &ds->s[f.hit.shard], &f.hit, data, cap - data_off, ms, err)
                    : 0;
        if (r < 0) rc = -r;
        size_t pos = 0;
        for (uint32_t i = 0; !rc && !r && i < sr->member_count; i++) {
            rc = sk_dataset_read(ds, &f.hit, i, data + pos, (size_t)ms[i].size, err);
            pos += (size_t)ms[i].size;
        }
        if (!rc) {
            f.members = ms;
            f.key = (const char *)b + table;
            f.data = data;
        }
    }
    memcpy(out, &f, have);
    out->struct_size = f.struct_size;
    return rc;
}

int sk_dataset_get_many(sk_dataset *ds, const uint64_t *ordinals, size_t n, void *buf,
                        size_t cap, sk_get_result *out, size_t *done, sk_error *err)
{
    SK_FAIL_IF(!done || (n && (!ordinals || !out)), err, SK_E_USAGE,
               "sk_dataset_get_many: no %s", !done ? "done count" : !ordinals ? "ordinals"
                                                                            : "results");
    *done = 0;
    if (!n) return SK_OK;
    size_t stride = out->struct_size ? out->struct_size : sizeof *out, pos = 0;
    SK_FAIL_IF(stride < offsetof(sk_get_result, data) + sizeof out->data || stride % 8, err,
               SK_E_USAGE, "sk_get_result of %zu bytes (struct_size); this library needs %zu at "
               "least", stride, offsetof(sk_get_result, data) + sizeof out->data);
    cap &= ~(size_t)7; /* so every sample starts aligned, however little is left */
    for (size_t i = 0; i < n; i++) {
        sk_get_result *r = (sk_get_result *)((char *)out + i * stride);
        r->struct_size = stride;
        SK_GUARD(sk_dataset_get(ds, NULL, 0, ordinals[i], (char *)buf + pos, cap - pos, r, err));
        /* the sample used its records, names and data; the rest of a
         * span read (headers) is free again */
        uint64_t end = (uint64_t)(r->data - (const unsigned char *)buf);
        for (uint32_t m = 0; m < r->hit.sample.member_count; m++) end += r->members[m].size;
        pos = ROUND8(end) < cap ? (size_t)ROUND8(end) : cap;
        *done = i + 1;
    }
    return SK_OK;
}

int sk_dataset_write_tar(sk_dataset *ds, const sk_hit *h, int fd, const char *fd_name,
                         sk_error *err)
{
    int rc = SK_OK;
    unsigned char *data = NULL, *hdr = NULL;
    char *name = NULL;
    static const unsigned char zeros[2 * SK_TAR_BLOCK];
    for (uint32_t i = 0; !rc && i < h->sample.member_count; i++) {
        sk_member_ref m;
        if ((rc = sk_dataset_member(ds, h, i, &m, err))) break;
        free(data);
        if (!(data = malloc(m.size ? (size_t)m.size : 1))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory for a member of %llu bytes",
                              (unsigned long long)m.size);
            break;
        }
        if ((rc = sk_dataset_read(ds, h, i, data, (size_t)m.size, err))) break;
        size_t nlen = h->sample.key_len + 1 + m.ext_len;
        free(name);
        if (!(name = malloc(nlen + 1))) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); break; }
        memcpy(name, h->sample.key, h->sample.key_len);
        name[h->sample.key_len] = '.';
        memcpy(name + h->sample.key_len + 1, m.ext, m.ext_len);
        name[nlen] = 0;
        free(hdr);
        if (!(hdr = malloc(sk_tar_header_size(name, nlen, m.size)))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            break;
        }
        size_t hl = sk_tar_header(hdr, name, nlen, m.size, 0);
        if ((rc = sk_write_all(fd, hdr, hl, fd_name, err)) ||
            (rc = sk_write_all(fd, data, (size_t)m.size, fd_name, err)) ||
            (rc = sk_write_all(fd, zeros, (size_t)(sk_tar_pad(m.size) - m.size), fd_name, err)))
            break;
    }
    if (!rc) rc = sk_write_all(fd, zeros, sizeof zeros, fd_name, err);
    free(data);
    free(hdr);
    free(name);
    return rc;
}
