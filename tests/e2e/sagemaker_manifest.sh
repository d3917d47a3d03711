#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# sagemaker_manifest: pack --from-manifest against moto.
#  1. a ManifestFile listing every object under a prefix (local, and as an
#     s3:// object) packs byte-identical to `pack s3://prefix/`; a prefix
#     without a trailing slash is joined to each key literally, as
#     SageMaker does;
#  2. an augmented manifest with two -ref attributes in two buckets and
#     label attributes: sample i is "%08d" of line i with members .jpg (the
#     source-ref's object, byte for byte), .mask.png and .json (the other
#     attributes, sorted keys, compact); two runs give identical shards;
#  3. hostile manifests fail with exit 1 and a message naming the manifest,
#     the line and the cause: a line over 1 MiB, bad JSON, a non-s3 URI, a
#     bad bucket name, a control character in a key, a ManifestFile entry
#     that is not a string, two refs making the same member, a missing
#     object (its s3:// URL), an empty file.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 60 --per-dir 20 >/dev/null || die "mkcorpus failed"

s3_serve src masks
expect_ok "$SK_BIN" upload --endpoint-url "$A" "$C" s3://src/data/
sk() { "$SK_BIN" "$@" --endpoint-url "$A"; }

step "1. ManifestFile: the same shards as the prefix"
expect_ok sk pack s3://src/data/ -o "$T/ref/t-%04d.tar" --max-size 64K
(cd "$C" && find . -type f | sed 's|^\./||' | sort -r) >"$T/keys"
python3 - "$T/keys" >"$T/train.manifest" <<'EOF'
import json, sys
keys = open(sys.argv[1]).read().split()
print(json.dumps([{"prefix": "s3://src/data/"}] + keys, indent=1))
EOF
expect_ok sk pack --from-manifest "$T/train.manifest" -o "$T/mf/t-%04d.tar" --max-size 64K --json
assert_contains "$OUT" "\"files\": $(wc -l <"$T/keys"),"
for f in $(cd "$T/ref" && ls); do cmp "$T/ref/$f" "$T/mf/$f" || die "ManifestFile: $f differs"; done
[ "$(ls "$T/ref" | wc -l)" = "$(ls "$T/mf" | wc -l)" ] || die "ManifestFile: not as many files"
check_shards "$T/mf"
aws s3 cp --quiet "$T/train.manifest" s3://src/m/train.manifest || die "manifest upload failed"
expect_ok sk pack --from-manifest s3://src/m/train.manifest -o "$T/mf3/t-%04d.tar" --max-size 64K
for f in $(cd "$T/ref" && ls); do cmp "$T/ref/$f" "$T/mf3/$f" || die "s3:// ManifestFile: $f differs"; done
first=$(head -1 "$T/keys")
printf '[{"prefix": "s3://src/da"}, "ta/%s"]' "$first" >"$T/literal.manifest"
expect_ok sk pack --from-manifest "$T/literal.manifest" -o "$T/lit/t-%04d.tar"
tar tf "$T/lit/t-0000.tar" >"$T/lit.list"
assert_eq "$(cat "$T/lit.list")" "ta/$first" "member of a literal prefix join"

step "2. augmented manifest: two -ref attributes and labels"
python3 - "$C" "$T/aug" <<'EOF'
import json, os, sys, random
corpus, out = sys.argv[1], sys.argv[2]
os.makedirs(out + "/masks")
jpgs = sorted(os.path.join(d, f)[len(corpus) + 1:] for d, _, fs in os.walk(corpus) for f in fs
              if f.endswith(".jpg"))[:25]
rnd = random.Random(7)
with open(out + "/aug.manifest", "w") as m:
    for i, j in enumerate(jpgs):
        mask = "m%03d.png" % i
        with open(out + "/masks/" + mask, "wb") as f:
            f.write(bytes(rnd.getrandbits(8) for _ in range(100 + i)))
        line = {"source-ref": "s3://src/data/" + j, "class": i % 3,
                "label-metadata": {"name": "c%d" % (i % 3), "conf": 0.5}, "mask-ref": "s3://masks/" + mask}
        if i == 3:
            m.write("\n")  # a blank line is not a sample
        m.write(json.dumps(line) + "\n")
EOF
expect_ok "$SK_BIN" upload --endpoint-url "$A" "$T/aug/masks" s3://masks/
expect_ok sk pack --from-manifest "$T/aug/aug.manifest" -o "$T/a1/t-%04d.tar" --json
assert_contains "$OUT" '"samples": 25,'
assert_contains "$OUT" '"files": 75,'
expect_ok sk pack --from-manifest "$T/aug/aug.manifest" -o "$T/a2/t-%04d.tar" -j 1 --concurrency 3
cmp "$T/a1/t-0000.tar" "$T/a2/t-0000.tar" || die "augmented: two runs differ"
check_shards "$T/a1"
python3 - "$T/a1/t-0000.tar" "$C" "$T/aug" <<'EOF' || die "augmented: members wrong"
import json, sys, tarfile
tf = tarfile.open(sys.argv[1])
names = tf.getnames()
lines = [json.loads(l) for l in open(sys.argv[3] + "/aug.manifest") if l.strip()]
want = []
for i in range(len(lines)):
    want += ["%08d.jpg" % i, "%08d.json" % i, "%08d.mask.png" % i]
assert names == want, (names[:6], want[:6])
for i, l in enumerate(lines):
    src = l["source-ref"][len("s3://src/data/"):]
    assert tf.extractfile("%08d.jpg" % i).read() == open(sys.argv[2] + "/" + src, "rb").read()
    mask = l["mask-ref"][len("s3://masks/"):]
    assert tf.extractfile("%08d.mask.png" % i).read() == open(sys.argv[3] + "/masks/" + mask, "rb").read()
    labels = {k: v for k, v in l.items() if not k.endswith("-ref")}
    text = tf.extractfile("%08d.json" % i).read().decode()
    assert text == json.dumps(labels, sort_keys=True, separators=(",", ":")), text
EOF
aws s3 cp --quiet "$T/aug/aug.manifest" s3://src/m/aug.manifest || die "upload failed"
expect_ok sk pack --from-manifest s3://src/m/aug.manifest -o "$T/a3/t-%04d.tar"
cmp "$T/a1/t-0000.tar" "$T/a3/t-0000.tar" || die "augmented from s3://: differs"

step "3. hostile manifests"
H=$T/h
mkdir -p "$H"
bad() { # bad NAME SUBSTR: the manifest $H/NAME fails with SUBSTR in the message
    expect_fail 1 "$2" sk pack --from-manifest "$H/$1" -o "$T/bad/t-%04d.tar"
    assert_contains "$ERR" "$H/$1"
    [ ! -e "$T/bad/t-0000.tar" ] || die "$1: a shard was written"
}
python3 -c 'import sys; sys.stdout.write("{\"source-ref\": \"s3://src/x.jpg\", \"pad\": \"" + "a" * (2 << 20) + "\"}\n")' >"$H/huge"
bad huge "line 1 is longer than 1048576 bytes"
printf '{"source-ref": "s3://src/data/a.jpg"}\n{"source-ref": \n' >"$H/badjson"
bad badjson "line 2: not valid JSON"
printf '{"source-ref": "https://evil.example/a.jpg"}\n' >"$H/http"
bad http "attribute 'source-ref': 'https://evil.example/a.jpg': not an S3 URI"
printf '{"source-ref": "s3://Evil_Bucket/a.jpg"}\n' >"$H/bucket"
bad bucket "not a valid bucket name"
printf '{"source-ref": "s3://src/a\\u0007.jpg"}\n' >"$H/ctl"
bad ctl "a control character in the key"
printf '{"source-ref": "s3://src/a.jpg", "jpg-ref": "s3://src/b"}\n' >"$H/twice"
bad twice "attributes 'source-ref' and 'jpg-ref' both make member 00000000.jpg"
printf '{"source-ref": 7}\n' >"$H/notstr"
bad notstr "attribute 'source-ref': not a string"
printf '[{"prefix": "s3://src/data/"}, "a.jpg", 5]' >"$H/mfint"
bad mfint "entry 2 is not a string"
printf '[{"prefix": "file:///etc/"}, "passwd"]' >"$H/mffile"
bad mffile "prefix 'file:///etc/': not an S3 URI"
printf '[{"prefix": "s3://src/data/"}, "../../etc/passwd.x"]' >"$H/mfdots"
bad mfdots "not a usable member name"
printf '[{"prefix": "s3://src/data/"}, "nosuch/thing.jpg"]' >"$H/mfmissing"
bad mfmissing "s3://src/data/nosuch/thing.jpg: no such object (named by $H/mfmissing)"
: >"$H/empty"
bad empty "not a SageMaker manifest"
printf '["s3://src/a.jpg"]' >"$H/mfnoprefix"
bad mfnoprefix "not a ManifestFile"
