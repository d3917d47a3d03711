#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# writer_s3.sh - the API's sample writer (sk_sample_writer_*) with an
# s3:// pattern, against moto (auth off: its listings break under auth,
# and the sink's signing is pack's, checked in s3io_pack.sh): the shard, .idx
# and manifest objects (shards rolled over by size, one with a 9 MiB member
# uploaded in parts, then zstd) download byte-identical to `shardkit pack`
# of the same samples as local files, also after a run that lost its
# manifest and last shards is resumed, and after a SIGKILL in the middle of
# a multipart shard upload and a resumed run; no multipart upload is left.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
need cmp
W=$SK_TOOLS/sample_write
[ -x "$W" ] || die "$W not built"
tmpdir T
at_exit moto_stop
expect_ok "$W" --big --files "$T/src" 7 40
s3_serve dst

for mode in plain zstd; do
    if [ $mode = plain ]; then wo=""; po=""; suf=.tar; else wo="--compress 3"; po="--compress zstd:3"; suf=.tar.zst; fi
    step "$mode: the writer to s3://, pack to local files"
    # shellcheck disable=SC2086
    expect_ok "$W" --big --s3 "$A" --max-size 2000000 $wo 7 40 "s3://dst/$mode/s-%04d$suf"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack -q --max-size 2000000 $po -o "$T/ref-$mode/s-%04d$suf" "$T/src"
    aws s3 cp --recursive --quiet "s3://dst/$mode/" "$T/back-$mode/" || die "download failed"
    (cd "$T/ref-$mode" && ls) >"$T/l1"
    (cd "$T/back-$mode" && ls) >"$T/l2"
    cmp -s "$T/l1" "$T/l2" || die "$mode: other objects than pack's files: $(diff "$T/l1" "$T/l2")"
    [ "$(wc -l <"$T/l1")" -ge 9 ] || die "$mode: expected several shards"
    for f in $(cat "$T/l1"); do cmp "$T/ref-$mode/$f" "$T/back-$mode/$f" || die "$mode: $f differs"; done
done
step "resume: the manifest and the last shards gone, as a killed run leaves them"
aws s3 rm --quiet s3://dst/plain/manifest.json || die "rm failed"
for n in 0007 0008 0009 0010 0011 0012 0013 0014 0015; do
    aws s3 rm --quiet "s3://dst/plain/s-$n.tar" >/dev/null 2>&1
    aws s3 rm --quiet "s3://dst/plain/s-$n.tar.idx" >/dev/null 2>&1
done
expect_ok "$W" --big --resume --s3 "$A" --max-size 2000000 7 40 "s3://dst/plain/s-%04d.tar"
grep -q 'resumed=[1-9]' "$OUT" || die "no shard was kept: $(cat "$OUT")"
rm -rf "$T/back-plain"
aws s3 cp --recursive --quiet "s3://dst/plain/" "$T/back-plain/" || die "download failed"
for f in $(cd "$T/ref-plain" && ls); do cmp "$T/ref-plain/$f" "$T/back-plain/$f" || die "resumed: $f differs"; done
step "SIGKILL during a multipart shard upload, then resume"
big=""
for f in "$T"/ref-plain/s-*.tar; do [ "$(stat -c %s "$f")" -gt 8388608 ] && big=${f##*/}; done
[ -n "$big" ] || die "no shard over the 8 MiB part size"
proxy_start "$A" "$T/kill.log" --delay 0.3
kill_mid_upload dst "k/$big" "$W" --big --s3 "$PROXY_URL" --max-size 2000000 7 40 "s3://dst/k/s-%04d.tar"
expect_ok "$W" --big --resume --s3 "$A" --max-size 2000000 7 40 "s3://dst/k/s-%04d.tar"
grep -q 'resumed=[1-9]' "$OUT" || die "no shard was kept after the kill: $(cat "$OUT")"
aws s3 cp --recursive --quiet "s3://dst/k/" "$T/back-k/" || die "download failed"
for f in $(cd "$T/ref-plain" && ls); do cmp "$T/ref-plain/$f" "$T/back-k/$f" || die "after the kill: $f differs"; done
[ "$(ls "$T/back-k" | wc -l)" = "$(ls "$T/ref-plain" | wc -l)" ] || die "after the kill: other objects"
[ "$(aws s3api list-multipart-uploads --bucket dst --query 'length(Uploads || `[]`)' --output text)" = 0 ] ||
    die "a multipart upload was left behind"
step "no client for s3://: the error names it"
run "$W" 7 2 "s3://dst/x/s-%04d.tar"
[ "$RC" -ne 0 ] || die "an s3:// pattern without a client succeeded"
assert_contains "$ERR" "an s3:// output needs an S3 client"
echo "writer to S3 = pack, byte for byte"
