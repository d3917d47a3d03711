#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# sagemaker_pipe: `cat` and the reader on a simulated SageMaker Pipe channel.
# SageMaker streams a channel's S3 objects one after another into a FIFO
# (/opt/ml/input/data/CHANNEL_EPOCH); the feeder here does the same from
# moto, with the aws cli, into a FIFO named like it:
#  1. raw (RecordWrapperType=None): the shards' objects back to back; the
#     tar `cat` writes from the FIFO is byte-identical to `cat` of the
#     dataset's directory;
#  2. gzip (CompressionType=Gzip, each object gzipped): the same bytes;
#  3. RecordIO (RecordWrapperType=RecordIO: each object one record, written
#     by dmlc-core's own RecordIOWriter) with --recordio: the same bytes,
#     also for a shard dmlc splits into a multi-part record (the magic in
#     its data), and for RecordIO around gzip; the Python binding
#     (recordio=True) reads the same keys;
#  4. a 96 MB shard in one RecordIO record streams with bounded memory
#     (max RSS well under the record's size);
#  5. broken channels fail with exit 1 naming the cause: RecordIO without
#     --recordio, a record cut short, a bad magic, a bad flag.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
need cmp python3 g++ gzip
[ -f /usr/include/dmlc/recordio.h ] || skip "needs libdmlc-dev (dmlc-core's RecordIO writer)"
tmpdir T
at_exit moto_stop
g++ -O1 -o "$T/dmlc_recordio" "$SK_ROOT/tests/helpers/dmlc_recordio.cc" -ldmlc ||
    die "cannot build the dmlc RecordIO writer"
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 90 --per-dir 30 >/dev/null || die "mkcorpus failed"
# a sample whose data holds the RecordIO magic at 4-aligned offsets
python3 - "$C/zz" <<'EOF'
import os, struct, sys
os.makedirs(sys.argv[1])
m = struct.pack("<I", 0xced7230a)
open(sys.argv[1] + "/magic.bin", "wb").write(m * 3 + os.urandom(1000) + m + os.urandom(3))
open(sys.argv[1] + "/magic.txt", "wb").write(m)
EOF
expect_ok "$SK_BIN" pack "$C" -o "$T/ds/train-%04d.tar" --max-size 512K -q
n=$(ls "$T/ds"/*.tar | wc -l)
[ "$n" -ge 3 ] || die "want a few shards, got $n"
"$SK_BIN" cat "$T/ds" >"$T/ref.tar" || die "reference cat failed"
"$SK_BIN" cat --keys "$T/ds" >"$T/ref.keys"

s3_serve chan
# the channel's objects: only the shards (as a ManifestFile or a prefix of
# shards gives them), in key order
for f in "$T/ds"/*.tar; do aws s3 cp --quiet "$f" "s3://chan/raw/$(basename "$f")"; done
for f in "$T/ds"/*.tar; do gzip -c "$f" >"$T/$(basename "$f").gz"; done
for f in "$T"/*.tar.gz; do aws s3 cp --quiet "$f" "s3://chan/gz/$(basename "$f")"; done
keys() { aws s3api list-objects-v2 --bucket chan --prefix "$1" --query 'Contents[].Key' --output text | tr '\t' '\n'; }

# feed PREFIX WRAP FIFO: every object under PREFIX, in key order, into FIFO,
# through WRAP (cat, gzip -c or dmlc), as SageMaker's agent does
feed() {
    local k
    for k in $(keys "$1"); do
        case $2 in
        cat) aws s3 cp --quiet "s3://chan/$k" - ;;
        gzip) aws s3 cp --quiet "s3://chan/$k" - | gzip -c ;;
        rio) aws s3 cp --quiet "s3://chan/$k" "$T/obj" && "$T/dmlc_recordio" "$T/rio.one" "$T/obj" &&
             cat "$T/rio.one" ;;
        esac
    done >"$3"
}
pipe_case() { # pipe_case NAME PREFIX WRAP [cat options]: cat of the FIFO == the reference
    local name=$1 prefix=$2 wrap=$3 fifo=$T/input/data/${1}_0
    shift 3
    mkdir -p "$T/input/data"
    rm -f "$fifo"
    mkfifo "$fifo"
    feed "$prefix" "$wrap" "$fifo" &
    local feeder=$!
    run "$SK_BIN" cat "$@" "$fifo"
    wait "$feeder" || die "$name: the feeder failed"
    [ "$RC" = 0 ] || die "$name: cat failed"
    cmp "$OUT" "$T/ref.tar" || die "$name: the tar from the channel differs from the dataset's"
}

step "1. raw channel: shards back to back"
pipe_case train raw/ cat
step "2. gzip channel: each object gzipped"
pipe_case gz raw/ gzip
pipe_case gzobj gz/ cat
step "3. RecordIO channel (dmlc's writer), multi-part records included"
pipe_case rio raw/ rio --recordio
pipe_case riogz gz/ rio --recordio
"$T/dmlc_recordio" "$T/all.rio" "$T/ds"/*.tar || die "dmlc writer failed"
python3 - "$T/all.rio" <<'EOF' || die "no multi-part record in the test data"
import struct, sys
b, i, flags = open(sys.argv[1], "rb").read(), 0, set()
while i < len(b):
    m, w = struct.unpack("<II", b[i:i + 8]); n = w & ((1 << 29) - 1); flags.add(w >> 29); i += 8 + n + (-n % 4)
assert {0, 1, 3} <= flags, flags
EOF
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    mkfifo "$T/py_0"
    cat "$T/all.rio" >"$T/py_0" &
    SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/samples/python python3 - "$T/py_0" >"$T/py.keys" <<'PY' ||
import sys, shardkit
for s in shardkit.Reader([sys.argv[1]], recordio=True):
    print(s["__key__"])
PY
        die "python reader on a RecordIO FIFO failed"
    cmp "$T/py.keys" "$T/ref.keys" || die "python reader: keys differ"
fi

step "4. one 96 MB shard in one record: bounded memory"
need /usr/bin/time
mkdir -p "$T/big/b"
for i in $(seq 0 95); do head -c 1000000 /dev/urandom >"$T/big/b/$(printf %03d "$i").bin"; done
expect_ok "$SK_BIN" pack "$T/big" -o "$T/bigds/t-%02d.tar" -q
"$T/dmlc_recordio" "$T/big.rio" "$T/bigds/t-00.tar" || die "dmlc writer failed"
mkfifo "$T/big_0"
cat "$T/big.rio" >"$T/big_0" &
/usr/bin/time -f %M -o "$T/rss" "$SK_BIN" cat --recordio "$T/big_0" >"$T/big.out" || die "big: cat failed"
"$SK_BIN" cat "$T/bigds" | cmp - "$T/big.out" || die "big: output differs"
rss=$(tail -1 "$T/rss")
[ "$rss" -lt 48000 ] || die "big: max RSS ${rss} KiB for a 96 MB record"

step "5. broken channels"
expect_fail 1 "starts with the RecordIO magic" "$SK_BIN" cat --keys - <"$T/all.rio"
head -c 70000 "$T/all.rio" >"$T/cut.rio"
expect_fail 1 "RecordIO stream ends inside record" "$SK_BIN" cat --keys --recordio - <"$T/cut.rio"
python3 - "$T/all.rio" "$T/badmagic.rio" "$T/badflag.rio" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<I", b[4:8])[0] & ((1 << 29) - 1)
second = 8 + n + (-n % 4)
open(sys.argv[2], "wb").write(b[:second] + b"\xde\xad\xbe\xef" + b[second + 4:])
first = struct.unpack("<I", b[4:8])[0]
open(sys.argv[3], "wb").write(b[:4] + struct.pack("<I", (first & ((1 << 29) - 1)) | 5 << 29) + b[8:])
EOF
expect_fail 1 "not RecordIO at offset" "$SK_BIN" cat --keys --recordio - <"$T/badmagic.rio"
expect_fail 1 "has flag 5 at the start of a record" "$SK_BIN" cat --keys --recordio - <"$T/badflag.rio"
