#!/usr/bin/env bash
# bench_index.sh - `shardkit index` against `tar tf` and a Python tarfile
# scan (what wids and ratarmount do) on a benchmark shard set made by GNU
# tar; lookup latency p50/p99 over random keys on a warm cache; index open
# time for a small and a large index.  Standalone or run by bench/run
# (env SK_BIN, BUILD, SK_ROOT).  Cache: ${BENCH_DIR:-/tmp/shardkit-bench}.
# Wall and CPU (user+sys, GNU time) medians.  SK_OLD_BIN=path adds another
# shardkit's --fast to the interleaved rounds (an A/B of two builds).
# Cold rows: each timed run starts with the shards evicted from the page
# cache (tests/tools/dropcache: posix_fadvise DONTNEED, this set's pages
# only, untimed); COLD=0 leaves them out.  Two more cold rows bound what
# any reader can do on this disk: every byte read, all shards at once
# (parallel cat: the disk's best streaming rate), and the header runs
# alone with every offset known in advance (tests/tools/hdrreads, which
# no walk knows: the floor of a header-only read).
#   SAMPLES=100000 SHARDS=8 LOOKUPS=100000 BENCH_RUNS=5 bench/bench_index.sh
set -eu
SK_ROOT=${SK_ROOT:-$(cd "$(dirname "$0")/.." && pwd)}
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$SK_ROOT/$BUILD ;; esac
SK_BIN=${SK_BIN:-$BUILD/shardkit}
TOOLS=$BUILD/tools
SAMPLES=${SAMPLES:-300000} SHARDS=${SHARDS:-8} LOOKUPS=${LOOKUPS:-100000}
B=${BENCH_DIR:-/tmp/shardkit-bench}/index-$SAMPLES-$SHARDS
MC=$SK_ROOT/../shared/bench/make-corpus
mkdir -p "$B"
if [ ! -f "$B/corpus.done" ]; then
    [ -x "$MC" ] || { echo "make-corpus not found at $MC"; exit 77; }
    rm -rf "$B/corpus"
    "$MC" "$B/corpus" --samples "$SAMPLES" >/dev/null
    touch "$B/corpus.done"
fi
if [ ! -f "$B/shards.done" ]; then
    (cd "$B/corpus" && find . -type f | sed 's|^\./||' | LC_ALL=C sort > "$B/files")
    per=$(( ($(wc -l < "$B/files") + SHARDS - 1) / SHARDS / 3 * 3 ))
    rm -f "$B"/shard-*; split -d -a 6 -l "$per" "$B/files" "$B/list-"
    i=0
    for l in "$B"/list-*; do
        tar --format=gnu -cf "$(printf '%s/shard-%06d.tar' "$B" $i)" -C "$B/corpus" -T "$l"
        i=$((i + 1))
    done
    rm -f "$B"/list-*
    touch "$B/shards.done"
fi
cd "$B"
last=$(printf 'shard-%06d.tar' $((SHARDS - 1)))
pattern="shard-{000000..$(printf '%06d' $((SHARDS - 1)))}.tar"
bytes=$(cat shard-*.tar | wc -c)
members=$(wc -l < files)
cat shard-*.tar > /dev/null   # warm cache: every figure below is CPU + page cache
# t CMD...: prints "wall cpu" in seconds (GNU time; cpu = user + sys)
GNU_TIME=${GNU_TIME:-/usr/bin/time}
TT=$(mktemp); trap 'rm -f "$TT"' EXIT
t() {
    "$GNU_TIME" -o "$TT" -f '%e %U %S' "$@" >/dev/null || return 1
    awk 'END {printf "%s %.2f\n", $1, $2 + $3}' "$TT"
}
wall() { local v; for v in "$@"; do echo "${v% *}"; done; }
cpu() { local v; for v in "$@"; do echo "${v#* }"; done; }
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
PYSCAN='
import glob, tarfile
n = 0
for f in sorted(glob.glob("shard-*.tar")):
    with tarfile.open(f) as tf:
        for m in tf:
            n += m.isreg() and m.offset_data >= 0
print(n)'
# BENCH_RUNS rounds, the tools interleaved within each round so that load
# from other jobs on the machine hits them alike; medians reported.
RUNS=${BENCH_RUNS:-3}
OLD=${SK_OLD_BIN:-}
fast=() fast1=() old=() full=() tartf=() py=()
cfast=() cold_old=() cfull=() ctartf=() ccat=() chdr=()
COLD=${COLD:-1} DROP=$TOOLS/dropcache
[ "$COLD" = 0 ] || [ -x "$DROP" ] || { echo "cold rows need $DROP (make)"; COLD=0; }
drop() { "$DROP" shard-*.tar; }
# Fresh output, as bench/lib.sh does it: the last run's indexes and manifest
# deleted and synced, untimed (replacing a file on ext4 starts a flush of
# its replacement).
fresh() { rm -f shard-*.tar.idx manifest.json; sync; }
for ((r = 0; r < RUNS; r++)); do
    fresh; fast+=("$(t "$SK_BIN" index --fast -q "$pattern")")
    [ -z "$OLD" ] || { fresh; old+=("$(t "$OLD" index --fast -q "$pattern")"); }
    fresh; fast1+=("$(t "$SK_BIN" index --fast -q -j 1 "$pattern")")
    fresh; full+=("$(t "$SK_BIN" index -q "$pattern")")
    sync; tartf+=("$(t sh -c 'for f in shard-*.tar; do tar tf "$f"; done')")
    py+=("$(t python3 -c "$PYSCAN")")
    [ "$COLD" = 0 ] && continue
    fresh; drop; cfast+=("$(t "$SK_BIN" index --fast -q "$pattern")")
    [ -z "$OLD" ] || { fresh; drop; cold_old+=("$(t "$OLD" index --fast -q "$pattern")"); }
    fresh; drop; cfull+=("$(t "$SK_BIN" index -q "$pattern")")
    drop; ctartf+=("$(t sh -c 'for f in shard-*.tar; do tar tf "$f"; done')")
    drop; ccat+=("$(t sh -c 'for f in shard-*.tar; do cat "$f" & done; wait')")
    fresh; "$SK_BIN" index --fast -q "$pattern"   # the runs for hdrreads
    drop; chdr+=("$(t "$TOOLS/hdrreads" shard-*.tar)")
    cat shard-*.tar > /dev/null  # warm again for the next round
done
fast=$(median $(wall "${fast[@]}")) fast1=$(median $(wall "${fast1[@]}")) full=$(median $(wall "${full[@]}"))
tartf=$(median $(wall "${tartf[@]}")) pyscan=$(median $(wall "${py[@]}"))
echo "medians of $RUNS interleaved runs, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg)"
row() { printf '%-52s %8.2f s wall %6.2f s CPU\n' "$1" "$(median $(wall "${@:2}"))" "$(median $(cpu "${@:2}"))"; }
row "shardkit index --fast (headers only, -j cores)" "${fast[@]}"
[ -z "$OLD" ] || row "$OLD index --fast" "${old[@]}"
row "shardkit index --fast -j 1 (one thread)" "${fast1[@]}"
row "shardkit index (reads data: member + shard CRC32C)" "${full[@]}"
row "tar tf (GNU tar 1.34)" "${tartf[@]}"
row "Python tarfile scan" "${py[@]}"
if [ "$COLD" != 0 ]; then
    row "cold: shardkit index --fast" "${cfast[@]}"
    [ -z "$OLD" ] || row "cold: $OLD index --fast" "${cold_old[@]}"
    row "cold: shardkit index (reads data)" "${cfull[@]}"
    row "cold: tar tf" "${ctartf[@]}"
    row "cold: cat, all shards at once (every byte)" "${ccat[@]}"
    row "cold: header runs only, offsets known (hdrreads)" "${chdr[@]}"
fi
[ -z "$OLD" ] || echo "speedup of --fast over $OLD: $(echo "scale=2; $(median $(wall "${old[@]}")) / $fast" | bc)x"
echo "speedup of --fast: $(echo "scale=1; $tartf / $fast" | bc)x over tar tf, $(echo "scale=1; $pyscan / $fast" | bc)x over Python"
echo "speedup of --fast -j 1: $(echo "scale=1; $tartf / $fast1" | bc)x over tar tf, $(echo "scale=1; $pyscan / $fast1" | bc)x over Python"
echo "speedup of default: $(echo "scale=1; $tartf / $full" | bc)x over tar tf, $(echo "scale=1; $pyscan / $full" | bc)x over Python"
# the issue's two rows: --fast against tar tf, page cache warm and cold
echo "index --fast / tar tf, warm: $(echo "scale=2; $tartf / $fast" | bc)x"
if [ "$COLD" != 0 ]; then
    cf=$(median $(wall "${cfast[@]}")) ct=$(median $(wall "${ctartf[@]}")) cu=$(median $(wall "${cfull[@]}"))
    echo "index --fast / tar tf, cold: $(echo "scale=2; $ct / $cf" | bc)x (full index cold: $(echo "scale=2; $ct / $cu" | bc)x)"
    [ -z "$OLD" ] || echo "cold speedup of --fast over $OLD: $(echo "scale=2; $(median $(wall "${cold_old[@]}")) / $cf" | bc)x"
    # the best any reader could do here, as a ratio to tar tf
    echo "cold bounds over tar tf: every byte at the disk's best $(echo "scale=2; $ct / $(median $(wall "${ccat[@]}"))" | bc)x, header runs only with known offsets $(echo "scale=2; $ct / $(median $(wall "${chdr[@]}"))" | bc)x"
fi
# a small index for the O(1) open figure
mkdir -p small && (cd small && [ -f s.tar ] || { printf a > a.txt; tar -cf s.tar a.txt; }) && "$SK_BIN" index -q --no-manifest small/s.tar
"$TOOLS/bench_lookup" manifest.json "$LOOKUPS" small/s.tar.idx "$last.idx"
