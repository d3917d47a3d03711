#!/usr/bin/env bash
# s3_upload_sync.sh - `upload --sync` sends only what the destination does
# not hold yet, as `aws s3 sync` and `rclone copy` users expect of a rerun:
# counted through the proxy's request log, a rerun of the same upload
# (small files in one PUT each, one file in multipart) sends no PUT and no
# multipart upload, only the listing; a file whose bytes changed at the same
# size is sent again, and only it; without --sync everything goes again.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp head
s3_serve bkt
mkdir -p "$T/d/sub"
for i in $(seq 1 12); do printf 'object %d\n' "$i" >"$T/d/f$i.bin"; done
printf 'deep\n' >"$T/d/sub/g.bin"
head -c $((12 << 20)) /dev/urandom >"$T/d/big.bin"
proxy_start "$MOTO_URL" "$T/log"
U=("$SK_BIN" upload --endpoint-url "$PROXY_URL" --multipart-threshold 5MiB --part-size 5MiB)

step "the first run sends everything"
expect_ok "${U[@]}" --sync "$T/d" s3://bkt/up/
assert_eq "$(grep -c '^PUT /bkt/up/f' "$T/log")" 12 "PUTs of the small files"
grep -q '^POST /bkt/up/big.bin?uploads' "$T/log" || die "big.bin did not go in parts"

step "a rerun with --sync sends nothing"
: >"$T/log"
expect_ok "${U[@]}" --sync "$T/d" s3://bkt/up/
assert_eq "$(grep -c '^PUT' "$T/log")" 0 "PUT requests of the rerun"
assert_eq "$(grep -c '^POST' "$T/log")" 0 "POST requests of the rerun"
assert_eq "$(grep -c '^same: ' "$OUT")" 14 "objects reported the same"

step "a file changed at the same size is sent again, alone"
printf 'OBJECT 7\n' >"$T/d/f7.bin"
: >"$T/log"
expect_ok "${U[@]}" --sync --json "$T/d" s3://bkt/up/
assert_eq "$(grep -c '^PUT' "$T/log")" 1 "PUT requests"
grep -q '^PUT /bkt/up/f7.bin' "$T/log" || die "the PUT was not f7.bin's"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["objects_same"] == 13 and d["objects_ok"] == 1, d' "$OUT" ||
    die "--json: $(cat "$OUT")"
aws s3 cp --quiet s3://bkt/up/f7.bin "$T/back" && cmp -s "$T/back" "$T/d/f7.bin" || die "f7.bin not updated"

step "without --sync, everything goes again"
: >"$T/log"
expect_ok "${U[@]}" "$T/d" s3://bkt/up/
assert_eq "$(grep -c '^PUT /bkt/up/f' "$T/log")" 12 "PUTs without --sync"
exit 0
