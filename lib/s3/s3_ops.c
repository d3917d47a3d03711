/*
 * s3_ops.c - single S3 operations on top of the engine: HEAD, ranged GET
 * (to a buffer, a callback, or asynchronously), PUT, DELETE, the listings
 * (ListObjectsV2, ListMultipartUploads, ListParts, each paged to the end)
 * and the multipart calls the transfer code builds on.
 */
#include "s3/s3_internal.h"


#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void sk_s3_req_init(sk_s3_req *r, sk_s3 *s3, const char *method, const char *bucket,
                    const char *key)
{
    memset(r, 0, sizeof *r);
    r->s3 = s3, r->method = method, r->bucket = bucket, r->key = key;
}

void sk_s3_req_query(sk_s3_req *r, const char *name, const char *value)
{
    sk_buf b = {0};
    if (r->query[0]) sk_buf_add(&b, "&", 1);
    sk_buf_add(&b, name, strlen(name));
    if (value) {
        sk_buf_add(&b, "=", 1);
        sk_s3_uri_encode(&b, value, 0);
    }
    if (b.p && strlen(r->query) + b.len < sizeof r->query) strcat(r->query, b.p);
    sk_buf_free(&b);
}

static void copy_err(sk_error *err, const sk_s3_req *r)
{
    if (err) *err = r->err;
}

void sk_s3_composite_crc(const uint32_t *crcs, int n, char out[24])
{
    uint32_t c = 0;
    for (int i = 0; i < n; i++) {
        unsigned char be[4] = {(unsigned char)(crcs[i] >> 24), (unsigned char)(crcs[i] >> 16),
                               (unsigned char)(crcs[i] >> 8), (unsigned char)crcs[i]};
        c = sk_crc32c(c, be, 4);
    }
    char b64[9];
    sk_s3_crc32c_b64(c, b64);
    snprintf(out, 24, "%s-%d", b64, n);
}

int sk_s3_head(sk_s3 *s3, const char *bucket, const char *key, sk_s3_object *out, sk_error *err)
{
    return sk_s3_head_meta(s3, bucket, key, out, NULL, 0, err);
}

int sk_s3_head_meta(sk_s3 *s3, const char *bucket, const char *key, sk_s3_object *out, char *meta,
                    size_t cap, sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "HEAD", bucket, key);
    sk_s3_req_header(&r, "x-amz-checksum-mode:ENABLED");
    int rc = sk_s3_run(&r);
    if (rc) {
        copy_err(err, &r);
        if (r.status == 404) sk_error_set(err, SK_E_NOTFOUND, "s3://%s/%s: no such object", bucket, key);
    } else {
        memset(out, 0, sizeof *out);
        out->size = r.content_length;
        snprintf(out->etag, sizeof out->etag, "%s", r.etag);
        snprintf(out->crc32c, sizeof out->crc32c, "%s", r.crc32c);
        snprintf(out->key, sizeof out->key, "%s", key);
        if (meta && cap) snprintf(meta, cap, "%s", r.meta_etag);
    }
    sk_buf_free(&r.resp);
    return rc;
}

static void range_hdr(sk_s3_req *r, uint64_t offset, uint64_t len)
{
    if (len) sk_s3_req_header(r, "range:bytes=%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
    else if (offset) sk_s3_req_header(r, "range:bytes=%" PRIu64 "-", offset);
}

int sk_s3_get(sk_s3 *s3, const char *bucket, const char *key, uint64_t offset, uint64_t len,
              void *dst, size_t dst_capacity, size_t *got, sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "GET", bucket, key);
    range_hdr(&r, offset, len);
    r.dst = dst, r.dst_cap = dst_capacity;
    int rc = sk_s3_run(&r);
    if (rc) copy_err(err, &r);
    if (got) *got = r.dst_len;
    sk_buf_free(&r.resp);
    return rc;
}

int sk_s3_get_cb(sk_s3 *s3, const char *bucket, const char *key, uint64_t offset, uint64_t len,
                 sk_s3_sink sink, void *ud, sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "GET", bucket, key);
    range_hdr(&r, offset, len);
    r.sink = sink, r.sink_ud = ud;
    int rc = sk_s3_run(&r);
    if (rc) copy_err(err, &r);
    sk_buf_free(&r.resp);
    return rc;
}

int sk_s3_put(sk_s3 *s3, const char *bucket, const char *key, const void *data, size_t len,
              sk_error *err)
{
    return sk_s3_put_meta(s3, bucket, key, data, len, NULL, err);
}

int sk_s3_put_meta(sk_s3 *s3, const char *bucket, const char *key, const void *data, size_t len,
                   const char *meta_etag, sk_error *err)
{
    sk_s3_req r;
    char b64[9];
    sk_s3_req_init(&r, s3, "PUT", bucket, key);
    sk_s3_crc32c_b64(sk_crc32c(0, data, len), b64);
    sk_s3_req_header(&r, "x-amz-checksum-crc32c:%s", b64);
    /* an ETag is hex digits and '-': nothing to quote in a header */
    if (meta_etag && *meta_etag && !meta_etag[strspn(meta_etag, "0123456789abcdefABCDEF-")])
        sk_s3_req_header(&r, "x-amz-meta-shardkit-etag:%s", meta_etag);
    r.body = data ? data : (const void *)"", r.body_len = len;
    int rc = sk_s3_run(&r);
    if (rc) copy_err(err, &r);
    sk_buf_free(&r.resp);
    return rc;
}

int sk_s3_delete(sk_s3 *s3, const char *bucket, const char *key, sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "DELETE", bucket, key);
    int rc = sk_s3_run(&r);
    if (rc) copy_err(err, &r);
    sk_buf_free(&r.resp);
    return rc;
}

int sk_s3_abort_upload(sk_s3 *s3, const char *bucket, const char *key, const char *upload_id,
                       sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "DELETE", bucket, key);
    sk_s3_req_query(&r, "uploadId", upload_id);
    int rc = sk_s3_run(&r);
    if (rc == SK_E_NOTFOUND) rc = 0; /* already gone */
    else if (rc) copy_err(err, &r);
    sk_buf_free(&r.resp);
    return rc;
}

/* ------------------------------------------------------------ listings */

/* The three listings (objects, unfinished uploads, an upload's parts) go
 * through one pager: it asks for pages while the server says the listing
 * is truncated and hands a token for the next one.  A server (a bug, or a
 * hostile endpoint) could keep that up forever, so every token is
 * remembered (its hash) and a repeat ends the listing with an error; and
 * since new tokens cost it nothing, the pages are capped too: all of them
 * (a million pages of S3's 1,000 keys is far past any dataset), and the
 * empty truncated ones (S3 may send a few; a thousand is a loop). */
#define LIST_MAX_PAGES 1000000u
#define LIST_MAX_EMPTY 1000u

typedef struct list_state {
    sk_s3_object obj;
    int in_item, truncated, stop, long_key;
    uint64_t *seen; /* FNV-1a of every page's continuation token(s) */
    size_t nseen, capseen;
    size_t items; /* on the page being parsed */
    char token[1024], marker2[1024];
    sk_s3_list_fn fn;
    sk_s3_uploads_fn ufn;
    void *ud;
    char upload_id[512];
    /* parts */
    sk_s3_part part, *parts;
    int nparts, capparts, nomem;
} list_state;

/* What one kind of listing adds to the pager: its request, its parser. */
typedef struct listing {
    const char *bucket, *key; /* the request's; key "" for a bucket listing */
    void (*query)(sk_s3_req *r, const struct listing *l, const list_state *s);
    void (*cb)(void *ud, int end, const char *name, const char *text);
    const char *prefix, *upload_id;
    const char *start_after; /* objects: the listing begins after this key (NULL: none) */
    int one_page;            /* stop after the first page (sk_s3_list_page) */
    char what[1200]; /* the listing, for messages */
} listing;

static int list_pages(sk_s3 *s3, const listing *l, list_state *s, sk_error *err)
{
    size_t pages = 0, empty = 0;
    int rc;
    for (;;) {
        sk_s3_req r;
        sk_s3_req_init(&r, s3, "GET", l->bucket, l->key);
        l->query(&r, l, s);
        rc = sk_s3_run(&r);
        s->truncated = 0, s->token[0] = 0, s->marker2[0] = 0, s->items = 0;
        if (!rc) rc = sk_s3_xml_parse(r.resp.p, r.resp.len, l->cb, s, err);
        else copy_err(err, &r);
        sk_buf_free(&r.resp);
        pages++;
        if (!rc && s->nomem) rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc && s->long_key)
            rc = sk_error_set(err, SK_E_REMOTE, "%s: the listing holds a key longer than 1024 bytes",
                              l->what);
        if (rc || s->stop || !s->truncated || !s->token[0] || l->one_page) break;
        if (!s->items && ++empty > LIST_MAX_EMPTY) {
            rc = sk_error_set(err, SK_E_REMOTE, "%s: %zu empty pages that say the listing goes on "
                              "(over the cap of %u): the server is looping", l->what, empty,
                              LIST_MAX_EMPTY);
            break;
        }
        if (pages >= LIST_MAX_PAGES) {
            rc = sk_error_set(err, SK_E_REMOTE, "%s: the listing goes on past %u pages (the cap): "
                              "the server is looping", l->what, LIST_MAX_PAGES);
            break;
        }
        uint64_t h = sk_fnv1a64(s->token, strlen(s->token)) ^
                     (sk_fnv1a64(s->marker2, strlen(s->marker2)) * 31);
        for (size_t i = 0; i < s->nseen && !rc; i++)
            if (s->seen[i] == h)
                rc = sk_error_set(err, SK_E_REMOTE, "%s: the listing repeats its continuation token "
                                  "after %zu pages: the server is looping", l->what, pages);
        if (!rc) rc = sk_grow((void **)&s->seen, &s->capseen, s->nseen + 1, sizeof *s->seen, err);
        if (rc) break;
        s->seen[s->nseen++] = h;
    }
    free(s->seen);
    s->seen = NULL;
    return rc;
}

static void objects_cb(void *ud, int end, const char *name, const char *text)
{
    list_state *s = ud;
    if (!end) {
        if (!strcmp(name, "Contents")) memset(&s->obj, 0, sizeof s->obj), s->in_item = 1;
        return;
    }
    if (s->in_item) {
        if (!strcmp(name, "Key")) {
            if (strlen(text) >= sizeof s->obj.key) s->long_key = 1; /* not an S3 key: refused */
            snprintf(s->obj.key, sizeof s->obj.key, "%s", text);
        } else if (!strcmp(name, "Size")) s->obj.size = strtoull(text, NULL, 10);
        else if (!strcmp(name, "ETag")) snprintf(s->obj.etag, sizeof s->obj.etag, "%s", text[0] == '"' ? text + 1 : text);
        else if (!strcmp(name, "ChecksumCRC32C")) snprintf(s->obj.crc32c, sizeof s->obj.crc32c, "%s", text);
        else if (!strcmp(name, "Contents")) {
            s->in_item = 0;
            s->items++;
            char *q = strchr(s->obj.etag, '"');
            if (q) *q = 0;
            if (!s->stop && s->fn(s->ud, &s->obj)) s->stop = 1;
        }
        return;
    }
    if (!strcmp(name, "IsTruncated")) s->truncated = !strcmp(text, "true");
    else if (!strcmp(name, "NextContinuationToken")) snprintf(s->token, sizeof s->token, "%s", text);
}

static void objects_query(sk_s3_req *r, const listing *l, const list_state *s)
{
    sk_s3_req_query(r, "list-type", "2");
    if (l->prefix && *l->prefix) sk_s3_req_query(r, "prefix", l->prefix);
    if (s->token[0]) sk_s3_req_query(r, "continuation-token", s->token);
    else if (l->start_after && *l->start_after) sk_s3_req_query(r, "start-after", l->start_after);
}

int sk_s3_list_page(sk_s3 *s3, const char *bucket, const char *prefix, const char *start_after,
                    sk_s3_list_fn fn, void *ud, int *truncated, sk_error *err)
{
    list_state s;
    memset(&s, 0, sizeof s);
    s.fn = fn, s.ud = ud;
    listing l = {.bucket = bucket, .key = "", .query = objects_query, .cb = objects_cb,
                 .prefix = prefix, .start_after = start_after, .one_page = 1};
    snprintf(l.what, sizeof l.what, "s3://%s/%s", bucket, prefix ? prefix : "");
    int rc = list_pages(s3, &l, &s, err);
    *truncated = s.truncated;
    return rc;
}

int sk_s3_list(sk_s3 *s3, const char *bucket, const char *prefix, sk_s3_list_fn fn, void *ud,
               sk_error *err)
{
    list_state s;
    memset(&s, 0, sizeof s);
    s.fn = fn, s.ud = ud;
    listing l = {.bucket = bucket, .key = "", .query = objects_query, .cb = objects_cb,
                 .prefix = prefix};
    snprintf(l.what, sizeof l.what, "s3://%s/%s", bucket, prefix ? prefix : "");
    return list_pages(s3, &l, &s, err);
}

static void uploads_cb(void *ud, int end, const char *name, const char *text)
{
    list_state *s = ud;
    if (!end) {
        if (!strcmp(name, "Upload")) s->in_item = 1, s->obj.key[0] = 0, s->upload_id[0] = 0;
        return;
    }
    if (s->in_item) {
        if (!strcmp(name, "Key")) snprintf(s->obj.key, sizeof s->obj.key, "%s", text);
        else if (!strcmp(name, "UploadId")) snprintf(s->upload_id, sizeof s->upload_id, "%s", text);
        else if (!strcmp(name, "Upload")) {
            s->in_item = 0;
            s->items++;
            if (!s->stop && s->ufn(s->ud, s->obj.key, s->upload_id)) s->stop = 1;
        }
        return;
    }
    if (!strcmp(name, "IsTruncated")) s->truncated = !strcmp(text, "true");
    else if (!strcmp(name, "NextKeyMarker")) snprintf(s->token, sizeof s->token, "%s", text);
    else if (!strcmp(name, "NextUploadIdMarker")) snprintf(s->marker2, sizeof s->marker2, "%s", text);
}

static void uploads_query(sk_s3_req *r, const listing *l, const list_state *s)
{
    sk_s3_req_query(r, "uploads", NULL);
    if (l->prefix && *l->prefix) sk_s3_req_query(r, "prefix", l->prefix);
    if (s->token[0]) sk_s3_req_query(r, "key-marker", s->token);
    if (s->marker2[0]) sk_s3_req_query(r, "upload-id-marker", s->marker2);
}

int sk_s3_list_uploads(sk_s3 *s3, const char *bucket, const char *prefix, sk_s3_uploads_fn fn,
                       void *ud, sk_error *err)
{
    list_state s;
    memset(&s, 0, sizeof s);
    s.ufn = fn, s.ud = ud;
    listing l = {.bucket = bucket, .key = "", .query = uploads_query, .cb = uploads_cb,
                 .prefix = prefix};
    snprintf(l.what, sizeof l.what, "s3://%s/%s (unfinished uploads)", bucket, prefix ? prefix : "");
    return list_pages(s3, &l, &s, err);
}

static void parts_cb(void *ud, int end, const char *name, const char *text)
{
    list_state *s = ud;
    if (!end) {
        if (!strcmp(name, "Part")) memset(&s->part, 0, sizeof s->part), s->in_item = 1;
        return;
    }
    if (s->in_item) {
        if (!strcmp(name, "PartNumber")) s->part.number = atoi(text);
        else if (!strcmp(name, "Size")) s->part.size = strtoull(text, NULL, 10);
        else if (!strcmp(name, "ETag")) {
            snprintf(s->part.etag, sizeof s->part.etag, "%s", text[0] == '"' ? text + 1 : text);
            char *q = strchr(s->part.etag, '"');
            if (q) *q = 0;
        } else if (!strcmp(name, "ChecksumCRC32C")) {
            snprintf(s->part.crc32c, sizeof s->part.crc32c, "%s", text);
        } else if (!strcmp(name, "Part")) {
            s->in_item = 0;
            s->items++;
            if (s->nparts == s->capparts) {
                int cap = s->capparts ? s->capparts * 2 : 64;
                sk_s3_part *p = realloc(s->parts, (size_t)cap * sizeof *p);
                if (!p) {
                    s->nomem = 1;
                    return;
                }
                s->parts = p, s->capparts = cap;
            }
            s->parts[s->nparts++] = s->part;
        }
        return;
    }
    if (!strcmp(name, "IsTruncated")) s->truncated = !strcmp(text, "true");
    else if (!strcmp(name, "NextPartNumberMarker")) snprintf(s->token, sizeof s->token, "%s", text);
}

static void parts_query(sk_s3_req *r, const listing *l, const list_state *s)
{
    sk_s3_req_query(r, "uploadId", l->upload_id);
    if (s->token[0]) sk_s3_req_query(r, "part-number-marker", s->token);
}

static int part_cmp(const void *a, const void *b)
{
    return ((const sk_s3_part *)a)->number - ((const sk_s3_part *)b)->number;
}

int sk_s3_mpu_list_parts(sk_s3 *s3, const char *bucket, const char *key, const char *upload_id,
                         sk_s3_part **parts, int *n, sk_error *err)
{
    list_state s;
    memset(&s, 0, sizeof s);
    listing l = {.bucket = bucket, .key = key, .query = parts_query, .cb = parts_cb,
                 .upload_id = upload_id};
    snprintf(l.what, sizeof l.what, "s3://%s/%s (parts)", bucket, key);
    int rc = list_pages(s3, &l, &s, err);
    if (rc) {
        free(s.parts);
        return rc;
    }
    if (s.nparts) qsort(s.parts, (size_t)s.nparts, sizeof *s.parts, part_cmp);
    *parts = s.parts, *n = s.nparts;
    return 0;
}

typedef struct create_state {
    char *id;
    size_t cap;
} create_state;

static void create_cb(void *ud, int end, const char *name, const char *text)
{
    create_state *c = ud;
    if (end && !strcmp(name, "UploadId")) snprintf(c->id, c->cap, "%s", text);
}

int sk_s3_mpu_create(sk_s3 *s3, const char *bucket, const char *key, char *upload_id,
                     size_t cap, sk_error *err)
{
    sk_s3_req r;
    sk_s3_req_init(&r, s3, "POST", bucket, key);
    sk_s3_req_query(&r, "uploads", NULL);
    sk_s3_req_header(&r, "x-amz-checksum-algorithm:CRC32C");
    r.body = (const unsigned char *)"", r.body_len = 0;
    int rc = sk_s3_run(&r);
    create_state c = {upload_id, cap};
    upload_id[0] = 0;
    if (!rc) rc = sk_s3_xml_parse(r.resp.p, r.resp.len, create_cb, &c, err);
    else copy_err(err, &r);
    if (!rc && !upload_id[0])
        rc = sk_error_set(err, SK_E_REMOTE, "s3://%s/%s: no UploadId in the answer", bucket, key);
    sk_buf_free(&r.resp);
    return rc;
}

int sk_s3_mpu_complete_req(sk_s3_req *r, sk_s3 *s3, const char *bucket, const char *key,
                           const char *upload_id, const sk_s3_part *parts, int n,
                           sk_buf *body)
{
    body->len = 0;
    int rc = sk_buf_add(body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">", 73);
    for (int i = 0; i < n && !rc; i++) {
        char line[400];
        snprintf(line, sizeof line, "<Part><ETag>\"%s\"</ETag>", parts[i].etag);
        rc |= sk_buf_add(body, line, strlen(line));
        if (parts[i].crc32c[0]) {
            snprintf(line, sizeof line, "<ChecksumCRC32C>%s</ChecksumCRC32C>", parts[i].crc32c);
            rc |= sk_buf_add(body, line, strlen(line));
        }
        snprintf(line, sizeof line, "<PartNumber>%d</PartNumber></Part>", parts[i].number);
        rc |= sk_buf_add(body, line, strlen(line));
    }
    rc |= sk_buf_add(body, "</CompleteMultipartUpload>", 26);
    sk_s3_req_init(r, s3, "POST", bucket, key);
    sk_s3_req_query(r, "uploadId", upload_id);
    sk_s3_req_header(r, "content-type:application/xml");
    r->body = (const unsigned char *)body->p, r->body_len = body->len;
    r->body_signed = 1;
    r->check_body_error = 1;
    return rc ? SK_E_NOMEM : 0;
}

/* ------------------------------------------------------ async small GETs */

typedef struct async_get {
    sk_s3_req r;
    char *bucket, *key;
    sk_s3_get_done done;
    void *ud;
} async_get;

static void async_done(sk_s3_req *r)
{
    async_get *a = (async_get *)r;
    a->done(a->ud, r->rc, &r->err, r->resp.p ? r->resp.p : "", r->resp.len);
    sk_buf_free(&r->resp);
    free(a->bucket), free(a->key), free(a);
}

int sk_s3_get_async(sk_s3 *s3, const char *bucket, const char *key, sk_s3_get_done done, void *ud,
                    sk_error *err)
{
    async_get *a = calloc(1, sizeof *a);
    SK_FAIL_IF(!a, err, SK_E_NOMEM, "out of memory");
    a->bucket = strdup(bucket), a->key = strdup(key);
    if (!a->bucket || !a->key) {
        free(a->bucket), free(a->key), free(a);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    sk_s3_req_init(&a->r, s3, "GET", a->bucket, a->key);
    a->done = done, a->ud = ud;
    a->r.done = async_done;
    sk_s3_submit(&a->r);
    return 0;
}
