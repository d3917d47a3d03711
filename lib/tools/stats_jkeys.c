/*
 * stats_jkeys.c - `stats --json-keys`: the key and type walk over a
 * dataset's .json members.  Each member's bytes (from the dataset, so
 * untrusted) are parsed by jansson and its top-level type and, for an
 * object, each key and the type of its value are counted; the tally is
 * the "json_keys" object of the stats document (docs/stats.md).
 *
 * Memory stays bounded whatever the members hold: at most SK_JKEYS_MAX
 * distinct keys are kept (the rest are counted as "keys_other"), and one
 * member's parse tree lives only while it is walked.  Kept apart from
 * stats.c so that fuzz/fuzz_stats_json.c can feed it any bytes.
 */
#include "tools/stats.h"

#include <stdlib.h>

/* json_typeof's order; true and false are both "bool" */
static const char *const jtypes[8] = {"object", "array", "string", "integer",
                                      "real",   "bool",  "bool",   "null"};

int sk_jkeys_init(sk_jkeys *t)
{
    memset(t, 0, sizeof *t);
    return (t->jk = calloc(SK_JKEYS_MAX, sizeof *t->jk)) ? SK_OK : SK_E_NOMEM;
}

void sk_jkeys_free(sk_jkeys *t)
{
    for (size_t i = 0; i < t->njk; i++) free(t->jk[i].name);
    free(t->jk);
    t->jk = NULL, t->njk = 0;
}

int sk_jkeys_add(sk_jkeys *t, const char *buf, size_t n)
{
    json_error_t je;
    json_t *v = json_loadb(buf, n, JSON_DECODE_ANY, &je);
    if (!v) {
        t->bad++;
        return SK_OK;
    }
    t->top[json_typeof(v)]++;
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        size_t j = 0;
        while (j < t->njk && strcmp(t->jk[j].name, k)) j++;
        if (j == t->njk) {
            if (t->njk == SK_JKEYS_MAX) {
                t->overflow++;
                continue;
            }
            if (!(t->jk[j].name = strdup(k))) {
                json_decref(v);
                return SK_E_NOMEM;
            }
            t->njk++;
        }
        t->jk[j].n++;
        t->jk[j].types[json_typeof(x)]++;
    }
    json_decref(v);
    return SK_OK;
}

static json_t *u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* Steals v into obj[k]; a failure is out of memory. */
static int put(json_t *obj, const char *k, json_t *v)
{
    return !v || json_object_set_new(obj, k, v) ? SK_E_NOMEM : SK_OK;
}

json_t *sk_jkeys_json(const sk_jkeys *t)
{
    json_t *o = json_pack("{s:I,s:I,s:I,s:I}", "members", (json_int_t)t->members, "bad",
                          (json_int_t)t->bad, "skipped", (json_int_t)t->skipped, "keys_other",
                          (json_int_t)t->overflow);
    json_t *top = json_object(), *keys = json_object();
    if (!o || !top || !keys) goto fail;
    for (int i = 0; i < 8; i++)
        if (t->top[i]) {
            json_t *prev = json_object_get(top, jtypes[i]);
            uint64_t n = t->top[i] + (prev ? (uint64_t)json_integer_value(prev) : 0);
            if (put(top, jtypes[i], u64(n))) goto fail;
        }
    for (size_t i = 0; i < t->njk; i++) {
        json_t *types = json_object();
        if (!types) goto fail;
        for (int y = 0; y < 8; y++)
            if (t->jk[i].types[y]) {
                json_t *prev = json_object_get(types, jtypes[y]);
                uint64_t n = t->jk[i].types[y] + (prev ? (uint64_t)json_integer_value(prev) : 0);
                put(types, jtypes[y], u64(n));
            }
        if (put(keys, t->jk[i].name,
                json_pack("{s:I,s:o}", "count", (json_int_t)t->jk[i].n, "types", types)))
            goto fail;
    }
    if (put(o, "top_level", top) || put(o, "keys", keys)) {
        json_decref(o);
        return NULL;
    }
    return o;
fail:
    json_decref(o), json_decref(top), json_decref(keys);
    return NULL;
}
