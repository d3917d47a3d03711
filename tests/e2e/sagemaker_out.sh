#!/usr/bin/env bash
# sagemaker_out: --sagemaker-manifest on pack, shard, index and index merge
# writes a SageMaker ManifestFile ([{"prefix": ...}, "key", ...]) listing
# the shards and nothing else.  Round trip against moto (auth off for the
# listing): pack -> ManifestFile -> expanded as SageMaker expands it
# (prefix + each key) -> exactly the set of shard objects, never an .idx
# or manifest.json; the same file from index of the prefix, from pack
# straight into S3, from index merge of --part runs.  --sagemaker-instances
# warns when the shards do not divide; local shards need a prefix; a
# manifest naming a shard outside its directory is refused.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin
"$SK_TOOLS/mkcorpus" "$T/c" --samples 100 >/dev/null || die "mkcorpus failed"
s3_serve smb
S=(--endpoint-url "$A")
# SageMaker's expansion of a ManifestFile: prefix + key, one object each
expand() { python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
assert isinstance(m, list) and set(m[0]) == {"prefix"}, m[0]
assert all(isinstance(k, str) for k in m[1:])
for k in m[1:]: print(m[0]["prefix"] + k)' "$1"; }

step "pack: local shards need a prefix; with one, the shards only, in order"
expect_fail 2 "give --sagemaker-prefix" "$SK_BIN" pack "$T/c" -o "$T/ds/train-%06d.tar" \
    --max-count 30 --sagemaker-manifest "$T/sm.json"
[ ! -e "$T/ds" ] || die "a refused run wrote shards"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds/train-%06d.tar" --max-count 25 \
    --sagemaker-manifest "$T/sm.json" --sagemaker-prefix s3://smb/ds --sagemaker-instances 4
assert_not_contains "$ERR" "do not divide"
python3 - "$T/sm.json" <<'PY' || die "the ManifestFile is not the four shards under s3://smb/ds/"
import json, sys
assert json.load(open(sys.argv[1])) == [{"prefix": "s3://smb/ds/"}] + ["train-%06d.tar" % i for i in range(4)]
PY
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds3/train-%06d.tar" --max-count 25 \
    --sagemaker-manifest "$T/sm3.json" --sagemaker-prefix s3://smb/ds3/ --sagemaker-instances 3
assert_contains "$ERR" "4 shards do not divide among 3 instances: with ShardedByS3Key 1 instance(s) get one shard more"

step "round trip: upload, expand as SageMaker does, the same objects as the shards"
aws s3 cp --quiet --recursive "$T/ds" s3://smb/ds/ || die "upload failed"
expand "$T/sm.json" >"$T/expanded"
aws s3 ls s3://smb/ds/ | awk '{print "s3://smb/ds/" $4}' | grep '\.tar$' >"$T/shards"
cmp "$T/expanded" "$T/shards" || die "the expanded ManifestFile is not the shard objects"
grep -q 'idx\|manifest' "$T/expanded" && die "the ManifestFile names an index or the manifest"
while read -r u; do aws s3api head-object --bucket smb --key "${u#s3://smb/}" >/dev/null || die "$u is not there"; done <"$T/expanded"

step "index of the prefix, and pack straight into S3: the prefix comes from the shards"
expect_ok "$SK_BIN" index "${S[@]}" s3://smb/ds/ --sagemaker-manifest "$T/idx.json"
cmp "$T/idx.json" "$T/sm.json" || die "index: $(cat "$T/idx.json") vs pack: $(cat "$T/sm.json")"
expect_ok "$SK_BIN" pack "${S[@]}" "$T/c" -o s3://smb/p2/train-%06d.tar --max-count 40 \
    --sagemaker-manifest s3://smb/p2/train.manifest
aws s3 cp --quiet s3://smb/p2/train.manifest "$T/p2.json"
python3 - "$T/p2.json" <<'PY' || die "pack into S3: wrong ManifestFile"
import json, sys
assert json.load(open(sys.argv[1])) == [{"prefix": "s3://smb/p2/"}] + ["train-%06d.tar" % i for i in range(3)]
PY

step "shard with --num-shards, index merge of --part runs"
expect_ok "$SK_BIN" shard "$T/ds/manifest.json" -o "$T/r/x-%03d.tar" --num-shards 3 \
    --sagemaker-manifest "$T/r.json" --sagemaker-prefix s3://smb/r/ --sagemaker-instances 2
assert_contains "$ERR" "3 shards do not divide among 2 instances"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m[1:]==["x-000.tar","x-001.tar","x-002.tar"], m' "$T/r.json" \
    || die "shard: wrong ManifestFile"
for i in 0 1; do
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/parts/p{part}/t-%03d.tar" --max-count 20 --part "$i/2" \
        --sagemaker-manifest "$T/parts/sm-{part}.json" --sagemaker-prefix "s3://smb/parts/p$i/"
done
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m[0]=={"prefix":"s3://smb/parts/p1/"} and m[1]=="t-000.tar", m' \
    "$T/parts/sm-1.json" || die "--part: the part's ManifestFile is wrong"
expect_fail 2 "{part}" "$SK_BIN" pack "$T/c" -o "$T/parts/q{part}/t-%03d.tar" --part 0/2 \
    --sagemaker-manifest "$T/parts/one.json" --sagemaker-prefix s3://smb/q/
# refused before the run: no shard of the part is written
[ ! -e "$T/parts/q0" ] || die "--part with a ManifestFile name without {part}: shards written before the refusal"
set -- "$T"/parts/p*/manifest-*.json
[ $# = 2 ] || die "not two part manifests: $*"
expect_ok "$SK_BIN" index merge "$1" "$2" \
    -o "$T/parts/all.json" --sagemaker-manifest "$T/parts/sm.json" --sagemaker-prefix s3://smb/parts/
python3 - "$T/parts/sm.json" "$T/parts/all.json" <<'PY' || die "merge: the ManifestFile does not follow the merged manifest"
import json, sys
sm, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert sm[0] == {"prefix": "s3://smb/parts/"} and sm[1:] == [s["url"] for s in m["shards"]], (sm, m)
assert len(sm) > 3 and all(k.startswith("p") and "/t-" in k for k in sm[1:]), sm
PY

step "refused: a shard outside the manifest's directory, a prefix that is not s3://"
mkdir -p "$T/h/sub"   # merged there, the shards are ../../ds/...: no key under a prefix
expect_fail 1 "is not under the manifest's directory" "$SK_BIN" index merge "$T/ds/manifest.json" \
    -o "$T/h/sub/m2.json" --sagemaker-manifest "$T/h/x.json" --sagemaker-prefix s3://smb/h/
expect_fail 2 "want s3://BUCKET/PREFIX/" "$SK_BIN" pack "$T/c" -o "$T/z/t-%d.tar" \
    --sagemaker-manifest "$T/z.json" --sagemaker-prefix /local/dir
[ ! -e "$T/h/x.json" ] || die "a refused ManifestFile was written"
echo "sagemaker_out: ok"
