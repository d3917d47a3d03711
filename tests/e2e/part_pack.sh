#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# part_pack.sh - `pack --part I/N` without a scheduler: for N = 1, 2, 3, 7
# every sample of the corpus is in exactly one part (the parts' shards,
# together, hold every file once), shard and manifest names carry {part},
# each manifest records part/parts, and `index merge` joins them with
# continuous ordinals.  The partition does not depend on how the input is
# listed (a directory, a sorted list, a reversed list: byte-identical parts).
# A part reruns alone with --resume and restores a lost shard byte-identical.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 300 --per-dir 40 >/dev/null || die "mkcorpus failed"
(cd c && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >all.txt
nfiles=$(wc -l <all.txt)

for n in 1 2 3 7; do
    step "N=$n: pack each part"
    for ((i = 0; i < n; i++)); do
        expect_ok "$SK_BIN" pack c -q -o "o$n/train-{part}-%04d.tar" --max-count 16 --part "$i/$n"
        [ -f "o$n/manifest-$i.json" ] || die "N=$n: part $i wrote no manifest-$i.json"
    done
    check_shards "o$n"
    step "N=$n: every file in exactly one part"
    for t in "o$n"/*.tar; do tar tf "$t"; done | LC_ALL=C sort >got.txt
    [ "$(wc -l <got.txt)" -eq "$nfiles" ] || die "N=$n: $(wc -l <got.txt) members, corpus has $nfiles files"
    cmp -s got.txt all.txt || die "N=$n: the parts' members differ from the corpus: $(diff all.txt got.txt | head -5)"
    python3 - "o$n" "$n" <<'PY' || die "N=$n: manifests"
import glob, json, sys, re
d, n = sys.argv[1], int(sys.argv[2])
w = len(str(n - 1))
seen = 0
for i in range(n):
    m = json.load(open(f"{d}/manifest-{i}.json"))
    assert m["part"] == i and m["parts"] == n, (i, m.get("part"), m.get("parts"))
    assert m["options"]["pattern"] == "train-{part}-%04d.tar", m["options"]
    for s in m["shards"]:
        assert s["part"] == i, s
        assert re.fullmatch(r"train-%0*d-\d{4}\.tar" % (w, i), s["url"]), s["url"]
    seen += m["totals"]["samples"]
assert seen == 300, seen
PY
    step "N=$n: merge"
    expect_ok "$SK_BIN" index merge "o$n"/manifest-*.json -o "o$n/manifest.json"
    python3 - "o$n/manifest.json" <<'PY' || die "N=$n: merged manifest"
import json, sys
m = json.load(open(sys.argv[1]))
o = 0
for s in m["shards"]:
    assert s["first_ordinal"] == o, (s, o)
    o += s["samples"]
assert o == m["totals"]["samples"] == 300, o
assert m["totals"]["members"] == 900 and m["extensions"] == {"cls": 300, "jpg": 300, "json": 300}, m
PY
done

step "the part of a sample depends on its key only: other listings, same bytes"
(cd c && find . -type f | LC_ALL=C sort -r) >rev.txt
(cd c && find . -type f | sed 's|^\./||' | LC_ALL=C sort -t/ -k2) >bykey.txt
for ((i = 0; i < 3; i++)); do
    expect_ok "$SK_BIN" pack --files-from rev.txt --root c -q -o "r/train-{part}-%04d.tar" --max-count 16 --part "$i/3"
    expect_ok "$SK_BIN" pack --files-from bykey.txt --root c -q -o "k/train-{part}-%04d.tar" --max-count 16 --part "$i/3"
done
for f in o3/*; do
    b=$(basename "$f")
    [ "$b" = manifest.json ] && continue
    cmp -s "$f" "r/$b" || die "reversed list: $b differs"
    cmp -s "$f" "k/$b" || die "list by key: $b differs"
done
[ "$(ls r | wc -l)" = "$(ls o3 | grep -vc '^manifest.json$')" ] || die "reversed list: other files"

step "a part reruns alone with --resume and restores its lost shard"
victim=$(ls o3/train-1-*.tar | sed -n 2p)
cp "$victim" saved.tar
rm "$victim"
stamp() { find o3 -name 'train-[02]-*' -printf '%P %T@\n' | sort; }
before=$(stamp)
expect_ok "$SK_BIN" pack c -q --json -o "o3/train-{part}-%04d.tar" --max-count 16 --part 1/3 --resume
assert_contains "$OUT" '"shards_resumed": '"$(( $(ls o3/train-1-*.tar | wc -l) - 1 ))"
cmp -s "$victim" saved.tar || die "$victim: not restored byte-identical"
cmp -s o3/manifest-1.json r/manifest-1.json || die "manifest-1.json changed by the rerun"
[ "$(stamp)" = "$before" ] || die "the rerun of part 1 touched other parts' files"

step "merge refuses a missing or repeated part, naming it"
expect_fail 1 "part 1/3 is missing" "$SK_BIN" index merge o3/manifest-0.json o3/manifest-2.json -o x.json
expect_fail 1 "part 2/3 appears twice" "$SK_BIN" index merge o3/manifest-0.json o3/manifest-1.json o3/manifest-2.json o3/manifest-2.json -o x.json
expect_fail 1 "parts=7" "$SK_BIN" index merge o3/manifest-0.json o7/manifest-1.json o3/manifest-2.json -o x.json
[ ! -e x.json ] || die "a refused merge wrote x.json"

step "more parts than samples: empty parts still write a manifest, and merge"
mkdir tiny && cp c/n00000/0000000[0-2].* tiny/
for ((i = 0; i < 7; i++)); do
    expect_ok "$SK_BIN" pack tiny -q -o "t/s-{part}-%d.tar" --part "$i/7"
done
expect_ok "$SK_BIN" index merge t/manifest-*.json -o t/manifest.json
python3 -c "import json,sys; m=json.load(open('t/manifest.json')); assert m['totals']['samples'] == 3, m" ||
    die "tiny merge"

step "usage errors"
expect_fail 2 "has no {part} field" "$SK_BIN" pack c -o "u/train-%04d.tar" --part 0/2
expect_fail 2 "{part} in a name needs --part" "$SK_BIN" pack c -o "u/train-{part}-%04d.tar"
expect_fail 2 "numbered 0..1" "$SK_BIN" pack c -o "u/train-{part}-%04d.tar" --part 2/2
expect_fail 2 "--parts needs --part" "$SK_BIN" pack c -o "u/train-{part}-%04d.tar" --parts 2
expect_fail 2 "--parts '0'" "$SK_BIN" pack c -o "u/train-{part}-%04d.tar" --part auto --parts 0
expect_fail 2 "disagrees with --parts 3" "$SK_BIN" pack c -o "u/train-{part}-%04d.tar" --part 1/2 --parts 3
expect_fail 2 "none of SLURM_ARRAY_TASK_ID" env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX \
    -u AWS_BATCH_JOB_ARRAY_INDEX "$SK_BIN" pack c -o "u/train-{part}-%04d.tar" --part auto --parts 2
[ ! -e u ] || die "a usage error created output"

step "--part auto from each scheduler's variables"
expect_ok env JOB_COMPLETION_INDEX=1 "$SK_BIN" pack c -q -o "a/train-{part}-%04d.tar" --max-count 16 --part auto --parts 3
cmp -s a/manifest-1.json o3/manifest-1.json || die "JOB_COMPLETION_INDEX=1: not part 1/3"
expect_ok env AWS_BATCH_JOB_ARRAY_INDEX=2 "$SK_BIN" pack c -q -o "a/train-{part}-%04d.tar" --max-count 16 --part auto --parts 3
cmp -s a/manifest-2.json o3/manifest-2.json || die "AWS_BATCH_JOB_ARRAY_INDEX=2: not part 2/3"
expect_ok env SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=2 \
    "$SK_BIN" pack c -q -o "a/train-{part}-%04d.tar" --max-count 16 --part auto
cmp -s a/manifest-0.json o3/manifest-0.json || die "SLURM_ARRAY_TASK_ID=0: not part 0/3"
for f in a/*.tar; do cmp -s "$f" "o3/$(basename "$f")" || die "$f differs from o3"; done
echo "ok"
