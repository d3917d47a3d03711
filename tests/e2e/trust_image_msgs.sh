#!/usr/bin/env bash
# trust_image_msgs.sh - what the image stage says and keeps:
#   - `--bad-image fail` on an input large enough that pack is still
#     writing when the image stage stops names the image and its cause, not
#     "pack's sample stream: write failed: Broken pipe";
#   - filter-only options (--min-image-size, --max-aspect-ratio without
#     --image-size) never change an image's bytes, EXIF-rotated ones included.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || skip "Pillow (python3-pil) is not installed"
tmpdir T
cd "$T" || die cd

step "--bad-image fail on a large input names the bad image"
mkdir big
echo "not a jpeg at all" >big/a000.jpg
for i in $(seq 1 40); do head -c 1000000 /dev/urandom >"big/b$(printf %03d "$i").bin"; done
run "$SK_BIN" pack big -o 'o/s-%03d.tar' --image-size 64 --bad-image fail -j 1
[ "$RC" = 1 ] || die "pack exited $RC, not 1"
assert_contains "$ERR" "sample 'a000'" "pack's error"
assert_contains "$ERR" "not a JPEG" "pack's error"
assert_not_contains "$ERR" "Broken pipe" "pack's error"

step "filter-only options keep an EXIF-rotated JPEG's bytes"
mkdir rot
$PY - <<'PYEOF' || die "could not make the rotated JPEG"
from PIL import Image
exif = Image.Exif()
exif[0x0112] = 6  # Orientation: rotate 90 clockwise to display
Image.new("RGB", (120, 80), (10, 200, 60)).save("rot/r.jpg", quality=90, exif=exif)
PYEOF
for opts in "--min-image-size 16" "--max-aspect-ratio 3" "--min-image-size 16 --max-aspect-ratio 3"; do
    rm -rf f
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack rot -o 'f/s-%03d.tar' $opts -q
    tar xOf f/s-000.tar r.jpg >got.jpg || die "no r.jpg in the shard"
    cmp -s got.jpg rot/r.jpg || die "pack $opts changed the image's bytes (no --image-size was given)"
done

step "with --image-size the image is still made upright"
expect_ok "$SK_BIN" pack rot -o 'u/s-%03d.tar' --image-size 40 --resize-mode keep_ratio -q
tar xOf u/s-000.tar r.jpg >up.jpg
size=$($PY -c 'from PIL import Image; print("%dx%d" % Image.open("up.jpg").size)')
assert_eq "$size" "40x60" "the resized, upright image's size"
echo ok
