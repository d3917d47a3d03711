#!/usr/bin/env bash
# index_dialects.sh - `shardkit index` on tars written by GNU tar (ustar,
# gnu, posix), bsdtar and Python's tarfile in WebDataset's pax style (with
# 200-byte and non-ASCII names); every member fetched with `shardkit get`
# equals its source file, and the DALI index matches Python tarfile's
# offset_data member by member.
set -eu
: "${SK_BIN:?}" "${SK_ROOT:?}"
command -v bsdtar >/dev/null || { echo "bsdtar not installed"; exit 77; }
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
CHECK="python3 $SK_ROOT/tests/e2e/lib/index_check.py"
$CHECK corpus "$T/src"
cd "$T/src"
mkdir -p "$T/shards"
tar --format=ustar -cf "$T/shards/gnu-ustar.tar" --no-recursion -T ../list.txt
tar --format=gnu -cf "$T/shards/gnu-gnu.tar" --no-recursion -T ../list.txt
tar --format=posix -cf "$T/shards/gnu-posix.tar" --no-recursion -T ../list.txt
bsdtar -cf "$T/shards/bsdtar.tar" -n -T ../list.txt
$CHECK paxtar "$T/src" "$T/shards/pax-wds.tar"
# a GNU tar with directory entries and a symlink among the members
mkdir -p extra && ln -sf ../s/k000.jpg extra/link.jpg
tar --format=gnu --sort=name -cf "$T/shards/gnu-dirs.tar" s l u extra
cd "$T"

for t in shards/*.tar; do
    "$SK_BIN" index --dali -o "$T/m-$(basename "$t" .tar).json" "$t" >/dev/null
    $CHECK dali "$t" "$t.dali.idx" >/dev/null || { echo "DALI index wrong for $t"; exit 1; }
    $CHECK members "$t" > exp.tsv
    n=0
    while IFS=$'\t' read -r key ext off size name; do
        "$SK_BIN" get "$t" "$key" --ext "$ext" -o got.bin
        if [ -e "src/$name" ]; then cmp -s got.bin "src/$name" || { echo "$t: $name differs"; exit 1; }
        else cmp -s got.bin "src/${name#./}" || { echo "$t: $name differs"; exit 1; }; fi
        n=$((n + 1))
    done < exp.tsv
    [ "$n" -ge 20 ] || { echo "$t: only $n members checked"; exit 1; }
    # the fast (header-only) index serves the same bytes
    "$SK_BIN" index --fast --no-manifest -q "$t"
    "$SK_BIN" get "$t" s/k005 --ext jpg | cmp - src/s/k005.jpg
    echo "ok $t ($n members)"
done

# ordinals, directory output and --tar
"$SK_BIN" index -q shards/pax-wds.tar -o pax.json
"$SK_BIN" get pax.json '#2' -o outdir
cmp outdir/k000.jpg src/s/k000.jpg && cmp outdir/k000.cls src/s/k000.cls
"$SK_BIN" get pax.json s/k006 --tar > one.tar
[ "$(tar tf one.tar | tr '\n' ' ')" = "s/k006.cls s/k006.jpg " ] || { tar tf one.tar; exit 1; }
python3 -c "import tarfile,sys; t=tarfile.open('one.tar'); assert t.extractfile('s/k006.jpg').read()==open('src/s/k006.jpg','rb').read()"
# WebDataset lowercases extensions; metadata members are not samples
"$SK_BIN" get pax.json s/UP --ext jpg | cmp - src/s/UP.JPG
if "$SK_BIN" get pax.json __meta__ 2>err.txt; then echo "__meta__ was indexed"; exit 1; fi
grep -q "no sample with key '__meta__'" err.txt
# a missing key and a bad ordinal name the problem, exit 1
set +e
"$SK_BIN" get pax.json nope 2>err.txt; rc=$?
"$SK_BIN" get pax.json '#99999' 2>err2.txt; rc2=$?
"$SK_BIN" get pax.json s/k001 2>err3.txt; rc3=$?
set -e
# (a failed [ ] && grep in a list does not stop a set -e script: say it)
{ [ $rc = 1 ] && grep -q "no sample with key 'nope'" err.txt; } || { echo "get nope: exit $rc"; cat err.txt; exit 1; }
{ [ $rc2 = 1 ] && grep -q "no sample #99999" err2.txt; } || { echo "get #99999: exit $rc2"; cat err2.txt; exit 1; }
{ [ $rc3 = 2 ] && grep -q "choose one with --ext" err3.txt; } || { echo "get s/k001: exit $rc3"; cat err3.txt; exit 1; }
echo "all dialects ok"
