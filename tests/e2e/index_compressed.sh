#!/usr/bin/env bash
# index_compressed.sh - .tar.gz and .tar.zst shards are indexed by
# streaming; a .tar.zst in the zstd seekable format (frames cut every 3000
# bytes, so samples straddle frames) gets per-sample compressed frame
# ranges, and every lookup returns the member's exact bytes.  Brace
# patterns name the shards.
set -eu
: "${SK_BIN:?}" "${SK_TOOLS:?}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
mkdir src && cd src
for i in $(seq -w 0 29); do head -c $((RANDOM % 9000 + 1000)) /dev/urandom > s$i.bin; echo "c$i" > s$i.txt; done
ls | sort > ../list
tar --format=posix -cf ../plain-000.tar -T ../list
cd ..
gzip -c plain-000.tar > shard-000.tar.gz
zstd -q -c plain-000.tar > shard-001.tar.zst
"$SK_TOOLS/zstd_seekable" 3000 plain-000.tar shard-002.tar.zst
"$SK_TOOLS/zstd_seekable" 5000 plain-000.tar shard-003.tar.zst --checksums
"$SK_BIN" index -q 'shard-{000..003}.tar.{gz,zst}' 2>/dev/null || true   # gz/zst mix: some names do not exist
"$SK_BIN" index -q shard-000.tar.gz 'shard-{001..003}.tar.zst'
python3 - <<'PY'
import json
m = json.load(open("manifest.json"))
assert [s["url"] for s in m["shards"]] == ["shard-000.tar.gz", "shard-001.tar.zst", "shard-002.tar.zst", "shard-003.tar.zst"], m
assert [s["first_ordinal"] for s in m["shards"]] == [0, 30, 60, 90], m
assert m["totals"]["samples"] == 120
PY
# without a seek table: stream from the start; with one: frame ranges
"$SK_TOOLS/idxdump" shard-001.tar.zst.idx | grep -q "flags=1 "
size1=$(stat -c %s shard-001.tar.zst)
"$SK_TOOLS/idxdump" shard-001.tar.zst.idx | grep "^sample 5 " | grep -q "stored_offset=0 stored_span=$size1"
size2=$(stat -c %s shard-002.tar.zst)
"$SK_TOOLS/idxdump" shard-002.tar.zst.idx | grep "^sample" | awk -v s="$size2" '
    { for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] } }
    f["stored_span"] >= s { bad = 1 } f["stored_offset"] > 0 { later = 1 }
    END { exit (bad || !later) }' || { echo "seekable frames not used"; exit 1; }
"$SK_TOOLS/idxdump" shard-000.tar.gz.idx | grep -q "flags=2 "
for shard in shard-000.tar.gz shard-001.tar.zst shard-002.tar.zst shard-003.tar.zst; do
    for i in 00 07 13 29; do
        "$SK_BIN" get "$shard" "s$i" --ext bin | cmp - "src/s$i.bin"
        "$SK_BIN" get "$shard" "s$i" --ext txt | cmp - "src/s$i.txt"
    done
done
"$SK_BIN" get manifest.json '#119' -e bin | cmp - src/s29.bin
"$SK_BIN" get manifest.json '#61' -o d && cmp d/s01.bin src/s01.bin && cmp d/s01.txt src/s01.txt
# a damaged zstd frame is an error, not garbage (offset 700 lies in s00.bin,
# whose 1000+ bytes follow the first tar header in the first frame)
cp shard-002.tar.zst bad.tar.zst && cp shard-002.tar.zst.idx bad.tar.zst.idx
printf '\xff\xff\xff\xff' | dd of=bad.tar.zst bs=1 seek=700 conv=notrunc 2>/dev/null
if "$SK_BIN" get bad.tar.zst s00 --ext bin > /dev/null 2>err; then echo "damage not seen"; exit 1; fi
grep -Eq "zstd|CRC32C" err
"$SK_BIN" get bad.tar.zst s29 --ext bin | cmp - src/s29.bin   # frames before it are never read
# a truncated .tar.gz names where it ends
head -c 20000 shard-000.tar.gz > cut.tar.gz
if "$SK_BIN" index --no-manifest cut.tar.gz 2>err; then echo "truncation not seen"; exit 1; fi
grep -Eq "truncated|unexpected end|Truncated" err || { cat err; exit 1; }
echo "compressed ok"
