/* test_robots.c - X-Robots-Tag and Retry-After (format/robots.c), as
 * img2dataset reads X-Robots-Tag: a value for all agents or for our token
 * forbids when it names a disallowed directive; a value for another agent
 * does not; Retry-After as seconds or an HTTP-date, anything else -1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "format/robots.h"

static const char *dirs = "noai,noimageai,noindex,noimageindex";

static int dis(const char *v, const char *token)
{
    return sk_robots_disallowed(v, strlen(v), token, dirs);
}

static void robots(void **state)
{
    (void)state;
    assert_int_equal(dis("noai", NULL), 1);
    assert_int_equal(dis("  NoImageIndex ", NULL), 1);
    assert_int_equal(dis("nofollow, noimageai", NULL), 1);
    assert_int_equal(dis("nofollow,noarchive", NULL), 0);
    assert_int_equal(dis("noaix", NULL), 0);
    assert_int_equal(dis("", NULL), 0);
    /* another agent's line never binds us; ours does */
    assert_int_equal(dis("googlebot: noindex", NULL), 0);
    assert_int_equal(dis("googlebot: noindex", "mybot"), 0);
    assert_int_equal(dis("MyBot: noai", "mybot"), 1);
    assert_int_equal(dis("mybot: nofollow", "mybot"), 0);
    /* only the directives asked for */
    assert_int_equal(sk_robots_disallowed("noindex", 7, NULL, "noai"), 0);
    assert_int_equal(sk_robots_disallowed("noindex", 7, NULL, ""), 0);
    /* bytes past n are not read: "noai" cut to "noa" */
    assert_int_equal(sk_robots_disallowed("noai", 3, NULL, dirs), 0);
}

static void retry_after(void **state)
{
    (void)state;
    assert_int_equal(sk_retry_after_parse("3", 1, 0), 3);
    assert_int_equal(sk_retry_after_parse(" 120 ", 5, 0), 120);
    assert_int_equal(sk_retry_after_parse("99999999999999999999", 20, 0), 86400);
    assert_int_equal(sk_retry_after_parse("3s", 2, 0), -1);
    assert_int_equal(sk_retry_after_parse("", 0, 0), -1);
    assert_int_equal(sk_retry_after_parse("-1", 2, 0), -1);
    const char *d = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_int_equal(sk_retry_after_parse(d, strlen(d), 784111777 - 5), 5);
    assert_int_equal(sk_retry_after_parse(d, strlen(d), 784111777 + 50), 0);
    assert_int_equal(sk_retry_after_parse("Sun, 06 Nov 1994 08:49:37 UTC", 29, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(robots),
        cmocka_unit_test(retry_after),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
