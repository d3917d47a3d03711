#!/usr/bin/env bash
# reader_s3.sh - the reader on s3:// shards in moto_server (signature
# checking on), through a logging proxy that counts requests: S3 and local
# give the same sample stream (keys and bytes, .tar and .tar.zst), the
# 2 ranks x 3 workers split reads every sample once, GETs cut midway by the
# proxy resume from the byte reached (Range: bytes=N-), and with --cache-dir
# the second epoch (same process or a new one) makes no GET (a new process
# asks each object's ETag once, the copy's validity).
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
command -v zstd >/dev/null || { echo "needs zstd"; exit 77; }
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
s3_serve auth bkt
proxy_start "$MOTO_URL" "$t/req.log"
sk() { "$SK_BIN" cat --endpoint-url "$PROXY_URL" "$@"; }

"$SK_TOOLS/mkcorpus" "$t/c" --samples 300 >/dev/null
"$SK_BIN" pack "$t/c" -o "$t/s/train-%06d.tar" --max-count 50 >/dev/null 2>&1
zstd -q "$t/s/train-000005.tar" -o "$t/s/z-000005.tar.zst"
aws s3 cp --recursive --quiet "$t/s" s3://bkt/ds/
urls="s3://bkt/ds/train-{000000..000005}.tar"

echo "== S3 and local: the same stream"
"$SK_BIN" cat "$t/s/train-{000000..000005}.tar" >"$t/local.tar"
sk --shuffle-shards --shuffle 30 --seed 2 --keys "$urls" >"$t/s3.keys"
"$SK_BIN" cat --shuffle-shards --shuffle 30 --seed 2 --keys "$t/s/train-{000000..000005}.tar" >"$t/local.keys"
cmp "$t/s3.keys" "$t/local.keys" || fail "shuffled keys from S3 differ from local"
sk --buffer 64K "$urls" >"$t/s3.tar"
cmp "$t/s3.tar" "$t/local.tar" || fail "tar stream from S3 differs from local"
sk s3://bkt/ds/z-000005.tar.zst | cmp - "$t/s/train-000005.tar" || fail ".tar.zst from S3 differs"
sk s3://bkt/ds/manifest.json | cmp - "$t/local.tar" || fail "the dataset read through its manifest on S3 differs"
grep -q '^GET /bkt/ds/train-000003.tar' "$t/req.log" || fail "no GET of a shard went through the proxy"

echo "== a GET cut midway resumes from the bytes already delivered"
main_proxy=$PROXY_URL
proxy_start "$MOTO_URL" "$t/cut.log" --cut-gets 2
"$SK_BIN" cat --endpoint-url "$PROXY_URL" --buffer 64K "$urls" >"$t/cut.tar" || fail "a cut GET was not retried"
cmp "$t/cut.tar" "$t/local.tar" || fail "tar stream with cut GETs differs from local"
grep -q ' cut$' "$t/cut.log" || fail "the proxy cut no GET"
grep -Eq '^GET /bkt/ds/train-[0-9]+\.tar 206 bytes=[1-9][0-9]*-[0-9]+$' "$t/cut.log" ||
    fail "no GET resumed past the bytes delivered: $(cat "$t/cut.log")"
"$SK_BIN" cat --endpoint-url "$PROXY_URL" s3://bkt/ds/z-000005.tar.zst | cmp - "$t/s/train-000005.tar" ||
    fail ".tar.zst with cut GETs differs"
PROXY_URL=$main_proxy

echo "== 2 ranks x 3 workers from S3: every key once"
: >"$t/split"
for r in 0 1; do for w in 0 1 2; do
    sk --keys --rank $r --world-size 2 --worker $w --num-workers 3 --shuffle-shards --seed 1 "$urls" >>"$t/split"
done; done
[ "$(wc -l <"$t/split")" = 300 ] && [ "$(sort -u "$t/split" | wc -l)" = 300 ] || fail "split is not exactly once"

echo "== cache: the second epoch makes no GET"
: >"$t/req.log"
sk --keys "$urls" >/dev/null
one=$(grep -c '^GET ' "$t/req.log")
[ "$one" -ge 6 ] || fail "one epoch made only $one GETs"
: >"$t/req.log"
sk --keys --epochs 2 --cache-dir "$t/cache" "$urls" >"$t/two.keys"
two=$(grep -c '^GET ' "$t/req.log")
[ "$two" = "$one" ] || fail "two epochs with a cache made $two GETs, one epoch $one"
[ "$(wc -l <"$t/two.keys")" = 600 ] || fail "two epochs gave $(wc -l <"$t/two.keys") keys"
cache_file() { # the cache's name for bucket $1, key $2 (store_cache.c: SHA-256 of the URL
    # and what the copy must be, here the object's ETag, 40 hex digits)
    local etag
    etag=$(aws s3api head-object --bucket "$1" --key "$2" --query ETag --output text | tr -d '"')
    python3 -c 'import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode() + b"\0" + sys.argv[2].encode()).hexdigest()[:40] + ".skc")' "s3://$1/$2" "etag:$etag"
}
cmp "$t/cache/$(cache_file bkt ds/train-000002.tar)" "$t/s/train-000002.tar" || fail "cache file differs from the shard"
ls -a "$t/cache" | grep -q '\.tmp$' && fail "temporary cache file left"
: >"$t/req.log"
sk --cache-dir "$t/cache" "$urls" >"$t/cached.tar"
# shards named without a manifest: one HEAD each (is the copy still the
# object? its ETag says), no GET
! grep -v '^HEAD ' "$t/req.log" | grep -q . || fail "a run on a full cache made GETs: $(grep -v '^HEAD ' "$t/req.log" | head -3)"
cmp "$t/cached.tar" "$t/local.tar" || fail "stream from the cache differs"

echo "== cache bound: least recently used shards go"
big=$(stat -c %s "$t"/s/train-*.tar | sort -n | tail -1)
bound=$((big * 5 / 2))
mkdir -p "$t/small/sub"
echo "the user's own" >"$t/small/notes.txt"
echo "also the user's" >"$t/small/sub/0123456789abcdef0123456789abcdef01234567.skc"
sk --keys --cache-dir "$t/small" --cache-size $((bound + 40)) "$urls" >/dev/null
[ -f "$t/small/notes.txt" ] && [ -f "$t/small/sub/0123456789abcdef0123456789abcdef01234567.skc" ] ||
    fail "cache eviction removed a file shardkit did not create"
total=$(find "$t/small" -maxdepth 1 -type f -name '*.skc' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
n=$(find "$t/small" -maxdepth 1 -type f -name '*.skc' | wc -l)
[ "$n" -ge 1 ] && [ "$total" -le "$bound" ] || fail "cache holds $n files, $total bytes, over a $bound bound"

echo "== a hostile key cannot write outside the cache"
python3 - "$MOTO_URL" "$t/s/train-000000.tar" <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
s3.put_object(Bucket="bkt", Key="x/../../../escape.tar", Body=open(sys.argv[2], "rb").read())
PY
mkdir -p "$t/deep/a/b/c"
(cd "$t/deep/a/b/c" && "$SK_BIN" cat --endpoint-url "$MOTO_URL" --keys --cache-dir cache "s3://bkt/x/../../../escape.tar" >/dev/null) ||
    fail "reading the object with a hostile key failed"
[ ! -e "$t/deep/a/escape.tar" ] && [ ! -e "$t/deep/a/b/escape.tar" ] && [ ! -e "$t/deep/escape.tar" ] ||
    fail "the cache wrote outside --cache-dir"
[ "$(ls "$t/deep/a/b/c/cache")" = "$(cache_file bkt x/../../../escape.tar)" ] ||
    fail "the cache holds $(ls "$t/deep/a/b/c/cache")"

echo "== errors name the object"
if sk --keys s3://bkt/ds/nope.tar >/dev/null 2>"$t/err"; then fail "a missing object read fine"; fi
grep -q "nope.tar" "$t/err" || fail "error does not name the object: $(cat "$t/err")"
echo ok
