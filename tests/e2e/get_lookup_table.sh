#!/usr/bin/env bash
# get_lookup_table.sh - a manifest of 64 shards or more gets MANIFEST.lookup
# beside it (pack, shard, index merge): the binary table `get` reads
# instead of parsing the JSON, bound to the manifest's bytes by size and
# CRC32C.  A table that no longer matches its manifest, or is damaged, is
# ignored (the JSON decides); one that matches but lies about a shard is
# caught by the shard's index like a lying manifest; fewer shards, no table.
. "$(dirname "$0")/lib.sh"
need python3 strace
tmpdir T
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 140 --per-dir 20 >/dev/null || die mkcorpus
crc() { python3 - "$@" <<'PY'
import struct, sys
def crc32c(data, crc=0):
    crc ^= 0xffffffff
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xffffffff
# crc TABLE SHARD BYTES: rewrites shard SHARD's byte count, CRCs recomputed
t = bytearray(open(sys.argv[1], "rb").read())
i, v = int(sys.argv[2]), int(sys.argv[3])
struct.pack_into("<Q", t, 64 + 56 * i, v)
struct.pack_into("<I", t, 48, crc32c(t[64:]))
struct.pack_into("<I", t, 56, crc32c(t[:56]))
open(sys.argv[1], "wb").write(t)
PY
}

step "pack into 70 shards writes manifest.json.lookup; get reads it and one index"
expect_ok "$SK_BIN" pack c -o ds/s-%03d.tar --max-count 2
[ -f ds/manifest.json.lookup ] || die "no manifest.json.lookup beside 70 shards"
key=n00005/00000101                      # in s-050.tar
expect_ok "$SK_BIN" get ds/manifest.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get through the table: wrong bytes"
expect_ok "$SK_BIN" get ds '#139' --ext cls
cmp -s "$OUT" c/n00006/00000139.cls || die "get #139 through the table: wrong bytes"
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -qq -e trace=open,openat -o trace "$SK_BIN" get ds/manifest.json "$key" --ext cls >/dev/null
grep -q 'manifest.json.lookup"' trace || die "get did not read the table"
assert_eq "$(grep -c '\.idx"' trace)" 1 "indexes opened"

step "shard and index merge write it too; 10 shards get none"
expect_ok "$SK_BIN" shard ds/manifest.json -o rs/s-%03d.tar --max-count 2
[ -f rs/manifest.json.lookup ] || die "shard wrote no table"
mkdir -p m
expect_ok "$SK_BIN" index merge ds/manifest.json -o m/all.json
[ -f m/all.json.lookup ] || die "index merge wrote no table"
expect_ok "$SK_BIN" get m/all.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get through the merged table: wrong bytes"
expect_ok "$SK_BIN" pack c -o few/s-%03d.tar --max-count 14
[ ! -e few/manifest.json.lookup ] || die "a table beside 10 shards"

step "a table that no longer matches its manifest is ignored"
cp ds/manifest.json ds/manifest.json.orig
python3 - ds/manifest.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["shards"][50]["bytes"] += 512
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
expect_fail 1 "index disagrees with the manifest" "$SK_BIN" get ds/manifest.json "$key" --ext cls
cp ds/manifest.json.orig ds/manifest.json

step "a damaged table is ignored"
cp ds/manifest.json.lookup good.lookup
printf '\377' | dd of=ds/manifest.json.lookup bs=1 seek=200 conv=notrunc 2>/dev/null
expect_ok "$SK_BIN" get ds/manifest.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "a damaged table changed the answer"
head -c 100 good.lookup >ds/manifest.json.lookup
expect_ok "$SK_BIN" get ds/manifest.json "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "a truncated table changed the answer"

step "hostile: a matching table that lies about a shard is caught by its index"
cp good.lookup ds/manifest.json.lookup
crc ds/manifest.json.lookup 50 12345
expect_fail 1 "index disagrees with the manifest" "$SK_BIN" get ds/manifest.json "$key" --ext cls
assert_eq "$(wc -c <"$OUT")" 0 "bytes written from a lying table"
