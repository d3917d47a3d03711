#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3io_faults: pack from and to S3 through the fault-injecting proxy (a 503
# SlowDown on every 5th request, a reset halfway through every 7th body, one
# stalled answer) loses nothing: the objects are byte-identical to local
# output, and the fetcher as a whole backed off.  Then SIGKILL in the middle
# of a multipart shard upload, and --resume: the complete shard is kept
# (checked by size and CRC32C), the killed run's multipart upload is aborted
# (none left), and every object is byte-identical to local output.
# moto runs with auth off: its listings break under auth.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 800 --per-dir 100 >/dev/null || die "mkcorpus failed"
s3_serve src dst
mkdir -p "$T/sub"
cp -r "$C/n00000" "$T/sub/"
expect_ok "$SK_BIN" upload --endpoint-url "$A" --concurrency 32 "$T/sub" s3://src/data/

same_as() { # REFDIR S3PREFIX: every object under the prefix equals the local output
    local f n
    rm -rf "$T/dl"
    aws s3 cp --recursive --quiet "$2" "$T/dl/" || die "download of $2 failed"
    n=$(ls "$T/dl" | wc -l)
    [ "$n" = "$(ls "$1" | wc -l)" ] || die "$2: $n objects, want $(ls "$1" | wc -l)"
    for f in $(cd "$1" && ls); do cmp "$1/$f" "$T/dl/$f" || die "$2$f differs from local output"; done
}
no_uploads_left() {
    [ "$(aws s3api list-multipart-uploads --bucket dst --query 'length(Uploads || `[]`)' --output text)" = 0 ] ||
        die "multipart upload(s) left: $(aws s3api list-multipart-uploads --bucket dst --output text)"
}

step "references from local files"
expect_ok "$SK_BIN" pack "$T/sub" -o "$T/ref_s/t-%04d.tar" --max-size 256K
expect_ok "$SK_BIN" pack "$C" -o "$T/ref_m/t-%04d.tar" --max-size 6M

step "s3:// to s3:// through faults"
proxy_start "$A" "$T/faults.log" --faults --stall 1
SK_DEBUG_FETCH=1 expect_ok "$SK_BIN" pack --endpoint-url "$PROXY_URL" s3://src/data/ -o s3://dst/f/t-%04d.tar \
    --max-size 256K --concurrency 16
grep -q 'backed off [1-9]' "$ERR" || die "the fetcher never backed off: $(cat "$ERR")"
same_as "$T/ref_s" s3://dst/f/

step "local to s3:// through faults, multipart shards"
expect_ok "$SK_BIN" pack --endpoint-url "$PROXY_URL" "$C" -o s3://dst/m/t-%04d.tar --max-size 6M --part-size 5MiB
same_as "$T/ref_m" s3://dst/m/
no_uploads_left

step "SIGKILL during the second shard's upload, then --resume"
proxy_start "$A" "$T/kill.log" --delay 0.3
kill_mid_upload dst k/t-0001.tar "$SK_BIN" pack --endpoint-url "$PROXY_URL" "$C" -o s3://dst/k/t-%04d.tar \
    --max-size 6M --part-size 5MiB --jobs 1
expect_ok "$SK_BIN" pack --endpoint-url "$A" "$C" -o s3://dst/k/t-%04d.tar --max-size 6M --part-size 5MiB \
    --resume --json
assert_contains "$OUT" '"shards_resumed": 1,'
no_uploads_left
same_as "$T/ref_m" s3://dst/k/

step "a damaged kept shard is redone"
head -c 100 /dev/zero | aws s3 cp --quiet - s3://dst/k/t-0000.tar
expect_ok "$SK_BIN" pack --endpoint-url "$A" "$C" -o s3://dst/k/t-%04d.tar --max-size 6M --part-size 5MiB \
    --resume --json
assert_contains "$OUT" '"shards_resumed": 2,'
same_as "$T/ref_m" s3://dst/k/
echo "s3io_faults: ok"
