#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# trust_sagemaker_stream.sh - a SageMaker ManifestFile is read one element
# at a time with its caps applied to what is read: through '-' (no size to
# look at beforehand) a file over the 256 MiB cap is refused at the cap,
# in bounded memory (it used to be parsed whole, uncapped); an element
# longer than 64 KiB is refused; a malformed array names the byte.
. "$(dirname "$0")/lib.sh"
need python3 timeout
[ -x /usr/bin/time ] || skip "GNU time is not installed"
tmpdir T
cd "$T" || die cd
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
unset AWS_PROFILE
export AWS_CONFIG_FILE=$T/aws-config AWS_SHARED_CREDENTIALS_FILE=$T/aws-credentials AWS_MAX_ATTEMPTS=1
: >"$AWS_CONFIG_FILE"
EP=http://127.0.0.1:9 # nothing listens: no request may be needed to refuse these

step "through '-': a ManifestFile over the size cap is refused at the cap"
python3 -c '
import sys
o = sys.stdout.buffer
o.write(b"[{\"prefix\": \"s3://bkt/p/\"}, \"a.jpg\",")
pad = b" " * (1 << 20)
for _ in range(260):
    o.write(pad)
o.write(b"\"b.jpg\"]")
' 2>/dev/null | /usr/bin/time -f %M -o rss timeout 120 "$SK_BIN" pack --endpoint-url "$EP" --from-manifest - -o 'o/s-%02d.tar' >out 2>err
rc=${PIPESTATUS[1]}
[ "$rc" = 1 ] || die "pack exited $rc: $(cat err)"
grep -q "a ManifestFile over 268435456 bytes" err || die "pack did not name the cap: $(cat err)"
[ "$(tail -1 rss)" -lt $((200 * 1024)) ] || die "RSS grew to $(tail -1 rss) KiB"

step "an element longer than 64 KiB is refused, naming the cap"
python3 -c '
import sys
sys.stdout.write("[{\"prefix\": \"s3://bkt/p/\"}, \"" + "k" * 70000 + ".jpg\"]")' >long.manifest
expect_fail 1 "longer than 65536 bytes" "$SK_BIN" pack --endpoint-url "$EP" --from-manifest long.manifest -o 'o/s-%02d.tar'

step "a malformed array names the byte"
printf '[{"prefix": "s3://bkt/p/"}, "a.jpg" "b.jpg"]' >bad.manifest
expect_fail 1 "near byte" "$SK_BIN" pack --endpoint-url "$EP" --from-manifest bad.manifest -o 'o/s-%02d.tar'
printf '[{"prefix": "s3://bkt/p/"}, "a.jpg"] x' >tail.manifest
expect_fail 1 "bytes after the array's end" "$SK_BIN" pack --endpoint-url "$EP" --from-manifest tail.manifest -o 'o/s-%02d.tar'
printf '[{"prefix": "s3://bkt/p/"}, 5]' >num.manifest
expect_fail 1 "entry 1 is not a string" "$SK_BIN" pack --endpoint-url "$EP" --from-manifest num.manifest -o 'o/s-%02d.tar'
echo ok
