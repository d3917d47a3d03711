#!/usr/bin/env bash
# index_jobs.sh - `shardkit index -j N` builds shards in parallel threads,
# yet what it prints (summary lines, per-shard warnings, errors), the
# indexes, the DALI indexes and the manifest are byte for byte those of
# -j 1, whatever N and whichever shard finishes first.  Also -j's usage
# errors.
set -eu
: "${SK_BIN:?}"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
cd "$T"
mk() { # mk PREFIX N: shard PREFIX.tar of N samples (sizes vary, so do finishing times)
    mkdir -p "src-$1"
    (cd "src-$1" && for i in $(seq 1 "$2"); do head -c $((i * 97 % 3000)) /dev/zero > "$1$i.bin"; printf '%s' "$1$i" > "$1$i.cls"; done
     ls | sort > ../list && tar -cf "../$1.tar" -T ../list && rm -f ../list)
}
mk a 300; mk b 3; mk c 50; mk d 7; mk e 120
# warnings: a name without key in b, a split key in d
(cd src-b && printf x > nokey && tar -rf ../b.tar nokey)
(cd src-d && tar -rf ../d.tar d1.bin)
for j in 1 2 5; do
    rm -rf "j$j"; mkdir "j$j"; cp ./*.tar "j$j/"
    (cd "j$j" && "$SK_BIN" index -j "$j" --dali --fast '{a,b,c,d,e}.tar' >out 2>err)
    (cd "j$j" && "$SK_BIN" index -j "$j" -o full.json '{a,b,c,d,e}.tar' >>out 2>>err)
done
grep -q "warning: b.tar: member 'nokey'" j1/err || { cat j1/err; exit 1; }
grep -q "warning: d.tar: 1 key(s) occur" j1/err || { cat j1/err; exit 1; }
for j in 2 5; do
    for f in out err manifest.json full.json a.tar.idx b.tar.idx c.tar.idx d.tar.idx e.tar.idx \
             a.tar.dali.idx e.tar.dali.idx; do
        cmp "j1/$f" "j$j/$f" || { echo "-j $j: $f differs from -j 1"; exit 1; }
    done
done
# a failing shard in the middle: the same messages in the same order, exit 1
for j in 1 4; do
    rm -rf "f$j"; mkdir "f$j"; cp ./*.tar "f$j/"; head -c 5000 a.tar > "f$j/c.tar"
    set +e
    (cd "f$j" && "$SK_BIN" index -j "$j" --fast '{a,b,c,d,e}.tar' >out 2>err); rc=$?
    set -e
    [ $rc = 1 ] || { echo "-j $j: exit $rc, expected 1"; cat "f$j/err"; exit 1; }
    [ ! -e "f$j/manifest.json" ] || { echo "manifest written despite an error"; exit 1; }
done
cmp f1/out f4/out && cmp f1/err f4/err
grep -q "c.tar: truncated at offset" f1/err || { cat f1/err; exit 1; }
for bad in 0 -1 x 1025; do
    set +e
    "$SK_BIN" index -j "$bad" a.tar >/dev/null 2>err; rc=$?
    set -e
    [ $rc = 2 ] && grep -q -- "-j needs a number" err || { echo "-j $bad: exit $rc"; cat err; exit 1; }
done
