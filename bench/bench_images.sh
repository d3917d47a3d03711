#!/usr/bin/env bash
# bench_images.sh - resizing JPEGs while packing: `shardkit pack
# --image-size S --resize-mode keep_ratio` with one and with every core,
# against Pillow doing the same job in one Python process
# (bench/img2dataset_core.py pil-full: an img2dataset worker's work per image), on the
# benchmark corpus (real JPEGs of about 340x340 pixels).  S = 256 (no DCT
# scaling possible) and 128 (decoded at 1/2).  Env: BENCH_IMAGE_SAMPLES
# (default 5000), BENCH_RUNS, BENCH_DIR.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${BENCH_IMAGE_SAMPLES:-5000}
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || bench_die "Pillow (python3-pil) is not installed"
corpus=$BENCH_DIR/corpus-$N
make_corpus "$corpus" "$N"
warm_cache "$corpus"
echo "| size | command | wall s | CPU s | images/s | speed × Pillow |"
echo "| ---: | --- | ---: | ---: | ---: | ---: |"
for S in 256 128; do
    measure "pillow" "$PY" "$SK_ROOT/bench/img2dataset_core.py" pil-full "$corpus" "@OUT@/out.tar" "$S"
    pil_wall=$M_WALL pil_cpu=$M_CPU
    printf '| %d | Pillow, one process | %.2f | %.2f | %.0f | 1.00 |\n' "$S" "$M_WALL" "$M_CPU" \
        "$(awk -v n="$N" -v w="$M_WALL" 'BEGIN {print n / w}')"
    for j in 1 2; do
        measure "shardkit -j $j" "$SK_BIN" pack "$corpus" -o "@OUT@/s-%04d.tar" --image-size "$S" \
            --resize-mode keep_ratio -j "$j" -q
        printf '| %d | shardkit pack -j %d | %.2f | %.2f | %.0f | %.2f |\n' "$S" "$j" "$M_WALL" "$M_CPU" \
            "$(awk -v n="$N" -v w="$M_WALL" 'BEGIN {print n / w}')" \
            "$(awk -v a="$pil_wall" -v b="$M_WALL" 'BEGIN {print a / b}')"
    done
done
echo
echo "$(nproc) cores; $N samples ($(du -sh "$corpus" | cut -f1)); medians of $BENCH_RUNS runs"
