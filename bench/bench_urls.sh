#!/usr/bin/env bash
# bench_urls.sh - pack --from-urls against img2dataset's downloader and
# resizer reproduced in Python (bench/urls_py.py: a urllib thread pool
# feeding OpenCV decode, INTER_AREA resize, imencode q95), both fetching
# BENCH_URL_PHOTOS (default 300) photos of 640x480 to 1600x1200 from nginx
# on 127.0.0.1; and the same resize from local disk (pack DIR), to show
# what fetching adds.  Cases run interleaved (BENCH_RUNS rounds, default
# 3); medians of wall, CPU (the client process: nginx's is not counted for
# either), images/s and images per CPU-second.  Env: BENCH_URL_PHOTOS,
# BENCH_RUNS, BENCH_DIR, BENCH_URL_CONCURRENCY (default 64).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/nginx.sh"
N=${BENCH_URL_PHOTOS:-300}
C=${BENCH_URL_CONCURRENCY:-64}
PY=/usr/bin/python3
[ -x "$NGINX_BIN" ] || bench_die "nginx is needed (nginx-light)"
$PY -c 'import cv2, PIL, numpy' 2>/dev/null || bench_die "python3-opencv, python3-pil and python3-numpy are needed"
src=$BENCH_DIR/urlphotos-$N
if [ ! -f "$src.done" ]; then
    rm -rf "$src" && mkdir -p "$src/p"
    # the photo generator of bench_images_photos.sh (gradients and noise, q90)
    $PY - "$src/p" "$N" <<'PY'
import os, random, sys
import numpy as np
from PIL import Image
d, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(0)
sizes = [(640, 480), (800, 600), (1024, 768), (1280, 960), (1600, 1200), (1200, 1600), (960, 1280)]
for i in range(n):
    w, h = sizes[i % len(sizes)]
    x = np.linspace(0, 1, w)[None, :]
    y = np.linspace(0, 1, h)[:, None]
    a = rng.random() * 6
    img = np.stack([np.sin(x * 7 + a) * 0.5 + 0.5 + 0 * y, np.cos(y * 5 + a) * 0.5 + 0.5 + 0 * x,
                    (x * y)], axis=2) * 200
    img += np.random.default_rng(i).normal(0, 12, (h, w, 3))
    Image.fromarray(img.clip(0, 255).astype(np.uint8)).save(f"{d}/{i:05d}.jpg", quality=90)
PY
    touch "$src.done"
fi
warm_cache "$src"
NGINX_EXTRA='keepalive_requests 100000;' nginx_start "$src" || bench_die "nginx did not start"
trap nginx_stop EXIT
(cd "$src" && find p -name '*.jpg' | sort) | sed "s|^|$NGINX_URL/|" >"$BENCH_DIR/urls-$N.txt"
L=$BENCH_DIR/urls-$N.txt
rounds=$BENCH_RUNS

run_case() {
    case $1 in
    py-256) measure "$1" "$PY" "$SK_ROOT/bench/urls_py.py" "$L" "@OUT@/out.tar" 256 "$C" ;;
    py-orig) measure "$1" "$PY" "$SK_ROOT/bench/urls_py.py" "$L" "@OUT@/out.tar" 0 "$C" ;;
    sk-256) measure "$1" "$SK_BIN" pack --from-urls "$L" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    sk-orig) measure "$1" "$SK_BIN" pack --from-urls "$L" -o "@OUT@/%05d.tar" \
                --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    sk-local-256) measure "$1" "$SK_BIN" pack "$src" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio -q ;;
    esac
}
cases=(py-256 sk-256 sk-local-256 py-orig sk-orig)
interleave "$rounds" "${cases[@]}" || bench_die "a case failed"
echo "| command | wall s | CPU s | images/s | images per CPU-s | × Python per CPU-s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
row() { # label case anchor
    local w=${I_WALL[$2]} c=${I_CPU[$2]} a=${I_CPU[$3]}
    printf '| %s | %.2f | %.2f | %s | %s | %s |\n' "$1" "$w" "$c" "$(fmt_rate "$N" "$w")" \
        "$(fmt_rate "$N" "$c")" "$(fmt_ratio "$a" "$c")"
}
row "Python: urllib pool + OpenCV resize 256" py-256 py-256
row "pack --from-urls --image-size 256" sk-256 py-256
row "pack DIR --image-size 256 (local disk)" sk-local-256 py-256
row "Python: urllib pool + OpenCV decode (no resize)" py-orig py-orig
row "pack --from-urls (no resize)" sk-orig py-orig
echo
echo "$(nproc) cores; $N photos of 640x480 to 1600x1200 ($(du -sh "$src" | cut -f1)) from nginx on 127.0.0.1;"
echo "--concurrency $C (Python: $C threads); medians of $rounds interleaved rounds; load average $(cut -d' ' -f1-3 /proc/loadavg)"
