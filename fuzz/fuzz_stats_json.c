/* fuzz_stats_json.c - `stats --json-keys` (tools/stats_jkeys.c): the
 * bytes of several .json members (the input cut at 0xFF bytes, which no
 * UTF-8 JSON text holds) walked for their top-level types and their keys'
 * value types, then rendered as the stats document's "json_keys" object.
 * What must hold: at most SK_JKEYS_MAX keys are kept; every member is
 * counted once, as bad or by its type; a key's types add up to its
 * count; the rendered object lists each kept key once (the target traps
 * otherwise). */
#include "tools/stats.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sk_jkeys t;
    if (sk_jkeys_init(&t)) return 0;
    const uint8_t *p = data, *end = data + size;
    for (;;) {
        const uint8_t *cut = memchr(p, 0xff, (size_t)(end - p));
        size_t len = cut ? (size_t)(cut - p) : (size_t)(end - p);
        char *m = malloc(len ? len : 1); /* its own buffer: ASan sees any overread */
        if (!m) break;
        memcpy(m, p, len);
        t.members++;
        int rc = sk_jkeys_add(&t, m, len);
        free(m);
        if (rc) break;
        if (!cut) break;
        p = cut + 1;
    }
    if (t.njk > SK_JKEYS_MAX) abort();
    uint64_t typed = 0;
    for (int i = 0; i < 8; i++) typed += t.top[i];
    if (typed + t.bad != t.members) abort();
    for (size_t i = 0; i < t.njk; i++) {
        uint64_t n = 0;
        for (int y = 0; y < 8; y++) n += t.jk[i].types[y];
        if (!t.jk[i].name || n != t.jk[i].n || !n) abort();
    }
    json_t *o = sk_jkeys_json(&t);
    if (o) {
        if (json_object_size(json_object_get(o, "keys")) != t.njk) abort();
        char *s = json_dumps(o, JSON_COMPACT);
        free(s);
        json_decref(o);
    }
    sk_jkeys_free(&t);
    return 0;
}
