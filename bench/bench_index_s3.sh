#!/usr/bin/env bash
# bench_index_s3.sh - index shards where they live in S3 (one local
# moto_server, auth off): `shardkit index s3://bench/ds/` (one streaming GET
# a shard, -j one per core, .idx objects and manifest put back; and --fast,
# the header walk by ranged GETs) against the
# route without it: `aws s3 cp --recursive` of the shards to local disk,
# then `shardkit index` of the copies.  Wall, CPU and peak RSS (bench/lib.sh
# measure; BENCH_RUNS runs, median).
# Env: BENCH_INDEX_S3_SAMPLES (default 10000 samples, 8 shards).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export SK_ROOT=$ROOT
. "$ROOT/bench/lib.sh"
. "$ROOT/tests/helpers/moto.sh"
skip_unless_moto
SAMPLES=${BENCH_INDEX_S3_SAMPLES:-10000}
trap 'moto_stop' EXIT
moto_start
AWS=$(command -v aws)
"$AWS" --endpoint-url "$MOTO_URL" s3 mb s3://bench >/dev/null

C=$BENCH_DIR/corpus-$SAMPLES
make_corpus "$C" "$SAMPLES"
DS=$BENCH_DIR/index-s3-shards
rm -rf "$DS"
"$SK_BIN" pack -q "$C" -o "$DS/train-%06d.tar" --max-count $(( (SAMPLES + 7) / 8 ))
rm -f "$DS"/*.idx "$DS"/manifest.json
echo "index_s3: uploading $(ls "$DS" | wc -l) shards, $(du -sh "$DS" | cut -f1) (untimed) ..." >&2
"$AWS" --endpoint-url "$MOTO_URL" s3 cp --quiet --recursive "$DS" s3://bench/ds/

in_place=$BENCH_DIR/sk_index_s3.sh
printf '#!/bin/sh\nexec %q index -q --endpoint-url %q s3://bench/ds/\n' "$SK_BIN" "$MOTO_URL" >"$in_place"
in_place_fast=$BENCH_DIR/sk_index_s3_fast.sh
printf '#!/bin/sh\nexec %q index -q --fast --endpoint-url %q s3://bench/ds/\n' "$SK_BIN" "$MOTO_URL" >"$in_place_fast"
copy_first=$BENCH_DIR/copy_then_index.sh
{
    echo '#!/bin/sh'
    echo '# the route without it: download the shards, index the copies ($1: fresh directory)'
    echo 'set -e'
    printf "%q --endpoint-url %q s3 cp --quiet --recursive s3://bench/ds/ \"\$1/\" --exclude '*.idx' --exclude manifest.json\n" "$AWS" "$MOTO_URL"
    printf '%q index -q "$1"/*.tar\n' "$SK_BIN"
} >"$copy_first"
chmod +x "$in_place" "$in_place_fast" "$copy_first"

report() { printf '%-40s wall %6.2fs  CPU %6.2fs  peak RSS %7.1f MiB\n' "$1" "$M_WALL" "$M_CPU" "$M_RSS"; }
measure "shardkit index s3://bench/ds/" "$in_place"
sk_wall=$M_WALL
report "shardkit index s3://bench/ds/"
measure "shardkit index --fast s3://bench/ds/" "$in_place_fast"
report "shardkit index --fast s3://bench/ds/"
measure "aws s3 cp, then shardkit index" "$copy_first" @OUT@
report "aws s3 cp, then shardkit index"
echo "speedup, copy first / in place: $(fmt_ratio "$M_WALL" "$sk_wall")x"
