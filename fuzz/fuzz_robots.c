/* fuzz_robots.c - X-Robots-Tag and Retry-After values (format/robots.c)
 * from any bytes, copied to a buffer of exactly their size so ASan sees
 * any read past the end. */
#include "format/robots.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *v = malloc(size ? size : 1);
    if (!v) return 0;
    memcpy(v, data, size);
    volatile int r = sk_robots_disallowed(v, size, "mybot", "noai,noimageai,noindex,noimageindex");
    r += sk_robots_disallowed(v, size, NULL, "noai");
    volatile long s = sk_retry_after_parse(v, size, 1700000000);
    (void)r;
    (void)s;
    free(v);
    return 0;
}
