/*
 * pack_fill.c - the readers' side of shardkit pack, shared by both ways of
 * writing (pack.c: the ring and shard-parallel writers; pack_pos.c,
 * pack_spread.c, pack_stream.c: the positional writers): opening and
 * reading inputs, building a sample's tar bytes into a slot, its index
 * records, and the run's progress and tallies.
 * Below both writers, so neither calls up into the other.
 */
#include "pack/pack_int.h"
#include "pack/pack_out.h"
#include "io/io.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void sk_pack_slots_release(struct slot *slots, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(slots[i].buf);
        free(slots[i].m);
        free(slots[i].warnings);
    }
}

void sk_pack_warnf(sk_pack *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(p->o.warn, p->o.ctx, fmt, ap);
    va_end(ap);
}

static uint64_t member_bytes(const sk_catalog *c, const sk_item *it)
{
    char name[SK_TAR_NAME_MAX + 1];
    size_t n = sk_item_name(c, it, name);
    return sk_tar_header_size(name, n, it->size) + sk_tar_pad(it->size);
}

uint64_t sk_pack_sample_bytes(const sk_catalog *c, uint32_t s)
{
    uint64_t b = 0;
    size_t first = c->samples[s], k = sk_sample_members(c, s);
    for (size_t i = 0; i < k; i++) b += member_bytes(c, &c->items[first + i]);
    return b;
}

size_t sk_pack_sample_key(const sk_catalog *c, uint32_t s, char *buf)
{
    const sk_item *it = &c->items[c->samples[s]];
    size_t dl = c->dir_lens[it->dir];
    memcpy(buf, c->arena + c->dirs[it->dir], dl);
    memcpy(buf + dl, c->arena + it->base, it->key_end);
    return dl + it->key_end;
}

int sk_pack_open_at(int dirfd, const char *name, int extra)
{
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOATIME | extra);
    if (fd < 0 && errno == EPERM) /* O_NOATIME needs ownership */
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | extra);
    return fd;
}

int sk_pack_open_input(const sk_source *src, const char *name)
{
    return sk_pack_open_at(src->fd, name, 0);
}

/* The error for a member that cannot be opened, from errno: a file gone
 * since it was listed is SK_E_NOTFOUND (and says so), anything else SK_E_IO.
 * Every writer reports it the same way, so --skip-errors and the exit code
 * do not depend on which writer a run took. */
int sk_pack_open_failed(const sk_catalog *c, const sk_item *it, const char *name, sk_error *err)
{
    int vanished = errno == ENOENT;
    return sk_error_set(err, vanished ? SK_E_NOTFOUND : SK_E_IO, "%s/%s: cannot open: %s",
                        c->srcs[it->src].label, name,
                        vanished ? "file vanished since it was listed" : strerror(errno));
}

int sk_pack_stream_member(const sk_catalog *c, const sk_item *it, const char *name,
                          unsigned char *buf, sk_piece_put put, void *ctx, uint32_t *crc_out,
                          sk_error *in_err, sk_error *out_err)
{
    const sk_source *src = &c->srcs[it->src];
    int fd = -1, rc = SK_OK;
    if (!src->is_spool && !src->remote && (fd = sk_pack_open_input(src, name)) < 0)
        return sk_pack_open_failed(c, it, name, in_err);
    uint32_t crc = 0;
    for (uint64_t at = 0; at < it->size && !rc;) {
        uint64_t want = it->size - at < STREAM_PIECE ? it->size - at : STREAM_PIECE;
        if ((rc = sk_pack_read_input(c, it, name, fd, at, buf, want, at + want == it->size, in_err)))
            break;
        uint32_t pc = sk_crc32c(0, buf, want);
        crc = sk_crc32c_combine(crc, pc, want);
        rc = put(ctx, buf, want, pc, out_err);
        at += want;
    }
    if (fd >= 0) close(fd);
    *crc_out = crc;
    return rc;
}

int sk_pack_stream_tar_member(const sk_pack *p, const sk_item *it, unsigned char *buf,
                              sk_piece_put put, void *ctx, size_t *hl_out, uint32_t *crc_out,
                              sk_error *in_err, sk_error *out_err)
{
    char name[SK_TAR_NAME_MAX + 1];
    unsigned char hdr[SK_TAR_HEADER_MAX];
    size_t hl = sk_tar_header(hdr, name, sk_item_name(&p->cat, it, name), it->size, p->o.mtime);
    *hl_out = hl;
    int rc = put(ctx, hdr, hl, sk_crc32c(0, hdr, hl), out_err);
    if (!rc) rc = sk_pack_stream_member(&p->cat, it, name, buf, put, ctx, crc_out, in_err, out_err);
    if (rc) return rc;
    size_t pad = (size_t)(sk_tar_pad(it->size) - it->size);
    memset(buf, 0, pad);
    return pad ? put(ctx, buf, pad, sk_crc32c(0, buf, pad), out_err) : SK_OK;
}

/* Reads exactly want bytes of an input into dst.  Files are read with one
 * request of want+1 bytes: a short read of a regular file means end of
 * file, so a file that grew or shrank since it was listed is caught
 * without another system call.  dst must have room for want+1 bytes. */
int sk_pack_read_input(const sk_catalog *c, const sk_item *it, const char *name, int fd,
                      uint64_t at, unsigned char *dst, uint64_t want, int probe, sk_error *err)
{
    const sk_source *src = &c->srcs[it->src];
    if (src->remote) return sk_fetch_read(c, it, name, at, dst, want, probe, err); /* s3io */
    if (src->is_spool) {
        uint64_t got = 0;
        while (got < want) {
            ssize_t r = pread(src->fd, dst + got, want - got, (off_t)(it->spool_off + at + got));
            if (r < 0 && errno == EINTR) continue;
            SK_FAIL_IF(r <= 0, err, SK_E_IO, "%s: %s: reading spooled member failed: %s",
                       src->label, name, r < 0 ? strerror(errno) : "short read");
            got += (uint64_t)r;
        }
        return SK_OK;
    }
    uint64_t ask = want + (probe ? 1 : 0), got = 0;
    while (got < ask) {
        ssize_t r = read(fd, dst + got, ask - got);
        if (r < 0 && errno == EINTR) continue;
        SK_FAIL_IF(r < 0, err, SK_E_IO, "%s/%s: read failed: %s", src->label, name, strerror(errno));
        uint64_t asked = ask - got;
        got += (uint64_t)r;
        if ((uint64_t)r < asked) break; /* a short read: end of file */
    }
    SK_FAIL_IF(got != want, err, SK_E_INPUT, "%s/%s: file %s while being packed (listed as %llu "
               "bytes)", src->label, name, got < want ? "shrank" : "grew",
               (unsigned long long)it->size);
    return SK_OK;
}

void sk_pack_slot_warn(struct slot *s, const char *msg)
{
    size_t old = s->warnings ? strlen(s->warnings) : 0, n = strlen(msg);
    char *w = realloc(s->warnings, old + n + 2);
    if (!w) return;
    memcpy(w + old, msg, n);
    w[old + n] = '\n';
    w[old + n + 1] = 0;
    s->warnings = w;
}

static int open_member(const sk_catalog *c, const sk_item *it, struct dir_cache *dc);

/* Builds sample s's tar bytes into slot.  fds (or NULL): members already
 * opened by the caller (-1: open here); each is closed and set to -1. */
void sk_pack_fill_slot(sk_pack *p, struct slot *sl, uint32_t s, struct dir_cache *dc, int *fds)
{
    const sk_catalog *c = &p->cat;
    size_t first = c->samples[s], k = sk_sample_members(c, s);
    char name[SK_TAR_NAME_MAX + 1];
    sl->len = 0;
    sl->crc = 0;
    sl->stream = 0;
    sl->failed = 0;
    free(sl->warnings);
    sl->warnings = NULL;
    if (k > sl->mcap) {
        struct member_out *m = realloc(sl->m, k * sizeof *m);
        if (!m) goto nomem;
        sl->m = m;
        sl->mcap = k;
    }
    uint64_t need = p->sbytes[s] + 1;
    if (need > SLOT_MAX) {
        sl->stream = 1;
        return;
    }
    if (need > sl->cap) {
        unsigned char *b = realloc(sl->buf, need);
        if (!b) goto nomem;
        sl->buf = b;
        sl->cap = need;
    }
    for (size_t i = 0; i < k; i++) {
        const sk_item *it = &c->items[first + i];
        struct member_out *mo = &sl->m[i];
        size_t n = sk_item_name(c, it, name);
        size_t hl = sk_tar_header(sl->buf + sl->len, name, n, it->size, p->o.mtime);
        unsigned char *data = sl->buf + sl->len + hl;
        int fd = -1, rc;
        sk_error e;
        e.code = 0;
        e.msg[0] = 0;
        if (fds && fds[i] >= 0) {
            fd = fds[i];
            fds[i] = -1;
        }
        if (fd < 0 && !c->srcs[it->src].is_spool && !c->srcs[it->src].remote &&
            (fd = open_member(c, it, dc)) < 0)
            rc = sk_pack_open_failed(c, it, name, &e);
        else
            rc = sk_pack_read_input(c, it, name, fd, 0, data, it->size, 1, &e);
        if (fd >= 0) close(fd);
        mo->skipped = 0;
        if (rc) {
            if (!p->o.skip_errors) {
                sl->failed = 1;
                sl->err = e;
                return;
            }
            mo->skipped = 1;
            sk_pack_slot_warn(sl, e.msg);
            continue;
        }
        uint64_t pad = sk_tar_pad(it->size) - it->size;
        memset(data + it->size, 0, pad);
        mo->crc = sk_crc32c(0, data, it->size);
        mo->header_len = (uint32_t)hl;
        mo->data_off = sl->len + hl;
        mo->size = it->size;
        sl->crc = sk_crc32c(sl->crc, sl->buf + sl->len, hl);
        sl->crc = sk_crc32c_combine(sl->crc, mo->crc, it->size);
        sl->crc = sk_crc32c(sl->crc, data + it->size, pad);
        sl->len += hl + it->size + pad;
    }
    return;
nomem:
    sl->failed = 1;
    sk_error_set(&sl->err, SK_E_NOMEM, "out of memory reading a sample");
}

/* The descriptor of it's directory, through the cache; -1 (errno set) if
 * it cannot be opened. */
int sk_pack_member_dirfd(const sk_catalog *c, const sk_item *it, struct dir_cache *dc)
{
    const sk_source *src = &c->srcs[it->src];
    if (dc->fd < 0 || dc->src != it->src || dc->dir != it->dir) {
        if (dc->fd >= 0 && dc->fd != c->srcs[dc->src].fd) close(dc->fd);
        dc->fd = -1;
        dc->src = it->src;
        dc->dir = it->dir;
        if (c->dir_lens[it->dir] == 0) {
            dc->fd = src->fd;
        } else {
            char dir[SK_TAR_NAME_MAX + 1];
            memcpy(dir, c->arena + c->dirs[it->dir], c->dir_lens[it->dir]);
            dir[c->dir_lens[it->dir]] = 0;
            dc->fd = openat(src->fd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (dc->fd < 0) return -1;
        }
    }
    return dc->fd;
}

static int open_member(const sk_catalog *c, const sk_item *it, struct dir_cache *dc)
{
    int dfd = sk_pack_member_dirfd(c, it, dc);
    return dfd < 0 ? -1 : sk_pack_open_at(dfd, c->arena + it->base, 0);
}

void sk_pack_dir_cache_release(struct dir_cache *dc, const sk_catalog *c)
{
    if (dc->fd >= 0 && dc->fd != c->srcs[dc->src].fd) close(dc->fd);
    dc->fd = -1;
}

double sk_pack_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int sk_pack_progress_take(sk_pack *p, int final, sk_pack_stats *snap)
{
    if (!p->o.progress) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double dt = (double)(now.tv_sec - p->last_progress.tv_sec) +
                (double)(now.tv_nsec - p->last_progress.tv_nsec) / 1e9;
    if (!final && dt < 0.5) return 0;
    p->last_progress = now;
    p->st.seconds = sk_pack_since(&p->t0);
    *snap = p->st;
    if (p->images_live) { /* the shards are the resharding side's */
        snap->shards = __atomic_load_n(&p->img_shards, __ATOMIC_RELAXED);
        snap->samples = __atomic_load_n(&p->img_samples, __ATOMIC_RELAXED);
        snap->output_bytes = __atomic_load_n(&p->img_out, __ATOMIC_RELAXED);
    }
    return 1;
}

void sk_pack_progress_report(sk_pack *p, const sk_pack_stats *snap)
{
    /* The caller's code runs with no lock of ours held, so it may take as
     * long as it likes (a slow terminal) without stalling the workers;
     * two threads never call it at once: a report due while another is
     * being made is dropped, the next one carries the newer figures. */
    if (__atomic_exchange_n(&p->reporting, 1, __ATOMIC_ACQUIRE)) return;
    p->o.progress(p->o.ctx, snap);
    __atomic_store_n(&p->reporting, 0, __ATOMIC_RELEASE);
}

void sk_pack_progress(sk_pack *p, int final)
{
    sk_pack_stats snap;
    pthread_mutex_lock(&p->mu);
    int due = sk_pack_progress_take(p, final, &snap);
    pthread_mutex_unlock(&p->mu);
    if (due) sk_pack_progress_report(p, &snap);
}

void sk_pack_tally_fold(sk_pack *p, struct tally *t)
{
    p->st.files_done += t->files;
    p->st.bytes_done += t->bytes;
    p->st.samples += t->samples;
    p->st.skipped += t->skipped;
    t->files = t->bytes = t->samples = t->skipped = 0;
}

int sk_pack_add_index_records(sk_pack *p, sk_shard_out *out, uint32_t s, uint64_t sample_off,
                             const struct member_out *m, struct tally *t, sk_error *err)
{
    const sk_catalog *c = &p->cat;
    size_t first = c->samples[s], k = sk_sample_members(c, s), written = 0;
    char key[SK_TAR_NAME_MAX + 1];
    uint64_t span = 0;
    for (size_t i = 0; i < k; i++)
        if (!m[i].skipped) span = m[i].data_off + sk_tar_pad(m[i].size), written++;
    if (!written) return SK_OK; /* every member skipped: no sample */
    size_t kl = sk_pack_sample_key(c, s, key);
    SK_GUARD(sk_index_add_sample(out->index, key, kl, sample_off, span, sample_off, span, err));
    for (size_t i = 0; i < k; i++) {
        if (m[i].skipped) continue;
        const sk_item *it = &c->items[first + i];
        const char *e = c->arena + it->base + it->key_end + 1;
        SK_GUARD(sk_emit_index_member(out, t->exts, e, strlen(e), sample_off + m[i].data_off,
                                      m[i].size, m[i].header_len, m[i].crc, err));
        t->files++;
        t->bytes += m[i].size;
    }
    t->samples++;
    return SK_OK;
}

int sk_pack_add_tally(sk_pack *p, sk_manifest *m)
{
    sk_manifest **a = realloc(p->ext_tallies, (p->ext_tallies_n + 1) * sizeof *a);
    if (!a) return -1;
    p->ext_tallies = a;
    a[p->ext_tallies_n++] = m;
    return 0;
}
