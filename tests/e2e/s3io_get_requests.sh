#!/usr/bin/env bash
# s3io_get_requests.sh - a lookup in a sorted dataset in S3 costs the
# manifest, then one GET for the one index its key ranges name, then one
# ranged GET of the read window holding the member (headers and data; the
# sample's other members come from the same window): no HEAD, no
# first-block GET, no other shard's index (a proxy logs every request moto
# sees).
# The header in that GET must name the sample and agree with the index:
# an object whose member header was changed (same size, same data, so the
# CRC32C still holds) is refused, and a truncated object fails; neither
# gives bytes.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3
"$SK_TOOLS/mkcorpus" "$T/c" --samples 60 --per-dir 20 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/ds/s-%02d.tar" --max-count 5
s3_serve bkt
aws s3 cp --quiet --recursive "$T/ds" s3://bkt/ds/ || die "upload failed"
proxy_start "$MOTO_URL" "$T/log"
G=("$SK_BIN" get --endpoint-url "$PROXY_URL")
key=n00002/00000052 # in s-10.tar

step "get KEY --ext: manifest, one index, one ranged GET"
: >"$T/log"
expect_ok "${G[@]}" s3://bkt/ds/ "$key" --ext jpg -o "$T/x.jpg"
cmp -s "$T/x.jpg" "$T/c/$key.jpg" || die "get from S3: wrong bytes"
awk '{sub(/\?.*/, "", $2); print $1, $2}' "$T/log" >"$T/reqs"
assert_eq "$(tr '\n' ' ' <"$T/reqs")" "GET /bkt/ds/manifest.json GET /bkt/ds/s-10.tar.idx GET /bkt/ds/s-10.tar " "requests of one lookup"

step "get '#N' -o DIR: one index, one read window for the sample's members, nothing else"
: >"$T/log"
expect_ok "${G[@]}" s3://bkt/ds/manifest.json '#33' -o "$T/d"
assert_eq "$(grep -c . "$T/log")" 3 "requests of a 3-member sample (manifest, index, one window)"
assert_eq "$(grep -c '^HEAD' "$T/log")" 0 "HEAD requests"
assert_eq "$(grep -c 'idx' "$T/log")" 1 "index objects fetched"

step "hostile: a member header renamed in place (same size, same data)"
python3 - "$T/ds/s-10.tar" "$T/evil.tar" "$key" <<'PY'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
name = (sys.argv[3] + ".jpg").encode()
i = b.index(name)
assert i % 512 == 0
b[i:i + len(name)] = name.replace(b"00000052", b"00000099")
b[i + 148:i + 156] = b"        "
b[i + 148:i + 156] = b"%06o\0 " % sum(b[i:i + 512])
open(sys.argv[2], "wb").write(b)
PY
aws s3 cp --quiet "$T/evil.tar" s3://bkt/ds/s-10.tar
expect_fail 1 "does not belong to this shard" "${G[@]}" s3://bkt/ds/ "$key" --ext jpg -o "$T/y.jpg"
[ ! -e "$T/y.jpg" ] || die "bytes written from a shard whose header disagrees"
step "hostile: a truncated object"
head -c 20000 "$T/ds/s-10.tar" >"$T/short.tar"
aws s3 cp --quiet "$T/short.tar" s3://bkt/ds/s-10.tar
run "${G[@]}" s3://bkt/ds/ "$key" --ext jpg -o "$T/z.jpg"
[ "$RC" -ne 0 ] || die "a truncated object gave a sample"
[ ! -e "$T/z.jpg" ] || die "bytes written from a truncated object"
