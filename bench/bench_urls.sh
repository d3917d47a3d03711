#!/usr/bin/env bash
# bench_urls.sh - pack --from-urls against img2dataset's downloader and
# resizer reproduced in Python (bench/urls_py.py: a urllib thread pool
# feeding OpenCV decode, INTER_AREA resize, imencode q95), both fetching
# BENCH_URL_PHOTOS (default 300) photos of 640x480 to 1600x1200 from nginx
# on 127.0.0.1; and the same resize from local disk (pack DIR), to show
# what fetching adds.  Then the same photos through a proxy that holds
# every request BENCH_URL_LATENCY_MS (default 50; 0: not run) on its way
# to nginx (bench/latency_proxy.py, a TCP proxy), as a WAN would: both
# clients at concurrency C, and shardkit at 1 to show what the latency
# costs when nothing hides it.  And the same photos over https (a second
# nginx with a certificate made for the run; BENCH_URL_TLS=0: not run), as
# nearly every URL of a real list is: both clients trust the machine's CA
# bundle with the run's certificate added (SSL_CERT_FILE), so each loads
# what it would load on a real machine.  Cases run interleaved (BENCH_RUNS rounds,
# default 3); medians of wall, CPU (the client process: nginx's and the
# proxy's are not counted), images/s and images per CPU-second.  Env:
# BENCH_URL_PHOTOS, BENCH_RUNS, BENCH_DIR, BENCH_URL_CONCURRENCY (default
# 64), BENCH_URL_LATENCY_MS, BENCH_URL_TLS.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/nginx.sh"
N=${BENCH_URL_PHOTOS:-300}
C=${BENCH_URL_CONCURRENCY:-64}
LAT=${BENCH_URL_LATENCY_MS:-50}
TLS=${BENCH_URL_TLS:-1}
PY=/usr/bin/python3
[ -x "$NGINX_BIN" ] || bench_die "nginx is needed (nginx-light)"
$PY -c 'import cv2, PIL, numpy' 2>/dev/null || bench_die "python3-opencv, python3-pil and python3-numpy are needed"
src=$BENCH_DIR/urlphotos-$N
make_photos "$src" "$N"
warm_cache "$src"
# room for every client connection (nginx's default 64 counts its listening
# socket too: at --concurrency 64 a few requests got an empty reply)
NGINX_CONNECTIONS=$((2 * C + 16)) NGINX_EXTRA='keepalive_requests 100000;' nginx_start "$src" ||
    bench_die "nginx did not start"
proxy_pid= http_dir=$NGINX_DIR tls_dir=
stop_all() {
    [ -n "$proxy_pid" ] && kill "$proxy_pid" 2>/dev/null
    [ -n "$tls_dir" ] && NGINX_DIR=$tls_dir nginx_stop
    NGINX_DIR=$http_dir nginx_stop
}
trap stop_all EXIT
(cd "$src" && find p -name '*.jpg' | sort) | sed "s|^|$NGINX_URL/|" >"$BENCH_DIR/urls-$N.txt"
L=$BENCH_DIR/urls-$N.txt
if [ "$TLS" != 0 ]; then
    http_url=$NGINX_URL
    NGINX_TLS=1 NGINX_CONNECTIONS=$((2 * C + 16)) NGINX_EXTRA='keepalive_requests 100000;' nginx_start "$src" ||
        bench_die "nginx (https) did not start"
    tls_dir=$NGINX_DIR
    sed "s|^$http_url/|$NGINX_URL/|" "$L" >"$BENCH_DIR/urls-$N-tls.txt"
    LT=$BENCH_DIR/urls-$N-tls.txt
    cat /etc/ssl/certs/ca-certificates.crt "$NGINX_CA" >"$BENCH_DIR/urls-ca.pem" 2>/dev/null ||
        cp "$NGINX_CA" "$BENCH_DIR/urls-ca.pem"
    # shardkit takes CURL_CA_BUNDLE before SSL_CERT_FILE: one file for both
    tls_env=(env -u CURL_CA_BUNDLE -u SSL_CERT_DIR "SSL_CERT_FILE=$BENCH_DIR/urls-ca.pem")
    NGINX_URL=$http_url
fi
if [ "$LAT" != 0 ]; then
    # what a client sends reaches nginx LAT ms later; answers are not held
    coproc PROXY { exec "$PY" "$SK_ROOT/bench/latency_proxy.py" "$NGINX_PORT" "$LAT"; }
    proxy_pid=$PROXY_PID
    read -r -t 10 pport <&"${PROXY[0]}" || bench_die "the latency proxy did not start"
    sed "s|^$NGINX_URL/|http://127.0.0.1:$pport/|" "$L" >"$BENCH_DIR/urls-$N-lat.txt"
    LL=$BENCH_DIR/urls-$N-lat.txt
fi
rounds=$BENCH_RUNS

run_case() {
    case $1 in
    py-256) measure "$1" "$PY" "$SK_ROOT/bench/urls_py.py" "$L" "@OUT@/out.tar" 256 "$C" ;;
    py-orig) measure "$1" "$PY" "$SK_ROOT/bench/urls_py.py" "$L" "@OUT@/out.tar" 0 "$C" ;;
    sk-256) measure "$1" "$SK_BIN" pack --from-urls "$L" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    sk-orig) measure "$1" "$SK_BIN" pack --from-urls "$L" -o "@OUT@/%05d.tar" \
                --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    py-256-lat) measure "$1" "$PY" "$SK_ROOT/bench/urls_py.py" "$LL" "@OUT@/out.tar" 256 "$C" ;;
    sk-256-lat) measure "$1" "$SK_BIN" pack --from-urls "$LL" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    sk-256-lat-c1) measure "$1" "$SK_BIN" pack --from-urls "$LL" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio --concurrency 1 --per-host 1 --allow-private-addresses -q ;;
    sk-orig-lat) measure "$1" "$SK_BIN" pack --from-urls "$LL" -o "@OUT@/%05d.tar" \
                --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    py-256-tls) measure "$1" "${tls_env[@]}" "$PY" "$SK_ROOT/bench/urls_py.py" "$LT" "@OUT@/out.tar" 256 "$C" ;;
    sk-256-tls) measure "$1" "${tls_env[@]}" "$SK_BIN" pack --from-urls "$LT" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    py-orig-tls) measure "$1" "${tls_env[@]}" "$PY" "$SK_ROOT/bench/urls_py.py" "$LT" "@OUT@/out.tar" 0 "$C" ;;
    sk-orig-tls) measure "$1" "${tls_env[@]}" "$SK_BIN" pack --from-urls "$LT" -o "@OUT@/%05d.tar" \
                --concurrency "$C" --per-host "$C" --allow-private-addresses -q ;;
    sk-local-256) measure "$1" "$SK_BIN" pack "$src" -o "@OUT@/%05d.tar" --image-size 256 \
                --resize-mode keep_ratio -q ;;
    esac
}
cases=(py-256 sk-256 sk-local-256 py-orig sk-orig)
[ "$LAT" != 0 ] && cases+=(py-256-lat sk-256-lat sk-256-lat-c1 sk-orig-lat)
[ "$TLS" != 0 ] && cases+=(py-256-tls sk-256-tls py-orig-tls sk-orig-tls)
interleave "$rounds" "${cases[@]}" || bench_die "a case failed"
echo "| command | wall s | CPU s | images/s | images per CPU-s | × Python per CPU-s |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
row() { # label case anchor
    local w=${I_WALL[$2]} c=${I_CPU[$2]} a=${I_CPU[$3]:-}
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
if [ "$TLS" != 0 ]; then
    echo
    echo "Over https (the same photos from an nginx with TLS; HTTP/1.1):"
    echo
    echo "| command | wall s | CPU s | images/s | images per CPU-s | × Python per CPU-s |"
    echo "| --- | ---: | ---: | ---: | ---: | ---: |"
    row "Python: urllib pool + OpenCV resize 256, https" py-256-tls py-256-tls
    row "pack --from-urls --image-size 256, https" sk-256-tls py-256-tls
    row "Python: urllib pool + OpenCV decode (no resize), https" py-orig-tls py-orig-tls
    row "pack --from-urls (no resize), https" sk-orig-tls py-orig-tls
fi
[ "$LAT" = 0 ] && exit 0
echo
echo "Through a proxy adding $LAT ms to every request:"
echo
echo "| command | wall s | CPU s | images/s | images per CPU-s | × Python per CPU-s | wall × without latency |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
lrow() { # label case anchor case-without-latency
    local w=${I_WALL[$2]} c=${I_CPU[$2]} a=${I_CPU[$3]:-}
    printf '| %s | %.2f | %.2f | %s | %s | %s | %s |\n' "$1" "$w" "$c" "$(fmt_rate "$N" "$w")" \
        "$(fmt_rate "$N" "$c")" "$(fmt_ratio "$a" "$c")" "$(fmt_ratio "$w" "${I_WALL[$4]}")"
}
lrow "Python: urllib pool ($C threads) + OpenCV resize 256" py-256-lat py-256-lat py-256
lrow "pack --from-urls --image-size 256 --concurrency $C" sk-256-lat py-256-lat sk-256
lrow "pack --from-urls --image-size 256 --concurrency 1" sk-256-lat-c1 py-256-lat sk-256
lrow "pack --from-urls (no resize) --concurrency $C" sk-orig-lat none sk-orig
echo
echo "the proxy (asyncio, one thread) holds every request $LAT ms on its way to nginx; a new connection"
echo "costs no extra round trip here (it would over a WAN: pack keeps its connections, urllib does not)"
