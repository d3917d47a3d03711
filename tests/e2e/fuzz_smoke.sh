#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# fuzz_smoke.sh - a short run of every libFuzzer target (fuzz/, docs/fuzzing.md)
# in `make check`: each built with ASan + UBSan and run a few seconds from
# the seeds fuzz/seeds.sh makes.  Skips when clang's libFuzzer is missing.
. "$(dirname "$0")/lib.sh"
command -v clang >/dev/null || skip "clang is not installed"
tmpdir T
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$T/probe.c"
clang -fsanitize=fuzzer "$T/probe.c" -o "$T/probe" 2>/dev/null || skip "clang has no libFuzzer runtime"
B=${SK_BUILD:-build}
cd "$SK_ROOT" || die cd
step "build the targets"
make -s -j2 fuzz-build BUILD="$B" FUZZ_BUILD="$B-fuzz" >"$T/build.log" 2>&1 || { tail -20 "$T/build.log"; die "make fuzz-build failed"; }
fuzz/seeds.sh "$B" "$T/seeds" || die "fuzz/seeds.sh failed"
for f in "$B-fuzz"/fuzz/fuzz_*; do
    t=$(basename "$f")
    step "$t"
    mkdir -p "$T/corpus/$t"
    "$f" -max_total_time=2 -max_len=65536 "$T/corpus/$t" "$T/seeds/${t#fuzz_}" >"$T/$t.log" 2>&1 ||
        { tail -30 "$T/$t.log"; die "$t found a crash"; }
    grep -q "Done [0-9]* runs" "$T/$t.log" || { tail -5 "$T/$t.log"; die "$t did not run"; }
done
echo "every fuzz target ran clean"
