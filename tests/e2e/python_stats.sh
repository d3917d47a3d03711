#!/usr/bin/env bash
# python_stats.sh - shardkit.stats(dataset) returns the numbers `shardkit
# stats --json` prints (every field but the run's seconds), with images and
# JSON keys, over a plain and a .tar.zst dataset (whose JPEG headers come
# from decompressing only up to them); a missing dataset raises
# shardkit.Error naming it.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 130 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/plain/t-%03d.tar" --max-count 40
expect_ok "$SK_BIN" pack "$T/c" -o "$T/zst/t-%03d.tar.zst" --max-count 40 --compress zstd
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python

for d in plain zst; do
    step "shardkit.stats equals stats --json ($d)"
    expect_ok "$SK_BIN" stats --json --images --json-keys "$T/$d/manifest.json"
    python3 - "$OUT" "$T/$d/manifest.json" <<'PY' || die "shardkit.stats differs ($d)"
import json, sys
import shardkit
cli = json.load(open(sys.argv[1]))
py = shardkit.stats(sys.argv[2], images=True, json_keys=True)
for d in (cli, py):
    assert d.pop("seconds") >= 0
assert py == cli, [k for k in cli if cli[k] != py.get(k)]
assert py["totals"]["samples"] == 130 and py["images"]["count"] == 130, py["totals"]
plain = shardkit.stats(sys.argv[2])
assert "images" not in plain and plain["totals"] == py["totals"]
PY
done

step "a missing dataset raises an error naming it"
python3 - "$T/nope/manifest.json" <<'PY' || die "no error"
import sys
import shardkit
try:
    shardkit.stats(sys.argv[1])
except shardkit.Error as e:
    assert "nope" in str(e), e
else:
    raise SystemExit("no error")
PY
echo "python_stats: ok"
