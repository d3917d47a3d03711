/*
 * manifest.c - manifest.json, the dataset's table of contents: per shard its
 * relative URL, bytes, sample count, first global ordinal, CRC32C and index
 * URL, plus totals, extension counts and the options that shaped the output.
 * It holds no paths of the machine and no timestamps, so the same input and
 * options give the same bytes.  JSON through jansson.
 */
#include "core/internal.h"
#include "format/format.h"

#include <sys/uio.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MANIFEST_FORMAT "shardkit-manifest"
#define MANIFEST_VERSION 1

sk_manifest *sk_manifest_new(void)
{
    sk_manifest *m = calloc(1, sizeof *m);
    if (m) m->parts = 0;
    return m;
}

void sk_manifest_free(sk_manifest *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nshards; i++) {
        free(m->shards[i].url);
        free(m->shards[i].index_url);
    }
    for (size_t i = 0; i < m->nexts; i++) free(m->exts[i].ext);
    for (size_t i = 0; m->key_ranges && i < m->nshards; i++) {
        free(m->key_ranges[i].first);
        free(m->key_ranges[i].last);
    }
    free(m->key_ranges);
    free(m->shards);
    free(m->exts);
    free(m->tool);
    free(m->options_json);
    free(m);
}

int sk_manifest_add_shard(sk_manifest *m, const sk_manifest_shard *s, sk_error *err)
{
    size_t old_cap = m->cap_shards;
    SK_GUARD(sk_grow((void **)&m->shards, &m->cap_shards, m->nshards + 1, sizeof *m->shards, err));
    if (m->key_ranges && m->cap_shards != old_cap) { /* kept as long as shards */
        sk_key_range *r = sk_xrealloc(m->key_ranges, m->cap_shards * sizeof *r, err);
        if (!r) return SK_E_NOMEM;
        memset(r + old_cap, 0, (m->cap_shards - old_cap) * sizeof *r);
        m->key_ranges = r;
    }
    sk_manifest_shard *d = &m->shards[m->nshards];
    *d = *s;
    d->url = strdup(s->url);
    d->index_url = s->index_url ? strdup(s->index_url) : NULL;
    SK_FAIL_IF(!d->url || (s->index_url && !d->index_url), err, SK_E_NOMEM, "out of memory");
    d->first_ordinal = m->samples;
    m->nshards++;
    m->samples += s->samples;
    m->bytes += s->bytes;
    return SK_OK;
}

int sk_manifest_set_key_range(sk_manifest *m, size_t i, const char *first, size_t first_len,
                              const char *last, size_t last_len, sk_error *err)
{
    SK_FAIL_IF(i >= m->nshards, err, SK_E_USAGE, "key range for shard %zu of %zu", i, m->nshards);
    if (!m->key_ranges && !(m->key_ranges = calloc(m->cap_shards, sizeof *m->key_ranges)))
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    sk_key_range *r = &m->key_ranges[i];
    free(r->first);
    free(r->last);
    r->first = malloc(first_len + 1);
    r->last = malloc(last_len + 1);
    if (!r->first || !r->last) {
        free(r->first), free(r->last);
        *r = (sk_key_range){0};
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    memcpy(r->first, first, first_len), r->first[first_len] = 0;
    memcpy(r->last, last, last_len), r->last[last_len] = 0;
    r->first_len = first_len;
    r->last_len = last_len;
    return SK_OK;
}

int sk_manifest_key_range(const sk_manifest *m, size_t i, const char **first, size_t *first_len,
                          const char **last, size_t *last_len)
{
    if (!m->key_ranges || i >= m->nshards || !m->key_ranges[i].first) return 0;
    *first = m->key_ranges[i].first, *first_len = m->key_ranges[i].first_len;
    *last = m->key_ranges[i].last, *last_len = m->key_ranges[i].last_len;
    return 1;
}

int sk_key_ranges_ordered(const sk_key_range *r, const uint64_t *samples, size_t n)
{
    const sk_key_range *prev = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!r[i].first) {
            if (samples[i]) return 0;
            continue;
        }
        if (!samples[i] || sk_key_cmp(r[i].first, r[i].first_len, r[i].last, r[i].last_len) > 0)
            return 0;
        if (prev && sk_key_cmp(prev->last, prev->last_len, r[i].first, r[i].first_len) >= 0)
            return 0;
        prev = &r[i];
    }
    return prev != NULL;
}

/* The key ranges are written when they let a reader find a key's shard by
 * a binary search: ordered (above), and every key a UTF-8 string JSON
 * can carry exactly (sk_json_str would replace a bad byte). */
static int ranges_to_write(const sk_manifest *m)
{
    if (!m->key_ranges || !m->nshards) return 0;
    uint64_t *samples = malloc(m->nshards * sizeof *samples);
    if (!samples) return 0;
    for (size_t i = 0; i < m->nshards; i++) samples[i] = m->shards[i].samples;
    int ok = sk_key_ranges_ordered(m->key_ranges, samples, m->nshards);
    free(samples);
    for (size_t i = 0; ok && i < m->nshards; i++) {
        const sk_key_range *r = &m->key_ranges[i];
        if (!r->first) continue;
        json_t *a = json_stringn(r->first, r->first_len), *b = json_stringn(r->last, r->last_len);
        ok = a && b && !memchr(r->first, 0, r->first_len) && !memchr(r->last, 0, r->last_len);
        json_decref(a);
        json_decref(b);
    }
    return ok;
}

int sk_manifest_count_ext(sk_manifest *m, const char *ext, size_t ext_len, uint64_t count,
                          sk_error *err)
{
    for (size_t i = 0; i < m->nexts; i++)
        if (strlen(m->exts[i].ext) == ext_len && !memcmp(m->exts[i].ext, ext, ext_len)) {
            m->exts[i].count += count;
            m->members += count;
            return SK_OK;
        }
    sk_manifest_ext *p = sk_xrealloc(m->exts, (m->nexts + 1) * sizeof *p, err);
    if (!p) return SK_E_NOMEM;
    m->exts = p;
    p[m->nexts].ext = strndup(ext, ext_len);
    SK_FAIL_IF(!p[m->nexts].ext, err, SK_E_NOMEM, "out of memory");
    p[m->nexts].count = count;
    m->nexts++;
    m->members += count;
    return SK_OK;
}

static int ext_cmp(const void *a, const void *b)
{
    return strcmp(((const sk_manifest_ext *)a)->ext, ((const sk_manifest_ext *)b)->ext);
}

/* JSON strings must be UTF-8; a name that is not is written with each bad
 * byte as U+FFFD so the manifest stays valid (the index keeps exact bytes). */
json_t *sk_json_u64(uint64_t v)
{
    /* JSON integers here are 64-bit signed (jansson): larger values, which
     * only a seed can reach, go as a decimal string */
    char num[24];
    if (v <= (uint64_t)INT64_MAX) return json_integer((json_int_t)v);
    snprintf(num, sizeof num, "%llu", (unsigned long long)v);
    return json_string(num);
}

json_t *sk_json_str(const char *s)
{
    size_t n = strlen(s);
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *fixed = malloc(n * 3 + 1), *o = fixed;
    if (!fixed) return NULL;
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)s[i] < 0x80) *o++ = s[i];
        else memcpy(o, "\xef\xbf\xbd", 3), o += 3;
    }
    j = json_stringn(fixed, (size_t)(o - fixed));
    free(fixed);
    return j;
}

int sk_manifest_write_json(sk_manifest *m, const char *path, unsigned out_flags, uint64_t *file_len,
                           uint32_t *file_crc,
                           int *with_ranges, sk_error *err)
{
    json_t *root = json_object(), *shards = json_array(), *exts = json_object();
    json_t *opts = NULL;
    int rc = SK_OK;
    char *text = NULL;
    int ranges = ranges_to_write(m);
    if (m->options_json) {
        json_error_t je;
        opts = json_loads(m->options_json, 0, &je);
    }
    json_object_set_new(root, "format", json_string(MANIFEST_FORMAT));
    json_object_set_new(root, "version", json_integer(MANIFEST_VERSION));
    json_object_set_new(root, "tool", json_string(m->tool ? m->tool : "shardkit " SK_VERSION));
    json_object_set_new(root, "options", opts ? opts : json_object());
    if (m->parts > 0) {
        json_object_set_new(root, "part", json_integer(m->part));
        json_object_set_new(root, "parts", json_integer(m->parts));
    }
    for (size_t i = 0; i < m->nshards; i++) {
        const sk_manifest_shard *s = &m->shards[i];
        char crc[9];
        snprintf(crc, sizeof crc, "%08x", s->crc32c);
        json_t *o = json_object();
        json_object_set_new(o, "url", sk_json_str(s->url));
        json_object_set_new(o, "bytes", json_integer((json_int_t)s->bytes));
        json_object_set_new(o, "samples", json_integer((json_int_t)s->samples));
        json_object_set_new(o, "first_ordinal", json_integer((json_int_t)s->first_ordinal));
        json_object_set_new(o, "crc32c", json_string(crc));
        if (s->index_url) json_object_set_new(o, "index", sk_json_str(s->index_url));
        if (m->parts > 0) json_object_set_new(o, "part", json_integer(s->part));
        if (ranges && m->key_ranges[i].first) {
            const sk_key_range *r = &m->key_ranges[i];
            json_object_set_new(o, "first_key", json_stringn(r->first, r->first_len));
            json_object_set_new(o, "last_key", json_stringn(r->last, r->last_len));
        }
        json_array_append_new(shards, o);
    }
    json_object_set_new(root, "shards", shards);
    if (m->nexts) qsort(m->exts, m->nexts, sizeof *m->exts, ext_cmp); /* qsort(NULL, 0) is UB */
    for (size_t i = 0; i < m->nexts; i++)
        json_object_set_new(exts, m->exts[i].ext, json_integer((json_int_t)m->exts[i].count));
    json_t *totals = json_object();
    json_object_set_new(totals, "shards", json_integer((json_int_t)m->nshards));
    json_object_set_new(totals, "samples", json_integer((json_int_t)m->samples));
    json_object_set_new(totals, "members", json_integer((json_int_t)m->members));
    json_object_set_new(totals, "bytes", json_integer((json_int_t)m->bytes));
    json_object_set_new(root, "totals", totals);
    json_object_set_new(root, "extensions", exts);

    text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!text) { rc = sk_error_set(err, SK_E_NOMEM, "%s: cannot format manifest", path); goto cleanup; }
    struct iovec iov[2] = {{text, strlen(text)}, {(void *)"\n", 1}};
    rc = sk_out_write_iov(path, out_flags & SK_OUT_REGULAR, iov, 2, err);
    if (file_len) *file_len = iov[0].iov_len + 1;
    if (file_crc) *file_crc = sk_crc32c(sk_crc32c(0, text, iov[0].iov_len), "\n", 1);
    if (with_ranges) *with_ranges = ranges;
cleanup:
    free(text);
    json_decref(root);
    return rc;
}

static int get_u64(json_t *o, const char *k, uint64_t *out)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return -1;
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

int sk_manifest_parse(sk_manifest **out, const char *text, size_t len, const char *name,
                      sk_error *err)
{
    json_error_t je;
    *out = NULL;
    json_t *root = json_loadb(text, len, 0, &je);
    SK_FAIL_IF(!root, err, SK_E_CORRUPT, "%s: not valid JSON (line %d: %s)", name, je.line, je.text);
    int rc = SK_OK;
    sk_manifest *m = sk_manifest_new();
    json_t *fmt = json_object_get(root, "format"), *shards = json_object_get(root, "shards");
    uint64_t version = 0;
    if (!m) { rc = sk_error_set(err, SK_E_NOMEM, "out of memory"); goto cleanup; }
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), MANIFEST_FORMAT) ||
        get_u64(root, "version", &version) || !json_is_array(shards)) {
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: not a shardkit manifest", name);
        goto cleanup;
    }
    if (version != MANIFEST_VERSION) {
        rc = sk_error_set(err, SK_E_CORRUPT, "%s: manifest version %llu not supported", name,
                          (unsigned long long)version);
        goto cleanup;
    }
    json_t *tool = json_object_get(root, "tool"), *opts = json_object_get(root, "options");
    m->tool = strdup(json_is_string(tool) ? json_string_value(tool) : "");
    if (json_is_object(opts)) m->options_json = json_dumps(opts, JSON_PRESERVE_ORDER | JSON_COMPACT);
    uint64_t part, parts;
    if (!get_u64(root, "part", &part) && !get_u64(root, "parts", &parts)) {
        m->part = (int)part;
        m->parts = (int)parts;
    }
    size_t i;
    json_t *o;
    json_array_foreach(shards, i, o) {
        sk_manifest_shard s = {0};
        json_t *url = json_object_get(o, "url"), *idx = json_object_get(o, "index");
        json_t *crc = json_object_get(o, "crc32c");
        uint64_t first, p = 0;
        if (!json_is_string(url) || get_u64(o, "bytes", &s.bytes) ||
            get_u64(o, "samples", &s.samples) || get_u64(o, "first_ordinal", &first) ||
            !json_is_string(crc) || strlen(json_string_value(crc)) != 8) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: shard entry %zu is incomplete", name, i);
            goto cleanup;
        }
        s.crc32c = (uint32_t)strtoul(json_string_value(crc), NULL, 16);
        s.url = (char *)json_string_value(url);
        s.index_url = json_is_string(idx) ? (char *)json_string_value(idx) : NULL;
        if (!get_u64(o, "part", &p)) s.part = (int)p;
        if ((rc = sk_manifest_add_shard(m, &s, err))) goto cleanup;
        json_t *fk = json_object_get(o, "first_key"), *lk = json_object_get(o, "last_key");
        if ((fk || lk) && !(json_is_string(fk) && json_is_string(lk))) {
            rc = sk_error_set(err, SK_E_CORRUPT, "%s: shard %s: first_key and last_key must be "
                              "strings, both or neither", name, s.url);
            goto cleanup;
        }
        if (fk && (rc = sk_manifest_set_key_range(m, m->nshards - 1, json_string_value(fk),
                                                  json_string_length(fk), json_string_value(lk),
                                                  json_string_length(lk), err)))
            goto cleanup;
        if (first != m->shards[m->nshards - 1].first_ordinal) {
            rc = sk_error_set(err, SK_E_CORRUPT,
                              "%s: shard %s starts at ordinal %llu, the counts before it give %llu",
                              name, s.url, (unsigned long long)first,
                              (unsigned long long)m->shards[m->nshards - 1].first_ordinal);
            goto cleanup;
        }
    }
    const char *ext;
    json_t *cnt;
    json_object_foreach(json_object_get(root, "extensions"), ext, cnt) {
        if (!json_is_integer(cnt)) continue;
        if ((rc = sk_manifest_count_ext(m, ext, strlen(ext), (uint64_t)json_integer_value(cnt), err)))
            goto cleanup;
    }
cleanup:
    json_decref(root);
    if (rc) sk_manifest_free(m);
    else *out = m;
    return rc;
}

int sk_manifest_load(sk_manifest **out, const char *path, sk_error *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    SK_FAIL_IF(!f, err, errno == ENOENT ? SK_E_NOTFOUND : SK_E_IO, "%s: cannot open: %s", path,
               strerror(errno));
    sk_buf text = {0};
    char chunk[65536];
    size_t r;
    int rc = SK_OK;
    while (!rc && (r = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (sk_buf_add(&text, chunk, r))
            rc = sk_error_set(err, SK_E_NOMEM, "%s: out of memory reading the manifest", path);
    if (!rc && ferror(f)) rc = sk_error_set(err, SK_E_IO, "%s: read failed", path);
    fclose(f);
    if (!rc) rc = sk_manifest_parse(out, text.p ? text.p : "", text.len, path, err);
    sk_buf_free(&text);
    return rc;
}

int sk_manifest_resolve(const char *manifest, const char *url, char **out, sk_error *err)
{
    *out = NULL;
    const char *slash = strrchr(manifest, '/');
    size_t dl = slash ? (size_t)(slash - manifest) : 0;
    if (sk_is_s3_url(manifest)) {
        /* a manifest from a bucket is someone else's bytes: it may name
         * objects (s3:// URLs, or paths under its own prefix), never a
         * file on this machine */
        if (sk_is_s3_url(url)) return (*out = strdup(url)) ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
        char what[64];
        snprintf(what, sizeof what, "shard URL");
        if (url[0] == '/' || strstr(url, "://"))
            return sk_error_set(err, SK_E_CORRUPT, "%s: a manifest in S3 names '%s': only s3:// URLs "
                                "and paths under its own prefix are read from it", manifest, url);
        int rc = sk_name_check(url, strlen(url), what, err);
        if (rc) {
            char why[SK_ERROR_MAX];
            snprintf(why, sizeof why, "%s", err->msg);
            return sk_error_set(err, rc, "%s: %s", manifest, why);
        }
    } else if (url[0] == '/' || strstr(url, "://") || !dl) {
        /* a local manifest is the user's own: absolute paths and URLs stand */
        return (*out = strdup(url)) ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    if (asprintf(out, "%.*s/%s", (int)dl, manifest, url) < 0) {
        *out = NULL;
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    return SK_OK;
}
