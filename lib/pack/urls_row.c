/*
 * urls_row.c - one row of `pack --from-urls` after its download: the
 * image checked (and resized as pack's image options say), the hash of
 * the bytes as served, the expected hash compared, and the members and
 * lines that describe it (the .json member, the status-file line), with
 * img2dataset's field names.  Runs on the image threads: it touches only
 * its item.  Everything in a row is data from outside: it goes into JSON
 * through jansson (bytes that are not UTF-8 become U+FFFD), never into a
 * path or a shell.
 */
#include "pack/urls_int.h"
#include "format/format.h"
#include "s3/s3_internal.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

const char *sk_url_status_name(int status)
{
    return status == URL_OK ? "success" : status == URL_FAILED_RESIZE ? "failed_to_resize"
                                                                       : "failed_to_download";
}

static void hexify(const unsigned char *d, size_t n, char *out)
{
    static const char hx[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hx[d[i] >> 4];
        out[2 * i + 1] = hx[d[i] & 15];
    }
    out[2 * n] = 0;
}

/* whether the column's value (spaces trimmed, any case) is hex */
static int same_hash(const char *want, size_t n, const char *got)
{
    while (n && isspace((unsigned char)*want)) want++, n--;
    while (n && isspace((unsigned char)want[n - 1])) n--;
    if (n != strlen(got)) return 0;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)want[i]) != got[i]) return 0;
    return 1;
}

/* value (n bytes, maybe NULL) as a JSON string or null */
static json_t *jstr(const char *v)
{
    return v ? sk_json_str(v) : json_null();
}

static int set(json_t *o, const char *k, json_t *v)
{
    return !v || json_object_set_new(o, k, v);
}

int sk_url_item_process(const sk_url_job *j, sk_url_item *it, sk_error *err)
{
    char hash[65] = "";
    const unsigned char *body = (const unsigned char *)it->body.p;
    size_t len = it->body.len;
    if (j->hash == HASH_SHA256) {
        unsigned char d[32];
        sk_s3_sha256(body, len, d);
        hexify(d, 32, hash);
    } else if (j->hash == HASH_MD5) {
        unsigned char d[16];
        sk_s3_md5(body, len, d);
        hexify(d, 16, hash);
    }
    if (j->verify) {
        const char *want = it->extra[j->nsave];
        if (!want) {
            it->status = URL_FAILED_DOWNLOAD;
            snprintf(it->error, sizeof it->error, "no expected hash in the row's --verify-hash column");
            return SK_OK;
        }
        if (!same_hash(want, it->extra_len[j->nsave], hash)) {
            it->status = URL_FAILED_DOWNLOAD;
            snprintf(it->error, sizeof it->error, "hash mismatch (%s of the body is %s)",
                     j->hash == HASH_MD5 ? "md5" : "sha256", hash);
            return SK_OK;
        }
    }
    sk_image_result r;
    const sk_image_options *io = sk_image_options_active(j->images) ? j->images : &j->check;
    SK_GUARD(sk_image_transform_in(io, j->budget, body, len, &r, err));
    if (r.verdict != SK_IMAGE_DONE) {
        free(r.out);
        it->status = URL_FAILED_RESIZE;
        snprintf(it->error, sizeof it->error, "%s", r.why[0] ? r.why : "not an image");
        return SK_OK;
    }
    it->out = r.out;
    it->img = r.out ? r.out : (unsigned char *)it->body.p;
    it->img_len = r.out ? r.out_len : len;
    json_t *o = json_object();
    int bad = !o;
    if (!bad) bad = set(o, "url", jstr(it->url));
    if (!bad && j->has_caption) bad = set(o, "caption", jstr(it->caption));
    for (size_t i = 0; !bad && i < j->nsave; i++) bad = set(o, j->save[i], jstr(it->extra[i]));
    if (!bad) bad = set(o, "key", json_string(it->key)) || set(o, "status", json_string("success")) ||
                    set(o, "error_message", json_null()) ||
                    set(o, "width", json_integer(r.width)) || set(o, "height", json_integer(r.height)) ||
                    set(o, "original_width", json_integer(r.original_width)) ||
                    set(o, "original_height", json_integer(r.original_height));
    if (!bad && hash[0]) bad = set(o, j->hash == HASH_MD5 ? "md5" : "sha256", json_string(hash));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    SK_FAIL_IF(!text, err, SK_E_NOMEM, "out of memory (the .json of %s)", it->key);
    it->json = text;
    it->json_len = strlen(text);
    it->status = URL_OK;
    return SK_OK;
}

int sk_url_item_status(const sk_url_item *it, sk_buf *out, sk_error *err)
{
    json_t *o = json_object();
    int bad = !o;
    if (!bad) bad = set(o, "key", json_string(it->key)) || set(o, "url", jstr(it->url)) ||
                    set(o, "status", json_string(sk_url_status_name(it->status))) ||
                    set(o, "error_message", it->error[0] ? sk_json_str(it->error) : json_null()) ||
                    set(o, "http", json_integer(it->http)) ||
                    set(o, "bytes", json_integer((json_int_t)it->bytes)) ||
                    set(o, "ms", json_integer((json_int_t)(it->ms + 0.5)));
    char *text = bad ? NULL : json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    SK_FAIL_IF(!text, err, SK_E_NOMEM, "out of memory (the status of %s)", it->key);
    int rc = sk_buf_add(out, text, strlen(text)) || sk_buf_add(out, "\n", 1);
    free(text);
    SK_FAIL_IF(rc, err, SK_E_NOMEM, "out of memory (status lines)");
    return SK_OK;
}

void sk_url_item_clear(sk_url_item *it, size_t nextra)
{
    free(it->url);
    free(it->caption);
    for (size_t i = 0; it->extra && i < nextra; i++) free(it->extra[i]);
    free(it->extra);
    free(it->extra_len);
    sk_buf_free(&it->body);
    free(it->out);
    free(it->json);
    memset(it, 0, sizeof *it);
}
