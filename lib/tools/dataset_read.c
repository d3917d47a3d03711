/*
 * dataset_read.c - the dataset API's reads: a member, a whole sample (one
 * read of its span when the shard is plain), a member's head, and a part
 * of a sample's tar bytes (shardkit mount), each checked against the
 * index's CRC32C.  A compressed shard is decompressed from the stored
 * range's start (a .tar.zst from the frame holding it); a plain remote
 * shard listed by a manifest is read one GET per member, its tar header
 * checked against the index in the same request.
 */
#include "tools/dataset_int.h"

#include "format/libarchive.h"
#include <stdlib.h>

/* ---------------------------------------------------- compressed shards */

struct cread { /* sequential reads of the stored bytes through the range reader */
    struct shard *s;
    uint64_t pos, end;
    unsigned char *in;
    sk_error *err;
    int rc;
};

#define CBUF (256u << 10)

static int cread(void *ctx, void *dst, size_t cap, size_t *got, sk_error *err)
{
    struct cread *c = ctx;
    size_t want = c->end - c->pos < cap ? (size_t)(c->end - c->pos) : cap;
    *got = 0;
    if (want) SK_GUARD(c->s->rr.read_at(c->s->rr.ctx, c->pos, dst, want, got, err));
    c->pos += *got;
    return SK_OK;
}

static la_ssize_t cread_cb(struct archive *a, void *ctx, const void **out)
{
    struct cread *c = ctx;
    size_t got = 0;
    (void)a;
    if ((c->rc = cread(c, c->in, CBUF, &got, c->err))) return -1;
    *out = c->in;
    return (la_ssize_t)got;
}

/* The .tar.zst seek table, read once per shard. */
static int load_frames(sk_dataset *ds, struct shard *s, sk_error *err)
{
    if (LOAD(s->frames_loaded)) return SK_OK;
    sk_tar_src f = {.ctx = s->rr.ctx, .read_at = s->rr.read_at, .size = s->rr.size, .name = s->path};
    int rc = SK_OK;
    pthread_mutex_lock(&ds->mu);
    if (!s->frames_loaded && !(rc = sk_zstd_seek_table(&f, &s->frames, &s->nframes, err)))
        PUBLISH(s->frames_loaded);
    pthread_mutex_unlock(&ds->mu);
    return rc;
}

/* Reads n bytes at tar position off of a compressed shard: decompress from
 * the stored range's start (d_start in the tar stream), discarding up to off. */
static int read_compressed(sk_dataset *ds, struct shard *s, const sk_sample_ref *sr, uint64_t off,
                           void *buf, size_t n, sk_error *err)
{
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    uint64_t d = 0;
    struct cread c = {.s = s, .pos = sr->stored_offset, .end = sr->stored_offset + sr->stored_span,
                      .err = err};
    SK_FAIL_IF(c.end > s->rr.size || c.end < c.pos, err, SK_E_CORRUPT,
               "%s: index points past the end of the shard", s->index_path);
    if ((in->flags & SK_INDEX_ZSTD) && sr->stored_offset != 0) {
        SK_GUARD(load_frames(ds, s, err));
        size_t lo = 0, hi = s->nframes;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (s->frames[mid].c_off < sr->stored_offset) lo = mid + 1;
            else hi = mid;
        }
        SK_FAIL_IF(lo == s->nframes || s->frames[lo].c_off != sr->stored_offset, err,
                   SK_E_CORRUPT, "%s: index stored offset %llu is not a zstd frame start",
                   s->index_path, (unsigned long long)sr->stored_offset);
        d = s->frames[lo].d_off;
    }
    unsigned char *out = sk_xmalloc(CBUF, err);
    int rc = !out ? SK_E_NOMEM : SK_OK;
    size_t copied = 0;
    struct archive *a = NULL;
    sk_zdec z = {0};
    int zstd = (in->flags & SK_INDEX_ZSTD) != 0;
    if (!rc && zstd) {
        rc = sk_zdec_init(&z, s->path, sr->stored_offset, err);
    } else if (!rc && !(c.in = sk_xmalloc(CBUF, err))) {
        rc = SK_E_NOMEM;
    } else if (!rc) {
        struct archive_entry *ae;
        if (!(rc = sk_la_new(&a, err))) {
            sk_la.read_support_filter_all(a);
            sk_la.read_support_format_raw(a);
            if (sk_la.read_open(a, &c, NULL, cread_cb, NULL) != ARCHIVE_OK ||
                sk_la.read_next_header(a, &ae) != ARCHIVE_OK)
                rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", s->path,
                                                sk_la.error_string(a));
        }
    }
    while (!rc && copied < n) {
        size_t got = 0;
        if (zstd) {
            if ((rc = sk_zdec_read(&z, cread, &c, out, CBUF, &got, err)) || got == 0) break;
        } else {
            la_ssize_t k = sk_la.read_data(a, out, CBUF);
            if (k < 0) {
                rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", s->path,
                                                sk_la.error_string(a));
                break;
            }
            if (k == 0) break;
            got = (size_t)k;
        }
        /* out holds tar bytes [d, d+got) */
        uint64_t want = off + copied;
        if (want < d + got) {
            size_t from = (size_t)(want - d), k = got - from;
            if (k > n - copied) k = n - copied;
            memcpy((unsigned char *)buf + copied, out + from, k);
            copied += k;
        }
        d += got;
    }
    if (!rc && copied < n)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: stream ends before tar offset %llu (truncated?)",
                          s->path, (unsigned long long)(off + n));
    if (a) sk_la.read_free(a);
    sk_zdec_free(&z);
    free(out);
    free(c.in);
    return rc;
}

/* ------------------------------------------------- one GET per sample */

struct mem_src {
    const unsigned char *p;
    uint64_t off, len; /* p holds stream bytes [off, off + len) */
};

static int mem_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    const struct mem_src *m = ctx;
    (void)err;
    *got = 0;
    if (pos < m->off || pos >= m->off + m->len) return SK_OK;
    uint64_t left = m->off + m->len - pos;
    *got = n < left ? n : (size_t)left;
    memcpy(buf, m->p + (pos - m->off), *got);
    return SK_OK;
}

/* A remote plain shard whose size the manifest gave (and its index
 * confirmed): a member is one ranged GET of its tar header(s) and data, and
 * the header must name the sample's key with the size and data offset the
 * index gives: the proof, for this member, that the index was built from
 * this object, in the same request as the data (instead of a HEAD and a
 * GET of the first block before the first read).  Its CRC32C is checked
 * by the caller.  Nothing of the dataset changes but the shard's range
 * reader on its first read, so reads from an opened shard may run at once
 * (the Python Dataset relies on it). */
static int read_remote_member(sk_dataset *ds, struct shard *s, const sk_sample_ref *sr,
                          const sk_member_ref *m, void *buf, sk_error *err)
{
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    uint64_t off = m->data_offset - m->header_len, len = m->header_len + m->size;
    SK_FAIL_IF(m->header_len > m->data_offset || m->data_offset > in->size ||
                   m->size > in->size - m->data_offset || len > SIZE_MAX,
               err, SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
               s->index_path, (unsigned long long)m->data_offset);
    if (!LOAD(s->rr_open)) {
        int rc = SK_OK;
        pthread_mutex_lock(&ds->mu);
        if (!s->rr_open && !(rc = sk_dsa_remote_range_open(&ds->env, &s->rr, s->path, in->size, err)))
            PUBLISH(s->rr_open);
        pthread_mutex_unlock(&ds->mu);
        SK_GUARD(rc);
    }
    unsigned char *b = sk_xmalloc(len ? (size_t)len : 1, err);
    if (!b) return SK_E_NOMEM;
    size_t got = 0;
    int rc = s->rr.read_at(s->rr.ctx, off, b, (size_t)len, &got, err);
    if (!rc && got < len)
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                          (unsigned long long)(off + got));
    struct mem_src ms = {b, off, got};
    sk_tar_src src = {.ctx = &ms, .read_at = mem_read_at, .size = off + got, .name = s->path};
    sk_tar_reader tr;
    sk_tar_entry e;
    sk_tar_reader_init(&tr, &src, 0);
    tr.pos = off;
    if (!rc && !(rc = sk_tar_next(&tr, &e, err)) &&
        (e.end || e.data_offset != m->data_offset || e.size != m->size ||
         e.name_len <= sr->key_len || memcmp(e.name, sr->key, sr->key_len) ||
         e.name[sr->key_len] != '.'))
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (no member of '%.*s' with "
                          "%llu bytes at offset %llu)",
                          s->path, s->index_path, (int)(sr->key_len > 200 ? 200 : sr->key_len),
                          sr->key, (unsigned long long)m->size,
                          (unsigned long long)m->data_offset);
    sk_tar_reader_release(&tr);
    if (!rc) memcpy(buf, b + m->header_len, (size_t)m->size);
    free(b);
    return rc;
}

int sk_dataset_read(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t cap,
                    sk_error *err)
{
    sk_member_ref m;
    SK_GUARD(sk_dataset_member(ds, h, i, &m, err));
    struct shard *s = &ds->s[h->shard];
    SK_FAIL_IF(cap < m.size, err, SK_E_USAGE, "buffer of %zu bytes for a member of %llu", cap,
               (unsigned long long)m.size);
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    int plain = !(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP));
    if (plain && s->from_manifest && sk_store_is_remote(s->path)) {
        SK_GUARD(read_remote_member(ds, s, &h->sample, &m, buf, err));
    } else if (!plain) {
        SK_GUARD(sk_dsa_ensure_shard(ds, s, err));
        SK_GUARD(read_compressed(ds, s, &h->sample, m.data_offset, buf, (size_t)m.size, err));
    } else {
        SK_GUARD(sk_dsa_ensure_shard(ds, s, err));
        SK_FAIL_IF(m.data_offset > s->rr.size || m.size > s->rr.size - m.data_offset, err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
                   s->index_path, (unsigned long long)m.data_offset);
        size_t got;
        SK_GUARD(s->rr.read_at(s->rr.ctx, m.data_offset, buf, (size_t)m.size, &got, err));
        SK_FAIL_IF(got < m.size, err, SK_E_CORRUPT, "%s: short read at offset %llu",
                   s->path, (unsigned long long)(m.data_offset + got));
    }
    if (!(in->flags & SK_INDEX_NO_CRC)) {
        uint32_t crc = sk_crc32c(0, buf, (size_t)m.size);
        SK_FAIL_IF(crc != m.crc32c, err, SK_E_MISMATCH,
                   "%s: member '%.*s.%.*s' at offset %llu: CRC32C %08x, the index says %08x",
                   s->path, (int)h->sample.key_len, h->sample.key, (int)m.ext_len, m.ext,
                   (unsigned long long)m.data_offset, crc, m.crc32c);
    }
    return SK_OK;
}

/* The members of a sample of a plain shard read through its range reader
 * (a local file, or a remote object not served by read_remote_member) lie in
 * [offset, offset + span): one read of the span into buf, then each
 * member's data moved down to its place (left, so memmove never overwrites
 * bytes still to move) and checked.  That holds only when the members come
 * in ascending order without overlapping: a member moved left would
 * otherwise land on bytes of one still to move, whose CRC32C would then be
 * taken over the wrong bytes (a false mismatch, with a CRC that no byte of
 * the shard has).  1 when it applies and was done, 0 when it does not
 * apply (the caller reads member by member), or -rc. */
int sk_dsa_read_span(sk_dataset *ds, struct shard *s, const sk_hit *h, unsigned char *buf,
                     size_t cap, const sk_member_ref *members, sk_error *err)
{
    const sk_sample_ref *sr = &h->sample;
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    if ((in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) || sr->span > cap ||
        (s->from_manifest && sk_store_is_remote(s->path)))
        return 0;
    uint64_t end = sr->offset; /* where the member before ends */
    for (uint32_t i = 0; i < sr->member_count; i++) {
        const sk_member_ref *m = &members[i];
        if (m->data_offset < end || m->data_offset - sr->offset > sr->span ||
            m->size > sr->span - (m->data_offset - sr->offset))
            return 0; /* an odd index (members out of the span, out of order
                         or overlapping): let the member path judge it */
        end = m->data_offset + m->size;
    }
    int rc = sk_dsa_ensure_shard(ds, s, err);
    if (rc) return -rc;
    if (sr->offset > s->rr.size || sr->span > s->rr.size - sr->offset)
        return -sk_error_set(err, SK_E_CORRUPT,
                             "%s: index points past the end of the shard (sample at %llu)",
                             s->index_path, (unsigned long long)sr->offset);
    size_t got = 0;
    if ((rc = s->rr.read_at(s->rr.ctx, sr->offset, buf, (size_t)sr->span, &got, err))) return -rc;
    if (got < sr->span)
        return -sk_error_set(err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                             (unsigned long long)(sr->offset + got));
    size_t pos = 0;
    for (uint32_t i = 0; i < sr->member_count; i++) {
        const sk_member_ref *m = &members[i];
        memmove(buf + pos, buf + (m->data_offset - sr->offset), (size_t)m->size);
        if (!(in->flags & SK_INDEX_NO_CRC)) {
            uint32_t crc = sk_crc32c(0, buf + pos, (size_t)m->size);
            if (crc != m->crc32c)
                return -sk_error_set(err, SK_E_MISMATCH,
                                     "%s: member '%.*s.%.*s' at offset %llu: CRC32C %08x, the "
                                     "index says %08x",
                                     s->path, (int)sr->key_len, sr->key, (int)m->ext_len, m->ext,
                                     (unsigned long long)m->data_offset, crc, m->crc32c);
        }
        pos += (size_t)m->size;
    }
    return 1;
}

int sk_dataset_read_sample(sk_dataset *ds, const sk_hit *h, void *buf, size_t cap,
                           sk_member_ref *members, size_t max_members, sk_error *err)
{
    uint32_t n = h->sample.member_count;
    SK_FAIL_IF(n > max_members, err, SK_E_USAGE, "room for %zu members; sample '%.*s' has %u",
               max_members, (int)h->sample.key_len, h->sample.key, n);
    uint64_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        SK_GUARD(sk_dataset_member(ds, h, i, &members[i], err));
        total += members[i].size;
        SK_FAIL_IF(members[i].size > cap || total > cap, err, SK_E_USAGE,
                   "buffer of %zu bytes for the members of sample '%.*s'", cap,
                   (int)h->sample.key_len, h->sample.key);
    }
    int r = sk_dsa_read_span(ds, &ds->s[h->shard], h, buf, cap, members, err);
    if (r < 0) return -r;
    if (r > 0) return SK_OK;
    size_t pos = 0;
    for (uint32_t i = 0; i < n; i++) {
        SK_GUARD(sk_dataset_read(ds, h, i, (unsigned char *)buf + pos, (size_t)members[i].size, err));
        pos += (size_t)members[i].size;
    }
    return SK_OK;
}

/* ------------------------------------------------------- a member's head */

int sk_dataset_read_head(sk_dataset *ds, const sk_hit *h, uint32_t i, void *buf, size_t n,
                         size_t *got, sk_error *err)
{
    sk_member_ref m;
    *got = 0;
    SK_GUARD(sk_dataset_member(ds, h, i, &m, err));
    if (n >= m.size) {
        SK_GUARD(sk_dataset_read(ds, h, i, buf, n, err));
        *got = (size_t)m.size;
        return SK_OK;
    }
    struct shard *s = &ds->s[h->shard];
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    SK_GUARD(sk_dsa_ensure_shard(ds, s, err));
    if (in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) {
        SK_GUARD(read_compressed(ds, s, &h->sample, m.data_offset, buf, n, err));
    } else {
        SK_FAIL_IF(m.data_offset > s->rr.size || m.size > s->rr.size - m.data_offset, err,
                   SK_E_CORRUPT, "%s: index points past the end of the shard (member at %llu)",
                   s->index_path, (unsigned long long)m.data_offset);
        size_t g = 0;
        SK_GUARD(s->rr.read_at(s->rr.ctx, m.data_offset, buf, n, &g, err));
        SK_FAIL_IF(g < n, err, SK_E_CORRUPT, "%s: short read at offset %llu", s->path,
                   (unsigned long long)(m.data_offset + g));
    }
    *got = n;
    return SK_OK;
}

/* --------------------------------------------- byte ranges (shardkit mount) */

/* A part of a sample's tar bytes: a FUSE read of a large member asks for
 * one window of it at a time, so a plain shard's part is one read through
 * the range reader (one pread, one ranged GET) and a .tar.zst's is
 * decompressed from the frame holding its first byte, not from the
 * sample's first frame.  A shard shorter than the index says (cut short
 * after it was opened) is SK_E_CORRUPT for the bytes past the cut. */
int sk_dataset_read_at(sk_dataset *ds, const sk_hit *h, uint64_t off, void *buf, size_t n,
                       sk_error *err)
{
    SK_FAIL_IF(h->shard >= ds->n, err, SK_E_USAGE, "shard %zu of a dataset of %zu", h->shard,
               ds->n);
    const sk_sample_ref *sr = &h->sample;
    struct shard *s = &ds->s[h->shard];
    SK_FAIL_IF(off < sr->offset || off - sr->offset > sr->span || n > sr->span - (off - sr->offset),
               err, SK_E_USAGE, "%s: bytes %llu..+%zu are not in sample '%.*s'", s->path,
               (unsigned long long)off, n, (int)(sr->key_len > 200 ? 200 : sr->key_len), sr->key);
    if (!n) return SK_OK;
    SK_GUARD(sk_dsa_ensure_index(ds, s, err));
    SK_GUARD(sk_dsa_ensure_shard(ds, s, err));
    const sk_index_shard_info *in = sk_index_shard(s->ix);
    if (in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP)) {
        sk_sample_ref part = *sr;
        if ((in->flags & SK_INDEX_ZSTD) && sr->stored_offset != 0) {
            SK_GUARD(load_frames(ds, s, err));
            size_t lo = 0, hi = s->nframes; /* the last frame starting at or before off */
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->frames[mid].d_off <= off) lo = mid + 1;
                else hi = mid;
            }
            uint64_t end = sr->stored_offset + sr->stored_span;
            if (lo > 0 && s->frames[lo - 1].c_off >= sr->stored_offset &&
                s->frames[lo - 1].c_off < end) {
                part.stored_offset = s->frames[lo - 1].c_off;
                part.stored_span = end - part.stored_offset;
            }
        }
        return read_compressed(ds, s, &part, off, buf, n, err);
    }
    /* past the object's end: cut short when the index says it was longer,
     * else the index names bytes that no shard of its size has */
    SK_FAIL_IF((off > s->rr.size || n > s->rr.size - off) && s->rr.size < in->size, err,
               SK_E_CORRUPT,
               "%s: shard cut short: %llu bytes, its index %s says %llu (byte %llu asked for)",
               s->path, (unsigned long long)s->rr.size, s->index_path,
               (unsigned long long)in->size, (unsigned long long)(off + n));
    SK_FAIL_IF(off > s->rr.size || n > s->rr.size - off, err, SK_E_CORRUPT,
               "%s: index %s points past the end of the shard (%llu bytes; bytes %llu..%llu of "
               "sample '%.*s' asked for)",
               s->path, s->index_path, (unsigned long long)s->rr.size, (unsigned long long)off,
               (unsigned long long)(off + n), (int)(sr->key_len > 200 ? 200 : sr->key_len), sr->key);
    size_t got = 0;
    SK_GUARD(s->rr.read_at(s->rr.ctx, off, buf, n, &got, err));
    SK_FAIL_IF(got < n, err, SK_E_CORRUPT, "%s: shard cut short: %zu of %zu bytes at offset %llu",
               s->path, got, n, (unsigned long long)off);
    return SK_OK;
}
