#!/usr/bin/env bash
# index_errors.sh - damaged input gives a named error, never a crash or a
# wrong answer: a truncated shard (indexed up to its last complete member,
# the command fails naming the offset), a flipped header byte (names the
# header's offset), an index from another shard, a corrupt or truncated
# index, corrupt member data (CRC32C mismatch), sparse members.
set -eu
: "${SK_BIN:?}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
mkdir src && cd src
for i in 0 1 2 3; do head -c $((3000 + i * 700)) /dev/urandom > k$i.jpg; echo "label $i" > k$i.cls; done
tar --format=ustar -cf ../a.tar k0.cls k0.jpg k1.cls k1.jpg k2.cls k2.jpg k3.cls k3.jpg
tar --format=ustar -cf ../b.tar k0.cls k0.jpg k1.cls k1.jpg
cd ..
fail() { echo "FAIL: $*"; [ -f err.txt ] && cat err.txt; exit 1; }
expect_fail() { # expect_fail CODE PATTERN cmd...
    local code=$1 pat=$2; shift 2
    set +e; "$@" >out.bin 2>err.txt; local rc=$?; set -e
    [ "$rc" = "$code" ] || fail "exit $rc (want $code): $*"
    grep -q -- "$pat" err.txt || fail "no '$pat' in the error of: $*"
}

# Truncated shard: cut inside k2.jpg's data (header of k2.jpg at 4 blocks + padded data...).
off=$(python3 -c "
import tarfile; t=tarfile.open('a.tar'); m=[x for x in t if x.name=='k2.jpg'][0]; print(m.offset_data+100)")
head -c "$off" a.tar > trunc.tar
expect_fail 1 "truncated at offset $off, inside member 'k2.jpg'" "$SK_BIN" index trunc.tar
[ ! -e trunc.tar.idx ] || fail "an index of part of the truncated shard was left behind"
[ ! -f manifest.json ] || fail "manifest written despite the error"
expect_fail 1 "truncated at offset $off" "$SK_BIN" index --fast --no-manifest trunc.tar
# cut inside a header
hoff=$(python3 -c "
import tarfile; t=tarfile.open('a.tar'); m=[x for x in t if x.name=='k3.cls'][0]; print(m.offset)")
head -c $((hoff + 200)) a.tar > trunc2.tar
expect_fail 1 "truncated at offset $((hoff + 200)), inside a header" "$SK_BIN" index --no-manifest trunc2.tar

# Flipped byte in the header of k1.cls: checksum mismatch names its offset.
h1=$(python3 -c "
import tarfile; t=tarfile.open('a.tar'); m=[x for x in t if x.name=='k1.cls'][0]; print(m.offset)")
cp a.tar flip.tar
printf 'X' | dd of=flip.tar bs=1 seek=$((h1 + 3)) conv=notrunc 2>/dev/null
expect_fail 1 "corrupt tar header at offset $h1 (checksum mismatch)" "$SK_BIN" index --no-manifest flip.tar
expect_fail 1 "corrupt tar header at offset $h1" "$SK_BIN" index --fast --no-manifest flip.tar

# An index that belongs to another shard is refused.
"$SK_BIN" index -q --no-manifest a.tar b.tar
cp a.tar c.tar && cp b.tar.idx c.tar.idx
expect_fail 1 "does not belong to this shard" "$SK_BIN" get c.tar k0 --ext jpg
# same size, other first block: still refused
cp a.tar d.tar && "$SK_BIN" index -q --no-manifest d.tar
printf 'Z' | dd of=d.tar bs=1 seek=0 conv=notrunc 2>/dev/null
expect_fail 1 "first-block CRC32C differs" "$SK_BIN" get d.tar k0 --ext jpg

# Corrupt member data (size and first block intact): CRC32C mismatch.
cp a.tar e.tar && "$SK_BIN" index -q --no-manifest e.tar
d2=$(python3 -c "
import tarfile; t=tarfile.open('a.tar'); m=[x for x in t if x.name=='k2.jpg'][0]; print(m.offset_data)")
printf '\x00\x01' | dd of=e.tar bs=1 seek=$((d2 + 10)) conv=notrunc 2>/dev/null
expect_fail 1 "member 'k2.jpg' at offset $d2: CRC32C" "$SK_BIN" get e.tar k2 --ext jpg
"$SK_BIN" get e.tar k1 --ext jpg | cmp - src/k1.jpg

# Corrupt or truncated index files are refused, not trusted.
cp a.tar f.tar && cp a.tar.idx f.tar.idx
sz=$(stat -c %s f.tar.idx)
printf '\x7f' | dd of=f.tar.idx bs=1 seek=$((sz - 20)) conv=notrunc 2>/dev/null
expect_fail 1 "index body checksum mismatch" "$SK_BIN" get f.tar k0 --ext jpg
cp a.tar.idx f.tar.idx && printf '\x7f' | dd of=f.tar.idx bs=1 seek=20 conv=notrunc 2>/dev/null
expect_fail 1 "index header checksum mismatch" "$SK_BIN" get f.tar k0 --ext jpg
head -c $((sz - 8)) a.tar.idx > f.tar.idx
expect_fail 1 "truncated or padded" "$SK_BIN" get f.tar k0 --ext jpg
head -c 50 a.tar.idx > f.tar.idx
expect_fail 1 "index truncated" "$SK_BIN" get f.tar k0 --ext jpg
: > f.tar.idx
expect_fail 1 "index truncated" "$SK_BIN" get f.tar k0 --ext jpg

# Sparse members are refused, naming the member (GNU 'S' and pax GNU.sparse).
truncate -s 2M sparse.bin && printf 'data' | dd of=sparse.bin bs=1 seek=1000000 conv=notrunc 2>/dev/null
cp sparse.bin sp.bin
tar --format=gnu -S -cf sp-gnu.tar src/k0.cls sp.bin
tar --format=posix -S -cf sp-pax.tar src/k0.cls sp.bin
expect_fail 1 "member 'sp.bin' at offset 1024 has tar type 'S'" "$SK_BIN" index --no-manifest sp-gnu.tar
expect_fail 1 "GNU sparse file" "$SK_BIN" index --no-manifest sp-pax.tar

# Names DALI cannot hold and usage errors (s3:// shards: s3io_index.sh).
mkdir -p sp && echo hi > "sp/a b.txt" && tar -cf space.tar "sp/a b.txt"
expect_fail 1 "space.tar: member at offset 0: DALI's index cannot hold a name with a space" \
    "$SK_BIN" index --dali --no-manifest space.tar
# a tab or a line break would shift or split DALI's fields just the same
python3 -c '
import io, tarfile
with tarfile.open("nl.tar", "w") as t:
    for name in ("a\nb.txt",):
        ti = tarfile.TarInfo(name); ti.size = 2; t.addfile(ti, io.BytesIO(b"hi"))
with tarfile.open("tab.tar", "w") as t:
    ti = tarfile.TarInfo("c\td.txt"); ti.size = 2; t.addfile(ti, io.BytesIO(b"hi"))
'
expect_fail 1 "DALI's index cannot hold a name with a line break" "$SK_BIN" index --dali --no-manifest nl.tar
expect_fail 1 "DALI's index cannot hold a name with a tab" "$SK_BIN" index --dali --no-manifest tab.tar
expect_fail 2 "need DATASET and KEY" "$SK_BIN" get a.tar
expect_fail 1 "cannot open" "$SK_BIN" index --no-manifest missing.tar
# a shard with no index: get and stats say which command makes one
cp nl.tar plain.tar
expect_fail 1 'no index plain.tar.idx beside it: `shardkit index plain.tar` makes one' "$SK_BIN" get plain.tar x
expect_fail 1 'no index plain.tar.idx beside it: `shardkit index plain.tar` makes one' "$SK_BIN" stats plain.tar
echo "errors ok"
