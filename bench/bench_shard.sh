#!/usr/bin/env bash
# bench_shard.sh - `make bench` figures for `shardkit shard` and
# `shardkit verify` on one corpus packed into 64 MB shards (BENCH_SAMPLES,
# default 10000 samples, about 250 MB):
#   - reshard MB/s against a Python tarfile re-writer (bench/tarfile_reshard.py)
#     and against `cp` of the same bytes (the limit);
#   - --shuffle reshard against plain reshard (target: at most 2.5x the time);
#   - verify (headers; --deep) MB/s against `tar tf` of every shard;
#   - verify --jpeg -j 1 against djpeg on the same images, per core
#     (djpeg runs once per image, so its figure includes a process start);
#   - zstd per-sample frames (shard --compress zstd) against a single-frame
#     `zstd -3 -T1` of the same tars: ratio and speed.
# Prints Markdown tables; medians of BENCH_RUNS (3; Python and djpeg: 1).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
samples=${BENCH_SAMPLES:-10000}
corpus=$BENCH_DIR/corpus-$samples
make_corpus "$corpus" "$samples"
in=$BENCH_DIR/shard-in-$samples
if [ ! -f "$in/manifest.json" ]; then
    rm -rf "$in"
    "$SK_BIN" pack "$corpus" -o "$in/s-%06d.tar" --max-size 64M -q
fi
shards=("$in"/s-*.tar)
bytes=$(cat "${shards[@]}" | wc -c)
mb=$(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1e6}')
warm_cache "$in"
mkdir -p "$BENCH_DIR/tmp"
echo "input: ${#shards[@]} shards, $mb MB, $samples samples ($(nproc) cores)"
echo
row() { printf '| %s | %.2f s | %s MB/s | %.2f s | %.0f MiB |\n' "$1" "$M_WALL" "$(fmt_rate "$bytes" "$M_WALL" 1e6)" "$M_CPU" "$M_RSS"; }
echo "| reshard (64M shards) | wall | MB/s | CPU | peak RSS |"
echo "| --- | --- | --- | --- | --- |"
measure shard-cp cp "${shards[@]}" @OUT@/; row "cp of the same bytes (limit)"; cp_wall=$M_WALL
measure shard-plain "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar --max-size 64M -q
row "shardkit shard"; plain_wall=$M_WALL
measure shard-shuffle "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar --max-size 64M -q \
    --shuffle --seed 1 --tmp-dir "$BENCH_DIR/tmp"
row "shardkit shard --shuffle"; shuffle_wall=$M_WALL
measure shard-zstd "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar.zst --max-size 64M -q --compress zstd:3
row "shardkit shard --compress zstd:3"; zstd_wall=$M_WALL
zbytes=$(cat "$M_OUT"/*.tar.zst | wc -c)
BENCH_RUNS=1 measure shard-python python3 "$SK_ROOT/bench/tarfile_reshard.py" "${shards[@]}" -o @OUT@/s-%06d.tar --max-size 67108864
row "Python tarfile re-writer (1 run)"; py_wall=$M_WALL
echo
echo "shuffle / plain: $(fmt_ratio "$shuffle_wall" "$plain_wall")x (target <= 2.5x); plain vs Python: $(fmt_ratio "$py_wall" "$plain_wall")x faster; plain / cp: $(fmt_ratio "$plain_wall" "$cp_wall")x"
echo
echo "| verify | wall | MB/s | CPU | peak RSS |"
echo "| --- | --- | --- | --- | --- |"
measure shard-tartf bash -c 'for f in "$@"; do tar tf "$f" >/dev/null; done' _ "${shards[@]}"; row "tar tf, every shard"; tar_wall=$M_WALL
measure shard-verify "$SK_BIN" verify -q "$in/manifest.json"; row "shardkit verify (headers, index, manifest)"; v_wall=$M_WALL
measure shard-deep "$SK_BIN" verify -q --deep "$in/manifest.json"; row "shardkit verify --deep (all CRC32C)"
echo
echo "verify vs tar tf: $(fmt_ratio "$tar_wall" "$v_wall")x faster"
echo
# JPEG decoding per core: the same images through verify --jpeg -j 1 and djpeg
nj=$(find "$corpus" -name '*.jpg' | wc -l)
measure shard-jpeg1 "$SK_BIN" verify -q --jpeg -j 1 "$in/manifest.json"; j1=$M_WALL
measure shard-jpegN "$SK_BIN" verify -q --jpeg "$in/manifest.json"; jn=$M_WALL
find "$corpus" -name '*.jpg' | awk 'NR <= 2000' > "$BENCH_DIR/jpegs.txt"
BENCH_RUNS=1 measure shard-djpeg bash -c 'while read -r f; do djpeg -outfile /dev/null "$f"; done < "$1"' _ "$BENCH_DIR/jpegs.txt"; dj=$M_WALL
echo "| JPEG decode | images | wall | images/s |"
echo "| --- | --- | --- | --- |"
echo "| shardkit verify --jpeg -j 1 (whole verify) | $nj | $j1 s | $(fmt_rate "$nj" "$j1") |"
echo "| shardkit verify --jpeg (all cores) | $nj | $jn s | $(fmt_rate "$nj" "$jn") |"
echo "| djpeg, one process per image, 1 core | 2000 | $dj s | $(fmt_rate 2000 "$dj") |"
echo
# zstd: per-sample frames vs one frame per tar
z1=0
for f in "${shards[@]}"; do z1=$((z1 + $(zstd -q -3 -T1 -c "$f" | wc -c))); done
measure shard-zstdsingle bash -c 'for f in "$@"; do zstd -q -3 -T1 -c "$f" > /dev/null; done' _ "${shards[@]}"; zs=$M_WALL
echo "| zstd level 3 | output MB | ratio | wall | input MB/s |"
echo "| --- | --- | --- | --- | --- |"
echo "| shardkit shard --compress zstd:3 (frame per sample / 64 KiB run, seek table) | $(awk -v b="$zbytes" 'BEGIN{printf "%.1f", b/1e6}') | $(fmt_ratio "$bytes" "$zbytes") | $zstd_wall s | $(fmt_rate "$bytes" "$zstd_wall" 1e6) |"
echo "| zstd -3 -T1, one frame per tar | $(awk -v b="$z1" 'BEGIN{printf "%.1f", b/1e6}') | $(fmt_ratio "$bytes" "$z1") | $zs s | $(fmt_rate "$bytes" "$zs" 1e6) |"
rm -rf "$BENCH_DIR"/out/shard-*
