# bench/lib.sh - shared helpers for the bench/bench_*.sh scripts (sourced,
# not run).  It gives every benchmark the same method, documented in
# docs/benchmarks.md:
#
#   make_corpus DIR N       build a deterministic N-sample corpus in DIR once;
#                           later calls with the same N reuse it
#   warm_cache DIR          read every file under DIR once, untimed, so timed
#                           runs all start with the input in the page cache
#   measure LABEL CMD...    run CMD BENCH_RUNS times, timed with GNU time,
#                           each run writing to a fresh, empty output directory
#                           (an argument "@OUT@" or containing "@OUT@" is
#                           replaced by its path), with `sync` untimed before
#                           each run; sets M_WALL, M_CPU (user+sys seconds)
#                           and M_RSS (peak RSS, MiB): medians over the runs
#   median V...             the median of numbers
#
# Environment (all optional): SK_ROOT, BUILD, SK_BIN, SK_TOOLS as bench/run
# sets them; BENCH_DIR (default /tmp/shardkit-bench) holds corpora and
# outputs; BENCH_RUNS (default 3) timed runs per command; BENCH_SEED (0);
# GNU_TIME ($SK_TOOLS/bench_time gives the same figures to the microsecond),
# BENCH_CPU_FMT (printf format of M_CPU, default %.2f).

# shellcheck shell=bash disable=SC2034  # sets globals (M_*, C_*) for callers
SK_ROOT=${SK_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
BUILD=${BUILD:-build}
SK_BIN=${SK_BIN:-$SK_ROOT/$BUILD/shardkit}
SK_TOOLS=${SK_TOOLS:-$SK_ROOT/$BUILD/tools}
BENCH_DIR=${BENCH_DIR:-/tmp/shardkit-bench}
BENCH_RUNS=${BENCH_RUNS:-3}
BENCH_SEED=${BENCH_SEED:-0}
GNU_TIME=${GNU_TIME:-/usr/bin/time}
BENCH_CPU_FMT=${BENCH_CPU_FMT:-%.2f}   # M_CPU's printf format

bench_die() { echo "bench: $*" >&2; exit 1; }

# The corpus generator: the shared Python one beside the project when it is
# there (the reference every team benchmarks on), else our C build of it.
corpus_generator() {
    local shared=$SK_ROOT/../shared/bench/make-corpus
    if [ -x "$shared" ] && command -v cjpeg >/dev/null; then
        echo "$shared"
    elif [ -x "$SK_TOOLS/mkcorpus" ]; then
        echo "$SK_TOOLS/mkcorpus"
    else
        bench_die "no corpus generator: neither $shared nor $SK_TOOLS/mkcorpus (run make)"
    fi
}

# make_corpus DIR N: builds DIR (via DIR.tmp, renamed when complete) unless
# the stamp DIR.done beside it says DIR already holds N samples made with
# this generator and seed.  (The stamp is not inside DIR: a dot file there
# would be a sample without a key.)  Prints the
# generator's summary line (or the cached one) to stderr.
make_corpus() {
    local dir=$1 n=$2 gen stamp
    gen=$(corpus_generator)
    stamp="generator=$(basename "$gen") samples=$n seed=$BENCH_SEED per-dir=1000 pool=256"
    if [ -d "$dir" ] && [ -f "$dir.done" ] && [ "$(head -1 "$dir.done")" = "$stamp" ]; then
        echo "corpus: reusing $dir ($(tail -1 "$dir.done"))" >&2
        return 0
    fi
    rm -rf "$dir" "$dir.tmp" "$dir.done"
    mkdir -p "$(dirname "$dir")"
    echo "corpus: building $n samples in $dir with $(basename "$gen") ..." >&2
    local summary
    summary=$("$gen" "$dir.tmp" --samples "$n" --seed "$BENCH_SEED" --per-dir 1000) ||
        bench_die "corpus generator $gen failed"
    mv "$dir.tmp" "$dir"
    printf '%s\n%s\n' "$stamp" "$summary" >"$dir.done"
    echo "corpus: $summary" >&2
}

# corpus_stats DIR: sets C_FILES and C_BYTES (regular files below DIR).
corpus_stats() {
    read -r C_FILES C_BYTES < <(find "$1" -type f -printf '%s\n' |
        awk '{n++; b+=$1} END {printf "%d %.0f\n", n, b}')   # mawk: %d stops at 2^31-1
}

# warm_cache DIR: one untimed read of every file, so that every tool and run
# reads from the page cache (we cannot drop caches without root, and even
# with root a cold-cache number mostly measures the disk).
warm_cache() {
    find "$1" -type f -print0 | xargs -0 -n 2000 cat >/dev/null
}

median() {
    printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {
        if (NR == 0) exit 1
        if (NR % 2) print v[(NR+1)/2]; else printf "%.6g\n", (v[NR/2]+v[NR/2+1])/2 }'
}

# measure LABEL CMD...: see the top of this file.  The output directory of
# run i is $BENCH_DIR/out/LABEL.i; the previous run's output is removed
# before the next starts (untimed), and M_OUT names the last run's, which
# the caller may inspect and should remove.  On failure prints the command's
# stderr and returns 1.
measure() {
    local label=$1; shift
    local base=$BENCH_DIR/out safe=${label//[^A-Za-z0-9_.-]/_}
    local walls=() cpus=() rsss=() i tf out args a w u s r
    mkdir -p "$base"
    [ -x "$GNU_TIME" ] || bench_die "GNU time not found at $GNU_TIME (scripts/deps installs the 'time' package)"
    tf=$base/$safe.time
    M_OUT=
    for ((i = 1; i <= BENCH_RUNS; i++)); do
        out=$base/$safe.$i
        [ -n "$M_OUT" ] && rm -rf "$M_OUT"
        rm -rf "$out"
        mkdir -p "$out"
        args=()
        for a in "$@"; do args+=("${a//@OUT@/$out}"); done
        sync
        if ! "$GNU_TIME" -f '%e %U %S %M' -o "$tf" "${args[@]}" >"$base/$safe.stdout" 2>"$base/$safe.stderr"; then
            echo "bench: $label failed (run $i): ${args[*]}" >&2
            tail -20 "$base/$safe.stderr" >&2
            rm -rf "$out"
            return 1
        fi
        M_OUT=$out
        # GNU time may put a status line first; the figures are on the last.
        read -r w u s r < <(tail -1 "$tf")
        walls+=("$w")
        cpus+=("$(awk -v u="$u" -v s="$s" -v f="$BENCH_CPU_FMT" 'BEGIN {printf f, u + s}')")
        rsss+=("$(awk -v r="$r" 'BEGIN {printf "%.1f", r / 1024}')")
    done
    M_WALL=$(median "${walls[@]}")
    M_CPU=$(median "${cpus[@]}")
    M_RSS=$(median "${rsss[@]}")
    M_WALLS="${walls[*]}"
}

# fmt_rate COUNT SECONDS [DIV]: COUNT/SECONDS/DIV with thousands kept readable.
fmt_rate() {
    awk -v c="$1" -v s="$2" -v d="${3:-1}" 'BEGIN { if (s <= 0) s = 0.001; printf "%.0f", c / s / d }'
}
# fmt_ratio A B: A/B to two decimals, "n/a" when A is empty or B zero or empty.
fmt_ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b + 0 <= 0) print "n/a"; else printf "%.2f", a / b }'
}

# interleave ROUNDS CASE...: ROUNDS rounds, each running every CASE once, in
# turn, so that load from other jobs on a shared machine falls on all cases
# alike (rather than on whichever ran during a busy minute).  For each CASE
# it calls the caller's function run_case CASE, which runs one `measure`
# (BENCH_RUNS is 1 while it runs) and may prepare untimed state first.  Sets
# I_WALL[CASE], I_CPU[CASE], I_RSS[CASE] (medians over the rounds) and
# I_WALLS[CASE] (every round's wall); returns 1 when a case failed.
declare -gA I_WALL=() I_CPU=() I_RSS=() I_WALLS=()
interleave() {
    # names of their own: run_case's code runs in this function's scope
    local il_rounds=$1 il_round il_case il_runs=$BENCH_RUNS; shift
    local -A il_w=() il_u=() il_m=()
    for ((il_round = 1; il_round <= il_rounds; il_round++)); do
        for il_case in "$@"; do
            BENCH_RUNS=1
            run_case "$il_case" || { BENCH_RUNS=$il_runs; echo "bench: case $il_case failed" >&2; return 1; }
            BENCH_RUNS=$il_runs
            il_w[$il_case]+="$M_WALL " il_u[$il_case]+="$M_CPU " il_m[$il_case]+="$M_RSS "
        done
    done
    for il_case in "$@"; do
        # shellcheck disable=SC2086  # split: one figure per round
        I_WALL[$il_case]=$(median ${il_w[$il_case]}) I_CPU[$il_case]=$(median ${il_u[$il_case]})
        # shellcheck disable=SC2086
        I_RSS[$il_case]=$(median ${il_m[$il_case]}) I_WALLS[$il_case]=${il_w[$il_case]% }
    done
}

# ------------------------------------------------- FUSE mounts, side by side
# The mount benchmarks (bench_mount*.sh) time tools on fresh mounts, in
# interleaved rounds:
#   now                  seconds since the epoch, to the nanosecond
#   fuse_down MP         unmounts MP and waits until it is no mount point
#   mount_rounds "TOOL..." "OP..."
#                        BENCH_RUNS rounds, each calling the caller's
#                        `bench_op TOOL OP` for every tool and op in turn: it
#                        prints the seconds OP took, or nothing when that
#                        pair is not measured; sets MR[TOOL.OP] (the
#                        rounds' figures) and MR_LOAD0/MR_LOAD1 (the load
#                        average before and after)
#   mr_med TOOL.OP       the median of MR[TOOL.OP] (%.3f), "-" when none
now() { date +%s.%N; }
fuse_down() { fusermount3 -u "$1"; while mountpoint -q "$1"; do sleep 0.05; done; }
declare -gA MR=()
mount_rounds() {
    local -a mr_tools mr_ops
    local round t op v
    read -ra mr_tools <<<"$1"
    read -ra mr_ops <<<"$2"
    MR_LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
    for round in $(seq 1 "$BENCH_RUNS"); do
        for t in "${mr_tools[@]}"; do
            for op in "${mr_ops[@]}"; do
                v=$(bench_op "$t" "$op") || exit 1
                [ -n "$v" ] || continue
                MR[$t.$op]="${MR[$t.$op]:-} $v"
                echo "round $round $t $op: $v s" >&2
            done
        done
    done
    MR_LOAD1=$(cut -d' ' -f1-3 /proc/loadavg)
}
# shellcheck disable=SC2086  # split: one figure per round
mr_med() { [ -n "${MR[$1]:-}" ] && printf '%.3f' "$(median ${MR[$1]})" || echo "-"; }
