/* fuzz_names.c - the one way untrusted bytes become a path (core/path.c):
 * whatever sk_path_join accepts stays under its directory, and what
 * sk_name_strip leaves of a foreign member name holds no ".." component. */
#include "core/internal.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *name = (const char *)data;
    sk_error err = SK_ERROR_INIT;
    char *out = NULL;
    if (!sk_path_join("/base", name, size, "fuzz name", &out, &err)) {
        if (strncmp(out, "/base/", 6) || strstr(out, "/../") || strstr(out, "//")) __builtin_trap();
        size_t l = strlen(out);
        if (l >= 3 && !strcmp(out + l - 3, "/..")) __builtin_trap();
        free(out);
    }
    size_t skip;
    if (sk_name_strip(name, size, &skip) >= 0 && skip < size) {
        if (name[skip] == '/') __builtin_trap();
        if (size - skip >= 3 && !memcmp(name + skip, "../", 3)) __builtin_trap();
    }
    (void)sk_ext_check(name, size, "fuzz", &err);
    return 0;
}
