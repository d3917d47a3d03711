#!/usr/bin/env bash
# trust_scratch.sh - packing into s3:// stages each index and the manifest
# in a local scratch file under $TMPDIR before its PUT.  That name used to
# be predictable (shardkit-idx-PID-N): anyone sharing /tmp could plant a
# FIFO (or a symlink to a device or FIFO) there first and receive the
# index, or hang the run.  Scratch files are now made with mkstemp.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin timeout
mkdir -p "$T/in" "$T/scratch"
for i in 1 2 3; do echo "sample $i" >"$T/in/k$i.txt"; done
s3_serve dst

step "planted FIFOs at the old scratch names do not catch or stall the run"
# exec keeps the shell's pid, so $$ is shardkit's pid: the names a
# planter would guess
run timeout 60 sh -c '
    for n in 0 1 2 3 4 5 6 7; do
        mkfifo "$1/shardkit-idx-$$-$n" "$1/shardkit-manifest-$$-$n"
    done
    TMPDIR=$1 exec "$2" pack --endpoint-url "$3" "$4" -o s3://dst/p/s-%03d.tar -q' \
    _ "$T/scratch" "$SK_BIN" "$A" "$T/in"
[ "$RC" = 0 ] || die "pack exited $RC (124 = it hung on a planted FIFO): $(cat "$ERR")"
command aws --endpoint-url "$A" s3 cp s3://dst/p/manifest.json "$T/m.json" >/dev/null ||
    die "no manifest uploaded"
assert_contains "$T/m.json" '"samples"'
command aws --endpoint-url "$A" s3 cp s3://dst/p/s-000.tar.idx "$T/s.idx" >/dev/null ||
    die "no index uploaded"
[ -s "$T/s.idx" ] || die "the uploaded index is empty"
left=$(find "$T/scratch" -type f)
[ -z "$left" ] || die "scratch files left behind: $left"
echo ok
