#!/usr/bin/env bash
# python_writer_s3.sh - shardkit.ShardWriter to s3:// (moto, auth on): the
# objects (shards, .idx, manifest.json) are byte-identical to what the same
# writer puts on disk, shardkit.Dataset reads them back, and a run that
# fails in the `with` block publishes no manifest.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin python3 cmp
need_python_lib
s3_serve auth out
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python
python3 - "$T" "$A" <<'PY' || die "ShardWriter to S3"
import sys
import shardkit
T, A = sys.argv[1], sys.argv[2]

def write(pattern, **kw):
    with shardkit.ShardWriter(pattern, max_count=25, **kw) as w:
        for i in range(80):
            w.write({"__key__": "s/%05d" % i, "bin": bytes([i % 251]) * (1000 + i * 37),
                     "cls": i % 7, "json": {"i": i}})
    return w.stats

assert write(T + "/local/t-%06d.tar")["shards"] == 4
assert write("s3://out/w/t-%06d.tar", s3_endpoint=A)["shards"] == 4
ds = shardkit.Dataset("s3://out/w/", s3_endpoint=A)
loc = shardkit.Dataset(T + "/local")
assert len(ds) == 80
for i in (0, 24, 25, 79):
    a, b = ds[i], loc[i]
    a.pop("__url__"), b.pop("__url__")
    assert a == b, i
try:
    with shardkit.ShardWriter("s3://out/x/t-%06d.tar", max_count=25, s3_endpoint=A) as w:
        for i in range(30):
            w.write({"__key__": "s/%05d" % i, "txt": "x"})
        raise RuntimeError("producer failed")
except RuntimeError:
    pass
print("ok")
PY
mkdir -p "$T/got"
# (by name: moto with auth on refuses ListObjectsV2, the aws cli's too)
for f in $(cd "$T/local" && ls); do
    aws s3 cp --quiet "s3://out/w/$f" "$T/got/$f" || die "download of $f failed"
    cmp "$T/local/$f" "$T/got/$f" || die "$f differs between S3 and disk"
done
[ "$(ls "$T/got" | wc -l)" -ge 9 ] || die "too few files: $(ls "$T/got")"
if aws s3api head-object --bucket out --key x/manifest.json >/dev/null 2>&1; then
    die "an abandoned run published its manifest"
fi
n=$(aws s3api list-multipart-uploads --bucket out --query 'length(Uploads || `[]`)' --output text)
[ "$n" = 0 ] || die "an abandoned run left $n multipart uploads"
echo "python_writer_s3: ok"
