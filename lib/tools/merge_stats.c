/*
 * merge_stats.c - `index merge` of the parts of a `pack --from-urls
 * --part I/N` run: each part writes stats-I.json beside its
 * manifest-I.json (rows, successes, failures by kind, bytes, shards,
 * seconds); the merged manifest gets one stats.json beside it that counts
 * the whole run, as a run without --part would have written.
 *
 * Counts (every integer field, and the failures by kind) are summed;
 * "seconds" is the longest part's (parts run side by side) and
 * "images_per_second" the whole run's successes over it.  A part's stats
 * are read only when every part has them (a plain `pack --part` writes
 * none); one part without them while the others have them is an error
 * that names the file, since a sum missing a part would be a wrong count.
 */
#include "tools/merge_stats.h"
#include "io/io.h"
#include "io/sink.h"
#include "io/store.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#define STATS_MAX (4u << 20) /* a part's stats.json is a few hundred bytes */

/* Adds the part's counts (src) into the sum (dst). */
static int add_stats(json_t *dst, json_t *src, const char *url, sk_error *err)
{
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v) {
        json_t *d = json_object_get(dst, k);
        if (json_is_integer(v)) {
            json_int_t a = d && json_is_integer(d) ? json_integer_value(d) : 0;
            SK_FAIL_IF(json_integer_value(v) < 0 || json_integer_value(v) > INT64_MAX - a, err,
                       SK_E_CORRUPT, "%s: \"%s\" is not a count (%" JSON_INTEGER_FORMAT ")", url, k,
                       json_integer_value(v));
            if (json_object_set_new(dst, k, json_integer(a + json_integer_value(v)))) goto nomem;
        } else if (!strcmp(k, "seconds") && json_is_number(v)) {
            double a = d && json_is_number(d) ? json_number_value(d) : 0;
            double b = json_number_value(v);
            if (json_object_set_new(dst, k, json_real(a > b ? a : b))) goto nomem;
        } else if (!strcmp(k, "errors") && json_is_object(v)) {
            if (!d && (json_object_set_new(dst, k, json_object()) || !(d = json_object_get(dst, k))))
                goto nomem;
            SK_GUARD(add_stats(d, v, url, err));
        } else if (!strcmp(k, "images_per_second")) {
            if (!d && json_object_set_new(dst, k, json_real(0))) goto nomem; /* its place */
        } else {
            return sk_error_set(err, SK_E_CORRUPT, "%s: \"%s\" is not a count", url, k);
        }
    }
    return SK_OK;
nomem:
    return sk_error_set(err, SK_E_NOMEM, "out of memory");
}

int sk_part_stats_merge(const char *const *manifests, const int *part, size_t n, sk_s3 *s3,
                        json_t **out, sk_error *err)
{
    sk_store_env env;
    sk_store_env_init(&env, s3);
    json_t *sum = json_object();
    int rc = sum ? SK_OK : sk_error_set(err, SK_E_NOMEM, "out of memory");
    char *have = NULL, *lack = NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        char *dir = sk_dir_of(manifests[i]), *url = NULL;
        if (!dir || asprintf(&url, "%s/stats-%d.json", dir, part[i]) < 0) url = NULL;
        free(dir);
        if (!url) {
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
            break;
        }
        sk_buf b = {0};
        sk_error e = SK_ERROR_INIT;
        int lrc = sk_store_load(url, &env, STATS_MAX, "a part's stats", &b, &e);
        if (lrc == SK_E_NOTFOUND) {
            if (!lack) lack = url, url = NULL;
        } else if (lrc) {
            rc = lrc;
            *err = e;
        } else {
            json_error_t je;
            json_t *o = json_loadb(b.p ? b.p : "", b.len, 0, &je);
            if (!o || !json_is_object(o))
                rc = sk_error_set(err, SK_E_CORRUPT, "%s: not a stats file (%s)", url,
                                  o ? "not an object" : je.text);
            else
                rc = add_stats(sum, o, url, err);
            json_decref(o);
            if (!have) have = url, url = NULL;
        }
        sk_buf_free(&b);
        free(url);
    }
    if (!rc && have && lack)
        rc = sk_error_set(err, SK_E_INPUT, "%s: missing, while %s is there: every part of a "
                          "--from-urls run writes its stats (rerun that part, or merge without it "
                          "by removing the others' stats)", lack, have);
    if (!rc && have) {
        json_t *s = json_object_get(sum, "seconds"), *ok = json_object_get(sum, "success");
        double secs = s && json_is_number(s) ? json_number_value(s) : 0;
        if (ok && json_is_integer(ok) && json_object_get(sum, "images_per_second") &&
            json_object_set_new(sum, "images_per_second",
                                json_real(secs > 0 ? (double)json_integer_value(ok) / secs : 0)))
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
        if (!rc && json_object_set_new(sum, "parts", json_integer((json_int_t)n)))
            rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    free(have);
    free(lack);
    sk_store_env_release(&env);
    if (rc || !have) {
        json_decref(sum);
        sum = NULL;
    }
    *out = sum;
    return rc;
}

int sk_part_stats_write(json_t *stats, const char *manifest, sk_s3 *s3, sk_error *err)
{
    char *dir = sk_dir_of(manifest), *path = NULL;
    char *text = json_dumps(stats, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (!dir || !text || asprintf(&path, "%s/stats.json", dir) < 0) path = NULL;
    free(dir);
    if (!path) {
        free(text);
        return sk_error_set(err, SK_E_NOMEM, "out of memory");
    }
    sk_sink *s;
    sk_sink_opts so = {s3, 0};
    int rc = sk_sink_open(&s, path, &so, err);
    if (!rc) {
        struct iovec iov[2] = {{text, strlen(text)}, {(void *)"\n", 1}};
        sk_index_shard_info info = {0};
        info.size = strlen(text) + 1;
        info.crc32c = sk_crc32c(sk_crc32c(0, text, strlen(text)), "\n", 1); /* an upload is checked */
        rc = s->ops->write(s, iov, 2, info.size, err);
        if (rc) s->ops->abort(s);
        else rc = s->ops->publish(s, NULL, &info, err);
    }
    free(path);
    free(text);
    return rc;
}
