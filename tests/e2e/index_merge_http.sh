#!/usr/bin/env bash
# index_merge_http.sh - `index merge` reads the manifests of parallel runs
# (and the indexes they name) published on a web server (nginx): the
# merged manifest, written locally, names the shards by their URLs, with
# the ordinals, totals and key ranges of the merge of the local copies,
# and `get` reads a sample through it.  A manifest on the server that
# names a shard or an index outside its own directory ("../", another
# host, an absolute path) is refused naming the manifest and the name,
# and nothing is written; a merged manifest is never written to
# http(s):// (read only, exit 2).  `index` of shards on the server
# writes their indexes, the manifest and wids' JSON (--wids) locally (-o):
# wids.json names them by URL (local shards relatively), with the samples
# and sizes wids reads back; a URL JSON must escape is escaped, a name that
# is not UTF-8 refused; s3:// shards with --wids, any output on the
# server, and two shards whose indexes would be one file, are refused by
# name.
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
echo "== index --wids over shards on the server: their URLs, read as wids reads them"
# wids resolves a relative url against the JSON's own location and keeps an
# absolute one: local shards are named relatively, http(s):// ones by URL
cp "$t/www/ds/train-1-000.tar" "$t/out/local.tar"
sk index -q --wids=$t/out/w.json -o "$t/out/wm.json" "$U/ds/train-0-{000..001}.tar" "$t/out/local.tar" ||
    fail "index --wids of http:// shards failed"
[ -f "$t/out/train-0-000.tar.idx" ] || fail "the index of an http:// shard is not beside the manifest"
PYTHONPATH=${SK_WIDS_PATH:-}${PYTHONPATH:+:$PYTHONPATH} python3 - "$t/out/w.json" "$U" "$t/out" <<'PY' ||
import io, json, re, sys, tarfile, urllib.parse, urllib.request
path, u, out = sys.argv[1:]
w = json.load(open(path))
assert w["__kind__"] == "wids-shard-index-v1" and w["wids_version"] == 1, w
urls = [s["url"] for s in w["shardlist"]]
assert urls == [u + "/ds/train-0-000.tar", u + "/ds/train-0-001.tar", "local.tar"], urls
try:
    import wids  # the real reader, where it imports (PyPI only: SK_WIDS_PATH)
except ImportError:
    wids = None
if wids:
    ds = wids.ShardListDataset(path, transformations=[], localname=lambda x: x)
    assert len(ds) == sum(s["nsamples"] for s in w["shardlist"]) and "__key__" in ds[25]
# what wids' loader does with each entry: the url merged with the JSON's
# directory (absolute ones kept), the bytes fetched, samples split at the
# first dot of the member's base name; nsamples and filesize must agree
for s in w["shardlist"]:
    url = s["url"] if "://" in s["url"] else out + "/" + s["url"]
    data = urllib.request.urlopen(url).read() if "://" in url else open(url, "rb").read()
    keys = {re.match(r"^((?:.*/)?.*?)(\..*)$", m.name).group(1)
            for m in tarfile.open(fileobj=io.BytesIO(data)) if m.isfile()}
    assert (len(keys), len(data)) == (s["nsamples"], s["filesize"]), (s, len(keys), len(data))
print("wids read a sample through it" if wids else "wids not importable: its loader's fields checked")
PY
    fail "the wids index of http:// shards"
sk get "$t/out/wm.json" '#25' --tar -o "$t/g25.tar" && "$SK_BIN" get "$t/www/ds/manifest-0.json" '#25' --tar | cmp -s - "$t/g25.tar" ||
    fail "get through the manifest of http:// shards gave other bytes"

echo "== a SageMaker manifest of http:// shards: SageMaker reads S3, said so"
rc=0
sk index -q --sagemaker-manifest "$t/out/sm.json" -o "$t/out/smm.json" "$U/ds/train-0-000.tar" 2>"$t/err" || rc=$?
[ "$rc" = 2 ] && grep -qF "the shards are not in S3 (local files or http(s):// URLs)" "$t/err" ||
    fail "sagemaker manifest of http shards: exit $rc, $(cat "$t/err")"
[ ! -e "$t/out/sm.json" ] || fail "a refused SageMaker manifest was written"

echo "== a shard URL that JSON must escape is escaped; a name not UTF-8 is refused"
mkdir -p "$t/www/odd" "$t/odd"
cp "$t/www/ds/train-0-000.tar" "$t/www/odd/q\"b\\s-é.tar"
sk index -q --wids -o "$t/odd/m.json" "$U/odd/q\"b\\s-é.tar" || fail "index --wids of an odd URL failed"
grep -qF '"url": "'"$U"'/odd/q\"b\\s-é.tar"' "$t/odd/wids.json" || fail "not escaped: $(cat "$t/odd/wids.json")"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["shardlist"][0]["url"] == sys.argv[2] + "/odd/q\"b\\s-\u00e9.tar"' \
    "$t/odd/wids.json" "$U" || fail "the odd URL does not read back"
cp "$t/www/ds/train-0-000.tar" "$t/odd/"$'n\xff.tar'
for bad in "$U/odd/"$'n\xff.tar' "$t/odd/"$'n\xff.tar'; do
    rc=0
    sk index -q --wids=$t/odd/bad.json -o "$t/odd/bad-m.json" "$bad" 2>"$t/err" || rc=$?
    [ $rc = 2 ] && grep -qF 'odd/n\xff.tar: the name is not UTF-8' "$t/err" || fail "not UTF-8: exit $rc ($(cat "$t/err"))"
    [ ! -e "$t/odd/bad.json" ] || fail "a wids.json was written for a name that is not UTF-8"
done

echo "== index over http:// writes only here: s3:// shards and remote outputs refused by name"
refuse() { # $1 what the message says (a basic regular expression), then index's arguments
    local msg=$1 rc=0
    shift
    sk index -q "$@" 2>"$t/err" || rc=$?
    [ $rc = 2 ] && grep -q -- "$msg" "$t/err" || fail "index $*: exit $rc ($(cat "$t/err"))"
}
refuse "$U/ds/train-0-000.tar: a web server takes no writes" "$U/ds/train-0-000.tar"
refuse "give -o DIR/manifest.json instead of --no-manifest" --no-manifest "$U/ds/train-0-000.tar"
mkdir -p "$t/www/ds2" && cp "$t/www/ds/train-0-000.tar" "$t/www/ds2/"
refuse "$U/ds/train-0-000.tar and $U/ds2/train-0-000.tar would both have their index at" \
    -o "$t/out/x.json" "$U/ds/train-0-000.tar" "$U/ds2/train-0-000.tar"
refuse "--wids 'http://127.0.0.1:9/w.json': http(s):// is read only: write to a local path$" \
    --wids=http://127.0.0.1:9/w.json -o "$t/out/x.json" "$U/ds/train-0-000.tar"
# credentials for the client only: nothing is asked of the endpoint
AWS_ACCESS_KEY_ID=k AWS_SECRET_ACCESS_KEY=s refuse \
    "--wids: s3://b/p/x.tar is an object in S3, and wids reads local files and http(s):// URLs only" \
    --endpoint-url http://127.0.0.1:9 --wids -o "$t/out/x.json" "$t/out/local.tar" s3://b/p/x.tar s3://b/p/y.tar
[ ! -e "$t/out/x.json" ] || fail "a refused run wrote a manifest"
echo "index merge over HTTP ok"
