#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3_upload.sh - shardkit upload against moto_server with signature checking
# on: a multipart file, a small file and a dataset (shards, then indexes,
# then manifest.json last) come back byte-identical through `aws s3 cp`;
# --verify reads back; a wrong secret key fails fast with a clear message and
# no retries; what the aws cli uploads, shardkit copies server-side
# (CopyObject and UploadPartCopy) and the copy downloads byte-identical.
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
s3_serve auth bkt
sk() { "$SK_BIN" upload --endpoint-url "$MOTO_URL" "$@"; }

head -c 23000000 /dev/urandom >"$t/big.bin"
echo "hello" >"$t/small.txt"
mkdir -p "$t/ds/sub"
for i in 0 1 2; do head -c $((300000 + i)) /dev/urandom >"$t/ds/train-00000$i.tar"; head -c 100 /dev/urandom >"$t/ds/train-00000$i.tar.idx"; done
head -c 6000000 /dev/urandom >"$t/ds/sub/deep.bin"
echo '{"shards":[]}' >"$t/ds/manifest.json"
touch "$t/ds/.train-000009.tar.tmp"   # an unfinished shard is never uploaded

# files, multipart with 5 MiB parts and a 5 MiB threshold
sk --part-size 5MiB --multipart-threshold 5MiB --json "$t/big.bin" "$t/small.txt" s3://bkt/files/ >"$t/out.json"
python3 - "$t/out.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ok"] and j["objects_ok"] == 2 and j["objects_failed"] == 0, j
big = [o for o in j["objects"] if o["key"] == "files/big.bin"][0]
assert big["parts"] == 5 and big["size"] == 23000000, big
PY
aws s3 cp s3://bkt/files/big.bin "$t/big.back" >/dev/null
aws s3 cp s3://bkt/files/small.txt "$t/small.back" >/dev/null
cmp "$t/big.bin" "$t/big.back"
cmp "$t/small.txt" "$t/small.back"

# a single file to an exact key, with --verify
sk --verify "$t/small.txt" s3://bkt/exact/name.txt >/dev/null
aws s3 cp s3://bkt/exact/name.txt "$t/exact.back" >/dev/null
cmp "$t/small.txt" "$t/exact.back"

# a dataset: the manifest goes up only after every shard and index is confirmed
sk -v --multipart-threshold 5MiB --part-size 5MiB "$t/ds" s3://bkt/ds/ >"$t/ds.out" 2>"$t/ds.log"
grep -q 'upload: .*manifest.json -> s3://bkt/ds/manifest.json' "$t/ds.out"
last_other=$(grep -n 'HEAD .*/bkt/ds/\(train\|sub\)' "$t/ds.log" | tail -1 | cut -d: -f1)
manifest_put=$(grep -n 'PUT .*/bkt/ds/manifest.json' "$t/ds.log" | head -1 | cut -d: -f1)
[ "$manifest_put" -gt "$last_other" ] || { echo "manifest.json went up before the data"; exit 1; }
last_data=$(grep -n 'HEAD .*/bkt/ds/train-[0-9]*.tar$' "$t/ds.log" | tail -1 | cut -d: -f1)
first_idx=$(grep -n 'PUT .*/bkt/ds/.*\.idx' "$t/ds.log" | head -1 | cut -d: -f1)
[ "$first_idx" -gt "$last_data" ] || { echo "an index went up before the shards"; exit 1; }
# (listings fail under moto's auth: fetch each object by name)
for f in $(cd "$t/ds" && find . -type f ! -name '.*'); do
    aws s3 cp "s3://bkt/ds/${f#./}" "$t/one.back" >/dev/null
    cmp "$t/ds/$f" "$t/one.back"
done
[ "$(grep -c '^upload: ' "$t/ds.out")" -eq 8 ]
if grep -q "$AWS_SECRET_ACCESS_KEY" "$t/ds.log"; then echo "secret key in the -v log"; exit 1; fi

# a wrong secret: one clear error, fast, no retry storm
start=$(date +%s)
set +e
AWS_SECRET_ACCESS_KEY=wrongwrongwrong "$SK_BIN" upload -v --endpoint-url "$MOTO_URL" "$t/big.bin" "$t/small.txt" s3://bkt/bad/ >/dev/null 2>"$t/bad.log"
rc=$?
set -e
[ $rc -eq 1 ] || { echo "wrong key: exit $rc"; exit 1; }
grep -q 'check the secret access key and the system clock' "$t/bad.log"
[ "$(grep -c '^s3: \(PUT\|POST\)' "$t/bad.log")" -le 2 ] || { cat "$t/bad.log"; echo "retried a 403"; exit 1; }
grep -q 'will retry' "$t/bad.log" && { echo "retried a 403"; exit 1; }
[ $(( $(date +%s) - start )) -le 5 ]

# what the aws cli uploads, shardkit copies server-side
head -c 12000000 /dev/urandom >"$t/cli.bin"
aws s3 cp "$t/cli.bin" s3://bkt/cli/cli.bin >/dev/null
aws s3 cp "$t/small.txt" s3://bkt/cli/small.txt >/dev/null
sk -v --multipart-threshold 5MiB --part-size 5MiB s3://bkt/cli/cli.bin s3://bkt/copy/ >/dev/null 2>"$t/copy.log"
grep -q 'x-amz-copy-source\|partNumber=3' "$t/copy.log"
sk s3://bkt/cli/small.txt s3://bkt/copy/small-copy.txt >/dev/null
aws s3 cp s3://bkt/copy/cli.bin "$t/cli.back" >/dev/null
aws s3 cp s3://bkt/copy/small-copy.txt "$t/small-copy.back" >/dev/null
cmp "$t/cli.bin" "$t/cli.back"
cmp "$t/small.txt" "$t/small-copy.back"

# usage errors exit 2
set +e
"$SK_BIN" upload >/dev/null 2>&1; [ $? -eq 2 ] || exit 1
"$SK_BIN" upload "$t/small.txt" /not/s3 >/dev/null 2>&1; [ $? -eq 2 ] || exit 1
"$SK_BIN" upload --part-size 1MiB "$t/small.txt" s3://bkt/x >/dev/null 2>&1; [ $? -eq 2 ] || exit 1
set -e
echo ok
