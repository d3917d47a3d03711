#!/usr/bin/env bash
# verify_broken.sh - `shardkit verify` against a corpus of deliberately
# broken shards made here: truncated at several offsets, a flipped byte in
# a header (and in the end blocks), a flipped byte in a member (found with
# --deep), trailing garbage, split samples, duplicate keys within and
# across shards, a truncated JPEG (--jpeg), an index from another shard, a
# manifest with a wrong count, a missing --require'd extension, an empty
# member (a warning).  Each is found, with its shard, offset and kind, and
# nothing is reported for sound shards (plain and .tar.zst).
. "$(dirname "$0")/lib.sh"
need python3 tar zstd
tmpdir T
cd "$T"
V="$SK_BIN verify"
"$SK_TOOLS/mkcorpus" c --samples 60 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack c -o ok/s-%02d.tar --max-count 20 -q
expect_ok "$SK_BIN" pack c -o okz/s-%02d.tar.zst --max-count 20 --compress zstd -q

# finds KIND [SUBSTR] -- ARGS: verify exits 1 and reports KIND (and SUBSTR)
finds() {
    local kind=$1 sub=$2
    shift 3
    run $V --json "$@"
    [ "$RC" -eq 1 ] || die "verify $*: exit $RC, want 1"
    grep -q "\"kind\": \"$kind\"" "$OUT" || die "verify $*: no '$kind' problem reported"
    [ -z "$sub" ] || grep -qF -- "$sub" "$OUT" || die "verify $*: report lacks '$sub'"
}
# header offset of member N of a tar (python's tarfile)
hdr() { python3 -c "import tarfile,sys; print(tarfile.open(sys.argv[1]).getmembers()[int(sys.argv[2])].offset)" "$1" "$2"; }
dat() { python3 -c "import tarfile,sys; print(tarfile.open(sys.argv[1]).getmembers()[int(sys.argv[2])].offset_data)" "$1" "$2"; }
flip() { python3 -c "
import sys; p, o = sys.argv[1], int(sys.argv[2]); b = bytearray(open(p,'rb').read()); b[o] ^= 0x5a; open(p,'wb').write(b)" "$1" "$2"; }
fresh() { rm -rf b; cp -r ok b; }

step "sound shards: nothing reported"
for args in "ok/manifest.json" "--deep --jpeg ok/manifest.json" "--deep --jpeg okz/manifest.json" \
            "--deep ok/s-00.tar ok/s-01.tar ok/s-02.tar" "--require jpg,cls,json ok/s-{00..02}.tar"; do
    # shellcheck disable=SC2086
    expect_ok $V --json $args
    [ "$(grep -c '"kind"' "$OUT")" = 0 ] || die "problems reported for sound shards ($args)"
    assert_contains "$OUT" '"errors": 0'
done
expect_ok $V ok/manifest.json
assert_contains "$OUT" "sound: 3 shards, 60 samples"

step "truncated at several offsets"
size=$(stat -c %s ok/s-01.tar)
h3=$(hdr ok/s-01.tar 3); d3=$(dat ok/s-01.tar 3)
for cut in 100 $((h3 + 200)) $((d3 + 700)) $((size - 1024)) $((size - 512)) $((size - 100)); do
    fresh; head -c "$cut" ok/s-01.tar > b/s-01.tar
    finds truncated "" -- b/s-01.tar
    grep -q '"shard": "b/s-01.tar"' "$OUT" || die "truncation at $cut: shard not named"
    finds truncated "" -- --deep b/s-01.tar
done
fresh; head -c $((d3 + 700)) ok/s-01.tar > b/s-01.tar
finds manifest "bytes, the manifest says" -- b/manifest.json
zstd -qc "$(printf ok/s-00.tar)" | head -c 20000 > cut.tar.zst
finds truncated "" -- cut.tar.zst

step "a flipped byte in a header, the checksum field, an end block"
for n in 0 4 7; do
    fresh; h=$(hdr b/s-00.tar $n); flip b/s-00.tar $((h + 20))
    finds tar "checksum" -- b/s-00.tar
    grep -q "\"offset\": $h," "$OUT" || die "corrupt header $n: offset $h not reported"
done
fresh; h=$(hdr b/s-00.tar 5); flip b/s-00.tar $((h + 150))
finds tar "checksum" -- b/s-00.tar
fresh; flip b/s-02.tar $(( $(stat -c %s b/s-02.tar) - 700 ))
finds tar "" -- b/manifest.json

step "a flipped byte in a member: found with --deep"
fresh; d=$(dat b/s-01.tar 10); flip b/s-01.tar $((d + 5))
expect_ok $V b/s-01.tar
finds crc "CRC32C" -- --deep b/s-01.tar
finds manifest "CRC32C" -- --deep b/manifest.json

step "trailing garbage"
fresh; printf 'GARBAGE' >> b/s-00.tar
finds tar "trailing garbage" -- b/s-00.tar
fresh; (cat ok/s-00.tar; head -c 10240 /dev/zero) > b/s-00.tar
run $V b/s-00.tar
assert_not_contains "$OUT" "trailing garbage"

step "split samples and duplicate keys"
mkdir -p raw && (cd c/n00000 && cp 00000001.jpg 00000001.cls 00000002.jpg 00000002.cls ../../raw/)
(cd raw && tar --format=ustar -cf ../split.tar 00000001.jpg 00000002.jpg 00000001.cls 00000002.cls)
finds split "not adjacent" -- split.tar
(cd raw && tar --format=ustar -cf ../dup.tar 00000001.cls 00000002.cls && tar --format=ustar -rf ../dup.tar 00000001.cls)
finds duplicate "duplicate key" -- dup.tar
(cd raw && tar --format=ustar -cf ../dup2.tar 00000001.cls && tar --format=ustar -rf ../dup2.tar 00000001.cls)
finds duplicate "twice" -- dup2.tar
(cd raw && tar --format=ustar -cf ../one.tar 00000001.jpg 00000001.cls)
(cd raw && tar --format=ustar -cf ../two.tar 00000002.jpg 00000001.jpg 00000001.cls)
finds duplicate "also in one.tar" -- one.tar two.tar

step "a truncated JPEG (--jpeg), an empty member (warning), --require"
cp -r c c2
j=c2/n00000/00000007.jpg; head -c $(( $(stat -c %s $j) / 2 )) $j > j.tmp && mv j.tmp $j
: > c2/n00000/00000009.json
expect_ok "$SK_BIN" pack c2 -o bj/s-%02d.tar --max-count 30 -q
expect_ok "$SK_BIN" pack c2 -o bjz/s-%02d.tar.zst --max-count 30 --compress zstd -q
finds jpeg "n00000/00000007" -- --jpeg -j 2 bj/manifest.json
[ "$(grep -c '"kind": "jpeg"' "$OUT")" = 1 ] || die "--jpeg: want exactly one bad JPEG"
finds jpeg "n00000/00000007" -- --jpeg bjz/manifest.json
run $V --json bj/manifest.json
[ "$RC" = 0 ] || die "an empty member alone should be a warning (exit $RC)"
grep -q '"severity": "warning", "kind": "empty"' "$OUT" || die "empty member not reported"
finds missing "no 'txt' member" -- --require txt ok/s-00.tar

step "an index from another shard, a manifest with a wrong count"
fresh; cp b/s-01.tar.idx b/s-00.tar.idx
finds index "another shard" -- b/s-00.tar
fresh; python3 - <<'PY'
import json
m = json.load(open("b/manifest.json")); m["shards"][1]["samples"] += 1
m["shards"][2]["first_ordinal"] += 1; m["totals"]["samples"] += 1
json.dump(m, open("b/manifest.json", "w"), indent=2)
PY
finds manifest "samples, the manifest says" -- b/manifest.json

step "human report, usage and I/O errors"
fresh; head -c 5000 ok/s-01.tar > b/s-01.tar
run $V b/s-01.tar
[ "$RC" = 1 ] || die "exit $RC"
grep -q '^b/s-01.tar:[0-9]*: error: truncated' "$OUT" || die "human report format"
assert_contains "$OUT" "PROBLEMS"
expect_fail 2 "cannot open" $V nope.tar
expect_fail 2 "nothing to verify" $V
$V --help | grep -q -- "--deep" || die "--help"
echo "verify broken ok"
