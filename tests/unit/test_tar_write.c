/* test_tar_write.c - the deterministic tar header writer (lib/format/tar_write.c):
 * ustar fields for short ASCII names, the prefix/name split, pax extended
 * headers for long, non-ASCII and non-UTF-8 names and for sizes past 8 GiB,
 * self-inclusive pax record lengths across digit-count boundaries, and
 * sk_tar_header_size agreeing with the bytes written. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardkit.h"
#include "format/tar.h"

/* Writes the header for name into a buffer of exactly the announced size
 * (so ASAN catches any overrun) and checks the returned count. */
static unsigned char *header(const char *name, size_t n, uint64_t size, uint64_t mtime,
                             size_t *len)
{
    size_t want = sk_tar_header_size(name, n, size);
    assert_true(want >= SK_TAR_BLOCK && want % SK_TAR_BLOCK == 0 && want <= SK_TAR_HEADER_MAX);
    unsigned char *b = malloc(want);
    assert_non_null(b);
    memset(b, 0xAA, want);
    assert_int_equal(sk_tar_header(b, name, n, size, mtime), want);
    *len = want;
    return b;
}

static uint64_t octal_field(const unsigned char *f, size_t w)
{
    uint64_t v = 0;
    size_t i = 0;
    while (i < w && f[i] == ' ') i++;
    for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) v = v * 8 + (uint64_t)(f[i] - '0');
    assert_true(i == w || f[i] == 0 || f[i] == ' ');
    return v;
}

/* Every field of a ustar block that does not depend on the name. */
static void check_block(const unsigned char *b, uint64_t size, uint64_t mtime, char type)
{
    assert_memory_equal(b + 100, "0000644", 8); /* mode */
    assert_memory_equal(b + 108, "0000000", 8); /* uid */
    assert_memory_equal(b + 116, "0000000", 8); /* gid */
    assert_int_equal(b[135], 0);
    assert_int_equal(octal_field(b + 124, 12), size);
    assert_int_equal(b[147], 0);
    assert_int_equal(octal_field(b + 136, 12), mtime);
    assert_int_equal(b[156], type);
    for (int i = 157; i < 257; i++) assert_int_equal(b[i], 0); /* linkname */
    assert_memory_equal(b + 257, "ustar\0", 6);
    assert_memory_equal(b + 263, "00", 2);
    for (int i = 265; i < 345; i++) assert_int_equal(b[i], 0); /* uname, gname, dev */
    for (int i = 500; i < 512; i++) assert_int_equal(b[i], 0);
    /* checksum: sum of the block with the field as spaces; "%06o\0 " */
    unsigned sum = 0;
    for (int i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? ' ' : b[i];
    assert_int_equal(octal_field(b + 148, 6), sum);
    assert_int_equal(b[154], 0);
    assert_int_equal(b[155], ' ');
}

static void test_ustar_short_ascii(void **state)
{
    (void)state;
    const char *name = "train/000123.jpg";
    size_t len;
    unsigned char *b = header(name, strlen(name), 12345, 0, &len);
    assert_int_equal(len, 512);
    assert_memory_equal(b, name, strlen(name));
    for (size_t i = strlen(name); i < 100; i++) assert_int_equal(b[i], 0);
    for (int i = 345; i < 500; i++) assert_int_equal(b[i], 0); /* no prefix */
    check_block(b, 12345, 0, '0');
    assert_memory_equal(b + 124, "00000030071\0", 12);
    assert_memory_equal(b + 136, "00000000000\0", 12);
    free(b);
    /* mtime and size as given; the same input gives the same bytes */
    unsigned char *c = header(name, strlen(name), 0, 1700000000, &len);
    check_block(c, 0, 1700000000, '0');
    assert_memory_equal(c + 136, "14524770400\0", 12);
    unsigned char *d = header(name, strlen(name), 0, 1700000000, &len);
    assert_memory_equal(c, d, 512);
    free(c);
    free(d);
    /* the largest size ustar holds still gets no pax header */
    c = header(name, strlen(name), 077777777777ULL, 0, &len);
    assert_int_equal(len, 512);
    check_block(c, 077777777777ULL, 0, '0');
    free(c);
}

static void fill(char *s, size_t n, char ch)
{
    memset(s, ch, n);
    s[n] = 0;
}

static void test_ustar_name_boundaries(void **state)
{
    (void)state;
    char name[400];
    size_t len;
    /* exactly 100 bytes: fills the name field with no NUL */
    fill(name, 100, 'n');
    memcpy(name + 96, ".txt", 4);
    unsigned char *b = header(name, 100, 1, 0, &len);
    assert_int_equal(len, 512);
    assert_memory_equal(b, name, 100);
    check_block(b, 1, 0, '0');
    free(b);
    /* 101 bytes without a slash cannot be split: pax */
    fill(name, 101, 'n');
    assert_int_equal(sk_tar_header_size(name, 101, 1), 3 * 512);
}

static void test_ustar_prefix_split(void **state)
{
    (void)state;
    char name[400];
    size_t len;
    /* 150 bytes: 99-byte directory, '/', 50-byte basename */
    fill(name, 99, 'd');
    name[99] = '/';
    fill(name + 100, 50, 'f');
    memcpy(name + 146, ".png", 4);
    assert_int_equal(strlen(name), 150);
    unsigned char *b = header(name, 150, 7, 0, &len);
    assert_int_equal(len, 512);
    check_block(b, 7, 0, '0');
    /* prefix + "/" + name rebuilds the path */
    char prefix[156] = {0}, base[101] = {0}, joined[300];
    memcpy(prefix, b + 345, 155);
    memcpy(base, b, 100);
    snprintf(joined, sizeof joined, "%s/%s", prefix, base);
    assert_string_equal(joined, name);
    assert_int_equal(strlen(prefix), 99);
    free(b);

    /* the widest split: 155-byte prefix, 100-byte name = 256 bytes */
    fill(name, 155, 'p');
    name[155] = '/';
    fill(name + 156, 100, 'q');
    assert_int_equal(sk_tar_header_size(name, 256, 0), 512);
    b = header(name, 256, 0, 0, &len);
    assert_memory_equal(b + 345, name, 155);
    assert_memory_equal(b, name + 156, 100);
    free(b);
    /* one byte more in either part no longer fits */
    fill(name, 156, 'p');
    name[156] = '/';
    fill(name + 157, 99, 'q');
    assert_int_equal(sk_tar_header_size(name, 256, 0), 3 * 512);
    fill(name, 155, 'p');
    name[155] = '/';
    fill(name + 156, 101, 'q');
    assert_int_equal(sk_tar_header_size(name, 257, 0), 3 * 512);
    /* a slash whose basename is longer than 100 does not help */
    fill(name, 20, 'p');
    name[20] = '/';
    fill(name + 21, 120, 'q');
    assert_int_equal(sk_tar_header_size(name, 141, 0), 3 * 512);
    /* a trailing slash leaves an empty name: not a valid split */
    fill(name, 120, 'p');
    name[120] = '/';
    assert_int_equal(sk_tar_header_size(name, 121, 0), 3 * 512);
}

/* Parses the pax records of an 'x' header block pair; returns the value of
 * key (or NULL) and checks every record's self-inclusive length. */
struct pax { char key[32]; const unsigned char *val; size_t vlen; };

static size_t parse_pax(const unsigned char *data, size_t n, struct pax *out, size_t max)
{
    size_t off = 0, k = 0;
    while (off < n) {
        size_t len = 0, i = off;
        while (data[i] >= '0' && data[i] <= '9') len = len * 10 + (size_t)(data[i++] - '0');
        assert_true(len > 0 && data[off] != '0'); /* no leading zeros */
        assert_int_equal(data[i], ' ');
        assert_true(off + len <= n);
        assert_int_equal(data[off + len - 1], '\n'); /* the length counts itself */
        const unsigned char *kv = data + i + 1, *end = data + off + len - 1;
        const unsigned char *eq = memchr(kv, '=', (size_t)(end - kv));
        assert_non_null(eq);
        assert_true(k < max);
        assert_true((size_t)(eq - kv) < sizeof out[k].key);
        memcpy(out[k].key, kv, (size_t)(eq - kv));
        out[k].key[eq - kv] = 0;
        out[k].val = eq + 1;
        out[k].vlen = (size_t)(end - eq - 1);
        k++;
        off += len;
    }
    assert_int_equal(off, n);
    return k;
}

/* Checks a pax-headed member and returns its records. */
static size_t check_pax(const unsigned char *b, size_t len, const char *name, size_t n,
                        uint64_t size, uint64_t mtime, struct pax *rec, size_t max)
{
    assert_memory_equal(b, "././@PaxHeader\0", 15);
    uint64_t plen = octal_field(b + 124, 12);
    check_block(b, plen, mtime, 'x');
    assert_int_equal(len, 512 + sk_tar_pad(plen) + 512);
    for (size_t i = 512 + plen; i < 512 + sk_tar_pad(plen); i++) assert_int_equal(b[i], 0);
    size_t k = parse_pax(b + 512, plen, rec, max);
    const unsigned char *u = b + len - 512;
    check_block(u, size > 077777777777ULL ? 0 : size, mtime, '0');
    /* the ustar name is an ASCII stand-in: what fits, non-ASCII as '_' */
    for (size_t i = 0; i < 100; i++) {
        if (i < n) assert_int_equal(u[i], (unsigned char)name[i] < 0x80 ? name[i] : '_');
        else assert_int_equal(u[i], 0);
    }
    return k;
}

static void test_pax_long_name(void **state)
{
    (void)state;
    char name[301];
    for (int i = 0; i < 300; i++) name[i] = (char)('a' + i % 26);
    name[99] = name[199] = '/';
    memcpy(name + 296, ".txt", 4);
    name[300] = 0;
    size_t len;
    unsigned char *b = header(name, 300, 42, 5, &len);
    struct pax rec[4];
    size_t k = check_pax(b, len, name, 300, 42, 5, rec, 4);
    assert_int_equal(k, 1);
    assert_string_equal(rec[0].key, "path");
    assert_int_equal(rec[0].vlen, 300);
    assert_memory_equal(rec[0].val, name, 300);
    /* "310 path=...\n": 3 + 1 + 4 + 1 + 300 + 1 = 310 */
    assert_memory_equal(b + 512, "310 path=", 9);
    free(b);
    /* the longest name a shard may hold */
    char *big = malloc(SK_TAR_NAME_MAX + 1);
    for (int i = 0; i < SK_TAR_NAME_MAX; i++) big[i] = i % 50 == 49 ? '/' : 'x';
    big[SK_TAR_NAME_MAX] = 0;
    b = header(big, SK_TAR_NAME_MAX, 1, 0, &len);
    k = check_pax(b, len, big, SK_TAR_NAME_MAX, 1, 0, rec, 4);
    assert_int_equal(k, 1);
    assert_memory_equal(rec[0].val, big, SK_TAR_NAME_MAX);
    free(b);
    free(big);
}

static void test_pax_non_ascii_utf8(void **state)
{
    (void)state;
    const char *name = "caf\xc3\xa9/\xe6\x97\xa5\xe6\x9c\xac.txt"; /* café/日本.txt */
    size_t n = strlen(name), len;
    unsigned char *b = header(name, n, 3, 0, &len);
    struct pax rec[4];
    size_t k = check_pax(b, len, name, n, 3, 0, rec, 4);
    assert_int_equal(k, 1); /* valid UTF-8: no hdrcharset */
    assert_string_equal(rec[0].key, "path");
    assert_int_equal(rec[0].vlen, n);
    assert_memory_equal(rec[0].val, name, n);
    free(b);
}

static void test_pax_non_utf8(void **state)
{
    (void)state;
    const char *names[] = {
        "caf\xe9.txt",            /* Latin-1 */
        "bad\xff\xfe/x.txt",      /* never valid */
        "\xc0\xaf.txt",           /* overlong '/' */
        "\xed\xa0\x80.txt",       /* UTF-16 surrogate */
        "tail\xe6\x97",           /* truncated sequence at the end */
    };
    for (size_t t = 0; t < sizeof names / sizeof names[0]; t++) {
        const char *name = names[t];
        size_t n = strlen(name), len;
        assert_false(sk_utf8_valid(name, n));
        unsigned char *b = header(name, n, 9, 0, &len);
        struct pax rec[4];
        size_t k = check_pax(b, len, name, n, 9, 0, rec, 4);
        assert_int_equal(k, 2);
        assert_string_equal(rec[0].key, "hdrcharset");
        assert_int_equal(rec[0].vlen, 6);
        assert_memory_equal(rec[0].val, "BINARY", 6);
        assert_memory_equal(b + 512, "21 hdrcharset=BINARY\n", 21);
        assert_string_equal(rec[1].key, "path");
        assert_int_equal(rec[1].vlen, n);
        assert_memory_equal(rec[1].val, name, n);
        free(b);
    }
    assert_true(sk_utf8_valid("plain", 5));
    assert_true(sk_utf8_valid("\xf0\x9f\x98\x80", 4)); /* U+1F600 */
    assert_false(sk_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
}

/* Record lengths count their own digits: a value that makes "LEN path=V\n"
 * cross from 9 to 10, 99 to 100 or 999 to 1000 bytes must get the longer
 * prefix (10 and 100 themselves are impossible lengths). */
static void test_pax_record_length_digits(void **state)
{
    (void)state;
    char name[1200];
    int seen10 = 0, seen100 = 0, seen1000 = 0;
    for (size_t vlen = 1; vlen <= 1100; vlen++) {
        /* one non-ASCII byte forces pax whatever the length */
        memset(name, 'v', vlen);
        name[0] = '\xe9';
        size_t len;
        unsigned char *b = header(name, vlen, 0, 0, &len);
        uint64_t plen = octal_field(b + 124, 12);
        struct pax rec[4];
        size_t k = parse_pax(b + 512, plen, rec, 4);
        assert_int_equal(k, 2);
        assert_int_equal(rec[1].vlen, vlen);
        assert_memory_equal(rec[1].val, name, vlen);
        size_t rlen = plen - 21; /* after the hdrcharset record */
        assert_int_not_equal(rlen, 10);
        assert_int_not_equal(rlen, 100);
        assert_int_not_equal(rlen, 1000);
        if (vlen == 1) assert_int_equal(rlen, 9);  /* "9 path=V\n" */
        if (vlen == 2) assert_int_equal(rlen, 11), seen10 = 1;
        if (vlen == 90) assert_int_equal(rlen, 99);
        if (vlen == 91) assert_int_equal(rlen, 101), seen100 = 1;
        if (vlen == 989) assert_int_equal(rlen, 999);
        if (vlen == 990) assert_int_equal(rlen, 1001), seen1000 = 1;
        free(b);
    }
    assert_true(seen10 && seen100 && seen1000);
}

static void test_pax_huge_size(void **state)
{
    (void)state;
    const char *name = "big/sample.bin";
    uint64_t size = 077777777777ULL + 1; /* 8 GiB: past 11 octal digits */
    size_t len;
    unsigned char *b = header(name, strlen(name), size, 0, &len);
    struct pax rec[4];
    size_t k = check_pax(b, len, name, strlen(name), size, 0, rec, 4);
    assert_int_equal(k, 1); /* the name fits ustar: only size= */
    assert_string_equal(rec[0].key, "size");
    assert_int_equal(rec[0].vlen, 10);
    assert_memory_equal(rec[0].val, "8589934592", 10);
    assert_memory_equal(b + len - 512, name, strlen(name));
    free(b);
    /* both a long name and a huge size */
    char longname[300];
    memset(longname, 'z', 299);
    longname[299] = 0;
    b = header(longname, 299, 1ULL << 40, 0, &len);
    k = check_pax(b, len, longname, 299, 1ULL << 40, 0, rec, 4);
    assert_int_equal(k, 2);
    assert_string_equal(rec[0].key, "path");
    assert_string_equal(rec[1].key, "size");
    assert_memory_equal(rec[1].val, "1099511627776", 13);
    free(b);
}

static void test_header_size_matches_written(void **state)
{
    (void)state;
    char name[SK_TAR_NAME_MAX + 1];
    uint64_t sizes[] = {0, 1, 511, 512, 077777777777ULL, 077777777777ULL + 1, UINT64_MAX / 2};
    for (size_t n = 1; n <= SK_TAR_NAME_MAX; n += n < 300 ? 1 : 97) {
        for (size_t i = 0; i < n; i++) name[i] = (char)(i % 37 == 36 ? '/' : 'a' + i % 26);
        if (n % 3 == 0) name[n / 2] = '\xe9';
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            size_t len; /* header() asserts sk_tar_header returns the announced size */
            unsigned char *b = header(name, n, sizes[s], 0, &len);
            assert_int_equal(b[len - 512 + 156], '0');
            free(b);
        }
    }
    assert_int_equal(sk_tar_pad(0), 0);
    assert_int_equal(sk_tar_pad(1), 512);
    assert_int_equal(sk_tar_pad(512), 512);
    assert_int_equal(sk_tar_pad(513), 1024);
}

/* sk_tar_header_matches (what `shardkit cat` asks of every stored header
 * it would write from the ring): 1 for the header sk_tar_header writes,
 * whatever its kind; 0 when any one byte differs, for another name, size or
 * mtime, or another length. */
static void test_header_matches(void **state)
{
    (void)state;
    char name[600];
    uint64_t sizes[] = {0, 1, 511, 600000, 077777777777ULL, 077777777777ULL + 1};
    size_t lens[] = {1, 5, 99, 100, 101, 150, 300};
    for (size_t li = 0; li < sizeof lens / sizeof *lens; li++) {
        size_t n = lens[li];
        for (int kind = 0; kind < 3; kind++) {
            for (size_t i = 0; i < n; i++) name[i] = (char)('a' + i % 26);
            if (kind == 1) name[n / 2] = '\xe9'; /* pax: not ASCII (nor UTF-8) */
            if (kind == 2 && n > 2) name[n - 2] = '.';
            for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
                size_t len;
                unsigned char *b = header(name, n, sizes[si], 0, &len);
                assert_true(sk_tar_header_matches(b, len, name, n, sizes[si], 0));
                assert_false(sk_tar_header_matches(b, len, name, n, sizes[si] + 1, 0));
                assert_false(sk_tar_header_matches(b, len, name, n, sizes[si], 1));
                assert_false(sk_tar_header_matches(b, len - 1, name, n, sizes[si], 0));
                name[0] ^= 1;
                assert_false(sk_tar_header_matches(b, len, name, n, sizes[si], 0));
                name[0] ^= 1;
                if (n > 1) assert_false(sk_tar_header_matches(b, len, name, n - 1, sizes[si], 0));
                for (size_t i = 0; i < len; i += (len > 512 ? 7 : 1)) {
                    b[i] ^= 0x20;
                    if (sk_tar_header_matches(b, len, name, n, sizes[si], 0))
                        fail_msg("name length %zu, size %llu: byte %zu changed, still matches", n,
                                 (unsigned long long)sizes[si], i);
                    b[i] ^= 0x20;
                }
                free(b);
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ustar_short_ascii),
        cmocka_unit_test(test_ustar_name_boundaries),
        cmocka_unit_test(test_ustar_prefix_split),
        cmocka_unit_test(test_pax_long_name),
        cmocka_unit_test(test_pax_non_ascii_utf8),
        cmocka_unit_test(test_pax_non_utf8),
        cmocka_unit_test(test_pax_record_length_digits),
        cmocka_unit_test(test_pax_huge_size),
        cmocka_unit_test(test_header_size_matches_written),
        cmocka_unit_test(test_header_matches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
