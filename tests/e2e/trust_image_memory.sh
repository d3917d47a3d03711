#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# trust_image_memory.sh - the image stage's memory is one budget shared by
# every image thread (--image-memory), not a multiple of --jobs.  Large
# progressive JPEGs (6000x6000: libjpeg keeps every DCT coefficient of the
# full image, ~110 MB, until the last scan) are packed with --image-size at
# -j 1 and -j 4: peak RSS at -j 4 under a budget that fits one decode stays
# within the budget plus a fixed allowance and within 2x -j 1's (main: 2.6x);
# the shards are byte-identical across -j and budgets, pack's and shard's;
# and an image that needs more than the whole budget is a bad image
# (--bad-image fail: exit 1 naming it; skip: dropped with a warning).
. "$(dirname "$0")/lib.sh"
need /usr/bin/python3
[ -x /usr/bin/time ] || skip "GNU time (/usr/bin/time) is not installed"
/usr/bin/python3 -c 'import PIL' 2>/dev/null || skip "Pillow is not installed"
tmpdir T
cd "$T" || die cd
step "three 6000x6000 progressive JPEGs"
/usr/bin/python3 - <<'PY' || die "making the JPEGs failed"
from PIL import Image
import os
os.makedirs('in', exist_ok=True)
base = Image.radial_gradient('L').resize((6000, 6000))
for i in range(3):
    g = Image.linear_gradient('L').rotate(30 * i).resize((6000, 6000))
    n = Image.effect_noise((6000, 6000), 30 + 10 * i)
    Image.merge('RGB', (base, g, n)).save('in/%02d.jpg' % i, quality=75, progressive=True)
    open('in/%02d.txt' % i, 'w').write('caption %d\n' % i)
PY

# rss OUT ARGS...: runs shardkit ARGS into OUT, prints its peak RSS in KiB
rss() {
    local out=$1
    shift
    rm -rf "$out"
    /usr/bin/time -f %M -o "$out.rss" "$SK_BIN" "$@" -q >"$out.log" 2>&1 ||
        die "shardkit $* failed: $(cat "$out.log")"
    tail -n 1 "$out.rss"
}
IMG=(--image-size 256)
BUDGET=160 # MiB: one decode (~110 MB) fits, two do not
MEM=(--image-memory ${BUDGET}M)
# a build without the option is measured without it, so that what fails is
# the memory (4 decodes at once at -j 4), not the option's name
"$SK_BIN" pack --help 2>&1 | grep -q -- --image-memory || MEM=()
step "pack at -j 1 and -j 4 under --image-memory ${BUDGET}M"
r1=$(rss j1 pack in -o j1/s-%d.tar "${IMG[@]}" -j 1 "${MEM[@]}") || exit 1
r4=$(rss j4 pack in -o j4/s-%d.tar "${IMG[@]}" -j 4 "${MEM[@]}") || exit 1
echo "peak RSS: -j 1 ${r1} KiB, -j 4 ${r4} KiB (--image-memory ${BUDGET}M)"
ALLOW=$((64 * 1024)) # KiB: the program, libraries, buffers outside the image stage
[ "$r4" -le $((BUDGET * 1024 + ALLOW)) ] ||
    die "peak RSS at -j 4 is ${r4} KiB, over --image-memory ${BUDGET}M plus 64 MiB"
[ "$r4" -le $((r1 * 2)) ] || die "peak RSS grows with --jobs: ${r1} KiB at -j 1, ${r4} KiB at -j 4"

step "the same bytes whatever -j and the budget"
rss j4big pack in -o j4big/s-%d.tar "${IMG[@]}" -j 4 --image-memory 1G >/dev/null || exit 1
rss j4def pack in -o j4def/s-%d.tar "${IMG[@]}" -j 4 >/dev/null || exit 1
check_shards j1
for d in j4 j4big j4def; do
    for f in j1/*.tar j1/manifest.json; do
        cmp -s "$f" "$d/${f#j1/}" || die "$d/${f#j1/} differs from $f"
    done
done
step "shard --image-size gives pack's bytes under the budget"
expect_ok "$SK_BIN" pack in -o plain/s-%d.tar -q
r=$(rss sh shard plain/s-0.tar -o sh/s-%d.tar "${IMG[@]}" -j 4 --image-memory ${BUDGET}M) || exit 1
[ "$r" -le $((BUDGET * 1024 + ALLOW)) ] || die "shard: peak RSS ${r} KiB at -j 4 over the budget"
cmp -s sh/s-0.tar j1/s-0.tar || die "shard --image-size differs from pack --image-size"

step "an image over the whole budget is a bad image"
expect_fail 1 "over --image-memory 50 MiB" "$SK_BIN" pack in -o f/s-%d.tar "${IMG[@]}" \
    --image-memory 50M --bad-image fail -q
assert_contains "$ERR" "needs " "the need in MiB"
assert_contains "$ERR" "00" "the sample's name"
expect_ok "$SK_BIN" pack in -o k/s-%d.tar "${IMG[@]}" --image-memory 50M --bad-image skip --json
assert_contains "$ERR" "over --image-memory 50 MiB" "the skip warning"
assert_contains "$OUT" '"bad_images": 3' "bad images counted"
expect_fail 2 "--image-memory" "$SK_BIN" pack in -o u/s-%d.tar "${IMG[@]}" --image-memory lots
echo "ok"
