#!/usr/bin/env bash
# trust_image_oom.sh - running out of memory is not a bad image: under an
# address-space limit, a valid JPEG too large to decode in it stops `pack
# --image-size` (and `verify --jpeg`) with an out-of-memory error, exit 1,
# instead of being dropped as a bad image (--bad-image skip) with exit 0.
# Images that fit still pack under the same limit.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || skip "Pillow (python3-pil) is not installed"
tmpdir T
cd "$T" || die cd
mkdir small big
# a flat 8000x8000 progressive JPEG: 300 KB of file, but its decoder holds
# every coefficient of the image (about 190 MB)
$PY "$SK_ROOT/tests/helpers/jpeg_scans.py" 8000 0 big/b.jpg || die "could not make the large JPEG"
$PY "$SK_ROOT/tests/helpers/jpeg_scans.py" 300 0 small/a.jpg || die "could not make the small JPEG"
cp small/a.jpg big/a.jpg
expect_ok "$SK_BIN" pack big -o 'p/s-%03d.tar' -q
LIMIT=200000 # KiB of address space: the binary and a small image fit

step "under the limit, a small image packs and resizes"
(ulimit -v $LIMIT && exec "$SK_BIN" pack small -o 'ok/s-%03d.tar' --image-size 64 -j 1 -q) ||
    skip "shardkit does not run under a ${LIMIT} KiB address-space limit here"

step "pack --image-size: out of memory stops the run (not a skipped bad image)"
run sh -c "ulimit -v $LIMIT && exec \"\$0\" pack big -o 'o/s-%03d.tar' --image-size 64 -j 1" "$SK_BIN"
[ "$RC" = 1 ] || die "pack under a memory limit exited $RC, not 1"
assert_contains "$ERR" "out of memory" "pack's error"
assert_not_contains "$ERR" "skipped sample" "pack's warnings"
[ ! -e o/manifest.json ] || die "pack wrote a manifest after running out of memory"

step "verify --jpeg: out of memory is an error, not a JPEG that does not decode"
run sh -c "ulimit -v $LIMIT && exec \"\$0\" verify --jpeg -j 1 p/s-000.tar" "$SK_BIN"
[ "$RC" = 2 ] || die "verify under a memory limit exited $RC, not 2 (an error, as documented)"
assert_contains "$ERR" "out of memory" "verify's error"
assert_not_contains "$OUT" "JPEG does not decode" "verify's report"

step "without the limit, both pass"
expect_ok "$SK_BIN" pack big -o 'o2/s-%03d.tar' --image-size 64 -q
expect_ok "$SK_BIN" verify --jpeg p/s-000.tar
echo ok
