#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# python_dataset_s3.sh - shardkit.Dataset over S3 (moto, auth on): by
# ordinal and by key it returns what `shardkit get` returns from the same
# objects and what it returns from the same shards on disk, plain and
# .tar.zst, through a manifest, a prefix and $AWS_ENDPOINT_URL; a missing
# key, an index of another shard and a missing dataset raise the right
# shardkit.Error subclass.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin python3
need_python_lib
s3_dataset auth dset 90 --max-count 40
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python

step "by ordinal and by key: as shardkit get from S3, as from disk"
python3 - "$T" "$SK_BIN" "$A" <<'PY' || die "Dataset over S3 differs"
import io, os, subprocess, sys, tarfile
import shardkit
T, sk, A = sys.argv[1], sys.argv[2], sys.argv[3]

def get(dataset, q):
    tar = subprocess.run([sk, "get", "--endpoint-url", A, dataset, q, "--tar", "-o", "-"],
                         check=True, stdout=subprocess.PIPE).stdout
    d = {}
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        for m in tf:
            key, ext = m.name.split(".", 1)
            d.setdefault("__key__", key)
            d[ext] = tf.extractfile(m).read()
    return d

def strip(s):
    return {k: v for k, v in s.items() if k not in ("__url__",)}

for kind in ("plain", "zst"):
    local = shardkit.Dataset(T + "/" + kind)
    for url in ("s3://dset/%s/manifest.json" % kind, "s3://dset/%s/" % kind):
        ds = shardkit.Dataset(url, s3_endpoint=A)
        assert len(ds) == 90, (url, len(ds))
        for i in (0, 39, 40, 63, 89):
            s = ds[i]
            assert s["__url__"].startswith("s3://dset/"), s["__url__"]
            assert strip(s) == strip(local[i]), (url, i)
            want = get(url, "#%d" % i)
            assert {k: v for k, v in s.items() if not k.startswith("__") or k == "__key__"} == want
            assert ds.get(s["__key__"]) == s
        try:
            ds.get("nosuch")
            raise SystemExit("no error for a missing key")
        except shardkit.KeyNotFoundError as e:
            assert e.code == 8 and "nosuch" in str(e), str(e)

# the endpoint from $AWS_ENDPOINT_URL, as the command line takes it
os.environ["AWS_ENDPOINT_URL"] = A
ds = shardkit.Dataset("s3://dset/plain/")
assert ds[50]["__key__"] == "n00000/00000050"
assert ds.get("n00000/00000007")["jpg"] == open(T + "/c/n00000/00000007.jpg", "rb").read()
print("ok")
PY

step "errors: an index from another shard, no such dataset"
aws s3 cp --quiet "$T/plain/t-000.tar.idx" s3://dset/plain/t-001.tar.idx
python3 - "$A" <<'PY' || die "S3 error cases"
import sys
import shardkit
A = sys.argv[1]
try:
    shardkit.Dataset("s3://dset/plain/t-001.tar", s3_endpoint=A)[0]
    raise SystemExit("a foreign index was used")
except shardkit.MismatchError as e:
    assert e.code == 9 and "does not belong to this shard" in str(e), str(e)
try:
    shardkit.Dataset("s3://dset/nothing/", s3_endpoint=A)
    raise SystemExit("no error for a missing dataset")
except shardkit.Error as e:   # no manifest, then a listing that finds no shard
    assert "s3://dset/nothing/" in str(e) and "no manifest.json" in str(e), str(e)
print("ok")
PY
echo "python_dataset_s3: ok"
