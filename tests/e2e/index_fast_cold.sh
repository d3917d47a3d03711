#!/usr/bin/env bash
# index_fast_cold.sh - `index --fast` from a cold page cache (the shard
# evicted with posix_fadvise DONTNEED by tests/tools/dropcache, so the walk
# takes its read-ahead path: a RWF_NOWAIT miss, then WILLNEED ahead of the
# walk) writes the very bytes it writes warm, and the same offsets, sizes
# and keys as the full index.  The shard mixes runs of tiny members longer
# than the largest header window (64 KiB), dense small samples over more
# than the 32 MiB read-ahead distance, big members that end runs, a pax
# header longer than a window and a GNU long name; Python's tarfile writes
# it.  Hostile: a header in the read-ahead region that claims a size past
# the end of the file, and one at the end, inside the last window: both
# fail naming the truncation, cold exactly as warm, after indexing the same
# samples.  The full index, whose stream reads ahead cold as well, is the
# same cold as warm too.
. "$(dirname "$0")/lib.sh"
need python3
DROP=$SK_TOOLS/dropcache IDXDUMP=$SK_TOOLS/idxdump
[ -x "$DROP" ] && [ -x "$IDXDUMP" ] || skip "build the tools first ($DROP, $IDXDUMP)"
tmpdir T
cd "$T"

step "make a shard of tiny, small and big members"
python3 - <<'EOF'
import io, random, tarfile
rnd = random.Random(15)
def add(t, name, n, fmt_pax=None):
    ti = tarfile.TarInfo(name)
    ti.size = n
    if fmt_pax:
        ti.pax_headers = fmt_pax
    t.addfile(ti, io.BytesIO(bytes([rnd.randrange(256)]) * n))
with tarfile.open("mix.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for i in range(400):                       # 800 members of 1 KiB each: one run of 800 KiB
        add(t, "tiny/%05d.cls" % i, rnd.randrange(1, 40))
        add(t, "tiny/%05d.json" % i, rnd.randrange(1, 300))
    for i in range(2500):                      # dense small samples, ~8 KiB each: 20 MiB
        add(t, "a/%05d.cls" % i, 3)
        add(t, "a/%05d.jpg" % i, rnd.randrange(2000, 12000))
        add(t, "a/%05d.json" % i, rnd.randrange(20, 600))
    for i in range(10):                        # big members: runs end, 15 MiB
        add(t, "big/%03d.mp4" % i, rnd.randrange(1 << 20, 2 << 20))
        add(t, "big/%03d.txt" % i, 7)
    add(t, "long/" + "n" * 150 + ".txt", 11)   # GNU long name
    for i in range(2500):                      # dense again, past 32 MiB of read-ahead
        add(t, "b/%05d.cls" % i, 3)
        add(t, "b/%05d.jpg" % i, rnd.randrange(2000, 12000))
        add(t, "b/%05d.json" % i, rnd.randrange(20, 600))
with tarfile.open("pax.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(300):
        add(t, "p/%05d.jpg" % i, rnd.randrange(2000, 30000))
    add(t, "p/99999.jpg", 100, {"comment": "x" * 100000})   # a pax header of 100 KB
    for i in range(300):
        add(t, "q/%05d.jpg" % i, rnd.randrange(2000, 30000))
EOF
size=$(stat -c %s mix.tar)
[ "$size" -gt $((50 << 20)) ] || die "mix.tar is only $size bytes"

# the page cache of this file system must let go of a file, or no run is cold
"$DROP" mix.tar
"$DROP" -c mix.tar > cached.txt
grep -q ": 0 of " cached.txt || skip "cannot evict files from the page cache here ($(cat cached.txt))"

dump() { "$IDXDUMP" "$1" | sed -e 's/ crc32c=[0-9a-f]*//' -e 's/ flags=[0-9]*//'; }
for s in mix pax; do
    step "$s.tar: full index, --fast warm, --fast cold"
    expect_ok "$SK_BIN" index --no-manifest -q "$s.tar"
    dump "$s.tar.idx" > full.txt
    cp "$s.tar.idx" full.idx
    "$DROP" "$s.tar"   # the full index's stream reads ahead cold too
    expect_ok "$SK_BIN" index --no-manifest -q "$s.tar"
    cmp "$s.tar.idx" full.idx || die "$s.tar: the full index cold differs from warm"
    expect_ok "$SK_BIN" index --fast --no-manifest -q "$s.tar"
    cp "$s.tar.idx" warm.idx
    "$DROP" "$s.tar"
    expect_ok "$SK_BIN" index --fast --no-manifest -q "$s.tar"
    cmp "$s.tar.idx" warm.idx || die "$s.tar: --fast cold wrote another index than warm"
    dump "$s.tar.idx" > fast.txt
    cmp full.txt fast.txt || die "$s.tar: --fast and the full index disagree: $(diff full.txt fast.txt | head -5)"
    # read ahead from the first miss on: the cold run leaves the shard in the cache
    [ "$s" = pax ] || { "$DROP" -c "$s.tar" | grep -qv ": 0 of " || die "$s.tar: nothing was read"; }
done
n=$(grep -c '^sample' fast.txt)
[ "$n" = 601 ] || die "pax.tar: $n samples, want 601"

# Hostile: a member's size field claims more bytes than the file has.
# $1: name of the member to patch; the error names the file's end.
patch_size() {
    python3 - "$1" <<'EOF'
import sys, tarfile
name = sys.argv[1]
with tarfile.open("mix.tar") as t:
    off = [m for m in t if m.name == name][0].offset
b = bytearray(open("mix.tar", "rb").read())
h = b[off:off + 512]
h[124:136] = b"%011o\0" % (4 << 30)   # 4 GiB
h[148:156] = b"        "
h[148:156] = b"%06o\0 " % sum(h)
b[off:off + 512] = h
open("bad.tar", "wb").write(b)
EOF
}
for victim in b/01000.jpg b/02499.json; do
    step "hostile: $victim claims 4 GiB"
    patch_size "$victim"
    # the same error full, --fast warm and --fast cold, and no index of
    # part of a damaged shard left behind by any of them
    rm -f bad.tar.idx
    expect_fail 1 "truncated at offset $size, inside member '$victim'" \
        "$SK_BIN" index --no-manifest bad.tar
    [ ! -e bad.tar.idx ] || die "bad.tar: the full index left bad.tar.idx behind"
    expect_fail 1 "truncated at offset $size, inside member '$victim'" \
        "$SK_BIN" index --fast --no-manifest bad.tar
    [ ! -e bad.tar.idx ] || die "bad.tar: --fast warm left bad.tar.idx behind"
    "$DROP" bad.tar
    expect_fail 1 "truncated at offset $size, inside member '$victim'" \
        "$SK_BIN" index --fast --no-manifest bad.tar
    [ ! -e bad.tar.idx ] || die "bad.tar: --fast cold left bad.tar.idx behind"
done
echo "index --fast cold ok"
