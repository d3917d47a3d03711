/*
 * recordio.c - unwraps a RecordIO stream (MXNet/dmlc RecordIO, what a
 * SageMaker Pipe channel with RecordWrapperType=RecordIO carries: every S3
 * object one record) into the bytes of its records, back to back, as a
 * stream: nothing is buffered but one 8-byte header, so memory does not
 * depend on the record size.
 *
 * A record is one or more parts.  Each part: the magic 0xced7230a (4 bytes
 * little-endian), a word whose lower 29 bits are the part's length and
 * upper 3 bits its flag, the data, and zero padding to a multiple of 4.
 * Flag 0 is a whole record; 1, 2.., 3 are the first, middle and last parts
 * of a record that dmlc's writer split where the magic occurred (4-aligned)
 * in the data; the reader puts the magic back between parts, as dmlc's
 * RecordIOReader does.  SageMaker's own reader accepts flag 0 only; this
 * one takes both, and refuses any other flag or order.
 */
#include "format/format.h"

#define RIO_MAGIC 0xced7230au
#define RIO_LEN_MASK ((1u << 29) - 1)

void sk_recordio_init(sk_recordio *r, const char *name)
{
    memset(r, 0, sizeof *r);
    r->name = name;
}

/* Reads exactly n bytes (n <= 8) unless the source ends; *got says how many. */
static int read_full(sk_recordio *r, sk_zdec_src read, void *ctx, unsigned char *dst, size_t n,
                     size_t *got, sk_error *err)
{
    *got = 0;
    while (*got < n) {
        size_t k = 0;
        SK_GUARD(read(ctx, dst + *got, n - *got, &k, err));
        if (!k) break;
        *got += k;
        r->pos += k;
    }
    return SK_OK;
}

/* The next part's header; *end = 1 at a clean end of the stream. */
static int next_part(sk_recordio *r, sk_zdec_src read, void *ctx, int *end, sk_error *err)
{
    unsigned char h[8];
    size_t got;
    uint64_t at = r->pos;
    *end = 0;
    SK_GUARD(read_full(r, read, ctx, h, 8, &got, err));
    if (got == 0) {
        SK_FAIL_IF(r->in_record, err, SK_E_CORRUPT,
                   "%s: RecordIO stream ends inside record %llu (its last part never came)",
                   r->name, (unsigned long long)r->records);
        *end = 1;
        return SK_OK;
    }
    SK_FAIL_IF(got < 8, err, SK_E_CORRUPT, "%s: RecordIO stream ends inside a header at offset %llu",
               r->name, (unsigned long long)at);
    uint32_t magic = sk_get_le32(h), word = sk_get_le32(h + 4);
    SK_FAIL_IF(magic != RIO_MAGIC, err, SK_E_CORRUPT,
               "%s: not RecordIO at offset %llu (magic %08x, want %08x): is the channel "
               "RecordIO-wrapped?", r->name, (unsigned long long)at, magic, RIO_MAGIC);
    unsigned flag = word >> 29;
    int ok = r->in_record ? (flag == 2 || flag == 3) : (flag == 0 || flag == 1);
    SK_FAIL_IF(!ok, err, SK_E_CORRUPT, "%s: RecordIO part at offset %llu has flag %u %s", r->name,
               (unsigned long long)at, flag,
               r->in_record ? "inside a multi-part record (want 2 or 3)"
                            : "at the start of a record (want 0 or 1)");
    if (flag == 2 || flag == 3) r->inject = 4; /* the magic dmlc cut out of the data */
    r->in_record = flag == 1 || flag == 2;
    r->left = word & RIO_LEN_MASK;
    r->pad = (4 - r->left % 4) % 4;
    if (flag == 0 || flag == 1) r->records++; /* records begun, counted from 1 */
    return SK_OK;
}

int sk_recordio_read(sk_recordio *r, sk_zdec_src read, void *ctx, void *dst, size_t n,
                     size_t *got, sk_error *err)
{
    unsigned char *out = dst;
    *got = 0;
    while (n) {
        if (r->inject) {
            unsigned char m[4];
            sk_put_le32(m, RIO_MAGIC);
            size_t k = r->inject < n ? r->inject : n;
            memcpy(out, m + 4 - r->inject, k);
            r->inject -= (unsigned)k;
            *got = k;
            return SK_OK;
        }
        if (r->left) {
            size_t k = 0, want = r->left < n ? r->left : n;
            SK_GUARD(read(ctx, out, want, &k, err));
            SK_FAIL_IF(!k, err, SK_E_CORRUPT,
                       "%s: RecordIO stream ends inside record %llu at offset %llu (%u bytes of "
                       "it missing)", r->name, (unsigned long long)r->records,
                       (unsigned long long)r->pos, r->left);
            r->pos += k;
            r->left -= (uint32_t)k;
            *got = k;
            return SK_OK;
        }
        if (r->pad) {
            unsigned char p[4];
            size_t k;
            SK_GUARD(read_full(r, read, ctx, p, r->pad, &k, err));
            SK_FAIL_IF(k < r->pad, err, SK_E_CORRUPT,
                       "%s: RecordIO stream ends inside the padding of a record at offset %llu",
                       r->name, (unsigned long long)r->pos);
            r->pad = 0;
        }
        int end;
        SK_GUARD(next_part(r, read, ctx, &end, err));
        if (end) return SK_OK;
    }
    return SK_OK;
}
