#!/usr/bin/env bash
# bench_mount_scale.sh - `shardkit mount` + a full listing of a dataset of a
# million files (the issue's "mount + list within 1 s per million files"):
# BENCH_SAMPLES (default 500,000) tiny samples of two members each
# (tests/tools/mktiny: the shards, indexes and manifest pack writes), in
# shards of 5,000 samples, every file in the mount's root directory.
# Each round, on a fresh mount: the wall time from starting `shardkit mount`
# to `find MP -type f | wc -l` having counted every file, and the CPU
# seconds that cost (the mount process's user + sys, measured with GNU time
# on a foreground mount, plus find's).  BENCH_RUNS rounds (default 3),
# medians; prints a Markdown table and the load average.  On a loaded
# machine the wall time is mostly waits for a core; the CPU seconds are
# what the listing costs.
set -u
. "$(dirname "$0")/lib.sh"
for t in fusermount3 mountpoint; do
    command -v $t >/dev/null || bench_die "$t is not installed (scripts/deps check)"
done
N=${BENCH_SAMPLES:-500000}
W=$BENCH_DIR/mount-scale-$N
if [ ! -f "$W/ds/manifest.json" ]; then
    rm -rf "$W/ds"
    mkdir -p "$W"
    "$SK_TOOLS/mktiny" "$N" 5000 "$W/ds/s-%04d.tar" >&2 || bench_die "mktiny failed"
fi
warm_cache "$W/ds"
MP=$W/mp
mkdir -p "$MP"
trap 'fusermount3 -u "$MP" 2>/dev/null' EXIT
now() { date +%s.%N; }
declare -a WALL CPU MCPU
load0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$BENCH_RUNS"); do
    s=$(now)
    /usr/bin/time -f '%U %S' -o "$W/mount.cpu" "$SK_BIN" mount -f "$W/ds" "$MP" 2>"$W/mount.log" &
    pid=$!
    until mountpoint -q "$MP"; do
        kill -0 "$pid" 2>/dev/null || bench_die "the mount failed: $(cat "$W/mount.log")"
        sleep 0.01
    done
    n=$(/usr/bin/time -f '%U %S' -o "$W/find.cpu" find "$MP" -type f | wc -l)
    e=$(now)
    fusermount3 -u "$MP"
    wait "$pid" || bench_die "the mount exited $?"
    [ "$n" = $((2 * N)) ] || bench_die "listed $n files, want $((2 * N))"
    w=$(echo "$e - $s" | bc -l)
    c=$(cat "$W/mount.cpu" "$W/find.cpu" | awk '{s += $1 + $2} END {print s}')
    m=$(awk '{print $1 + $2}' "$W/mount.cpu")
    WALL+=("$w") CPU+=("$c") MCPU+=("$m")
    echo "round $round: $n files, wall $w s, CPU $c s (the mount process: $m s)" >&2
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)
echo
echo "| $((2 * N)) files, $(ls "$W/ds" | grep -c '\.tar$') shards | mount + list, wall (s) | CPU, mount + find (s) | CPU, the mount process (s) |"
echo "| --- | ---: | ---: | ---: |"
printf '| shardkit mount | %.3f | %.3f | %.3f |\n' "$(median "${WALL[@]}")" "$(median "${CPU[@]}")" "$(median "${MCPU[@]}")"
echo
echo "load average before / after: $load0 / $load1; medians of $BENCH_RUNS runs, whole-process wall time"
