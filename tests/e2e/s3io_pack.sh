#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3io_pack: pack with S3 as source and sink, against moto.
#  1. (auth off: moto's listings break under auth) a prefix of 2,100 small
#     objects packs into shards byte-identical to packing the same files
#     from disk; "s3://b/data" without the slash means the same prefix;
#  2. s3:// to s3://, multipart shards (8 MB, 5 MiB parts): every object
#     (shards, indexes, manifest) downloads byte-identical to local output,
#     and no multipart upload is left;
#  3. (auth on) local files to s3://, and a --files-from list of keys under
#     an s3:// --root (sized by HEAD), byte-identical to local output;
#  4. a listed key that does not exist fails naming its s3:// URL, or is
#     skipped with --on-error skip; an empty prefix is an error.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 700 --per-dir 100 >/dev/null || die "mkcorpus failed"

s3_serve src dst
step "upload the corpus (2100 objects)"
expect_ok "$SK_BIN" upload --endpoint-url "$A" --concurrency 32 "$C" s3://src/data/

step "the reference: the same files packed from disk"
expect_ok "$SK_BIN" pack "$C" -o "$T/ref/t-%04d.tar" --max-size 8M
nref=$(ls "$T/ref" | wc -l)
[ "$nref" -ge 5 ] || die "expected a few shards, got $nref files"

step "1. s3:// prefix to local shards: byte-identical"
expect_ok "$SK_BIN" pack --endpoint-url "$A" s3://src/data/ -o "$T/from/t-%04d.tar" --max-size 8M --json
assert_contains "$OUT" '"files": 2100,'
for f in $(cd "$T/ref" && ls); do cmp "$T/ref/$f" "$T/from/$f" || die "from S3: $f differs"; done
check_shards "$T/from"

step "2. s3:// to s3://: objects byte-identical, no multipart upload left"
expect_ok "$SK_BIN" pack --endpoint-url "$A" s3://src/data/ -o s3://dst/out/t-%04d.tar --max-size 8M \
    --part-size 5MiB --json
aws s3 cp --recursive --quiet s3://dst/out/ "$T/back/" || die "download failed"
[ "$(ls "$T/back" | wc -l)" = "$nref" ] || die "$(ls "$T/back" | wc -l) objects, want $nref"
for f in $(cd "$T/ref" && ls); do cmp "$T/ref/$f" "$T/back/$f" || die "to S3: $f differs"; done
[ "$(aws s3api list-multipart-uploads --bucket dst --query 'length(Uploads || `[]`)' --output text)" = 0 ] ||
    die "a multipart upload was left behind"

step "4. missing objects and empty prefixes"
(cd "$C" && find . -type f | sed 's|^\./||' | sort | head -30) >"$T/list"
echo "n00000/nosuch.jpg" >>"$T/list"
expect_fail 1 "s3://src/data/n00000/nosuch.jpg" "$SK_BIN" pack --endpoint-url "$A" --files-from "$T/list" \
    --root s3://src/data/ -o "$T/miss/t-%04d.tar"
expect_ok "$SK_BIN" pack --endpoint-url "$A" --files-from "$T/list" --root s3://src/data/ \
    -o "$T/miss/t-%04d.tar" --on-error skip --json
assert_contains "$ERR" "s3://src/data/n00000/nosuch.jpg"
assert_contains "$OUT" '"files": 30,'
expect_ok "$SK_BIN" pack --endpoint-url "$A" s3://src/data/n00000 -o "$T/one/t-%04d.tar" --concurrency 8 --jobs 1
expect_ok "$SK_BIN" pack "$C/n00000" -o "$T/oneref/t-%04d.tar"
for f in $(cd "$T/oneref" && ls); do cmp "$T/oneref/$f" "$T/one/$f" || die "prefix without slash: $f differs"; done
expect_fail 1 "no objects under this prefix" "$SK_BIN" pack --endpoint-url "$A" s3://src/nothing/ \
    -o "$T/none/t-%04d.tar"

step "3. auth on: local files to s3://, and a key list under an s3:// --root"
moto_start auth
B=$MOTO_URL
command aws --endpoint-url "$B" s3 mb s3://sec >/dev/null
(cd "$C" && find . -type f | sed 's|^\./||' | sort | head -300) >"$T/list300"
mkdir -p "$T/sub"
(cd "$C" && xargs -a "$T/list300" cp --parents -t "$T/sub")
expect_ok "$SK_BIN" upload --endpoint-url "$B" "$T/sub" s3://sec/in/
expect_ok "$SK_BIN" pack "$T/sub" -o "$T/ref300/t-%04d.tar" --max-size 1M
expect_ok "$SK_BIN" pack --endpoint-url "$B" "$T/sub" -o s3://sec/out/t-%04d.tar --max-size 1M
expect_ok "$SK_BIN" pack --endpoint-url "$B" --files-from "$T/list300" --root s3://sec/in/ \
    -o "$T/keys/t-%04d.tar" --max-size 1M
mkdir -p "$T/back300"
for f in $(cd "$T/ref300" && ls); do
    # one object at a time: a recursive copy lists, which moto breaks under auth
    command aws --endpoint-url "$B" s3 cp --quiet "s3://sec/out/$f" "$T/back300/$f" || die "download of $f failed"
    cmp "$T/ref300/$f" "$T/back300/$f" || die "auth, to S3: $f differs"
    cmp "$T/ref300/$f" "$T/keys/$f" || die "auth, key list: $f differs"
done
echo "s3io_pack: ok"
