#!/usr/bin/env bash
# append: a dataset is never shrunk by accident.
#  1. a second pack into the same directory with another pattern, or with
#     --start 3 (an "append" by hand), is refused (exit 2) naming the
#     manifest, before any shard is written: manifest.json is unchanged;
#  2. --append continues it: numbering after its last shard, first global
#     ordinals continuing, earlier shards untouched, verify sound, and
#     every sample readable by key and by ordinal;
#  3. --append with options other than the dataset's (max_count, order,
#     compression) is refused naming the difference; --append --start
#     inside the dataset is refused;
#  4. --overwrite replaces the manifest on purpose;
#  5. shard: the same refusal and --append;
#  6. index: a manifest listing shards it did not index is refused;
#     indexing the shards a manifest lists writes it again;
#  7. Python: a second ShardWriter with another pattern raises UsageError;
#     ShardWriter(append=True) grows the dataset.
. "$(dirname "$0")/lib.sh"
need python3 cmp
tmpdir T
mkdir -p "$T/a" "$T/b" "$T/c"
for i in 0 1 2 3 4 5; do
    echo "a$i" > "$T/a/a$i.txt"; echo "b$i" > "$T/b/b$i.txt"; echo "c$i" > "$T/c/c$i.txt"
done
D=$T/ds
expect_ok "$SK_BIN" pack -q "$T/a" -o "$D/x-%03d.tar" --max-count 2
cp "$D/manifest.json" "$T/m0"
nshards() { python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['shards']))" "$1"; }

step "1. another pattern, or --start 3, into the same directory: refused"
expect_fail 2 "$D/manifest.json lists 3 shards this run would not write" \
    "$SK_BIN" pack -q "$T/b" -o "$D/y-%03d.tar" --max-count 2
assert_contains "$ERR" "--append"
cmp "$D/manifest.json" "$T/m0" || die "manifest changed by a refused run"
[ ! -e "$D/y-000.tar" ] || die "a refused run wrote a shard"
expect_fail 2 "x-000.tar" "$SK_BIN" pack -q "$T/b" -o "$D/x-%03d.tar" --max-count 2 --start 3
cmp "$D/manifest.json" "$T/m0" || die "manifest changed by a refused --start 3"
[ ! -e "$D/x-003.tar" ] || die "a refused --start 3 wrote a shard"

step "2. --append: numbering and ordinals continue"
for f in x-000.tar x-001.tar x-002.tar; do cp "$D/$f" "$T/$f.before"; done
expect_ok "$SK_BIN" pack -q "$T/b" -o "$D/x-%03d.tar" --max-count 2 --append
python3 - "$D/manifest.json" <<'PY' || die "appended manifest wrong"
import json, sys
m = json.load(open(sys.argv[1]))
urls = [s["url"] for s in m["shards"]]
assert urls == ["x-%03d.tar" % i for i in range(6)], urls
assert [s["first_ordinal"] for s in m["shards"]] == [0, 2, 4, 6, 8, 10], m["shards"]
assert m["totals"]["samples"] == 12 and m["totals"]["shards"] == 6, m["totals"]
assert m["options"]["start"] == 0, m["options"]
PY
for f in x-000.tar x-001.tar x-002.tar; do cmp "$D/$f" "$T/$f.before" || die "$f changed by --append"; done
expect_ok "$SK_BIN" verify "$D"
expect_ok "$SK_BIN" get -e txt "$D" b3
assert_eq "$(cat "$OUT")" "b3" "b3 by key"
expect_ok "$SK_BIN" get -e txt "$D" '#9'
assert_eq "$(cat "$OUT")" "b3" "b3 by ordinal"

step "3. --append with other options: refused, naming them"
cp "$D/manifest.json" "$T/m1"
expect_fail 2 "max_count: the dataset's 2, this run's 3" \
    "$SK_BIN" pack -q "$T/c" -o "$D/x-%03d.tar" --max-count 3 --append
expect_fail 2 "order" "$SK_BIN" pack -q "$T/c" -o "$D/x-%03d.tar" --max-count 2 --shuffle --append
expect_fail 2 "compress" "$SK_BIN" pack -q "$T/c" -o "$D/x-%03d.tar" --max-count 2 --compress zstd --append
expect_fail 2 "pattern" "$SK_BIN" pack -q "$T/c" -o "$D/z-%03d.tar" --max-count 2 --append
expect_fail 2 "would write over" "$SK_BIN" pack -q "$T/c" -o "$D/x-%03d.tar" --max-count 2 --append --start 4
expect_fail 2 "choose one" "$SK_BIN" pack -q "$T/c" -o "$D/x-%03d.tar" --append --overwrite
cmp "$D/manifest.json" "$T/m1" || die "manifest changed by a refused --append"
[ ! -e "$D/x-006.tar" ] || die "a refused --append wrote a shard"

step "4. --overwrite replaces it"
expect_ok "$SK_BIN" pack -q "$T/c" -o "$D/y-%03d.tar" --max-count 2 --overwrite
assert_eq "$(nshards "$D/manifest.json")" 3 "shards after --overwrite"
expect_ok "$SK_BIN" verify "$D"

step "5. shard: refused into another dataset's manifest; --append grows it"
S=$T/sh
expect_ok "$SK_BIN" shard -q "$D/x-000.tar" "$D/x-001.tar" -o "$S/s-%02d.tar" --max-count 3
expect_fail 2 "lists 2 shards this run would not write" \
    "$SK_BIN" shard -q "$D/x-002.tar" -o "$S/t-%02d.tar" --max-count 3
expect_ok "$SK_BIN" shard -q "$D/x-002.tar" "$D/x-003.tar" -o "$S/s-%02d.tar" --max-count 3 --append
python3 - "$S/manifest.json" <<'PY' || die "shard --append manifest wrong"
import json, sys
m = json.load(open(sys.argv[1]))
assert [s["url"] for s in m["shards"]] == ["s-00.tar", "s-01.tar", "s-02.tar", "s-03.tar"], m["shards"]
assert [s["first_ordinal"] for s in m["shards"]] == [0, 3, 4, 7], m["shards"]
PY
expect_ok "$SK_BIN" verify "$S"

step "6. index: not over a manifest of other shards"
expect_fail 2 "did not index" "$SK_BIN" index -q "$S/s-00.tar"
assert_eq "$(nshards "$S/manifest.json")" 4 "shards after a refused index"
expect_ok "$SK_BIN" index -q "$S"/s-0[0-3].tar
assert_eq "$(nshards "$S/manifest.json")" 4 "shards after index of them all"
expect_ok "$SK_BIN" index -q --overwrite "$S/s-00.tar"
assert_eq "$(nshards "$S/manifest.json")" 1 "shards after index --overwrite"

step "7. Python ShardWriter: refused, then append=True"
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python python3 - "$T/py" <<'PY' || die "ShardWriter append failed"
import json, os, sys
import shardkit
d = sys.argv[1]
def write(pattern, keys, **kw):
    with shardkit.ShardWriter(os.path.join(d, pattern), max_count=2, **kw) as w:
        for k in keys:
            w.write({"__key__": k, "txt": k})
write("p-%04d.tar", ["a0", "a1", "a2"])
before = open(os.path.join(d, "manifest.json")).read()
try:
    write("q-%04d.tar", ["b0"])
    raise SystemExit("a second writer with another pattern was not refused")
except shardkit.UsageError as e:
    assert "manifest.json lists 2 shards" in str(e), e
assert open(os.path.join(d, "manifest.json")).read() == before
assert not os.path.exists(os.path.join(d, "q-0000.tar"))
write("p-%04d.tar", ["b0", "b1", "b2"], append=True)
m = json.load(open(os.path.join(d, "manifest.json")))
assert [s["url"] for s in m["shards"]] == ["p-%04d.tar" % i for i in range(4)], m["shards"]
assert [s["first_ordinal"] for s in m["shards"]] == [0, 2, 3, 5], m["shards"]
keys = [s["__key__"] for s in shardkit.Reader(d)]
assert keys == ["a0", "a1", "a2", "b0", "b1", "b2"], keys
PY
fi
echo "append: ok"
