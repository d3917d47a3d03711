/*
 * upload_sync.c - `upload --sync`: which objects already hold the bytes of
 * the local file that would be sent, so that a rerun sends nothing it sent
 * before (what `aws s3 sync` and `rclone copy` users expect).
 *
 * The destination prefix is read a listing page at a time, merged with the
 * keys asked about (one request per 1,000 objects, not a HEAD per file):
 * the keys come mostly in key order (trees walked sorted, data, then
 * indexes, then the manifest), so a page answers every key it spans, and
 * a key outside it starts a page just before it (start-after).  Memory is
 * one page whatever the destination holds.  The pages and the question
 * whether an object holds the file's bytes are the store's
 * (sk_store_list_page, sk_store_entry_same: for S3, its size and what S3
 * makes the ETag of the file's bytes); anything it cannot tell counts as
 * different, and the file is sent: a doubt costs a PUT, never a stale
 * object.
 */
#include "core/internal.h"
#include "io/store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    char *key;
    uint64_t size;
    char etag[80];
};

/* The page held: every object of the prefix with a key in (lo, hi], hi
 * the page's last key when more follow, else past the end. */
struct sk_upload_sync {
    sk_store_env env;
    char *url;    /* the destination prefix's location */
    char *prefix; /* its key prefix: the keys asked about begin with it */
    struct entry *e;
    size_t n, cap;
    char *lo;          /* the page began after this key; NULL: at the start */
    int loaded, truncated;
    int nomem;
    uint64_t part_size, threshold;
};

static void page_clear(sk_upload_sync *s)
{
    for (size_t i = 0; i < s->n; i++) free(s->e[i].key);
    s->n = 0;
}

static int add(void *ud, const sk_store_entry *v, size_t n)
{
    sk_upload_sync *s = ud;
    for (size_t i = 0; i < n; i++) {
        if (s->n == s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 1024;
            struct entry *e = realloc(s->e, cap * sizeof *e);
            if (!e) return s->nomem = 1;
            s->e = e, s->cap = cap;
        }
        struct entry *e = &s->e[s->n];
        if (asprintf(&e->key, "%s%s", s->prefix, v[i].rel) < 0) return s->nomem = 1;
        e->size = v[i].size;
        snprintf(e->etag, sizeof e->etag, "%s", v[i].etag);
        s->n++;
    }
    return 0;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

int sk_upload_sync_open(sk_upload_sync **out, sk_s3 *s3, const char *bucket, const char *prefix,
                        uint64_t part_size, uint64_t multipart_threshold, sk_error *err)
{
    sk_upload_sync *s = calloc(1, sizeof *s);
    SK_FAIL_IF(!s, err, SK_E_NOMEM, "out of memory");
    sk_store_env_init(&s->env, s3);
    s->part_size = part_size ? part_size : 8ull << 20;
    s->threshold = multipart_threshold;
    if (!(s->prefix = strdup(prefix ? prefix : "")) ||
        !(s->url = sk_store_bucket_url(bucket, s->prefix))) {
        sk_upload_sync_free(s);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    *out = s;
    return SK_OK;
}

/* The page that begins after `after` (NULL: the first). */
static int load_page(sk_upload_sync *s, const char *after, sk_error *err)
{
    char *lo = after ? strdup(after) : NULL;
    SK_FAIL_IF(after && !lo, err, SK_E_NOMEM, "out of memory");
    page_clear(s);
    free(s->lo);
    s->lo = lo;
    s->loaded = 0;
    /* after is a key asked about, or one just below it: inside the prefix,
     * or a beginning of it, which every key listed sorts after */
    size_t plen = strlen(s->prefix);
    const char *rel = lo && !strncmp(lo, s->prefix, plen) ? lo + plen : NULL;
    SK_GUARD(sk_store_list_page(s->url, &s->env, rel, add, s, &s->truncated, err));
    SK_FAIL_IF(s->nomem, err, SK_E_NOMEM, "out of memory");
    if (s->n > 1) qsort(s->e, s->n, sizeof *s->e, by_key); /* S3's order; a server's may differ */
    s->loaded = 1;
    return SK_OK;
}

/* key without its last character (a whole UTF-8 one: S3 takes only valid
 * UTF-8): a key below key with nothing between them but keys that begin
 * with it, so a page after it starts at key (if it exists). */
static char *below(const char *key)
{
    size_t n = strlen(key);
    while (n && ((unsigned char)key[n - 1] & 0xc0) == 0x80) n--; /* continuation bytes */
    if (n) n--;
    return strndup(key, n);
}

/* The object at key (NULL: none), loading pages as the walk needs them. */
static int find(sk_upload_sync *s, const char *key, const struct entry **out, sk_error *err)
{
    *out = NULL;
    for (;;) {
        int after_lo = !s->lo || strcmp(key, s->lo) > 0;
        int past = s->loaded && s->truncated && strcmp(key, s->e[s->n - 1].key) > 0;
        if (s->loaded && after_lo && !past) break;
        /* the next page: after the page's last key when the walk goes on
         * in order, or just below key when it jumps (a later phase, a
         * directory's names out of key order) */
        char *b = below(key);
        SK_FAIL_IF(!b, err, SK_E_NOMEM, "out of memory");
        const char *after = b;
        if (past && strcmp(s->e[s->n - 1].key, b) > 0) after = s->e[s->n - 1].key;
        char *a = strdup(after);
        free(b);
        SK_FAIL_IF(!a, err, SK_E_NOMEM, "out of memory");
        int rc = load_page(s, *a ? a : NULL, err);
        free(a);
        SK_GUARD(rc);
    }
    struct entry k = {.key = (char *)key};
    *out = bsearch(&k, s->e, s->n, sizeof *s->e, by_key);
    return SK_OK;
}

void sk_upload_sync_free(sk_upload_sync *s)
{
    if (!s) return;
    page_clear(s);
    free(s->e);
    free(s->lo), free(s->url), free(s->prefix);
    sk_store_env_release(&s->env);
    free(s);
}

int sk_upload_sync_same(sk_upload_sync *s, const char *path, const char *key, uint64_t size, sk_error *err)
{
    const struct entry *e;
    int lrc = find(s, key, &e, err);
    if (lrc) return -lrc;
    if (!e) return 0;
    sk_store_entry v = {.url = NULL, .rel = e->key, .size = e->size, .etag = e->etag, .crc32c = ""};
    return sk_store_entry_same(&v, path, size, s->part_size, err);
}
