#!/usr/bin/env bash
# bench_pack_scale.sh - pack at millions of files (issue "speed at scale",
# "Pack at millions of files"): for each N in BENCH_SCALE (samples of the
# benchmark corpus, 3 files each), interleaved rounds (bench/lib.sh
# interleave) of
#   pack   shardkit pack --max-size 512M   vs  tar cf (one tar), each run
#          from a cold page cache (dropped before it: needs root; otherwise,
#          or with BENCH_COLD=0, warm, and the table says so);
#   pack1  shardkit pack -j 1              vs  tar cf, warm (both one thread).
# Prints wall and CPU seconds of both, tar's wall / shardkit's (above 1:
# shardkit is faster; targets 1.8 cold at 1M samples, 1.2 for -j 1),
# shardkit's peak RSS, its bytes per input file, and the growth of RSS
# against the previous N (log(r2/r1) / log(N2/N1): 0 = flat, 1 = linear;
# target: RSS under 100 MB at 1M samples, 3M files).
# Outputs are removed after each run (at 1M a tar and a pack are 24 GB each,
# never both on the disk).
# Env: BENCH_SCALE (default "100000"), BENCH_CORPUS_<N> (an existing corpus
# of N samples instead of $BENCH_DIR/corpus-N), BENCH_RUNS (rounds, default
# 3), BENCH_COLD (default 1), BENCH_OPS (default "pack pack1"),
# BENCH_DISK_MARGIN (bytes left free, default 5 GB), BENCH_DIR, SK_BIN.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
scale=${BENCH_SCALE:-100000}
ops=${BENCH_OPS:-pack pack1}
rounds=${BENCH_RUNS:-3}
margin=${BENCH_DISK_MARGIN:-5000000000}
cold=${BENCH_COLD:-1}
if [ "$cold" = 1 ] && ! { sync && echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null; then
    echo "bench: cannot drop the page cache (not root?): the pack rows are warm" >&2
    cold=0
fi
drop() { if [ "$cold" = 1 ]; then sync; echo 3 >/proc/sys/vm/drop_caches; fi; }
clear_out() { rm -rf "$BENCH_DIR"/out/*-"$n".[0-9]*; }
run_case() {
    clear_out
    local need=$((bytes + bytes / 10 + margin)) have
    have=$(df -B1 --output=avail "$BENCH_DIR" | tail -1)
    [ "$have" -ge "$need" ] || bench_die "$1 at N=$n: $have bytes free, $need needed"
    case $1 in
    pack) drop; measure "pack-$n" "$SK_BIN" pack "$corpus" -o @OUT@/train-%06d.tar --max-size 512M -q ;;
    tar) drop; measure "tar-$n" tar cf @OUT@/corpus.tar -C "$corpus" . ;;
    pack1) measure "pack1-$n" "$SK_BIN" pack "$corpus" -o @OUT@/train-%06d.tar --max-size 512M -j 1 -q ;;
    tarw) measure "tarw-$n" tar cf @OUT@/corpus.tar -C "$corpus" . ;;
    *) bench_die "unknown case $1" ;;
    esac
    clear_out
}
mkdir -p "$BENCH_DIR/out"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
prev_n= prev_rss=
for n in $scale; do
    var=BENCH_CORPUS_$n
    corpus=${!var:-}
    if [ -z "$corpus" ]; then
        corpus=$BENCH_DIR/corpus-$n
        make_corpus "$corpus" "$n"
    fi
    # the generator's summary beside the corpus, when there is one (a walk of
    # 3M files from a cold cache takes minutes)
    stamp=$(tail -1 "$corpus.done" 2>/dev/null || true)
    if [[ $stamp =~ files=([0-9]+)\ bytes=([0-9]+) ]]; then
        files=${BASH_REMATCH[1]} bytes=${BASH_REMATCH[2]}
    else
        corpus_stats "$corpus"
        files=$C_FILES bytes=$C_BYTES
    fi
    for op in $ops; do
        case $op in
        pack) cases="tar pack" anchor=tar label="pack (cache $([ "$cold" = 1 ] && echo cold || echo warm))" ;;
        pack1) warm_cache "$corpus"; cases="tarw pack1" anchor=tarw label="pack -j 1 (cache warm)" ;;
        *) bench_die "unknown op $op" ;;
        esac
        # shellcheck disable=SC2086  # one case a word
        interleave "$rounds" $cases || exit 1
        r=${I_RSS[$op]}
        grow=n/a
        if [ "$op" = pack ] && [ -n "$prev_n" ]; then
            grow=$(awk -v a="$prev_rss" -v b="$r" -v m="$prev_n" -v k="$n" 'BEGIN { printf "%.2f", log(b / a) / log(k / m) }')
        fi
        [ "$op" = pack ] && prev_n=$n prev_rss=$r
        printf '| %s | %s | %s | %s, %s | %s, %s | **%s** | %s | %s | %s |\n' "$n" "$files" "$label" \
            "${I_WALL[$anchor]}" "${I_CPU[$anchor]}" "${I_WALL[$op]}" "${I_CPU[$op]}" \
            "$(fmt_ratio "${I_WALL[$anchor]}" "${I_WALL[$op]}")" "$r" \
            "$(awk -v r="$r" -v f="$files" 'BEGIN { printf "%.1f", r * 1048576 / f }')" "$grow" >>"$out"
        echo "  $op (N=$n): shardkit ${I_WALLS[$op]} s, tar ${I_WALLS[$anchor]} s" >&2
    done
done
echo "$rounds interleaved rounds, medians; $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg), $(date -u +%F)"
echo
echo "| samples | files | shardkit | tar cf wall, CPU s | shardkit wall, CPU s | tar / shardkit wall | shardkit RSS MiB | RSS bytes/file | RSS growth |"
echo "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
cat "$out"
