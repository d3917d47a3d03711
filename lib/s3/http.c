/*
 * http.c - one blocking HTTP request with libcurl easy, for the credential
 * endpoints (container credentials, EC2 instance metadata).  They answer
 * small JSON or text; the S3 traffic itself goes through the multi engine
 * in s3_engine.c.  Nothing here is logged: the answers hold secrets.
 */
#include "s3/s3_internal.h"

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
    sk_buf *b = ud;
    if (b->len + sz * n > (1u << 20)) return 0; /* credential answers are small */
    return sk_buf_add(b, p, sz * n) ? 0 : sz * n;
}

int sk_http_fetch(const char *method, const char *url, const char *const *headers,
                  long timeout_ms, sk_buf *out, long *status, sk_error *err)
{
    SK_GUARD(sk_s3_libs_load(err));
    CURL *c = sk_curl.easy_init();
    SK_FAIL_IF(!c, err, SK_E_NOMEM, "%s: cannot create a curl handle", url);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++) hl = sk_curl.slist_append(hl, headers[i]);
    out->len = 0;
    sk_curl.easy_setopt(c, CURLOPT_URL, url);
    sk_curl.easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "PUT")) {
        sk_curl.easy_setopt(c, CURLOPT_POSTFIELDS, "");
        sk_curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }
    sk_curl.easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    sk_curl.easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    sk_curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    sk_curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    sk_curl.easy_setopt(c, CURLOPT_NOPROXY, "*"); /* link-local endpoints never go through a proxy */
    sk_curl_trust(c, 0);
    char why[CURL_ERROR_SIZE] = "";
    sk_curl.easy_setopt(c, CURLOPT_ERRORBUFFER, why);
    sk_curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    sk_curl.easy_setopt(c, CURLOPT_WRITEDATA, out);
    CURLcode cc = sk_curl.easy_perform(c);
    *status = 0;
    sk_curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    sk_curl.slist_free_all(hl);
    sk_curl.easy_cleanup(c);
    if (cc != CURLE_OK)
        return sk_error_set(err, SK_E_NET, "%s: %s%s%s", url, sk_curl.easy_strerror(cc), why[0] ? ": " : "", why);
    if (!out->p) sk_buf_add(out, "", 0);
    return 0;
}
