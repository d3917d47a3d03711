#!/usr/bin/env bash
# bench_upload_scale.sh - how upload's client CPU grows with the number of
# objects: N small files (64 bytes each, so the work is per object, not per
# byte) uploaded by shardkit and by `aws s3 sync` to the same local
# moto_server (SK_S3_SERVER=rgw: a RADOS gateway), then copied bucket to
# bucket by each, for N in BENCH_SCALE (default "2000 8000").  Prints client
# CPU seconds (user+sys) per object and objects/s; the per-object CPU of
# shardkit should stay flat as N grows (a last line says how flat, and
# shardkit's objects/s against the aws cli's).  One run per row.
# Env: SK_BIN (or BUILD), BENCH_SCALE (the issue's sizes: "4000 32000 128000"),
# BENCH_LOCK (a file: each timed row runs under `flock -x` on it, and only the
# rows: making the files and starting the server do not hold it, so on a
# shared machine a long series never keeps others waiting for more than one
# row), BENCH_CLIENTS (default "shardkit aws"; "shardkit" alone leaves out
# the aws cli's rows, which at 128,000 objects take ten minutes each;
# BENCH_UPLOAD_CLIENTS and BENCH_COPY_CLIENTS pick each phase's alone, and
# the copies read shardkit's upload, so it stays among the uploads),
# SK_S3_SERVER (moto, the default, or rgw).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SK_BIN=${SK_BIN:-$ROOT/${BUILD:-build}/shardkit}
SCALE=${BENCH_SCALE:-2000 8000}
CLIENTS=${BENCH_CLIENTS:-shardkit aws}
UPLOAD_CLIENTS=${BENCH_UPLOAD_CLIENTS:-$CLIENTS}
COPY_CLIENTS=${BENCH_COPY_CLIENTS:-$CLIENTS}
export SK_ROOT=$ROOT
. "$ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
moto_start
AWS=$(command -v aws)

measure() { # prints "wall cpu load", load: the 1-minute load average as the run starts
    set -- sh -c 'cut -d" " -f1 /proc/loadavg >"$0"; exec "$@"' "$t/load" \
        /usr/bin/time -f '%e %U %S' -o "$t/time" "$@"
    [ -z "${BENCH_LOCK:-}" ] || set -- flock -x "$BENCH_LOCK" "$@" # the wait is not timed
    "$@" >/dev/null 2>"$t/err" || { cat "$t/err" >&2; exit 1; }
    awk -v l="$(cat "$t/load")" '{printf "%.3f %.3f %s\n", $1, $2 + $3, l}' "$t/time"
}

# A first upload, untimed: a fresh server creates its pools and indexes on
# the first writes (a gateway's first 1,000 objects took 2.6 s against 1.1 s
# after), which would be charged to whichever row came first.
mkdir -p "$t/warm"
for i in $(seq 1 500); do printf '%064d' "$i" >"$t/warm/f$i.bin"; done
"$AWS" --endpoint-url "$MOTO_URL" s3 mb s3://warmup >/dev/null
"$SK_BIN" upload --endpoint-url "$MOTO_URL" "$t/warm" s3://warmup/p/ >/dev/null

echo "load before: $(uptime)"
echo "| objects | client | wall s | CPU s | CPU µs/object | objects/s | load |"
echo "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"
# row N LABEL SRC DST_BUCKET CLIENT: one transfer of N objects from SRC (a
# directory or an s3:// prefix) into a fresh bucket, timed, as a table row
row() {
    local n=$1 label=$2 src=$3 bucket=$4 client=$5 w c l
    "$AWS" --endpoint-url "$MOTO_URL" s3 mb "s3://$bucket" >/dev/null
    if [ "$client" = shardkit ]; then
        read -r w c l < <(measure "$SK_BIN" upload --endpoint-url "$MOTO_URL" "$src" "s3://$bucket/p/")
    else
        read -r w c l < <(measure "$AWS" --endpoint-url "$MOTO_URL" s3 sync "$src" "s3://$bucket/p/")
    fi
    awk -v n="$n" -v cl="$label" -v w="$w" -v c="$c" -v l="$l" \
        'BEGIN {printf "| %d | %s | %.2f | %.2f | %.0f | %.0f | %s |\n", n, cl, w, c, c / n * 1e6, n / w, l}'
    echo "$n|$label|$w|$c" >>"$t/rows"
}
for n in $SCALE; do
    mkdir -p "$t/d$n"
    for i in $(seq 1 "$n"); do printf '%064d' "$i" >"$t/d$n/f$i.bin"; done
    for client in $UPLOAD_CLIENTS; do row "$n" "$client" "$t/d$n" "b$n$client" "$client"; done
    # bucket to bucket on the same endpoint: server-side copies, so the
    # client's cost is the listing, the requests and their bookkeeping
    for client in $COPY_CLIENTS; do row "$n" "$client copy" "s3://b${n}shardkit/p/" "c$n$client" "$client"; done
done
# The issue's two targets, from the rows above: shardkit's CPU per object
# flat (largest / smallest across the sizes, target <= 1.25) and its
# objects/s against the aws cli's at each size (target >= 2).
echo
awk -F'|' '
    { w[$1, $2] = $3; c[$1, $2] = $4 / $1; if (!($1 in seen)) { seen[$1] = 1; ns[++k] = $1 } }
    END {
        for (m = 0; m < 2; m++) {
            sk = m ? "shardkit copy" : "shardkit"; aw = m ? "aws copy" : "aws"
            lo = hi = c[ns[1], sk]; line = ""
            for (i = 1; i <= k; i++) {
                v = c[ns[i], sk]; if (v < lo) lo = v; if (v > hi) hi = v
                if ((ns[i], aw) in w) line = line sprintf(" %d: %.2fx", ns[i], w[ns[i], aw] / w[ns[i], sk])
            }
            printf "%s: CPU per object largest / smallest %.2f (target <= 1.25); objects/s vs %s:%s (target >= 2)\n",
                sk, hi / lo, aw, line
        }
    }' "$t/rows"
