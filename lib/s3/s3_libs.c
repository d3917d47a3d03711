/*
 * s3_libs.c - libcurl and libcrypto, loaded when the S3 layer is first
 * used, not when a program starts.  Linked at build time they pull some
 * thirty shared libraries (TLS, HTTP/2, Kerberos, LDAP, IDN, ...) into
 * every process, which then costs `shardkit --version` or a local `get`
 * several milliseconds of loading and relocation for code it never runs.
 * Now a process opens them (dlopen, by their ABI sonames) the first time
 * it makes an S3 client, fetches a credential endpoint or signs a request;
 * the rest of the layer calls libcurl through the table sk_curl and
 * libcrypto through the three digests below.  The headers still come from
 * the development packages at build time, so the types and constants are
 * those of the ABI the sonames name.
 */
#include "s3/s3_internal.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/opensslv.h>
#include <stdio.h>
#include <stdlib.h>

#define SK_STR_(x) #x
#define SK_STR(x) SK_STR_(x)
#define CURL_SONAME "libcurl.so.4" /* the libcurl ABI since 7.16 */
#define CRYPTO_SONAME "libcrypto.so." SK_STR(OPENSSL_VERSION_MAJOR)

sk_curl_api sk_curl;

static struct {
    int (*digest)(const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *,
                  ENGINE *);
    const EVP_MD *(*sha256)(void);
    const EVP_MD *(*md5)(void);
    EVP_MD_CTX *(*ctx_new)(void);
    void (*ctx_free)(EVP_MD_CTX *);
    int (*init)(EVP_MD_CTX *, const EVP_MD *, ENGINE *);
    int (*update)(EVP_MD_CTX *, const void *, size_t);
    int (*final)(EVP_MD_CTX *, unsigned char *, unsigned int *);
    unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
                           unsigned char *, unsigned int *);
} crypto;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[SK_ERROR_MAX] = "S3 libraries not loaded"; /* "" once loaded */

static void *sym(void *h, const char *lib, const char *name, int *bad)
{
    void *p = h ? dlsym(h, name) : NULL;
    if (!p && !*bad) {
        snprintf(load_error, sizeof load_error, "%s: no symbol %s (%s)", lib, name, dlerror());
        *bad = 1;
    }
    return p;
}

static void load(void)
{
    int bad = 0;
    /* RTLD_LOCAL: the names stay ours, whatever else the program loads */
    void *c = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);
    void *k = dlopen(CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!c || !k) {
        const char *lib = !c ? CURL_SONAME : CRYPTO_SONAME;
        snprintf(load_error, sizeof load_error, "cannot load %s (needed for S3): %s", lib,
                 dlerror());
        return;
    }
#define C(field, name) *(void **)&sk_curl.field = sym(c, CURL_SONAME, name, &bad)
    C(global_init, "curl_global_init");
    C(easy_init, "curl_easy_init");
    C(easy_setopt, "curl_easy_setopt");
    C(easy_getinfo, "curl_easy_getinfo");
    C(easy_perform, "curl_easy_perform");
    C(easy_cleanup, "curl_easy_cleanup");
    C(easy_reset, "curl_easy_reset");
    C(easy_pause, "curl_easy_pause");
    C(easy_strerror, "curl_easy_strerror");
    C(slist_append, "curl_slist_append");
    C(slist_free_all, "curl_slist_free_all");
    C(multi_init, "curl_multi_init");
    C(multi_setopt, "curl_multi_setopt");
    C(multi_add_handle, "curl_multi_add_handle");
    C(multi_remove_handle, "curl_multi_remove_handle");
    C(multi_perform, "curl_multi_perform");
    C(multi_poll, "curl_multi_poll");
    C(multi_wakeup, "curl_multi_wakeup");
    C(multi_info_read, "curl_multi_info_read");
    C(multi_cleanup, "curl_multi_cleanup");
#undef C
#define K(field, name) *(void **)&crypto.field = sym(k, CRYPTO_SONAME, name, &bad)
    K(digest, "EVP_Digest");
    K(sha256, "EVP_sha256");
    K(md5, "EVP_md5");
    K(ctx_new, "EVP_MD_CTX_new");
    K(ctx_free, "EVP_MD_CTX_free");
    K(init, "EVP_DigestInit_ex");
    K(update, "EVP_DigestUpdate");
    K(final, "EVP_DigestFinal_ex");
    K(hmac, "HMAC");
#undef K
    /* libcurl's global state, once per process, before any handle */
    if (!bad && sk_curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(load_error, sizeof load_error, "%s: curl_global_init failed", CURL_SONAME);
        bad = 1;
    }
    if (!bad) load_error[0] = 0;
}

int sk_s3_libs_load(sk_error *err)
{
    pthread_once(&once, load);
    SK_FAIL_IF(load_error[0], err, SK_E_IO, "%s", load_error);
    return SK_OK;
}

/* The digests are called only after sk_s3_libs_load succeeded (by the
 * client, the credential fetch or the signer); a caller of the public
 * sk_s3_sha256_hex that never made a client loads them here, and a
 * process that cannot (no libcrypto at all) stops with the reason rather
 * than hand back a wrong digest. */
static void need_crypto(void)
{
    sk_error e = SK_ERROR_INIT;
    if (sk_s3_libs_load(&e)) {
        fprintf(stderr, "libshardkit: %s\n", e.msg);
        abort();
    }
}

void sk_s3_sha256(const void *data, size_t len, unsigned char out[32])
{
    unsigned n = 32;
    need_crypto();
    crypto.digest(data, len, out, &n, crypto.sha256(), NULL);
}

void sk_s3_md5(const void *data, size_t len, unsigned char out[16])
{
    unsigned n = 16;
    need_crypto();
    crypto.digest(data, len, out, &n, crypto.md5(), NULL);
}

void *sk_s3_md5_begin(void)
{
    need_crypto();
    EVP_MD_CTX *c = crypto.ctx_new();
    if (c && crypto.init(c, crypto.md5(), NULL) != 1) crypto.ctx_free(c), c = NULL;
    return c;
}

void sk_s3_md5_add(void *ctx, const void *data, size_t len)
{
    crypto.update(ctx, data, len);
}

void sk_s3_md5_end(void *ctx, unsigned char out[16])
{
    unsigned n = 16;
    crypto.final(ctx, out, &n);
    crypto.ctx_free(ctx);
}

void sk_s3_hmac_sha256(const void *key, size_t klen, const void *msg, size_t len,
                       unsigned char out[32])
{
    unsigned n = 32;
    need_crypto();
    crypto.hmac(crypto.sha256(), key, (int)klen, msg, len, out, &n);
}
