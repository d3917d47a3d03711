/* test_fetch_urls.c - the address check of pack --from-urls
 * (pack/fetch_urls.c): what a URL list may not reach (loopback, private,
 * link-local, multicast, reserved, IPv4 inside IPv6) and what it may. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "pack/fetch_urls.h"

static int blocked(const char *addr, char *why, size_t cap)
{
    struct sockaddr_storage ss = {0};
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;
        s->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, addr, &s->sin6_addr), 1);
    } else {
        struct sockaddr_in *s = (struct sockaddr_in *)&ss;
        s->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, addr, &s->sin_addr), 1);
    }
    return sk_urlfetch_addr_blocked((struct sockaddr *)&ss, why, cap);
}

static void refused(void **state)
{
    (void)state;
    static const struct { const char *a, *what; } no[] = {
        {"127.0.0.1", "loopback"}, {"127.255.0.9", "loopback"}, {"0.0.0.0", "unspecified"},
        {"10.1.2.3", "private"}, {"172.16.0.1", "private"}, {"172.31.255.255", "private"},
        {"192.168.1.1", "private"}, {"100.64.0.1", "carrier-grade"},
        {"169.254.169.254", "link-local"}, {"224.0.0.1", "multicast"}, {"239.1.1.1", "multicast"},
        {"240.0.0.1", "reserved"}, {"255.255.255.255", "reserved"},
        {"::1", "loopback"}, {"::", "unspecified"}, {"fe80::1", "link-local"},
        {"fd00::1", "unique local"}, {"fc00::1", "unique local"}, {"ff02::1", "multicast"},
        {"::ffff:127.0.0.1", "loopback"}, {"::ffff:169.254.169.254", "link-local"},
        {"64:ff9b::a9fe:a9fe", "link-local"},
    };
    for (size_t i = 0; i < sizeof no / sizeof *no; i++) {
        char why[160] = "";
        if (!blocked(no[i].a, why, sizeof why)) fail_msg("%s not refused", no[i].a);
        if (!strstr(why, no[i].what) || !strstr(why, no[i].a))
            fail_msg("%s: why is \"%s\", want \"%s\" and the address", no[i].a, why, no[i].what);
    }
}

static void allowed(void **state)
{
    (void)state;
    static const char *const yes[] = {"93.184.216.34", "8.8.8.8", "172.15.255.255", "172.32.0.1",
                                      "100.128.0.1", "169.253.1.1", "2606:2800:220:1::1",
                                      "::ffff:8.8.8.8"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        char why[160] = "";
        if (blocked(yes[i], why, sizeof why)) fail_msg("%s refused: %s", yes[i], why);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refused),
        cmocka_unit_test(allowed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
