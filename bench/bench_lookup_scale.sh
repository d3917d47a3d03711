#!/usr/bin/env bash
# bench_lookup_scale.sh - what one lookup costs as the shard count grows,
# and what a process costs to start (issue "speed at scale": lookup O(1) in
# the number of shards; start-up).  The same BENCH_SAMPLES samples (default
# 100000, the benchmark corpus) packed into 10 and into 1000 shards, then:
#   - `shardkit --version` and `shardkit get` of one sample against
#     `tar --version` (start-up: a script that calls get per sample);
#   - `shardkit get KEY` and `get '#N'` in the 1000-shard dataset against
#     the 10-shard one (one process per lookup: includes reading the
#     manifest, whose size grows with the shards);
#   - the library's own per-lookup cost (build/tools/bench_lookup: one
#     process, LOOKUPS random keys found and read, p50), 1000 vs 10 shards.
# Each process figure is the time of LOOP (default 200) calls in a row,
# divided by LOOP; BENCH_RUNS (default 5) rounds with the commands
# interleaved within each round; medians.  Ratios are A/B of the medians.
# Env: SK_BIN (or BUILD), BENCH_SAMPLES, BENCH_RUNS, LOOP, LOOKUPS, BENCH_DIR.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/bench/lib.sh"
N=${BENCH_SAMPLES:-100000}
LOOP=${LOOP:-200}
LOOKUPS=${LOOKUPS:-20000}
RUNS=${BENCH_RUNS:-5}
C=$BENCH_DIR/corpus-$N
D=$BENCH_DIR/lookup-scale-$N-$(printf %s "$SK_BIN" | cksum | cut -d" " -f1) # per binary: its own packs
make_corpus "$C" "$N"
for s in 10 1000; do
    if [ ! -f "$D/s$s.done" ]; then
        rm -rf "$D/s$s"
        "$SK_BIN" pack "$C" -o "$D/s$s/s-%06d.tar" --max-count $(((N + s - 1) / s)) >/dev/null 2>&1 ||
            bench_die "pack into $s shards failed"
        touch "$D/s$s.done"
    fi
    cat "$D/s$s"/* >/dev/null # warm cache
done
cd "$D"
# a key and an ordinal near the end: the worst case of a shard-by-shard search
ord=$((N - N / 200))
key=$("$SK_BIN" get s10/manifest.json "#$ord" --tar | tar tf - | sed -n 1p | sed 's/\.[^/]*$//')
ext=$("$SK_BIN" get s10/manifest.json "#$ord" --tar | tar tf - | sed -n 1p | sed 's/^[^.]*\.//')

# per_call CMD...: "wall_ms cpu_ms" of one call, from LOOP calls in a row
TF=$(mktemp)
trap 'rm -f "$TF"' EXIT
per_call() {
    "$GNU_TIME" -f '%e %U %S' -o "$TF" sh -c 'n=$1; shift; i=0; while [ $i -lt $n ]; do "$@" >/dev/null || exit 1; i=$((i + 1)); done' sh "$LOOP" "$@" ||
        bench_die "failed: $*"
    awk -v n="$LOOP" 'END {printf "%.3f %.3f\n", $1 * 1000 / n, ($2 + $3) * 1000 / n}' "$TF"
}
names=(version tar get10 get1000 ord10 ord1000)
declare -A W=() U=()
for ((r = 0; r < RUNS; r++)); do
    for n in "${names[@]}"; do
        case $n in
        version) v=$(per_call "$SK_BIN" --version) ;;
        tar) v=$(per_call tar --version) ;;
        get10) v=$(per_call "$SK_BIN" get s10/manifest.json "$key" --ext "$ext") ;;
        get1000) v=$(per_call "$SK_BIN" get s1000/manifest.json "$key" --ext "$ext") ;;
        ord10) v=$(per_call "$SK_BIN" get s10/manifest.json "#$ord" --ext "$ext") ;;
        ord1000) v=$(per_call "$SK_BIN" get s1000/manifest.json "#$ord" --ext "$ext") ;;
        esac
        W[$n]+="${v% *} " U[$n]+="${v#* } "
    done
done
# shellcheck disable=SC2086
med() { median ${W[$1]}; }
# shellcheck disable=SC2086
medc() { median ${U[$1]}; }
echo "medians of $RUNS interleaved rounds of $LOOP calls each, $N samples, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| A | B | A ms/call (wall, CPU) | B ms/call (wall, CPU) | A/B wall | A/B CPU |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
row() {
    printf '| %s | %s | %.2f, %.2f | %.2f, %.2f | %s | %s |\n' "$1" "$2" "$(med "$3")" "$(medc "$3")" \
        "$(med "$4")" "$(medc "$4")" "$(fmt_ratio "$(med "$3")" "$(med "$4")")" "$(fmt_ratio "$(medc "$3")" "$(medc "$4")")"
}
row "shardkit --version" "tar --version" version tar
row "shardkit get KEY (10 shards)" "tar --version" get10 tar
row "get KEY, 1000 shards" "get KEY, 10 shards" get1000 get10
row "get '#N', 1000 shards" "get '#N', 10 shards" ord1000 ord10
echo
echo "library, one process, $LOOKUPS random keys found and read (bench_lookup):"
for s in 10 1000; do
    printf '%5s shards: ' "$s"
    "$SK_TOOLS/bench_lookup" "s$s/manifest.json" "$LOOKUPS" | grep -E "^lookup" | tr '\n' ';'
    echo
done
