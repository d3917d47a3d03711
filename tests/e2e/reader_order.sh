#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# reader_order.sh - the reader's global order (tests/tools/order_grid) over
# world sizes 1,2,3,4,8 x workers 0,1,2,4, on a dataset with fewer shards
# than slots (3 shards, up to 32 slots) and one with many (100 shards):
# every slot's samples together are the epoch once, the sequence is the
# same at every grid point, and a job stopped at several points resumes in
# another world size with every sample read exactly once.  Then the same
# dataset in S3 (moto_server, signature checking on, through a logging
# proxy): the same checks, the same sequence as the local copy, and the
# ranged GETs a sample made (coalesced neighbours: one GET for several).
# Hostile shards and indexes are refused by name.
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
grid() { "$SK_TOOLS/order_grid" "$@" || fail "order_grid $*"; }
seq_of() { sed -n 's/.*sequence=\([0-9a-f]*\).*/\1/p' <<<"$1"; }

"$SK_TOOLS/mkcorpus" "$t/c" --samples 1000 >/dev/null
"$SK_BIN" pack "$t/c" -o "$t/few/train-%06d.tar" --max-count 400 >/dev/null 2>&1
"$SK_BIN" pack "$t/c" -o "$t/many/train-%06d.tar" --max-count 10 >/dev/null 2>&1

echo "== fewer shards than slots (3 shards)"
few=$(grid "$t/few/manifest.json")
echo "$few"
echo "== many shards (100), window 3, batch 3"
many=$(grid --window 3 --batch 3 "$t/many/manifest.json")
echo "$many"
echo "== a brace pattern (counts from the indexes) gives the manifest's sequence"
brace=$(grid --window 3 --batch 3 "$t/many/train-{000000..000099}.tar")
[ "$(seq_of "$brace")" = "$(seq_of "$many")" ] || fail "pattern and manifest orders differ"

echo "== a shard without its index is refused by name"
mkdir "$t/noidx" && cp "$t/few/train-000001.tar" "$t/noidx/"
out=$("$SK_TOOLS/order_grid" "$t/noidx/train-000001.tar" 2>&1) && fail "read a shard without an index"
grep -q "train-000001.tar" <<<"$out" && grep -q "index" <<<"$out" || fail "unclear refusal: $out"

echo "== hostile shards and indexes: each refused by name, never read past"
cp -r "$t/few" "$t/bad"
gcat() { "$SK_BIN" cat --keys --global-order --shuffle-shards "$@"; }
# a byte of a member's data changed: its CRC32C (from the index) says so
off=$(( $(stat -c %s "$t/bad/train-000001.tar") / 2 ))
printf 'X' | dd of="$t/bad/train-000001.tar" bs=1 seek=$off conv=notrunc status=none
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000001.tar: member .*CRC32C" <<<"$out" || fail "a changed byte was not caught (rc $rc): $out"
# another shard's index: sizes and counts disagree
cp "$t/few/train-000001.tar" "$t/bad/train-000001.tar"
cp "$t/few/train-000002.tar.idx" "$t/bad/train-000000.tar.idx"
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000000.tar" <<<"$out" || fail "a foreign index was used (rc $rc): $out"
cp "$t/few/train-000000.tar.idx" "$t/bad/"
# a shard cut short: the manifest's size (and the index's) disagree
head -c 100000 "$t/few/train-000002.tar" >"$t/bad/train-000002.tar"
rc=0; out=$(gcat "$t/bad/manifest.json" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000002.tar" <<<"$out" || fail "a truncated shard was read (rc $rc): $out"
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000002.tar" <<<"$out" || fail "a truncated shard was read (rc $rc): $out"
# a compressed shard or a stream: the global order says to read it without
if command -v zstd >/dev/null; then
    mkdir "$t/z" && zstd -q "$t/few/train-000000.tar" -o "$t/z/z.tar.zst"
    "$SK_BIN" index "$t/z/z.tar.zst" >/dev/null 2>&1 || fail "index of a .tar.zst"
    rc=0; out=$(gcat "$t/z/z.tar.zst" 2>&1 >/dev/null) || rc=$?
    [ $rc != 0 ] && grep -q "global_order" <<<"$out" || fail "a .tar.zst in the global order (rc $rc): $out"
fi
rc=0; out=$(gcat - <"$t/few/train-000000.tar" 2>&1 >/dev/null) || rc=$?
[ $rc != 0 ] && grep -q "stream" <<<"$out" || fail "stdin in the global order (rc $rc): $out"

echo "== mixing: two datasets at 0.3 / 0.7 over 100,000 samples, every grid point"
"$SK_TOOLS/mkcorpus" "$t/c2" --samples 600 --seed 3 >/dev/null
"$SK_BIN" pack "$t/c2" -o "$t/b/b-%06d.tar" --max-count 20 >/dev/null 2>&1
grid --no-resume --proportion 0.3,0.7 --samples 100000 "$t/few/manifest.json" "$t/b/manifest.json"
echo "== mixing: resume into other world sizes (5,000 samples)"
grid --proportion 0.3,0.7 --samples 5000 --window 4 "$t/few/manifest.json" "$t/b/manifest.json"

skip_unless_moto
s3_serve auth bkt
proxy_start "$MOTO_URL" "$t/req.log"
# smaller datasets: the grid opens some 200 readers, each fetching the
# indexes it reads through, and moto answers a few dozen requests a second
# on a loaded machine: the full grid with resumes on 3 shards, the grid
# alone on 12
"$SK_TOOLS/mkcorpus" "$t/c3" --samples 240 --seed 5 >/dev/null
"$SK_BIN" pack "$t/c3" -o "$t/sfew/train-%06d.tar" --max-count 100 >/dev/null 2>&1
"$SK_BIN" pack "$t/c3" -o "$t/smany/train-%06d.tar" --max-count 20 >/dev/null 2>&1
aws s3 cp --recursive --quiet "$t/sfew" s3://bkt/few/
aws s3 cp --recursive --quiet "$t/smany" s3://bkt/many/
echo "== S3: fewer shards than slots (3 shards)"
lfew=$(grid --read-ahead 4000000 "$t/sfew/manifest.json")
s3few=$(grid --read-ahead 4000000 --endpoint "$PROXY_URL" s3://bkt/few/manifest.json)
echo "$s3few"
[ "$(seq_of "$s3few")" = "$(seq_of "$lfew")" ] || fail "S3 and local orders differ (few)"
echo "== S3: more shards (12), window 3, batch 3, no resume"
lmany=$(grid --no-resume --read-ahead 4000000 --window 3 --batch 3 "$t/smany/manifest.json")
s3many=$(grid --no-resume --read-ahead 4000000 --endpoint "$PROXY_URL" --window 3 --batch 3 s3://bkt/many/manifest.json)
echo "$s3many"
[ "$(seq_of "$s3many")" = "$(seq_of "$lmany")" ] || fail "S3 and local orders differ (many)"
grep -Eq '^GET /bkt/(few|many)/train-[0-9]+\.tar 206' "$t/req.log" || fail "no ranged GET of a shard"
rps=$(sed -n 's/.*reads_per_sample=\([0-9.]*\).*/\1/p' <<<"$s3few")
awk -v r="$rps" 'BEGIN { exit !(r < 1) }' || fail "$rps GETs a sample: reads are not coalesced"
echo "ok"
