#!/usr/bin/env bash
# mount_local: `shardkit mount` of a local dataset is the packed tree:
#   - diff -r of the mount against the input tree (plain shards), and
#     /usr/bin/python3's os.walk + PIL opens every JPEG;
#   - modes 0444/0555, mtimes from the tar headers (--mtime), inode numbers
#     the same at the next mount, writes refused;
#   - a 12 MiB member read in order (read-ahead) and at random offsets;
#   - the same from .tar.zst shards (seek table: decompressed from the
#     frame holding the offset);
#   - --by-shard: one directory per shard, the same files;
#   - --verify: a member whose bytes changed is EIO, the log names the shard
#     and offset (without --verify the changed bytes are served);
#   - a shard cut short while mounted, or before its first read: EIO past
#     the cut (not zeros), the members before it served;
#   - refusals that say why: mountpoint not empty or missing, no index,
#     a .tar.gz shard (named);
#   - unmount with fusermount3 -u and with SIGTERM leaves nothing behind;
#     without -f the command returns once the mount is up.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/e2e/lib/mount.sh"
skip_unless_fuse
need diff cmp truncate gzip
PY=/usr/bin/python3
tmpdir T
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 600 --per-dir 200 >/dev/null || die mkcorpus
mkdir -p c/big
head -c 12582917 /dev/urandom >c/big/00000000.bin
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-size 1M --mtime 1700000000
nfiles=$(find c -type f | wc -l)

step "diff -r against the packed tree"
mount_up m ds
diff -r c m >diff.out || die "the mount differs from the input: $(head -5 diff.out)"
assert_eq "$(find m -type f | wc -l)" "$nfiles" "files under the mount"

step "modes, mtimes, writes refused"
assert_eq "$(find m -type f ! -perm 0444 | wc -l)" 0 "files not 0444"
assert_eq "$(find m -type d ! -perm 0555 | wc -l)" 0 "directories not 0555"
assert_eq "$(stat -c %Y m/n00001/00000201.json)" 1700000000 "mtime from the tar header"
touch m/new 2>/dev/null && die "a file was created on the mount"
(echo x >>m/n00000/00000000.cls) 2>/dev/null && die "a member was written"
stat -c '%i %n' $(find m -type f | sort) >ino1

step "a large member: in order, and at random offsets"
cmp c/big/00000000.bin m/big/00000000.bin || die "big member differs read in order"
$PY - <<'PY' || die "random reads of the big member differ"
import os, random
r = random.Random(7)
a, b = open("c/big/00000000.bin", "rb"), open("m/big/00000000.bin", "rb")
size = os.path.getsize("c/big/00000000.bin")
for _ in range(200):
    off, n = r.randrange(size), r.choice([1, 511, 4096, 131072, 1 << 20])
    a.seek(off); b.seek(off)
    if a.read(n) != b.read(n):
        raise SystemExit("differs at %d+%d" % (off, n))
PY

step "os.walk + PIL opens every JPEG"
if $PY -c 'import PIL' 2>/dev/null; then
    $PY - m <<'PY' >walk.out || die "PIL over the mount: $(cat walk.out)"
import os, sys
from PIL import Image
n = 0
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        if f.endswith(".jpg"):
            with Image.open(os.path.join(d, f)) as im:
                im.load()
            n += 1
print(n)
PY
    assert_eq "$(cat walk.out)" 600 "JPEGs PIL opened"
else
    echo "python3-pil not installed: the PIL walk is left out"
fi
mount_down m

step "inode numbers are the same at the next mount"
mount_up m ds
stat -c '%i %n' $(find m -type f | sort) >ino2
cmp ino1 ino2 || die "inode numbers changed between mounts: $(diff ino1 ino2 | head -3)"
mount_down m

step ".tar.zst (seek table): diff -r, the 12 MiB member (two frames) at random offsets"
expect_ok "$SK_BIN" shard ds -o zs/z-%02d.tar.zst --max-size 2M --compress zstd
mount_up m zs
diff -r c m >diff.out || die "the .tar.zst mount differs: $(head -5 diff.out)"
$PY - <<'PY' || die "random reads of the big member (zstd) differ"
import os, random
r = random.Random(9)
a, b = open("c/big/00000000.bin", "rb"), open("m/big/00000000.bin", "rb")
size = os.path.getsize("c/big/00000000.bin")
for _ in range(50):
    off, n = r.randrange(size), r.choice([1, 4096, 1 << 20])
    a.seek(off); b.seek(off)
    if a.read(n) != b.read(n):
        raise SystemExit("differs at %d+%d" % (off, n))
PY
mount_down m

step "--by-shard: one directory per shard"
mount_up m ds --by-shard
assert_eq "$(ls m | tr '\n' ' ')" "$(cd ds && ls *.tar | tr '\n' ' ')" "shard directories"
assert_eq "$(find m -type f | wc -l)" "$nfiles" "files under the shard directories"
f=$(cd m/s-01.tar && find . -name '*.jpg' | sed -n 1p)
cmp "m/s-01.tar/$f" "c/$f" || die "--by-shard: $f differs"
[ -e "m/s-00.tar/$f" ] && die "--by-shard: $f of s-01.tar shows in s-00.tar"
mount_down m

step "--verify: a changed member is EIO, the log names shard and offset"
cp -r ds dv
key=$(tar tvf dv/s-02.tar | awk '$3 > 2000 && /jpg$/ {print $6; exit}')
off=$($PY -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = t.getmember(sys.argv[2]); print(m.offset_data + 1000)' dv/s-02.tar "$key")
printf '\x55' | dd of=dv/s-02.tar bs=1 seek="$off" conv=notrunc status=none
mount_up m dv --verify
cat "m/$key" >/dev/null 2>cat.err && die "a member with a wrong CRC32C was served under --verify"
assert_contains cat.err "Input/output error"
assert_contains m.log "dv/s-02.tar"
assert_contains m.log "at offset $((off - 1000))"
cmp "m/n00000/00000000.jpg" c/n00000/00000000.jpg || die "--verify: a sound member refused"
mount_down m
mount_up m dv
cat "m/$key" >/dev/null || die "without --verify the member is served"
mount_down m

step "a shard cut short while mounted: EIO past the cut"
cp -r ds dt
mount_up m dt
last=$(tar tf dt/s-03.tar | tail -1)
first=$(tar tf dt/s-03.tar | sed -n 1p)
second=$(tar tf dt/s-03.tar | sed -n 2p)
cmp "m/$first" "c/$first" || die "first member of s-03 differs" # the shard is open
truncate -s $(( $(stat -c %s dt/s-03.tar) / 2 )) dt/s-03.tar
cat "m/$last" >/dev/null 2>cut.err && die "a member past the cut was served"
assert_contains cut.err "Input/output error"
assert_contains m.log "shard cut short"
cmp "m/$second" "c/$second" || die "a member before the cut differs"
mount_down m
step "a shard already short when first read: EIO past the cut only"
mount_up m dt
cat "m/$last" >/dev/null 2>cut.err && die "a member past the cut of a short shard was served"
assert_contains cut.err "Input/output error"
assert_contains m.log "shard cut short"
cmp "m/$second" "c/$second" || die "a member before the cut of a short shard is not served as packed"
cmp "m/$first" "c/$first" || die "the first member of a short shard is not served as packed"
mount_down m

step "refusals say why"
mkdir full && touch full/x
expect_fail 1 "not empty" "$SK_BIN" mount ds full
expect_fail 1 "nosuch" "$SK_BIN" mount ds nosuch
mkdir empty
expect_fail 1 "no shards with an index" "$SK_BIN" mount c empty
mkdir gz && gzip -c ds/s-00.tar >gz/g-00.tar.gz && expect_ok "$SK_BIN" index gz/g-00.tar.gz
expect_fail 1 "gz/g-00.tar.gz" "$SK_BIN" mount gz empty
mountpoint -q empty && die "a refused mount was mounted"

step "SIGTERM unmounts cleanly; without -f the command returns once mounted"
mount_up m ds
kill -TERM "$MOUNT_PID"
for i in $(seq 1 100); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.1; done
wait "$MOUNT_PID" || die "the mount process exited $? on SIGTERM"
grep -q " $T/m " /proc/mounts && die "still mounted after SIGTERM"
expect_ok "$SK_BIN" mount ds m
mountpoint -q m || die "the background mount is not up when the command returns"
cmp m/n00002/00000400.jpg c/n00002/00000400.jpg || die "background mount: wrong bytes"
fusermount3 -u m || die "fusermount3 -u failed"
for i in $(seq 1 100); do pgrep -f "shardkit mount ds m" >/dev/null || break; sleep 0.1; done
pgrep -f "$SK_BIN mount ds m" >/dev/null && die "the background mount process outlived the unmount"
[ -z "$(ls -A m)" ] || die "m not empty after unmount"
echo "mount_local: ok"
