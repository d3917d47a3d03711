#!/usr/bin/env bash
# trust_stream_tail.sh - every byte of a stream is read as shards or is an
# error: what follows a gzip (or bzip2) stream on stdin, a FIFO, a RecordIO
# channel and the Python Reader (a plain shard, a .tar.zst, another .tar.gz)
# is read as the next shard, and garbage after it fails naming the stream;
# `verify` finds a tar appended to a .tar.gz.  (libarchive's filters stop
# at their own stream's end and used to drop the rest, exit 0.)
. "$(dirname "$0")/lib.sh"
need gzip bzip2 zstd python3
tmpdir T
cd "$T" || die cd
mkdir a b
for i in 1 2 3; do echo "a$i" >a/x$i.txt; echo "b$i" >b/y$i.txt; done
expect_ok "$SK_BIN" pack a -o 'A-%d.tar' -q
expect_ok "$SK_BIN" pack b -o 'B-%d.tar' --manifest B.json -q
gzip -kn A-0.tar && bzip2 -k A-0.tar && gzip -kn B-0.tar && zstd -q B-0.tar -o B-0.tar.zst
printf 'x1\nx2\nx3\ny1\ny2\ny3\n' >want.keys
cat A-0.tar.gz B-0.tar >gz_tar
cat A-0.tar.gz B-0.tar.zst >gz_zst
cat A-0.tar.gz B-0.tar.gz >gz_gz
cat A-0.tar.bz2 B-0.tar >bz_tar
{ cat A-0.tar.gz; echo "garbage after the gzip stream"; } >gz_junk

# one RecordIO record (dmlc's format: magic, length, data, padding) per file
rio()
{
    python3 - "$@" <<'PYEOF'
import struct, sys
out = open(sys.argv[1], "wb")
for f in sys.argv[2:]:
    d = open(f, "rb").read()
    out.write(struct.pack("<II", 0xced7230a, len(d)) + d + b"\0" * (-len(d) % 4))
PYEOF
}

for c in gz_tar gz_zst gz_gz bz_tar; do
    step "$c: stdin, a FIFO and --recordio read both shards"
    "$SK_BIN" cat --keys - <"$c" >got.keys 2>err || die "$c on stdin failed: $(cat err)"
    cmp -s got.keys want.keys || die "$c on stdin: keys $(tr '\n' ' ' <got.keys), want both shards"
    rm -f fifo && mkfifo fifo
    cat "$c" >fifo &
    "$SK_BIN" cat --keys fifo >got.keys 2>err || die "$c through a FIFO failed: $(cat err)"
    wait
    cmp -s got.keys want.keys || die "$c through a FIFO: keys $(tr '\n' ' ' <got.keys)"
    rio "$c.rio" "$c"
    "$SK_BIN" cat --keys --recordio - <"$c.rio" >got.keys 2>err || die "$c in RecordIO failed: $(cat err)"
    cmp -s got.keys want.keys || die "$c in RecordIO: keys $(tr '\n' ' ' <got.keys)"
done

step "garbage after a gzip stream is an error naming the stream"
expect_fail 1 "-: " "$SK_BIN" cat --keys - <gz_junk
rio junk.rio gz_junk
expect_fail 1 "-: " "$SK_BIN" cat --keys --recordio - <junk.rio

step "the Python Reader over a FIFO reads both shards"
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    rm -f fifo && mkfifo fifo
    cat gz_tar >fifo &
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python python3 - "$T/fifo" >got.keys <<'PYEOF' || die "the Python Reader failed"
import sys, shardkit
for s in shardkit.Reader(sys.argv[1], rank=0, world_size=1, worker=0, num_workers=1):
    print(s["__key__"])
PYEOF
    wait
    cmp -s got.keys want.keys || die "the Python Reader: keys $(tr '\n' ' ' <got.keys)"
fi

step "verify: a .tar.gz with a tar appended is not sound"
cp gz_tar appended.tar.gz
run "$SK_BIN" verify appended.tar.gz
[ "$RC" = 1 ] || die "verify of a .tar.gz with a tar appended exited $RC"
assert_contains "$OUT" "trailing garbage" "verify's report"
cp gz_zst appended2.tar.gz
expect_fail 1 "" "$SK_BIN" verify appended2.tar.gz
expect_ok "$SK_BIN" verify A-0.tar.gz
echo ok
