#!/usr/bin/env bash
# shard_dry_run.sh - `shard --dry-run` reads the inputs and makes every
# shard as a run would, into a sink that only counts: it prints the plan
# (each shard's name, samples and bytes, then the totals; --json the run's
# object with the plan in it) and creates nothing: no directory, shard,
# index, manifest or lock.  The plan is what the run then writes, name for
# name and byte for byte: through the index (plain tar inputs, in order
# and shuffled), through libarchive (--select), compressed, --num-shards,
# -o -.  Hostile places: an output directory that does not exist, one that
# cannot be created (/proc), a dataset already there (--append numbers
# after it, and the manifest is left as it was; without --append a foreign
# manifest is refused as the run refuses it).
. "$(dirname "$0")/lib.sh"
need python3
# the standard library only: Debian's python starts in a tenth of the time
# of a pyenv shim
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmpdir T
tmpdir P # the plans, outside the tree watched
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 --per-dir 100 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/in/s-%03d.tar" --max-count 100 -q
tree() { (cd "$T" && find . | sort); }

compare() { # plan.json run.json DIR: the plan is what the run wrote
    "$PY" - "$@" <<'PY' || die "plan and run differ: $(cat "$1") / $(cat "$2")"
import json, os, sys
plan, run, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
man = json.load(open(os.path.join(d, "manifest.json")))
for k in ("shards", "samples", "members", "output_bytes"):
    assert plan[k] == run[k], (k, plan[k], run[k])
assert len(plan["plan"]) == plan["shards"] == len(man["shards"])
for p, m in zip(plan["plan"], man["shards"]):
    assert os.path.basename(p["name"]) == m["url"], (p, m)
    assert p["samples"] == m["samples"], (p, m)
    assert p["bytes"] == m["bytes"] == os.path.getsize(p["name"]), (p, m)
assert sum(p["bytes"] for p in plan["plan"]) == plan["output_bytes"]
PY
}

step "the plan in words"
before=$(tree)
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/o/t-%03d.tar" --max-count 70 --dry-run
assert_contains "$OUT" "would write $T/o/t-004.tar: 20 samples, "
assert_contains "$OUT" "would write: 5 shards, 300 samples, "
[ "$(tree)" = "$before" ] || die "--dry-run left something on disk: $(diff <(echo "$before") <(tree))"
for opts in "--max-count 70" "--max-size 300K --shuffle --seed 3" "--select jpg,cls --max-count 100" \
            "--num-shards 4 --compress zstd"; do
    step "shard $opts"
    before=$(tree)
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/o/t-%03d.tar" $opts --dry-run --json
    cp "$OUT" "$P/plan.json"
    [ "$(tree)" = "$before" ] || die "--dry-run --json left something on disk"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/o/t-%03d.tar" $opts --json
    compare "$P/plan.json" "$OUT" "$T/o"
    rm -rf "$T/o"
done

step "-o -: the one stream's bytes, and nothing on stdout but the plan"
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o - --dry-run --json
n=$("$PY" -c 'import json,sys; p=json.load(open(sys.argv[1])); print(p["plan"][0]["name"], p["output_bytes"])' "$OUT")
"$SK_BIN" shard "$T/in/manifest.json" -o - | wc -c | grep -qx "${n#- }" || die "-o - wrote other than $n bytes"

step "hostile places: a directory that does not exist, one that cannot be made"
for out in "$T/not/there/t-%03d.tar" "/proc/sk-dry-$$/t-%03d.tar"; do
    before=$(tree)
    expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$out" --max-count 100 --dry-run
    assert_contains "$OUT" "would write: 3 shards, 300 samples"
    [ "$(tree)" = "$before" ] || die "--dry-run to $out left something on disk"
done
[ ! -e "/proc/sk-dry-$$" ] || die "something was made in /proc"
expect_fail 1 "/proc/sk-dry-$$" "$SK_BIN" shard "$T/in/manifest.json" -o "/proc/sk-dry-$$/t-%03d.tar"

step "a dataset already there: --append plans after it, leaves it; a foreign manifest refused"
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/d/t-%03d.tar" --max-count 100
cp "$T/d/manifest.json" "$P/man.before"
before=$(tree)
expect_ok "$SK_BIN" shard "$T/in/manifest.json" -o "$T/d/t-%03d.tar" --max-count 100 --append --dry-run
assert_contains "$OUT" "would write $T/d/t-003.tar: 100 samples"
[ "$(tree)" = "$before" ] || die "--append --dry-run left something on disk"
cmp -s "$T/d/manifest.json" "$P/man.before" || die "--append --dry-run changed the manifest"
expect_fail 2 "--append adds" "$SK_BIN" shard "$T/in/manifest.json" -o "$T/d/u-%03d.tar" --dry-run
exit 0
