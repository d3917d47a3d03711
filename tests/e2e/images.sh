#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# images.sh - JPEG members resized while resharding (--image-size and the
# img2dataset options; docs/images.md):
#   - every --resize-mode, with and without --resize-only-if-bigger, on
#     landscape, portrait, square, 1-pixel-wide, small, EXIF-rotated (6, 8),
#     grey, CMYK and progressive inputs: exact dimensions by img2dataset's
#     rule, computed independently in Python, and pixels within 30 dB PSNR
#     of Pillow's resize of the same upright source;
#   - a JPEG with restart markers (cjpeg -restart) is accepted;
#   - --image-meta adds the sizes to .json, keeping its keys, creating it
#     when absent;
#   - --min-image-size and --max-aspect-ratio skip and count samples;
#   - hostile members (truncated, not a JPEG, a decompression bomb) under
#     --bad-image skip / keep / fail: counted, named, never a crash, never a
#     partial shard;
#   - the same bytes whatever --jobs, with --shuffle too;
#   - verify --image-size finds images that do not follow the rule;
#   - pack --image-size gives the bytes of pack followed by shard --image-size,
#     and never writes its manifest over one of its inputs.
. "$(dirname "$0")/lib.sh"
need cjpeg
PY=/usr/bin/python3
$PY -c 'import PIL, numpy' 2>/dev/null || skip "Pillow and numpy (python3-pil, python3-numpy) are not installed"
IMG="$SK_ROOT/tests/e2e/lib/images.py"
tmpdir T
$PY "$IMG" make "$T" || die "could not make the test images"

for mode in border keep_ratio keep_ratio_largest center_crop no; do
    for oib in 0 1; do
        step "--resize-mode $mode, only-if-bigger $oib"
        extra=()
        [ "$oib" = 1 ] && extra=(--resize-only-if-bigger)
        rm -rf "$T/o"
        expect_ok "$SK_BIN" shard "$T/in.tar" -o "$T/o/s-%02d.tar" --image-size 200 --resize-mode "$mode" "${extra[@]}"
        $PY "$IMG" check "$T/o/s-00.tar" "$mode" 200 "$oib" || die "$mode (only-if-bigger $oib): sizes or pixels wrong"
        check_shards "$T/o"
    done
done

step "verify --image-size: conformity of an existing dataset"
rm -rf "$T/v"
expect_ok "$SK_BIN" shard "$T/in.tar" -o "$T/v/s-%02d.tar" --image-size 120 --resize-mode keep_ratio_largest
expect_ok "$SK_BIN" verify "$T/v/s-00.tar" --image-size 120 --resize-mode keep_ratio_largest
run "$SK_BIN" verify "$T/v/s-00.tar" --image-size 120 --resize-mode border
assert_eq "$RC" 1 "verify exit status"
assert_contains "$OUT" "image (key s/port): image is 51x120, not a square of side 120"
run "$SK_BIN" verify "$T/v/s-00.tar" --image-size 100 --resize-mode keep_ratio_largest
assert_eq "$RC" 1 "verify exit status"
assert_contains "$OUT" "not its larger side 100"

step "restart markers"
mkdir -p "$T/rst/r"
$PY -c 'from PIL import Image; Image.new("RGB", (300, 200), (200, 30, 90)).save("'"$T"'/rst/x.ppm")'
cjpeg -restart 1 -quality 90 "$T/rst/x.ppm" >"$T/rst/r/a.jpg" || die "cjpeg failed"
tar cf "$T/rst.tar" -C "$T/rst" r/a.jpg
expect_ok "$SK_BIN" shard "$T/rst.tar" -o "$T/rst/o-%02d.tar" --image-size 100 --resize-mode keep_ratio_largest --json
assert_contains "$OUT" '"images": 1'

step "--image-meta"
rm -rf "$T/m"
expect_ok "$SK_BIN" shard "$T/in.tar" -o "$T/m/s-%02d.tar" --image-size 128 --image-meta
$PY "$IMG" meta "$T/m/s-00.tar" || die "--image-meta: .json members wrong"

step "--min-image-size and --max-aspect-ratio skip and count"
rm -rf "$T/k"
expect_ok "$SK_BIN" shard "$T/in.tar" -o "$T/k/s-%02d.tar" --min-image-size 100 --max-aspect-ratio 2 --json
assert_contains "$OUT" '"image_skips": 3' "small, thin and port are skipped"
assert_contains "$ERR" "skipped sample 's/small'"
assert_contains "$ERR" "skipped sample 's/thin'"
assert_contains "$ERR" "skipped sample 's/port'"
n=$(tar tf "$T/k/s-00.tar" | grep -c '\.jpg$')
assert_eq "$n" 7 "images kept"

step "hostile images: --bad-image skip (the default)"
$PY "$IMG" hostile "$T"
rm -rf "$T/b"
expect_ok "$SK_BIN" shard "$T/bad.tar" -o "$T/b/s-%02d.tar" --image-size 64 --json
assert_contains "$OUT" '"bad_images": 3'
assert_contains "$OUT" '"samples": 1'
assert_contains "$ERR" "b/bomb"
assert_contains "$ERR" "pixel cap"
assert_contains "$ERR" "b/notjpeg"
assert_contains "$ERR" "b/trunc"
assert_eq "$(tar tf "$T/b/s-00.tar" | tr '\n' ' ')" "b/good.jpg b/good.cls " "what is left"
check_shards "$T/b"

step "--bad-image keep: the members stand as they were"
rm -rf "$T/bk"
expect_ok "$SK_BIN" shard "$T/bad.tar" -o "$T/bk/s-%02d.tar" --image-size 64 --bad-image keep --json
assert_contains "$OUT" '"samples": 4'
mkdir -p "$T/x1" "$T/x2"
tar xf "$T/bad.tar" -C "$T/x1" && tar xf "$T/bk/s-00.tar" -C "$T/x2"
for k in bomb notjpeg trunc; do cmp "$T/x1/b/$k.jpg" "$T/x2/b/$k.jpg" || die "--bad-image keep changed b/$k.jpg"; done

step "--bad-image fail: exit 1 naming the member, no shard under its name"
rm -rf "$T/bf"
expect_fail 1 "b/bomb" "$SK_BIN" shard "$T/bad.tar" -o "$T/bf/s-%02d.tar" --image-size 64 --bad-image fail
[ ! -e "$T/bf/s-00.tar" ] || die "--bad-image fail left a shard under its final name"
assert_no_tmp "$T/bf" 2>/dev/null || true

step "the same bytes whatever --jobs (real JPEGs from mkcorpus, shuffled too)"
"$SK_TOOLS/mkcorpus" "$T/corpus" --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/corpus" -o "$T/src/c-%02d.tar" --max-size 2M
for j in 1 2 4; do
    expect_ok "$SK_BIN" shard "$T/src/c-{00..$(printf %02d $(( $(ls "$T"/src/*.tar | wc -l) - 1 )))}.tar" \
        -o "$T/j$j/s-%02d.tar" --max-size 1M --image-size 96 --image-meta --shuffle --seed 7 -j "$j" --json
done
assert_contains "$OUT" '"images": 300'
for f in "$T"/j1/*; do
    for j in 2 4; do cmp "$f" "$T/j$j/${f##*/}" || die "--jobs $j differs from --jobs 1: ${f##*/}"; done
done
check_shards "$T/j2"
step "pack --image-size: the same bytes as pack, then shard --image-size; whatever --jobs"
mkdir -p "$T/pk"
expect_ok "$SK_BIN" pack "$T/corpus" -o "$T/pk/plain/p-%02d.tar" --max-size 64M
expect_ok "$SK_BIN" shard "$T/pk/plain/p-00.tar" -o "$T/pk/two/s-%02d.tar" --max-size 1M --image-size 96 --image-meta
for j in 1 2; do
    expect_ok "$SK_BIN" pack "$T/corpus" -o "$T/pk/one$j/s-%02d.tar" --max-size 1M --image-size 96 --image-meta -j "$j" --json
    assert_contains "$OUT" '"images": 300'
    for f in "$T"/pk/two/*.tar "$T"/pk/two/*.idx; do
        cmp "$f" "$T/pk/one$j/${f##*/}" || die "pack -j $j --image-size differs from pack + shard: ${f##*/}"
    done
done
check_shards "$T/pk/one2"

step "pack --image-size with bad images: skipped and counted, the rest packed"
mkdir -p "$T/pb/in"
tar xf "$T/bad.tar" -C "$T/pb/in"
expect_ok "$SK_BIN" pack "$T/pb/in" -o "$T/pb/out/s-%02d.tar" --image-size 64 --json
assert_contains "$OUT" '"bad_images": 3'
assert_contains "$OUT" '"samples": 1'
check_shards "$T/pb/out"
expect_fail 1 "b/bomb" "$SK_BIN" pack "$T/pb/in" -o "$T/pb/fail/s-%02d.tar" --image-size 64 --bad-image fail
[ ! -e "$T/pb/fail/s-00.tar" ] || die "pack --bad-image fail left a shard"

step "pack --image-size of an empty directory: one empty shard, as pack"
mkdir -p "$T/empty"
expect_ok "$SK_BIN" pack "$T/empty" -o "$T/pe/s-%02d.tar" --image-size 64
check_shards "$T/pe"

step "pack --image-size never writes its manifest over an input (--from-archive, --overwrite)"
tar cf "$T/pm.tar" -C "$T/pb/in" .
cp "$T/pm.tar" "$T/pm0.tar"
expect_fail 2 "also an input" "$SK_BIN" pack --from-archive "$T/pm.tar" -o "$T/pm/s-%02d.tar" \
    --manifest "$T/pm.tar" --overwrite --image-size 64
cmp -s "$T/pm.tar" "$T/pm0.tar" || die "pack --image-size replaced its input archive with the manifest"
echo "images as img2dataset makes them"
