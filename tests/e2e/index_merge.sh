#!/usr/bin/env bash
# index_merge.sh - `shardkit index merge` joins manifests of parallel runs
# (in other directories) into one with continuous ordinals and URLs relative
# to the merged manifest; duplicate shards, duplicate keys across shards and
# missing or repeated --part slices are refused, naming them.  Also --wids.
set -eu
: "${SK_BIN:?}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
mk() { # mk DIR PREFIX N: a shard of N samples in DIR
    mkdir -p "$1/src-$2"
    (cd "$1/src-$2" && for i in $(seq 1 "$3"); do echo "$2 $i" > "$2$i.txt"; printf '%s' "$2$i" > "$2$i.cls"; done
     ls | sort > ../list && tar -cf "../$2.tar" -T ../list && rm -rf ../list)
}
mk run0 a 5; mk run0 b 3; mk run1 c 4; mk dup d 2
cp run0/src-a/a1.txt run0/src-a/a1.cls dup/src-d/ && (cd dup/src-d && tar -cf ../d2.tar a1.cls a1.txt)
"$SK_BIN" index -q run0/a.tar run0/b.tar
"$SK_BIN" index -q --wids run1/c.tar
"$SK_BIN" index -q dup/d2.tar
mkdir out
"$SK_BIN" index merge run0/manifest.json run1/manifest.json -o out/all.json
python3 - <<'PY'
import json
m = json.load(open("out/all.json"))
assert [s["url"] for s in m["shards"]] == ["../run0/a.tar", "../run0/b.tar", "../run1/c.tar"], m["shards"]
assert [s["index"] for s in m["shards"]] == ["../run0/a.tar.idx", "../run0/b.tar.idx", "../run1/c.tar.idx"]
assert [s["first_ordinal"] for s in m["shards"]] == [0, 5, 8]
assert m["totals"]["samples"] == 12 and m["extensions"] == {"cls": 12, "txt": 12}, m
w = json.load(open("run1/wids.json"))
assert w["__kind__"] == "wids-shard-index-v1" and w["wids_version"] == 1
assert w["shardlist"] == [{"url": "c.tar", "nsamples": 4, "filesize": __import__("os").path.getsize("run1/c.tar")}], w
PY
"$SK_BIN" get out/all.json '#8' -e txt | grep -qx "c 1"
"$SK_BIN" get out/all.json '#11' -e cls | grep -qx "c4"
"$SK_BIN" get out/all.json b2 -e txt | grep -qx "b 2"
set +e
"$SK_BIN" index merge run0/manifest.json run0/manifest.json -o out/x.json 2>err; rc=$?
set -e
[ $rc = 1 ] && grep -q "shard .*run0/a.tar is listed twice" err || { cat err; exit 1; }
set +e
"$SK_BIN" index merge run0/manifest.json dup/manifest.json -o out/x.json 2>err; rc=$?
set -e
[ $rc = 1 ] && grep -q "key 'a1' is in two shards: ../run0/a.tar and ../dup/d2.tar" err || { cat err; exit 1; }
[ ! -e out/x.json ]
# --part slices: a missing part and a repeated part are named
python3 - <<'PY'
import json
for name, part in (("run0", 0), ("run1", 1)):
    m = json.load(open(f"{name}/manifest.json"))
    m["part"], m["parts"] = part, 3
    for s in m["shards"]: s["part"] = part
    json.dump(m, open(f"{name}/p.json", "w"))
PY
set +e
"$SK_BIN" index merge run0/p.json run1/p.json -o out/x.json 2>err; rc=$?
set -e
[ $rc = 1 ] && grep -q "part 2/3 is missing" err || { cat err; exit 1; }
set +e
"$SK_BIN" index merge run0/p.json run0/p.json run1/p.json -o out/x.json 2>err; rc=$?
set -e
[ $rc = 1 ] && grep -q "part 0/3 appears twice" err || { cat err; exit 1; }
set +e; "$SK_BIN" index merge run0/manifest.json 2>err; rc=$?; set -e
{ [ $rc = 2 ] && grep -q -- "-o OUT.json is required" err; } || { echo "merge without -o: exit $rc"; cat err; exit 1; }
# another scheme is refused by name, never glued to the working directory
# (s3:// manifests in and out: s3_places.sh)
set +e; "$SK_BIN" index merge gs://b/m.json -o out/y.json 2>err; rc=$?; set -e
{ [ $rc = 2 ] && grep -q "gs:// is not a scheme" err && ! grep -q "$PWD" err; } ||
    { echo "merge of a gs:// manifest: exit $rc"; cat err; exit 1; }
set +e; "$SK_BIN" index merge run0/manifest.json -o gs://b/y.json 2>err; rc=$?; set -e
{ [ $rc = 2 ] && grep -q "gs:// is not a scheme" err; } ||
    { echo "merge to gs://: exit $rc"; cat err; exit 1; }
echo "merge ok"
