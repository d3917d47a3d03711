#!/usr/bin/env bash
# reader_example.sh - the C program in docs/reader.md compiles against the
# built library and does what it says: its output (10 samples, then the
# rest after a restore) equals one uninterrupted run of the same options
# (shardkit cat --keys).
. "$(dirname "$0")/lib.sh"
need cc pkg-config
tmpdir
B=$(dirname "$SK_BIN")
# the whole program: the ```c block with a main (the others are fragments)
awk '/^```c$/ {on = 1; b = ""; next} /^```$/ && on {on = 0; if (b ~ /int main/) printf "%s", b; next}
     on {b = b $0 "\n"}' "$SK_ROOT/docs/reader.md" >"$T/ex.c"
[ -s "$T/ex.c" ] || die "no C example in docs/reader.md"
san=
nm "$B/libshardkit.a" 2>/dev/null | grep -q __asan_report && san="-fsanitize=address,undefined"
cc -std=c11 -Wall -Werror $san -I"$SK_ROOT/lib" -o "$T/ex" "$T/ex.c" "$B/libshardkit.a" \
    $(pkg-config --libs libarchive libcurl openssl libjpeg libzstd expat jansson) -lpthread -lm ||
    die "the example in docs/reader.md does not compile"
"$SK_TOOLS/mkcorpus" "$T/c" --samples 200 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 20
expect_ok "$T/ex" "$T/s"
mv "$OUT" "$T/ex.out"
expect_ok "$SK_BIN" cat --keys --worker 0 --num-workers 2 --rank 0 --world-size 1 \
    --shuffle-shards --shuffle 100 --seed 42 "$T/s"
cmp -s "$T/ex.out" "$OUT" || die "the example's output differs from an uninterrupted run"
assert_eq "$(wc -l <"$T/ex.out")" 100 "samples of worker 0 of 2"
