/*
 * brace.c - brace patterns, the way WebDataset users name shard lists
 * ("train-{000000..000099}.tar", "{train,val}-{0..3}.tar"), expanded as the
 * Python braceexpand package does: numeric ranges zero padded when a bound
 * has a leading zero, comma alternatives, nesting, groups multiplied out
 * left to right.  Braces holding neither ".." nor a comma stay literal.
 * Used by `shardkit index`, `get`, the reader and the shard tools alike.
 */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* A pattern like {0..99999999} times a few more groups could ask for
 * billions of names; refuse instead of exhausting memory.  The cost is
 * linear in the names made before the refusal (about 0.6 us and 55 bytes a
 * name), so the cap is also how long a 50-byte hostile pattern can keep a
 * tool busy: 2,000,000 names (the largest public WebDataset sets have about
 * 1.3 million shards) is a second and ~110 MB, where 10,000,000 was 6 s and
 * 0.5 GB (a fuzzer's slow unit). */
#define BRACE_MAX 2000000u
/* ... nor a few long groups billions of bytes. */
#define BRACE_BYTES_MAX ((size_t)128 << 20)

struct list {
    char **v;
    size_t n, cap, bytes;
};

static int push(struct list *l, char *s, sk_error *err)
{
    if (!s) return sk_error_set(err, SK_E_NOMEM, "out of memory expanding a brace pattern");
    if (l->n >= BRACE_MAX) {
        free(s);
        return sk_error_set(err, SK_E_USAGE, "brace pattern expands to over %u names", BRACE_MAX);
    }
    l->bytes += strlen(s) + 1;
    if (l->bytes > BRACE_BYTES_MAX) {
        free(s);
        return sk_error_set(err, SK_E_USAGE, "brace pattern expands to over %zu MiB of names",
                            BRACE_BYTES_MAX >> 20);
    }
    if (sk_grow((void **)&l->v, &l->cap, l->n + 2, sizeof *l->v, err)) {
        free(s);
        return SK_E_NOMEM;
    }
    l->v[l->n++] = s;
    l->v[l->n] = NULL;
    return SK_OK;
}

static char *concat3(const char *a, size_t an, const char *b, size_t bn, const char *c)
{
    size_t cn = strlen(c);
    char *s = malloc(an + bn + cn + 1);
    if (!s) return NULL;
    memcpy(s, a, an);
    memcpy(s + an, b, bn);
    memcpy(s + an + bn, c, cn + 1);
    return s;
}

/* Parses "[-]digits" spanning exactly s[0..n); returns 0 on success. */
static int parse_int(const char *s, size_t n, long long *v)
{
    size_t i = 0;
    int neg = 0;
    if (i < n && s[i] == '-') neg = 1, i++;
    if (i == n || n - i > 18) return -1;
    long long x = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        x = x * 10 + (s[i] - '0');
    }
    *v = neg ? -x : x;
    return 0;
}

static int expand(const char *s, struct list *out, int depth, sk_error *err);

/* Expands prefix + alt + rest for one alternative. */
static int expand_with(const char *s, size_t i, const char *alt, size_t alen, const char *rest,
                       struct list *out, int depth, sk_error *err)
{
    char *t = concat3(s, i, alt, alen, rest);
    SK_FAIL_IF(!t, err, SK_E_NOMEM, "out of memory expanding a brace pattern");
    int rc = expand(t, out, depth + 1, err);
    free(t);
    return rc;
}

static int expand(const char *s, struct list *out, int depth, sk_error *err)
{
    SK_FAIL_IF(depth > 64, err, SK_E_USAGE, "brace pattern nests too deeply");
    /* First '{' with a matching '}'. */
    size_t i = 0, j = 0;
    int found = 0;
    for (i = 0; s[i]; i++) {
        if (s[i] != '{') continue;
        int lvl = 0;
        for (j = i; s[j]; j++) {
            if (s[j] == '{') lvl++;
            else if (s[j] == '}' && --lvl == 0) break;
        }
        if (s[j]) {
            found = 1;
            break;
        }
    }
    if (!found) return push(out, strdup(s), err);
    const char *body = s + i + 1, *rest = s + j + 1;
    size_t blen = j - i - 1;

    /* Numeric range lo..hi. */
    const char *dots = NULL;
    for (size_t k = 0; k + 1 < blen; k++)
        if (body[k] == '.' && body[k + 1] == '.') {
            dots = body + k;
            break;
        }
    long long lo, hi;
    if (dots && !parse_int(body, (size_t)(dots - body), &lo) &&
        !parse_int(dots + 2, blen - (size_t)(dots - body) - 2, &hi)) {
        size_t l1 = (size_t)(dots - body), l2 = blen - l1 - 2;
        int pad = (l1 > 1 && body[body[0] == '-'] == '0') || (l2 > 1 && dots[2 + (dots[2] == '-')] == '0');
        int width = pad ? (int)(l1 > l2 ? l1 : l2) : 0;
        long long step = lo <= hi ? 1 : -1;
        SK_FAIL_IF((lo <= hi ? hi - lo : lo - hi) >= (long long)BRACE_MAX, err, SK_E_USAGE,
                   "brace range {%.*s} is too long", (int)blen, body);
        for (long long v = lo;; v += step) {
            char num[32];
            int k = snprintf(num, sizeof num, "%0*lld", width, v);
            SK_GUARD(expand_with(s, i, num, (size_t)k, rest, out, depth, err));
            if (v == hi) break;
        }
        return SK_OK;
    }
    /* Alternatives split at top-level commas. */
    int lvl = 0, commas = 0;
    for (size_t k = 0; k < blen; k++) {
        if (body[k] == '{') lvl++;
        else if (body[k] == '}') lvl--;
        else if (body[k] == ',' && lvl == 0) commas++;
    }
    if (!commas) {
        /* Literal braces: keep "{...}" and expand what follows it. */
        struct list tail = {0};
        int rc = expand(rest, &tail, depth + 1, err);
        for (size_t k = 0; k < tail.n; k++) {
            if (!rc) rc = push(out, concat3(s, j + 1, "", 0, tail.v[k]), err);
            free(tail.v[k]);
        }
        free(tail.v);
        return rc;
    }
    size_t start = 0;
    lvl = 0;
    for (size_t k = 0; k <= blen; k++) {
        if (k < blen && body[k] == '{') lvl++;
        else if (k < blen && body[k] == '}') lvl--;
        if (k == blen || (body[k] == ',' && lvl == 0)) {
            SK_GUARD(expand_with(s, i, body + start, k - start, rest, out, depth, err));
            start = k + 1;
        }
    }
    return SK_OK;
}

void sk_brace_free(char **list)
{
    if (!list) return;
    for (char **p = list; *p; p++) free(*p);
    free(list);
}

int sk_brace_expand(const char *pattern, char ***out, size_t *count, sk_error *err)
{
    struct list l = {0};
    *out = NULL;
    int rc = expand(pattern, &l, 0, err);
    if (!rc && !l.v) rc = push(&l, strdup(""), err);
    if (rc) {
        if (l.v) {
            l.v[l.n] = NULL;
            sk_brace_free(l.v);
        }
        return rc;
    }
    *out = l.v;
    if (count) *count = l.n;
    return SK_OK;
}
