#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# sagemaker_modes: the recipes of docs/sagemaker.md, one SageMaker input
# mode each, with the channel simulated the way SageMaker fills it (from
# moto; Pipe mode is sagemaker_pipe.sh):
#  File           every object under the S3Uri prefix copied to
#                 /opt/ml/input/data/CHANNEL/ by its key relative to the
#                 prefix: `cat` and the Python reader of the directory give
#                 the dataset's samples, `verify` passes;
#  FastFile       the same tree, read-only and read on demand: `cat`, and
#                 `get` (random access through the indexes);
#  ManifestFile   a ManifestFile listing only the shards, expanded as
#                 SageMaker expands it (prefix + each entry, placed at the
#                 entry's relative path): the same samples, and the
#                 channel holds no .idx and no manifest.json;
#  ShardedByS3Key the ManifestFile's objects dealt over 3 instances: each
#                 reads whole shards, no sample twice, none missing;
#  AugmentedManifestFile  converted by `pack --from-manifest` into shards,
#                 then a File channel of those: the Python reader sees each
#                 line's image and labels.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3
"$SK_TOOLS/mkcorpus" "$T/c" --samples 90 --per-dir 30 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds/train-%06d.tar" --max-size 256K -q \
    --sagemaker-manifest "$T/shards.manifest" --sagemaker-prefix s3://bkt/ds/
"$SK_BIN" cat "$T/ds" >"$T/ref.tar" || die "reference cat failed"
"$SK_BIN" cat --keys "$T/ds" | sort >"$T/ref.keys"
s3_serve bkt
expect_ok "$SK_BIN" upload --endpoint-url "$A" "$T/ds" s3://bkt/ds/
D=$T/opt/ml/input/data
LIB=$(dirname "$SK_BIN")/libshardkit.so
pyok=0
[ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init && pyok=1
pykeys() { # pykeys DIR: the keys the Python reader gives, sorted
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/samples/python python3 -c '
import sys, shardkit
for s in shardkit.Reader(sys.argv[1]):
    print(s["__key__"])' "$1" | sort
}

step "File: the prefix copied to the channel directory"
aws s3 cp --quiet --recursive s3://bkt/ds/ "$D/train/" || die "File channel copy failed"
expect_ok "$SK_BIN" cat "$D/train"
cmp "$OUT" "$T/ref.tar" || die "File: cat differs"
expect_ok "$SK_BIN" verify "$D/train"
if [ "$pyok" = 1 ]; then pykeys "$D/train" | cmp - "$T/ref.keys" || die "File: python keys differ"; fi

step "FastFile: the same tree, read-only, random access"
cp -r "$D/train" "$D/fast"
chmod -R a-w "$D/fast"
at_exit "chmod -R u+w '$D/fast'"
expect_ok "$SK_BIN" cat "$D/fast"
cmp "$OUT" "$T/ref.tar" || die "FastFile: cat differs"
k=$(sed -n 17p "$T/ref.keys")
expect_ok "$SK_BIN" get "$D/fast" "$k" -o "$T/got"
[ -n "$(ls "$T/got")" ] || die "FastFile: get wrote nothing"

step "ManifestFile: only the shards, expanded as SageMaker does"
# pack's --sagemaker-manifest: the prefix, then every shard and nothing else
python3 - "$T/ds/manifest.json" s3://bkt/ds/ "$T/shards.manifest" <<'EOF' || die "the ManifestFile is not the shard list"
import json, sys
m = json.load(open(sys.argv[1]))
want = [{"prefix": sys.argv[2]}] + [s["url"] for s in m["shards"]]
got = json.load(open(sys.argv[3]))
sys.exit(0 if got == want else f"got {got}, want {want}")
EOF
aws s3 cp --quiet "$T/shards.manifest" s3://bkt/shards.manifest
expand() { # expand MANIFEST DIR [I N]: SageMaker's expansion (instance I of N)
    python3 - "$1" "${3:-}" "${4:-}" <<'EOF' | while read -r src rel; do aws s3 cp --quiet "$src" "$2/$rel" || exit 1; done
import json, sys
m = json.load(open(sys.argv[1]))
prefix, entries = m[0]["prefix"], m[1:]
i, n = (int(sys.argv[2]), int(sys.argv[3])) if sys.argv[2] else (0, 1)
for k, rel in enumerate(entries):
    if k % n == i:
        print(prefix + rel, rel)
EOF
}
expand "$T/shards.manifest" "$D/mf" || die "expansion failed"
[ -z "$(ls "$D/mf" | grep -v '\.tar$')" ] || die "ManifestFile: the channel holds more than shards"
expect_ok "$SK_BIN" cat "$D/mf"
cmp "$OUT" "$T/ref.tar" || die "ManifestFile: cat differs"

step "ShardedByS3Key: 3 instances, whole shards, every sample once"
: >"$T/all.keys"
for i in 0 1 2; do
    expand "$T/shards.manifest" "$D/inst$i" "$i" 3 || die "instance $i: expansion failed"
    expect_ok "$SK_BIN" cat --keys "$D/inst$i"
    [ -s "$OUT" ] || die "instance $i got no samples"
    cat "$OUT" >>"$T/all.keys"
done
sort "$T/all.keys" | cmp - "$T/ref.keys" || die "ShardedByS3Key: samples missing or repeated"

step "AugmentedManifestFile: converted to shards, then a File channel"
aws s3 mb s3://img >/dev/null
python3 - "$T/c" "$T/aug.manifest" <<'EOF'
import json, os, sys
jpgs = sorted(os.path.join(d, f)[len(sys.argv[1]) + 1:] for d, _, fs in os.walk(sys.argv[1])
              for f in fs if f.endswith(".jpg"))[:12]
with open(sys.argv[2], "w") as m:
    for i, j in enumerate(jpgs):
        m.write(json.dumps({"source-ref": "s3://bkt/ds-src/" + j, "class": i % 4}) + "\n")
EOF
expect_ok "$SK_BIN" upload --endpoint-url "$A" "$T/c" s3://bkt/ds-src/
aws s3 cp --quiet "$T/aug.manifest" s3://img/aug.manifest
expect_ok "$SK_BIN" pack --endpoint-url "$A" --from-manifest s3://img/aug.manifest \
    -o s3://img/shards/train-%06d.tar --max-count 5
aws s3 cp --quiet --recursive s3://img/shards/ "$D/aug/" || die "File channel copy failed"
expect_ok "$SK_BIN" verify "$D/aug"
if [ "$pyok" = 1 ]; then
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/samples/python python3 - "$D/aug" "$T/aug.manifest" "$T/c" <<'EOF' ||
import json, sys, shardkit
lines = [json.loads(l) for l in open(sys.argv[2])]
n = 0
for s in shardkit.Reader(sys.argv[1]):
    i = int(s["__key__"])
    assert json.loads(s["json"]) == {"class": lines[i]["class"]}, s["json"]
    src = lines[i]["source-ref"][len("s3://bkt/ds-src/"):]
    assert s["jpg"] == open(sys.argv[3] + "/" + src, "rb").read()
    n += 1
assert n == len(lines), n
EOF
        die "AugmentedManifestFile: samples wrong"
fi
