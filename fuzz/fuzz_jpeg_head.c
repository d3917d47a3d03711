/* fuzz_jpeg_head.c - what stats --images and serve take from a member's
 * first bytes (tools/jpeg_head.c): a JPEG's size from any bytes, read in
 * growing prefixes as stats reads them, found, "read more", or refused;
 * and the HTML and URL escaping every page applies to dataset names (no
 * '<', '>', quote or control byte may survive it). */
#include "tools/stats.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned w, h;
    char why[200];
    for (size_t n = size < 64 ? size : 64;; n = n * 8 < size ? n * 8 : size) {
        if (sk_jpeg_dims(data, n, &w, &h, why, sizeof why) != 1 || n == size) break;
    }
    sk_buf b = {0};
    if (!sk_html_esc(&b, (const char *)data, size))
        for (size_t i = 0; i < b.len; i++) {
            unsigned char c = (unsigned char)b.p[i];
            if (c == '<' || c == '>' || c == '"' || c == '\'' || (c < 0x20 && c != '\t' && c != '\n'))
                abort();
        }
    sk_buf_free(&b);
    sk_buf u = {0};
    if (!sk_url_esc(&u, (const char *)data, size))
        for (size_t i = 0; i < u.len; i++)
            if (strchr("&<>\"' #?=", u.p[i]) || (unsigned char)u.p[i] < 0x21) abort();
    sk_buf_free(&u);
    return 0;
}
