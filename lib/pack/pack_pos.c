/*
 * pack_pos.c - what the positional writers of shardkit pack share: every
 * sample's offset in its shard is known before it is written (from the
 * plan in spread mode, pack_spread.c; from sizes taken as files open in
 * stream mode, pack_stream.c), so any thread can write any stretch of any
 * shard with pwritev, all cores stay busy to the end, and the output is
 * the same whatever --jobs is.  Here: how many workers a run may have, and
 * a sample too big for a slot written in pieces at its offset.
 */
#include "pack/pack_int.h"
#include "pack/pack_out.h"
#include "io/io.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>


/* Worker threads for --jobs n: each holds a directory and a file open at
 * least, so a low ulimit -n caps them (the run goes on with fewer). */
size_t sk_pack_workers_for(const sk_pack *p)
{
    size_t n = (size_t)p->o.jobs;
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        size_t cap = rl.rlim_cur > 48 ? (size_t)(rl.rlim_cur - 32) / 4 : 1;
        if (n > cap) n = cap;
    }
    return n ? n : 1;
}

/* Where put_piece_at writes: the shard and the offset of the next piece. */
struct at_out {
    sk_shard_out *out;
    uint64_t off;
};

static int put_piece_at(void *ctx, unsigned char *buf, size_t n, uint32_t crc, sk_error *err)
{
    struct at_out *to = ctx;
    struct iovec iov = {buf, n};
    (void)crc;
    int rc = sk_shard_out_pwritev(to->out, &iov, 1, to->off, n, err);
    to->off += n;
    return rc;
}

/* A sample too big for a slot (spread and stream modes): each member read
 * and written in bounded pieces at its planned offset; member CRCs go to
 * member_crc[0..members), the CRC of the sample's bytes to *crc_out. */
int sk_pack_stream_sample_at(sk_pack *p, uint32_t s, sk_shard_out *out, uint64_t off0,
                             uint64_t planned, uint32_t *member_crc, uint32_t *crc_out,
                             sk_error *err)
{
    const sk_catalog *c = &p->cat;
    size_t first = c->samples[s], k = sk_sample_members(c, s);
    char name[SK_TAR_NAME_MAX + 1];
    unsigned char hdr[SK_TAR_HEADER_MAX];
    unsigned char *buf = malloc(STREAM_PIECE + 1);
    uint64_t off = off0;
    uint32_t bcrc = 0;
    int rc = SK_OK;
    SK_FAIL_IF(!buf, err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; i < k && !rc; i++) {
        const sk_item *it = &c->items[first + i];
        size_t n = sk_item_name(c, it, name);
        size_t hl = sk_tar_header(hdr, name, n, it->size, p->o.mtime);
        struct iovec iov = {hdr, hl};
        if ((rc = sk_shard_out_pwritev(out, &iov, 1, off, hl, err))) break;
        bcrc = sk_crc32c(bcrc, hdr, hl);
        off += hl;
        struct at_out to = {out, off};
        uint32_t crc;
        if ((rc = sk_pack_stream_member(c, it, name, buf, put_piece_at, &to, &crc, err, err))) break;
        off = to.off;
        uint64_t pad = sk_tar_pad(it->size) - it->size;
        memset(buf, 0, pad);
        iov.iov_base = buf;
        iov.iov_len = pad;
        if (pad && (rc = sk_shard_out_pwritev(out, &iov, 1, off, pad, err))) break;
        off += pad;
        member_crc[i] = crc;
        bcrc = sk_crc32c_combine(bcrc, crc, it->size);
        bcrc = sk_crc32c(bcrc, buf, pad);
    }
    free(buf);
    if (!rc && off != off0 + planned)
        rc = sk_error_set(err, SK_E_IO, "%s: internal error: sample of %s is not its planned size",
                          out->path, name);
    *crc_out = bcrc;
    return rc;
}
