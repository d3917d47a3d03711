#!/usr/bin/env bash
# bench_python.sh - the Python package (python/shardkit) against what a
# WebDataset user runs: shardkit.ShardWriter against a tarfile re-creation
# of webdataset.ShardWriter (bench/tarfile_writer.py), shardkit.Dataset
# random access against a wids-style tarfile reader, shardkit.Reader against
# tarfile streaming iteration; the real webdataset / wids packages as well
# when they can be imported.  Samples/s, peak RSS, ratios from the same run.
# Env: BENCH_SAMPLES (default 20000), BENCH_RUNS (3), BENCH_DIR,
# BENCH_RANDOM (random reads, default BENCH_SAMPLES).
set -eu
. "$(dirname "$0")/lib.sh"
N=${BENCH_SAMPLES:-20000}
R=${BENCH_RANDOM:-$N}
LIB=$SK_ROOT/$BUILD/libshardkit.so
[ -f "$LIB" ] || bench_die "no $LIB (run make)"
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python${PYTHONPATH:+:$PYTHONPATH}
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
echo "corpus $N samples; shard set ${#shards[@]} shards; $(nproc) cores; python $(python3 -c 'import sys; print(sys.version.split()[0])'); $BENCH_RUNS runs, medians" >&2
has() { python3 -c "import $1" 2>/dev/null; }

row() { # label count seconds rss
    printf '| %s | %s | %s | %s |\n' "$1" "$3" "$(fmt_rate "$2" "$3")" "$4"
}
echo "| Python ($N samples) | wall s | samples/s | peak RSS MiB |"
echo "| --- | --- | --- | --- |"
# writers: N samples from memory (1,000 samples' members loaded, cycled)
measure py_sk_write python3 "$PB" write "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M
w_sk=$M_WALL; row "shardkit.ShardWriter from memory (shards, .idx, manifest)" "$N" "$M_WALL" "$M_RSS"
measure py_tar_write python3 "$PB" write-tar "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M
w_tar=$M_WALL; row "tarfile re-creation of webdataset.ShardWriter (no index)" "$N" "$M_WALL" "$M_RSS"
w_wds=
if has webdataset; then
    measure py_wds_write python3 "$PB" write-wds "$C" "$N" -o "@OUT@/train-%06d.tar" --max-size 64M
    w_wds=$M_WALL; row "webdataset.ShardWriter (real)" "$N" "$M_WALL" "$M_RSS"
fi
measure py_sk_random python3 "$PB" random "$S" "$R" 1
r_sk=$M_WALL; row "shardkit.Dataset, $R random ordinals" "$R" "$M_WALL" "$M_RSS"
measure py_tar_random python3 "$PB" random-tar "$S" "$R" 1
r_tar=$M_WALL; row "wids-style tarfile index, $R random ordinals" "$R" "$M_WALL" "$M_RSS"
r_wids=
if has wids; then
    "$SK_BIN" index "${shards[@]}" --wids >/dev/null 2>&1 || bench_die "index --wids failed"
    measure py_wids_random python3 "$PB" random-wids "$S/wids.json" "$R" 1
    r_wids=$M_WALL; row "wids.ShardListDataset (real), $R random ordinals" "$R" "$M_WALL" "$M_RSS"
fi
measure py_sk_seq python3 "$PB" seq "$S"
s_sk=$M_WALL; row "shardkit.Reader, in order" "$N" "$M_WALL" "$M_RSS"
measure py_tar_seq python3 "$PB" seq-tar "${shards[@]}"
s_tar=$M_WALL; row "tarfile streaming iteration" "$N" "$M_WALL" "$M_RSS"
s_wds=
if has webdataset; then
    measure py_wds_seq python3 "$PB" seq-wds "${shards[@]}"
    s_wds=$M_WALL; row "webdataset.WebDataset (real)" "$N" "$M_WALL" "$M_RSS"
fi
echo
echo "writer: $(fmt_ratio "$w_tar" "$w_sk")x the tarfile re-creation${w_wds:+, $(fmt_ratio "$w_wds" "$w_sk")x webdataset.ShardWriter};" \
     "random access: $(fmt_ratio "$r_tar" "$r_sk")x the wids-style reader${r_wids:+, $(fmt_ratio "$r_wids" "$r_sk")x wids};" \
     "sequential: $(fmt_ratio "$s_tar" "$s_sk")x tarfile${s_wds:+, $(fmt_ratio "$s_wds" "$s_sk")x webdataset}"
