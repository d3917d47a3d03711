/*
 * tls_trust.c - which certificate authorities an https peer is checked
 * against.  Every curl handle shardkit makes (S3, web servers' shards, URL
 * lists, credential endpoints) verifies the peer and its host name; this
 * is where the trusted roots come from.
 *
 * By default they are libcurl's own store (the system's CA bundle).  A
 * private mirror, an on-premise S3 (MinIO, Ceph's gateway) or a test
 * server signed by an internal CA needs another, and users already name
 * one in the environment for the other tools they run on the same data:
 * AWS_CA_BUNDLE for the aws cli (S3 endpoints only, as there), then
 * CURL_CA_BUNDLE (curl, Python requests) and SSL_CERT_FILE / SSL_CERT_DIR
 * (OpenSSL, Python's ssl module).  A named file that cannot be read fails
 * every https request with curl's message naming it; checks are never
 * turned off.
 */
#include "s3/s3_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *env_path(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* The bundle file the environment names, and the variable that named it. */
static const char *bundle(int s3_endpoint, const char **var)
{
    static const char *const vars[] = {"AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"};
    for (size_t i = s3_endpoint ? 0 : 1; i < sizeof vars / sizeof *vars; i++) {
        const char *v = env_path(vars[i]);
        if (v) return *var = vars[i], v;
    }
    return NULL;
}

void sk_curl_trust(CURL *c, int s3_endpoint)
{
    sk_curl.easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 1L);
    sk_curl.easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 2L);
    const char *var, *file = bundle(s3_endpoint, &var), *dir = env_path("SSL_CERT_DIR");
    if (file) sk_curl.easy_setopt(c, CURLOPT_CAINFO, file);
    if (dir) sk_curl.easy_setopt(c, CURLOPT_CAPATH, dir);
}

int sk_curl_trust_check(int s3_endpoint, sk_error *err)
{
    const char *var, *file = bundle(s3_endpoint, &var);
    /* said once at the start, rather than as every request's failure */
    SK_FAIL_IF(file && access(file, R_OK) != 0, err, SK_E_IO, "%s=%s: the CA bundle cannot be read (%s)",
               var, file, strerror(errno));
    return SK_OK;
}
