#!/usr/bin/env bash
# bench_upload.sh - shardkit upload against the aws cli, both to the same
# local moto_server: a 1 GiB file (aws s3 cp) and a 100-shard dataset of
# 10 MB shards + .idx + manifest.json (aws s3 sync).  Reports wall seconds
# and client CPU seconds (user+sys) per GiB, medians of 3 runs, and the
# ratios shardkit/aws.  The clients take turns (round 1: each case once,
# round 2: again...), so that a load that comes and goes on a shared
# machine falls on all of them alike.  Env: SK_BIN (or BUILD), RUNS
# (default 3).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SK_BIN=${SK_BIN:-$ROOT/${BUILD:-build}/shardkit}
RUNS=${RUNS:-3}
export SK_ROOT=$ROOT
. "$ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
moto_start
AWS=$(command -v aws)   # /usr/bin/time needs a program, not a shell function
aws() { "$AWS" --endpoint-url "$MOTO_URL" "$@"; }
aws s3 mb s3://bench >/dev/null

head -c $((1 << 30)) /dev/urandom >"$t/big.bin"
mkdir "$t/ds"
for i in $(seq -w 0 99); do
    head -c 10000000 /dev/urandom >"$t/ds/train-0000$i.tar"
    head -c 4096 /dev/urandom >"$t/ds/train-0000$i.tar.idx"
done
echo '{"format":1}' >"$t/ds/manifest.json"
ds_bytes=$(du -sb "$t/ds" | cut -f1)

# prints "wall cpu" for one command
measure() {
    /usr/bin/time -f '%e %U %S' -o "$t/time" "$@" >/dev/null 2>"$t/err" || { cat "$t/err" >&2; exit 1; }
    awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$t/time"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

once() { # name cmd...: one timed run into an empty bucket, appended to $t/runs
    local name=$1 w c
    shift
    aws s3 rm --recursive s3://bench/ >/dev/null 2>&1 || true
    read -r w c < <(measure "$@")
    echo "$name|$w|$c" >>"$t/runs"
}

report() { # name bytes: medians of the runs of name
    local name=$1 bytes=$2 w c gib
    w=$(awk -F'|' -v n="$name" '$1 == n {print $2}' "$t/runs" | median)
    c=$(awk -F'|' -v n="$name" '$1 == n {print $3}' "$t/runs" | median)
    gib=$(awk -v b="$bytes" 'BEGIN {print b / 1073741824}')
    awk -v n="$name" -v w="$w" -v c="$c" -v g="$gib" \
        'BEGIN {printf "%-28s wall %7.2fs  cpu %7.2fs  wall/GiB %6.2fs  cpu/GiB %6.2fs\n", n, w, c, w/g, c/g}'
    echo "$name $w $c $gib" >>"$t/results"
}

for r in $(seq "$RUNS"); do
    once "1GiB shardkit upload" "$SK_BIN" upload --endpoint-url "$MOTO_URL" "$t/big.bin" s3://bench/big.bin
    once "1GiB aws s3 cp" "$AWS" --endpoint-url "$MOTO_URL" s3 cp "$t/big.bin" s3://bench/big.bin
    once "dataset shardkit upload" "$SK_BIN" upload --endpoint-url "$MOTO_URL" "$t/ds" s3://bench/ds/
    once "dataset aws s3 sync" "$AWS" --endpoint-url "$MOTO_URL" s3 sync "$t/ds" s3://bench/ds/
done
report "1GiB shardkit upload" $((1 << 30))
report "1GiB aws s3 cp" $((1 << 30))
report "dataset shardkit upload" "$ds_bytes"
report "dataset aws s3 sync" "$ds_bytes"
awk '{w[$1" "$2]=$(NF-2); c[$1" "$2]=$(NF-1)}
     END {
       printf "ratios shardkit/aws, 1 GiB file: wall %.2f, cpu %.2f\n", w["1GiB shardkit"]/w["1GiB aws"], c["1GiB shardkit"]/c["1GiB aws"];
       printf "ratios shardkit/aws, dataset:    wall %.2f, cpu %.2f\n", w["dataset shardkit"]/w["dataset aws"], c["dataset shardkit"]/c["dataset aws"];
     }' "$t/results"
