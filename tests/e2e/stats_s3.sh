#!/usr/bin/env bash
# stats_s3.sh - `shardkit stats` of a dataset in S3 (moto, auth on) gives
# the numbers it gives for the same dataset on disk (every field but the
# dataset's name, the shard URLs and the time), plain and .tar.zst, with
# --images (each JPEG's header through a ranged GET) and --json-keys;
# --read-rate counts the requests it makes, and the cache's second run
# makes none; serve shows a sample from S3.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin
s3_dataset auth dset 90 --max-count 40

for d in plain zst; do
    step "stats of s3://dset/$d/ equals stats of the local copy"
    expect_ok "$SK_BIN" stats --json --images --json-keys --endpoint-url "$A" "s3://dset/$d/"
    cp "$OUT" "$T/s3.json"
    expect_ok "$SK_BIN" stats --json --images --json-keys "$T/$d/manifest.json"
    python3 - "$T/s3.json" "$OUT" <<'PY' || die "$d: S3 stats differ from local"
import json, os, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
for d in (a, b):
    d.pop("seconds"), d.pop("dataset")
    for s in d["shards"]:
        s["url"] = os.path.basename(s["url"])
    for o in d["balance"]["off"]:
        o["url"] = os.path.basename(o["url"])
assert a == b, [k for k in a if a[k] != b.get(k)]
assert a["totals"]["samples"] == 90 and a["images"]["count"] == 90 and a["images"]["bad"] == 0
PY
done

step "--read-rate over S3: requests counted; from the cache, one HEAD a shard (its ETag checked) and no GET"
expect_ok "$SK_BIN" stats --read-rate --shards 2 --json --endpoint-url "$A" s3://dset/plain/
python3 - "$OUT" <<'PY' || die "--read-rate over S3"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["no_cache"]["samples"] == 80 and d["no_cache"]["requests"] >= 2, d
# a shard read by URL is checked against its object's ETag (one HEAD)
# before its cached copy is used: no more requests than shards
assert d["cache_fill"]["requests"] >= 2 and d["cache_read"]["requests"] <= d["shards"], d
assert d["cache_read"]["requests"] < d["no_cache"]["requests"], d
assert d["cache_read"]["samples"] == 80, d
PY
ls "${TMPDIR:-/tmp}" | grep -q "^shardkit-read-rate" && die "the read-rate cache directory was left behind"

step "serve shows a sample from S3"
"$SK_BIN" serve --port 0 --endpoint-url "$A" s3://dset/zst/ >"$T/srv.out" 2>"$T/srv.err" &
at_exit "kill $!"
for _ in $(seq 100); do grep -q serving "$T/srv.out" && break; sleep 0.1; done
U=$(sed -n 's/^serving //p' "$T/srv.out")
[ -n "$U" ] || die "serve did not start: $(cat "$T/srv.err")"
curl -sf "${U}sample?o=3" >"$T/s.html" || die "sample page from S3"
assert_contains "$T/s.html" "&quot;label&quot;" "JSON member from S3"
curl -sf -o "$T/m.jpg" "${U}member?o=3&m=1" || die "member from S3"
key=$(sed -n 's/.*key <code>\([^<]*\)<.*/\1/p' "$T/s.html")
cmp "$T/m.jpg" "$T/c/$key.jpg" || die "the JPEG served from S3 differs from the source"
echo "stats_s3: ok"
