/*
 * indexer.c - builds the sidecar index of a shard that anyone made: a plain
 * .tar, a .tar.gz (or any filter libarchive reads) or a .tar.zst, told apart
 * by magic bytes, not names.  Members are grouped into samples by the
 * WebDataset rule (key up to the first dot of the basename, extension
 * lowercased, a sample = a run of adjacent members with one key).
 *
 * Two ways to read a plain tar:
 *   default  one sequential pass reads every byte once, giving each
 *            member's CRC32C and the whole-shard CRC32C (CRC32C runs at
 *            several GB/s, so this costs about one read of the file);
 *   --fast   pread of the header blocks only (and the small members'
 *            data that lies between them), so it runs at header speed;
 *            CRCs are 0 and the index says SK_INDEX_NO_CRC.
 * Compressed shards are always streamed (the data must be decompressed to
 * find the next header), so they always get CRCs.  For .tar.zst with a
 * zstd seekable-format seek table, each sample records the compressed
 * frames that hold it; otherwise stored_offset 0 / stored_span = file size
 * ("stream from the start").
 */
#include "format/format.h"
#include "format/shard_stream.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* ------------------------------------------------------------ pread source */

struct pread_src {
    int fd;
    const char *path;
    unsigned char win[4096]; /* headers of small members share one read */
    uint64_t win_off;
    size_t win_len;
};

static int pread_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct pread_src *p = ctx;
    if (pos >= p->win_off && pos + n <= p->win_off + p->win_len) {
        memcpy(buf, p->win + (pos - p->win_off), n);
        *got = n;
        return SK_OK;
    }
    if (n >= sizeof p->win) return sk_stream_pread(p->fd, pos, buf, n, got, p->path, err);
    SK_GUARD(sk_stream_pread(p->fd, pos, p->win, sizeof p->win, &p->win_len, p->path, err));
    p->win_off = pos;
    *got = p->win_len < n ? p->win_len : n;
    memcpy(buf, p->win, *got);
    return SK_OK;
}

/* The header source of --fast: pread of a window starting at the header
 * asked for, as long as the last runs of small members needed.  In a shard
 * of samples like (small.cls, big.jpg, small.json), the read at the json
 * header covers the json, the next cls and the next jpg header, so a sample
 * costs one system call, whether that run is 2.5 KiB (GNU tar) or 5.5 KiB
 * (a pax header per member, as WebDataset writes).  Header blocks are lent
 * to the tar walker from the window (peek_at), not copied again.
 *
 * Sizing: the kernel's copy out of the page cache is the biggest single
 * cost of the walk (the page cache is cold in the CPU caches), so every
 * byte of window past the last header used is wasted work, while a window
 * too short costs a second system call.  The window is the longest of the
 * last HDR_RUNS runs (a run: the bytes from a window's start to the end of
 * the last header read before the walk skips a member bigger than
 * HDR_GAP), so shards whose small members keep one size read exactly what
 * they use (2.5 KiB a sample on the benchmark shards, where a fixed 1 KiB
 * of slack used to be read too), and varying ones what the longest recent
 * sample needed; a run longer than that reads on with a doubled window (up
 * to 64 KiB, reached only when members are tiny).  Not mmap: it measured
 * twice as slow (fault-around maps, and later unmaps, mostly data pages).
 * Tried again (2026-11-27) as a mapping of the whole shard walked where
 * mincore said its pages were cached, with the next header prefetched
 * while a member was indexed: 1.22x the CPU of this path (-j 1, the
 * benchmark shards).  The copy's cache misses move to the walker's first
 * touch of each header, and mincore, page faults and munmap come on top;
 * docs/benchmarks.md, "index --fast on a quiet machine". */
#define HDR_WIN_MIN 1024u
#define HDR_WIN_START 4096u
#define HDR_WIN_MAX (64u << 10)
#define HDR_RUNS 8
#define FAST_S3_PROBE 8                /* windows fetched before deciding */
#define FAST_S3_MIN ((uint64_t)4 << 20) /* bytes of shard a GET must pass over */
#define HDR_GAP (4u * SK_TAR_BLOCK) /* a skip this short (a small member's data)
                                     * does not end a run */

/* Cold cache (docs/index.md, "Cold"): each window is first read with
 * RWF_NOWAIT, which costs nothing when the page cache holds it (warm: one
 * pread per run, as before) and fails when it does not.  From the first
 * miss on, a shard whose header runs lie closer together than COLD_DENSE
 * on average is read ahead: posix_fadvise(WILLNEED) keeps COLD_AHEAD bytes
 * past the walk requested, in COLD_CHUNK steps, so the disk streams the
 * file with many requests in flight while the walk still copies only
 * headers.  Without it each window's miss is a synchronous read (the
 * kernel's own readahead follows a walk with gaps only in part), and the
 * walk was slower than the full index's plain sequential read.  Where runs
 * are far apart (big members: video), one read per run costs less than
 * reading the data between them, so nothing is read ahead: the kernel
 * reads what the window asks for. */
#define COLD_AHEAD ((uint64_t)32 << 20)
#define COLD_CHUNK ((uint64_t)4 << 20)
#define COLD_DENSE ((uint64_t)256 << 10)
#define COLD_RUNS 8 /* runs seen before their spacing decides */
struct hdr_src {
    int fd;
    const char *path;
    /* instead of pread of fd when set: an S3 object's ranged GETs */
    int (*read_at)(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err);
    void *read_ctx;
    uint64_t gets;   /* windows fetched by read_at */
    int gave_up;     /* the walk costs more round trips than streaming would */
    unsigned char *win;
    uint64_t win_off;
    size_t win_len, want;
    uint64_t run_off;  /* where the current run of contiguous windows began */
    uint64_t used_end; /* end of the furthest read served from the window */
    size_t runs[HDR_RUNS]; /* lengths of the last runs, a ring */
    unsigned run_i;
    /* cold cache (local files only) */
    uint64_t size;   /* the file's, to tell a short read at its end from a miss */
    uint64_t ra_end; /* read ahead (WILLNEED) up to here */
    uint64_t nruns;  /* runs ended so far, for their mean spacing */
    int no_nowait;   /* RWF_NOWAIT refused (an old kernel, a file system without it) */
    int cold;        /* a window was not in the page cache */
};

/* A run ended (the walk skips more than HDR_GAP): its length sizes the
 * next windows. */
static void hdr_run_end(struct hdr_src *h, uint64_t next)
{
    uint64_t run = sk_tar_pad(h->used_end - h->run_off);
    size_t w = 0;
    h->runs[h->run_i++ % HDR_RUNS] = run > HDR_WIN_MAX ? HDR_WIN_MAX : (size_t)run;
    for (unsigned i = 0; i < HDR_RUNS; i++) w = h->runs[i] > w ? h->runs[i] : w;
    h->want = w < HDR_WIN_MIN ? HDR_WIN_MIN : w;
    h->run_off = h->used_end = next;
    h->nruns++;
}

/* Cold: keeps COLD_AHEAD bytes past pos requested from the disk, when the
 * runs seen so far are dense enough for reading everything to pay. */
static void hdr_read_ahead(struct hdr_src *h, uint64_t pos)
{
    if (h->nruns < COLD_RUNS || pos / h->nruns > COLD_DENSE) return;
    uint64_t to = pos < h->size && h->size - pos > COLD_AHEAD ? pos + COLD_AHEAD : h->size;
    if (h->ra_end < pos) h->ra_end = pos;
    while (h->ra_end < to && (to - h->ra_end >= COLD_CHUNK || to == h->size)) {
        uint64_t n = to - h->ra_end < COLD_CHUNK ? to - h->ra_end : COLD_CHUNK;
        /* advice only: a failure costs speed, not correctness */
        (void)posix_fadvise(h->fd, (off_t)h->ra_end, (off_t)n, POSIX_FADV_WILLNEED);
        h->ra_end += n;
    }
}

/* A window from the local file: tried without waiting first (see
 * COLD_AHEAD); a miss switches the shard to reading ahead, and the rest of
 * the window is read as usual. */
static int hdr_pread(struct hdr_src *h, uint64_t pos, size_t n, size_t *got, sk_error *err)
{
    size_t have = 0;
    if (h->cold) {
        hdr_read_ahead(h, pos);
    } else if (!h->no_nowait) {
        struct iovec v = {h->win, n};
        ssize_t k = preadv2(h->fd, &v, 1, (off_t)pos, RWF_NOWAIT);
        if (k >= 0 && ((size_t)k == n || pos + (uint64_t)k >= h->size)) {
            *got = (size_t)k;
            return SK_OK;
        }
        if (k > 0) have = (size_t)k;
        if (k < 0 && (errno == EOPNOTSUPP || errno == EINVAL || errno == ENOSYS)) {
            h->no_nowait = 1;
        } else if (k >= 0 || errno == EAGAIN) {
            h->cold = 1;
            hdr_read_ahead(h, pos);
        }
    }
    SK_GUARD(sk_stream_pread(h->fd, pos + have, h->win + have, n - have, got, h->path, err));
    *got += have;
    return SK_OK;
}

/* Makes the window hold at least n bytes at pos (fewer only at the end of
 * the file). */
static int hdr_fill(struct hdr_src *h, uint64_t pos, size_t n, sk_error *err)
{
    if (h->win_len && pos >= h->win_off && pos <= h->used_end + HDR_GAP) {
        /* ran off the end of the window: the run of small members goes on */
        h->want = h->want * 2 > HDR_WIN_MAX ? HDR_WIN_MAX : h->want * 2;
    } else if (h->win_len) {
        hdr_run_end(h, pos);
    } else {
        h->run_off = h->used_end = pos;
    }
    size_t w = h->want > n ? h->want : n;
    h->win_len = 0; /* the window is invalid if the read fails */
    /* A round trip buys a skip over the data after the headers it fetched:
     * worth it over S3 for big samples (video), never for small ones,
     * where a stream of the object is far faster.  After a few windows
     * the walk knows which it is; below FAST_S3_MIN bytes a GET it stops
     * and the shard is streamed instead (sk_index_build). */
    if (h->read_at && ++h->gets >= FAST_S3_PROBE && pos / h->gets < FAST_S3_MIN) {
        h->gave_up = 1;
        return sk_error_set(err, SK_E_IO, "%s: --fast: samples too small for a header walk by "
                            "ranged GETs", h->path);
    }
    SK_GUARD(h->read_at ? h->read_at(h->read_ctx, pos, h->win, w, &h->win_len, err)
                        : hdr_pread(h, pos, w, &h->win_len, err));
    h->win_off = pos;
    return SK_OK;
}

/* n <= HDR_WIN_MAX (the tar walker peeks one block). */
static int hdr_peek_at(void *ctx, uint64_t pos, size_t n, const unsigned char **p, size_t *got,
                       sk_error *err)
{
    struct hdr_src *h = ctx;
    if (pos >= h->win_off && pos + n <= h->win_off + h->win_len) {
        /* a big member inside the window still ends the run, or windows
         * would grow to cover big members too */
        if (pos > h->used_end + HDR_GAP) hdr_run_end(h, pos);
    } else {
        SK_GUARD(hdr_fill(h, pos, n, err));
    }
    size_t have = (size_t)(h->win_off + h->win_len - pos);
    *got = have < n ? have : n;
    *p = h->win + (pos - h->win_off);
    if (pos + *got > h->used_end) h->used_end = pos + *got;
    return SK_OK;
}

/* Copying reads (extended headers' contents) go through the window too. */
static int hdr_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct hdr_src *h = ctx;
    const unsigned char *p;
    /* bigger than any window: a long pax or GNU long-name header */
    if (n > HDR_WIN_MAX)
        return h->read_at ? h->read_at(h->read_ctx, pos, buf, n, got, err)
                          : sk_stream_pread(h->fd, pos, buf, n, got, h->path, err);
    SK_GUARD(hdr_peek_at(ctx, pos, n, &p, got, err));
    memcpy(buf, p, *got);
    return SK_OK;
}

/* Frame holding decompressed position pos (frames sorted, pos < total). */
static size_t frame_at(const sk_zstd_frame *f, size_t n, uint64_t pos)
{
    size_t lo = 0, hi = n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (f[mid].d_off <= pos) lo = mid;
        else hi = mid;
    }
    return lo;
}

/* ------------------------------------------------------------- S3 source */

/* An s3:// shard: its size from a HEAD, the first block and the zstd seek
 * table by ranged GETs, and everything else from one streaming GET; with
 * --fast (plain tar) the header walk's windows are ranged GETs instead, a
 * round trip per run of small members, which pays when samples are large
 * (the data between headers is never fetched) and costs when they are
 * small (docs/index.md). */
struct s3_src {
    sk_s3 *s3;
    char *bucket, *key;
    const char *url;
    uint64_t size;
    sk_s3_stream *st;
};

static int s3_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct s3_src *f = ctx;
    *got = 0;
    if (pos >= f->size || !n) return SK_OK;
    if (n > f->size - pos) n = (size_t)(f->size - pos);
    return sk_s3_get(f->s3, f->bucket, f->key, pos, n, buf, n, got, err);
}

static int s3_stream_read(void *ctx, void *dst, size_t n, size_t *got, sk_error *err)
{
    return sk_s3_stream_read(((struct s3_src *)ctx)->st, dst, n, got, err);
}

/* ------------------------------------------------------------------ build */

struct pending { /* a member of the sample being collected */
    uint64_t data_offset, size;
    uint32_t header_len, crc;
    size_t name_off, name_len, ext_off; /* in the names pool */
};

struct state {
    const char *shard;
    const sk_build_opts *o;
    sk_build_stats *st;
    sk_index_builder *b;
    FILE *dali; /* memory stream: lines follow the header, which needs the count */
    char *dali_buf;
    size_t dali_len;
    /* DALI's samples are wds2idx's, not ours (dali_add) */
    char *dali_base;
    size_t dali_blen, dali_bcap;
    uint64_t dali_samples;
    sk_stream_kind kind;
    uint64_t file_size;
    sk_zstd_frame *frames;
    size_t nframes;
    /* the open sample */
    int open;
    uint64_t s_off, s_end;
    struct pending *pm;
    size_t npm, cap_pm;
    sk_index_member_in *min; /* the open sample's members, for the builder */
    size_t cap_min;
    char *names; /* names of the open sample's members */
    size_t nnames, cap_names;
    /* every sample's key, to find keys split over several samples */
    char *keys;
    size_t nkeys_bytes, cap_keys;
    uint64_t *key_at; /* offset << 20 | len would not fit long keys: two arrays */
    uint32_t *key_len;
    size_t nkeys, cap_key_at;
    int keys_unsorted; /* 0: every key so far greater than the one before */
    int warned_unkeyed, warned_stripped;
};

static void warn(struct state *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct state *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sk_vwarnf(s->o->warn, s->o->warn_ctx, fmt, ap);
    va_end(ap);
}

static int close_sample(struct state *s, sk_error *err)
{
    if (!s->open) return SK_OK;
    s->open = 0;
    const char *key = s->names + s->pm[0].name_off;
    size_t klen = s->pm[0].ext_off - 1;
    uint64_t so = s->s_off, ss = s->s_end - s->s_off;
    if (s->kind != SK_STREAM_PLAIN) {
        so = 0;
        ss = s->file_size;
        if (s->nframes) {
            const sk_zstd_frame *l = &s->frames[s->nframes - 1];
            if (s->s_end <= l->d_off + l->d_size) {
                size_t a = frame_at(s->frames, s->nframes, s->s_off);
                size_t z = frame_at(s->frames, s->nframes, s->s_end - 1);
                so = s->frames[a].c_off;
                ss = s->frames[z].c_off + s->frames[z].c_size - so;
            }
        }
    }
    if (s->npm > s->cap_min)
        SK_GUARD(sk_grow((void **)&s->min, &s->cap_min, s->npm, sizeof *s->min, err));
    for (size_t i = 0; i < s->npm; i++) {
        const struct pending *m = &s->pm[i];
        s->min[i] = (sk_index_member_in){.ext = s->names + m->name_off + m->ext_off,
                                         .ext_len = m->name_len - m->ext_off,
                                         .data_offset = m->data_offset, .size = m->size,
                                         .header_len = m->header_len, .crc32c = m->crc};
    }
    SK_GUARD(sk_index_add_sample_members(s->b, key, klen, s->s_off, s->s_end - s->s_off, so, ss,
                                         s->min, s->npm, err));
    /* remember the key */
    SK_GUARD(sk_grow((void **)&s->keys, &s->cap_keys, s->nkeys_bytes + klen, 1, err));
    size_t cap2 = s->cap_key_at;
    SK_GUARD(sk_grow((void **)&s->key_at, &s->cap_key_at, s->nkeys + 1, sizeof *s->key_at, err));
    if (cap2 != s->cap_key_at) {
        uint32_t *q = sk_xrealloc(s->key_len, s->cap_key_at * sizeof *q, err);
        if (!q) return SK_E_NOMEM;
        s->key_len = q;
    }
    if (s->nkeys && !s->keys_unsorted) { /* still strictly increasing? */
        size_t pl = s->key_len[s->nkeys - 1];
        int d = memcmp(s->keys + s->key_at[s->nkeys - 1], key, pl < klen ? pl : klen);
        s->keys_unsorted = d > 0 || (d == 0 && pl >= klen);
    }
    memcpy(s->keys + s->nkeys_bytes, key, klen);
    s->key_at[s->nkeys] = s->nkeys_bytes;
    s->key_len[s->nkeys] = (uint32_t)klen;
    s->nkeys_bytes += klen;
    s->nkeys++;
    s->st->samples++;
    s->npm = s->nnames = 0;
    return SK_OK;
}

/* DALI's index lists what NVIDIA's own wds2idx lists, so that DALI's
 * sample numbers are the same whichever tool made it: every regular file
 * but "hidden" ones, split at the first dot of the basename, grouped by
 * adjacent equal basenames.  So members WebDataset skips are DALI samples
 * of their own: "__meta__" and "README" (no dot: wds2idx's split gives
 * the basename without its last byte and the whole name as extension). */
static int dali_add(struct state *s, const sk_tar_entry *e, sk_error *err)
{
    const char *nm = e->name;
    size_t n = e->name_len;
    const char *sl = memrchr(nm, '/', n);
    size_t b = sl ? (size_t)(sl - nm) + 1 : 0;
    const char *dp = memchr(nm + b, '.', n - b);
    size_t blen = dp ? (size_t)(dp - nm) : n - 1, eoff = dp ? blen + 1 : 0;
    if (!blen || nm[blen - 1] == '/') return SK_OK; /* wds2idx: a hidden file */
    /* its index is lines of space-separated fields: a space, tab or line
     * break in a name, or an empty field, would shift or split them */
    for (size_t i = 0; i < n; i++)
        if (nm[i] == ' ' || nm[i] == '\t' || nm[i] == '\n' || nm[i] == '\r')
            return sk_error_set(err, SK_E_INPUT,
                                "%s: member at offset %llu: DALI's index cannot hold a name with a %s",
                                s->shard, (unsigned long long)e->header_offset,
                                nm[i] == ' ' ? "space" : nm[i] == '\t' ? "tab" : "line break");
    SK_FAIL_IF(eoff == n, err, SK_E_INPUT, "%s: member '%s' at offset %llu: DALI's index cannot "
               "hold an empty extension", s->shard, nm, (unsigned long long)e->header_offset);
    int same = s->dali_samples && s->dali_blen == blen && !memcmp(s->dali_base, nm, blen);
    if (!same) {
        SK_GUARD(sk_grow((void **)&s->dali_base, &s->dali_bcap, blen, 1, err));
        memcpy(s->dali_base, nm, blen);
        s->dali_blen = blen;
        if (s->dali_samples++) fputc('\n', s->dali);
    }
    fprintf(s->dali, "%s%.*s %llu %llu %.*s", same ? " " : "", (int)(n - eoff), nm + eoff,
            (unsigned long long)e->data_offset, (unsigned long long)e->size, (int)n, nm);
    return SK_OK;
}

static int add_entry(struct state *s, const sk_tar_entry *e, sk_error *err)
{
    size_t klen, eoff;
    if (e->unsafe) { /* "a/../../b": no safe name to give it, as GNU tar refuses it */
        warn(s, "%s: member '%s' at offset %llu has '..' in its name; skipped", s->shard, e->name,
             (unsigned long long)e->header_offset);
        s->st->unkeyed++;
        return SK_OK;
    }
    if (s->dali) SK_GUARD(dali_add(s, e, err));
    if (e->stripped && !s->warned_stripped++)
        warn(s, "%s: member names with a leading '/' or '../' (first: '%s' at offset %llu) are "
             "indexed without it, as GNU tar extracts them", s->shard, e->name,
             (unsigned long long)e->header_offset);
    if (sk_tar_is_meta(e->name, e->name_len)) {
        s->st->meta++;
        return SK_OK;
    }
    if (sk_sample_split(e->name, e->name_len, &klen, &eoff)) {
        /* WebDataset skips names that hold no key; so do we, noisily. */
        if (!s->warned_unkeyed++)
            warn(s, "%s: member '%s' at offset %llu has no key.ext name; skipped", s->shard,
                 e->name, (unsigned long long)e->header_offset);
        s->st->unkeyed++;
        return SK_OK;
    }
    if (s->open) {
        const struct pending *f = &s->pm[0];
        if (f->ext_off - 1 == klen && !memcmp(s->names + f->name_off, e->name, klen)) {
            for (size_t i = 0; i < s->npm; i++) {
                const struct pending *m = &s->pm[i];
                if (!sk_ext_cmp(s->names + m->name_off + m->ext_off, m->name_len - m->ext_off,
                                e->name + eoff, e->name_len - eoff))
                    return sk_error_set(err, SK_E_INPUT,
                                        "%s: member '%s' at offset %llu repeats extension '%s' "
                                        "of sample '%.*s'",
                                        s->shard, e->name, (unsigned long long)e->header_offset,
                                        e->name + eoff, (int)klen, e->name);
            }
        } else {
            SK_GUARD(close_sample(s, err));
        }
    }
    if (!s->open) {
        s->open = 1;
        s->s_off = e->header_offset;
    }
    s->s_end = e->data_offset + sk_tar_pad(e->size);
    if (s->npm == s->cap_pm) /* (checked here: this runs for every member) */
        SK_GUARD(sk_grow((void **)&s->pm, &s->cap_pm, s->npm + 1, sizeof *s->pm, err));
    if (s->nnames + e->name_len > s->cap_names)
        SK_GUARD(sk_grow((void **)&s->names, &s->cap_names, s->nnames + e->name_len, 1, err));
    struct pending *m = &s->pm[s->npm++];
    m->data_offset = e->data_offset;
    m->size = e->size;
    m->header_len = e->header_len;
    m->crc = e->crc32c;
    m->name_off = s->nnames;
    m->name_len = e->name_len;
    m->ext_off = eoff;
    memcpy(s->names + s->nnames, e->name, e->name_len);
    s->nnames += e->name_len;
    s->st->members++;
    return SK_OK;
}

/* Keys that appear as several samples (members of one key not adjacent):
 * WebDataset yields them as separate samples; we index them so, and warn.
 * An open-addressing hash set over the shard's keys: O(n), no sort. */
static int same_key(const struct state *s, size_t i, size_t j)
{
    return s->key_len[i] == s->key_len[j] &&
           !memcmp(s->keys + s->key_at[i], s->keys + s->key_at[j], s->key_len[i]);
}

static int check_split_keys(struct state *s, sk_error *err)
{
    /* Strictly increasing keys (shards written in key order) cannot repeat. */
    if (s->nkeys < 2 || !s->keys_unsorted) return SK_OK;
    size_t cap = 16;
    while (cap < s->nkeys * 2) cap *= 2;
    size_t *slot = sk_xmalloc(cap * sizeof *slot, err);
    unsigned char *counted = calloc(s->nkeys, 1);
    if (!slot || !counted) {
        free(slot);
        free(counted);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < cap; i++) slot[i] = SIZE_MAX;
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < s->nkeys; i++) {
        size_t h = sk_crc32c(0, s->keys + s->key_at[i], s->key_len[i]) & (cap - 1);
        while (slot[h] != SIZE_MAX && !same_key(s, slot[h], i)) h = (h + 1) & (cap - 1);
        if (slot[h] == SIZE_MAX) {
            slot[h] = i;
        } else {
            if (!counted[slot[h]]++) s->st->split_keys++;
            if (first == SIZE_MAX) first = i;
        }
    }
    if (s->st->split_keys)
        warn(s, "%s: %llu key(s) occur as non-adjacent members, indexed as separate samples "
                "(e.g. '%.*s'); lookup by key finds one of them",
             s->shard, (unsigned long long)s->st->split_keys, (int)s->key_len[first],
             s->keys + s->key_at[first]);
    free(slot);
    free(counted);
    return SK_OK;
}

void sk_build_opts_init_sized(sk_build_opts *o, size_t size)
{
    static const sk_build_opts defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

static int build(const char *shard, const sk_build_opts *o, sk_build_stats *st, int *gave_up,
                 sk_error *err)
{
    memset(st, 0, sizeof *st);
    struct s3_src s3 = {.s3 = o->s3, .url = shard};
    int fd = -1;
    if (!strncmp(shard, "s3://", 5)) {
        SK_FAIL_IF(!o->s3, err, SK_E_USAGE, "%s: an s3:// shard needs an S3 client", shard);
        sk_s3_object head;
        int hrc = sk_s3_parse_url(shard, &s3.bucket, &s3.key, err);
        if (!hrc) hrc = sk_s3_head(o->s3, s3.bucket, s3.key, &head, err);
        if (hrc) {
            free(s3.bucket), free(s3.key);
            return hrc;
        }
        s3.size = head.size;
    } else {
        fd = open(shard, O_RDONLY | O_CLOEXEC);
        SK_FAIL_IF(fd < 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s",
                   shard, strerror(errno));
    }
    struct state s = {.shard = shard, .o = o, .st = st};
    sk_stream sm = {0};
    struct pread_src ps = {.fd = fd, .path = shard};
    struct hdr_src hs = {.fd = fd, .path = shard, .want = HDR_WIN_START};
    sk_tar_reader r;
    int rc = SK_OK, tar_rc = SK_OK, have_reader = 0;
    char *idx_path = NULL;
    sk_error tar_err = SK_ERROR_INIT;
    struct stat sb;
    unsigned char first[SK_TAR_BLOCK];
    size_t nfirst = 0;
    if (s3.key) {
        s.file_size = s3.size;
        rc = s3_read_at(&s3, 0, first, sizeof first, &nfirst, err);
    } else if (fstat(fd, &sb) != 0) {
        rc = sk_error_set(err, SK_E_IO, "%s: %s", shard, strerror(errno));
    } else {
        s.file_size = (uint64_t)sb.st_size;
        rc = sk_stream_pread(fd, 0, first, sizeof first, &nfirst, shard, err);
    }
    if (rc) goto cleanup;
    s.kind = sk_stream_detect(first, nfirst);
    sk_index_shard_info info = {.size = s.file_size,
                                .first_block_crc32c = sk_crc32c(0, first, nfirst)};
    int fast = (o->flags & SK_BUILD_FAST) && s.kind == SK_STREAM_PLAIN;
    if (fast && s3.key) hs.read_at = s3_read_at, hs.read_ctx = &s3; /* a ranged GET a window */
    if (o->dali_path && s.kind != SK_STREAM_PLAIN) {
        rc = sk_error_set(err, SK_E_USAGE, "%s: DALI's webdataset reader needs an uncompressed tar",
                          shard);
        goto cleanup;
    }
    if (!(s.b = sk_index_builder_new())) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    if (o->index_path) idx_path = strdup(o->index_path);
    else if (asprintf(&idx_path, "%s.idx", shard) < 0) idx_path = NULL;
    if (!idx_path) {
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        goto cleanup;
    }
    if (o->dali_path) {
        if (!(s.dali = open_memstream(&s.dali_buf, &s.dali_len))) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            goto cleanup;
        }
    }

    sk_tar_src src = {.name = shard, .size = UINT64_MAX};
    if (fast) {
        if (!(hs.win = sk_xmalloc(HDR_WIN_MAX, err))) { rc = SK_E_NOMEM; goto cleanup; }
        src.ctx = &hs;
        src.read_at = hdr_read_at;
        src.peek_at = hdr_peek_at;
        src.size = hs.size = s.file_size;
        info.flags |= SK_INDEX_NO_CRC;
    } else {
        src.ctx = &sm;
        src.read_at = sk_stream_read_at;
        if (s.kind == SK_STREAM_PLAIN) src.size = s.file_size;
        if (s.kind == SK_STREAM_ZSTD) {
            info.flags |= SK_INDEX_ZSTD;
            sk_tar_src fsrc = {.ctx = &ps, .read_at = pread_read_at, .size = s.file_size, .name = shard};
            if (s3.key) fsrc.ctx = &s3, fsrc.read_at = s3_read_at;
            if ((rc = sk_zstd_seek_table(&fsrc, &s.frames, &s.nframes, err))) goto cleanup;
        } else if (s.kind == SK_STREAM_ARCHIVE) {
            info.flags |= SK_INDEX_GZIP;
        }
        if (s3.key) {
            memset(&sm, 0, sizeof sm);
            if ((rc = sk_s3_stream_open(&s3.st, s3.s3, s3.bucket, s3.key, 0, 0, err))) goto cleanup;
            rc = sk_stream_open_src(&sm, s3_stream_read, &s3, shard, s.kind, err);
        } else {
            rc = sk_stream_open(&sm, fd, shard, s.kind, err);
        }
        if (rc) goto cleanup;
    }
    sk_tar_reader_init(&r, &src, fast ? 0 : SK_TAR_CRC);
    have_reader = 1;
    for (;;) {
        sk_tar_entry e;
        if ((tar_rc = sk_tar_next(&r, &e, &tar_err))) break;
        if (e.end) break;
        if ((rc = add_entry(&s, &e, err))) goto cleanup;
    }
    if (tar_rc && tar_rc != SK_E_CORRUPT) {
        /* not a damaged shard but an unsupported one: nothing to write */
        rc = sk_error_set(err, tar_rc, "%s", tar_err.msg);
        goto cleanup;
    }
    if (tar_rc) { /* a damaged shard: no index of part of it is left behind */
        rc = sk_error_set(err, tar_rc, "%s (no index written; %llu samples before it)", tar_err.msg,
                          (unsigned long long)st->samples);
        goto cleanup;
    }
    if ((rc = close_sample(&s, err))) goto cleanup;
    if ((rc = check_split_keys(&s, err))) goto cleanup;
    st->dirs = r.dirs;
    st->links = r.links;
    if (!fast) {
        if ((rc = sk_stream_drain(&sm, err))) goto cleanup;
        if (s3.key && sm.file_read != s3.size) {
            /* replaced between the HEAD and the GET: the offsets are not its */
            rc = sk_error_set(err, SK_E_MISMATCH, "%s: the object changed while it was read "
                              "(%llu bytes, now %llu)", shard, (unsigned long long)s3.size,
                              (unsigned long long)sm.file_read);
            goto cleanup;
        }
        info.crc32c = sm.file_crc;
    }
    st->bytes = s.file_size;
    st->crc32c = info.crc32c;
    st->flags = info.flags;
    if ((rc = sk_index_builder_write(s.b, idx_path, &info, err))) goto cleanup;
    if (s.dali) {
        if (s.dali_samples) fputc('\n', s.dali);
        int bad = fclose(s.dali) != 0;
        s.dali = NULL;
        char head[40];
        int hl = snprintf(head, sizeof head, "v1.2 %llu\n", (unsigned long long)s.dali_samples);
        struct iovec iov[2] = {{head, (size_t)hl}, {s.dali_buf, s.dali_len}};
        if (bad) rc = sk_error_set(err, SK_E_NOMEM, "%s: out of memory", o->dali_path);
        else rc = sk_out_write_iov(o->dali_path, SK_OUT_REGULAR, iov, 2, err);
        if (rc) goto cleanup;
    }
cleanup:
    if (s.dali) fclose(s.dali);
    free(s.dali_buf);
    free(s.dali_base);
    if (have_reader) sk_tar_reader_release(&r);
    sk_stream_close(&sm);
    free(hs.win);
    free(s.frames);
    free(s.pm);
    free(s.min);
    free(s.names);
    free(s.keys);
    free(s.key_at);
    free(s.key_len);
    sk_index_builder_free(s.b);
    free(idx_path);
    if (fd >= 0) close(fd);
    sk_s3_stream_close(s3.st);
    free(s3.bucket), free(s3.key);
    if (gave_up) *gave_up = hs.gave_up;
    return rc;
}

/* The warnings of a --fast try over S3, held until it is known whether
 * that try stands (else the streamed build says them again). */
struct held {
    FILE *f;
    char *buf;
    size_t len;
};

static void hold_warning(void *ctx, const char *msg)
{
    struct held *h = ctx;
    if (h->f) fprintf(h->f, "%s%c", msg, 0);
}

int sk_index_build(const char *shard, const sk_build_opts *opts, sk_build_stats *stats,
                   sk_error *err)
{
    sk_build_opts o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_build_opts", err));
    sk_build_stats dummy, *st = stats ? stats : &dummy;
    if (!(o.flags & SK_BUILD_FAST) || strncmp(shard, "s3://", 5)) return build(shard, &o, st, NULL, err);
    sk_build_opts t = o;
    struct held h = {0};
    h.f = open_memstream(&h.buf, &h.len);
    t.warn = hold_warning;
    t.warn_ctx = &h;
    int gave_up = 0, rc = build(shard, &t, st, &gave_up, err);
    if (h.f) fclose(h.f);
    if (gave_up) {
        o.flags &= ~(unsigned)SK_BUILD_FAST; /* stream it: the index then has CRCs too */
        *err = (sk_error)SK_ERROR_INIT;
        rc = build(shard, &o, st, NULL, err);
    } else {
        for (size_t at = 0; h.buf && at < h.len; at += strlen(h.buf + at) + 1)
            if (o.warn) o.warn(o.warn_ctx, h.buf + at);
    }
    free(h.buf);
    return rc;
}
