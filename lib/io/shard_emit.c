/*
 * shard_emit.c - `shard`'s output: when a shard is cut (--max-size,
 * --max-count, --num-shards), how it is named, opened (temp, renamed when
 * complete: io/writer.c), indexed, entered in the manifest and, with
 * --resume, kept and checked instead of written; and the output buffers
 * through which plain output goes to a second thread in large writes
 * (io/outq.c).  A dry run (--dry-run) makes every shard the same way into
 * a sink that only counts, so its figures are the run's own.
 */
#include "io/shard_run.h"
#include "format/tar.h"
#include "io/emit.h"
#include "io/store.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ----------------------------------------------------------------- output */

void sk_shard_run_view_of(const struct run_sample *s, struct sview *v)
{
    *v = (struct sview){s->key, s->klen, s->m, s->nm, s->exts, s->img, s->len, s->crc, 1, -1, s->elen};
}

/* Queues the pending range. */
int sk_shard_run_out_flush(sk_shard_run *r, sk_error *err)
{
    if (r->pbuf < 0 || r->pend == r->pstart) return SK_OK;
    struct obuf *b = &r->ob[r->pbuf];
    SK_GUARD(sk_outq_put(r->q, b->p + r->pstart, r->pend - r->pstart, r->pcrc, &b->seq, err));
    r->pstart = r->pend;
    return SK_OK;
}

/* Everything handed over is written: the sk_shard_out is ours again. */
static int out_sync(sk_shard_run *r, sk_error *err)
{
    if (!r->q) return SK_OK;
    SK_GUARD(sk_shard_run_out_flush(r, err));
    return sk_outq_wait(r->q, 0, err);
}

/* Makes ob[i] free for new bytes (at least need of them). */
int sk_shard_run_out_claim(sk_shard_run *r, int i, size_t need, sk_error *err)
{
    struct obuf *b = &r->ob[i];
    if (r->pbuf == i) {
        SK_GUARD(sk_shard_run_out_flush(r, err));
        r->pbuf = -1;
    }
    if (r->q) SK_GUARD(sk_outq_wait(r->q, b->seq, err));
    if (b->map) munmap(b->map, b->maplen);
    b->map = NULL;
    b->len = 0;
    if (need > b->heap_cap) {
        unsigned char *p = malloc(need);
        SK_FAIL_IF(!p, err, SK_E_NOMEM, "out of memory (%zu bytes for one sample)", need);
        free(b->heap);
        b->heap = p;
        b->heap_cap = need;
    }
    b->p = b->heap;
    b->cap = b->heap_cap;
    return SK_OK;
}

/* Makes ob[i] the bytes [pos, pos + want) of fd, mapped private: pages
 * the run does not write to (headers already as the output has them,
 * padding already zero) stay the page cache's own, so the data is copied
 * once, by the kernel's write, as cp copies it; a page written to is
 * copied for this process alone, never into the input.  *mapped = 0:
 * not mapped (the caller preads instead). */
int sk_shard_run_out_map(sk_shard_run *r, int i, int fd, uint64_t pos, size_t want, int *mapped, sk_error *err)
{
    struct obuf *b = &r->ob[i];
    *mapped = 0;
    SK_GUARD(sk_shard_run_out_claim(r, i, 0, err));
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t at = pos - pos % (uint64_t)(pg > 0 ? pg : 4096);
    size_t len = (size_t)(pos - at) + want;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, (off_t)at);
    if (m == MAP_FAILED) return SK_OK;
    /* every page now: a file cut short since fstat fails here (EFAULT)
     * instead of raising SIGBUS later, and no fault per page afterwards */
    if (madvise(m, len, MADV_POPULATE_READ)) {
        munmap(m, len);
        return SK_OK;
    }
    b->map = m;
    b->maplen = len;
    b->p = (unsigned char *)m + (pos - at);
    b->cap = b->len = want;
    *mapped = 1;
    return SK_OK;
}

/* Appends v's bytes to the open shard. */
static int out_add(sk_shard_run *r, const struct sview *v, sk_error *err)
{
    uint32_t crc = r->out.z ? 0 : v->has_crc ? v->crc : sk_crc32c(0, v->img, v->len);
    if (!r->q) {
        struct iovec iov = {(void *)v->img, v->len};
        return sk_shard_out_writev(&r->out, &iov, 1, v->len, crc, err);
    }
    size_t at;
    if (v->buf >= 0) { /* already in a buffer: queue it from where it lies */
        at = (size_t)(v->img - r->ob[v->buf].p);
        if (r->pbuf != v->buf || r->pend != at) {
            SK_GUARD(sk_shard_run_out_flush(r, err));
            r->pbuf = v->buf;
            r->pstart = r->pend = at;
        }
    } else {
        if (v->len > OUT_BUF / 2) { /* large: write it from where it lies, and wait */
            uint64_t seq;
            SK_GUARD(sk_shard_run_out_flush(r, err));
            SK_GUARD(sk_outq_put(r->q, v->img, v->len, crc, &seq, err));
            return sk_outq_wait(r->q, seq, err);
        }
        struct obuf *b = &r->ob[r->cur];
        if (!b->cap || b->len + v->len > b->cap) {
            SK_GUARD(sk_shard_run_out_flush(r, err));
            r->cur ^= 1;
            SK_GUARD(sk_shard_run_out_claim(r, r->cur, OUT_BUF, err));
            b = &r->ob[r->cur];
        }
        if (r->pbuf != r->cur || r->pend != b->len) {
            SK_GUARD(sk_shard_run_out_flush(r, err));
            r->pbuf = r->cur;
            r->pstart = r->pend = b->len;
        }
        memcpy(b->p + b->len, v->img, v->len);
        b->len += v->len;
    }
    r->pcrc = r->pend == r->pstart ? crc : sk_crc32c_combine(r->pcrc, crc, v->len);
    r->pend += v->len;
    return SK_OK;
}

/* ---------------------------------------------------------- dry run sink */
/* --dry-run: the shard's bytes are made (framed, compressed, checksummed)
 * exactly as a run makes them and counted here, never stored: nothing is
 * created, so an output place that does not exist or cannot be written
 * still gets its plan. */
struct count_sink {
    sk_sink base;
    uint64_t bytes;
};

static int count_write(sk_sink *s, const struct iovec *iov, int iovcnt, uint64_t len, sk_error *err)
{
    (void)iov, (void)iovcnt, (void)err;
    ((struct count_sink *)s)->bytes += len;
    return SK_OK;
}

static int count_publish(sk_sink *s, sk_index_builder *index, const sk_index_shard_info *info,
                         sk_error *err)
{
    (void)index;
    struct count_sink *c = (struct count_sink *)s;
    int rc = c->bytes == info->size ? SK_OK
             : sk_error_set(err, SK_E_IO, "%s: internal error: the dry run counted %llu bytes, "
                            "the writer %llu", s->where, (unsigned long long)c->bytes,
                            (unsigned long long)info->size);
    free(c);
    return rc;
}

static void count_abort(sk_sink *s) { free(s); }

static const struct sk_sink_ops count_ops = {count_write, NULL, NULL, count_publish, count_abort};

static int begin_counted(sk_shard_run *r, const char *path, sk_error *err)
{
    struct count_sink *c = calloc(1, sizeof *c);
    SK_FAIL_IF(!c, err, SK_E_NOMEM, "out of memory");
    c->base = (sk_sink){&count_ops, path};
    SK_GUARD(sk_shard_out_begin_sink(&r->out, &c->base, path, r->to_stdout, err));
    c->base.where = r->out.path; /* the writer's copy outlives path */
    return SK_OK;
}

/* ----------------------------------------------------------- manifest */

/* keys: the shard's smallest and largest key (first NULL: not known) */
static int add_to_manifest(sk_shard_run *r, const char *path, const sk_index_shard_info *info,
                           uint64_t samples, const sk_key_range *keys, sk_error *err)
{
    SK_GUARD(sk_emit_manifest_add(r->man, path, r->mdir, info, samples, 0, keys, err));
    r->st.shards++;
    r->st.output_bytes += info->size;
    if (r->o->on_shard) r->o->on_shard(r->o->ctx, path, samples, info->size);
    return SK_OK;
}

/* --resume: whether sample v is the one at s of the resumed shard by the
 * rule pack's --resume has too (io/emit.c): the shard sound as a whole
 * (its CRC32C, checked once by try_resume) and written with this run's
 * --mtime and compression, then each member's extension, size and
 * CRC32C, and a plain shard's sample span: a shard of other inputs or
 * options with the same keys is not this run's. */
static int resume_same(sk_shard_run *r, const sk_sample_ref *s, const struct sview *v)
{
    int plain = !(sk_index_shard(r->resumed)->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP));
    if (!r->resumed_opts_ok || s->member_count != v->nm || (plain && s->stored_span != v->len)) return 0;
    for (uint32_t i = 0; i < s->member_count; i++) {
        const struct run_member *m = &v->m[i];
        if (!sk_emit_member_matches(r->resumed, s->first_member + i, v->exts + m->ext_off, m->ext_len,
                                    m->size, m->crc))
            return 0;
    }
    return 1;
}

/* --resume: an existing shard is kept when it is sound as pack keeps one
 * (io/emit.c: its index agrees with the file, CRC32C included); the
 * samples this run would put in it are then checked against it (keys,
 * and resume_same) instead of being written. */
static int try_resume(sk_shard_run *r, const char *path)
{
    if (!sk_emit_shard_sound(r->o->s3, path, &r->resumed)) return 0;
    if (r->target && sk_index_sample_count(r->resumed) != r->target) {
        sk_index_close(r->resumed);
        r->resumed = NULL;
        return 0;
    }
    /* an s3:// shard's headers are not read again: its compression only */
    r->resumed_opts_ok = sk_store_is_s3(path) ? !(sk_index_shard(r->resumed)->flags & SK_INDEX_ZSTD) == !r->o->compress_level
                                  : sk_emit_shard_options_match(path, r->resumed, r->o->compress_level, r->o->mtime);
    r->resumed_at = 0;
    return 1;
}

int sk_shard_run_close_shard(sk_shard_run *r, sk_error *err)
{
    if (!r->open) return SK_OK;
    r->open = 0;
    char path[4200] = "-";
    if (!r->to_stdout)
        SK_GUARD(sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, err));
    r->shard_no++;
    if (r->resumed) { /* resumed */
        sk_index *ix = r->resumed;
        r->resumed = NULL;
        int rc = SK_OK;
        if (r->resumed_at != sk_index_sample_count(ix))
            rc = sk_error_set(err, SK_E_INPUT, "%s: --resume: the shard holds %llu samples, this "
                              "run puts %llu in it; remove it or run without --resume", path,
                              (unsigned long long)sk_index_sample_count(ix),
                              (unsigned long long)r->resumed_at);
        for (uint64_t i = 0; !rc && i < sk_index_member_count(ix); i++) {
            sk_member_ref m;
            if (!(rc = sk_index_member(ix, i, &m, err)))
                rc = sk_manifest_count_ext(r->man, m.ext, m.ext_len, 1, err);
        }
        sk_key_range kr = {0};
        if (!rc && sk_index_sample_count(ix))
            rc = sk_index_key_bounds(ix, (const char **)&kr.first, &kr.first_len,
                                     (const char **)&kr.last, &kr.last_len, err);
        if (!rc) rc = add_to_manifest(r, path, sk_index_shard(ix), r->resumed_at, &kr, err);
        sk_index_close(ix);
        r->st.shards_resumed++;
        return rc;
    }
    sk_index_shard_info info;
    SK_GUARD(out_sync(r, err));
    sk_key_range kr = {0};
    if (!r->to_stdout) SK_GUARD(sk_index_builder_key_range(r->out.index, &kr, err));
    int rc = sk_shard_out_finish(&r->out, &info, err);
    if (!rc && r->to_stdout) {
        r->st.output_bytes += info.size;
        r->st.shards++;
        if (r->o->on_shard) r->o->on_shard(r->o->ctx, "-", r->in_shard, info.size);
    } else if (!rc) {
        rc = add_to_manifest(r, path, &info, r->in_shard, &kr, err);
    }
    sk_key_range_free(&kr);
    return rc;
}

int sk_shard_run_open_shard(sk_shard_run *r, sk_error *err)
{
    char path[4200];
    r->in_shard = 0;
    r->open = 1;
    r->opos = 0;
    r->target = 0;
    if (r->o->num_shards) {
        uint64_t n = r->o->num_shards, i = r->shard_no;
        r->target = r->total / n + (i < r->total % n ? 1 : 0);
    }
    if (r->to_stdout)
        return r->o->dry_run ? begin_counted(r, "stdout", err) : sk_shard_out_begin_fd(&r->out, 1, "stdout", err);
    SK_GUARD(sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, err));
    if (r->o->resume && try_resume(r, path)) return SK_OK;
    return r->o->dry_run ? begin_counted(r, path, err) : sk_shard_out_begin(&r->out, path, err);
}

/* Writes one sample, rolling over to a new shard first when it is due. */
int sk_shard_run_emit(sk_shard_run *r, const struct sview *v, sk_error *err)
{
    if (r->open && !r->to_stdout) {
        int roll;
        if (r->o->num_shards) roll = r->in_shard >= r->target && r->shard_no + 1 < r->o->num_shards;
        else if (r->resumed) roll = r->resumed_at >= sk_index_sample_count(r->resumed);
        else roll = sk_emit_rolls(r->max_size, r->max_count, 0, r->opos, r->in_shard, v->len);
        if (roll) SK_GUARD(sk_shard_run_close_shard(r, err));
    }
    if (!r->open) SK_GUARD(sk_shard_run_open_shard(r, err));
    r->in_shard++;
    r->st.samples++;
    r->st.members += v->nm;
    if (r->resumed) { /* resuming: check instead of write */
        sk_sample_ref s;
        int ok = r->resumed_at < sk_index_sample_count(r->resumed) &&
                 !sk_index_sample(r->resumed, r->resumed_at, &s, NULL) && s.key_len == v->klen &&
                 !memcmp(s.key, v->key, v->klen) && resume_same(r, &s, v);
        char path[4200];
        sk_shard_name(r->o->pattern, r->o->start + r->shard_no, path, sizeof path, NULL);
        SK_FAIL_IF(!ok, err, SK_E_INPUT, "%s: --resume: sample %llu is not '%.*s' as this run "
                   "would write it (another run's shard, of other inputs or options); remove "
                   "the shard or run without --resume", path,
                   (unsigned long long)r->resumed_at, (int)v->klen, v->key);
        r->resumed_at++;
        return SK_OK;
    }
    uint64_t off = r->opos;
    if (!r->to_stdout) {
        SK_GUARD(sk_index_add_sample(r->out.index, v->key, v->klen, off, v->len, off, v->len, err));
        for (size_t i = 0; i < v->nm; i++) { /* the record and the count by pack's one rule */
            const struct run_member *m = &v->m[i];
            SK_GUARD(sk_emit_index_member(&r->out, r->man, v->exts + m->ext_off, m->ext_len,
                                          off + m->data_off, m->size, m->hlen, m->crc, err));
        }
    }
    SK_GUARD(out_add(r, v, err));
    r->opos += v->len;
    sk_shard_run_progress(r, 0);
    return SK_OK;
}
/* need bytes at the end of the buffer being filled (plain output: they
 * are then queued from there by out_add), else in a scratch buffer. */
int sk_shard_run_out_reserve(sk_shard_run *r, size_t need, unsigned char **p, sk_error *err)
{
    struct obuf *b = &r->ob[r->cur];
    if (!r->q) {
        SK_GUARD(sk_shard_run_out_claim(r, r->cur, need, err));
        *p = b->p;
        return SK_OK;
    }
    if (b->map || b->len + need > b->cap) {
        SK_GUARD(sk_shard_run_out_flush(r, err));
        r->cur ^= 1;
        SK_GUARD(sk_shard_run_out_claim(r, r->cur, need > OUT_BUF ? need : OUT_BUF, err));
        b = &r->ob[r->cur];
    }
    *p = b->p + b->len;
    b->len += need;
    return SK_OK;
}
