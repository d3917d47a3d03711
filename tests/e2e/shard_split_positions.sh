#!/usr/bin/env bash
# shard_split_positions.sh - a tar whose samples' members are not adjacent
# (GNU tar of a directory in directory order: a.jpg b.jpg c.jpg a.cls ...)
# is refused by `shard`, never split (issue 27; docs/shard.md says why it
# is not regrouped): exit 1, nothing written, and the message names the
# first such sample and both places in the tar stream where its members
# are (the byte offsets of their headers), plain and gzipped alike.
. "$(dirname "$0")/lib.sh"
need tar gzip
tmpdir T
mkdir -p "$T/d"
for k in a b c; do printf '%s image\n' "$k" >"$T/d/$k.jpg"; printf '1\n' >"$T/d/$k.cls"; done
(cd "$T" && tar --no-recursion -cf split.tar d/a.jpg d/b.jpg d/c.jpg d/a.cls d/b.cls d/c.cls)
gzip -c "$T/split.tar" >"$T/split.tar.gz"
for f in split.tar split.tar.gz; do
    step "$f"
    expect_fail 1 "3 samples whose members are not adjacent (first: 'd/a', members at byte 0 and again at byte 3072" \
        "$SK_BIN" shard -q "$T/$f" -o "$T/out/t-%03d.tar"
    [ -z "$(ls -A "$T/out" 2>/dev/null)" ] || die "a refused shard wrote $(ls "$T/out")"
done
exit 0
