#!/usr/bin/env bash
# bench_python.sh - the Python package (python/shardkit) against what a
# WebDataset user runs: shardkit.ShardWriter against a tarfile re-creation
# of webdataset.ShardWriter (bench/tarfile_writer.py), shardkit.Dataset
# random access against a wids-style tarfile reader, shardkit.Reader against
# tarfile streaming iteration; the real webdataset / wids packages as well
# when they can be imported.  Each pair runs interleaved (bench/lib.sh
# interleave: a round runs every case once, in turn, so load from other
# jobs falls on all alike); medians of wall and CPU seconds, samples/s,
# peak RSS, ratios from the same run.  For the real packages on PYTHONPATH
# give Debian's python3 first on PATH (their numpy).
# shardkit.Dataset runs with its compiled lookups (shardkit._ext, built by
# make beside the library) and, as a row of its own, with SHARDKIT_EXT=0
# (the ctypes path, used where the extension is not built).
# Env: BENCH_SAMPLES (default 20000), BENCH_RUNS (rounds, 3), BENCH_DIR,
# BENCH_RANDOM (random reads, default BENCH_SAMPLES), BENCH_PY_GROUPS (the
# groups to run, default "write random seq"; "order": the global order
# against webdataset's training pipeline).
set -eu
. "$(dirname "$0")/lib.sh"
N=${BENCH_SAMPLES:-20000}
R=${BENCH_RANDOM:-$N}
LIB=$SK_ROOT/$BUILD/libshardkit.so
[ -f "$LIB" ] || bench_die "no $LIB (run make)"
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python${PYTHONPATH:+:$PYTHONPATH}
# each run also logs the seconds of its work alone, imports excluded
export PB_LOOP_LOG=$BENCH_DIR/python-loop.log
mkdir -p "$BENCH_DIR" && : >"$PB_LOOP_LOG"
PB=$SK_ROOT/bench/python_bench.py
make_corpus "$BENCH_DIR/corpus-$N" "$N"
C=$BENCH_DIR/corpus-$N
S=$BENCH_DIR/reader-shards-$N
if [ ! -f "$S.done" ]; then
    rm -rf "$S"
    "$SK_BIN" pack "$C" -o "$S/train-%06d.tar" --max-size 64M >/dev/null 2>&1 || bench_die "pack failed"
    touch "$S.done"
fi
shards=("$S"/train-*.tar)
warm_cache "$C"
warm_cache "$S"
echo "corpus $N samples; shard set ${#shards[@]} shards; $(nproc) cores; python $(python3 -c 'import sys; print(sys.version.split()[0])'); $BENCH_RUNS interleaved rounds, medians" >&2
has() { python3 -c "import $1" 2>/dev/null; }

row() { # label count case
    printf '| %s | %s | %s | %s | %s |\n' "$1" "${I_WALL[$3]}" "${I_CPU[$3]}" "$(fmt_rate "$2" "${I_WALL[$3]}")" "${I_RSS[$3]}"
}
# one timed run of a case (bench/lib.sh interleave runs them in turn)
run_case() {
    case $1 in
    sk-write) measure py_sk_write python3 "$PB" write "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M ;;
    tar-write) measure py_tar_write python3 "$PB" write-tar "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M ;;
    wds-write) measure py_wds_write python3 "$PB" write-wds "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M ;;
    sk-random) measure py_sk_random python3 "$PB" random "$S" "$R" 1 ;;
    sk-random-ctypes) SHARDKIT_EXT=0 measure py_sk_random_ctypes python3 "$PB" random "$S" "$R" 1 ;;
    sk-random-batch) measure py_sk_random_batch python3 "$PB" random-batch "$S" "$R" 1 ;;
    tar-random) measure py_tar_random python3 "$PB" random-tar "$S" "$R" 1 ;;
    wids-random) measure py_wids_random python3 "$PB" random-wids "$S/wids.json" "$R" 1 ;;
    sk-seq) measure py_sk_seq python3 "$PB" seq "$S" ;;
    tar-seq) measure py_tar_seq python3 "$PB" seq-tar "${shards[@]}" ;;
    wds-seq) measure py_wds_seq python3 "$PB" seq-wds "${shards[@]}" ;;
    sk-order) measure py_sk_order python3 "$PB" order "$S" "$N" 1 ;;
    wds-order) measure py_wds_order python3 "$PB" order-wds "$N" 1 "${shards[@]}" ;;
    esac
}
wds=; has webdataset && wds=1
wids=; has wids && wids=1
[ -z "$wids" ] || "$SK_BIN" index "${shards[@]}" --wids >/dev/null 2>&1 || bench_die "index --wids failed"
G=" ${BENCH_PY_GROUPS:-write random seq} "
want() { [[ $G == *" $1 "* ]]; }
echo "| Python ($N samples; medians of $BENCH_RUNS interleaved rounds) | wall s | cpu s | samples/s | peak RSS MiB |"
echo "| --- | --- | --- | --- | --- |"
# writers: N samples from memory (1,000 samples' members loaded, cycled)
ext=$(python3 -c 'import shardkit.dataset as d; print(d.BACKEND)')
if want write; then
interleave "$BENCH_RUNS" sk-write tar-write ${wds:+wds-write} || exit 1
row "shardkit.ShardWriter from memory (shards, .idx, manifest)" "$N" sk-write
row "tarfile re-creation of webdataset.ShardWriter (no index)" "$N" tar-write
[ -z "$wds" ] || row "webdataset.ShardWriter (real)" "$N" wds-write
fi
if want random; then
interleave "$BENCH_RUNS" sk-random sk-random-ctypes sk-random-batch tar-random ${wids:+wids-random} || exit 1
row "shardkit.Dataset ($ext), $R random ordinals" "$R" sk-random
row "shardkit.Dataset (ctypes, SHARDKIT_EXT=0), the same" "$R" sk-random-ctypes
row "shardkit.Dataset.__getitems__ ($ext), the same in batches of 64" "$R" sk-random-batch
row "wids-style tarfile index, $R random ordinals" "$R" tar-random
[ -z "$wids" ] || row "wids.ShardListDataset (real), $R random ordinals" "$R" wids-random
fi
if want seq; then
interleave "$BENCH_RUNS" sk-seq tar-seq ${wds:+wds-seq} || exit 1
row "shardkit.Reader, in order" "$N" sk-seq
row "tarfile streaming iteration" "$N" tar-seq
[ -z "$wds" ] || row "webdataset.WebDataset (real)" "$N" wds-seq
fi
# the order a training job reads in (issue 28): shardkit.torch's global
# order (shards shuffled, samples shuffled in windows of 8 shards) against
# webdataset's training pipeline (resampled shards, a 1,000-sample shuffle
# buffer); only when webdataset imports (it needs torch, as shardkit.torch
# does).  Not in the default groups: BENCH_PY_GROUPS=order.
if want order; then
    if [ -z "$wds" ]; then
        echo "order: skipped: webdataset does not import (put its source on PYTHONPATH, docs/benchmarks.md)" >&2
    else
        interleave "$BENCH_RUNS" sk-order wds-order || exit 1
        row "shardkit.torch.StreamingDataset, global order, window 8" "$N" sk-order
        row "webdataset.WebDataset(resampled=True).shuffle(1000) (real)" "$N" wds-order
        echo
        echo "order: $(fmt_ratio "${I_WALL[wds-order]}" "${I_WALL[sk-order]}")x webdataset's samples/s (cpu $(fmt_ratio "${I_CPU[wds-order]}" "${I_CPU[sk-order]}")x; medians of wall and cpu seconds, imports included; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
    fi
fi
ratio() { # case anchor: "Xx (cpu Yx)"
    echo "$(fmt_ratio "${I_WALL[$2]}" "${I_WALL[$1]}")x (cpu $(fmt_ratio "${I_CPU[$2]}" "${I_CPU[$1]}")x)"
}
# the summaries name the groups that ran (BENCH_PY_GROUPS may pick some)
joined() { local out=$1; shift; for x; do out+="; $x"; done; echo "$out"; }
parts=()
want write && parts+=("writer: $(ratio sk-write tar-write) the tarfile re-creation${wds:+, $(ratio sk-write wds-write) webdataset.ShardWriter}")
want random && parts+=("random access: $(ratio sk-random tar-random) the wids-style reader${wids:+, $(ratio sk-random wids-random) wids}, in batches $(ratio sk-random-batch tar-random)${wids:+, $(ratio sk-random-batch wids-random) wids}")
want seq && parts+=("sequential: $(ratio sk-seq tar-seq) tarfile${wds:+, $(ratio sk-seq wds-seq) webdataset}")
echo
[ ${#parts[@]} -gt 0 ] && echo "$(joined "${parts[@]}") (medians of wall and cpu seconds; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
# The same runs with imports excluded: the real webdataset and wids import
# torch (about a second), which the whole-process ratios above count as
# their cost; a training job has torch loaded already, so these are the
# ratios of the work itself (medians of each mode's logged seconds).
loop() { # mode: median wall seconds of the work
    awk -v m="$1" '$1 == m { print $2 }' "$PB_LOOP_LOG" | sort -g | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
lratio() { awk -v a="$(loop "$1")" -v b="$(loop "$2")" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else printf "n/a" }'; }
echo
want order && [ -n "$wds" ] && echo "order, imports excluded (in-process medians): $(lratio order order-wds) webdataset"
parts=()
want write && parts+=("writer $(lratio write write-tar) the tarfile re-creation${wds:+, $(lratio write write-wds) webdataset.ShardWriter}")
want random && parts+=("random access ($ext) $(lratio random random-tar) the wids-style reader${wids:+, $(lratio random random-wids) wids}, ctypes $(lratio random-ctypes random-tar)${wids:+, $(lratio random-ctypes random-wids) wids}, in batches $(lratio random-batch random-tar)${wids:+, $(lratio random-batch random-wids) wids}")
want seq && parts+=("sequential $(lratio seq seq-tar) tarfile${wds:+, $(lratio seq seq-wds) webdataset}")
[ ${#parts[@]} -gt 0 ] && echo "imports excluded (the work alone, in-process medians): $(joined "${parts[@]}")"
exit 0
