/*
 * mhd_libs.c - libmicrohttpd, opened (dlopen, by its ABI soname) the first
 * time `serve` starts a server, not when a program starts: linked, it
 * would load GnuTLS and its dozen libraries into every shardkit process,
 * `--version` included (tests/e2e/startup_libs.sh).  The header comes from
 * libmicrohttpd-dev at build time, so the types and constants are those of
 * the ABI the soname names; the rest of serve calls through sk_mhd.
 */
#include "tools/serve.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define MHD_SONAME "libmicrohttpd.so.12"

sk_mhd_api sk_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char load_error[SK_ERROR_MAX] = "libmicrohttpd not loaded"; /* "" once loaded */

static void load(void)
{
    void *h = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof load_error, "cannot load %s (needed by serve): %s",
                 MHD_SONAME, dlerror());
        return;
    }
    int bad = 0;
#define M(field, name)                                                                    \
    do {                                                                                  \
        if (!(*(void **)&sk_mhd.field = dlsym(h, name)) && !bad) {                        \
            snprintf(load_error, sizeof load_error, "%s: no symbol %s", MHD_SONAME, name); \
            bad = 1;                                                                      \
        }                                                                                 \
    } while (0)
    M(start_daemon, "MHD_start_daemon");
    M(stop_daemon, "MHD_stop_daemon");
    M(get_daemon_info, "MHD_get_daemon_info");
    M(lookup_value_n, "MHD_lookup_connection_value_n");
    M(response_from_buffer, "MHD_create_response_from_buffer");
    M(add_header, "MHD_add_response_header");
    M(queue_response, "MHD_queue_response");
    M(destroy_response, "MHD_destroy_response");
#undef M
    if (!bad) load_error[0] = 0;
}

int sk_mhd_load(sk_error *err)
{
    pthread_once(&once, load);
    SK_FAIL_IF(load_error[0], err, SK_E_IO, "%s", load_error);
    return SK_OK;
}
