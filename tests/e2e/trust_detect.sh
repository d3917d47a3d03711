#!/usr/bin/env bash
# trust_detect.sh - what `index` reads, `cat` reads: every compression
# libarchive decodes in-process (gzip, bzip2, compress, xz, lzma, lzip,
# lz4) is found by content, whatever the file is named, by cat, index and
# verify alike; a numeric header field is read as GNU tar reads it (a
# leading NUL, then the digits); and a failed index leaves no .idx behind.
. "$(dirname "$0")/lib.sh"
need bsdtar gzip bzip2 xz tar python3
tmpdir T
cd "$T" || die cd
mkdir s
for i in 1 2 3; do echo "sample $i" >s/k$i.txt; done
expect_ok "$SK_BIN" pack s -o 'a-%d.tar' -q
"$SK_BIN" cat --keys a-0.tar >want.keys || die "cat of the plain shard failed"
M=(k1.txt k2.txt k3.txt)
gzip -c a-0.tar >gz.tgz
bzip2 -c a-0.tar >bz.tbz
xz -c a-0.tar >xz.txz
xz --format=lzma -c a-0.tar >lzma.tlz
bsdtar --lzip -cf lzip.tlz -C s "${M[@]}" || die "bsdtar --lzip failed"
bsdtar -Z -cf z.taz -C s "${M[@]}" || die "bsdtar -Z failed"
if command -v lz4 >/dev/null; then lz4 -q -c a-0.tar >lz4.tlz4; fi
for f in gz.tgz bz.tbz xz.txz lzma.tlz lzip.tlz z.taz lz4.tlz4; do
    [ -f "$f" ] || continue
    cp "$f" "named-$f.tar" # a name that says nothing of the compression
    for g in "$f" "named-$f.tar"; do
        step "$g: cat, index and verify read it"
        run "$SK_BIN" cat --keys "$g"
        [ "$RC" = 0 ] || die "cat $g exited $RC"
        cmp -s "$OUT" want.keys || die "cat $g: keys $(tr '\n' ' ' <"$OUT")"
        expect_ok "$SK_BIN" index --no-manifest "$g"
        expect_ok "$SK_BIN" verify "$g"
        "$SK_BIN" cat "$g" | tar tf - >/dev/null || die "cat $g: not a tar"
    done
done

step "a size field of a NUL and then digits is read as GNU tar reads it"
python3 - <<'PYEOF' || die "could not write the shard"
import io, tarfile
ti = tarfile.TarInfo("k.txt"); ti.size = 5
b = io.BytesIO()
with tarfile.open(fileobj=b, mode="w", format=tarfile.USTAR_FORMAT) as tf:
    tf.addfile(ti, io.BytesIO(b"hello"))
d = bytearray(b.getvalue())
d[124:136] = b"\0" + b"0000000005" + b"\0"  # an old tar's leading NUL
d[148:156] = b" " * 8
d[148:156] = b"%06o\0 " % sum(d[:512])
open("nul.tar", "wb").write(d)
PYEOF
[ "$(tar xOf nul.tar k.txt)" = hello ] || die "GNU tar does not read the NUL-led size field as 5"
run "$SK_BIN" cat nul.tar
[ "$RC" = 0 ] || die "cat of the NUL-led size field exited $RC"
[ "$(tar xOf "$OUT" k.txt)" = hello ] || die "cat did not read the member's 5 bytes"
expect_ok "$SK_BIN" index --no-manifest nul.tar
[ "$("$SK_BIN" get nul.tar k --ext txt)" = hello ] || die "get through the index read something else"

step "a failed index leaves no .idx behind (plain and compressed)"
rm -f manifest.json # pack's
head -c 1500 a-0.tar >cut.tar
bzip2 -c cut.tar >cut.tbz
for g in cut.tar cut.tbz; do
    expect_fail 1 "truncated" "$SK_BIN" index "$g"
    [ ! -e "$g.idx" ] || die "index of $g failed and left $g.idx"
    [ ! -e manifest.json ] || die "index of $g failed and wrote a manifest"
done
echo ok
