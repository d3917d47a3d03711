#!/usr/bin/env bash
# pack: names that break or stretch the rules.
#  - a basename with no dot (or a leading dot, or a trailing dot): exit 1
#    naming it; --on-error skip skips it with a warning and a count
#  - the same extension twice in one sample (a.jpg + a.JPG in one directory;
#    the same key from two sources): exit 1 naming both files
#  - an empty file: allowed, packed as a 0-byte member
#  - a non-UTF-8 name, a non-ASCII UTF-8 name, a 300-byte path and a
#    150-byte path (ustar prefix): GNU tar, bsdtar and Python's tarfile
#    extract them under exactly the original bytes, with the same contents
#  - an archive member with a component over 255 bytes: exit 1 naming it
#    (an index could not carry its key); --on-error skip skips it
. "$(dirname "$0")/lib.sh"
need python3 tar
tmpdir

mk() { mkdir -p "$(dirname "$1")"; printf '%s' "${2-content of $1}" >"$1"; }

for bad in noext .hidden 'name.'; do
    step "no sample key: '$bad'"
    rm -rf "$T/in" "$T/out"
    mk "$T/in/sub/good.txt"; mk "$T/in/sub/good.json"; mk "$T/in/sub/$bad"
    expect_fail 1 "sub/$bad" "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar"
    assert_contains "$ERR" "no sample key"
    check_shards "$T/out"
    [ "$SHARDS" -eq 0 ] || die "a shard was published although the run failed"
    expect_ok "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar" --on-error skip --json
    assert_contains "$ERR" "sub/$bad"
    assert_contains "$OUT" '"skipped": 1'
    assert_contains "$OUT" '"files": 2'
    check_shards "$T/out"
done

step "the same extension twice in one sample: a.jpg and a.JPG"
rm -rf "$T/in" "$T/out"
mk "$T/in/x/a.jpg" one; mk "$T/in/x/a.JPG" two; mk "$T/in/x/b.jpg"
expect_fail 1 "x/a.jpg" "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar"
assert_contains "$ERR" "x/a.JPG"
assert_contains "$ERR" "same extension twice"
check_shards "$T/out"; [ "$SHARDS" -eq 0 ] || die "shard published"

step "the same key and extension from two sources (two directories, a directory and an archive)"
rm -rf "$T/in" "$T/in2" "$T/out"
mk "$T/in/k/a.jpg" one; mk "$T/in/k/a.txt"; mk "$T/in2/k/a.jpg" two
expect_fail 1 "k/a.jpg" "$SK_BIN" pack "$T/in" "$T/in2" -o "$T/out/s-%03d.tar"
assert_contains "$ERR" "$T/in2"
assert_contains "$ERR" "same extension twice"
tar cf "$T/src.tar" -C "$T/in2" k/a.jpg
expect_fail 1 "$T/src.tar" "$SK_BIN" pack "$T/in" --from-archive "$T/src.tar" -o "$T/out/s-%03d.tar"
assert_contains "$ERR" "k/a.jpg"
check_shards "$T/out"; [ "$SHARDS" -eq 0 ] || die "shard published"

step "an empty file is packed as a 0-byte member"
rm -rf "$T/in" "$T/out"
mk "$T/in/e/z.txt" ""; mk "$T/in/e/z.json" '{}'; mk "$T/in/e/y.bin" ""
expect_ok "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar" --json
assert_contains "$OUT" '"files": 3'
check_shards "$T/out"
python3 - "$T/out/s-000.tar" <<'PY' || die "empty members wrong"
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    m = {i.name: i for i in t.getmembers()}
    assert sorted(m) == ["e/y.bin", "e/z.json", "e/z.txt"], sorted(m)
    assert m["e/y.bin"].size == 0 and m["e/z.txt"].size == 0 and m["e/z.json"].size == 2
    assert t.extractfile(m["e/z.txt"]).read() == b""
PY

step "non-UTF-8, non-ASCII, 150-byte and 300-byte names"
rm -rf "$T/in" "$T/out"
d100=$(printf 'd%.0s' $(seq 100)); e120=$(printf 'e%.0s' $(seq 120)); f150=$(printf 'f%.0s' $(seq 150))
long="$d100/$e120/${f150:0:74}.txt"            # 300 bytes
mid="$d100/${f150:0:45}.txt"                     # 150 bytes: ustar prefix + name
latin1=$'caf\xe9'                                 # not UTF-8
mk "$T/in/$long" "long name"
mk "$T/in/$mid" "mid name"
mk "$T/in/$latin1.txt" "latin-1 name"
mk "$T/in/$latin1.cls" "7"
mk "$T/in/$'\xc3\xa9t\xc3\xa9'.txt" "utf-8 name"
mk "$T/in/$'bad\xff\xfe'/x.txt" "non-UTF-8 directory"
assert_eq "${#long}" 300 "long name length"
expect_ok "$SK_BIN" pack "$T/in" -o "$T/out/s-%03d.tar"
check_shards "$T/out"
shard=$T/out/s-000.tar
names() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | od -An -c); }
names "$T/in" >"$T/src.names"
mkdir "$T/gnu" && LC_ALL=C tar xf "$shard" -C "$T/gnu" || die "GNU tar cannot extract"
names "$T/gnu" >"$T/gnu.names"
cmp "$T/src.names" "$T/gnu.names" || die "GNU tar extracted other names: $(diff "$T/src.names" "$T/gnu.names" | head)"
diff -r "$T/in" "$T/gnu" >/dev/null || die "GNU tar extracted other contents"
if command -v bsdtar >/dev/null; then
    mkdir "$T/bsd" && LC_ALL=C bsdtar xf "$shard" -C "$T/bsd" || die "bsdtar cannot extract"
    names "$T/bsd" >"$T/bsd.names"
    cmp "$T/src.names" "$T/bsd.names" || die "bsdtar extracted other names: $(diff "$T/src.names" "$T/bsd.names" | head)"
    diff -r "$T/in" "$T/bsd" >/dev/null || die "bsdtar extracted other contents"
fi
python3 - "$shard" "$T/in" <<'PY' || die "Python's tarfile disagrees"
import os, sys, tarfile
shard, src = sys.argv[1], sys.argv[2]
want = {}
for root, dirs, files in os.walk(os.fsencode(src)):
    for f in files:
        p = os.path.join(root, f)
        want[os.path.relpath(p, os.fsencode(src))] = open(p, "rb").read()
got = {}
with tarfile.open(shard, encoding="utf-8", errors="surrogateescape") as t:
    for m in t.getmembers():
        got[os.fsencode(m.name)] = t.extractfile(m).read()
assert got == want, (sorted(got), sorted(want))
PY
step "an archive member with a 300-byte component: refused (no index could carry it)"
python3 - "$T/long.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT) as t:
    for name in ["d" * 300 + "/a.txt", "ok/b.txt"]:
        ti = tarfile.TarInfo(name)
        ti.size = 5
        t.addfile(ti, io.BytesIO(b"hello"))
PY
expect_fail 1 "a component longer than 255 bytes" "$SK_BIN" pack --from-archive "$T/long.tar" -o "$T/lo/s-%03d.tar"
expect_ok "$SK_BIN" pack --from-archive "$T/long.tar" -o "$T/lo/s-%03d.tar" --on-error skip --json
assert_contains "$OUT" '"skipped": 1'
expect_ok "$SK_BIN" get "$T/lo" ok/b
echo "name cases passed"
