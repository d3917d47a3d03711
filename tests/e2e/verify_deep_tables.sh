#!/usr/bin/env bash
# verify_deep_tables.sh - verify --deep catches a damaged key order table
# in an index whose checksums were made to hold again (what a crafted
# index looks like): lookups by key trust that table.  The same for a
# .tar.zst whose seek table no longer describes its frames (lookups jump
# to the offsets it gives).  And a member of a
# foreign tar without a key.ext name is what it is (a warning: readers
# skip it), not a broken sample.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 40 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar
expect_ok "$SK_BIN" verify --deep ds/s-00.tar
step "swap two entries of the key order table, then recompute the CRCs"
python3 - ds/s-00.tar.idx <<'PY'
import struct, sys
def crc32c(data, crc=0):
    poly = 0x82F63B78
    table = [0] * 256
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table[i] = c
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
order_off = struct.unpack_from("<Q", b, 72)[0]
a0, a1 = struct.unpack_from("<II", b, order_off)
struct.pack_into("<II", b, order_off, a1, a0)
struct.pack_into("<I", b, 88, crc32c(bytes(b[96:])))
struct.pack_into("<I", b, 92, crc32c(bytes(b[:92])))
open(p, "wb").write(b)
PY
run "$SK_BIN" verify --deep ds/s-00.tar
assert_eq "$RC" 1 "verify --deep exit status"
assert_contains "$OUT" "key order table is not sorted"
step "a .tar.zst whose seek table no longer describes its frames"
expect_ok "$SK_BIN" pack c -o z/s-%02d.tar.zst --compress zstd --max-count 40
expect_ok "$SK_BIN" verify --deep z/s-00.tar.zst
python3 - z/s-00.tar.zst <<'PY'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
n = struct.unpack_from("<I", b, len(b) - 9)[0]
assert n >= 2, n
table = len(b) - 9 - 8 * n
c0, c1 = struct.unpack_from("<I", b, table)[0], struct.unpack_from("<I", b, table + 8)[0]
assert c0 != c1, (c0, c1)
struct.pack_into("<I", b, table, c1)      # the first two frames' compressed sizes swapped:
struct.pack_into("<I", b, table + 8, c0)  # the sums still hold, the offsets do not
open(p, "wb").write(b)
PY
run "$SK_BIN" verify --deep z/s-00.tar.zst
assert_eq "$RC" 1 "verify --deep of a damaged seek table"
assert_contains "$OUT" "seek table frame 0 says"

step "a member with no key.ext name (a README in a foreign tar) is a warning, as readers skip it"
mkdir -p f && echo hi >f/README && echo x >f/a.txt && tar cf f.tar -C f README a.txt
expect_ok "$SK_BIN" index f.tar -q
run "$SK_BIN" verify --deep f.tar
assert_eq "$RC" 0 "verify of a tar with a README"
assert_contains "$OUT" "warning: name: member 'README' has no key.ext name"
echo "damaged tables found"
