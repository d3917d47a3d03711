/*
 * pack_resume.c - what proves, for `pack --resume`, that a shard already
 * on disk is this run's: not only its key range and its own checksum (a
 * run over other inputs with the same names passed those), but every
 * sample's members -- extension, size and the CRC32C of the bytes -- read
 * again from this run's inputs and compared with the shard's index.  A
 * shard that fails is packed again, as one written with other options
 * (--mtime, compression: sk_pack_shard_options_match) is.  Reading the inputs costs what reading
 * the shard back costs, far less than writing it.
 */
#include "pack/pack_int.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#define CHUNK (1u << 20)

/* CRC32C of item it's bytes, read from its source; -1 when unreadable. */
static int64_t item_crc(sk_pack *p, const sk_item *it, struct dir_cache *dc, unsigned char *buf)
{
    const sk_catalog *c = &p->cat;
    const sk_source *src = &c->srcs[it->src];
    const char *name = c->arena + it->base;
    int fd = -1;
    if (!src->is_spool && !src->remote) {
        int dfd = sk_pack_member_dirfd(c, it, dc);
        if (dfd < 0 || (fd = sk_pack_open_at(dfd, name, 0)) < 0) return -1;
    }
    uint32_t crc = 0;
    int rc = SK_OK;
    for (uint64_t at = 0; !rc && (at < it->size || (!at && !it->size));) {
        uint64_t want = it->size - at < CHUNK ? it->size - at : CHUNK;
        int last = at + want == it->size;
        rc = sk_pack_read_input(c, it, name, fd, at, buf, want, last && fd >= 0, NULL);
        if (!rc) crc = sk_crc32c(crc, buf, (size_t)want);
        at += want;
        if (!it->size) break;
    }
    if (fd >= 0) close(fd);
    return rc ? -1 : (int64_t)crc;
}

int sk_pack_sample_proven(sk_pack *p, uint32_t s, const sk_index *ix, uint64_t ordinal)
{
    const sk_catalog *c = &p->cat;
    sk_sample_ref ref;
    if (sk_index_sample(ix, ordinal, &ref, NULL) || (sk_index_shard(ix)->flags & SK_INDEX_NO_CRC))
        return 0;
    size_t first = c->samples[s];
    size_t n = (s + 1 < c->nsamples ? c->samples[s + 1] : c->nitems) - first;
    if (ref.member_count != n) return 0;
    unsigned char *buf = malloc(CHUNK + 1);
    struct dir_cache dc = {0, 0, -1};
    int ok = buf != NULL;
    for (size_t i = 0; ok && i < n; i++) { /* io/emit.c's one check, as shard's */
        const sk_item *it = &c->items[first + i];
        const char *e = c->arena + it->base + it->key_end + 1;
        uint64_t mi = ref.first_member + i;
        ok = sk_emit_member_matches(ix, mi, e, strlen(e), it->size, -1);
        /* S3 objects: names and sizes only (fetching them again is the
         * cost resume saves) */
        if (!ok || c->srcs[it->src].remote) continue;
        int64_t crc = item_crc(p, it, &dc, buf); /* -1: unreadable, nothing proven */
        ok = crc >= 0 && sk_emit_member_matches(ix, mi, e, strlen(e), it->size, crc);
    }
    sk_pack_dir_cache_release(&dc, c);
    free(buf);
    return ok;
}

int sk_pack_shard_options_match(sk_pack *p, const char *path, const sk_index *ix)
{
    return sk_emit_shard_options_match(path, ix, p->o.compress_level, p->o.mtime);
}
