#!/usr/bin/env bash
# bench_pack.sh - `make bench` figures for `shardkit pack`: packs one corpus
# of BENCH_SAMPLES samples (default 100000 = 300,000 files, about 1.5 GB)
# with shardkit and, in the same run, with the anchors a user would otherwise
# reach for: GNU `tar cf`, `bsdtar cf` (one tar each, no shards) and
# bench/tarfile_writer.py (Python tarfile, rolling shards the way
# webdataset.ShardWriter writes them).  Prints a Markdown table: wall seconds,
# files/s, MB/s, CPU seconds, peak RSS, and shardkit's ratios against each
# anchor; medians of BENCH_RUNS (3) runs, warm page cache (method in
# docs/benchmarks.md).  Checks that every output holds every file.
#
# Environment: BENCH_SAMPLES, BENCH_RUNS, BENCH_DIR (corpus cache and
# outputs, default /tmp/shardkit-bench), BENCH_PACK_ARGS (extra shardkit
# pack options, e.g. "--jobs 2"), BENCH_TOOLS (subset of
# "shardkit gnu-tar bsdtar python"), plus SK_BIN/SK_TOOLS from bench/run.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

samples=${BENCH_SAMPLES:-100000}
tools=${BENCH_TOOLS:-shardkit gnu-tar bsdtar python}
read -r -a pack_extra <<<"${BENCH_PACK_ARGS:-}"
python=$(command -v python3 || true)
started=$(date +%s)

corpus=$BENCH_DIR/corpus-$samples
make_corpus "$corpus" "$samples"
corpus_stats "$corpus"
warm_cache "$corpus"

# label | command (argv, @OUT@ = fresh output dir) | how many shards it makes
declare -A cmd_desc
run_tool() {
    case $1 in
    shardkit)
        cmd_desc[$1]="shardkit pack --max-size 512M${pack_extra[*]:+ ${pack_extra[*]}}"
        measure shardkit "$SK_BIN" pack "$corpus" -o @OUT@/train-%06d.tar --max-size 512M "${pack_extra[@]}" ;;
    gnu-tar)
        command -v tar >/dev/null || return 2
        cmd_desc[$1]="GNU tar cf (one tar)"
        measure gnu-tar tar cf @OUT@/corpus.tar -C "$corpus" . ;;
    bsdtar)
        command -v bsdtar >/dev/null || return 2
        cmd_desc[$1]="bsdtar cf (one tar)"
        measure bsdtar bsdtar cf @OUT@/corpus.tar -C "$corpus" . ;;
    python)
        [ -n "$python" ] || return 2
        cmd_desc[$1]="Python tarfile, ShardWriter-style"
        measure python "$python" "$SK_ROOT/bench/tarfile_writer.py" "$corpus" \
            -o @OUT@/train-%06d.tar --max-size 512M ;;
    *) bench_die "unknown tool '$1' in BENCH_TOOLS" ;;
    esac
}

# Regular-file members in all tars of directory $1 (GNU tar lists each as "-...").
count_members() {
    local f n=0 k
    for f in "$1"/*.tar; do
        [ -f "$f" ] || continue
        k=$(tar tvf "$f" | grep -c '^-' || true)
        n=$((n + k))
    done
    echo "$n"
}

declare -A wall cpu rss shards
status=0
echo "pack: $samples samples, $C_FILES files, $(awk -v b="$C_BYTES" 'BEGIN{printf "%.1f", b/1e6}') MB;" \
     "$BENCH_RUNS timed runs per tool, page cache warmed by one untimed read" >&2
for t in $tools; do
    rc=0
    run_tool "$t" || rc=$?
    if [ $rc -eq 2 ]; then
        echo "  $t: not installed, skipped" >&2
        continue
    elif [ $rc -ne 0 ]; then
        echo "  $t: FAILED" >&2
        [ "$t" = shardkit ] && status=1
        continue
    fi
    got=$(count_members "$M_OUT")
    shards[$t]=$(find "$M_OUT" -maxdepth 1 -name '*.tar' | wc -l)
    rm -rf "$M_OUT"
    if [ "$got" -ne "$C_FILES" ]; then
        echo "  $t: output holds $got files, not $C_FILES: FAILED" >&2
        [ "$t" = shardkit ] && status=1
        continue
    fi
    wall[$t]=$M_WALL cpu[$t]=$M_CPU rss[$t]=$M_RSS
    echo "  $t: wall $M_WALLS s -> median $M_WALL s, ${shards[$t]} tar(s), $got files checked" >&2
done

echo
echo "### pack: $samples samples ($C_FILES files, $(awk -v b="$C_BYTES" 'BEGIN{printf "%.0f", b/1e6}') MB), median of $BENCH_RUNS, warm cache"
echo
echo "| tool | wall s | files/s | MB/s | CPU s | peak RSS MiB | shardkit speed × | shardkit RSS × |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for t in $tools; do
    [ -n "${wall[$t]:-}" ] || continue
    sk_wall=${wall[shardkit]:-} sk_rss=${rss[shardkit]:-}
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' \
        "${cmd_desc[$t]}" "${wall[$t]}" \
        "$(fmt_rate "$C_FILES" "${wall[$t]}")" \
        "$(fmt_rate "$C_BYTES" "${wall[$t]}" 1e6)" \
        "${cpu[$t]}" "${rss[$t]}" \
        "$(fmt_ratio "${wall[$t]}" "$sk_wall")" \
        "$(fmt_ratio "$sk_rss" "${rss[$t]}")"
done
echo
echo "speed ×: the tool's wall time / shardkit's (above 1: shardkit is faster);" \
     "RSS ×: shardkit's peak RSS / the tool's (below 1: shardkit uses less)."
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
     "$(uname -sr); $("$SK_BIN" --version 2>/dev/null || echo 'shardkit ?');" \
     "$(tar --version | head -1); $(bsdtar --version 2>/dev/null | cut -d' ' -f1-2);" \
     "Python $("${python:-false}" -c 'import platform; print(platform.python_version())' 2>/dev/null || echo '?')"
echo "bench_pack: $(( $(date +%s) - started )) s in all" >&2
exit $status
