/*
 * sagemaker_out.c - a dataset's shards as a SageMaker ManifestFile
 * (S3DataType=ManifestFile): [{"prefix": "s3://bucket/prefix/"}, "key",
 * ...], the shards in dataset order and nothing else, so a training job
 * gets exactly the shards, never their .idx objects or manifest.json.
 *
 * The shards are named relative to one prefix.  Shards in S3 give it
 * themselves (their longest common "directory"); local shards are named as
 * the manifest names them under the prefix the caller says they will be
 * uploaded to (shardkit upload keeps that layout).  Written locally
 * through sk_out, or as an object when the output is an s3:// URL.
 */
#include "io/io.h"

#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

static const sk_sagemaker_opts no_opts = {.struct_size = sizeof no_opts};

void sk_sagemaker_opts_init_sized(sk_sagemaker_opts *o, size_t size)
{
    sk_options_init(o, size, &no_opts, sizeof no_opts);
}

/* The shards' URLs as the manifest resolves them (relative ones under the
 * manifest's directory or prefix). */
static int resolve_all(const char *manifest, const sk_manifest *m, char **urls, sk_error *err)
{
    for (size_t i = 0; i < m->nshards; i++)
        SK_GUARD(sk_manifest_resolve(manifest, m->shards[i].url, &urls[i], err));
    return SK_OK;
}

/* Length of the longest common prefix of the URLs ending in '/'. */
static size_t common_dir(char *const *urls, size_t n)
{
    size_t len = strlen(urls[0]);
    for (size_t i = 1; i < n; i++) {
        size_t k = 0;
        while (k < len && urls[i][k] == urls[0][k]) k++;
        len = k;
    }
    while (len && urls[0][len - 1] != '/') len--;
    return len;
}

static int write_out(const char *out, const char *text, sk_s3 *s3, sk_error *err)
{
    struct iovec iov[2] = {{(void *)text, strlen(text)}, {(void *)"\n", 1}};
    if (!sk_is_s3_url(out)) return sk_out_write_iov(out, 0, iov, 2, err);
    SK_FAIL_IF(!s3, err, SK_E_USAGE, "%s: an s3:// output needs an S3 client", out);
    char tmp[4200];
    SK_GUARD(sk_s3_scratch(tmp, sizeof tmp, "sagemaker", err));
    int rc = sk_out_write_iov(tmp, SK_OUT_REGULAR, iov, 2, err);
    if (!rc) rc = sk_s3_put_file(s3, tmp, out, NULL, err);
    unlink(tmp);
    return rc;
}

int sk_sagemaker_manifest_write(const char *manifest, const char *out, const sk_sagemaker_opts *opts,
                                sk_error *err)
{
    sk_sagemaker_opts o;
    SK_GUARD(sk_options_take(&o, sizeof o, opts, NULL, "sk_sagemaker_opts", err));
    SK_FAIL_IF(o.prefix && (!sk_is_s3_url(o.prefix) || strlen(o.prefix) < 6), err, SK_E_USAGE,
               "--sagemaker-prefix '%s': SageMaker reads s3://bucket/prefix/ URLs", o.prefix);
    sk_manifest *m = NULL;
    char **urls = NULL, *prefix = NULL, *text = NULL;
    json_t *arr = NULL;
    int rc = sk_is_s3_url(manifest) ? sk_s3_load_manifest(o.s3, manifest, &m, err)
                                    : sk_manifest_load(&m, manifest, err);
    if (rc) return rc;
    if (!m->nshards) {
        rc = sk_error_set(err, SK_E_INPUT, "%s: no shards to list in a SageMaker manifest", manifest);
        goto done;
    }
    if (!(urls = calloc(m->nshards, sizeof *urls)) || !(arr = json_array())) goto nomem;
    if ((rc = resolve_all(manifest, m, urls, err))) goto done;
    size_t nremote = 0;
    for (size_t i = 0; i < m->nshards; i++) nremote += sk_is_s3_url(urls[i]);
    if (nremote && nremote < m->nshards) {
        rc = sk_error_set(err, SK_E_INPUT, "%s: lists s3:// shards and others (local files or "
                          "http(s):// URLs): a SageMaker manifest names objects under one prefix", manifest);
        goto done;
    }
    size_t skip = 0; /* bytes of each URL that the prefix stands for */
    if (nremote && !o.prefix) {
        skip = common_dir(urls, m->nshards);
        if (skip < 6 || !strchr(urls[0] + 5, '/') || (size_t)(strchr(urls[0] + 5, '/') - urls[0]) >= skip) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: the shards are in several buckets: a SageMaker "
                              "manifest names objects under one prefix", manifest);
            goto done;
        }
        if (!(prefix = strndup(urls[0], skip))) goto nomem;
    } else if (!o.prefix) {
        rc = sk_error_set(err, SK_E_USAGE, "%s: the shards are not in S3 (local files or http(s):// "
                          "URLs), and SageMaker reads S3: give "
                          "--sagemaker-prefix s3://BUCKET/PREFIX/ where they are (or will be) "
                          "uploaded", manifest);
        goto done;
    } else {
        size_t pl = strlen(o.prefix);
        if (asprintf(&prefix, "%s%s", o.prefix, o.prefix[pl - 1] == '/' ? "" : "/") < 0) goto nomem;
    }
    json_t *head = json_object();
    if (!head || json_array_append_new(arr, head) ||
        json_object_set_new(head, "prefix", json_string(prefix)))
        goto nomem;
    for (size_t i = 0; i < m->nshards; i++) {
        const char *key;
        if (nremote && !o.prefix) {
            key = urls[i] + skip;
        } else if (nremote) {
            size_t pl = strlen(prefix);
            if (strncmp(urls[i], prefix, pl)) {
                rc = sk_error_set(err, SK_E_INPUT, "%s is not under --sagemaker-prefix %s", urls[i],
                                  prefix);
                goto done;
            }
            key = urls[i] + pl;
        } else {
            /* local: the name under the manifest's directory is the key
             * under the prefix; a shard elsewhere has none */
            key = m->shards[i].url;
            sk_error ne = SK_ERROR_INIT;
            if (sk_name_check(key, strlen(key), "shard URL", &ne)) {
                rc = sk_error_set(err, SK_E_INPUT, "%s: shard '%s' is not under the manifest's "
                                  "directory, so it has no key under --sagemaker-prefix", manifest, key);
                goto done;
            }
        }
        if (!*key) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: a shard with an empty key", manifest);
            goto done;
        }
        json_t *s = json_string(key); /* NULL for a key that is not UTF-8 */
        if (!s) {
            rc = sk_error_set(err, SK_E_INPUT, "%s: shard key '%s' is not UTF-8, which a SageMaker "
                              "manifest (JSON) cannot hold", manifest, key);
            goto done;
        }
        if (json_array_append_new(arr, s)) goto nomem;
    }
    if (o.instances && m->nshards % o.instances && o.warn) {
        /* ShardedByS3Key deals out whole objects: equal shards only give
         * every instance the same data when the count divides */
        char msg[300];
        snprintf(msg, sizeof msg, "%zu shards do not divide among %u instances: with ShardedByS3Key "
                 "%zu instance(s) get one shard more than the others%s", m->nshards, o.instances,
                 m->nshards % o.instances,
                 m->nshards < o.instances ? ", and some get none" : "");
        o.warn(o.ctx, msg);
    }
    if (!(text = json_dumps(arr, JSON_INDENT(1) | JSON_PRESERVE_ORDER))) goto nomem;
    rc = write_out(out, text, o.s3, err);
    goto done;
nomem:
    rc = sk_error_set(err, SK_E_NOMEM, "out of memory");
done:
    for (size_t i = 0; urls && i < m->nshards; i++) free(urls[i]);
    free(urls);
    free(prefix);
    free(text);
    json_decref(arr);
    sk_manifest_free(m);
    return rc;
}
