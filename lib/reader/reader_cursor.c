/*
 * reader_cursor.c - one shard's tar stream walked into samples for the
 * reader (reader_int.h): headers read through the ring reader_io.c fills
 * (lent, not copied), members grouped by the WebDataset rule, a sample
 * whose members are not adjacent refused, the sample handed out as
 * pointers into the ring.
 */
#include "reader/reader_int.h"

#include <stdlib.h>
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

void sk_reader_cursor_end(struct cursor *c)
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

void sk_reader_cursor_free(struct cursor *c)
{
    sk_reader_cursor_end(c);
    free(c->pname);
    free(c->m);
    free(c->names);
    free(c->members);
    sk_keyseen_free(&c->seen);
    memset(c, 0, sizeof *c);
}

void sk_reader_cursor_begin(struct cursor *c, sk_reader_stream *st, size_t shard, const char *url,
                         uint64_t pos, uint64_t ordinal, int stream)
{
    sk_reader_cursor_end(c);
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
int sk_reader_cursor_next(struct cursor *c, int *got, sk_error *err)
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
