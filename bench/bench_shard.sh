#!/usr/bin/env bash
# bench_shard.sh - `make bench` figures for `shardkit shard` and
# `shardkit verify` on one corpus packed into 64 MB shards (BENCH_SAMPLES,
# default 10000 samples, about 250 MB):
#   - reshard MB/s against a Python tarfile re-writer (bench/tarfile_reshard.py)
#     and against `cp` of the same bytes (the limit; target: at most 1.5x
#     the wall time), cp, plain and --shuffle run in turn (interleave),
#     wall ratios round by round;
#   - --shuffle reshard against plain reshard (target: at most 2.5x the
#     time), with its peak RSS;
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
# cp, plain shard and shard --shuffle run in turn, one run each per round
# (interleave in lib.sh), so the machine's drift (other jobs, writeback)
# hits the three alike; the wall ratios are taken round by round and their
# medians printed.  At least 9 rounds (BENCH_RUNS, if more).
run_case() {
    case $1 in
    cp) measure shard-cp cp "${shards[@]}" @OUT@/ ;;
    plain) measure shard-plain "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar --max-size 64M -q ;;
    shuffle) measure shard-shuffle "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar --max-size 64M -q \
        --shuffle --seed 1 --tmp-dir "$BENCH_DIR/tmp" ;;
    esac
}
# round_ratios A B: the median of A's wall / B's wall, round by round, and the rounds
round_ratios() {
    local -a a b r=()
    read -ra a <<<"${I_WALLS[$1]}"
    read -ra b <<<"${I_WALLS[$2]}"
    for ((k = 0; k < ${#a[@]}; k++)); do r+=("$(fmt_ratio "${a[k]}" "${b[k]}")"); done
    echo "$(median "${r[@]}")x (rounds: ${r[*]})"
}
rounds=$((BENCH_RUNS > 9 ? BENCH_RUNS : 9))
interleave "$rounds" cp plain shuffle || exit 1
echo "| reshard (64M shards), $rounds rounds in turn, medians | wall | MB/s | CPU | peak RSS |"
echo "| --- | --- | --- | --- | --- |"
M_WALL=${I_WALL[cp]} M_CPU=${I_CPU[cp]} M_RSS=${I_RSS[cp]}; row "cp of the same bytes (limit)"
M_WALL=${I_WALL[plain]} M_CPU=${I_CPU[plain]} M_RSS=${I_RSS[plain]}; row "shardkit shard"; plain_wall=$M_WALL
M_WALL=${I_WALL[shuffle]} M_CPU=${I_CPU[shuffle]} M_RSS=${I_RSS[shuffle]}; row "shardkit shard --shuffle"
measure shard-zstd "$SK_BIN" shard "$in/manifest.json" -o @OUT@/s-%06d.tar.zst --max-size 64M -q --compress zstd:3
row "shardkit shard --compress zstd:3"; zstd_wall=$M_WALL
zbytes=$(cat "$M_OUT"/*.tar.zst | wc -c)
BENCH_RUNS=1 measure shard-python python3 "$SK_ROOT/bench/tarfile_reshard.py" "${shards[@]}" -o @OUT@/s-%06d.tar --max-size 67108864
row "Python tarfile re-writer (1 run)"; py_wall=$M_WALL
echo
echo "plain / cp, round by round: wall $(round_ratios plain cp), target <= 1.5x; CPU $(fmt_ratio "${I_CPU[plain]}" "${I_CPU[cp]}")x (medians)"
echo "shuffle / plain, round by round: wall $(round_ratios shuffle plain), target <= 2.5x; CPU $(fmt_ratio "${I_CPU[shuffle]}" "${I_CPU[plain]}")x; shuffle peak RSS ${I_RSS[shuffle]} MiB"
echo "plain vs Python: $(fmt_ratio "$py_wall" "$plain_wall")x faster"
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
