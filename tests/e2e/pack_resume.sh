#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# pack_resume: a pack killed with SIGKILL mid-run leaves no incomplete shard
# under a final name; `--resume` keeps the complete shards, writes only what
# is missing, and the result is byte-identical to an uninterrupted run.  A
# shard damaged after the fact, or a plan that changed, is redone.
. "$(dirname "$0")/lib.sh"
need tar cmp
tmpdir T
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 2000 >/dev/null || die "mkcorpus failed"

step "the reference: an uninterrupted run"
expect_ok "$SK_BIN" pack "$C" -o "$T/ref/t-%05d.tar" --max-count 4 --jobs 2

step "kill -9 once a few shards are out"
killed=0
for attempt in 1 2 3 4 5; do
    rm -rf "$T/out"
    "$SK_BIN" pack "$C" -o "$T/out/t-%05d.tar" --max-count 4 --jobs 2 2>/dev/null &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [ ! -e "$T/out/t-00020.tar" ]; do :; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ ! -e "$T/out/manifest.json" ]; then killed=1; break; fi
done
[ "$killed" = 1 ] || skip "pack finished before it could be killed (machine too fast)"
n=$(ls "$T"/out/t-*.tar | wc -l)
[ "$n" -lt 500 ] || die "the killed run wrote every shard"
step "$n shards were complete when killed"
for t in "$T"/out/t-*.tar; do
    tar tf "$t" >/dev/null 2>&1 || die "$t: incomplete shard under its final name"
    [ -f "$t.idx" ] || die "$t: published without its index"
    [ "$(stat -c %s "$t")" = "$(idx_size "$t.idx")" ] || die "$t: size disagrees with its index"
    cmp -s "$t" "$T/ref/${t##*/}" || die "$t: differs from the uninterrupted run"
done

step "--resume keeps them and finishes identically"
before=$(stat -c %i "$T/out/t-00000.tar")
expect_ok "$SK_BIN" pack "$C" -o "$T/out/t-%05d.tar" --max-count 4 --jobs 2 --resume --json
grep -q "\"shards_resumed\": $n," "$OUT" || die "expected $n resumed shards: $(cat "$OUT")"
[ "$(stat -c %i "$T/out/t-00000.tar")" = "$before" ] || die "a complete shard was rewritten"
for f in $(cd "$T/ref" && ls -A); do cmp "$T/ref/$f" "$T/out/$f" || die "resumed output differs: $f"; done
assert_no_tmp "$T/out"

step "a damaged shard or index is redone; a changed plan redoes the rest"
printf 'X' | dd of="$T/out/t-00003.tar" bs=1 seek=100 conv=notrunc 2>/dev/null
truncate -s 100 "$T/out/t-00007.tar.idx"
expect_ok "$SK_BIN" pack "$C" -o "$T/out/t-%05d.tar" --max-count 4 --resume --json
grep -q '"shards_resumed": 498,' "$OUT" || die "expected 498 kept, 2 redone: $(cat "$OUT")"
cmp "$T/ref/t-00007.tar.idx" "$T/out/t-00007.tar.idx" || die "damaged index not redone"
for f in $(cd "$T/ref" && ls -A); do cmp "$T/ref/$f" "$T/out/$f" || die "differs after repair: $f"; done
expect_ok "$SK_BIN" pack "$C" -o "$T/out/t-%05d.tar" --max-count 5 --resume --json
grep -q '"shards_resumed": 0,' "$OUT" || die "a changed --max-count must not keep shards: $(cat "$OUT")"
expect_ok "$SK_BIN" pack "$C" -o "$T/ref5/t-%05d.tar" --max-count 5
for f in $(cd "$T/ref5" && ls -A); do cmp "$T/ref5/$f" "$T/out/$f" || die "replanned output differs: $f"; done
echo "pack_resume: ok"
