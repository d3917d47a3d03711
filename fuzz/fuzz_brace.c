/* fuzz_brace.c - brace patterns (format/brace.c) from any bytes: expanded
 * within the name and byte limits, or refused. */
#include "core/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *p = malloc(size + 1);
    if (!p) return 0;
    memcpy(p, data, size);
    p[size] = 0;
    char **out = NULL;
    size_t n = 0;
    sk_error err = SK_ERROR_INIT;
    if (!sk_brace_expand(p, &out, &n, &err)) sk_brace_free(out);
    free(p);
    return 0;
}
