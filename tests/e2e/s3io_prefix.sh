#!/usr/bin/env bash
# s3io_prefix: cat, verify and get take s3://bucket/prefix/ as they take a
# local directory: through its manifest.json, and without one through the
# listed shard objects (moto, auth off for its listings).  What they return
# equals what they return from the same dataset on disk.  A hostile
# listing (keys with '../', in "subdirectories", dot names) reads nothing
# but the prefix's own shards.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
"$SK_TOOLS/mkcorpus" "$T/c" --samples 120 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds/t-%03d.tar" --max-count 50
s3_serve dset
aws s3 cp --quiet --recursive "$T/ds" s3://dset/with/ || die "upload failed"
aws s3 cp --quiet --recursive "$T/ds" s3://dset/bare/ --exclude manifest.json || die "upload failed"
aws s3 cp --quiet --recursive "$T/ds" s3://dset/noidx/ --exclude '*.idx' --exclude manifest.json || die "upload failed"
S=(--endpoint-url "$A")
expect_ok "$SK_BIN" cat "$T/ds"
cp "$OUT" "$T/local.tar"

step "cat: a prefix with and without its manifest, same stream as the local directory"
for p in with bare noidx; do
    expect_ok "$SK_BIN" cat "${S[@]}" "s3://dset/$p/"
    cmp "$OUT" "$T/local.tar" || die "cat s3://dset/$p/ differs from cat of the local directory"
done

step "verify: a prefix with and without its manifest, and a local directory"
for p in with bare; do
    expect_ok "$SK_BIN" verify "${S[@]}" --deep "s3://dset/$p/"
    assert_contains "$OUT" "sound: 3 shards, 120 samples"
done
expect_ok "$SK_BIN" verify "$T/ds"
assert_contains "$OUT" "sound: 3 shards, 120 samples"
rm -f "$T/ds/manifest.json"
expect_ok "$SK_BIN" verify "$T/ds/"
assert_contains "$OUT" "sound: 3 shards, 120 samples"
# a damaged shard under a prefix without manifest is found
head -c 20000 "$T/ds/t-001.tar" >"$T/cut.tar"
aws s3 cp --quiet "$T/cut.tar" s3://dset/bare/t-001.tar
expect_fail 1 "" "$SK_BIN" verify "${S[@]}" s3://dset/bare/
assert_contains "$OUT" "s3://dset/bare/t-001.tar"

step "get: by key and by ordinal from a prefix without manifest"
expect_ok "$SK_BIN" get "${S[@]}" s3://dset/with/ n00000/00000101 --ext jpg -o "$T/s3.jpg"
cmp "$T/s3.jpg" "$T/c/n00000/00000101.jpg" || die "get from a prefix with manifest differs"
aws s3 cp --quiet "$T/ds/t-001.tar" s3://dset/bare/t-001.tar
expect_ok "$SK_BIN" get "${S[@]}" s3://dset/bare/ n00000/00000101 --ext jpg -o "$T/s3b.jpg"
cmp "$T/s3b.jpg" "$T/c/n00000/00000101.jpg" || die "get from a prefix without manifest differs"

step "the Python binding reads a prefix without manifest like the directory"
SHARDKIT_LIB=$(dirname "$SK_BIN")/libshardkit.so PYTHONPATH=$SK_ROOT/python pylib - "$A" "$T/ds" <<'PY' \
    || die "the Python Reader differs on s3://dset/bare/"
import sys, shardkit
keys = lambda urls, **kw: [(s["__key__"], s["jpg"]) for s in shardkit.Reader(urls, **kw)]
s3 = keys("s3://dset/bare/", s3_endpoint=sys.argv[1])
assert len(s3) == 120 and s3 == keys(sys.argv[2]), len(s3)
PY

step "hostile listing: only the prefix's own shards are read"
python3 - "$A" "$T/ds/t-000.tar" <<'PY'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
body = open(sys.argv[2], "rb").read()
for k in ["h/a.tar", "h/../evil.tar", "h/sub/../../up.tar", "h/sub/x.tar", "h/.hidden.tar", "hx/b.tar"]:
    s3.put_object(Bucket="dset", Key=k, Body=body)
PY
expect_ok "$SK_BIN" cat "${S[@]}" s3://dset/h/
"$SK_BIN" cat "$T/ds/t-000.tar" >"$T/one.tar"
cmp "$OUT" "$T/one.tar" || die "cat of a hostile prefix read more than h/a.tar"
expect_ok "$SK_BIN" verify "${S[@]}" s3://dset/h/
assert_contains "$OUT" "1 shards, 50 samples"

step "errors: an empty prefix names itself"
expect_fail 1 "s3://dset/none/: no manifest.json and no .tar" "$SK_BIN" cat "${S[@]}" s3://dset/none/
expect_fail 2 "s3://dset/none/: no manifest.json and no .tar" "$SK_BIN" verify "${S[@]}" s3://dset/none/
echo "s3io_prefix: ok"
