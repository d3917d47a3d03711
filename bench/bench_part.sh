#!/usr/bin/env bash
# bench_part.sh - `make bench` figures for `pack --part I/N` (scale-out):
#   1. balance: the 100,000-sample corpus packed as 4 parts, one after the
#      other; per part its samples and shard bytes, and max/mean of each
#      (the issue asks for bytes balanced within a few percent);
#   2. parallel speed-up: the whole corpus as 1 part against 2 parts run at
#      the same time (two processes, as two array tasks sharing one machine
#      would), each with pack's default --jobs (the number of cores); wall
#      time medians of BENCH_RUNS runs, warm page cache (docs/benchmarks.md).
# Checks that the parts together hold every sample.  Prints Markdown tables.
#
# Environment: BENCH_SAMPLES (100000), BENCH_RUNS (3), BENCH_DIR, BENCH_PARTS
# (4, for the balance table), plus SK_BIN/SK_TOOLS from bench/run.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

samples=${BENCH_SAMPLES:-100000}
nparts=${BENCH_PARTS:-4}
corpus=$BENCH_DIR/corpus-$samples
make_corpus "$corpus" "$samples"
corpus_stats "$corpus"
warm_cache "$corpus"

# 1. balance
out=$BENCH_DIR/out/part-balance
rm -rf "$out"
for ((i = 0; i < nparts; i++)); do
    "$SK_BIN" pack "$corpus" -q -o "$out/train-{part}-%06d.tar" --max-size 512M --part "$i/$nparts" ||
        bench_die "pack --part $i/$nparts failed"
done
echo "### balance: $samples samples in $nparts parts"
echo
python3 - "$out" "$nparts" "$samples" <<'PY'
import json, sys
d, n, want = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ms = [json.load(open(f"{d}/manifest-{i}.json")) for i in range(n)]
s = [m["totals"]["samples"] for m in ms]
b = [m["totals"]["bytes"] for m in ms]
assert sum(s) == want, f"parts hold {sum(s)} samples, corpus {want}"
print("| part | samples | shard bytes |")
print("| ---: | ---: | ---: |")
for i in range(n):
    print(f"| {i} | {s[i]:,} | {b[i]:,} |")
print(f"| **max/mean** | **{max(s) / (sum(s) / n):.4f}** | **{max(b) / (sum(b) / n):.4f}** |")
print(f"| min/mean | {min(s) / (sum(s) / n):.4f} | {min(b) / (sum(b) / n):.4f} |")
PY
rm -rf "$out"

# 2. one part against two in parallel
measure "part-1of1" "$SK_BIN" pack "$corpus" -q -o "@OUT@/train-{part}-%06d.tar" --max-size 512M --part 0/1 ||
    bench_die "1 part failed"
w1=$M_WALL c1=$M_CPU walls1=$M_WALLS
rm -rf "$M_OUT"
two='"$0" pack "$1" -q -o "$2/train-{part}-%06d.tar" --max-size 512M --part 0/2 & a=$!
     "$0" pack "$1" -q -o "$2/train-{part}-%06d.tar" --max-size 512M --part 1/2 & b=$!
     wait $a && wait $b'
measure "part-2x2" bash -c "$two" "$SK_BIN" "$corpus" "@OUT@" || bench_die "2 parts failed"
w2=$M_WALL c2=$M_CPU walls2=$M_WALLS
n2=$(python3 -c 'import json, sys
print(sum(json.load(open(f))["totals"]["samples"] for f in sys.argv[1:]))' "$M_OUT"/manifest-*.json)
[ "$n2" = "$samples" ] || bench_die "2 parts hold $n2 samples, corpus $samples"
rm -rf "$M_OUT"
echo "walls: 1 part: $walls1; 2 parts: $walls2" >&2
echo
echo "### $samples samples ($C_FILES files, $((C_BYTES / 1000000)) MB): 1 part against 2 in parallel, $(nproc) cores"
echo
echo "| run | wall s | CPU s | speed-up |"
echo "| --- | ---: | ---: | ---: |"
echo "| 1 part (\`--part 0/1\`, --jobs $(nproc)) | $w1 | $c1 | 1.00 |"
echo "| 2 parts at once (\`--part 0/2\` & \`--part 1/2\`, --jobs $(nproc) each) | $w2 | $c2 | $(fmt_ratio "$w1" "$w2") |"
echo
echo "$(date +%F), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo), $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
