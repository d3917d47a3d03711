#!/usr/bin/env bash
# pack: usage errors exit 2 with a message naming the problem, and write
# nothing: no -o, no source, a pattern without exactly one integer field
# ('x%s.tar', '%n', two fields, none), garbage sizes and counts, an unknown
# option, a file where a directory source is expected, an output inside a
# source directory (its shards would be packed into later ones).
. "$(dirname "$0")/lib.sh"
tmpdir
mkdir -p "$T/in" && echo x >"$T/in/a.txt"
cd "$T"

expect_fail 2 "-o" "$SK_BIN" pack in
expect_fail 2 "SOURCE" "$SK_BIN" pack -o "o/s-%d.tar"
for pat in 'o/x%s.tar' 'o/x%n.tar' 'o/%d-%d.tar' 'o/%06d-%x.tar' 'o/plain.tar' 'o/100%%.tar' 'o/x%.tar' 'o/x%' 'o/%ld%s'; do
    step "pattern '$pat'"
    expect_fail 2 "$pat" "$SK_BIN" pack in -o "$pat"
    [ ! -e o ] || die "pattern '$pat' created output"
done
for sz in garbage 12Q -5 '' 1 4095 1e999 99999999999999999999T; do
    step "--max-size '$sz'"
    expect_fail 2 "--max-size" "$SK_BIN" pack in -o 'o/s-%d.tar' --max-size "$sz"
done
expect_fail 2 "--max-count" "$SK_BIN" pack in -o 'o/s-%d.tar' --max-count 0
expect_fail 2 "--max-count" "$SK_BIN" pack in -o 'o/s-%d.tar' --max-count x
expect_fail 2 "--jobs" "$SK_BIN" pack in -o 'o/s-%d.tar' -j 0
expect_fail 2 "--start" "$SK_BIN" pack in -o 'o/s-%d.tar' --start -1
expect_fail 2 "--on-error" "$SK_BIN" pack in -o 'o/s-%d.tar' --on-error ignore
expect_fail 2 "" "$SK_BIN" pack in -o 'o/s-%d.tar' --no-such-option
expect_fail 2 "in/a.txt" "$SK_BIN" pack in/a.txt -o 'o/s-%d.tar'
[ ! -e o ] || die "a usage error created output"
step "an output inside a source directory"
for args in "in -o in/s-%d.tar" "in -o in/sub/new/s-%d.tar" "in -o o/s-%d.tar --manifest in/m.json" \
    "./in/../in -o in/s-%d.tar"; do
    # shellcheck disable=SC2086  # the arguments are words
    expect_fail 2 "is inside this input directory" "$SK_BIN" pack $args
    [ "$(find in -mindepth 1 | wc -l)" -eq 1 ] || die "pack $args wrote into its source: $(find in)"
done
(cd in && expect_fail 2 "is inside this input directory" "$SK_BIN" pack . -o s-%d.tar)
ln -s in lnk
expect_fail 2 "is inside this input directory" "$SK_BIN" pack lnk -o in/s-%d.tar
rm lnk; rm -rf o
step "the same sizes that are valid"
for sz in 4K 1M 1.5MiB 10000; do
    expect_ok "$SK_BIN" pack in -o "o/s-%d.tar" --max-size "$sz"
done
expect_ok "$SK_BIN" pack in -o 'o/100%%-%03x.tar' --start 255 --overwrite
[ -f 'o/100%-0ff.tar' ] || die "'100%%-%03x' with --start 255 did not give '100%-0ff.tar': $(ls o)"
echo "usage cases passed"
