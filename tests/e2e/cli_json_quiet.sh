#!/usr/bin/env bash
# cli_json_quiet.sh - --json and -q on every tool (the tools are read from
# `shardkit --help`, so a tool added later is held to it too): each --help
# lists both, and each tool takes them.  What --json prints parses as JSON
# and says what docs/<tool>.md says it does: index one object (shards,
# samples, results per shard), get the sample's place and members (no
# bytes), cat one object per sample; -q leaves upload's and index's stdout
# empty; upload --dry-run --json the plan as JSON lines.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T

tools=$("$SK_BIN" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
[ -n "$tools" ] || die "no commands in shardkit --help"
for t in $tools; do
    "$SK_BIN" "$t" --help >"$T/h" || die "$t --help failed"
    grep -q -- '--json' "$T/h" || die "$t --help has no --json"
    grep -q -- '-q, --quiet' "$T/h" || die "$t --help has no -q, --quiet"
done

mkdir -p "$T/in/a"
for i in 0 1 2 3; do printf 'x%d' $i >"$T/in/a/s$i.txt"; printf '%d' $i >"$T/in/a/s$i.cls"; done
expect_ok "$SK_BIN" pack -q "$T/in" -o "$T/ds/t-%02d.tar" --max-count 2

step "index --json: one object"
expect_ok "$SK_BIN" index --json "$T/ds/t-{00..01}.tar"
python3 - "$OUT" <<'PY' || die "index --json: $(cat "$OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["shards"] == 2 and d["samples"] == 4 and d["failed"] == 0, d
assert [r["samples"] for r in d["results"]] == [2, 2], d
PY
expect_ok "$SK_BIN" index -q "$T/ds/t-{00..01}.tar"
[ ! -s "$OUT" ] || die "index -q printed: $(cat "$OUT")"

step "get --json: where the sample is, no bytes"
expect_ok "$SK_BIN" get --json "$T/ds" a/s2
python3 - "$OUT" <<'PY' || die "get --json: $(cat "$OUT")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["key"] == "a/s2" and d["ordinal"] == 2 and d["shard"].endswith("t-01.tar"), d
assert sorted(m["ext"] for m in d["members"]) == ["cls", "txt"], d
PY
expect_ok "$SK_BIN" get -q "$T/ds" a/s2 -e txt
assert_eq "$(cat "$OUT")" x2 "get -q -e txt"

step "cat --json: one object per sample"
expect_ok "$SK_BIN" cat --json -q "$T/ds"
python3 - "$OUT" <<'PY' || die "cat --json: $(cat "$OUT")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["key"] for r in rows] == ["a/s0", "a/s1", "a/s2", "a/s3"], rows
assert all(len(r["members"]) == 2 for r in rows), rows
PY

step "upload -q --dry-run --json: the plan, one object per transfer"
expect_ok "$SK_BIN" upload -q --dry-run --json "$T/ds" s3://b/p/
python3 - "$OUT" <<'PY' || die "upload --dry-run --json: $(cat "$OUT")"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert [r["key"] for r in rows][-1] == "p/manifest.json" and len(rows) == 5, rows
PY
exit 0
