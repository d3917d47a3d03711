#!/usr/bin/env bash
# interop_lower: extensions are lowercased as WebDataset lowercases them,
# Python's str.lower() of the name tarfile decoded (UTF-8, invalid bytes as
# surrogate escapes).  sk_ext_lower (through ctypes) against str.lower()
# for every code point, capital sigmas in every context, random strings
# and invalid UTF-8; then index, pack and cat of a tar with non-ASCII
# extensions give the extensions Python gives.
. "$(dirname "$0")/lib.sh"
tmpdir T
LIB=$(dirname "$SK_BIN")/libshardkit.so
[ -e "$LIB" ] || skip "no $LIB"

step "sk_ext_lower == str.lower() (surrogateescape) on every code point and on hostile strings"
pylib - "$LIB" <<'EOF2' || die "sk_ext_lower differs from Python's str.lower()"
import ctypes, random, sys
lib = ctypes.CDLL(sys.argv[1])
f = lib.sk_ext_lower
f.restype = ctypes.c_size_t
f.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p]
def ours(b):
    out = ctypes.create_string_buffer(len(b) + len(b) // 2 + 1)
    n = f(b, len(b), out)
    return out.raw[:n]
def py(b):
    return b.decode("utf-8", "surrogateescape").lower().encode("utf-8", "surrogateescape")
bad = 0
def check(b):
    global bad
    if ours(b) != py(b):
        bad += 1
        if bad < 10: print("differs:", b, ours(b), py(b))
for cp in range(0x110000):
    if 0xD800 <= cp <= 0xDFFF: continue
    c = chr(cp).encode()
    check(c); check(b"A" + c + "\u03a3".encode()); check(c + "\u03a3".encode())
    check("\u03a3".encode() + c); check(b"x\xce\xa3" + c)
rnd = random.Random(7)
pool = ["A", "a", "\u03a3", "\u0130", "\u00c4", "'", ".", "\u0345", "\u02b0", "\u1e9e", "\u2126",
        "\u212a", "\u023a", "1", "\U0001d400", "\u0300", "\u00df"]
raw = [b"\xff", b"\xc3", b"\xe4\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\x80"]
for _ in range(200000):
    parts = [rnd.choice(pool).encode() if rnd.random() < .8 else rnd.choice(raw)
             for _ in range(rnd.randint(1, 8))]
    check(b"".join(parts))
print("checked; differences:", bad)
sys.exit(1 if bad else 0)
EOF2

step "index, pack and cat: the extensions WebDataset gives"
mkdir -p "$T/src/d"
for n in "a.Äpfel" "a.JPG" "b.ΣΑΣ" "b.ΑΣ.İX" "c.Ωmega" "c.ẞ"; do printf '%s' "$n" >"$T/src/d/$n"; done
(cd "$T/src" && tar --format=pax --sort=name -cf "$T/in.tar" d)
expect_ok "$SK_BIN" index -o "$T/m.json" "$T/in.tar"
expect_ok "$SK_BIN" pack "$T/src" -o "$T/out/p-%03d.tar"
expect_ok "$SK_BIN" cat "$T/in.tar"
cp "$OUT" "$T/cat.tar"
python3 - "$T/in.tar" "$T/m.json" "$T/out/manifest.json" "$T/cat.tar" <<'EOF2' || die "extensions differ from WebDataset's"
import json, re, sys, tarfile
want = {}
for m in tarfile.open(sys.argv[1]):
    if not m.isfile(): continue
    k, e = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", m.name).groups()  # webdataset's base_plus_ext
    want[e.lower()] = want.get(e.lower(), 0) + 1
for path in sys.argv[2:4]:
    got = json.load(open(path))["extensions"]
    assert got == want, (path, got, want)
cat = sorted(m.name.split(".", 1)[1] for m in tarfile.open(sys.argv[4]))
assert cat == sorted(want), (cat, sorted(want))
print("ok", want)
EOF2
step "get --ext matches as the index lowercases: İX finds i̇x (a byte longer)"
expect_ok "$SK_BIN" get "$T/m.json" d/b --ext "ΑΣ.İX" -o "$T/got"
cmp "$T/got" "$T/src/d/b.ΑΣ.İX" || die "get --ext 'ΑΣ.İX' returned another member"
echo "interop_lower: ok"
