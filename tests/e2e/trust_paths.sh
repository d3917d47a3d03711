#!/usr/bin/env bash
# trust_paths.sh - nothing is written outside the place the user named,
# and nothing the user had is destroyed (issue "trust", sections 1 and 2):
#   - a CRC-valid but crafted index (a key ending in '/', an extension
#     holding "/../", a key with "..") is refused at open, and `get -o DIR`
#     writes nothing outside DIR even when asked to trust the index body;
#   - names from a foreign tar ('../x', '/abs', 'a/../../b') go through
#     index, get --tar, cat and shard as GNU tar extracts them: leading '/'
#     and '../' stripped with a warning, a '..' further in skipped;
#   - `get --tar -o FILE` and `get -o FILE` keep an existing FILE when the
#     read fails, and never unlink or replace /dev/null or a FIFO.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T" || die "cd"

step "a one-member shard and hostile indexes for it"
mkdir -p src/a && printf 'hello' >src/a/x.txt
tar cf one.tar --format=ustar -C src a/x.txt
"$SK_TOOLS/mkidx" one.tar one.tar.idx a/x txt || die "mkidx (sound) failed"
expect_ok "$SK_BIN" get one.tar a/x -o out1
[ "$(cat out1/x.txt)" = hello ] || die "the sound index does not serve the member"
for bad in 'a/|txt' 'a/x|/../../../../pwned' '../../pwned|txt' 'a/../../pwned|txt' '/etc/pwned|txt'; do
    key=${bad%%|*} ext=${bad#*|}
    step "crafted index: key '$key', extension '$ext'"
    "$SK_TOOLS/mkidx" one.tar one.tar.idx "$key" "$ext" || die "mkidx failed"
    rm -rf victim && mkdir -p victim/d
    run "$SK_BIN" get one.tar "$key" -o victim/d/out
    [ "$RC" -ne 0 ] || die "get accepted a crafted index (key '$key', ext '$ext')"
    grep -qE "not a safe relative name|extension holds" "$ERR" || die "no reason given: $(cat "$ERR")"
    run "$SK_BIN" get --trust-index one.tar "$key" -o victim/d/out
    # (trusted, the key's last component may still name a file: inside DIR)
    outside=$(find "$T" -name 'pwned*' -not -path "$T/victim/d/out/*")
    [ -z "$outside" ] || die "a crafted index wrote $outside"
    [ -z "$(find victim -mindepth 1 -not -path 'victim/d*')" ] || die "get wrote outside victim/d: $(find victim)"
    run "$SK_BIN" verify one.tar
    [ "$RC" -ne 0 ] || die "verify called a crafted index sound"
done

step "a foreign tar with '../x', '/abs' and 'a/../../b' members"
python3 - <<'PY'
import io, tarfile
with tarfile.open("evil.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for name, data in (("../../up/a.txt", b"one"), ("/abs/b.txt", b"two"), ("ok/c.txt", b"three"),
                       ("ok/../../d.txt", b"four")):
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        t.addfile(ti, io.BytesIO(data))
PY
expect_ok "$SK_BIN" index evil.tar
assert_contains "$ERR" "indexed without it"
assert_contains "$ERR" "'ok/../../d.txt'"
expect_ok "$SK_TOOLS/idxdump" evil.tar.idx
assert_contains "$OUT" "key=up/a "
assert_contains "$OUT" "key=abs/b "
assert_not_contains "$OUT" "key=../"
assert_not_contains "$OUT" "d.txt"
expect_ok "$SK_BIN" get evil.tar up/a --tar -o got.tar
assert_eq "$(tar tf got.tar)" "up/a.txt" "get --tar member name"
"$SK_BIN" cat evil.tar >cat.tar || die "cat failed"
names=$(tar tf cat.tar | tr '\n' ' ')
assert_eq "$names" "up/a.txt abs/b.txt ok/c.txt " "cat's member names"
expect_ok "$SK_BIN" shard evil.tar -o sh/s-%02d.tar
assert_eq "$(tar tf sh/s-00.tar | tr '\n' ' ')" "up/a.txt abs/b.txt ok/c.txt " "shard's member names"
assert_contains "$ERR" "skipped 'ok/../../d.txt'"
[ ! -e "$T/../up" ] && [ ! -e /abs ] || die "something was written outside"

step "get keeps an existing output when the read fails"
"$SK_TOOLS/mkidx" one.tar one.tar.idx a/x txt
printf 'precious' >keep.tar
cp one.tar one.tar.orig
printf 'X' | dd of=one.tar bs=1 seek=514 conv=notrunc 2>/dev/null # damage the member: CRC mismatch
run "$SK_BIN" get one.tar a/x --tar -o keep.tar
[ "$RC" -ne 0 ] || die "get --tar read a damaged member"
assert_eq "$(cat keep.tar)" precious "the file get --tar -o was to replace"
run "$SK_BIN" get one.tar a/x -e txt -o keep.tar
[ "$RC" -ne 0 ] || die "get -e read a damaged member"
assert_eq "$(cat keep.tar)" precious "the file get -o was to replace"
ls -a | grep -q '\.tmp$' && die "a temporary file was left: $(ls -a | grep tmp)"

step "get never unlinks or renames over a device or a FIFO"
run "$SK_BIN" get one.tar a/x --tar -o /dev/null
[ "$RC" -ne 0 ] || die "get read a damaged member"
[ -c /dev/null ] || die "/dev/null is no longer a character device"
mkfifo fifo
(cat fifo >fifo.out &)
cp one.tar.orig one.tar
expect_ok "$SK_BIN" get one.tar a/x -e txt -o fifo
sleep 0.2
[ -p fifo ] || die "the FIFO was replaced"
assert_eq "$(cat fifo.out)" hello "what went through the FIFO"
step "every output, not only get's: a manifest, a DALI index and wids' JSON to /dev/null"
expect_ok "$SK_BIN" index one.tar --dali -o /dev/null --wids=/dev/null -q
[ -c /dev/null ] || die "index replaced /dev/null"
ls -a | grep -q '\.tmp$' && die "a temporary file was left: $(ls -a | grep tmp)"
echo "nothing escapes, nothing is lost"
