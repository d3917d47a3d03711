#!/usr/bin/env bash
# s3_upload_requests.sh - what upload asks the server per object (a proxy
# logs every request moto sees).  A small file goes up in one PUT, confirmed
# by its answer (the ETag is the MD5 of the bytes sent) without a HEAD; an
# answer that proves nothing (an encrypted object's opaque ETag) is
# confirmed by a HEAD, and a HEAD that reports fewer bytes fails the upload.
# A bucket-to-bucket copy of a prefix of small objects lists it once and
# sends one CopyObject per object: no HEAD of any source (the listing gave
# each size; a HEAD per source, one at a time on the producer's thread, set
# the pace of a copy of many small objects) and none of the copy (its
# answer names the source's ETag); a prefix holding a dataset is still
# listed once per group (data, *.idx, manifest.json) and the manifest copied
# last; one named object is HEADed once, by the plan.  Every object comes
# back byte-identical.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
s3_serve bkt
mkdir -p "$T/d" "$T/ds"
for i in $(seq 1 40); do printf 'object %d\n' "$i" >"$T/d/f$i.bin"; done
aws s3 cp --quiet --recursive "$T/d" s3://bkt/src/ || die "aws upload failed"
for i in 0 1; do
    printf 'shard %d\n' "$i" >"$T/ds/s-$i.tar"
    printf 'index %d\n' "$i" >"$T/ds/s-$i.tar.idx"
done
echo '{"shards":[]}' >"$T/ds/manifest.json"
aws s3 cp --quiet --recursive "$T/ds" s3://bkt/ds/ || die "aws upload failed"
proxy_start "$MOTO_URL" "$T/log"
U=("$SK_BIN" upload --endpoint-url "$PROXY_URL")

step "40 small files: one PUT each, no HEAD"
: >"$T/log"
expect_ok "${U[@]}" "$T/d" s3://bkt/up/
assert_eq "$(grep -c '^PUT /bkt/up/' "$T/log")" 40 "PUT requests"
assert_eq "$(grep -c '^HEAD' "$T/log")" 0 "HEAD requests"
aws s3 cp --quiet s3://bkt/up/f23.bin "$T/back" || die "up/f23.bin missing"
cmp -s "$T/back" "$T/d/f23.bin" || die "up/f23.bin: wrong bytes"

step "an ETag that is not the MD5 sent: a HEAD confirms each object"
proxy_start "$MOTO_URL" "$T/log2" --etag 0123456789abcdef0123456789abcdef-1
expect_ok "$SK_BIN" upload --endpoint-url "$PROXY_URL" "$T/d/f1.bin" "$T/d/f2.bin" "$T/d/f3.bin" s3://bkt/enc/
assert_eq "$(grep -c '^HEAD /bkt/enc/' "$T/log2")" 3 "HEAD requests"

step "hostile: an opaque ETag and a HEAD that reports 3 bytes: the upload fails"
proxy_start "$MOTO_URL" "$T/log3" --etag 0123456789abcdef0123456789abcdef-1 --head-size 3
expect_fail 1 "the server holds 3 bytes" "$SK_BIN" upload --endpoint-url "$PROXY_URL" "$T/d/f1.bin" s3://bkt/lost/

step "a prefix of 40 objects: one listing, 40 copies, no HEAD of a source"
: >"$T/log"
expect_ok "${U[@]}" s3://bkt/src/ s3://bkt/dst/
assert_eq "$(grep -c 'list-type=2' "$T/log")" 1 "listings of the source"
assert_eq "$(grep -c '^HEAD' "$T/log")" 0 "HEADs of sources and copies"
assert_eq "$(grep -c '^PUT /bkt/dst/' "$T/log")" 40 "CopyObject requests"
for i in 1 17 40; do
    aws s3 cp --quiet "s3://bkt/dst/f$i.bin" "$T/back" || die "dst/f$i.bin missing"
    cmp -s "$T/back" "$T/d/f$i.bin" || die "dst/f$i.bin: wrong bytes"
done
assert_eq "$(aws s3 ls s3://bkt/dst/ | wc -l)" 40 "objects copied"

step "a dataset prefix: a listing per group, the manifest last"
: >"$T/log"
expect_ok "${U[@]}" s3://bkt/ds/ s3://bkt/ds2/
assert_eq "$(grep -c 'list-type=2' "$T/log")" 3 "listings of a dataset"
assert_eq "$(grep -c '^HEAD /bkt/ds/' "$T/log")" 0 "HEADs of sources"
last=$(grep '^PUT /bkt/ds2/' "$T/log" | tail -1 | cut -d' ' -f2)
assert_eq "$last" /bkt/ds2/manifest.json "the last copy"
aws s3 cp --quiet s3://bkt/ds2/s-1.tar.idx "$T/back" || die "ds2/s-1.tar.idx missing"
cmp -s "$T/back" "$T/ds/s-1.tar.idx" || die "ds2/s-1.tar.idx: wrong bytes"

step "one named object: one HEAD of it (the plan's), one copy"
: >"$T/log"
expect_ok "${U[@]}" s3://bkt/src/f7.bin s3://bkt/one/f7.bin
assert_eq "$(grep -c '^HEAD /bkt/src/f7.bin' "$T/log")" 1 "HEADs of the source"
aws s3 cp --quiet s3://bkt/one/f7.bin "$T/back" || die "one/f7.bin missing"
cmp -s "$T/back" "$T/d/f7.bin" || die "one/f7.bin: wrong bytes"
echo "s3_upload_requests: ok"
