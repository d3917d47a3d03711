#!/usr/bin/env bash
# bench_stats.sh - `shardkit stats` and `shardkit serve` at scale:
#   - index-only stats of a 1,000-shard, 3,000,000-sample dataset (written
#     by tests/tools/mktiny through the public sample writer: the bytes pack
#     writes; .cls and .json per sample), wall, CPU and peak RSS, interleaved
#     with the same on a 1,000-sample dataset; --json-keys on 30,000 samples;
#   - serve: pages per second for sample and grid pages under 32 concurrent
#     clients (bench/serve_load.py, kept-alive connections on loopback), on
#     the image corpus and on the 3 M-sample dataset, to show a page costs
#     the same whatever the dataset's size; thumbnails cold and cached.
# Env: BENCH_STATS_SAMPLES (3000000), BENCH_SERVE_SECONDS (10),
# BENCH_STATS_PART (stats, serve or all), BENCH_RUNS, BENCH_DIR.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${BENCH_STATS_SAMPLES:-3000000}
SECS=${BENCH_SERVE_SECONDS:-10}
PART=${BENCH_STATS_PART:-all}   # stats, serve or all
PY=python3
big=$BENCH_DIR/tiny-$N small=$BENCH_DIR/tiny-1000
mk() { # DIR N PER
    [ -f "$1.done" ] && return 0
    rm -rf "$1"
    echo "bench: writing $2 samples to $1 ..." >&2
    "$SK_TOOLS/mktiny" "$2" "$3" "$1/s-%04d.tar" >&2 || bench_die "mktiny failed"
    touch "$1.done"
}
mk "$big" "$N" $((N / 1000))
mk "$small" 1000 1
warm_cache "$big"
samples=$("$SK_BIN" stats --json "$big" | $PY -c 'import json,sys; print(json.load(sys.stdin)["totals"]["samples"])')
[ "$samples" = "$N" ] || bench_die "stats counts $samples samples, not $N"

if [ "$PART" != serve ]; then
echo "| dataset | command | wall s | CPU s | peak RSS MiB |"
echo "| --- | --- | ---: | ---: | ---: |"
run_case() {
    case $1 in
    big) measure "stats-big" "$SK_BIN" stats --json "$big" ;;
    small) measure "stats-small" "$SK_BIN" stats --json "$small" ;;
    esac
}
interleave "$BENCH_RUNS" big small
printf '| 1,000 shards, %s samples | stats --json | %.3f | %.3f | %.1f |\n' "$N" "${I_WALL[big]}" "${I_CPU[big]}" "${I_RSS[big]}"
printf '| 1,000 shards, 1,000 samples | stats --json | %.3f | %.3f | %.1f |\n' "${I_WALL[small]}" "${I_CPU[small]}" "${I_RSS[small]}"
mid=$BENCH_DIR/tiny-30000
mk "$mid" 30000 3000
measure "stats-jsonkeys" "$SK_BIN" stats --json --json-keys "$mid"
printf '| 10 shards, 30,000 samples | stats --json-keys | %.3f | %.3f | %.1f |\n' "$M_WALL" "$M_CPU" "$M_RSS"
fi
[ "$PART" = stats ] && exit 0

corpus=$BENCH_DIR/corpus-5000
make_corpus "$corpus" 5000
imgds=$BENCH_DIR/serve-ds-5000
[ -f "$imgds/manifest.json" ] || "$SK_BIN" pack "$corpus" -o "$imgds/s-%03d.tar" --max-count 500 -q
warm_cache "$imgds"
echo
# server CPU (user + system) in clock ticks, from /proc
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
serve_rate() { # DATASET SAMPLES KIND [MEMBER]: prints pages/s, pages, errors, CPU us/page
    local out=$BENCH_DIR/serve.out pid url t0 t1 rate ok bad
    "$SK_BIN" serve --port 0 --threads "$(nproc)" "$1" >"$out" 2>&1 &
    pid=$!
    for _ in $(seq 600); do grep -q serving "$out" && break; sleep 0.1; done
    url=$(sed -n 's/^serving //p' "$out")
    [ -n "$url" ] || { cat "$out" >&2; kill "$pid"; bench_die "serve did not start"; }
    curl -s -o /dev/null "${url}grid" || :  # the indexes' first use, untimed
    t0=$(ticks "$pid")
    read -r rate ok bad < <($PY "$SK_ROOT/bench/serve_load.py" "$url" "$3" "$2" 32 "$SECS" "${4:-0}")
    t1=$(ticks "$pid")
    kill "$pid"; wait "$pid" 2>/dev/null || :
    echo "$rate $ok $bad $(awk -v t=$((t1 - t0)) -v n="$ok" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.0f", n ? t / hz * 1e6 / n : 0}')"
}
echo "| dataset | page | clients | pages/s | server CPU per page |"
echo "| --- | --- | ---: | ---: | ---: |"
row() { # LABEL KIND DATASET SAMPLES [MEMBER]
    local rate ok bad us
    read -r rate ok bad us < <(serve_rate "$3" "$4" "$2" "${5:-0}")
    printf '| %s | %s | 32 | %s (%s errors) | %s us |\n' "$1" "$2" "$rate" "$bad" "$us"
}
for kind in sample grid; do
    row "5,000 samples, JPEG + JSON" "$kind" "$imgds" 5000
    row "$N samples, .cls + .json" "$kind" "$big" "$N"
done
row "5,000 samples, JPEG + JSON (thumbnails cold, then cached)" thumb "$imgds" 5000 1
echo
echo "$(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg); stats: medians of $BENCH_RUNS interleaved runs; serve: ${SECS} s per row"
