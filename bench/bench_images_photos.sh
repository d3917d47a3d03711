#!/usr/bin/env bash
# bench_images_photos.sh - resizing photo-sized JPEGs while packing, the
# issue's anchor: BENCH_PHOTOS (default 1000) JPEGs of 640x480 to 1600x1200
# (made once with Pillow: smooth gradients and noise, quality 90), each with
# a .json, packed with `--image-size 256 --resize-mode keep_ratio`, against
# img2dataset's core in one process (OpenCV decode, INTER_AREA, imencode
# q95) and against Pillow with draft() (bench/img2dataset_core.py).  Wall,
# CPU, images/s, peak RSS and the speed ratio.  Env: BENCH_PHOTOS,
# BENCH_RUNS, BENCH_DIR.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
N=${BENCH_PHOTOS:-1000}
PY=/usr/bin/python3
$PY -c 'import cv2, PIL' 2>/dev/null || bench_die "python3-opencv and python3-pil are needed"
src=$BENCH_DIR/photos-$N
make_photos "$src" "$N" json
warm_cache "$src"
echo "| command | wall s | CPU s | images/s | peak RSS MiB | speed × OpenCV |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
measure "opencv" "$PY" "$SK_ROOT/bench/img2dataset_core.py" opencv "$src" "@OUT@/out.tar" 256
cv=$M_WALL
printf '| img2dataset core (OpenCV, one process) | %.2f | %.2f | %.0f | %.0f | 1.00 |\n' "$M_WALL" "$M_CPU" \
    "$(awk -v n="$N" -v w="$M_WALL" 'BEGIN {print n / w}')" "$M_RSS"
measure "pil-draft" "$PY" "$SK_ROOT/bench/img2dataset_core.py" pil "$src" "@OUT@/out.tar" 256
printf '| Pillow with draft() | %.2f | %.2f | %.0f | %.0f | %.2f |\n' "$M_WALL" "$M_CPU" \
    "$(awk -v n="$N" -v w="$M_WALL" 'BEGIN {print n / w}')" "$M_RSS" "$(awk -v a="$cv" -v b="$M_WALL" 'BEGIN {print a / b}')"
for j in 1 2; do
    measure "shardkit-j$j" "$SK_BIN" pack "$src" -o "@OUT@/s-%04d.tar" --image-size 256 --resize-mode keep_ratio -j "$j" -q
    printf '| shardkit pack -j %d | %.2f | %.2f | %.0f | %.0f | %.2f |\n' "$j" "$M_WALL" "$M_CPU" \
        "$(awk -v n="$N" -v w="$M_WALL" 'BEGIN {print n / w}')" "$M_RSS" "$(awk -v a="$cv" -v b="$M_WALL" 'BEGIN {print a / b}')"
done
echo
echo "$(nproc) cores; $N photos of 640x480 to 1600x1200 ($(du -sh "$src" | cut -f1)); medians of $BENCH_RUNS runs"
