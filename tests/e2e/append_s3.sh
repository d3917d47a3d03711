#!/usr/bin/env bash
# append_s3: the rule of append.sh for an s3:// dataset (its manifest
# object): a second pack with another pattern into the same prefix is
# refused (exit 2, naming s3://.../manifest.json) and the manifest object
# is unchanged; --append continues the numbering and grows the manifest
# object (first ordinals continuing); a Python ShardWriter(append=True)
# onto the prefix does too; --overwrite replaces it.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin python3 cmp
s3_serve auth bkt
mkdir -p "$T/a" "$T/b"
for i in 0 1 2 3 4; do echo "a$i" > "$T/a/a$i.txt"; echo "b$i" > "$T/b/b$i.txt"; done
E=(--endpoint-url "$A")

expect_ok "$SK_BIN" pack -q "${E[@]}" "$T/a" -o s3://bkt/ds/x-%03d.tar --max-count 2
aws s3 cp --quiet s3://bkt/ds/manifest.json "$T/m0" || die "no manifest object"

step "another pattern into the prefix: refused, manifest object unchanged"
expect_fail 2 "s3://bkt/ds/manifest.json lists 3 shards this run would not write" \
    "$SK_BIN" pack -q "${E[@]}" "$T/b" -o s3://bkt/ds/y-%03d.tar --max-count 2
aws s3 cp --quiet s3://bkt/ds/manifest.json "$T/m1" || die "manifest object gone"
cmp "$T/m0" "$T/m1" || die "the manifest object changed"
aws s3 ls s3://bkt/ds/y-000.tar >/dev/null 2>&1 && die "a refused run uploaded a shard"

step "--append: numbering and ordinals continue"
expect_ok "$SK_BIN" pack -q "${E[@]}" "$T/b" -o s3://bkt/ds/x-%03d.tar --max-count 2 --append
aws s3 cp --quiet s3://bkt/ds/manifest.json "$T/m2" || die "manifest object gone"
python3 - "$T/m2" <<'PY' || die "appended manifest wrong"
import json, sys
m = json.load(open(sys.argv[1]))
assert [s["url"] for s in m["shards"]] == ["x-%03d.tar" % i for i in range(6)], m["shards"]
assert [s["first_ordinal"] for s in m["shards"]] == [0, 2, 4, 5, 7, 9], m["shards"]
PY
expect_ok "$SK_BIN" verify "${E[@]}" s3://bkt/ds/
expect_ok "$SK_BIN" get "${E[@]}" -e txt s3://bkt/ds/ '#7'
assert_eq "$(cat "$OUT")" "b2" "sample #7"

step "Python ShardWriter(append=True) onto the prefix"
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python python3 - "$A" <<'PY' || die "ShardWriter append to s3 failed"
import sys
import shardkit
ep = sys.argv[1]
try:
    with shardkit.ShardWriter("s3://bkt/ds/z-%03d.tar", max_count=2, s3_endpoint=ep) as w:
        w.write({"__key__": "c0", "txt": "c0"})
    raise SystemExit("not refused")
except shardkit.UsageError as e:
    assert "s3://bkt/ds/manifest.json lists" in str(e), e
with shardkit.ShardWriter("s3://bkt/ds/x-%03d.tar", max_count=2, s3_endpoint=ep, append=True) as w:
    w.write({"__key__": "c0", "txt": "c0"})
PY
    aws s3 cp --quiet s3://bkt/ds/manifest.json "$T/m3" || die "manifest object gone"
    python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['shards'][-1]['url']=='x-006.tar' and m['shards'][-1]['first_ordinal']==10, m['shards']" "$T/m3" \
        || die "ShardWriter append did not grow the manifest object"
fi

step "--overwrite replaces it"
expect_ok "$SK_BIN" pack -q "${E[@]}" "$T/b" -o s3://bkt/ds/y-%03d.tar --max-count 2 --overwrite
aws s3 cp --quiet s3://bkt/ds/manifest.json "$T/m4" || die "manifest object gone"
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert [s['url'] for s in m['shards']]==['y-000.tar','y-001.tar','y-002.tar'], m['shards']" "$T/m4" \
    || die "--overwrite did not replace the manifest object"
echo "append_s3: ok"
