#!/usr/bin/env bash
# pack_one_thread.sh - `pack --jobs 1` does all its work on one thread (no
# reader thread and no handoff per sample), and writes the same bytes as
# --jobs 2: strace sees no clone at all.
. "$(dirname "$0")/lib.sh"
need strace cmp
tmpdir T
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 >/dev/null || die "mkcorpus failed"
mkdir "$T/one" "$T/two"
step "pack -j 1 under strace"
# (LeakSanitizer cannot run under ptrace: a sanitizer build skips its leak check here)
run env ASAN_OPTIONS=detect_leaks=0 strace -f -qq -e trace=clone,clone3 -o "$T/trace" "$SK_BIN" pack "$T/c" -o "$T/one/s-%03d.tar" --max-size 1M -j 1
[ "$RC" -eq 0 ] || die "pack -j 1 failed: $(cat "$ERR")"
assert_not_contains "$T/trace" "clone" "pack -j 1 started a thread"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/two/s-%03d.tar" --max-size 1M -j 2
step "same bytes as -j 2"
for f in "$T"/two/*; do cmp "$f" "$T/one/${f##*/}" || die "${f##*/} differs between -j 1 and -j 2"; done
check_shards "$T/one"
echo "one thread, same bytes"
