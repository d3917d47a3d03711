#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# pack_bounded.sh - pack walks its directories in key order, a window of
# files at a time, while it writes: memory does not grow with the number
# of files.  A tree of 100,000 tiny files in 1,000 directories packs in
# the memory 10,000 take (before: about 70 bytes more per file, ~10 MiB
# here).  The order is still the whole catalog's: across windows, with
# files beside subdirectories, names that sort around a directory's
# ("a-b/" before "a/", "d0050" after "d005/"), upper-case and double
# extensions, names that are not ASCII and two sources whose keys meet,
# -j 1 and -j 2 write the bytes of the path that sorts the catalog whole
# (--on-error skip), shards, indexes and manifest.
. "$(dirname "$0")/lib.sh"
need python3 cmp
tmpdir T

step "memory: 100,000 files packed in what 10,000 take"
empty_tree "$T/small" 100; empty_tree "$T/big" 1000
rss()
{
    # --max-count bounds what one shard's index holds (it is written whole at the end)
    /usr/bin/time -f %M -o "$T/rss" "$SK_BIN" pack "$1" -o "$T/out/s-%06d.tar" --max-count 1000 -q ||
        die "pack of $1 failed"
    [ "$(ls "$T/out" | grep -c '\.tar$')" -eq "$2" ] || die "pack of $1 did not write $2 shards"
    rm -rf "$T/out"
    cat "$T/rss"
}
small=$(rss "$T/small" 10); big=$(rss "$T/big" 100)
rss_grew_within 3072 "$small" "$big" "packing 100,000 files rather than 10,000"
rm -rf "$T/small" "$T/big"

step "order: windows, files beside directories, two sources"
python3 - "$T" <<'PY'
import os, sys
t = sys.argv[1]
def f(p, data=b""):
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as fh:
        fh.write(data)
A, B = f"{t}/A", f"{t}/B"
for d in range(16):  # 12,800 files and more: over one window
    for k in range(400):
        f(f"{A}/bulk/d{d:03d}/k{k:04d}.jpg", b"j" * (k % 7))
        f(f"{A}/bulk/d{d:03d}/k{k:04d}.cls", b"%d" % d)
    f(f"{A}/bulk/d{d:03d}.jpg", b"beside")      # key d005: before d005/...
    f(f"{A}/bulk/d{d:03d}-x.jpg", b"dash")      # '-' < '/': before too
    f(f"{A}/bulk/d{d:03d}0.jpg", b"zero")       # '0' > '/': after the subtree
    f(f"{A}/bulk/d{d:03d}.x/in.jpg", b"dotdir") # a directory with a dot
for n in ("a.jpg", "a.TXT", "a.seg.png", "a-b.cls", "a/x.jpg", "a-b/y.jpg", "a.b/z.jpg",
          "a0/w.jpg", "ab.jpg", "deep/1/2/3/4/f.jpg", "deep/1.jpg", "deep/1/2.jpg",
          "m.JPG", "m.cls", "m.Json", "\u00e9t\u00e9.jpg", "\u00e9/x.jpg", "Z.jpg", "_.jpg"):
    f(f"{A}/{n}", n.encode())
for d in range(0, 16, 3):  # the second source's files join the first's samples
    f(f"{B}/bulk/d{d:03d}/k0001.json", b"{}")
f(f"{B}/a.json", b"{}")
f(f"{B}/zz/onlyb.jpg", b"b")
f(f"{B}/bulk/d005-x.cls", b"c")
PY
expect_ok "$SK_BIN" pack "$T/A" "$T/B" -o "$T/whole/s-%03d.tar" --max-size 200K --on-error skip -q
n=$(ls "$T/whole" | grep -c '\.tar$')
[ "$n" -ge 3 ] || die "expected several shards, got $n"
for j in 1 2; do
    expect_ok "$SK_BIN" pack "$T/A" "$T/B" -o "$T/j$j/s-%03d.tar" --max-size 200K -j $j -q
    [ "$(ls "$T/j$j" | wc -l)" -eq "$(ls "$T/whole" | wc -l)" ] || die "-j $j wrote other files"
    for f in "$T"/whole/*; do cmp "$f" "$T/j$j/${f##*/}" || die "-j $j: ${f##*/} differs"; done
done
check_shards "$T/j2"
tar tf "$T/j1/s-000.tar" | head -12 >"$T/first"
cat >"$T/want" <<'W'
Z.jpg
_.jpg
a.jpg
a.json
a.seg.png
a.TXT
a-b.cls
a-b/y.jpg
a.b/z.jpg
a/x.jpg
a0/w.jpg
ab.jpg
W
diff "$T/want" "$T/first" || die "the first members are not in key order"
step "a bad name past the first window stops the run where the walk meets it"
# (the walk reaches it after shards were written: they stay, whole and the
# same as without it; the shard being written is removed; no manifest)
expect_ok "$SK_BIN" pack "$T/A" -o "$T/good/s-%03d.tar" --max-size 200K -q
mkdir -p "$T/A/zzz"
printf x >"$T/A/zzz/noext"
expect_fail 1 "zzz/noext: no sample key" "$SK_BIN" pack "$T/A" -o "$T/bad/s-%03d.tar" --max-size 200K -q
[ ! -e "$T/bad/manifest.json" ] || die "a failed run wrote a manifest"
assert_no_tmp "$T/bad"
n=$(ls "$T/bad" | grep -c '\.tar$' || true)
[ "$n" -ge 1 ] || die "no shard was completed before the bad name"
for f in "$T"/bad/*; do cmp "$f" "$T/good/${f##*/}" || die "${f##*/} differs from the run without the bad name"; done
echo "pack_bounded: ok"
