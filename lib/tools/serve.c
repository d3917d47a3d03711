/*
 * serve.c - `shardkit serve`: a read-only web viewer of a dataset over
 * libmicrohttpd.  This file is the server and the rules every response
 * follows; the pages are in serve_pages.c.
 *
 * The rules: GET and HEAD only; a fixed table of paths, anything else 404;
 * parameters are numbers (parsed strictly) or a key, which only ever goes
 * to an index lookup (sk_dataset_find / sk_dataset_at), never to a path,
 * so no URL can make the server open a file; every response carries
 * `X-Content-Type-Options: nosniff` and a Content-Security-Policy - pages
 * allow no script at all, members are served under `sandbox` with a type
 * from a short table of extensions (an .html member is text/plain); the
 * server listens on 127.0.0.1 unless told otherwise, with a bounded
 * number of connections and a timeout for idle ones.
 */
#include "tools/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE_CSP "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; " \
                 "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
#define MEMBER_CSP "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"

static enum MHD_Result send_reply(struct MHD_Connection *c, sk_reply *r, int member)
{
    struct MHD_Response *resp =
        sk_mhd.response_from_buffer(r->len, r->body ? r->body : (void *)"", r->body
                                                                                 ? MHD_RESPMEM_MUST_FREE
                                                                                 : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(r->body);
        return MHD_NO;
    }
    sk_mhd.add_header(resp, "Content-Type", r->type ? r->type : "text/html; charset=utf-8");
    sk_mhd.add_header(resp, "X-Content-Type-Options", "nosniff");
    sk_mhd.add_header(resp, "Content-Security-Policy", member ? MEMBER_CSP : PAGE_CSP);
    sk_mhd.add_header(resp, "Referrer-Policy", "no-referrer");
    sk_mhd.add_header(resp, "X-Frame-Options", "DENY");
    sk_mhd.add_header(resp, "Cache-Control", r->cache ? "private, max-age=300" : "no-store");
    if (r->disposition[0]) sk_mhd.add_header(resp, "Content-Disposition", r->disposition);
    enum MHD_Result ret = sk_mhd.queue_response(c, r->status, resp);
    sk_mhd.destroy_response(resp);
    return ret;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **con)
{
    sk_srv *s = cls;
    sk_reply r = {.status = 200};
    sk_query q = {c};
    (void)version, (void)upload, (void)con;
    if (*upload_size) return MHD_NO; /* a body: not ours to take */
    if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
        sk_page_error(&r, 405, "this server only reads");
        return send_reply(c, &r, 0);
    }
    static const struct {
        const char *path;
        void (*fn)(sk_srv *, const sk_query *, sk_reply *);
        int member;
    } routes[] = {
        {"/", sk_page_dataset, 0},           {"/shard", sk_page_shard, 0},
        {"/sample", sk_page_sample, 0},      {"/grid", sk_page_grid, 0},
        {"/search", sk_page_search, 0},      {"/member", sk_page_member, 1},
        {"/thumb", sk_page_thumb, 1},
    };
    for (size_t i = 0; i < SK_ARRAY_LEN(routes); i++)
        if (!strcmp(url, routes[i].path)) {
            routes[i].fn(s, &q, &r);
            return send_reply(c, &r, routes[i].member && r.status == 200);
        }
    sk_page_error(&r, 404, "no such page");
    return send_reply(c, &r, 0);
}

void sk_serve_options_init_sized(sk_serve_options *o, size_t size)
{
    static const sk_serve_options defaults = {.struct_size = sizeof defaults};
    sk_options_init(o, size, &defaults, sizeof defaults);
}

int sk_serve(sk_dataset *ds, const char *name, const sk_serve_options *opts, sk_error *err)
{
    sk_srv s;
    memset(&s, 0, sizeof s);
    SK_GUARD(sk_options_take(&s.o, sizeof s.o, opts, NULL, "sk_serve_options", err));
    s.ds = ds, s.name = name ? name : "";
    if (!s.o.bind) s.o.bind = "127.0.0.1";
    if (!s.o.max_connections) s.o.max_connections = 64;
    if (!s.o.threads) s.o.threads = 4;
    if (!s.o.thumb_cache) s.o.thumb_cache = 64u << 20;
    if (!s.o.thumb_size) s.o.thumb_size = 160;
    /* libmicrohttpd splits the connection limit between its threads; a
     * thread left with none never wakes for the stop, and MHD_stop_daemon
     * then waits for it forever (--max-connections 2 with 4 threads hung
     * on SIGTERM): no more threads than connections */
    if (s.o.threads > s.o.max_connections) s.o.threads = s.o.max_connections;
    SK_FAIL_IF(s.o.port > 65535 || s.o.thumb_size > 1024 || s.o.threads > 256, err, SK_E_USAGE,
               "serve: port %u, thumbnail size %u or %u threads out of range", s.o.port,
               s.o.thumb_size, s.o.threads);
    struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s.o.port)};
    struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)s.o.port)};
    int v6 = strchr(s.o.bind, ':') != NULL;
    SK_FAIL_IF(v6 ? inet_pton(AF_INET6, s.o.bind, &a6.sin6_addr) != 1
                  : inet_pton(AF_INET, s.o.bind, &a4.sin_addr) != 1,
               err, SK_E_USAGE, "serve: --bind '%s' is not an IPv4 or IPv6 address", s.o.bind);
    SK_GUARD(sk_mhd_load(err));
    SK_GUARD(sk_thumbs_new(&s.thumbs, s.o.thumb_cache, err));
    pthread_mutex_init(&s.mu, NULL);
    /* the server's threads inherit this mask: the signals wait for sigwait */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_Daemon *d = sk_mhd.start_daemon(
        flags, (uint16_t)s.o.port, NULL, NULL, handle, &s, MHD_OPTION_SOCK_ADDR,
        v6 ? (struct sockaddr *)&a6 : (struct sockaddr *)&a4, MHD_OPTION_CONNECTION_LIMIT,
        s.o.max_connections, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30,
        MHD_OPTION_THREAD_POOL_SIZE, s.o.threads, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)(64 << 10), MHD_OPTION_END);
    int rc = SK_OK;
    if (!d) {
        rc = sk_error_set(err, SK_E_IO, "serve: cannot listen on %s port %u: %s", s.o.bind,
                          s.o.port, strerror(errno ? errno : EADDRINUSE));
    } else {
        const union MHD_DaemonInfo *info = sk_mhd.get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
        unsigned port = info ? info->port : s.o.port;
        char base[128];
        snprintf(base, sizeof base, v6 ? "http://[%s]:%u/" : "http://%s:%u/", s.o.bind, port);
        if (s.o.ready) s.o.ready(s.o.ctx, base);
        int sig;
        sigwait(&set, &sig);
        sk_mhd.stop_daemon(d);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    json_decref(s.stats);
    sk_thumbs_free(s.thumbs);
    pthread_mutex_destroy(&s.mu);
    return rc;
}
