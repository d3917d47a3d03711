#!/usr/bin/env bash
# cat_ring.sh - `shardkit cat` writes pack's members from the shard's ring
# (the stored bytes, not a copy) and reads local shards on its own thread:
# the stream is still what the member-by-member path writes - for pack's
# shards, their bytes less the end blocks, plain and .tar.zst alike - and
# every check still fires before bad bytes leave.  A corrupt header in the
# middle of a shard: nothing of the sample before it (whose end is known
# only from that header) or after it reaches the consumer; without
# --skip-errors the consumer gets a prefix of the samples before it and
# exit 1; with it, exactly those samples and the other shards whole.  A
# shard shorter than its manifest says: none of its bytes.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 100
expect_ok "$SK_BIN" pack "$T/c" -o "$T/z/train-%06d.tar.zst" --max-count 100 --compress zstd

# expect.py OUT SHARD... [--cut SHARD_NO SAMPLE_NO]: the shards' members up
# to their end blocks, shard SHARD_NO only up to the header of its sample
# SAMPLE_NO, then two end blocks.
cat >"$T/expect.py" <<'PY'
import sys, tarfile
args = sys.argv[2:]
cut = None
if "--cut" in args:
    i = args.index("--cut")
    cut = (int(args[i + 1]), int(args[i + 2]))
    args = args[:i]
out = b""
for n, path in enumerate(args):
    data = open(path, "rb").read()
    starts, end, key = [], 0, None
    with tarfile.open(path) as tf:
        for m in tf:
            k = m.name.split(".", 1)[0]
            if k != key:
                starts.append(m.offset)
                key = k
            end = m.offset_data + (m.size + 511) // 512 * 512
    out += data[:starts[cut[1]]] if cut and cut[0] == n else data[:end]
open(sys.argv[1], "wb").write(out + bytes(1024))
PY

step "pack's shards: their own bytes, plain and .tar.zst, into a pipe"
python3 "$T/expect.py" "$T/want.tar" "$T"/s/train-00000{0,1,2}.tar || die "expect.py failed"
"$SK_BIN" cat "$T/s" | cat >"$T/plain.tar" || die "cat of the plain shards failed"
cmp "$T/want.tar" "$T/plain.tar" || die "cat of pack's shards is not their bytes"
"$SK_BIN" cat "$T/z/manifest.json" | cat >"$T/zst.tar" || die "cat of the .tar.zst shards failed"
cmp "$T/want.tar" "$T/zst.tar" || die "cat of .tar.zst shards differs from the plain ones"
"$SK_BIN" cat --buffer 64K "$T/s" | cat >"$T/small.tar" || die "cat with a 64 KiB ring failed"
cmp "$T/want.tar" "$T/small.tar" || die "a small ring changed the stream"

step "a corrupt header in the middle of shard 1 (sample 40)"
cp -r "$T/s" "$T/bad"
python3 - "$T/bad/train-000001.tar" <<'PY' || die "corrupting failed"
import sys, tarfile
path = sys.argv[1]
key, n, at = None, -1, None
with tarfile.open(path) as tf:
    for m in tf:
        k = m.name.split(".", 1)[0]
        if k != key:
            key, n = k, n + 1
            if n == 40:
                at = m.offset
                break
with open(path, "r+b") as f:
    f.seek(at + 3)
    f.write(b"X")  # a name byte: the checksum no longer holds
PY
off=$(python3 -c 'import sys, tarfile
key, n = None, -1
for m in tarfile.open(sys.argv[1]):
    k = m.name.split(".", 1)[0]
    if k != key:
        key, n = k, n + 1
        if n == 39: print(m.offset); break' "$T/s/train-000001.tar")
python3 "$T/expect.py" "$T/skip.tar" "$T"/s/train-00000{0,1,2}.tar --cut 1 39 || die "expect.py failed"

run sh -c "'$SK_BIN' cat --skip-errors '$T/bad' | cat >'$T/got-skip.tar'"
[ "$RC" = 0 ] || die "cat --skip-errors failed"
assert_contains "$ERR" "train-000001.tar: corrupt tar header at offset"
cmp "$T/skip.tar" "$T/got-skip.tar" ||
    die "--skip-errors: not the samples before the bad one (its predecessor left out) and the next shard"

(set -o pipefail; "$SK_BIN" cat "$T/bad" 2>"$T/fail.err" | cat >"$T/got-fail.tar") &&
    die "cat of a corrupt shard exited 0"
assert_contains "$T/fail.err" "corrupt tar header at offset"
python3 - "$T/skip.tar" "$T/got-fail.tar" "$off" "$T/s/train-000000.tar" <<'PY' || die "the consumer got bytes it should not have"
import os, sys
want, got = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
shard0 = os.path.getsize(sys.argv[4]) - 1024  # pack ends a shard with two end blocks
good = shard0 + int(sys.argv[3])              # up to the header of sample 39
assert want.startswith(got), "not a prefix of the verified stream"
assert len(got) <= good, f"{len(got)} bytes out, only {good} verified before the bad header"
PY

step "a shard shorter than its manifest says: none of its bytes"
cp -r "$T/s" "$T/short"
truncate -s 20480 "$T/short/train-000001.tar"
run sh -c "'$SK_BIN' cat --skip-errors '$T/short/manifest.json' | cat >'$T/got-short.tar'"
assert_contains "$ERR" "train-000001.tar: 20480 bytes, its manifest says"
python3 "$T/expect.py" "$T/short.tar" "$T"/s/train-00000{0,1,2}.tar --cut 1 0 || die "expect.py failed"
cmp "$T/short.tar" "$T/got-short.tar" || die "bytes of the short shard reached the consumer"
echo ok
