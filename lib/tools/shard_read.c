/*
 * shard_read.c - `shard`'s inputs read as byte streams (through the store
 * interface: a local file or stdin, s3:// and http(s)://; or the caller's
 * in_open) through libarchive, so any tar dialect, compression filter, zip, 7z or
 * cpio works.  Members group into samples by the WebDataset rule
 * (adjacent members with one key), and each sample is assembled once,
 * directly as the tar bytes it will have in the output (headers, data,
 * padding), with its CRC32C computed from the pieces as they arrive.
 */
#include "tools/shard_int.h"
#include "format/libarchive.h"
#include "format/tar.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ input streams */
/* Every input but the caller's own (sk_shard_options.in_open) is read
 * through the store interface (io/store.h): a local file or stdin, an
 * s3:// object or an http(s):// URL, as one sequential reader from an
 * offset on (the kernel's read-ahead, or one streaming GET that resumes a
 * broken transfer where it stopped).  So shard reads what every other
 * reading tool reads, the same way. */

struct store_in {
    sk_store *st;
    sk_store_seq *q;
};

static int store_in_read(void *ctx, void *buf, size_t cap, size_t *got, sk_error *err)
{
    struct store_in *s = ctx;
    return s->q->read(s->q, buf, cap, got, err);
}

static void store_in_close(void *ctx)
{
    struct store_in *s = ctx;
    if (s->q) s->q->close(s->q);
    sk_store_close(s->st);
    free(s);
}

/* Opens url from byte from on (from > 0: a local file, see take_input). */
static int in_open(sk_shard_run *r, sk_in_stream *s, const char *url, uint64_t from, sk_error *err)
{
    if (r->o->in_open && !sk_store_is_remote(url)) {
        SK_FAIL_IF(from, err, SK_E_USAGE, "%s: the caller's input cannot start at %llu", url,
                   (unsigned long long)from);
        return r->o->in_open(r->o->in_open_ctx, s, url, err);
    }
    struct store_in *in = calloc(1, sizeof *in);
    SK_FAIL_IF(!in, err, SK_E_NOMEM, "out of memory");
    int rc = sk_store_open(&in->st, url, &r->in->env, err);
    if (!rc) rc = in->st->ops->open_seq(in->st, from, &in->q, err);
    if (rc) {
        if (in->st) sk_store_close(in->st);
        free(in);
        return rc;
    }
    *s = (sk_in_stream){.ctx = in, .read = store_in_read, .close = store_in_close,
                        .size = UINT64_MAX};
    sk_store_stat sb;
    if (!sk_store_is_remote(url) && !in->st->ops->stat(in->st, &sb, NULL)) s->size = sb.size;
    return SK_OK;
}

/* An input's size: stat, or the store's (a HEAD for a remote one, which
 * also finds a missing object before any shard is written).  UINT64_MAX
 * for stdin and for inputs the caller's in_open reads.  A local input is
 * not opened here: a FIFO would block, and could be read only once. */
int sk_shard_run_input_size(sk_shard_run *r, const char *url, uint64_t *size, sk_error *err)
{
    *size = UINT64_MAX;
    if (!strcmp(url, "-")) return SK_OK;
    if (!sk_store_is_remote(url)) {
        if (r->o->in_open) return SK_OK;
        struct stat sb;
        SK_FAIL_IF(stat(url, &sb) != 0, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO,
                   "%s: cannot open: %s", url, strerror(errno));
        *size = (uint64_t)sb.st_size;
        return SK_OK;
    }
    sk_store *st;
    sk_store_stat sb;
    SK_GUARD(sk_store_open(&st, url, &r->in->env, err));
    int rc = st->ops->stat(st, &sb, err);
    sk_store_close(st);
    if (!rc) *size = sb.size;
    return rc;
}

/* An input's index (NAME.idx, local or remote) when it has a sound one
 * that records the input's size; NULL otherwise. */
static sk_index *input_index(sk_shard_run *r, const char *url, uint64_t size)
{
    char ip[4200];
    sk_index *ix = NULL;
    if (size == UINT64_MAX || snprintf(ip, sizeof ip, "%s.idx", url) >= (int)sizeof ip) return NULL;
    if (sk_store_is_remote(ip)) {
        sk_buf blob = {0};
        if (sk_store_load(ip, &r->in->env, SK_S3_INDEX_MAX, "shard index", &blob, NULL) ||
            (!blob.p && !(blob.p = malloc(1))) ||
            sk_index_adopt(&ix, blob.p, blob.len, ip, NULL)) { /* adopt keeps the bytes */
            if (!ix) sk_buf_free(&blob);
            return NULL;
        }
    } else if (sk_index_open(&ix, ip, SK_INDEX_TRUST_BODY, NULL)) {
        return NULL;
    }
    if (sk_index_shard(ix)->size != size) {
        sk_index_close(ix);
        return NULL;
    }
    return ix;
}

/* Samples after the filters, for --num-shards: from the inputs' indexes
 * when no filter applies and each has a sound one, else a counting pass. */
int sk_shard_run_count_samples(sk_shard_run *r, char **in, size_t n, struct run_sample *s, sk_error *err)
{
    const sk_shard_options *o = r->o;
    int filtered = o->nselect || o->ndrop || o->keys_file || o->parts;
    for (size_t i = 0; i < n; i++)
        SK_FAIL_IF(!strcmp(in[i], "-"), err, SK_E_USAGE, "--num-shards needs the sample count "
                   "before writing, and stdin can only be read once: add --shuffle (which "
                   "counts while it scatters) or use --max-count");
    for (size_t i = 0; i < n && !filtered; i++) {
        uint64_t size;
        sk_index *ix = NULL;
        if (sk_shard_run_input_size(r, in[i], &size, NULL) || !(ix = input_index(r, in[i], size))) {
            filtered = 1;
            break;
        }
        r->total += sk_index_sample_count(ix);
        sk_index_close(ix);
    }
    if (!filtered) return SK_OK;
    r->total = 0;
    sk_shard_stats keep = r->st;
    for (size_t i = 0; i < n; i++) SK_GUARD(sk_shard_run_read_input(r, in[i], s, 1, 0, err));
    r->st = keep;
    return SK_OK;
}

static int sample_done(sk_shard_run *r, struct run_sample *s, int counting, sk_error *err)
{
    if (!s->klen && !s->nm) return SK_OK;
    r->st.samples_in++;
    int keep = s->nm && sk_shard_run_keep_sample(r, s->key, s->klen);
    int rc = SK_OK;
    if (!keep) r->st.dropped++;
    else if (counting) r->total++;
    else rc = sk_shard_run_put(r, s, err); /* shard_out.c: images, then the shuffle or out */
    s->klen = s->nm = s->elen = s->len = 0, s->crc = 0;
    return rc;
}

struct la_ctx {
    sk_in_stream in;
    unsigned char *buf;
    sk_shard_run *r;
    sk_error *err;
    int rc;
};

static la_ssize_t la_read(struct archive *a, void *ctx, const void **out)
{
    struct la_ctx *c = ctx;
    size_t got = 0;
    (void)a;
    if ((c->rc = c->in.read(c->in.ctx, c->buf, IN_BUF, &got, c->err))) return -1;
    c->r->st.bytes_in += got;
    *out = c->buf;
    return (la_ssize_t)got;
}

/* Reads one input, feeding its samples on (or counting them).  from > 0:
 * a local tar from that header on (the rest of what direct_input began). */
int sk_shard_run_read_input(sk_shard_run *r, const char *url, struct run_sample *s, int counting, uint64_t from,
                     sk_error *err)
{
    struct la_ctx c = {.r = r, .err = err};
    sk_keyseen seen = {0}; /* a sample's members not adjacent: refused, never split */
    uint64_t split = 0, split_first = 0, split_again = 0; /* the first split one's places */
    char *split_key = NULL;
    SK_GUARD(in_open(r, &c.in, url, from, err));
    struct archive *a;
    int rc = sk_la_new(&a, err);
    c.buf = malloc(IN_BUF);
    if (!rc && !c.buf) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    if (rc) goto done;
    sk_la.read_support_filter_all(a);
    sk_la.read_support_format_tar(a);
    sk_la.read_support_format_zip(a);
    sk_la.read_support_format_7zip(a);
    sk_la.read_support_format_cpio(a);
    if (sk_la.read_open(a, &c, NULL, la_read, NULL) != ARCHIVE_OK) {
        rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s", url, sk_la.error_string(a));
        goto done;
    }
    int warned = 0, warned_strip = 0;
    for (;;) {
        struct archive_entry *ae;
        int h = sk_la.read_next_header(a, &ae);
        if (h == ARCHIVE_EOF) break;
        if (h < ARCHIVE_WARN) {
            rc = c.rc ? c.rc : sk_error_set(err, SK_E_CORRUPT, "%s: %s (after %llu samples)", url,
                                            sk_la.error_string(a),
                                            (unsigned long long)r->st.samples_in);
            goto done;
        }
        const char *name = sk_la.entry_pathname(ae);
        if (!name) name = sk_la.entry_pathname_utf8(ae);
        if (sk_la.entry_filetype(ae) != AE_IFREG || !name) {
            r->st.skipped++;
            continue;
        }
        /* foreign names as GNU tar extracts them (core/path.c) */
        size_t skip, nl = strlen(name), kl, eo;
        int strip = sk_name_strip(name, nl, &skip);
        if (strip < 0 || skip == nl) {
            sk_shard_run_warnf(r, "%s: skipped '%s': '..' in a member name", url, name);
            r->st.skipped++;
            continue;
        }
        if (strip > 0 && !warned_strip++)
            sk_shard_run_warnf(r, "%s: member names with a leading '/' or '../' (first: '%s') are written without it",
                  url, name);
        name += skip;
        nl -= skip;
        if (sk_tar_is_meta(name, nl)) continue;
        if (sk_sample_split(name, nl, &kl, &eo) != SK_OK) {
            if (!warned++) sk_shard_run_warnf(r, "%s: skipped '%s': its name has no WebDataset key", url, name);
            r->st.skipped++;
            continue;
        }
        if (kl != s->klen || memcmp(name, s->key, kl)) { /* a new sample */
            int again;
            uint64_t at = (uint64_t)sk_la.read_header_position(a), first;
            if ((rc = sk_keyseen_add_at(&seen, name, kl, at, &again, &first, err))) goto done;
            if (again && !split) split_first = first, split_again = at;
            if (again && !split++ && !(split_key = strndup(name, kl))) {
                rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
                goto done;
            }
            /* after a split one, only count the others: nothing is written */
            if (!split && (rc = sample_done(r, s, counting, err))) goto done;
            if ((rc = sk_grow((void **)&s->key, &s->kcap, kl + 1, 1, err))) goto done;
            memcpy(s->key, name, kl);
            s->klen = kl;
        }
        if (split) {
            s->nm = s->len = s->elen = 0;
            continue;
        }
        const char *oe;
        size_t oel;
        if (!sk_shard_run_keep_member(r, name + eo, nl - eo, &oe, &oel)) continue;
        for (size_t i = 0; i < s->nm; i++)
            if (!sk_ext_cmp(s->exts + s->m[i].ext_off, s->m[i].ext_len, oe, oel)) {
                rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': sample '%.*s' has extension '%.*s' "
                                  "twice", url, name, (int)kl, name, (int)oel, oe);
                goto done;
            }
        if (counting) { /* only whether a member remains matters */
            s->nm = 1;
            continue;
        }
        if (!sk_la.entry_size_is_set(ae)) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': the archive does not record the "
                              "member's size", url, name);
            goto done;
        }
        uint64_t size = (uint64_t)sk_la.entry_size(ae);
        char oname[SK_TAR_NAME_MAX + 64];
        if (kl + 1 + oel >= sizeof oname) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: '%s': name too long", url, name);
            goto done;
        }
        memcpy(oname, name, kl);
        oname[kl] = '.';
        for (size_t i = 0; i < oel; i++) /* index extensions are lowercase */
            oname[kl + 1 + i] = oe[i];
        size_t onl = kl + 1 + oel;
        size_t hl = sk_tar_header_size(oname, onl, size);
        if ((rc = sk_grow((void **)&s->img, &s->cap, s->len + hl + sk_tar_pad(size), 1, err)) ||
            (rc = sk_grow((void **)&s->m, &s->mcap, s->nm + 1, sizeof *s->m, err)) ||
            (rc = sk_grow((void **)&s->exts, &s->ecap, s->elen + 2 * oel + 1, 1, err)))
            goto done;
        sk_tar_header(s->img + s->len, oname, onl, size, r->o->mtime);
        unsigned char *d = s->img + s->len + hl;
        for (uint64_t got = 0; got < size;) {
            la_ssize_t k = sk_la.read_data(a, d + got, (size_t)(size - got));
            if (k <= 0) {
                rc = c.rc ? c.rc
                          : sk_error_set(err, SK_E_CORRUPT, "%s: '%s': %s", url, name,
                                         k < 0 ? sk_la.error_string(a) : "truncated member");
                goto done;
            }
            got += (uint64_t)k;
        }
        memset(d + size, 0, sk_tar_pad(size) - size);
        struct run_member *m = &s->m[s->nm++];
        m->data_off = s->len + hl;
        m->size = size;
        m->hlen = (uint32_t)hl;
        m->crc = sk_crc32c(0, d, size);
        /* the image's CRC from the pieces: the data is read once */
        uint32_t piece = sk_crc32c_combine(sk_crc32c(0, s->img + s->len, hl), m->crc, size);
        piece = sk_crc32c(piece, d + size, sk_tar_pad(size) - size);
        s->crc = sk_crc32c_combine(s->crc, piece, hl + sk_tar_pad(size));
        m->ext_off = (uint32_t)s->elen;
        m->ext_len = (uint32_t)oel;
        for (size_t i = 0; i < oel; i++) {
            char ch = oe[i];
            s->exts[s->elen + i] = ch >= 'A' && ch <= 'Z' ? (char)(ch + 32) : ch;
        }
        /* the extension as the name writes it follows the lowercase one,
         * for images.c's rebuild of a member's header */
        memcpy(s->exts + s->elen + oel, oe, oel);
        s->elen += 2 * oel;
        s->len += hl + sk_tar_pad(size);
    }
    rc = split ? sk_error_set(err, SK_E_INPUT, "%s: %llu sample%s whose members are not adjacent "
                              "(first: '%s', members at byte %llu and again at byte %llu, after "
                              "other samples): shard would split each in two, so nothing is "
                              "written; put each sample's members together first (GNU tar "
                              "--sort=name, or extract and `shardkit pack`; `shardkit index` "
                              "names them)", url, (unsigned long long)split,
                              split == 1 ? "" : "s", split_key, (unsigned long long)split_first,
                              (unsigned long long)split_again)
               : sample_done(r, s, counting, err);
done:
    sk_keyseen_free(&seen);
    free(split_key);
    if (a) sk_la.read_free(a);
    free(c.buf);
    c.in.close(c.in.ctx);
    return rc;
}
/* One input: through its index while that agrees with it, then libarchive. */
int sk_shard_run_take_input(sk_shard_run *r, const char *url, struct run_sample *s, sk_error *err)
{
    uint64_t from = 0;
    if (r->in->direct && strcmp(url, "-") && !sk_store_is_remote(url) && !r->o->in_open) {
        SK_GUARD(sk_shard_run_direct_input(r, url, s, &from, err));
        if (from == UINT64_MAX) return SK_OK;
    }
    return sk_shard_run_read_input(r, url, s, 0, from, err);
}
