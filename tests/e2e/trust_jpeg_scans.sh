#!/usr/bin/env bash
# trust_jpeg_scans.sh - a progressive JPEG of a few hundred KB whose scans
# repeat thousands of times (each a pass over every coefficient) is a bad
# image, found in well under a second: the scan count and the work per byte
# of input are capped in `pack --image-size`, `shard --image-size` and
# `verify --jpeg`.  A normal progressive JPEG still passes.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || skip "Pillow (python3-pil) is not installed"
tmpdir T
cd "$T" || die cd
mkdir in good
$PY "$SK_ROOT/tests/helpers/jpeg_scans.py" 4096 3000 in/bomb.jpg || die "could not make the scan bomb"
$PY "$SK_ROOT/tests/helpers/jpeg_scans.py" 4096 0 good/ok.jpg || die "could not make the progressive JPEG"
expect_ok "$SK_BIN" pack in -o 'p/s-%03d.tar' -q
expect_ok "$SK_BIN" pack good -o 'g/s-%03d.tar' -q

# Runs a command: RC, its output in $T/out and $T/err, and its CPU seconds
# (user + system of the children, from bash's times) in cpu
cpu_of()
{
    local t0 t1
    t0=$( (times) | tail -1)
    "$@" >"$T/out" 2>"$T/err"
    RC=$?
    t1=$( (times) | tail -1)
    cpu=$($PY - "$t0" "$t1" <<'PYEOF'
import re, sys
def secs(line):
    return sum(int(m) * 60 + float(s) for m, s in re.findall(r"(\d+)m([\d.]+)s", line))
print("%.1f" % (secs(sys.argv[2]) - secs(sys.argv[1])))
PYEOF
)
}

step "verify --jpeg: the bomb is a bad JPEG, over the scan cap, found quickly"
cpu_of "$SK_BIN" verify --jpeg p/s-000.tar
[ "$RC" = 1 ] || die "verify --jpeg exited $RC, not 1: $(cat "$T/err")"
grep -q "scans of 4096x4096" "$T/out" "$T/err" || die "verify did not name the scan cap: $(cat "$T/out" "$T/err")"
$PY -c "import sys; sys.exit(float('$cpu') > 3)" || die "verify --jpeg spent ${cpu}s of CPU on a bomb"

step "pack --image-size: the bomb is skipped as a bad image, with the cap as its cause"
cpu_of "$SK_BIN" pack in -o 'o/s-%03d.tar' --image-size 256
[ "$RC" = 0 ] || die "pack exited $RC: $(cat "$T/err")"
grep -q "skipped sample 'bomb'.*scans of 4096x4096" "$T/err" || die "pack did not say why: $(cat "$T/err")"
$PY -c "import sys; sys.exit(float('$cpu') > 3)" || die "pack --image-size spent ${cpu}s of CPU on a bomb"
expect_fail 1 "scans of 4096x4096" "$SK_BIN" pack in -o 'f/s-%03d.tar' --image-size 256 --bad-image fail

step "a normal progressive JPEG (its ten scans) still decodes and resizes"
expect_ok "$SK_BIN" verify --jpeg g/s-000.tar
expect_ok "$SK_BIN" pack good -o 'r/s-%03d.tar' --image-size 256 -q
tar xOf r/s-000.tar ok.jpg | djpeg >/dev/null 2>&1 || $PY -c 'import PIL.Image, io, sys; PIL.Image.open(io.BytesIO(sys.stdin.buffer.read())).load()' < <(tar xOf r/s-000.tar ok.jpg) || die "the resized image does not decode"
echo ok
