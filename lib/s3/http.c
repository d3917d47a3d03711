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
    CURL *c = curl_easy_init();
    SK_FAIL_IF(!c, err, SK_E_NOMEM, "%s: cannot create a curl handle", url);
    struct curl_slist *hl = NULL;
    for (size_t i = 0; headers && headers[i]; i++) hl = curl_slist_append(hl, headers[i]);
    out->len = 0;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "PUT")) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, 0L);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_NOPROXY, "*"); /* link-local endpoints never go through a proxy */
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, out);
    CURLcode cc = curl_easy_perform(c);
    *status = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
    curl_slist_free_all(hl);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK)
        return sk_error_set(err, SK_E_NET, "%s: %s", url, curl_easy_strerror(cc));
    if (!out->p) sk_buf_add(out, "", 0);
    return 0;
}
