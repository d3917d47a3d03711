#!/usr/bin/env bash
# shard_http.sh - `shard` reads its inputs through the store interface, so
# shards published on a web server (nginx) reshard to the very bytes the
# local files give: through the manifest's URL and a brace pattern of
# URLs; --num-shards (its count from the inputs' indexes, fetched over
# HTTP) and --shuffle alike.  A broken server's answer (a body shorter
# than its Content-Length, a missing shard) fails the run naming the URL,
# and leaves no shard and no manifest.
set -euo pipefail
. "$SK_ROOT/tests/helpers/nginx.sh"
http_test_begin
same() { # $1 $2: two shard directories hold the same files, byte for byte
    (cd "$1" && ls) >"$t/l1"
    (cd "$2" && ls) >"$t/l2"
    cmp -s "$t/l1" "$t/l2" || fail "$3: other files ($(tr '\n' ' ' <"$t/l2") vs $(tr '\n' ' ' <"$t/l1"))"
    for f in "$1"/*; do
        cmp -s "$f" "$2/$(basename "$f")" || fail "$3: $(basename "$f") differs"
    done
}

"$SK_TOOLS/mkcorpus" "$t/c" --samples 90 >/dev/null
mkdir -p "$t/www"
"$SK_BIN" pack "$t/c" -o "$t/www/ds/shard-%03d.tar" --max-count 30 -q
nginx_start "$t/www"
U=$NGINX_URL

echo "== a manifest URL and a brace pattern of URLs give the local bytes"
sk shard "$t/www/ds/manifest.json" -o "$t/local/s-%02d.tar" --max-count 40 -q
sk shard "$U/ds/manifest.json" -o "$t/h1/s-%02d.tar" --max-count 40 -q || fail "shard of a manifest URL failed"
same "$t/local" "$t/h1" "shard of the manifest URL"
sk shard "$U/ds/shard-{000..002}.tar" -o "$t/h2/s-%02d.tar" --max-count 40 -q ||
    fail "shard of a brace pattern of URLs failed"
same "$t/local" "$t/h2" "shard of a brace pattern of URLs"
grep -q 'GET /ds/shard-002.tar ' "$NGINX_DIR/access.log" || fail "no GET of a shard reached nginx"

echo "== --num-shards (counted from the indexes over HTTP) and --shuffle"
sk shard "$t/www/ds/manifest.json" -o "$t/ln/s-%02d.tar" --num-shards 4 -q
sk shard "$U/ds/manifest.json" -o "$t/hn/s-%02d.tar" --num-shards 4 -q || fail "--num-shards over HTTP failed"
same "$t/ln" "$t/hn" "--num-shards over HTTP"
grep -q 'GET /ds/shard-000.tar.idx ' "$NGINX_DIR/access.log" || fail "--num-shards did not read the index over HTTP"
sk shard "$t/www/ds/manifest.json" -o "$t/ls/s-%02d.tar" --shuffle --seed 7 --max-count 25 -q
sk shard "$U/ds/manifest.json" -o "$t/hs/s-%02d.tar" --shuffle --seed 7 --max-count 25 -q ||
    fail "--shuffle over HTTP failed"
same "$t/ls" "$t/hs" "--shuffle over HTTP"

refused() { # $1 what, $2 pattern the message must hold, $3 the output dir, then the command
    local what=$1 pat=$2 out=$3
    shift 3
    local t0=$SECONDS
    if "$@" >/dev/null 2>"$t/err"; then fail "$what: resharded fine"; fi
    grep -q -- "$pat" "$t/err" || fail "$what: the error does not say '$pat': $(cat "$t/err")"
    [ $((SECONDS - t0)) -lt 100 ] || fail "$what: took $((SECONDS - t0)) s"
    [ -z "$(ls -A "$out" 2>/dev/null)" ] || fail "$what: left $(ls -A "$out" | tr '\n' ' ')"
}
echo "== a broken server fails the run, naming the URL, and leaves nothing"
python3 "$SK_ROOT/tests/helpers/badweb.py" "$t/bad.port" "$t/www/ds/shard-000.tar" &
pids+=($!)
for _ in $(seq 100); do [ -s "$t/bad.port" ] && break; sleep 0.1; done
B=http://127.0.0.1:$(cat "$t/bad.port")
export AWS_MAX_ATTEMPTS=2
refused "a body shorter than its Content-Length" "$B/short.tar" "$t/b1" \
    sk shard "$B/short.tar" -o "$t/b1/s-%02d.tar" -q
refused "a missing shard" "$U/ds/nope.tar.*404" "$t/b2" \
    sk shard "$U/ds/shard-000.tar" "$U/ds/nope.tar" -o "$t/b2/s-%02d.tar" -q
echo ok
