/*
 * shard_direct.c - `shard`'s index-driven input: a plain tar shard whose
 * index is sound is read in large batches (mapped private, or pread), each
 * sample checked against its index and written from the batch, without
 * libarchive; with --shuffle its samples go into the buckets as
 * references.  Where the shard and its index disagree, reading goes on
 * through libarchive (shard_read.c) from that sample on, so the output is
 * the same bytes either way.
 */
#include "tools/shard_int.h"
#include "format/tar.h"
#include "format/shard_stream.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------- index-driven input */
/* A plain tar shard whose index is sound and records the shard's size is
 * read in large preads, each member where the index puts it, without
 * libarchive.  What is read is still checked: every header (checksum, a
 * regular file, the name and size the index claims, the members tiling
 * the file with nothing between them), every member's data against the
 * CRC32C its index records, and what follows each sample (another
 * sample's member, or the end of the archive).  The output header is
 * built over the input one in the batch, and the sample is queued for
 * writing from there: its data is copied only by the kernel, once when
 * the batch is mapped (out_map), twice when it was pread.
 *
 * Where anything is not as the index says, or is beyond this reader (pax
 * or GNU long names, links, directories, meta members), reading goes on
 * through libarchive from the first header of that sample, so the output
 * is byte for byte what libarchive alone gives.  Only a CRC32C mismatch is
 * an error: the member's bytes are not what was indexed. */

/* An octal field as libarchive's tar_atol8 reads it (leading blanks, then
 * digits), but only a plain one: at least a digit, then NUL or space. */
static int octal_field(const unsigned char *f, size_t w, uint64_t *v)
{
    size_t i = 0, d = 0;
    uint64_t x = 0;
    while (i < w && (f[i] == ' ' || f[i] == '\t')) i++;
    for (; i < w && f[i] >= '0' && f[i] <= '7'; i++, d++) {
        if (x >> 58) return 0;
        x = x * 8 + (uint64_t)(f[i] - '0');
    }
    if (!d || (i < w && f[i] != 0 && f[i] != ' ')) return 0;
    *v = x;
    return 1;
}

/* The member name of a plain ustar (or GNU) header for a regular file, as
 * libarchive forms it (prefix '/' name), into name (PLAIN_NAME bytes);
 * its length, or 0 when this reader leaves the header to libarchive. */
static size_t plain_header(const unsigned char *h, char *name, uint64_t *size)
{
    unsigned sum = 0;
    uint64_t ck;
    for (int i = 0; i < SK_TAR_BLOCK; i++) sum += h[i]; /* one plain loop: vectorized */
    for (int i = 148; i < 156; i++) sum += (unsigned)' ' - h[i];
    if (!octal_field(h + 148, 8, &ck) || ck != sum) return 0;
    if (h[156] != '0' && h[156] != 0) return 0;
    int ustar = !memcmp(h + 257, "ustar\0" "00", 8);
    if (!ustar && memcmp(h + 257, "ustar  \0", 8)) return 0;
    if (!octal_field(h + 124, 12, size)) return 0;
    size_t n = 0, nl = strnlen((const char *)h, 100);
    size_t pl = ustar ? strnlen((const char *)h + 345, 155) : 0;
    if (pl) {
        memcpy(name, h + 345, pl);
        n = pl;
        if (name[n - 1] != '/') name[n++] = '/';
    }
    memcpy(name + n, h, nl);
    n += nl;
    name[n] = 0;
    if (!nl || name[n - 1] == '/') return 0; /* libarchive: a directory */
    for (size_t i = 0; i < n; i++)
        if (name[i] < 0x20 || name[i] > 0x7e) return 0;
    return n;
}

/* A name read_input would take as it is: nothing stripped, not a meta
 * member, a WebDataset key. */
static int plain_name(const char *name, size_t n, size_t *kl, size_t *eo)
{
    size_t skip;
    return !sk_name_strip(name, n, &skip) && !skip && !sk_tar_is_meta(name, n) &&
           sk_sample_split(name, n, kl, eo) == SK_OK;
}

/* Whether what follows a sample (rem bytes at p) ends it for libarchive as
 * it does here: the end of the archive (*end), or a plain member with
 * another key. */
static int ends_sample(const unsigned char *p, uint64_t rem, const char *key, size_t klen, int *end)
{
    static const unsigned char zero[SK_TAR_BLOCK];
    char name[PLAIN_NAME];
    uint64_t size;
    size_t nl, kl, eo;
    *end = rem == 0 || (rem >= SK_TAR_BLOCK && !memcmp(p, zero, SK_TAR_BLOCK));
    if (*end) return 1;
    if (rem < SK_TAR_BLOCK || !(nl = plain_header(p, name, &size)) || !plain_name(name, nl, &kl, &eo))
        return 0;
    return kl != klen || memcmp(name, key, kl);
}

/* Checks the sample sr at p (sr->span bytes) against its index; its
 * members go to s->m and s->exts (m->crc: what the index records).  Only
 * the header blocks are read: hv, when not NULL, holds them one after the
 * other (member u's at hv + u * 512) and p is not used. */
static int direct_sample(const sk_index *ix, const sk_sample_ref *sr, const unsigned char *p,
                         const unsigned char *hv, struct run_sample *s)
{
    uint64_t at = 0;
    s->nm = s->elen = 0;
    for (uint32_t u = 0; u < sr->member_count; u++) {
        sk_member_ref mr;
        char name[PLAIN_NAME];
        uint64_t size;
        size_t nl, kl, eo;
        if (sk_index_member(ix, (uint64_t)sr->first_member + u, &mr, NULL) ||
            mr.header_len != SK_TAR_BLOCK || mr.data_offset != sr->offset + at + SK_TAR_BLOCK ||
            sr->span - at < SK_TAR_BLOCK || mr.size > sr->span - at - SK_TAR_BLOCK ||
            sk_tar_pad(mr.size) > sr->span - at - SK_TAR_BLOCK)
            return 0;
        if (!(nl = plain_header(hv ? hv + (size_t)u * SK_TAR_BLOCK : p + at, name, &size)) ||
            size != mr.size ||
            !plain_name(name, nl, &kl, &eo) || kl != sr->key_len || memcmp(name, sr->key, kl) ||
            sk_ext_cmp(name + eo, nl - eo, mr.ext, mr.ext_len) || mr.ext_len != nl - eo ||
            sk_tar_header_size(name, nl, size) != SK_TAR_BLOCK)
            return 0;
        size_t el = nl - eo;
        for (size_t i = 0; i < s->nm; i++) /* read_input fails on it: let it */
            if (!sk_ext_cmp(s->exts + s->m[i].ext_off, s->m[i].ext_len, name + eo, el)) return 0;
        if (sk_grow((void **)&s->m, &s->mcap, s->nm + 1, sizeof *s->m, NULL) ||
            sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * el + 1, 1, NULL))
            return 0;
        s->m[s->nm++] = (struct run_member){.data_off = at + SK_TAR_BLOCK, .size = size,
                                      .hlen = SK_TAR_BLOCK, .crc = mr.crc32c,
                                      .ext_off = (uint32_t)s->elen, .ext_len = (uint32_t)el};
        for (size_t i = 0; i < el; i++) { /* lowercase, then as the name has it */
            char ch = name[eo + i];
            s->exts[s->elen + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        memcpy(s->exts + s->elen + el, name + eo, el);
        s->elen += 2 * el;
        at += SK_TAR_BLOCK + sk_tar_pad(size);
    }
    return sr->member_count && at == sr->span;
}

static int all_zero(const unsigned char *p, size_t n)
{
    unsigned char acc = 0;
    for (size_t i = 0; i < n; i++) acc |= p[i]; /* one plain loop: vectorized */
    return !acc;
}

/* The checked sample at p: data CRC32Cs against the index, then the output
 * headers over the input ones, padding zeroed, and out it goes. */
static int direct_emit(sk_shard_run *r, const char *url, const sk_sample_ref *sr, unsigned char *p,
                       struct run_sample *s, int no_crc, int buf, sk_error *err)
{
    uint32_t crc = 0;
    for (size_t i = 0; i < s->nm; i++) {
        struct run_member *m = &s->m[i];
        unsigned char *d = p + m->data_off;
        uint32_t c = sk_crc32c(0, d, m->size);
        if (!no_crc && c != m->crc)
            return sk_error_set(err, SK_E_MISMATCH, "%s: member '%.*s.%.*s' (data at offset %llu): "
                                "CRC32C %08x, its index records %08x: the shard or its index "
                                "is damaged", url, (int)sr->key_len, sr->key, (int)m->ext_len,
                                s->exts + m->ext_off + m->ext_len,
                                (unsigned long long)(sr->offset + m->data_off), c, m->crc);
        m->crc = c;
        if (r->shuf) continue; /* a reference: emit_ref writes the headers */
        char name[PLAIN_NAME];
        size_t nl = sr->key_len + 1 + m->ext_len;
        memcpy(name, sr->key, sr->key_len);
        name[sr->key_len] = '.';
        memcpy(name + sr->key_len + 1, s->exts + m->ext_off + m->ext_len, m->ext_len);
        /* written only where they differ: a mapped page not written to is
         * not copied (out_map) */
        unsigned char h[SK_TAR_BLOCK];
        sk_tar_header(h, name, nl, m->size, r->o->mtime);
        if (memcmp(h, d - SK_TAR_BLOCK, SK_TAR_BLOCK)) {
            memcpy(d - SK_TAR_BLOCK, h, SK_TAR_BLOCK);
            r->in->rewrites++;
        }
        size_t pad = (size_t)(sk_tar_pad(m->size) - m->size);
        if (!all_zero(d + m->size, pad)) {
            memset(d + m->size, 0, pad);
            r->in->rewrites++;
        }
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, d - SK_TAR_BLOCK, SK_TAR_BLOCK), c, m->size);
        piece = sk_crc32c(piece, d + m->size, pad);
        crc = i ? sk_crc32c_combine(crc, piece, SK_TAR_BLOCK + m->size + pad) : piece;
    }
    struct sview v = {sr->key, sr->key_len, s->m, s->nm, s->exts, p, (size_t)sr->span, crc, 1, buf,
                      s->elen};
    r->st.samples_in++;
    /* --shuffle: a reference into a bucket, weighing what read_input's
     * record of the sample would */
    int rc = r->shuf ? sk_shard_run_serialize_ref(r, &v, sr->offset, err) : sk_shard_run_emit(r, &v, err);
    s->nm = s->elen = 0;
    return rc;
}

/* --shuffle of a shard whose index records CRC32Cs: the scatter reads only
 * the header blocks (one pread each, and the block after each sample),
 * checks them as direct_input does and puts a reference to each sample in
 * the shuffle; the data is read once, when the drain writes it (emit_ref,
 * which checks each member against its index's CRC32C then).  *from and
 * the fallback to libarchive as for direct_input. */
static int direct_refs(sk_shard_run *r, const char *url, int fd, const sk_index *ix, uint64_t size,
                       struct run_sample *s, uint64_t *from, sk_error *err)
{
    static const unsigned char zero[SK_TAR_BLOCK];
    uint64_t pos = 0, n = sk_index_sample_count(ix);
    unsigned char *hv = NULL, next[SK_TAR_BLOCK];
    size_t hcap = 0, got;
    int have_next = 0, end = 0, rc = SK_OK;
    sk_sample_ref sr;
    for (uint64_t i = 0; i < n && !end && !rc; i++) {
        if (sk_index_sample(ix, i, &sr, NULL) || sr.offset != pos || sr.span > size - pos ||
            !sr.member_count || (rc = sk_grow((void **)&hv, &hcap,
                                              (size_t)sr.member_count * SK_TAR_BLOCK, 1, err)))
            break;
        /* each member's header where the index puts it, while it lies in
         * the sample (direct_sample refuses the first that does not) */
        uint64_t at = 0;
        int ok = 1;
        for (uint32_t u = 0; u < sr.member_count && ok && !rc; u++) {
            sk_member_ref mr;
            if (sk_index_member(ix, (uint64_t)sr.first_member + u, &mr, NULL) ||
                sr.span - at < SK_TAR_BLOCK || mr.size > sr.span - at - SK_TAR_BLOCK ||
                sk_tar_pad(mr.size) > sr.span - at - SK_TAR_BLOCK)
                break;
            unsigned char *h = hv + (size_t)u * SK_TAR_BLOCK;
            if (!u && have_next) memcpy(h, next, SK_TAR_BLOCK);
            else if (!(rc = sk_stream_pread(fd, pos + at, h, SK_TAR_BLOCK, &got, url, err)))
                ok = got == SK_TAR_BLOCK;
            at += SK_TAR_BLOCK + sk_tar_pad(mr.size);
        }
        if (rc) break;
        /* the block after the sample: the next one's first header, or the end */
        uint64_t tail = size - pos - sr.span;
        have_next = 0;
        if (ok && tail >= SK_TAR_BLOCK) {
            if ((rc = sk_stream_pread(fd, pos + sr.span, next, SK_TAR_BLOCK, &got, url, err))) break;
            have_next = got == SK_TAR_BLOCK;
            ok = have_next;
        }
        if (!ok || !direct_sample(ix, &sr, NULL, hv, s) ||
            !ends_sample(tail >= SK_TAR_BLOCK ? next : zero, tail, sr.key, sr.key_len, &end)) {
            s->nm = s->elen = 0;
            break; /* libarchive from this sample on */
        }
        struct sview v = {sr.key, sr.key_len, s->m, s->nm, s->exts, NULL, (size_t)sr.span, 0, 0,
                          -1, s->elen};
        r->st.samples_in++;
        rc = sk_shard_run_serialize_ref(r, &v, sr.offset, err);
        s->nm = s->elen = 0;
        pos += sr.span;
        sk_shard_run_progress(r, 0);
    }
    free(hv);
    *from = end ? UINT64_MAX : pos;
    return rc;
}

/* Reads url through its index as far as it agrees with the shard: *from is
 * where libarchive is to go on (0: all of it), UINT64_MAX when done. */
int sk_shard_run_direct_input(sk_shard_run *r, const char *url, struct run_sample *s, uint64_t *from, sk_error *err)
{
    char ip[4200];
    sk_index *ix = NULL;
    struct stat sb;
    *from = 0;
    if (snprintf(ip, sizeof ip, "%s.idx", url) >= (int)sizeof ip) return SK_OK;
    int fd = open(url, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return SK_OK; /* read_input says why */
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sk_index_open(&ix, ip, 0, NULL) ||
        sk_index_shard(ix)->size != (uint64_t)sb.st_size ||
        (sk_index_shard(ix)->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP))) {
        if (ix) sk_index_close(ix);
        close(fd);
        return SK_OK;
    }
    const char *sk1;
    size_t sk1l;
    uint64_t nsplit = sk_index_split_keys(ix, &sk1, &sk1l);
    if (nsplit) { /* a key as several samples: libarchive decides, from the tar
                   * itself (an index may lie), and refuses a real split */
        sk_index_close(ix);
        close(fd);
        return SK_OK;
    }
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    int kept = 0; /* --shuffle: fd is r->inf's, for the drain */
    if (r->inf) {
        int rc = sk_infiles_add(r->inf, url, fd, &r->in_no, err);
        if (rc) {
            sk_index_close(ix);
            return rc;
        }
        kept = 1;
    }
    uint64_t size = (uint64_t)sb.st_size, pos = 0, i = 0, n = sk_index_sample_count(ix);
    int no_crc = (sk_index_shard(ix)->flags & SK_INDEX_NO_CRC) != 0, end = 0, rc = SK_OK;
    if (r->shuf && !no_crc) { /* without CRC32Cs to check the drain by: read it all now */
        rc = direct_refs(r, url, fd, ix, size, s, from, err);
        goto out;
    }
    /* mapped while the headers are already the output's (a shardkit
     * shard resharded with its own --mtime): then nothing is copied
     * in; a batch that had to be rewritten sends the rest to pread,
     * which copies once instead of a page at a time */
    int use_map = 1;
    while (i < n && !end && !rc) {
        /* the next samples, as many as fit a batch (at least one) */
        uint64_t j = i, len = 0;
        sk_sample_ref sr;
        while (j < n && !sk_index_sample(ix, j, &sr, NULL) && sr.offset == pos + len &&
               sr.span <= size - sr.offset && (j == i || len + sr.span <= BATCH))
            len += sr.span, j++;
        if (j == i) break;
        size_t want = (size_t)(size - pos < len + SK_TAR_BLOCK ? size - pos : len + SK_TAR_BLOCK), got;
        r->cur ^= 1;
        int mapped = 0;
        uint64_t rewrites = r->in->rewrites;
        if (use_map && (rc = sk_shard_run_out_map(r, r->cur, fd, pos, want, &mapped, err))) break;
        struct obuf *b = &r->ob[r->cur];
        if (mapped) {
            got = want;
        } else {
            if ((rc = sk_shard_run_out_claim(r, r->cur, want, err))) break;
            if ((rc = sk_stream_pread(fd, pos, b->p, want, &got, url, err))) break;
            if (got < want) break; /* shorter than its index: libarchive says how */
            b->len = got;
        }
        for (uint64_t k = i; k < j && !rc; k++) {
            sk_index_sample(ix, k, &sr, NULL);
            unsigned char *p = b->p + (sr.offset - pos);
            uint64_t tail = got - (sr.offset - pos) - sr.span;
            if (!direct_sample(ix, &sr, p, NULL, s) ||
                !ends_sample(p + sr.span, tail, sr.key, sr.key_len, &end)) {
                s->nm = s->elen = 0;
                *from = sr.offset;
                goto out;
            }
            rc = direct_emit(r, url, &sr, p, s, no_crc, r->cur, err);
            if (end) break;
        }
        /* the batch goes to the writer now, not when the next one needs a buffer */
        if (!rc && r->q) rc = sk_shard_run_out_flush(r, err);
        if (mapped && r->in->rewrites != rewrites) use_map = 0;
        pos += len;
        i = j;
    }
    *from = end ? UINT64_MAX : pos;
out: /* libarchive counts what it reads */
    r->st.bytes_in += *from == UINT64_MAX ? size : *from;
    sk_index_close(ix);
    if (kept) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_NORMAL); /* the drain reads at random */
    else close(fd);
    return rc;
}
