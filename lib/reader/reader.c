/*
 * reader.c - the sample side of the reader (public API in shardkit.h,
 * "reader"): the shard list, its split across ranks and workers, the
 * per-epoch shard shuffle, tar headers walked in the ring that
 * reader_io.c fills, members grouped into samples by the WebDataset rule,
 * the sample shuffle buffer, and the resumable state.
 *
 * Determinism is the point of most of this file: the shard order of an
 * epoch depends only on (seed, epoch), a slot's samples on that order, and
 * the shuffle buffer's picks on (seed, epoch, slot) and the sequence of
 * samples entering it.  So a saved state needs only "how many samples were
 * returned" and "where the stream was": the buffer's history is replayed
 * from sample counts without reading data.
 */
#include "reader/reader_raw.h"
#include "reader/reader_global.h"
#include "core/rng.h"
#include "io/io.h"
#include "io/store.h"
#include "format/tar.h"
#include "format/shard_stream.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_BUFFER (4u << 20)
#define DEFAULT_MAX_SAMPLE ((size_t)1 << 30)
#define MAX_PREFETCH 64
#define DEFAULT_READ_AHEAD (8u << 20)

/* ------------------------------------------------------------- shard list */

struct shard_ent {
    char *url, *index; /* index NULL: "<url>.idx" when it exists */
    int64_t samples;   /* -1 until known */
    uint64_t bytes;    /* as the manifest says; 0 when unknown */
    uint32_t crc32c;   /* as the manifest says, when crc_known */
    int crc_known;
    size_t dataset;    /* which url of sk_reader_open it came from */
};

struct cursor;

/* A sample copied out of the ring, for the shuffle buffer: one allocation
 * holding the view, its member array, names and data. */
struct owned {
    sk_reader_sample s;
};

/* Walks one shard's stream: tar headers through the ring, members grouped
 * into samples.  The entry that ends a sample (the next key) is kept as
 * pending, its header parsed but its data not yet asked for. */
struct cursor {
    sk_reader_stream *st;
    size_t shard;
    const char *url;
    sk_tar_reader tr;
    int tr_init, done;
    int size_checked; /* check_size has seen this shard */
    uint64_t ordinal; /* samples taken from this shard so far */
    int has_pending;
    char *pname;
    size_t pname_len, pname_cap;
    uint64_t phdr, pdata, psize;
    struct sk_reader_mem *m;
    size_t nm, cap_m;
    char *names;
    size_t names_len, names_cap;
    sk_reader_member *members;
    size_t cap_members;
    sk_reader_sample view;
    int view_ok; /* view is the sample cursor_next last made, read from st */
    const unsigned char *raw; /* the view's bytes in the ring, from m[0].hdr */
    size_t raw_len;
    /* The reader's cursor only: who may still hold bytes it is done with
     * (sk_reader_tar_out writing them from the ring), and how far the
     * cursor itself would release. */
    const sk_reader_holder *hold;
    uint64_t rel;
    /* the shard's keys so far (a file's, not a stream's: shards back to
     * back may share keys), so that a sample whose members are not
     * adjacent is refused, never handed out in two halves */
    sk_keyseen seen;
    int check_split;
};

struct sk_reader {
    sk_reader_options o;
    char *cache_dir, *s3_endpoint;
    sk_s3 *s3; /* one client for every s3:// shard, made when the list has one */
    sk_store_env env; /* what the shards' stores are opened with (r->s3, the HTTP client) */
    struct shard_ent *sh;
    size_t nsh, cap_sh;
    uint32_t slot, slots;
    uint64_t epoch;
    size_t *order; /* this slot's shards, by position in sh */
    size_t norder, pos;
    int opened; /* streams are open for pos */
    struct cursor cur;
    sk_reader_stream *ahead[MAX_PREFETCH]; /* streams for order[pos+1 ..] */
    size_t nahead;
    struct owned **buf;
    size_t nbuf;
    uint64_t rng;
    struct owned *out;
    uint64_t yielded;
    sk_reader_stats stats;
    int failed;
    sk_error ferr;
    sk_reader_holder holder; /* cur.hold points here when set */
    sk_reader_spare spare;   /* a closed shard's ring, for the next one */
    sk_gread *g;             /* the global order (reader_global.c), when asked */
    sk_gshard *gs;           /* its view of sh */
    size_t url_now;          /* the url add_url is resolving */
    size_t nurls;
};

static void warnf(sk_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warnf(sk_reader *r, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    if (!sk_vwarnf(r->o.warn, r->o.warn_ctx, fmt, ap)) { /* no callback: stderr */
        fputs("shardkit: warning: ", stderr);
        vfprintf(stderr, fmt, copy);
        fputc('\n', stderr);
    }
    va_end(copy);
    va_end(ap);
}

static int add_shard(sk_reader *r, const char *url, const char *index, int64_t samples,
                     sk_error *err)
{
    SK_GUARD(sk_grow((void **)&r->sh, &r->cap_sh, r->nsh + 1, sizeof *r->sh, err));
    struct shard_ent *s = &r->sh[r->nsh];
    s->url = strdup(url);
    s->index = index ? strdup(index) : NULL;
    s->samples = samples;
    s->bytes = 0;
    s->crc32c = 0, s->crc_known = 0;
    s->dataset = r->url_now;
    if (!s->url || (index && !s->index)) {
        free(s->url);
        free(s->index);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    r->nsh++;
    return SK_OK;
}

/* .tar.gz and the other filters libarchive reads (as index and get do). */
static int is_filtered_name(const char *n)
{
    static const char *const ends[] = {".gz", ".tgz", ".bz2", ".tbz2", ".xz", ".txz"};
    size_t len = strlen(n);
    for (size_t i = 0; i < sizeof ends / sizeof *ends; i++) {
        size_t k = strlen(ends[i]);
        if (len > k && !strcmp(n + len - k, ends[i])) return 1;
    }
    return 0;
}

static int is_zstd_name(const char *n)
{
    size_t len = strlen(n);
    return (len > 4 && !strcmp(n + len - 4, ".zst")) || (len > 5 && !strcmp(n + len - 5, ".tzst"));
}

/* One S3 client for the whole list, made when the first s3:// URL needs it. */
static int need_s3(sk_reader *r, sk_error *err)
{
    if (r->s3) return SK_OK;
    /* the caller's (sk_reader_options.s3, with all its settings), else one
     * the env makes and frees */
    SK_GUARD(sk_store_env_need_s3(&r->env, r->s3_endpoint, err));
    r->s3 = r->env.s3;
    return SK_OK;
}

/* Whether url names an S3 object (the store's kinds decide; an unknown
 * scheme is refused there, by name). */
static int is_s3(const char *url)
{
    sk_loc_kind k;
    return sk_store_kind(url, &k, NULL) == SK_OK && k == SK_LOC_S3;
}

/* What the user typed, through the one resolver (io/dataset.c): a shard, a
 * brace pattern, a directory, a manifest, an s3:// prefix, '-' or a FIFO. */
static int add_url(sk_reader *r, const char *url, sk_error *err)
{
    if (is_s3(url)) SK_GUARD(need_s3(r, err));
    sk_ds_opts o = {.flags = SK_DS_MANIFEST | SK_DS_DIR | SK_DS_PREFIX, .s3 = r->s3, .env = &r->env};
    sk_ds_shard *list = NULL;
    size_t n = 0;
    int rc = sk_ds_resolve(url, &o, &list, &n, err);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = add_shard(r, list[i].url, list[i].index_url, list[i].known ? (int64_t)list[i].samples : -1,
                       err);
        if (!rc && list[i].known) {
            r->sh[r->nsh - 1].bytes = list[i].bytes;
            r->sh[r->nsh - 1].crc32c = list[i].crc32c;
            r->sh[r->nsh - 1].crc_known = 1;
        }
    }
    sk_ds_free(list, n);
    return rc;
}

/* ----------------------------------------------------------------- cursor */

static int cur_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct cursor *c = ctx;
    const unsigned char *p;
    size_t a;
    SK_GUARD(sk_reader_stream_need(c->st, pos, n, &p, &a, err));
    memcpy(buf, p, a);
    *got = a;
    return SK_OK;
}

/* Releases the ring up to pos, or less when the holder still holds bytes
 * before it. */
static void cur_release(struct cursor *c, uint64_t pos)
{
    c->rel = pos;
    if (c->hold) {
        uint64_t h = c->hold->held(c->hold->ctx, c->st);
        if (h < pos) pos = h;
    }
    sk_reader_stream_release(c->st, pos);
}

/* Bytes up to end are about to be asked for: when what the holder holds
 * would make that window wider than the ring, it writes them out first
 * (the ring grows only for a sample that needs it, as without a holder). */
static void cur_make_room(struct cursor *c, uint64_t end)
{
    if (!c->hold) return;
    uint64_t h = c->hold->held(c->hold->ctx, c->st);
    if (h == UINT64_MAX || end - h <= sk_reader_stream_cap(c->st)) return;
    c->hold->let_go(c->hold->ctx);
    sk_reader_stream_release(c->st, c->rel);
}

/* Header blocks lent from the ring, not copied (sk_tar_src.peek_at). */
static int cur_peek_at(void *ctx, uint64_t pos, size_t n, const unsigned char **p, size_t *got,
                       sk_error *err)
{
    struct cursor *c = ctx;
    return sk_reader_stream_need(c->st, pos, n, p, got, err);
}

static void cursor_end(struct cursor *c)
{
    /* the holder writes what it holds of this stream before it goes */
    if (c->st && c->hold) c->hold->let_go(c->hold->ctx);
    c->view_ok = 0;
    sk_reader_stream_close(c->st);
    c->st = NULL;
    if (c->tr_init) sk_tar_reader_release(&c->tr);
    c->tr_init = 0;
    c->has_pending = 0;
    c->done = 1;
}

static void cursor_free(struct cursor *c)
{
    cursor_end(c);
    free(c->pname);
    free(c->m);
    free(c->names);
    free(c->members);
    sk_keyseen_free(&c->seen);
    memset(c, 0, sizeof *c);
}

/* Takes over st (closing it on failure) to read shard from tar position pos,
 * its ordinal-th sample. */
/* A stream (stdin, a FIFO, a character device) may carry several shards
 * back to back, and so does a RecordIO channel (one shard a record). */
static int is_stream(const sk_reader *r, const char *url)
{
    struct stat sb;
    return r->o.recordio || !strcmp(url, "-") ||
           (!sk_store_is_remote(url) && stat(url, &sb) == 0 && !S_ISREG(sb.st_mode));
}

static void cursor_begin(struct cursor *c, sk_reader_stream *st, size_t shard, const char *url,
                         uint64_t pos, uint64_t ordinal, int stream)
{
    cursor_end(c);
    c->st = st;
    c->shard = shard;
    c->url = url;
    sk_tar_src src = {.ctx = c, .read_at = cur_read_at, .peek_at = cur_peek_at, .size = UINT64_MAX,
                      .name = url};
    /* a stream's shards back to back are all read, as GNU tar
     * --ignore-zeros does */
    sk_tar_reader_init(&c->tr, &src, stream ? SK_TAR_IGNORE_ZEROS : 0);
    c->tr.pos = pos;
    c->tr_init = 1;
    c->done = 0;
    c->size_checked = 0;
    c->ordinal = ordinal;
    sk_keyseen_reset(&c->seen);
    c->check_split = !stream;
}

/* Adds s to the sample's names (lower: as an extension, lowercased as
 * WebDataset does); *len is what was added, without its NUL. */
static int names_add(struct cursor *c, const char *s, size_t n, int lower, size_t *off,
                     size_t *len, sk_error *err)
{
    size_t room = lower ? SK_EXT_LOWER_MAX(n) : n;
    SK_GUARD(sk_grow((void **)&c->names, &c->names_cap, c->names_len + room + 1, 1, err));
    *off = c->names_len;
    if (lower) n = sk_ext_lower(s, n, c->names + c->names_len);
    else memcpy(c->names + c->names_len, s, n);
    if (len) *len = n;
    c->names[c->names_len + n] = 0;
    c->names_len += n + 1;
    return SK_OK;
}

/* Adds the member named name (its key already checked) to the sample;
 * asks for its data now, so a truncation names this member. */
static int add_member(struct cursor *c, const char *name, size_t ext_off, size_t name_len,
                      uint64_t hdr, uint64_t data, uint64_t size, sk_error *err)
{
    for (size_t i = 0; i < c->nm; i++)
        SK_FAIL_IF(!sk_ext_cmp(c->names + c->m[i].ext_off, c->m[i].ext_len, name + ext_off,
                               name_len - ext_off),
                   err, SK_E_CORRUPT, "%s: sample '%s' has a second '%.*s' member at offset %llu",
                   c->url, c->names, (int)(name_len - ext_off), name + ext_off,
                   (unsigned long long)hdr);
    SK_FAIL_IF(size > SIZE_MAX / 2, err, SK_E_INPUT, "%s: member '%s' at offset %llu is too large",
               c->url, name, (unsigned long long)hdr);
    const unsigned char *p;
    size_t avail;
    cur_make_room(c, data + size);
    SK_GUARD(sk_reader_stream_need(c->st, data, (size_t)size, &p, &avail, err));
    SK_FAIL_IF(avail < size, err, SK_E_CORRUPT,
               "%s: truncated at offset %llu, inside member '%s' (header at offset %llu, %zu of "
               "%llu data bytes present)",
               c->url, (unsigned long long)(data + avail), name, (unsigned long long)hdr, avail,
               (unsigned long long)size);
    SK_GUARD(sk_grow((void **)&c->m, &c->cap_m, c->nm + 1, sizeof *c->m, err));
    struct sk_reader_mem *m = &c->m[c->nm];
    SK_GUARD(names_add(c, name + ext_off, name_len - ext_off, 1, &m->ext_off, &m->ext_len, err));
    m->hdr = hdr;
    m->data = data;
    m->size = size;
    c->nm++;
    return SK_OK;
}

/* The next regular member with a key, or *end. */
static int next_entry(struct cursor *c, sk_tar_entry *e, size_t *key_len, size_t *ext_off,
                      int *end, sk_error *err)
{
    for (;;) {
        SK_GUARD(sk_tar_next(&c->tr, e, err));
        if (e->end) {
            *end = 1;
            return SK_OK;
        }
        if (e->unsafe || sk_tar_is_meta(e->name, e->name_len)) continue; /* unsafe: "a/../b" */
        /* A name without a key is skipped, as WebDataset skips it. */
        if (sk_sample_split(e->name, e->name_len, key_len, ext_off)) continue;
        *end = 0;
        return SK_OK;
    }
}

/* The next sample of the shard into c->view; *got = 0 at its end. */
static int cursor_next(struct cursor *c, int *got, sk_error *err)
{
    *got = 0;
    c->view_ok = 0;
    if (c->done) return SK_OK;
    /* What the previous sample held is free now, up to the pending header. */
    cur_release(c, c->has_pending ? c->phdr : c->tr.pos);
    c->nm = 0;
    c->names_len = 0;
    sk_tar_entry e;
    size_t kl, eo;
    int end;
    if (!c->has_pending) {
        SK_GUARD(next_entry(c, &e, &kl, &eo, &end, err));
        if (end) {
            c->done = 1;
            return SK_OK;
        }
        cur_release(c, e.header_offset);
        size_t k;
        SK_GUARD(names_add(c, e.name, kl, 0, &k, NULL, err));
        SK_GUARD(add_member(c, e.name, eo, e.name_len, e.header_offset, e.data_offset, e.size, err));
    } else {
        size_t k;
        SK_GUARD(sk_sample_split(c->pname, c->pname_len, &kl, &eo));
        SK_GUARD(names_add(c, c->pname, kl, 0, &k, NULL, err));
        c->has_pending = 0;
        SK_GUARD(add_member(c, c->pname, eo, c->pname_len, c->phdr, c->pdata, c->psize, err));
    }
    size_t key_len = kl;
    uint64_t first_hdr = c->m[0].hdr;
    int again = 0;
    if (c->check_split) SK_GUARD(sk_keyseen_add(&c->seen, c->names, key_len, &again, err));
    SK_FAIL_IF(again, err, SK_E_INPUT,
               "%s: sample '%s' at offset %llu: its key came before, with other samples between: "
               "its members are not adjacent, and reading on would hand it out in two halves "
               "(refused; put each sample's members together first: GNU tar --sort=name, or "
               "extract and `shardkit pack`; `shardkit index` counts them)",
               c->url, c->names, (unsigned long long)first_hdr);
    for (;;) {
        SK_GUARD(next_entry(c, &e, &kl, &eo, &end, err));
        if (end) {
            c->done = 1; /* this sample is the shard's last */
            break;
        }
        if (kl != key_len || memcmp(e.name, c->names, kl)) {
            if (e.name_len + 1 > c->pname_cap) {
                char *p = sk_xrealloc(c->pname, e.name_len + 1, err);
                if (!p) return SK_E_NOMEM;
                c->pname = p;
                c->pname_cap = e.name_len + 1;
            }
            memcpy(c->pname, e.name, e.name_len + 1);
            c->pname_len = e.name_len;
            c->phdr = e.header_offset;
            c->pdata = e.data_offset;
            c->psize = e.size;
            c->has_pending = 1;
            break;
        }
        SK_GUARD(add_member(c, e.name, eo, e.name_len, e.header_offset, e.data_offset, e.size, err));
    }
    if (c->nm > c->cap_members) {
        sk_reader_member *q = sk_xrealloc(c->members, c->nm * sizeof *q, err);
        if (!q) return SK_E_NOMEM;
        c->members = q;
        c->cap_members = c->nm;
    }
    /* Pointers only now: the ring may have grown while the sample was read.
     * One look at the whole sample, through its last member's padding
     * (present unless the stream ends inside it): every member's data was
     * there when add_member asked, and stays until released. */
    const struct sk_reader_mem *last = &c->m[c->nm - 1];
    uint64_t data_end = last->data + last->size;
    sk_reader_stream_peek(c->st, first_hdr, (size_t)(last->data + sk_tar_pad(last->size) - first_hdr),
                          &c->raw, &c->raw_len);
    SK_FAIL_IF(c->raw_len < data_end - first_hdr, err, SK_E_USAGE,
               "%s: sample at offset %llu left the ring before it was handed out", c->url,
               (unsigned long long)first_hdr);
    for (size_t i = 0; i < c->nm; i++) {
        c->members[i].ext = c->names + c->m[i].ext_off;
        c->members[i].ext_len = c->m[i].ext_len;
        c->members[i].data = c->raw + (c->m[i].data - first_hdr);
        c->members[i].size = c->m[i].size;
    }
    c->view.key = c->names;
    c->view.key_len = key_len;
    c->view.shard_url = c->url;
    c->view.shard = c->shard;
    c->view.ordinal = c->ordinal++;
    c->view.offset = first_hdr;
    c->view.nmembers = c->nm;
    c->view.members = c->members;
    c->view_ok = 1;
    *got = 1;
    return SK_OK;
}

/* ---------------------------------------------------- positions in shards */

static const char *index_path(sk_reader *r, size_t s, char *buf, size_t cap)
{
    if (r->sh[s].index) return r->sh[s].index;
    snprintf(buf, cap, "%s.idx", r->sh[s].url);
    return buf;
}

/* Where to start reading shard s to get its sample k: through its index
 * when it has one (*skip = 0), else from the start (*skip = k samples to
 * walk past).  *skip_to: a tar position to discard up to (compressed). */
struct start {
    uint64_t raw, tar, skip_to, skip;
    int at_end;
};

static int locate(sk_reader *r, size_t s, uint64_t k, struct start *out, sk_error *err)
{
    memset(out, 0, sizeof *out);
    if (k == 0) return SK_OK;
    char buf[4096];
    const char *ip = index_path(r, s, buf, sizeof buf);
    sk_index *ix = NULL;
    /* RecordIO: an index's offsets are not offsets of the stored bytes */
    if (r->o.recordio || sk_store_is_remote(ip) || access(ip, R_OK) != 0) {
        out->skip = k;
        return SK_OK;
    }
    SK_GUARD(sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, err));
    int rc = SK_OK;
    const sk_index_shard_info *in = sk_index_shard(ix);
    struct stat st;
    if (stat(r->sh[s].url, &st) == 0 && (uint64_t)st.st_size != in->size) {
        rc = sk_error_set(err, SK_E_MISMATCH,
                          "%s: index %s does not belong to this shard (%llu bytes, the index "
                          "says %llu)",
                          r->sh[s].url, ip, (unsigned long long)st.st_size,
                          (unsigned long long)in->size);
        goto out;
    }
    if (k >= sk_index_sample_count(ix)) {
        out->at_end = 1;
        goto out;
    }
    sk_sample_ref ref;
    if ((rc = sk_index_sample(ix, k, &ref, err))) goto out;
    if (!(in->flags & (SK_INDEX_ZSTD | SK_INDEX_GZIP))) {
        out->raw = out->tar = ref.offset;
        goto out;
    }
    /* Compressed: decompress from the frame holding the sample when the
     * seek table says where it starts, else from the beginning. */
    out->skip_to = ref.offset;
    if (ref.stored_offset) {
        sk_range_reader rr;
        if (!sk_range_reader_file(&rr, r->sh[s].url, NULL)) {
            sk_tar_src fs = {.ctx = rr.ctx, .read_at = rr.read_at, .size = rr.size,
                             .name = r->sh[s].url};
            sk_zstd_frame *fr = NULL;
            size_t nf = 0;
            if (!sk_zstd_seek_table(&fs, &fr, &nf, NULL))
                for (size_t i = 0; i < nf; i++)
                    if (fr[i].c_off == ref.stored_offset) {
                        out->raw = fr[i].c_off;
                        out->tar = fr[i].d_off;
                        break;
                    }
            free(fr);
            rr.close(rr.ctx);
        }
    }
out:
    sk_index_close(ix);
    return rc;
}

/* What a local shard file holds, by its first bytes (sk_stream_detect, the
 * one detection every reader uses), whatever its name says: a .tar may be
 * a bzip2 or lzip tar, as index and verify find.  Anything but a regular
 * file (a FIFO must not be opened twice) is left to the stream's sniff. */
static void content_kind(const char *url, int *zstd, int *filtered)
{
    struct stat sb;
    if (sk_store_is_remote(url) || stat(url, &sb) != 0 || !S_ISREG(sb.st_mode)) return;
    int fd = open(url, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return; /* the stream's own open says why */
    unsigned char b[SK_TAR_BLOCK];
    size_t got = 0;
    sk_error e = SK_ERROR_INIT;
    if (!sk_stream_pread(fd, 0, b, sizeof b, &got, url, &e) && got) {
        sk_stream_kind k = sk_stream_detect(b, got);
        *zstd = k == SK_STREAM_ZSTD;
        *filtered = k == SK_STREAM_ARCHIVE;
    }
    close(fd);
}

static int open_stream(sk_reader *r, size_t s, const struct start *at, sk_reader_stream **out,
                       sk_error *err)
{
    const char *url = r->sh[s].url;
    int zstd = is_zstd_name(url), filtered = is_filtered_name(url);
    content_kind(url, &zstd, &filtered);
    /* an object has no first bytes to look at before its GET: its stream
     * looks (not when resuming inside it, where the name must do) */
    int sniff = is_stream(r, url) || (sk_store_is_remote(url) && at->raw == 0 && !zstd);
    sk_reader_stream_opts so = {
        .url = r->sh[s].url,
        .raw_offset = at->raw,
        .tar_base = at->tar,
        .zstd = zstd,
        .filtered = filtered,
        .recordio = r->o.recordio,
        .inline_read = r->o.read_inline,
        .spare = &r->spare,
        .sniff = sniff, /* no name or no bytes to go by */
        .buffer_size = r->o.buffer_size,
        .max_window = r->o.max_sample + 2 * SK_TAR_HEADER_MAX,
        .env = &r->env,
        .cache_dir = r->cache_dir,
        .cache_size = r->o.cache_size,
        .crc32c = r->sh[s].crc32c,
        .crc_known = r->sh[s].crc_known,
    };
    return sk_reader_stream_open(out, &so, err);
}

/* Points c at shard s's sample k (a stream given, or opened here). */
static int cursor_at(sk_reader *r, struct cursor *c, size_t s, uint64_t k,
                     sk_reader_stream *given, sk_error *err)
{
    struct start at = {0};
    if (!given) SK_GUARD(locate(r, s, k, &at, err));
    sk_reader_stream *st = given;
    if (!st) SK_GUARD(open_stream(r, s, &at, &st, err));
    cursor_begin(c, st, s, r->sh[s].url, at.tar, k - at.skip, is_stream(r, r->sh[s].url));
    if (at.at_end) {
        c->done = 1;
        c->ordinal = k;
        return SK_OK;
    }
    if (at.skip_to > at.tar) {
        uint64_t reached;
        SK_GUARD(sk_reader_stream_skip_to(st, at.skip_to, &reached, err));
        SK_FAIL_IF(reached < at.skip_to, err, SK_E_CORRUPT,
                   "%s: ends at tar offset %llu, before sample %llu (offset %llu) its index "
                   "names",
                   r->sh[s].url, (unsigned long long)reached, (unsigned long long)k,
                   (unsigned long long)at.skip_to);
        c->tr.pos = at.skip_to;
    }
    for (uint64_t i = 0; i < at.skip; i++) {
        int got;
        SK_GUARD(cursor_next(c, &got, err));
        if (!got) break;
    }
    return SK_OK;
}

/* Samples in shard s: the manifest's count, the index's, or a walk. */
static int count_samples(sk_reader *r, size_t s, uint64_t *n, sk_error *err)
{
    if (r->sh[s].samples >= 0) {
        *n = (uint64_t)r->sh[s].samples;
        return SK_OK;
    }
    char buf[4096];
    const char *ip = index_path(r, s, buf, sizeof buf);
    if (!r->o.recordio && !sk_store_is_remote(ip) && access(ip, R_OK) == 0) {
        sk_index *ix;
        SK_GUARD(sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, err));
        *n = sk_index_sample_count(ix);
        sk_index_close(ix);
    } else {
        struct cursor c = {0};
        int rc = cursor_at(r, &c, s, 0, NULL, err), got = 1;
        *n = 0;
        while (!rc && got && !(rc = cursor_next(&c, &got, err))) *n += (uint64_t)got;
        cursor_free(&c);
        SK_GUARD(rc);
    }
    r->sh[s].samples = (int64_t)*n;
    return SK_OK;
}

/* ------------------------------------------------------------ owned copies */

static size_t al16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

static struct owned *own(const sk_reader_sample *v, sk_error *err)
{
    size_t need = al16(sizeof(struct owned)) + al16(v->nmembers * sizeof(sk_reader_member)) +
                  al16(v->key_len + 1);
    for (size_t i = 0; i < v->nmembers; i++)
        need += al16(v->members[i].ext_len + 1) + al16((size_t)v->members[i].size);
    unsigned char *p = sk_xmalloc(need, err);
    if (!p) return NULL;
    struct owned *o = (struct owned *)p;
    size_t at = al16(sizeof *o);
    o->s = *v;
    sk_reader_member *m = (sk_reader_member *)(p + at);
    at += al16(v->nmembers * sizeof *m);
    memcpy(p + at, v->key, v->key_len + 1);
    o->s.key = (char *)p + at;
    at += al16(v->key_len + 1);
    for (size_t i = 0; i < v->nmembers; i++) {
        m[i] = v->members[i];
        memcpy(p + at, v->members[i].ext, v->members[i].ext_len + 1);
        m[i].ext = (char *)p + at;
        at += al16(v->members[i].ext_len + 1);
        if (v->members[i].size) memcpy(p + at, v->members[i].data, (size_t)v->members[i].size);
        m[i].data = p + at;
        at += al16((size_t)v->members[i].size);
    }
    o->s.members = m;
    return o;
}

/* ------------------------------------------------------------------ epoch */

static void close_streams(sk_reader *r)
{
    cursor_end(&r->cur);
    for (size_t i = 0; i < r->nahead; i++) sk_reader_stream_close(r->ahead[i]);
    r->nahead = 0;
    for (size_t i = 0; i < r->nbuf; i++) free(r->buf[i]);
    r->nbuf = 0;
    free(r->out);
    r->out = NULL;
}

/* The slot's shards for this epoch: the whole list shuffled by (seed,
 * epoch) when asked, then every slots-th from position slot. */
static int plan_epoch(sk_reader *r, uint64_t epoch, sk_error *err)
{
    close_streams(r);
    size_t *perm = sk_xmalloc((r->nsh ? r->nsh : 1) * sizeof *perm, err);
    if (!perm) return SK_E_NOMEM;
    for (size_t i = 0; i < r->nsh; i++) perm[i] = i;
    if (r->o.shuffle_shards) {
        uint64_t s = sk_rng_derive(r->o.seed, epoch, 0xffffffffull);
        for (size_t i = r->nsh; i > 1; i--) {
            size_t j = (size_t)(sk_splitmix64(&s) % i), t = perm[i - 1];
            perm[i - 1] = perm[j];
            perm[j] = t;
        }
    }
    r->norder = 0;
    for (size_t i = r->slot; i < r->nsh; i += r->slots) perm[r->norder++] = perm[i];
    free(r->order);
    r->order = perm;
    r->epoch = epoch;
    r->pos = 0;
    r->yielded = 0;
    r->rng = sk_rng_derive(r->o.seed, epoch, r->slot);
    r->failed = 0;
    r->opened = 0;
    return SK_OK;
}

/* Opens the stream at order position p, sample k, and the prefetch behind it. */
static int position(sk_reader *r, size_t p, uint64_t k, sk_error *err)
{
    cursor_end(&r->cur);
    for (size_t i = 0; i < r->nahead; i++) sk_reader_stream_close(r->ahead[i]);
    r->nahead = 0;
    r->pos = p;
    r->opened = 1;
    if (p >= r->norder) return SK_OK;
    SK_GUARD(cursor_at(r, &r->cur, r->order[p], k, NULL, err));
    struct start zero = {0};
    for (size_t q = p + 1; q < r->norder && r->nahead < (size_t)r->o.prefetch; q++)
        SK_GUARD(open_stream(r, r->order[q], &zero, &r->ahead[r->nahead++], err));
    return SK_OK;
}

/* Moves to the next shard of the order: its prefetched stream if any. */
static int advance(sk_reader *r, sk_error *err)
{
    cursor_end(&r->cur);
    r->pos++;
    if (r->pos >= r->norder) return SK_OK;
    if (r->nahead == 0) return position(r, r->pos, 0, err);
    sk_reader_stream *st = r->ahead[0];
    memmove(r->ahead, r->ahead + 1, (r->nahead - 1) * sizeof *r->ahead);
    r->nahead--;
    cursor_begin(&r->cur, st, r->order[r->pos], r->sh[r->order[r->pos]].url, 0, 0,
                 is_stream(r, r->sh[r->order[r->pos]].url));
    size_t q = r->pos + 1 + r->nahead;
    struct start zero = {0};
    if (q < r->norder && r->nahead < (size_t)r->o.prefetch)
        SK_GUARD(open_stream(r, r->order[q], &zero, &r->ahead[r->nahead++], err));
    return SK_OK;
}

static int skippable(int rc)
{
    return rc == SK_E_CORRUPT || rc == SK_E_IO || rc == SK_E_INPUT || rc == SK_E_NOTFOUND ||
           rc == SK_E_NET || rc == SK_E_REMOTE || rc == SK_E_MISMATCH;
}

/* A local shard whose size is not the manifest's is cut short (or was
 * replaced): said when it becomes the current shard, before a byte of it
 * is handed out (a prefetched shard's problem is its own, not the one
 * being read). */
static int check_size(sk_reader *r, size_t s, sk_error *err)
{
    struct stat sb;
    struct shard_ent *sh = &r->sh[s];
    if (r->o.recordio || sk_store_is_remote(sh->url) || stat(sh->url, &sb) || !S_ISREG(sb.st_mode))
        return SK_OK;
    SK_FAIL_IF(sh->bytes && (uint64_t)sb.st_size != sh->bytes, err, SK_E_CORRUPT,
               "%s: %llu bytes, its manifest says %llu: the shard is truncated or not the one the "
               "manifest lists", sh->url, (unsigned long long)sb.st_size, (unsigned long long)sh->bytes);
    if (sh->bytes) return SK_OK;
    /* no manifest: its index, when there is one, promises as much (its
     * header alone: O(1)) */
    char buf[4200];
    sk_index *ix;
    const char *ip = index_path(r, s, buf, sizeof buf);
    if (sk_store_is_remote(ip) || sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, NULL)) return SK_OK;
    uint64_t want = sk_index_shard(ix)->size;
    if (sh->samples < 0) sh->samples = (int64_t)sk_index_sample_count(ix);
    sk_index_close(ix);
    SK_FAIL_IF((uint64_t)sb.st_size != want, err, SK_E_CORRUPT,
               "%s: %llu bytes, its index %s says %llu: the shard is truncated or not the one indexed",
               sh->url, (unsigned long long)sb.st_size, ip, (unsigned long long)want);
    return SK_OK;
}

/* The next sample of the slot's stream into *v (the cursor's view), or
 * *v = NULL at the end of the epoch's shards. */
static int pull(sk_reader *r, const sk_reader_sample **v, sk_error *err)
{
    *v = NULL;
    while (r->pos < r->norder) {
        int got = 0, rc = SK_OK;
        sk_error e; /* set by whatever fails; 1 KiB, so not cleared per sample */
        e.code = 0;
        e.msg[0] = 0;
        if (!r->opened) rc = position(r, r->pos, 0, &e);
        if (!rc && r->cur.st && !r->cur.size_checked) {
            r->cur.size_checked = 1;
            rc = check_size(r, r->order[r->pos], &e);
        }
        if (!rc && r->cur.st) rc = cursor_next(&r->cur, &got, &e);
        /* the shard ended: as many samples as its manifest or index
         * promised, or it was cut short (a shard shortened at a sample
         * boundary is a valid tar; only the count tells) */
        const struct shard_ent *sh = &r->sh[r->order[r->pos]];
        if (!rc && !got && r->cur.st && sh->samples >= 0 && r->cur.ordinal != (uint64_t)sh->samples)
            rc = sk_error_set(&e, SK_E_CORRUPT, "%s: %llu samples, where its %s promises %lld: the shard "
                              "is truncated or not the one indexed", sh->url,
                              (unsigned long long)r->cur.ordinal, sh->index ? "index" : "manifest",
                              (long long)sh->samples);
        if (rc) {
            if (!r->o.skip_errors || !skippable(rc)) {
                if (err) *err = e;
                return rc;
            }
            warnf(r, "%s; skipping the rest of %s", e.msg, r->sh[r->order[r->pos]].url);
            r->stats.shards_skipped++;
        } else if (got) {
            r->cur.view.position = UINT64_MAX; /* no global order here */
            r->cur.view.dataset = r->sh[r->order[r->pos]].dataset;
            *v = &r->cur.view;
            return SK_OK;
        } else {
            r->stats.shards_done++;
        }
        if (r->cur.st) {
            int cs = sk_reader_stream_cache_state(r->cur.st);
            r->stats.cache_hits += cs == 1;
            r->stats.cache_misses += cs == 0;
            r->stats.ring_grows += sk_reader_stream_grows(r->cur.st);
        }
        SK_GUARD(advance(r, err));
    }
    return SK_OK;
}

/* ------------------------------------------------------------------ public */

static const sk_reader_options reader_defaults = {
    .struct_size = sizeof(sk_reader_options),
    .rank = -1, .world_size = -1, .worker = -1, .num_workers = -1,
    .prefetch = 2, .buffer_size = DEFAULT_BUFFER, .max_sample = DEFAULT_MAX_SAMPLE,
    .shuffle_window = 8, .batch_size = 1, .read_ahead = DEFAULT_READ_AHEAD};

void sk_reader_options_init_sized(sk_reader_options *o, size_t size)
{
    sk_options_init(o, size, &reader_defaults, sizeof reader_defaults);
}

static int env_int(const char *name, int dflt, int *out, sk_error *err)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        *out = dflt;
        return SK_OK;
    }
    char *end;
    long x = strtol(v, &end, 10);
    SK_FAIL_IF(*end || x < 0 || x > 1000000, err, SK_E_USAGE,
               "environment variable %s=%s is not a non-negative integer", name, v);
    *out = (int)x;
    return SK_OK;
}

/* The global order over the resolved shard list (reader_global.c). */
static int open_global(sk_reader *r, sk_error *err)
{
    const sk_reader_options *o = &r->o;
    SK_FAIL_IF(o->shuffle_buffer > 1, err, SK_E_USAGE,
               "global_order shuffles samples itself (shuffle_window); shuffle_buffer must be 0");
    SK_FAIL_IF(o->recordio, err, SK_E_USAGE,
               "global_order reads through indexes; a RecordIO channel is read as a stream");
    SK_FAIL_IF(o->batch_size < 0, err, SK_E_USAGE, "batch_size %d is negative", o->batch_size);
    r->gs = calloc(r->nsh, sizeof *r->gs);
    SK_FAIL_IF(!r->gs, err, SK_E_NOMEM, "out of memory");
    int remote = 0;
    for (size_t i = 0; i < r->nsh; i++) {
        SK_FAIL_IF(is_stream(r, r->sh[i].url), err, SK_E_USAGE,
                   "%s: a stream; global_order reads shards at offsets (read it without "
                   "global_order)", r->sh[i].url);
        remote |= sk_store_is_remote(r->sh[i].url);
        r->gs[i] = (sk_gshard){.url = r->sh[i].url, .index = r->sh[i].index,
                               .samples = r->sh[i].samples, .bytes = r->sh[i].bytes,
                               .dataset = r->sh[i].dataset};
    }
    sk_gread_opts go = {
        .shards = r->gs, .nshards = r->nsh, .env = &r->env,
        .rank = (uint32_t)o->rank, .ranks = (uint32_t)o->world_size,
        .worker = (uint32_t)o->worker, .workers = (uint32_t)o->num_workers,
        .batch = o->batch_size > 0 ? (uint32_t)o->batch_size : 1,
        .seed = o->seed, .shuffle = o->shuffle_shards,
        .window = o->shuffle_window ? o->shuffle_window : 8,
        .read_ahead = o->read_ahead ? o->read_ahead : DEFAULT_READ_AHEAD,
        .max_gap = o->max_gap ? o->max_gap : remote ? (1u << 20) : (64u << 10),
        .max_sample = o->max_sample,
        .mix = o->proportion || o->repeat || o->choose || o->samples_per_epoch,
        .ndatasets = r->nurls, .proportion = o->proportion, .repeat = o->repeat,
        .choose = o->choose, .samples_per_epoch = o->samples_per_epoch,
    };
    return sk_gread_open(&r->g, &go, o->epoch, err);
}

int sk_reader_open(sk_reader **out, const char *const *urls, size_t n,
                   const sk_reader_options *opts, sk_error *err)
{
    *out = NULL;
    sk_reader *r = calloc(1, sizeof *r);
    SK_FAIL_IF(!r, err, SK_E_NOMEM, "out of memory");
    sk_store_env_init(&r->env, NULL);
    int orc = sk_options_take(&r->o, sizeof r->o, opts, &reader_defaults, "sk_reader_options", err);
    sk_reader_options *o = &r->o;
    r->env.s3 = o->s3; /* the caller's: a plain one serves http(s):// with its settings */
    int rc = orc;
    if (!rc && o->rank < 0) rc = env_int("RANK", 0, &o->rank, err);
    if (!rc && o->world_size < 0) rc = env_int("WORLD_SIZE", 1, &o->world_size, err);
    if (!rc && o->worker < 0) rc = env_int("WORKER", 0, &o->worker, err);
    if (!rc && o->num_workers < 0) rc = env_int("NUM_WORKERS", 1, &o->num_workers, err);
    if (!rc && (o->world_size < 1 || o->rank >= o->world_size))
        rc = sk_error_set(err, SK_E_USAGE, "rank %d is not below world_size %d", o->rank,
                          o->world_size);
    if (!rc && (o->num_workers < 1 || o->worker >= o->num_workers))
        rc = sk_error_set(err, SK_E_USAGE, "worker %d is not below num_workers %d", o->worker,
                          o->num_workers);
    if (!rc && (o->prefetch < 0 || o->prefetch > MAX_PREFETCH))
        rc = sk_error_set(err, SK_E_USAGE, "prefetch %d is outside 0..%d", o->prefetch,
                          MAX_PREFETCH);
    if (!o->buffer_size) o->buffer_size = DEFAULT_BUFFER;
    if (o->buffer_size < 64 * 1024) o->buffer_size = 64 * 1024;
    if (!o->max_sample) o->max_sample = DEFAULT_MAX_SAMPLE;
    if (!rc && o->cache_dir && !(r->cache_dir = strdup(o->cache_dir)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    o->cache_dir = r->cache_dir;
    r->slots = (uint32_t)(o->world_size * o->num_workers);
    r->slot = (uint32_t)(o->rank * o->num_workers + o->worker);
    if (!rc && o->s3_endpoint && !(r->s3_endpoint = strdup(o->s3_endpoint)))
        rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    o->s3_endpoint = r->s3_endpoint;
    r->nurls = n;
    for (size_t i = 0; !rc && i < n; i++) {
        r->url_now = i;
        rc = add_url(r, urls[i], err);
    }
    if (!rc && r->nsh == 0) rc = sk_error_set(err, SK_E_USAGE, "no shards to read");
    for (size_t i = 0; !rc && !r->s3 && i < r->nsh; i++)
        if (is_s3(r->sh[i].url)) rc = need_s3(r, err);
    if (!rc) rc = plan_epoch(r, o->epoch, err);
    if (!rc && o->global_order) rc = open_global(r, err);
    if (rc) {
        sk_reader_close(r);
        return rc;
    }
    *out = r;
    return SK_OK;
}

void sk_reader_close(sk_reader *r)
{
    if (!r) return;
    sk_gread_close(r->g);
    free(r->gs);
    close_streams(r); /* a holder writes what it holds here */
    if (r->cur.hold) r->holder.detach(r->holder.ctx);
    r->cur.hold = NULL;
    cursor_free(&r->cur);
    sk_reader_spare_free(&r->spare);
    for (size_t i = 0; i < r->nsh; i++) {
        free(r->sh[i].url);
        free(r->sh[i].index);
    }
    free(r->sh);
    free(r->order);
    free(r->buf);
    free(r->cache_dir);
    free(r->s3_endpoint);
    sk_store_env_release(&r->env); /* (its clients: the streams are closed) */
    free(r);
}

static int fail(sk_reader *r, int rc, sk_error *err)
{
    r->failed = rc;
    if (err) r->ferr = *err;
    else sk_error_set(&r->ferr, rc, "%s", sk_code_name(rc));
    return rc;
}

int sk_reader_next(sk_reader *r, const sk_reader_sample **out, sk_error *err)
{
    *out = NULL;
    if (r->failed) {
        if (err) *err = r->ferr;
        return r->failed;
    }
    const sk_reader_sample *v;
    int rc;
    if (r->g) {
        if ((rc = sk_gread_next(r->g, out, err))) return fail(r, rc, err);
    } else if (r->o.shuffle_buffer <= 1) {
        if ((rc = pull(r, &v, err))) return fail(r, rc, err);
        *out = v;
    } else {
        free(r->out);
        r->out = NULL;
        if (!r->buf && !(r->buf = sk_xmalloc(r->o.shuffle_buffer * sizeof *r->buf, err)))
            return fail(r, SK_E_NOMEM, err);
        while (r->nbuf < r->o.shuffle_buffer && r->pos < r->norder) {
            if ((rc = pull(r, &v, err))) return fail(r, rc, err);
            if (!v) break;
            struct owned *o = own(v, err);
            if (!o) return fail(r, SK_E_NOMEM, err);
            r->buf[r->nbuf++] = o;
        }
        if (r->nbuf == 0) return SK_OK;
        size_t j = (size_t)(sk_splitmix64(&r->rng) % r->nbuf);
        r->out = r->buf[j];
        r->buf[j] = r->buf[--r->nbuf];
        *out = &r->out->s;
    }
    if (*out) {
        r->yielded++;
        r->stats.samples++;
        for (size_t i = 0; i < (*out)->nmembers; i++) r->stats.bytes += (*out)->members[i].size;
    }
    return SK_OK;
}

int sk_reader_raw_of(const sk_reader *r, const sk_reader_sample *s, sk_reader_raw *raw)
{
    const struct cursor *c = &r->cur;
    if (s != &c->view || !c->view_ok || !c->st || c->nm != s->nmembers) return 0;
    raw->st = c->st;
    raw->p = c->raw;
    raw->pos = c->m[0].hdr;
    raw->len = c->raw_len;
    raw->m = c->m;
    return 1;
}

void sk_reader_set_holder(sk_reader *r, const sk_reader_holder *h)
{
    if (h) r->holder = *h;
    r->cur.hold = h ? &r->holder : NULL;
}

int sk_reader_start_epoch(sk_reader *r, uint64_t epoch, sk_error *err)
{
    SK_GUARD(plan_epoch(r, epoch, err));
    return r->g ? sk_gread_plan(r->g, epoch, err) : SK_OK;
}

size_t sk_reader_shard_count(const sk_reader *r)
{
    return r->nsh;
}

size_t sk_reader_slot_shards(const sk_reader *r)
{
    return r->norder;
}

const char *sk_reader_shard_url(const sk_reader *r, size_t i)
{
    return i < r->nsh ? r->sh[i].url : NULL;
}

void sk_reader_get_stats(const sk_reader *r, sk_reader_stats *st)
{
    *st = r->stats;
}

void sk_reader_get_state(const sk_reader *r, sk_reader_state *st)
{
    memset(st, 0, sizeof *st);
    st->magic = SK_READER_STATE_MAGIC;
    st->version = 1;
    st->slot = r->slot;
    st->slots = r->slots;
    st->shards = r->nsh;
    st->seed = r->o.seed;
    st->epoch = r->epoch;
    st->shuffle_shards = (uint64_t)r->o.shuffle_shards;
    st->shuffle_buffer = r->o.shuffle_buffer;
    st->yielded = r->yielded;
    st->shard_pos = r->pos;
    st->ordinal = r->pos < r->norder ? r->cur.ordinal : 0;
}

/* A sample of the replay: which shard of the order, which ordinal. */
struct ref {
    size_t p;
    uint64_t k;
};

struct replay {
    sk_reader *r;
    size_t p;
    uint64_t k, count; /* count of order[p], when p < norder */
    int counted;
};

static int replay_input(struct replay *rp, struct ref *out, int *got, sk_error *err)
{
    *got = 0;
    while (rp->p < rp->r->norder) {
        if (!rp->counted) {
            SK_GUARD(count_samples(rp->r, rp->r->order[rp->p], &rp->count, err));
            rp->counted = 1;
        }
        if (rp->k < rp->count) {
            out->p = rp->p;
            out->k = rp->k++;
            *got = 1;
            return SK_OK;
        }
        rp->p++;
        rp->k = 0;
        rp->counted = 0;
    }
    return SK_OK;
}

/* Reads sample k of shard s into an owned copy. */
static int read_one(sk_reader *r, size_t s, uint64_t k, struct owned **out, sk_error *err)
{
    struct cursor c = {0};
    int got = 0, rc = cursor_at(r, &c, s, k, NULL, err);
    if (!rc) rc = cursor_next(&c, &got, err);
    if (!rc && !got)
        rc = sk_error_set(err, SK_E_MISMATCH, "%s: has no sample %llu (the saved state says so)",
                          r->sh[s].url, (unsigned long long)k);
    if (!rc && !(*out = own(&c.view, err))) rc = SK_E_NOMEM;
    cursor_free(&c);
    return rc;
}

int sk_reader_restore(sk_reader *r, const sk_reader_state *st, sk_error *err)
{
    SK_FAIL_IF(r->g, err, SK_E_USAGE, "a reader in the global order resumes from its position "
               "(sk_reader_get_position, sk_reader_seek), not from a stream state");
    SK_FAIL_IF(st->magic != SK_READER_STATE_MAGIC || st->version != 1, err, SK_E_USAGE,
               "not a reader state (magic %08x, version %u)", st->magic, st->version);
    SK_FAIL_IF(st->slot != r->slot || st->slots != r->slots || st->shards != r->nsh ||
                   st->seed != r->o.seed || st->shuffle_shards != (uint64_t)r->o.shuffle_shards ||
                   st->shuffle_buffer != r->o.shuffle_buffer,
               err, SK_E_MISMATCH,
               "the saved reader state belongs to another run (slot %u/%u, %llu shards, seed "
               "%llu, shuffle %llu/%llu; this reader: slot %u/%u, %zu shards, seed %llu, "
               "shuffle %d/%zu)",
               st->slot, st->slots, (unsigned long long)st->shards, (unsigned long long)st->seed,
               (unsigned long long)st->shuffle_shards, (unsigned long long)st->shuffle_buffer,
               r->slot, r->slots, r->nsh, (unsigned long long)r->o.seed, r->o.shuffle_shards,
               r->o.shuffle_buffer);
    SK_GUARD(plan_epoch(r, st->epoch, err));
    size_t p = (size_t)st->shard_pos;
    uint64_t k = st->ordinal;
    int rc = SK_OK;
    if (r->o.shuffle_buffer > 1) {
        /* Replay the buffer from sample identities alone. */
        size_t K = r->o.shuffle_buffer;
        struct ref *b = sk_xmalloc(K * sizeof *b, err);
        if (!b) return SK_E_NOMEM;
        size_t nb = 0;
        struct replay rp = {.r = r};
        for (uint64_t y = 0; !rc && y < st->yielded; y++) {
            int got = 1;
            while (!rc && nb < K && got && (rc = replay_input(&rp, &b[nb], &got, err)) == 0)
                nb += (size_t)got;
            if (rc) break;
            if (nb == 0) {
                rc = sk_error_set(err, SK_E_MISMATCH,
                                  "the saved state has %llu samples returned, more than the "
                                  "slot's shards hold",
                                  (unsigned long long)st->yielded);
                break;
            }
            size_t j = (size_t)(sk_splitmix64(&r->rng) % nb);
            b[j] = b[--nb];
        }
        if (!rc && (rp.p != p || (p < r->norder && rp.k != k)))
            rc = sk_error_set(err, SK_E_MISMATCH,
                              "the saved state (shard %zu, sample %llu) disagrees with the "
                              "replay from the shards' sample counts (shard %zu, sample %llu): "
                              "were the shards changed?",
                              p, (unsigned long long)k, rp.p, (unsigned long long)rp.k);
        if (!rc && !(r->buf = r->buf ? r->buf : sk_xmalloc(K * sizeof *r->buf, err)))
            rc = SK_E_NOMEM;
        for (size_t i = 0; !rc && i < nb; i++) {
            struct owned *o;
            rc = read_one(r, r->order[b[i].p], b[i].k, &o, err);
            if (!rc) r->buf[r->nbuf++] = o;
        }
        free(b);
    }
    if (!rc) rc = position(r, p, k, err);
    if (rc) {
        close_streams(r);
        return rc;
    }
    r->yielded = st->yielded;
    return SK_OK;
}

/* ------------------------------------------------- global order: position */

int sk_reader_get_position(const sk_reader *r, sk_reader_position *p, sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    sk_gread_position(r->g, 0, 0, p);
    return SK_OK;
}

int sk_reader_position_at(const sk_reader *r, uint64_t rank_samples, sk_reader_position *p,
                          sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    sk_gread_position(r->g, 1, rank_samples, p);
    return SK_OK;
}

int sk_reader_seek(sk_reader *r, const sk_reader_position *p, sk_error *err)
{
    SK_FAIL_IF(!r->g, err, SK_E_USAGE, "the reader is not in the global order (global_order)");
    r->failed = 0;
    return sk_gread_seek(r->g, p, err);
}

uint64_t sk_reader_epoch_samples(const sk_reader *r)
{
    return r->g ? sk_gread_epoch_samples(r->g) : 0;
}

uint64_t sk_reader_slot_left(const sk_reader *r)
{
    return r->g ? sk_gread_slot_left(r->g) : 0;
}

uint64_t sk_reader_global_reads(const sk_reader *r)
{
    return r->g ? sk_gread_reads(r->g) : 0;
}
