#!/usr/bin/env bash
# trust_links.sh - a file shardkit names for itself (the run lock, an index
# sidecar, the default manifest, a shard) is never written through a link,
# FIFO or device planted at that name (issue "trust, third pass"):
#   - a symbolic link at OUT/.manifest.json.lock (pack, shard, the sample
#     writer) or at the shards' lock: refused, naming it; the file it points
#     to is untouched and the link is left where it was;
#   - a FIFO at OUT/s-000.tar.idx or OUT/manifest.json: refused at once
#     (no run blocks), and for pack before any shard is written;
#   - a link to a device at a sidecar (index, shard): refused, not written
#     through;
#   - a FIFO the user names (`get -o FIFO`, `--wids=FIFO`) with no reader is
#     an error, not a hang.
. "$(dirname "$0")/lib.sh"
need timeout mkfifo python3
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 12 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%03d.tar --max-count 6 -q

victim() { printf 'precious\n' >"$T/victim"; }
untouched() { [ "$(cat "$T/victim")" = precious ] || die "$1 wrote through the link: $(head -c 80 "$T/victim")"; }

step "a link at the run lock: pack, shard and the sample writer refuse it"
for tool in pack shard writer; do
    rm -rf out && mkdir out && victim
    ln -s ../victim out/.manifest.json.lock
    case $tool in
    pack) run timeout 20 "$SK_BIN" pack c -o out/s-%03d.tar -q ;;
    shard) run timeout 20 "$SK_BIN" shard ds/s-000.tar -o out/s-%03d.tar -q ;;
    writer) run timeout 20 "$SK_TOOLS/sample_write" 1 3 out/s-%03d.tar ;;
    esac
    [ "$RC" != 0 ] && [ "$RC" != 124 ] || die "$tool exited $RC with a link at its lock"
    assert_contains "$ERR" ".manifest.json.lock is a symbolic link"
    untouched "$tool"
    [ -L out/.manifest.json.lock ] || die "$tool removed a link it did not make"
    [ -z "$(ls out | grep '\.tar')" ] || die "$tool wrote shards: $(ls out)"
done

step "a link at the run lock: Python's ShardWriter (over the sample writer) refuses it"
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    rm -rf out && mkdir out && victim
    ln -s ../victim out/.manifest.json.lock
    run env SHARDKIT_LIB="$LIB" PYTHONPATH="$SK_ROOT/python" timeout 60 python3 -c '
import shardkit, sys
try:
    with shardkit.ShardWriter("out/s-%03d.tar") as w:
        w.write({"__key__": "a", "txt": "x"})
except shardkit.UsageError as e:
    print(e, file=sys.stderr); sys.exit(3)'
    [ "$RC" = 3 ] || die "ShardWriter exited $RC with a link at its lock"
    assert_contains "$ERR" ".manifest.json.lock is a symbolic link"
    untouched "ShardWriter"
fi

step "a link at the shard names' lock"
rm -rf out && mkdir out && victim
ln -s ../victim 'out/.s-%03d.tar.lock'
run timeout 20 "$SK_BIN" pack c -o out/s-%03d.tar -q
[ "$RC" = 2 ] || die "pack exited $RC with a link at the shards' lock"
assert_contains "$ERR" "is a symbolic link"
untouched "pack (shards' lock)"

step "a FIFO at an index sidecar or the default manifest: refused, no hang"
for name in s-000.tar.idx manifest.json; do
    for tool in pack shard; do
        rm -rf out && mkdir out && mkfifo "out/$name"
        if [ $tool = pack ]; then run timeout 20 "$SK_BIN" pack c -o out/s-%03d.tar -q
        else run timeout 20 "$SK_BIN" shard ds/s-000.tar -o out/s-%03d.tar -q; fi
        [ "$RC" != 124 ] || die "$tool blocked on a FIFO at out/$name"
        [ "$RC" = 2 ] || die "$tool exited $RC with a FIFO at out/$name"
        assert_contains "$ERR" "out/$name exists and is a FIFO"
        [ ! -e out/s-000.tar ] || die "$tool wrote a shard before refusing out/$name"
        [ -p "out/$name" ] || die "$tool replaced the FIFO out/$name"
    done
done
rm -rf out && mkdir out && cp ds/s-000.tar out/ && mkfifo out/s-000.tar.idx
run timeout 20 "$SK_BIN" index out/s-000.tar -q
[ "$RC" != 124 ] || die "index blocked on a FIFO sidecar"
[ "$RC" != 0 ] || die "index wrote an index through a FIFO"
assert_contains "$ERR" "out/s-000.tar.idx exists and is a FIFO"

step "a link to a device at a sidecar or a shard name: not written through"
if [ -w /dev/full ]; then
    rm -rf out && mkdir out && cp ds/s-000.tar out/ && ln -s /dev/full out/s-000.tar.idx
    run timeout 20 "$SK_BIN" index out/s-000.tar -q
    [ "$RC" != 0 ] || die "index wrote its sidecar through a link to a device"
    assert_contains "$ERR" "out/s-000.tar.idx exists and is a symbolic link"
    [ -L out/s-000.tar.idx ] || die "index replaced the link"
    rm -rf out && mkdir out && ln -s /dev/full out/s-000.tar
    run timeout 20 "$SK_BIN" shard ds/s-000.tar -o out/s-%03d.tar -q
    [ "$RC" = 2 ] || die "shard exited $RC with a link to a device at its shard name"
    assert_contains "$ERR" "out/s-000.tar exists and is a symbolic link"
fi

step "a FIFO the user names, with no reader: an error, not a hang"
mkfifo f1 f2
run timeout 20 "$SK_BIN" get ds/s-000.tar n00000/00000000 --tar -o f1
[ "$RC" != 124 ] || die "get -o FIFO blocked with no reader"
assert_contains "$ERR" "f1: a FIFO with no reader"
cp ds/s-000.tar one.tar
run timeout 20 "$SK_BIN" index one.tar --wids=f2 -q
[ "$RC" != 124 ] || die "index --wids=FIFO blocked with no reader"
assert_contains "$ERR" "f2: a FIFO with no reader"
echo "no link, FIFO or device at a name shardkit chose is written through"
