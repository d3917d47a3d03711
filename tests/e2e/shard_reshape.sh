#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# shard_reshape.sh - `shardkit shard` rewrites shards without losing or
# duplicating a sample: every input member appears exactly once in the
# output (names and CRCs compared), --num-shards 7 gives 7 shards within
# one sample of even, output is deterministic, inputs may be a manifest, a
# brace pattern, a .tar.gz or stdin, filters work, and bad inputs and
# unsupported targets fail with clear errors.
. "$(dirname "$0")/lib.sh"
need python3 tar zstd
tmpdir T
cd "$T"
M="python3 $SK_ROOT/tests/e2e/lib/members.py"
"$SK_TOOLS/mkcorpus" c --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack c -o in/i-%03d.tar --max-count 70 -q
$M in/i-*.tar > want

step "--num-shards 7 from a manifest"
expect_ok "$SK_BIN" shard in/manifest.json -o o7/s-%02d.tar --num-shards 7 --json
assert_contains "$OUT" '"samples": 300'
check_shards o7
assert_eq "$SHARDS" 7 "shards"
python3 - <<'PY' || die "uneven split"
import json
c = [s["samples"] for s in json.load(open("o7/manifest.json"))["shards"]]
assert len(c) == 7 and sum(c) == 300 and max(c) - min(c) <= 1, c
PY
$M o7/s-*.tar > got
cmp -s want got || die "members differ after --num-shards 7"

step "deterministic: a rerun gives the same bytes"
expect_ok "$SK_BIN" shard in/manifest.json -o o7b/s-%02d.tar --num-shards 7
for f in o7/*; do cmp -s "$f" "o7b/$(basename "$f")" || die "$f differs on a rerun"; done

step "--max-count and --max-size from a brace pattern"
expect_ok "$SK_BIN" shard 'in/i-{000..004}.tar' -o oc/s-%02d.tar --max-count 64
check_shards oc
assert_eq "$SHARDS" 5 "shards of 64"
expect_ok "$SK_BIN" shard in/i-000.tar in/i-001.tar in/i-002.tar in/i-003.tar in/i-004.tar -o os/s-%02d.tar --max-size 1M
check_shards os
for f in os/*.tar; do [ "$(stat -c %s "$f")" -le $((1024 * 1024 + 1024)) ] || die "$f over 1M"; done
$M os/*.tar > got
cmp -s want got || die "members differ after --max-size"

step "shuffle: same seed same bytes, other seed other order, same members"
expect_ok "$SK_BIN" shard in/manifest.json -o h1/s-%02d.tar --shuffle --seed 7 --max-count 100 --shuffle-mem 64K --tmp-dir "$T"
expect_ok "$SK_BIN" shard in/manifest.json -o h2/s-%02d.tar --shuffle --seed 7 --max-count 100 --shuffle-mem 64K --tmp-dir "$T"
expect_ok "$SK_BIN" shard in/manifest.json -o h3/s-%02d.tar --shuffle --seed 8 --max-count 100
check_shards h1
for f in h1/*; do cmp -s "$f" "h2/$(basename "$f")" || die "$f: same seed, different bytes"; done
! cmp -s h1/s-00.tar h3/s-00.tar || die "seeds 7 and 8 gave the same order"
$M h1/*.tar > got; cmp -s want got || die "members differ after --shuffle"
$M h3/*.tar > got; cmp -s want got || die "members differ after --shuffle (default memory)"
[ -z "$(find "$T" -maxdepth 1 -name '.shardkit-shuffle-*')" ] || die "shuffle buckets left behind"
tar tf h1/s-00.tar | head -6 | sed 's/\..*//' | uniq -c | awk '$1 != 3 { exit 1 }' || die "a sample's members are not adjacent"

step "zstd output: zstd -d | tar t, tar --zstd, random lookups"
expect_ok "$SK_BIN" shard in/manifest.json -o z/s-%02d.tar.zst --compress zstd:5 --max-count 120
[ -f z/s-02.tar.zst ] || die "no third .tar.zst"
for f in z/*.tar.zst; do
    zstd -dc "$f" | tar t > /dev/null || die "$f: zstd -d | tar t fails"
    tar --zstd -tf "$f" > /dev/null || die "$f: tar --zstd fails"
    "$SK_TOOLS/idxdump" "$f.idx" | grep -q "flags=1 " || die "$f: index lacks SK_INDEX_ZSTD"
done
$M z/*.tar.zst > got; cmp -s want got || die "members differ in .tar.zst output"
python3 - <<'PY' || die "zstd output is not in the seekable format with per-sample frames"
import struct
d = open("z/s-00.tar.zst", "rb").read()
n, desc, magic = struct.unpack_from("<IBI", d, len(d) - 9)
assert magic == 0x8F92EAB1 and desc == 0, hex(magic)
start = len(d) - 9 - 8 * n - 8
assert struct.unpack_from("<II", d, start) == (0x184D2A5E, 8 * n + 9)
assert n > 10, n  # one frame per sample or run of small samples
PY
for k in $(tar --zstd -tf z/s-01.tar.zst | awk 'NR % 17 == 1'); do
    "$SK_BIN" get z/manifest.json "${k%%.*}" --ext "${k#*.}" | cmp -s - "c/$k" || die "get $k from .tar.zst"
done
"$SK_BIN" get z/manifest.json '#299' -o one >/dev/null || die "get #299"

step "pack --compress zstd"
expect_ok "$SK_BIN" pack c -o pz/p-%03d.tar.zst --compress zstd --max-count 100 -q
[ -f pz/p-002.tar.zst ] || die "pack wrote no third shard"
for f in pz/*.tar.zst; do
    zstd -dc "$f" | tar t > /dev/null || die "$f: zstd -d | tar t fails"
    tar --zstd -tf "$f" > /dev/null || die "$f: tar --zstd fails"
done
$M pz/*.tar.zst > got; cmp -s want got || die "members differ in pack --compress output"
for k in $(tar --zstd -tf pz/p-002.tar.zst | awk 'NR % 13 == 2'); do
    "$SK_BIN" get pz/manifest.json "${k%%.*}" --ext "${k#*.}" | cmp -s - "c/$k" || die "get $k from pack .tar.zst"
done
expect_ok "$SK_BIN" pack c -o pw/p-%03d.tar --compress zstd -q
assert_contains "$ERR" "do not end in .zst"
grep -q '"compress": "zstd:3"' pz/manifest.json || die "pack manifest lacks compress"

step "compressed inputs, stdin, stdout"
gzip -c in/i-000.tar > in0.tar.gz
zstd -qc in/i-001.tar > in1.tar.zst
expect_ok "$SK_BIN" shard in0.tar.gz in1.tar.zst -o g/s-%02d.tar
check_shards g
$M in/i-000.tar in/i-001.tar > w2; $M g/*.tar > got; cmp -s w2 got || die "members differ from .tar.gz/.tar.zst inputs"
cat in/i-002.tar | "$SK_BIN" shard - -o st/s-%02d.tar > /dev/null || die "stdin input"
$M in/i-002.tar > w3; $M st/*.tar > got; cmp -s w3 got || die "members differ from stdin"
"$SK_BIN" shard in/i-003.tar -o - > out.tar || die "-o -"
$M in/i-003.tar > w4; $M out.tar > got; cmp -s w4 got || die "members differ on stdout"
(cd c && zip -qr ../in.zip n00000/0000000*) 2>/dev/null && {
    expect_ok "$SK_BIN" shard in.zip -o zp/s-%02d.tar
    [ "$(tar tf zp/s-00.tar | wc -l)" = 30 ] || die "zip input: wrong member count"
}

step "filters"
expect_ok "$SK_BIN" shard in/manifest.json -o f1/s-%02d.tar --select jpg,cls --rename cls=label
check_shards f1
[ "$(tar tf f1/s-00.tar | grep -c '\.label$')" = 300 ] || die "--rename"
! tar tf f1/s-00.tar | grep -q '\.json$' || die "--select kept json"
expect_ok "$SK_BIN" shard in/manifest.json -o f2/s-%02d.tar --drop jpg
! tar tf f2/s-00.tar | grep -q '\.jpg$' || die "--drop kept jpg"
printf 'n00000/00000005\nn00000/00000123\nnot/there\n' > keys
expect_ok "$SK_BIN" shard in/manifest.json -o f3/s-%02d.tar --keys keys --json
assert_contains "$OUT" '"samples": 2'
assert_contains "$OUT" '"dropped": 298'
[ "$(tar tf f3/s-00.tar | wc -l)" = 6 ] || die "--keys"

step "--resume keeps complete shards and rewrites the rest"
expect_ok "$SK_BIN" shard in/manifest.json -o r/s-%02d.tar --num-shards 7
rm r/s-04.tar; touch -d '2000-01-01' r/s-01.tar
expect_ok "$SK_BIN" shard in/manifest.json -o r/s-%02d.tar --num-shards 7 --resume --json
assert_contains "$OUT" '"shards_resumed": 6'
for f in o7/*; do cmp -s "$f" "r/$(basename "$f")" || die "$f differs after --resume"; done
[ "$(stat -c %Y r/s-01.tar)" = "$(date -d 2000-01-01 +%s)" ] || die "--resume rewrote a complete shard"
expect_ok "$SK_BIN" shard in/manifest.json -o r2/s-%02d.tar --max-count 50
expect_fail 1 "--resume: sample 0 is not" "$SK_BIN" shard in/i-001.tar -o r2/s-%02d.tar --max-count 50 --resume

step "errors"
expect_fail 2 "no {part} field" "$SK_BIN" shard in/i-000.tar -o e/s-%02d.tar --part 0/2
expect_fail 2 "--num-shards" "$SK_BIN" shard - -o e/s-%02d.tar --num-shards 3 < in/i-000.tar
expect_fail 2 "PATTERN" "$SK_BIN" shard in/i-000.tar
expect_fail 1 "cannot open" "$SK_BIN" shard nope.tar -o e/s-%02d.tar
head -c 300000 in/i-000.tar > cut.tar
expect_fail 1 "cut.tar" "$SK_BIN" shard cut.tar -o e/s-%02d.tar
assert_no_tmp e
"$SK_BIN" shard --help | grep -q -- "--num-shards" || die "--help"
echo "shard reshape ok"
