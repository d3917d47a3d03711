#!/usr/bin/env bash
# get_key_ranges.sh - a sorted dataset's manifest gives each shard's first
# and last key (pack, shard, index, index merge); `get KEY` then opens only
# the index of the shard whose range holds the key (strace counts the .idx
# opened), and `get '#N'` only the shard its count names.  Shuffled
# datasets and older manifests (no ranges) are searched index by index as
# before.  Hostile manifests: overlapping or unsorted ranges are ignored
# (the right sample still comes back); ordered ranges that do not match the
# shard's index are refused, never answered with another sample; a range
# that is not a pair of strings is a corrupt manifest; verify reports a
# range that is not the shard's.
. "$(dirname "$0")/lib.sh"
need python3 strace tar
tmpdir T
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 60 --per-dir 20 >/dev/null || die mkcorpus

# idx_opens ARGS...: how many .idx files `shardkit ARGS` opens
idx_opens() {
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=open,openat -o trace "$SK_BIN" "$@" >/dev/null 2>&1 || true
    grep -c '\.idx"' trace || true
}
# ranges_of MANIFEST: "first last" per shard ("- -" when it has none)
ranges_of() {
    python3 -c 'import json,sys
for s in json.load(open(sys.argv[1]))["shards"]: print(s.get("first_key", "-"), s.get("last_key", "-"))' "$1"
}
# true_ranges DIR: "first last" per shard of DIR, from the tar members
true_ranges() {
    for f in "$1"/s-*.tar; do tar tf "$f" | sed 's/\.[^/]*$//' | LC_ALL=C sort -u | sed -n '1h;$!d;x;G;s/\n/ /;p'; done
}

step "pack (key order) writes every shard's key range"
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-count 5
[ "$(ls ds/s-*.tar | wc -l)" = 12 ] || die "expected 12 shards"
assert_eq "$(ranges_of ds/manifest.json)" "$(true_ranges ds)" "pack's key ranges"

step "get by key opens one index"
key=$(ranges_of ds/manifest.json | sed -n 11p | cut -d' ' -f2)   # the last key of shard 10
expect_ok "$SK_BIN" get ds/manifest.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get $key: wrong bytes"
assert_eq "$(idx_opens get ds/manifest.json "$key" --ext cls)" 1 "indexes opened by get $key"
assert_eq "$(idx_opens get ds/manifest.json '#57' --ext cls)" 1 "indexes opened by get #57"
expect_fail 1 "no sample with key 'n00000/nosuch'" "$SK_BIN" get ds/manifest.json n00000/nosuch
expect_fail 1 "no sample with key 'zzz'" "$SK_BIN" get ds/manifest.json zzz
assert_eq "$(idx_opens get ds/manifest.json zzz)" 0 "indexes opened for a key past every range"

step "a manifest without ranges (older shardkit) is searched index by index"
python3 - ds/manifest.json old.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for s in m["shards"]: del s["first_key"], s["last_key"]
m["shards"] = [dict(s, url="ds/" + s["url"], index="ds/" + s["index"]) for s in m["shards"]]
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
expect_ok "$SK_BIN" get old.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get $key through an old manifest: wrong bytes"
assert_eq "$(idx_opens get old.json "$key" --ext cls)" 11 "indexes opened through an old manifest"

step "a shuffled pack has overlapping ranges: none written, get still works"
expect_ok "$SK_BIN" pack c -o sh/s-%02d.tar --max-count 5 --shuffle --seed 3
assert_not_contains sh/manifest.json first_key
expect_ok "$SK_BIN" get sh/manifest.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get $key from the shuffled pack"

step "shard (reshard) and index write ranges; merge keeps them only when they rise"
expect_ok "$SK_BIN" shard ds/manifest.json -o rs/s-%02d.tar --max-count 7
assert_eq "$(ranges_of rs/manifest.json)" "$(true_ranges rs)" "shard's key ranges"
mkdir -p gt
for i in 0 1 2; do (cd c && find "n0000$i" -type f | LC_ALL=C sort | tar -cf "../gt/s-$i.tar" -T -); done
expect_ok "$SK_BIN" index 'gt/s-{0..2}.tar'
assert_eq "$(ranges_of gt/manifest.json)" "$(true_ranges gt)" "index's key ranges"
expect_ok "$SK_BIN" get gt/manifest.json n00001/00000025 --ext cls
assert_eq "$(cat "$OUT")" "$(cat c/n00001/00000025.cls)" "get through index's manifest"
mkdir -p p0 p1 m
for i in 0 1; do cp "gt/s-$i.tar" "p$i/"; expect_ok "$SK_BIN" index "p$i/s-$i.tar"; done
expect_ok "$SK_BIN" index merge p0/manifest.json p1/manifest.json -o m/ok.json
assert_eq "$(ranges_of m/ok.json | grep -c n000)" 2 "ranges kept by merge"
expect_ok "$SK_BIN" index merge p1/manifest.json p0/manifest.json -o m/desc.json
assert_not_contains m/desc.json first_key

# hostile MANIFEST_OUT PYTHON: a copy of ds/manifest.json as the code leaves m
hostile() {
    python3 - ds/manifest.json "$1" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
sh = m["shards"]
exec(sys.argv[3])
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
}
step "hostile: overlapping ranges are ignored (every index searched)"
hostile ds/overlap.json 'sh[3]["last_key"] = sh[8]["last_key"]'
expect_ok "$SK_BIN" get ds/overlap.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "overlapping ranges gave other bytes"
step "hostile: unsorted ranges are ignored"
hostile ds/unsorted.json 'sh[2]["first_key"], sh[9]["first_key"] = sh[9]["first_key"], sh[2]["first_key"]; sh[2]["last_key"], sh[9]["last_key"] = sh[9]["last_key"], sh[2]["last_key"]'
expect_ok "$SK_BIN" get ds/unsorted.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "unsorted ranges gave other bytes"
step "hostile: ordered ranges that name a key another shard holds are refused"
# shard 4 claims shard 5's first key; shard 5 starts at its second
k5=$(true_ranges ds | sed -n 6p | cut -d' ' -f1)
hostile ds/shifted.json 'import subprocess
ks = subprocess.run(["tar", "tf", "ds/s-05.tar"], capture_output=True, text=True).stdout.split()
keys = sorted({k.rsplit(".", 1)[0] for k in ks})
sh[4]["last_key"] = keys[0]; sh[5]["first_key"] = keys[1]'
expect_fail 1 "index disagrees with the manifest's key range" "$SK_BIN" get ds/shifted.json "$k5" --ext cls
assert_eq "$(wc -c < "$OUT")" 0 "bytes written for a refused lookup"
expect_fail 1 "ds/s-05.tar.idx: index disagrees" "$SK_BIN" get ds/shifted.json "$(true_ranges ds | sed -n 6p | cut -d' ' -f2)" --ext cls
expect_ok "$SK_BIN" get ds/shifted.json "$key" --ext cls   # shard 10's range is true
step "verify: a key range the shard does not have is a manifest problem"
expect_ok "$SK_BIN" verify ds/manifest.json
run "$SK_BIN" verify ds/shifted.json
[ "$RC" = 1 ] || die "verify of lying key ranges: exit $RC"
cat "$OUT" "$ERR" | grep -qF "s-04.tar:0: error: manifest: keys run from 'n00001/00000020' to 'n00001/00000024', the manifest says 'n00001/00000020' to 'n00001/00000025'" ||
    { cat "$OUT" "$ERR"; die "verify did not name shard 4's key range"; }
cat "$OUT" "$ERR" | grep -qF "s-05.tar:0: error: manifest: keys run from" || die "verify did not name shard 5's key range"
step "hostile: a range that is not two strings"
hostile ds/badtype.json 'sh[1]["first_key"] = 7'
expect_fail 1 "first_key and last_key must be strings" "$SK_BIN" get ds/badtype.json "$key"
hostile ds/half.json 'del sh[1]["last_key"]'
expect_fail 1 "first_key and last_key must be strings" "$SK_BIN" get ds/half.json "$key"
