#!/usr/bin/env bash
# s3_upload_many.sh - a directory of more files than the process may hold
# open uploads whole: files are opened when their turn comes, not all at
# once (a dataset of 20,000 small files once failed with EMFILE).
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
s3_serve bkt
mkdir -p "$t/d"
for i in $(seq 1 600); do echo "file $i" > "$t/d/f$i.txt"; done
( ulimit -n 128; "$SK_BIN" upload --endpoint-url "$MOTO_URL" --json "$t/d" s3://bkt/many/ ) >"$t/out.json"
n=$(aws s3 ls s3://bkt/many/ | wc -l)
[ "$n" -eq 600 ] || { echo "uploaded $n of 600 objects"; exit 1; }
aws s3 cp s3://bkt/many/f599.txt - | cmp - "$t/d/f599.txt"
echo "s3_upload_many: ok"
