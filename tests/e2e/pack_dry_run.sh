#!/usr/bin/env bash
# pack_dry_run.sh - `pack --dry-run` prints the plan (shards, samples, tar
# bytes; --json the same object a run prints) and creates nothing: no
# directory, no shard, no manifest; the plan is what the run then writes,
# in key order and shuffled, by count and by size; --image-size is refused
# (resized images have no size until they are encoded).
. "$(dirname "$0")/lib.sh"
need python3
# the standard library only: Debian's python starts in a tenth of the time
# of a pyenv shim
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
tmpdir T
"$SK_TOOLS/mkcorpus" "$T/c" --samples 600 --per-dir 100 >/dev/null || die "mkcorpus failed"
for opts in "--max-count 70" "--max-size 300K" "--max-size 300K --shuffle --seed 3"; do
    step "pack $opts"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/o/t-%03d.tar" $opts --dry-run
    assert_contains "$OUT" "would write: "
    [ ! -e "$T/o" ] || die "--dry-run created $T/o"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/o/t-%03d.tar" $opts --dry-run --json
    cp "$OUT" "$T/plan.json"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/o/t-%03d.tar" $opts --json
    "$PY" - "$T/plan.json" "$OUT" "$T/o" <<'PY' || die "plan and run differ: $(cat "$T/plan.json") / $(cat "$OUT")"
import glob, json, os, sys
plan, run = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
tars = sorted(glob.glob(os.path.join(sys.argv[3], "*.tar")))
assert plan["shards"] == run["shards"] == len(tars), (plan, run)
assert plan["samples"] == run["samples"] == 600, (plan, run)
assert plan["output_bytes"] == run["output_bytes"] == sum(os.path.getsize(t) for t in tars), (plan, run)
assert plan["files"] == run["files"] == 1800, (plan, run)
PY
    rm -rf "$T/o"
done
step "--image-size is refused"
expect_fail 2 "--dry-run does not combine with --image-size" "$SK_BIN" pack "$T/c" -o "$T/o/t-%03d.tar" --dry-run --image-size 32
exit 0
