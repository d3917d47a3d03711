/*
 * shard_shuffle.c - `shard --shuffle`'s records: a sample as the bytes the
 * shuffle's buckets hold (core/shuffle.c) and back, or a reference to a
 * sample of an input read through its index, whose bytes are read and
 * checked only when the drain writes it.
 */
#include "io/shard_run.h"
#include "format/tar.h"
#include "format/shard_stream.h"

#include <stdlib.h>
#include <sys/uio.h>

/* ---------------------------------------------------- shuffle records */
/* key_len u32, nm u32, ext pool len u32, image len u64, key, members
 * (nm x 32 bytes), ext pool, image. */

/* Writes a record's fields up to its image into r->rec (grown to hold
 * them and tail more bytes); the key length word is klen_word.  Returns
 * where the tail goes, NULL when out of memory. */
static unsigned char *put_record(sk_shard_run *r, const struct sview *s, uint32_t klen_word, size_t tail,
                                 sk_error *err)
{
    size_t meta = 20 + s->klen + s->nm * 32 + s->elen;
    if (sk_grow((void **)&r->rec, &r->rec_cap, meta + tail, 1, err)) return NULL;
    unsigned char *p = r->rec;
    sk_put_le32(p, klen_word);
    sk_put_le32(p + 4, (uint32_t)s->nm);
    sk_put_le32(p + 8, (uint32_t)s->elen);
    sk_put_le64(p + 12, s->len);
    p += 20;
    memcpy(p, s->key, s->klen);
    p += s->klen;
    for (size_t i = 0; i < s->nm; i++, p += 32) {
        const struct run_member *m = &s->m[i];
        sk_put_le64(p, m->data_off);
        sk_put_le64(p + 8, m->size);
        sk_put_le32(p + 16, m->hlen);
        sk_put_le32(p + 20, m->crc);
        sk_put_le32(p + 24, m->ext_off);
        sk_put_le32(p + 28, m->ext_len);
    }
    memcpy(p, s->exts, s->elen);
    return p + s->elen;
}

int sk_shard_run_serialize(sk_shard_run *r, const struct sview *s, sk_error *err)
{
    /* the image is not copied here: addv copies it once, into the bucket */
    unsigned char *end = put_record(r, s, (uint32_t)s->klen, 0, err);
    if (!end) return SK_E_NOMEM;
    struct iovec v[2] = {{r->rec, (size_t)(end - r->rec)}, {(void *)s->img, s->len}};
    return sk_shuffler_addv(r->shuf, v, 2, err);
}

/* A reference record: the key length with REF_BIT set, then as above but
 * in place of the image the input's number (u32) and the sample's offset
 * in it (u64); the image length field is the sample's span.  It weighs
 * what the record of its bytes would (serialize), so the shuffle puts it
 * where that record would go: the output is the same bytes. */
#define REF_BIT 0x80000000u

int sk_shard_run_serialize_ref(sk_shard_run *r, const struct sview *s, uint64_t offset, sk_error *err)
{
    SK_FAIL_IF(s->klen >= REF_BIT, err, SK_E_INPUT, "'%.*s...': key too long", 64, s->key);
    unsigned char *p = put_record(r, s, (uint32_t)s->klen | REF_BIT, 12, err);
    if (!p) return SK_E_NOMEM;
    sk_put_le32(p, r->in_no);
    sk_put_le64(p + 4, offset);
    size_t meta = (size_t)(p - r->rec);
    struct iovec v = {r->rec, meta + 12};
    return sk_shuffler_addw(r->shuf, &v, 1, meta + s->len, err);
}

/* Writes the sample a reference record names: its bytes read from the
 * input (pread, into the output buffer), each member's data checked
 * against the CRC32C its index records (or, for an index without them,
 * the one the scatter computed: a file changed in between fails the run),
 * the output headers written over the input ones. */
static int emit_ref(sk_shard_run *r, struct sview *v, uint32_t no, uint64_t off, sk_error *err)
{
    int fd;
    const char *path;
    unsigned char *p;
    size_t got;
    SK_GUARD(sk_infiles_fd(r->inf, no, &fd, &path, err));
    SK_GUARD(sk_shard_run_out_reserve(r, v->len, &p, err));
    SK_GUARD(sk_stream_pread(fd, off, p, v->len, &got, path, err));
    SK_FAIL_IF(got < v->len, err, SK_E_INPUT, "%s: ends at offset %llu, inside sample '%.*s' "
               "(offset %llu, %zu bytes) that was read whole before: the shard was cut short "
               "during the run", path, (unsigned long long)(off + got), (int)v->klen, v->key,
               (unsigned long long)off, v->len);
    uint32_t crc = 0;
    for (size_t i = 0; i < v->nm; i++) {
        const struct run_member *m = &v->m[i];
        SK_FAIL_IF(m->hlen != SK_TAR_BLOCK || m->data_off < SK_TAR_BLOCK ||
                       m->data_off > v->len || sk_tar_pad(m->size) > v->len - m->data_off ||
                       m->ext_off + 2 * (uint64_t)m->ext_len > v->elen ||
                       v->klen + 1 + m->ext_len >= PLAIN_NAME,
                   err, SK_E_IO, "shuffle record damaged");
        unsigned char *d = p + m->data_off;
        uint32_t c = sk_crc32c(0, d, m->size);
        SK_FAIL_IF(c != m->crc, err, SK_E_MISMATCH, "%s: member '%.*s.%.*s' (data at offset %llu): "
                   "CRC32C %08x, its index records %08x: the shard or its index is damaged, or "
                   "the shard changed during the run",
                   path, (int)v->klen, v->key, (int)m->ext_len, v->exts + m->ext_off + m->ext_len,
                   (unsigned long long)(off + m->data_off), c, m->crc);
        char name[PLAIN_NAME];
        size_t nl = v->klen + 1 + m->ext_len;
        memcpy(name, v->key, v->klen);
        name[v->klen] = '.';
        memcpy(name + v->klen + 1, v->exts + m->ext_off + m->ext_len, m->ext_len);
        sk_tar_header(d - SK_TAR_BLOCK, name, nl, m->size, r->o->mtime);
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        memset(d + m->size, 0, pad);
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, d - SK_TAR_BLOCK, SK_TAR_BLOCK), c, m->size);
        piece = sk_crc32c(piece, d + m->size, pad);
        crc = i ? sk_crc32c_combine(crc, piece, SK_TAR_BLOCK + m->size + pad) : piece;
    }
    v->img = p;
    v->crc = crc;
    v->has_crc = 1;
    v->buf = r->q ? r->cur : -1;
    return sk_shard_run_emit(r, v, err);
}

int sk_shard_run_emit_record(void *ctx, const unsigned char *p, size_t len, sk_error *err)
{
    sk_shard_run *r = ctx;
    struct sview v;
    SK_FAIL_IF(len < 20, err, SK_E_IO, "shuffle record damaged");
    uint32_t kf = sk_get_le32(p);
    int ref = (kf & REF_BIT) != 0;
    v.klen = kf & ~REF_BIT;
    v.nm = sk_get_le32(p + 4);
    size_t elen = sk_get_le32(p + 8);
    v.len = (size_t)sk_get_le64(p + 12);
    SK_FAIL_IF(20 + v.klen + v.nm * 32 + elen + (ref ? 12 : v.len) != len || (ref && !r->inf), err,
               SK_E_IO, "shuffle record damaged");
    p += 20;
    v.key = (const char *)p;
    p += v.klen;
    SK_GUARD(sk_grow((void **)&r->vm, &r->vm_cap, v.nm, sizeof *r->vm, err));
    for (size_t i = 0; i < v.nm; i++, p += 32) {
        struct run_member *m = &r->vm[i];
        m->data_off = sk_get_le64(p);
        m->size = sk_get_le64(p + 8);
        m->hlen = sk_get_le32(p + 16);
        m->crc = sk_get_le32(p + 20);
        m->ext_off = sk_get_le32(p + 24);
        m->ext_len = sk_get_le32(p + 28);
    }
    v.m = r->vm;
    v.exts = (const char *)p;
    v.img = p + elen;
    v.has_crc = 0;
    v.buf = -1;
    v.elen = elen;
    if (ref) return emit_ref(r, &v, sk_get_le32(p + elen), sk_get_le64(p + elen + 4), err);
    return sk_shard_run_emit(r, &v, err);
}
