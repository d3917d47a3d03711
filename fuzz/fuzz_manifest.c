/* fuzz_manifest.c - manifest.json from any bytes (format/manifest.c, with
 * jansson), then every shard URL through the resolver a manifest read from
 * S3 or from a web server goes through (sk_manifest_resolve): refused or
 * resolved, never a crash, never a local path from a remote manifest, and
 * never a file outside an http(s) manifest's own directory. */
#include "core/internal.h"
#include "format/format.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_manifest *m = NULL;
    sk_error err = SK_ERROR_INIT;
    if (sk_manifest_parse(&m, (const char *)data, size, "fuzz.json", &err)) return 0;
    for (size_t i = 0; i < m->nshards; i++) {
        char *out = NULL;
        if (!sk_manifest_resolve("s3://b/p/manifest.json", m->shards[i].url, &out, &err)) {
            if (!sk_is_s3_url(out)) __builtin_trap(); /* a remote manifest named a local file */
            free(out);
        }
        if (!sk_manifest_resolve("http://h/d/manifest.json", m->shards[i].url, &out, &err)) {
            /* under http://h/d/, no ".." component, no query, no other host */
            if (strncmp(out, "http://h/d/", 11) || strstr(out + 10, "/../") || strchr(out, '?') ||
                (strlen(out) >= 3 && !strcmp(out + strlen(out) - 3, "/..")))
                __builtin_trap();
            free(out);
        }
        if (!sk_manifest_resolve("d/manifest.json", m->shards[i].url, &out, &err)) free(out);
    }
    sk_manifest_free(m);
    return 0;
}
