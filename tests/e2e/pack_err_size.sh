#!/usr/bin/env bash
# pack: a sample larger than --max-size gets a warning naming it and a shard
# of its own; every other shard respects the limit.  Covers both ways a
# sample is written: built in a reader's ring slot (30 KB) and streamed by
# the writer (5 MiB, more than a slot holds).  Contents round-trip.
. "$(dirname "$0")/lib.sh"
need python3 tar
tmpdir

max=10240
mkdir -p "$T/in"
for i in $(seq -w 0 19); do
    head -c 1000 /dev/urandom >"$T/in/k$i.txt"
    echo "$i" >"$T/in/k$i.cls"
done
head -c 30000 /dev/urandom >"$T/in/k05.bin"
head -c $((5 * 1024 * 1024 + 7)) /dev/urandom >"$T/in/k12.bin"

for jobs in 1 2; do
    step "--max-size $max with two oversized samples, --jobs $jobs"
    [ -d "$T/out" ] && mv "$T/out" "$T/out.prev"
    expect_ok "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar" --max-size $max -j $jobs --json
    assert_contains "$ERR" "k05"
    assert_contains "$ERR" "k12"
    assert_contains "$ERR" "max-size"
    check_shards "$T/out"
    python3 - "$T/out" $max <<'PY' || die "shard sizes or grouping wrong"
import os, sys, tarfile, json
d, mx = sys.argv[1], int(sys.argv[2])
m = json.load(open(os.path.join(d, "manifest.json")))
big = []
seen = []
for s in m["shards"]:
    p = os.path.join(d, s["url"])
    size = os.path.getsize(p)
    with tarfile.open(p) as t:
        keys = sorted({n.split(".")[0] for n in t.getnames()})
    seen += keys
    if size > mx:
        assert len(keys) == 1 and keys[0] in ("k05", "k12"), (p, size, keys)
        big.append(keys[0])
    else:
        assert "k05" not in keys and "k12" not in keys, (p, keys)
assert sorted(big) == ["k05", "k12"], big
assert seen == sorted(seen) and len(seen) == 20, seen
PY
    mkdir -p "$T/x$jobs"
    for t in "$T"/out/*.tar; do tar xf "$t" -C "$T/x$jobs"; done
    diff -r "$T/in" "$T/x$jobs" >/dev/null || die "extracted shards differ from the input"
done
for f in "$T"/out/*; do cmp "$f" "$T/out.prev/${f##*/}" || die "--jobs 1 and 2 differ: ${f##*/}"; done
echo "oversized sample cases passed"
