#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3io_shard: `shardkit shard` with s3:// inputs and outputs, and
# `shardkit verify s3://`, against moto.
#  1. (auth off: moto's listings break under auth) through the fault proxy
#     (503s, resets mid-body, a stall): output identical to the same job run
#     on local files; SIGKILL during a multipart shard upload, then --resume:
#     the complete shard is kept, the killed run's upload is aborted, every
#     object identical;
#  2. (auth on, the same server) a manifest in S3 to shards in S3, multipart
#     (5 MiB parts): every object (shards, indexes, manifest) byte-identical
#     to the local run; also a brace pattern of objects to local shards,
#     --num-shards (counted from the index objects) and --shuffle with
#     --compress zstd;
#  3. verify s3://: a sound dataset passes; a flipped byte in an object, a
#     deleted object and a manifest with a wrong count are each found (exit
#     1); a missing target or an unreachable endpoint exits 2.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 1400 --per-dir 200 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$C" -o "$T/in/t-%04d.tar" --max-size 4M
nin=$(ls "$T/in"/*.tar | wc -l)
[ "$nin" -ge 4 ] || die "expected a few input shards, got $nin"

no_uploads_left() {
    [ "$(aws s3api list-multipart-uploads --bucket "$1" --query 'length(Uploads || `[]`)' --output text)" = 0 ] ||
        die "multipart upload(s) left in $1"
}

step "references: the same jobs on local files"
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/ref/o-%04d.tar" --max-size 8M
[ "$(ls "$T/ref"/*.tar | wc -l)" -ge 2 ] || die "expected several 8M output shards"
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/ref_sz/o-%04d.tar.zst" --shuffle --seed 7 --max-count 250 \
    --compress zstd
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/ref_n/o-%04d.tar" --num-shards 3

step "1. auth off: through the fault proxy, byte-identical"
s3_serve skb
s3_put_dir "$T/in" s3://skb/in/
proxy_start "$A" "$T/faults.log" --faults --stall 1
expect_ok "$SK_BIN" shard --endpoint-url "$PROXY_URL" s3://skb/in/manifest.json -o s3://skb/f/o-%04d.tar \
    --max-size 8M --part-size 5MiB
s3_same_dir "$T/ref" s3://skb/f/
no_uploads_left skb

step "1. SIGKILL during the second shard's upload, then --resume"
proxy_start "$A" "$T/kill.log" --delay 0.3
kill_mid_upload skb k/o-0001.tar "$SK_BIN" shard --endpoint-url "$PROXY_URL" s3://skb/in/manifest.json \
    -o s3://skb/k/o-%04d.tar --max-size 8M --part-size 5MiB
expect_ok "$SK_BIN" shard --endpoint-url "$A" s3://skb/in/manifest.json -o s3://skb/k/o-%04d.tar \
    --max-size 8M --part-size 5MiB --resume --json
assert_contains "$OUT" '"shards_resumed": 1,'
no_uploads_left skb
s3_same_dir "$T/ref" s3://skb/k/
expect_ok "$SK_BIN" verify --endpoint-url "$A" s3://skb/k/manifest.json

step "2. auth on: s3:// manifest to s3://, multipart shards, byte-identical"
moto_auth_on || die "moto: auth did not turn on"
expect_ok "$SK_BIN" shard --endpoint-url "$A" s3://skb/in/manifest.json -o s3://skb/out/o-%04d.tar \
    --max-size 8M --part-size 5MiB --json
assert_contains "$OUT" '"samples": 1400,'
s3_same_dir "$T/ref" s3://skb/out/

step "2. a brace pattern of objects to local shards; --num-shards; --shuffle --compress to S3"
last=$(printf '%04d' $((nin - 1)))
expect_ok "$SK_BIN" shard --endpoint-url "$A" "s3://skb/in/t-{0000..$last}.tar" -o "$T/loc/o-%04d.tar" --max-size 8M
for f in $(cd "$T/ref" && ls); do cmp "$T/ref/$f" "$T/loc/$f" || die "s3:// inputs to local: $f differs"; done
expect_ok "$SK_BIN" shard --endpoint-url "$A" s3://skb/in/manifest.json -o "$T/n/o-%04d.tar" --num-shards 3
for f in $(cd "$T/ref_n" && ls); do cmp "$T/ref_n/$f" "$T/n/$f" || die "--num-shards from s3:// inputs: $f differs"; done
expect_ok "$SK_BIN" shard --endpoint-url "$A" s3://skb/in/manifest.json -o s3://skb/sz/o-%04d.tar.zst \
    --shuffle --seed 7 --max-count 250 --compress zstd
s3_same_dir "$T/ref_sz" s3://skb/sz/

step "3. verify s3://: sound, then a flipped byte, a deleted shard, a wrong count"
expect_ok "$SK_BIN" verify --endpoint-url "$A" s3://skb/out/manifest.json --jpeg
assert_contains "$OUT" "sound:"
expect_ok "$SK_BIN" verify --endpoint-url "$A" "s3://skb/in/t-{0000..$last}.tar"
expect_ok "$SK_BIN" verify --endpoint-url "$A" s3://skb/sz/manifest.json
cp "$T/ref/o-0000.tar" "$T/bad.tar"
printf 'X' | dd of="$T/bad.tar" bs=1 seek=5000 conv=notrunc 2>/dev/null
aws s3 cp --quiet "$T/bad.tar" s3://skb/out/o-0000.tar
aws s3 rm --quiet s3://skb/out/o-0001.tar
expect_fail 1 "" "$SK_BIN" verify --endpoint-url "$A" s3://skb/out/manifest.json --json
assert_contains "$OUT" '"kind": "crc", "shard": "s3://skb/out/o-0000.tar"'
assert_contains "$OUT" 'CRC32C'
assert_contains "$OUT" 'shard s3://skb/out/o-0001.tar is missing'
python3 - "$T/ref_sz/manifest.json" "$T/wrong.json" <<'PY' || die "test setup failed"
import json, sys
m = json.load(open(sys.argv[1]))
m["shards"][-1]["samples"] -= 1  # the last shard: no ordinal after it moves
m["totals"]["samples"] -= 1
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
aws s3 cp --quiet "$T/wrong.json" s3://skb/sz/manifest.json
expect_fail 1 "" "$SK_BIN" verify --endpoint-url "$A" s3://skb/sz/manifest.json
assert_contains "$OUT" "150 samples, the manifest says 149"
expect_fail 2 "s3://skb/nosuch.tar" "$SK_BIN" verify --endpoint-url "$A" s3://skb/nosuch.tar
expect_fail 2 "" "$SK_BIN" verify --endpoint-url http://127.0.0.1:1 --max-attempts 1 s3://skb/out/manifest.json
expect_fail 1 "s3://skb/in/nosuch.tar" "$SK_BIN" shard --endpoint-url "$A" s3://skb/in/nosuch.tar -o "$T/x/o-%04d.tar"
echo "s3io_shard: ok"
