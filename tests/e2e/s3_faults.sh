#!/usr/bin/env bash
# s3_faults.sh - through a fault-injecting proxy (503 SlowDown on every 5th
# request, resets halfway through every 7th body, one stalled answer) an
# upload still completes byte-identical.  Then SIGKILL mid-upload and
# --resume: it completes, re-sends no part that was already complete (the
# proxy's log), and no multipart upload is left.  Also listings (prefix copy,
# ListObjectsV2) and a copy across endpoints (ranged GETs into part
# uploads).  moto runs with auth off here: its listings break under auth.
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
s3_serve bkt
head -c 31000000 /dev/urandom >"$t/big.bin"
head -c 3000 /dev/urandom >"$t/s1"
head -c 4000 /dev/urandom >"$t/s2"

# 1. faults
proxy_start "$A" "$t/faults.log" --faults --stall 6
"$SK_BIN" upload --endpoint-url "$PROXY_URL" --read-timeout 2 --part-size 5MiB --multipart-threshold 5MiB \
    --concurrency 4 --json "$t/big.bin" "$t/s1" "$t/s2" s3://bkt/f/ >"$t/f.json"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ok"] and j["retries"] > 0, j' "$t/f.json"
for f in big.bin s1 s2; do aws s3 cp "s3://bkt/f/$f" "$t/back" >/dev/null; cmp "$t/$f" "$t/back"; done
[ -z "$(aws s3api list-multipart-uploads --bucket bkt --query 'Uploads[].Key' --output text | grep -v None || true)" ]

# 2. SIGKILL, then --resume
proxy_start "$A" "$t/kill.log" --delay 0.4
"$SK_BIN" upload --endpoint-url "$PROXY_URL" --part-size 5MiB --concurrency 2 "$t/big.bin" s3://bkt/r/big.bin \
    >/dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do
    [ "$(grep -c '^PUT .*partNumber=.* 200$' "$t/kill.log" 2>/dev/null || true)" -ge 3 ] && break
    sleep 0.05
done
kill -9 $pid
wait $pid 2>/dev/null || true
id=$(aws s3api list-multipart-uploads --bucket bkt --prefix r/big.bin --query 'Uploads[0].UploadId' --output text)
[ -n "$id" ] && [ "$id" != None ] || { echo "no interrupted upload to resume"; exit 1; }
done_parts=$(aws s3api list-parts --bucket bkt --key r/big.bin --upload-id "$id" --query 'Parts[].PartNumber' --output text)
[ -n "$done_parts" ] && [ "$done_parts" != None ] || { echo "no part was complete"; exit 1; }
: >"$t/resume.log"
proxy_start "$A" "$t/resume.log"
"$SK_BIN" upload --endpoint-url "$PROXY_URL" --resume --part-size 5MiB --json "$t/big.bin" s3://bkt/r/big.bin >"$t/r.json"
for p in $done_parts; do
    if grep -q "^PUT .*partNumber=$p&" "$t/resume.log"; then echo "part $p was sent again"; exit 1; fi
done
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["objects"][0]["parts_reused"] >= 3, j' "$t/r.json"
aws s3 cp s3://bkt/r/big.bin "$t/back" >/dev/null
cmp "$t/big.bin" "$t/back"
[ "$(aws s3api list-multipart-uploads --bucket bkt --query 'length(Uploads || `[]`)' --output text)" = 0 ]

# 3. a failed upload without --resume aborts its multipart upload
set +e
"$SK_BIN" upload --endpoint-url "$A" --part-size 5MiB --max-attempts 1 "$t/big.bin" s3://nosuchbucket/x >/dev/null 2>"$t/nb.log"
[ $? -eq 1 ] || exit 1
set -e
grep -q 'does not exist' "$t/nb.log"

# 4. listings: a prefix copied within the endpoint, then across endpoints
"$SK_BIN" upload --endpoint-url "$A" s3://bkt/f/ s3://bkt/g/ >/dev/null
moto_start
B=$MOTO_URL
command aws --endpoint-url "$B" s3 mb s3://dst >/dev/null
"$SK_BIN" upload --endpoint-url "$B" --src-endpoint-url "$A" --part-size 5MiB --multipart-threshold 5MiB \
    s3://bkt/g/ s3://dst/x/ >/dev/null
for f in big.bin s1 s2; do
    command aws --endpoint-url "$B" s3 cp "s3://dst/x/$f" "$t/back" >/dev/null
    cmp "$t/$f" "$t/back"
done
echo ok
