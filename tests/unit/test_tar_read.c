/* test_tar_read.c - the tar header walker (lib/format/tar_read.c) on archives built
 * byte by byte here: v7 names, ustar prefix, GNU long names, pax per member
 * and global, base-256 sizes, signed checksums, skipped entries, WebDataset
 * metadata names, a source that lends header blocks (peek_at), and the
 * errors for bad checksums, truncation, sparse. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "format/tar.h"
#include "format/shard_stream.h"

struct mem {
    unsigned char *b;
    size_t n, cap;
};

static int mem_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct mem *m = ctx;
    (void)err;
    *got = pos >= m->n ? 0 : (m->n - pos < n ? m->n - pos : n);
    memcpy(buf, m->b + pos, *got);
    return 0;
}

static unsigned char *room(struct mem *m, size_t n)
{
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->b = realloc(m->b, m->cap);
    }
    unsigned char *p = m->b + m->n;
    memset(p, 0, n);
    m->n += n;
    return p;
}

enum { SUM_UNSIGNED, SUM_SIGNED, SUM_BAD };

/* One header block; magic: 0 none (v7), 1 POSIX ustar, 2 GNU. */
static size_t header(struct mem *m, const char *name, const char *prefix, uint64_t size, char type,
                     int magic, int sum_kind, int base256)
{
    size_t at = m->n;
    unsigned char *b = room(m, 512);
    memcpy(b, name, strlen(name) > 100 ? 100 : strlen(name));
    memcpy(b + 100, "0000644", 8);
    if (base256) {
        b[124] = 0x80;
        for (int i = 0; i < 8; i++) b[135 - i] = (unsigned char)(size >> (8 * i));
    } else {
        char num[32];
        snprintf(num, sizeof num, "%011llo", (unsigned long long)(size & 077777777777ULL));
        memcpy(b + 124, num, 12);
    }
    b[156] = (unsigned char)type;
    if (magic == 1) memcpy(b + 257, "ustar\0" "00", 8);
    if (magic == 2) memcpy(b + 257, "ustar  \0", 8);
    if (prefix) memcpy(b + 345, prefix, strlen(prefix));
    b[200] = 0xe9; /* a high byte in the link name, so signed and unsigned sums differ */
    memset(b + 148, ' ', 8);
    long us = 0, ss = 0;
    for (int i = 0; i < 512; i++) us += b[i], ss += (signed char)b[i];
    long v = sum_kind == SUM_SIGNED ? ss : us + (sum_kind == SUM_BAD);
    snprintf((char *)b + 148, 8, "%06lo", (unsigned long)v);
    b[155] = ' ';
    return at;
}

static void data(struct mem *m, const char *s, size_t n)
{
    unsigned char *p = room(m, sk_tar_pad(n));
    memcpy(p, s, n);
}

static void pax(struct mem *m, char type, const char *recs)
{
    header(m, "././@PaxHeader", NULL, strlen(recs), type, 1, SUM_UNSIGNED, 0);
    data(m, recs, strlen(recs));
}

static void open_reader(sk_tar_reader *r, struct mem *m, unsigned flags)
{
    static sk_tar_src src;
    src = (sk_tar_src){.ctx = m, .read_at = mem_read_at, .size = UINT64_MAX, .name = "mem.tar"};
    sk_tar_reader_init(r, &src, flags);
}

static void next_ok(sk_tar_reader *r, sk_tar_entry *e)
{
    sk_error err = SK_ERROR_INIT;
    if (sk_tar_next(r, e, &err)) fail_msg("%s", err.msg);
}

static void test_dialects(void **state)
{
    (void)state;
    struct mem m = {0};
    header(&m, "v7/old.txt", NULL, 5, '\0', 0, SUM_SIGNED, 0);           /* v7, signed sum */
    data(&m, "hello", 5);
    header(&m, "name.jpg", "some/prefix", 3, '0', 1, SUM_UNSIGNED, 0);   /* ustar prefix */
    data(&m, "abc", 3);
    header(&m, "dir/", NULL, 0, '5', 1, SUM_UNSIGNED, 0);                /* directory */
    header(&m, "link", NULL, 0, '2', 1, SUM_UNSIGNED, 0);                /* symlink */
    char longname[301];
    memset(longname, 'n', 300);
    memcpy(longname + 290, "/long.json", 10);
    longname[300] = 0;
    size_t l_at = header(&m, "././@LongLink", NULL, 301, 'L', 2, SUM_UNSIGNED, 0);
    data(&m, longname, 301);
    header(&m, "truncated-name", "ignored-in-gnu", 2, '0', 2, SUM_UNSIGNED, 0);
    data(&m, "{}", 2);
    size_t p_at = m.n;
    pax(&m, 'x', "24 path=p\xc3\xa4x/\xc3\xbc.seg.png\n10 size=7\n");
    header(&m, "fallback", NULL, 99, '0', 1, SUM_UNSIGNED, 0);           /* pax size wins */
    data(&m, "1234567", 7);
    header(&m, "big.bin", NULL, 4, '0', 2, SUM_UNSIGNED, 1);             /* base-256 size */
    data(&m, "wxyz", 4);
    header(&m, "__meta__", NULL, 2, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "{}", 2);
    room(&m, 1024);

    sk_tar_reader r;
    sk_tar_entry e;
    open_reader(&r, &m, SK_TAR_CRC);
    next_ok(&r, &e);
    assert_string_equal(e.name, "v7/old.txt");
    assert_int_equal(e.size, 5);
    assert_int_equal(e.crc32c, sk_crc32c(0, "hello", 5));
    next_ok(&r, &e);
    assert_string_equal(e.name, "some/prefix/name.jpg");
    assert_int_equal(e.data_offset, 1536);
    next_ok(&r, &e);
    assert_string_equal(e.name, longname);
    assert_int_equal(e.header_offset, l_at);
    assert_int_equal(e.header_len, 512 + 512 + 512);
    next_ok(&r, &e);
    assert_string_equal(e.name, "p\xc3\xa4x/\xc3\xbc.seg.png");
    assert_int_equal(e.header_offset, p_at);
    assert_int_equal(e.size, 7);
    assert_int_equal(e.crc32c, sk_crc32c(0, "1234567", 7));
    next_ok(&r, &e);
    assert_string_equal(e.name, "big.bin");
    assert_int_equal(e.size, 4);
    next_ok(&r, &e);
    assert_true(sk_tar_is_meta(e.name, e.name_len));
    next_ok(&r, &e);
    assert_true(e.end);
    assert_int_equal(r.dirs, 1);
    assert_int_equal(r.links, 1);
    sk_tar_reader_release(&r);
    free(m.b);
    assert_false(sk_tar_is_meta("a/__meta__", 10));
    assert_false(sk_tar_is_meta("__x.jpg", 7));
}

static void test_global_pax_and_no_end_blocks(void **state)
{
    (void)state;
    struct mem m = {0};
    pax(&m, 'g', "15 path=global\n");
    header(&m, "own", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "x", 1);
    sk_tar_reader r;
    sk_tar_entry e;
    open_reader(&r, &m, 0);
    next_ok(&r, &e);
    assert_string_equal(e.name, "global");
    assert_int_equal(e.header_offset, 1024); /* a global header is not part of the member */
    next_ok(&r, &e);
    assert_true(e.end); /* end of stream without end blocks is accepted */
    sk_tar_reader_release(&r);
    free(m.b);
}

/* A source that lends header blocks (peek_at) from a small window of its
 * own, as index --fast's does; each refill scribbles over the old window
 * first, so a block used after the next read would show. */
struct lender {
    struct mem *m;
    unsigned char win[1024];
    uint64_t off;
    size_t len;
};

static int lend_peek_at(void *ctx, uint64_t pos, size_t n, const unsigned char **p, size_t *got,
                        sk_error *err)
{
    struct lender *l = ctx;
    if (!(pos >= l->off && pos + n <= l->off + l->len)) {
        memset(l->win, 0xA5, sizeof l->win);
        SK_GUARD(mem_read_at(l->m, pos, l->win, sizeof l->win, &l->len, err));
        l->off = pos;
    }
    size_t have = (size_t)(l->off + l->len - pos);
    *got = have < n ? have : n;
    *p = l->win + (pos - l->off);
    return 0;
}

static int lend_read_at(void *ctx, uint64_t pos, void *buf, size_t n, size_t *got, sk_error *err)
{
    struct lender *l = ctx;
    memset(l->win, 0xA5, sizeof l->win); /* the window is gone after any read */
    l->len = 0;
    return mem_read_at(l->m, pos, buf, n, got, err);
}

static void test_peek_source(void **state)
{
    (void)state;
    struct mem m = {0};
    header(&m, "v7/old.txt", NULL, 5, '\0', 0, SUM_SIGNED, 0);
    data(&m, "hello", 5);
    header(&m, "name.jpg", "some/prefix", 3, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "abc", 3);
    header(&m, "dir/", NULL, 0, '5', 1, SUM_UNSIGNED, 0);
    char longname[301];
    memset(longname, 'n', 300);
    memcpy(longname + 290, "/long.json", 10);
    longname[300] = 0;
    header(&m, "././@LongLink", NULL, 301, 'L', 2, SUM_UNSIGNED, 0);
    data(&m, longname, 301);
    header(&m, "truncated-name", NULL, 2, '0', 2, SUM_UNSIGNED, 0);
    data(&m, "{}", 2);
    pax(&m, 'x', "24 path=p\xc3\xa4x/\xc3\xbc.seg.png\n10 size=7\n");
    header(&m, "fallback", NULL, 99, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "1234567", 7);
    char big[3000];
    memset(big, 'b', sizeof big);
    header(&m, "big.bin", NULL, sizeof big, '0', 2, SUM_UNSIGNED, 1);
    data(&m, big, sizeof big);
    pax(&m, 'g', "15 path=global\n");
    header(&m, "own", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "x", 1);
    room(&m, 1024);

    sk_tar_reader a, b;
    sk_tar_entry ea, eb;
    struct lender l = {.m = &m};
    sk_tar_src src = {.ctx = &l, .read_at = lend_read_at, .peek_at = lend_peek_at,
                      .size = UINT64_MAX, .name = "lent.tar"};
    open_reader(&a, &m, 0);
    sk_tar_reader_init(&b, &src, 0);
    int n = 0;
    do {
        next_ok(&a, &ea);
        next_ok(&b, &eb);
        assert_int_equal(ea.end, eb.end);
        if (ea.end) break;
        assert_int_equal(ea.name_len, eb.name_len);
        assert_memory_equal(ea.name, eb.name, ea.name_len);
        assert_int_equal(ea.header_offset, eb.header_offset);
        assert_int_equal(ea.data_offset, eb.data_offset);
        assert_int_equal(ea.size, eb.size);
        n++;
    } while (1);
    assert_int_equal(n, 6); /* the directory is skipped */
    sk_tar_reader_release(&a);
    sk_tar_reader_release(&b);
    free(m.b);
}

static void expect_error(struct mem *m, unsigned flags, int code, const char *msg)
{
    sk_tar_reader r;
    sk_tar_entry e;
    sk_error err = SK_ERROR_INIT;
    int rc = 0;
    open_reader(&r, m, flags);
    for (int i = 0; i < 10 && !rc; i++) {
        rc = sk_tar_next(&r, &e, &err);
        if (!rc && e.end) break;
    }
    assert_int_equal(rc, code);
    if (!strstr(err.msg, msg)) fail_msg("'%s' lacks '%s'", err.msg, msg);
    sk_tar_reader_release(&r);
}

static void test_errors(void **state)
{
    (void)state;
    struct mem m = {0};
    header(&m, "a.txt", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "a", 1);
    header(&m, "b.txt", NULL, 1, '0', 1, SUM_BAD, 0);
    expect_error(&m, 0, SK_E_CORRUPT, "corrupt tar header at offset 1024 (checksum mismatch)");
    m.n = 0;
    header(&m, "a.txt", NULL, 1000, '0', 1, SUM_UNSIGNED, 0);
    room(&m, 700);
    expect_error(&m, SK_TAR_CRC, SK_E_CORRUPT, "truncated at offset 1212, inside member 'a.txt'");
    m.n = 0;
    header(&m, "a.txt", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    data(&m, "a", 1);
    room(&m, 100);
    expect_error(&m, 0, SK_E_CORRUPT, "truncated at offset 1124, inside a header");
    m.n = 0;
    header(&m, "sparse.img", NULL, 1, 'S', 2, SUM_UNSIGNED, 0);
    expect_error(&m, 0, SK_E_INPUT, "member 'sparse.img' at offset 0 has tar type 'S'");
    m.n = 0;
    pax(&m, 'x', "22 GNU.sparse.major=1\n");
    header(&m, "s.img", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    expect_error(&m, 0, SK_E_INPUT, "GNU sparse file");
    m.n = 0;
    pax(&m, 'x', "99 path=x\n");
    header(&m, "s.img", NULL, 1, '0', 1, SUM_UNSIGNED, 0);
    expect_error(&m, 0, SK_E_CORRUPT, "malformed pax record");
    m.n = 0;
    header(&m, "fifo", NULL, 0, '6', 1, SUM_UNSIGNED, 0);
    expect_error(&m, 0, SK_E_INPUT, "member 'fifo' at offset 0 has tar type '6'");
    free(m.b);
}

/* A network source hands bytes over in whatever pieces arrived.  Here
 * every refill ends wherever chunk says; the walker reads the two end
 * blocks to know the archive ends, and the end check (verify.c) reads them
 * again from the position of the first: for every chunk size, that must
 * work (it failed when a refill fell between the two blocks). */
struct chunked {
    struct mem *m;
    size_t pos, chunk;
};

static int chunk_src(void *ctx, void *dst, size_t n, size_t *got, sk_error *err)
{
    struct chunked *c = ctx;
    (void)err;
    size_t k = c->m->n - c->pos;
    if (k > c->chunk) k = c->chunk;
    if (k > n) k = n;
    memcpy(dst, c->m->b + c->pos, k);
    c->pos += k;
    *got = k;
    return 0;
}

static void test_stream_rereads_end_blocks(void **state)
{
    (void)state;
    struct mem m = {0};
    header(&m, "a.txt", NULL, 700, '0', 1, SUM_UNSIGNED, 0);
    char body[700];
    memset(body, 'x', sizeof body);
    data(&m, body, sizeof body);
    room(&m, 1024); /* end of archive */
    for (size_t chunk = 1; chunk <= m.n; chunk += chunk < 64 ? 1 : 37) {
        struct chunked c = {&m, 0, chunk};
        sk_stream s;
        sk_error err = SK_ERROR_INIT;
        if (sk_stream_open_src(&s, chunk_src, &c, "net.tar", SK_STREAM_PLAIN, &err))
            fail_msg("%s", err.msg);
        sk_tar_src src = {.ctx = &s, .read_at = sk_stream_read_at, .size = UINT64_MAX, .name = "net.tar"};
        sk_tar_reader r;
        sk_tar_reader_init(&r, &src, 0);
        sk_tar_entry e;
        next_ok(&r, &e);
        assert_false(e.end);
        next_ok(&r, &e);
        assert_true(e.end);
        unsigned char b[1024];
        size_t got;
        if (sk_stream_read_at(&s, r.pos, b, sizeof b, &got, &err))
            fail_msg("chunk %zu: re-reading the end blocks at %llu: %s", chunk,
                     (unsigned long long)r.pos, err.msg);
        assert_int_equal(got, 1024);
        sk_tar_reader_release(&r);
        sk_stream_close(&s);
    }
    free(m.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dialects),
        cmocka_unit_test(test_global_pax_and_no_end_blocks),
        cmocka_unit_test(test_peek_source),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_stream_rereads_end_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
