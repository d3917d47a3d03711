#!/usr/bin/env bash
# part_shard: `shardkit shard --part I/N` over the same inputs gives disjoint
# slices that together hold every input sample exactly once (N = 1, 2, 3, 7),
# whatever order the inputs are given in (which only changes the order
# within a part); names carry {part}; the parts'
# manifests merge with continuous ordinals.
. "$(dirname "$0")/lib.sh"
need tar sort cmp
tmpdir T
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/in/i-%03d.tar" --max-count 40
(cd "$T/c" && find . -type f | sed 's|^\./||' | sort) > "$T/all"
ins=$(ls "$T"/in/i-*.tar)
rev=$(ls "$T"/in/i-*.tar | sort -r)
for n in 1 2 3 7; do
    step "N=$n"
    for i in $(seq 0 $((n - 1))); do
        # shellcheck disable=SC2086
        expect_ok "$SK_BIN" shard $ins -o "$T/o$n/p{part}-%03d.tar" --max-count 25 --part "$i/$n"
        # shellcheck disable=SC2086
        expect_ok "$SK_BIN" shard $rev -o "$T/r$n/p{part}-%03d.tar" --max-count 25 --part "$i/$n"
    done
    for t in "$T/o$n"/*.tar; do tar tf "$t"; done | sort > "$T/got$n"
    cmp "$T/got$n" "$T/all" || die "N=$n: the parts do not hold every member exactly once"
    # shard keeps the input order, so listing the inputs in another order
    # changes the order inside a part, never which samples it holds
    for i in $(seq 0 $((n - 1))); do
        a=$(for t in "$T/o$n"/p$i-*.tar; do [ -e "$t" ] && tar tf "$t"; done | sort)
        b=$(for t in "$T/r$n"/p$i-*.tar; do [ -e "$t" ] && tar tf "$t"; done | sort)
        [ "$a" = "$b" ] || die "N=$n: part $i holds other samples when inputs are reversed"
    done
    expect_ok "$SK_BIN" index merge "$T/o$n"/manifest-*.json -o "$T/o$n/manifest.json"
    python3 - "$T/o$n/manifest.json" <<'PY' || die "N=$n: merged manifest is wrong"
import json, sys
m = json.load(open(sys.argv[1]))
o = 0
for s in m["shards"]:
    assert s["first_ordinal"] == o, s
    o += s["samples"]
assert o == 300 == m["totals"]["samples"], o
PY
done
expect_fail 2 "{part}" "$SK_BIN" shard $ins -o "$T/bad/x-%03d.tar" --part 0/2
echo "part_shard: ok"
