/*
 * pack_out.c - what pack and the streaming sample writer share about their
 * output with pack's options (see pack_out.h); the rules shard shares too
 * are the emitter's (io/emit.c).
 */
#include "pack/pack_out.h"
#include "format/format.h"
#include "format/tar.h"

#include "io/io.h"

#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void sk_pack_warn_oversized(const sk_pack_options *o, const char *name, uint64_t b)
{
    uint64_t max = o->max_size ? o->max_size : SK_PACK_DEFAULT_MAX_SIZE;
    if (b + SK_PACK_EOA <= max || !o->warn) return;
    char msg[SK_ERROR_MAX + 128]; /* as sk_vwarnf */
    snprintf(msg, sizeof msg, "sample of %s is %llu bytes, more than --max-size alone; it gets a "
             "shard of its own", name, (unsigned long long)b);
    o->warn(o->ctx, msg);
}

/* The pattern's basename only: no machine paths in the manifest. */
char *sk_pack_options_json(const char *pattern_tmpl, const sk_pack_options *po)
{
    const char *base = strrchr(pattern_tmpl, '/');
    base = base ? base + 1 : pattern_tmpl;
    char z[32];
    snprintf(z, sizeof z, "zstd:%d", po->compress_level);
    json_t *o = json_object();
    if (!o || json_object_set_new(o, "pattern", sk_json_str(base)) ||
        json_object_set_new(o, "start", sk_json_u64(po->start)) ||
        json_object_set_new(o, "max_size", sk_json_u64(po->max_size ? po->max_size
                                                                    : SK_PACK_DEFAULT_MAX_SIZE)) ||
        json_object_set_new(o, "max_count", sk_json_u64(po->max_count)) ||
        json_object_set_new(o, "order", json_string(po->shuffle ? "shuffle" : "key")) ||
        json_object_set_new(o, "seed", sk_json_u64(po->shuffle ? po->seed : 0)) ||
        json_object_set_new(o, "mtime", sk_json_u64(po->mtime)) ||
        json_object_set_new(o, "compress", po->compress_level ? json_string(z) : json_null())) {
        json_decref(o);
        return NULL;
    }
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    return text;
}

