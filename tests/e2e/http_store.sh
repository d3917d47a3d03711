#!/usr/bin/env bash
# http_store.sh - shards published on a web server (http://) read through
# the HTTP store: nginx serving a packed dataset gives `cat`, `get` and
# `verify` the same answers as the local files, through the manifest's
# URL, a directory URL and a brace pattern of URLs; `stats --read-rate`
# reads every sample and counts the requests nginx logs (one killed mid-way
# leaves nothing in TMPDIR after the next run); a 302 to another host
# is followed (bounded); and what a hostile or broken server does is
# refused with the URL named, within bounded time: a server that ignores
# Range (Python's http.server), a body shorter than its Content-Length,
# one that never ends, a slow drip, a redirect loop or to another scheme,
# a manifest naming "..", an absolute path or another host, and an
# unknown scheme.
set -euo pipefail
. "$(dirname "$0")/lib.sh" # pylib (http_test_begin's exit trap replaces lib.sh's)
export -f pylib
. "$SK_ROOT/tests/helpers/nginx.sh"
http_test_begin
port_of() { # waits for a server's port file
    for _ in $(seq 100); do [ -s "$1" ] && { cat "$1"; return; }; sleep 0.1; done
    fail "server did not start ($1)"
}
sk() { timeout 60 "$SK_BIN" "$@"; }

"$SK_TOOLS/mkcorpus" "$t/c" --samples 90 >/dev/null
mkdir -p "$t/www"
"$SK_BIN" pack "$t/c" -o "$t/www/ds/shard-%03d.tar" --max-count 30 >/dev/null 2>&1
echo "secret" >"$t/www/secret.tar"
# the moved/ path answers 302 to another host name (localhost, not
# 127.0.0.1); loop/ redirects to itself; ftp/ to another scheme
NGINX_EXTRA='location /moved/ { rewrite ^/moved/(.*)$ http://localhost:$server_port/ds/$1 redirect; }
        location /loop/ { rewrite ^/loop/(.*)$ /loop/$1 redirect; }
        location /ftp/ { return 302 ftp://127.0.0.1/x.tar; }
        location /slow/ { alias '"$t"'/www/ds/; limit_rate 20k; }'
nginx_start "$t/www"
U=$NGINX_URL
"$SK_BIN" cat "$t/www/ds/manifest.json" >"$t/local.tar"
key=$("$SK_BIN" cat --keys "$t/www/ds/manifest.json" | sed -n 45p)

echo "== cat: a manifest URL, a directory URL, a brace pattern of URLs"
sk cat "$U/ds/manifest.json" | cmp -s - "$t/local.tar" || fail "cat of the manifest URL differs from local"
sk cat "$U/ds/" | cmp -s - "$t/local.tar" || fail "cat of the directory URL differs from local"
sk cat "$U/ds/shard-{000..002}.tar" | cmp -s - "$t/local.tar" || fail "cat of a brace pattern of URLs differs"
[ "$(sk cat --keys --shuffle-shards --shuffle 20 --seed 3 "$U/ds/manifest.json" | sort | uniq | wc -l)" = 90 ] ||
    fail "a shuffled read over HTTP did not give every key once"
grep -q 'GET /ds/shard-001.tar' "$NGINX_DIR/access.log" || fail "no GET of a shard reached nginx"
grep -q '" 206 ' "$NGINX_DIR/access.log" || fail "nginx served no ranged GET"

echo "== the Python Reader over HTTP"
SHARDKIT_LIB=$(dirname "$SK_BIN")/libshardkit.so PYTHONPATH=$SK_ROOT/python timeout 60 bash -c 'pylib "$@"' pylib - "$U" "$t/www/ds/manifest.json" <<'PY' ||
import sys, shardkit
url, local = sys.argv[1], sys.argv[2]
def keys(u):
    with shardkit.Reader(u) as r:
        return [s["__key__"] for s in r]
k = keys(url + "/ds/manifest.json")
assert len(k) == 90 and k == keys(local), "the Python Reader over HTTP gave other samples"
PY
    fail "the Python Reader over HTTP"

echo "== get and verify over HTTP"
"$SK_BIN" get --tar "$t/www/ds/manifest.json" "$key" >"$t/get.local"
sk get --tar "$U/ds/manifest.json" "$key" >"$t/get.http" || fail "get over HTTP failed"
cmp -s "$t/get.local" "$t/get.http" || fail "get over HTTP differs from local"
sk get --tar "$U/ds/manifest.json" '#61' >"$t/ord.http" && "$SK_BIN" get --tar "$t/www/ds/manifest.json" '#61' | cmp -s - "$t/ord.http" ||
    fail "get by ordinal over HTTP differs"
sk verify "$U/ds/manifest.json" >"$t/verify.out" 2>&1 || fail "verify over HTTP: $(cat "$t/verify.out")"

echo "== stats --read-rate over HTTP: every sample, and the requests nginx saw"
n0=$(wc -l <"$NGINX_DIR/access.log")
sk stats --read-rate --shards 2 --json "$U/ds/manifest.json" >"$t/rate.json" 2>"$t/rate.err" ||
    fail "stats --read-rate over HTTP: $(cat "$t/rate.err")"
python3 - "$t/rate.json" $(($(wc -l <"$NGINX_DIR/access.log") - n0)) <<'PY' || fail "--read-rate over HTTP"
import json, sys
d, logged = json.load(open(sys.argv[1])), int(sys.argv[2])
runs = [d[r] for r in ("no_cache", "cache_fill", "cache_read")]
assert d["shards"] == 2 and all(r["samples"] == 60 for r in runs), d
assert runs[0]["requests"] >= 2 and runs[2]["requests"] <= 2, d  # read back: a HEAD a shard at most
# nginx logged the manifest's GET and every request the three runs counted
assert logged == 1 + sum(r["requests"] for r in runs), (logged, d)
PY

echo "== stats --read-rate killed: its private cache is swept by the next start"
mkdir "$t/tmpd"
TMPDIR=$t/tmpd "$SK_BIN" stats --read-rate --shards 2 "$U/slow/manifest.json" >/dev/null 2>&1 &
rr=$!
pids+=("$rr")
for _ in $(seq 100); do compgen -G "$t/tmpd/shardkit-cache-*" >/dev/null && break; sleep 0.1; done
compgen -G "$t/tmpd/shardkit-cache-*" >/dev/null || fail "stats --read-rate made no private cache in TMPDIR"
kill -9 "$rr"
wait "$rr" 2>/dev/null || true
TMPDIR=$t/tmpd sk stats --read-rate --shards 1 "$U/ds/manifest.json" >/dev/null 2>"$t/rate.err" ||
    fail "stats --read-rate after a killed one: $(cat "$t/rate.err")"
[ -z "$(ls -A "$t/tmpd")" ] || fail "left in TMPDIR after a killed --read-rate and a whole one: $(ls -A "$t/tmpd")"

echo "== a 302 to another host is followed"
sk cat "$U/moved/shard-{000..002}.tar" | cmp -s - "$t/local.tar" || fail "cat through a 302 differs"
grep -q 'GET /moved/shard-000.tar' "$NGINX_DIR/access.log" || fail "no request reached the moved path"

refused() { # $1 what, $2 pattern the message must hold, then the command
    local what=$1 pat=$2
    shift 2
    local t0=$SECONDS
    if "$@" >/dev/null 2>"$t/err"; then fail "$what: read fine"; fi
    grep -q -- "$pat" "$t/err" || fail "$what: the error does not say '$pat': $(cat "$t/err")"
    [ $((SECONDS - t0)) -lt 50 ] || fail "$what: took $((SECONDS - t0)) s"
}
echo "== redirects: bounded, and only to http/https"
refused "a redirect loop" "$U/loop/x.tar" sk cat "$U/loop/x.tar"
refused "a redirect to ftp" "$U/ftp/x.tar" sk cat "$U/ftp/x.tar"

echo "== a server that ignores Range is a clear error, not a whole-file read"
python3 -m http.server --bind 127.0.0.1 0 --directory "$t/www" >"$t/pyhttp.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q 'port' "$t/pyhttp.log" && break; sleep 0.1; done
P=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$t/pyhttp.log" | head -1)
[ -n "$P" ] || fail "http.server did not start"
refused "http.server (no Range)" "http://127.0.0.1:$P/ds/shard-000.tar.*byte ranges" \
    sk cat "http://127.0.0.1:$P/ds/shard-000.tar"
refused "get from http.server" "byte ranges" sk get --tar "http://127.0.0.1:$P/ds/manifest.json" "$key"

echo "== broken and hostile bodies, bounded"
python3 "$SK_ROOT/tests/helpers/badweb.py" "$t/bad.port" "$t/www/ds/shard-000.tar" &
pids+=($!)
B=http://127.0.0.1:$(port_of "$t/bad.port")
export AWS_MAX_ATTEMPTS=2
refused "a body shorter than its Content-Length" "$B/short.tar" sk cat "$B/short.tar"
refused "an endless body" "$B/endless.tar.*more than" sk cat "$B/endless.tar"
refused "an endless manifest" "$B/endless/manifest.json.*at most" sk cat "$B/endless/manifest.json"
refused "a slow drip" "$B/drip.tar" sk cat --read-timeout 2 "$B/drip.tar"
unset AWS_MAX_ATTEMPTS

echo "== a manifest from a web server names only files under its own directory"
for bad in ../secret.tar /etc/passwd http://127.0.0.2/x.tar "$U/secret.tar" shard-000.tar?x=1 %2e%2e/secret.tar; do
    mkdir -p "$t/www/evil"
    sed "0,/\"url\": \"shard-000.tar\"/s||\"url\": \"$(printf %s "$bad" | sed 's/[&|]/\\&/g')\"|" \
        "$t/www/ds/manifest.json" >"$t/www/evil/manifest.json"
    grep -qF "\"url\": \"$bad\"" "$t/www/evil/manifest.json" || fail "test setup: $bad not in the manifest"
    refused "a manifest naming $bad" "$U/evil/manifest.json.*outside\|$U/evil/manifest.json.*\.\." \
        sk cat "$U/evil/manifest.json"
done
! grep -q 'GET /secret.tar' "$NGINX_DIR/access.log" || fail "a shard outside the dataset was fetched"

echo "== errors name the URL; an unknown scheme is refused by name"
refused "a missing file" "$U/ds/nope.tar.*404" sk cat "$U/ds/nope.tar"
refused "an unknown scheme" "gopher://" sk cat "gopher://127.0.0.1/x.tar"
refused "an unknown scheme for get" "gopher://" sk get "gopher://127.0.0.1/x.json" k
refused "index in place on a web server" "$U/ds/shard-000.tar: a web server takes no writes.*give -o" sk index "$U/ds/shard-000.tar"
echo ok
