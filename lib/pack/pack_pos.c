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

/* Where put_piece_at writes: the shard, the offset of the next piece, and
 * the CRC32C of what was written so far. */
struct at_out {
    sk_shard_out *out;
    uint64_t off;
    uint32_t crc;
};

static int put_piece_at(void *ctx, unsigned char *buf, size_t n, uint32_t crc, sk_error *err)
{
    struct at_out *to = ctx;
    struct iovec iov = {buf, n};
    int rc = sk_shard_out_pwritev(to->out, &iov, 1, to->off, n, err);
    to->off += n;
    to->crc = sk_crc32c_combine(to->crc, crc, n);
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
    unsigned char *buf = malloc(STREAM_PIECE + 1);
    struct at_out to = {out, off0, 0};
    int rc = SK_OK;
    SK_FAIL_IF(!buf, err, SK_E_NOMEM, "out of memory");
    for (size_t i = 0; i < k && !rc; i++) {
        size_t hl;
        rc = sk_pack_stream_tar_member(p, &c->items[first + i], buf, put_piece_at, &to, &hl,
                                       &member_crc[i], err, err);
    }
    free(buf);
    if (!rc && to.off != off0 + planned) {
        char name[SK_TAR_NAME_MAX + 1];
        sk_item_name(c, &c->items[first], name);
        rc = sk_error_set(err, SK_E_IO, "%s: internal error: sample of %s is not its planned size",
                          out->path, name);
    }
    *crc_out = to.crc;
    return rc;
}
