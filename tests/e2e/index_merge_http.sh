#!/usr/bin/env bash
# index_merge_http.sh - `index merge` reads the manifests of parallel runs
# (and the indexes they name) published on a web server (nginx): the
# merged manifest, written locally, names the shards by their URLs, with
# the ordinals, totals and key ranges of the merge of the local copies,
# and `get` reads a sample through it.  A manifest on the server that
# names a shard or an index outside its own directory ("../", another
# host, an absolute path) is refused naming the manifest and the name,
# and nothing is written; a merged manifest is never written to
# http(s):// (read only, exit 2).
set -euo pipefail
. "$SK_ROOT/tests/helpers/nginx.sh"
http_test_begin

"$SK_TOOLS/mkcorpus" "$t/c" --samples 60 >/dev/null
mkdir -p "$t/www" "$t/out" "$t/local"
for p in 0 1; do
    "$SK_BIN" pack "$t/c" -o "$t/www/ds/train-{part}-%03d.tar" --part $p/2 --max-count 20 -q
done
nginx_start "$t/www"
U=$NGINX_URL

echo "== the parts' manifests on the server merge as the local copies do"
sk index merge "$U/ds/manifest-0.json" "$U/ds/manifest-1.json" -o "$t/out/all.json" ||
    fail "index merge of manifests on a web server failed"
sk index merge "$t/www/ds/manifest-0.json" "$t/www/ds/manifest-1.json" -o "$t/local/all.json"
python3 - "$t/out/all.json" "$t/local/all.json" "$U" <<'PY' || fail "the merged manifest differs"
import json, os, sys
h, l, u = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
hs, ls = h["shards"], l["shards"]
assert [s["url"] for s in hs] == [u + "/ds/" + os.path.basename(s["url"]) for s in ls], hs
assert [s["index"] for s in hs] == [s["url"] + ".idx" for s in hs], hs
for k in ("first_ordinal", "samples", "bytes", "crc32c"):
    assert [s.get(k) for s in hs] == [s.get(k) for s in ls], k
assert h["totals"] == l["totals"] and h["extensions"] == l["extensions"]
PY
grep -q 'GET /ds/manifest-1.json ' "$NGINX_DIR/access.log" || fail "no GET of a manifest reached nginx"
grep -q 'GET /ds/train-1-000.tar.idx ' "$NGINX_DIR/access.log" || fail "the keys were not read from the indexes over HTTP"
sk get "$t/local/all.json" '#41' --tar -o "$t/l41.tar"
sk get "$t/out/all.json" '#41' --tar -o "$t/h41.tar" || fail "get through the merged manifest failed"
cmp -s "$t/l41.tar" "$t/h41.tar" || fail "get through the merged manifest gave other bytes"

echo "== a manifest on the server that names what lies outside its directory is refused"
mkdir -p "$t/www/bad"
python3 - "$t/www/ds/manifest-0.json" "$t/www/bad" "$NGINX_PORT" <<'PY'
import json, sys
src, out, port = sys.argv[1:]
for name, field, value in [
        ("up", "url", "../ds/train-0-000.tar"),
        ("host", "url", "http://127.0.0.2:%s/ds/train-0-000.tar" % port),
        ("root", "url", "/ds/train-0-000.tar"),
        ("index", "index", "../ds/train-0-000.tar.idx")]:
    m = json.load(open(src))
    m["shards"][0][field] = value
    json.dump(m, open("%s/%s.json" % (out, name), "w"))
PY
for name in up host root index; do
    case $name in
    up) bad="'../ds/train-0-000.tar' is not a safe relative name" ;;
    host) bad="names 'http://127.0.0.2:$NGINX_PORT/ds/train-0-000.tar', outside the manifest's own directory" ;;
    root) bad="names '/ds/train-0-000.tar', outside the manifest's own directory" ;;
    index) bad="'../ds/train-0-000.tar.idx' is not a safe relative name" ;;
    esac
    rc=0
    sk index merge "$U/bad/$name.json" "$U/ds/manifest-1.json" -o "$t/out/$name.json" 2>"$t/err" || rc=$?
    [ $rc = 1 ] || fail "$name: exit $rc ($(cat "$t/err"))"
    grep -qF "$U/bad/$name.json: " "$t/err" && grep -qF "$bad" "$t/err" ||
        fail "$name: the message names neither the manifest nor the name: $(cat "$t/err")"
    [ ! -e "$t/out/$name.json" ] || fail "$name: a merged manifest was written"
done
grep -q 'GET /ds/train-0-000.tar ' "$NGINX_DIR/access.log" && fail "a hostile name was fetched"

echo "== the merged manifest is not written to a web server"
rc=0
sk index merge "$U/ds/manifest-0.json" "$U/ds/manifest-1.json" -o "$U/ds/all.json" 2>"$t/err" || rc=$?
[ $rc = 2 ] && grep -q "read only" "$t/err" || fail "-o http://: exit $rc ($(cat "$t/err"))"
echo "index merge over HTTP ok"
