/*
 * sample.c - the WebDataset rule that groups files into samples: the key is
 * a path up to the first dot of its basename, the rest is the extension,
 * compared lowercased.  "a/b.seg.png" is key "a/b", extension "seg.png".
 *
 * "Lowercased" means what WebDataset does, Python's str.lower() on the
 * name tarfile decoded (UTF-8, invalid bytes as surrogate escapes): every
 * valid UTF-8 character lowered by Unicode's full mapping ("Ä" -> "ä",
 * "İ" -> "i" + U+0307, a final capital sigma -> "ς"), every byte that is
 * not valid UTF-8 kept as it is.  The tables come from Python itself
 * (scripts/gen-lower).
 */
#include "core/internal.h"
#include "format/format.h"

#include <stdlib.h>

#include "format/lower_table.h"

int sk_sample_split(const char *path, size_t n, size_t *key_len, size_t *ext_off)
{
    /* memrchr/memchr: called for every member a scan or a pack sees */
    const char *sl = memrchr(path, '/', n);
    size_t base = sl ? (size_t)(sl - path) + 1 : 0;
    const char *dp = memchr(path + base, '.', n - base);
    size_t dot = dp ? (size_t)(dp - path) : n;
    /* Like WebDataset's base_plus_ext: at least one byte before the dot and
     * one after it, so ".hidden" and "name." hold no sample. */
    if (dot == n || dot == base || dot + 1 == n) return SK_E_INPUT;
    *key_len = dot;
    *ext_off = dot + 1;
    return SK_OK;
}

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < r[mid][0]) hi = mid;
        else if (cp > r[mid][1]) lo = mid + 1;
        else return 1;
    }
    return 0;
}

#define NELEM(a) (sizeof a / sizeof *a)
static int is_cased(uint32_t cp) { return in_ranges(cased_ranges, NELEM(cased_ranges), cp); }
static int is_ignorable(uint32_t cp)
{
    return in_ranges(case_ignorable_ranges, NELEM(case_ignorable_ranges), cp);
}

static uint32_t lower_of(uint32_t cp)
{
    size_t lo = 0, hi = NELEM(lower_map);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (cp < lower_map[mid][0]) hi = mid;
        else if (cp > lower_map[mid][0]) lo = mid + 1;
        else return lower_map[mid][1];
    }
    return cp;
}

/* One strictly valid UTF-8 character at s (no overlong forms, no
 * surrogates, at most U+10FFFF): its length, or 0 when s[0] does not
 * start one (Python's decoder then escapes that byte). */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned c = s[0];
    if (c < 0x80) return *cp = c, 1;
    size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (!len || len > n || c > 0xF4) return 0;
    uint32_t v = c & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (s[i] & 0x3F);
    }
    if ((len == 3 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
        (len == 4 && (v < 0x10000 || v > 0x10FFFF)))
        return 0;
    return *cp = v, len;
}

static size_t utf8_put(uint32_t cp, char *out)
{
    unsigned char *o = (unsigned char *)out;
    if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Python's Final_Sigma, forward half: no cased character follows once the
 * case-ignorable ones are skipped. */
static int sigma_ends(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint32_t cp;
        size_t k = utf8_next(s + i, n - i, &cp);
        if (!k) return 1; /* an escaped byte: neither cased nor ignorable */
        if (!is_ignorable(cp)) return !is_cased(cp);
        i += k;
    }
    return 1;
}

size_t sk_ext_lower(const char *in, size_t n, char *out)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t i = 0, o = 0;
    int prev_cased = 0; /* the last character that is not case-ignorable was cased */
    while (i < n) {
        if (s[i] < 0x80) { /* ASCII: no ASCII character is case-ignorable but ' . : ^ ` */
            unsigned char c = s[i++];
            out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            if (c != '\'' && c != '.' && c != ':' && c != '^' && c != '`')
                prev_cased = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
            continue;
        }
        uint32_t cp;
        size_t k = utf8_next(s + i, n - i, &cp);
        if (!k) { /* not UTF-8: the byte as it is */
            out[o++] = (char)s[i++];
            prev_cased = 0;
            continue;
        }
        i += k;
        if (cp == 0x130) { /* the one character that lowers to two */
            o += utf8_put('i', out + o);
            o += utf8_put(0x307, out + o);
        } else if (cp == 0x3A3) {
            o += utf8_put(prev_cased && sigma_ends(s + i, n - i) ? 0x3C2 : 0x3C3, out + o);
        } else {
            o += utf8_put(lower_of(cp), out + o);
        }
        if (!is_ignorable(cp)) prev_cased = is_cased(cp);
    }
    return o;
}

static int all_ascii(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0x80) return 0;
    return 1;
}

int sk_ext_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    if (!all_ascii(a, an) || !all_ascii(b, bn)) {
        /* compare the lowered forms (not the code points: bytes order) */
        char sa[512], sb[512];
        char *la = SK_EXT_LOWER_MAX(an) <= sizeof sa ? sa : malloc(SK_EXT_LOWER_MAX(an));
        char *lb = SK_EXT_LOWER_MAX(bn) <= sizeof sb ? sb : malloc(SK_EXT_LOWER_MAX(bn));
        int r = 0, done = la && lb;
        if (done) {
            size_t x = sk_ext_lower(a, an, la), y = sk_ext_lower(b, bn, lb);
            int d = memcmp(la, lb, x < y ? x : y);
            r = d ? (d < 0 ? -1 : 1) : x < y ? -1 : x > y;
        }
        if (la != sa) free(la);
        if (lb != sb) free(lb);
        if (done) return r; /* else (out of memory): ASCII rule below */
    }
    size_t n = an < bn ? an : bn;
    for (size_t i = 0; i < n; i++) {
        unsigned char ca = (unsigned char)a[i], cb = (unsigned char)b[i];
        if (ca >= 'A' && ca <= 'Z') ca += 32;
        if (cb >= 'A' && cb <= 'Z') cb += 32;
        if (ca != cb) return ca < cb ? -1 : 1;
    }
    return an < bn ? -1 : an > bn;
}
