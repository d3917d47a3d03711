/*
 * pack_out.h - the rules of pack's own options (sk_pack_options) that
 * `shardkit pack` (pack.c, pack_spread.c, pack_stream.c) and the streaming sample writer
 * (sample_writer.c) share, so that both write the same bytes for the same
 * samples: the cut rule with pack's options, the oversized-sample warning,
 * what the manifest says about the options.  The rules every shard writer
 * shares, shard's too, are the emitter's (io/emit.h).
 * Internal to libshardkit.
 */
#ifndef SK_PACK_OUT_H
#define SK_PACK_OUT_H

#include "format/format.h"
#include "io/writer.h"

#include "io/emit.h"

/* pack's names for the emitter's rules (io/emit.h) */
#define SK_PACK_DEFAULT_MAX_SIZE SK_EMIT_DEFAULT_MAX_SIZE
#define SK_PACK_EOA SK_EMIT_EOA

/* Whether a sample of b tar bytes starts a new shard after one holding
 * count samples and bytes tar bytes (max_size 0 is taken as the default). */
static inline int sk_pack_rolls(const sk_pack_options *o, uint64_t bytes, uint64_t count,
                                uint64_t b)
{
    return sk_emit_rolls(o->max_size, o->max_count, SK_EMIT_EOA, bytes, count, b);
}
/* The warning for a sample bigger than max_size alone (name: its first
 * member), when it is. */
void sk_pack_warn_oversized(const sk_pack_options *o, const char *name, uint64_t b);
/* The options that shaped the output, as the manifest records them
 * (pattern_tmpl: the caller's pattern, {part} unexpanded).  NULL when out
 * of memory. */
char *sk_pack_options_json(const char *pattern_tmpl, const sk_pack_options *o);

/* The sample writer with its shards cut by the caller (sample_writer.c),
 * for `pack --from-urls` (pack_urls.c): a shard per range of list rows,
 * as img2dataset cuts them, whatever their sizes.  After
 * sk_sample_writer_manual, max_size and max_count never cut; a shard
 * begins at sk_sample_writer_begin_at (shard number start + n, also when
 * it stays empty) and is published by sk_sample_writer_end_open (*path
 * gets its name when one was open, else "").  sk_sample_writer_keep_at
 * records shard n, complete from an earlier run, in the manifest as it
 * is, from its index (sk_emit_shard_sound's; taken over).
 * sk_sample_writer_part records the caller's --part I/N in the manifest
 * (which shards are its is the caller's cut), so `index merge` checks
 * that every part is there. */
void sk_sample_writer_manual(sk_sample_writer *w);
void sk_sample_writer_part(sk_sample_writer *w, int part, int parts);
int sk_sample_writer_begin_at(sk_sample_writer *w, uint64_t n, sk_error *err);
int sk_sample_writer_end_open(sk_sample_writer *w, char *path, size_t cap, sk_error *err);
int sk_sample_writer_keep_at(sk_sample_writer *w, uint64_t n, sk_index *ix, sk_error *err);

#endif
