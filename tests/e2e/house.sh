#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# house.sh - the shape of the code, as issue "one house" promises it:
#   1. scripts/check-layers passes on this build (layer direction from
#      includes and from the objects' undefined symbols, cmd/ on the public
#      API only, libshardkit.so exports exactly shardkit.h) - and fails when
#      a lower layer includes a higher one;
#   2. a touched header rebuilds exactly the files that include it,
#      directly or through other headers (the -MMD -MP dependencies);
#   3. no file in cmd/ is over 300 lines;
#   4. check-layers' rule 4 (one read path) covers every job file of
#      lib/pack and lib/tools, output-side files excepted by name; and no
#      job file (exempt or not, lib/reader too) nor cmd/ compares a name
#      with a scheme itself: the store says what a location is;
#   5. check-layers' rule 5: no job file (nor cmd/) chooses what to do by the
#      store's kind (SK_LOC_S3, sk_store_is_s3, ...): lib/io answers each
#      operation for each kind; the files where the kind is the feature are
#      spared by name, with a reason.
. "$(dirname "$0")/lib.sh"
need python3 nm make
B=${SK_BUILD:-build}
cd "$SK_ROOT"

step "check-layers on $B"
expect_ok scripts/check-layers "$B"

step "check-layers catches an upward include"
tmpdir W
cp -r lib scripts "$W/"
sed -i 's|#include "core/internal.h"|#include "core/internal.h"\n#include "pack/catalog.h"|' "$W/lib/format/sample.c"
mkdir -p "$W/cmd" && cp cmd/*.[ch] "$W/cmd/"
run "$W/scripts/check-layers" "$SK_ROOT/$B"
[ "$RC" -eq 1 ] || die "an upward include was not caught (exit $RC)"
assert_contains "$OUT" 'lib/format/sample.c: includes "pack/catalog.h": format may not use pack'

step "check-layers rule 4: every job file reads through the store, and none parses a location"
# a job file outside the old list (stats.c, sagemaker.c) that tests for
# s3:// itself is caught; a comment naming s3:// is not a test
tmpdir W4
cp -r lib scripts "$W4/"
mkdir -p "$W4/cmd" && cp cmd/*.[ch] "$W4/cmd/"
printf '/* reads "s3://b/k" */\nint sk_stats_is_s3_(const char *u) { return !strncmp(u, "s3://", 5); }\n' >> "$W4/lib/tools/stats.c"
printf 'static int sm_s3_(const char *u) { return sk_is_s3_url(u); }\n' >> "$W4/lib/pack/sagemaker.c"
# and no job file parses a location itself: prefix compares with a scheme,
# however spelled, in a file rule 4 spares (fetch_urls.c), in the
# reader, in cmd/; a helper named for prefixes; the core's prefix test in
# an exempt file.  Building a URL is no test.
printf 'static int ix_s3_(const char *u) { return !strncmp(u, "s3://", 5); }\n' >> "$W4/lib/pack/fetch_urls.c"
printf 'static int mix_web_(const char *u) { return !strncasecmp(u,\n "HTTPS://", 8); }\n' >> "$W4/lib/reader/mix.c"
printf 'static int root_(const char *u) { return strstr(u, "://") != 0; }\n' >> "$W4/lib/tools/merge.c"
printf 'static int web_(const char *u) { return sk_has_prefix(u, "http://"); }\n' >> "$W4/lib/pack/catalog.c"
printf 'static int row_s3_(const char *u) { return sk_is_s3_url(u); }\n' >> "$W4/lib/pack/urls_row.c"
printf 'static int arg_s3_(const char *a) { return !memcmp(a, "s3:", 3); }\n' >> "$W4/cmd/util.c"
printf 'static void url_(char *b, const char *h) { snprintf(b, 64, "http://%%s/", h); }\n' >> "$W4/lib/tools/stats.c"
run "$W4/scripts/check-layers" "$SK_ROOT/$B"
[ "$RC" -eq 1 ] || die "a job file naming s3:// was not caught (exit $RC)"
assert_contains "$OUT" 'lib/tools/stats.c:'
assert_contains "$OUT" 'names S3 itself ("s3://)'
assert_contains "$OUT" 'lib/pack/sagemaker.c:'
n=$(grep -c 'lib/tools/stats.c' "$OUT" || true)
[ "$n" -eq 1 ] || die "the comment naming s3:// was taken for a test ($n breaches in stats.c)"
for f in lib/pack/fetch_urls.c lib/reader/mix.c lib/tools/merge.c lib/pack/catalog.c lib/pack/urls_row.c cmd/util.c; do
    grep -q "^check-layers: $f:[0-9]*: parses a location itself" "$OUT" || die "$f's scheme test was not caught"
done
# a spared file says why in the script
grep -q '"lib/pack/fetch_urls.c": "pack --from-urls' scripts/check-layers || die "fetch_urls.c's exemption has no reason"

step "check-layers rule 5: no job file chooses by the store's kind"
# a branch on the kind in a tool, the reader and a pack file; a comment
# naming the kind is no branch; a spared file (sagemaker.c) stays spared
tmpdir W5
cp -r lib scripts "$W5/"
mkdir -p "$W5/cmd" && cp cmd/*.[ch] "$W5/cmd/"
printf '/* SK_LOC_S3 in a comment */\nstatic int up_(const char *u) { return sk_store_is_s3(u); }\n' >> "$W5/lib/tools/upload_plan.c"
printf 'static int mk_(sk_store_where *w) { return w->kind == SK_LOC_HTTP; }\n' >> "$W5/lib/reader/mix.c"
printf 'static int pk_(const char *u) { sk_loc_kind k; return sk_store_kind(u, &k, 0); }\n' >> "$W5/lib/pack/catalog.c"
run "$W5/scripts/check-layers" "$SK_ROOT/$B"
[ "$RC" -eq 1 ] || die "a job file choosing by the store's kind was not caught (exit $RC)"
for f in lib/tools/upload_plan.c lib/reader/mix.c lib/pack/catalog.c; do
    grep -q "^check-layers: $f:[0-9]*: chooses by the store's kind" "$OUT" || die "$f's kind test was not caught"
done
n=$(grep -c "lib/tools/upload_plan.c:.*chooses by the store's kind" "$OUT" || true)
[ "$n" -eq 1 ] || die "the comment naming SK_LOC_S3 was taken for a branch ($n breaches in upload_plan.c)"
! grep -q "lib/pack/sagemaker.c:.*chooses by" "$OUT" || die "sagemaker.c's exemption did not hold"
grep -q '"sagemaker.c": "a SageMaker ManifestFile' scripts/check-layers || die "sagemaker.c's exemption has no reason"
# an exemption nothing needs any more is a breach of its own
sed -i 's/w.kind != SK_LOC_S3/!w.copyable/' "$W5/lib/pack/sagemaker.c"
run "$W5/scripts/check-layers" "$SK_ROOT/$B"
assert_contains "$OUT" "KIND_SPARED spares sagemaker.c, which names no kind: drop the exemption"

step "a touched header rebuilds exactly its dependants"
# the sources that include h, directly or through headers that include it
dependants() {
    python3 - "$1" <<'PY'
import os, re, sys
inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
files = [os.path.join(d, f) for top in ("lib", "cmd") for d, _, fs in os.walk(top) for f in fs
         if f.endswith((".c", ".h"))]
def resolve(src, name):
    for cand in (os.path.join("lib", name), os.path.join(os.path.dirname(src), name)):
        if os.path.exists(cand):
            return os.path.normpath(cand)
    return None
deps = {f: {resolve(f, n) for n in inc.findall(open(f).read())} - {None} for f in files}
target, seen, changed = os.path.normpath(sys.argv[1]), set(), True
hit = {target}
while changed:
    changed = False
    for f, ds in deps.items():
        if f not in hit and ds & hit:
            hit.add(f); changed = True
print("\n".join(sorted(f for f in hit if f.endswith(".c"))))
PY
}
rebuilds() {
    make -s -n "$@" BUILD="$B" "$B/shardkit" "$B/libshardkit.so" 2>/dev/null |
        grep -o -- '-c [^ ]*\.c' | sed 's/^-c //' | sort -u
}
stale=$(rebuilds) # already out of date in this build: not the header's doing
for h in cmd/cmd.h lib/s3/s3_internal.h lib/format/tar.h lib/io/sink.h lib/pack/pack_int.h; do
    want=$(dependants "$h")
    got=$(comm -23 <(rebuilds -W "$h") <(printf '%s\n' "$stale" | sed '/^$/d'))
    want=$(comm -23 <(printf '%s\n' "$want") <(printf '%s\n' "$stale" | sed '/^$/d'))
    [ "$got" = "$want" ] || die "touching $h would rebuild:
$got
but the files that include it are:
$want"
done

step "cmd/ files stay thin: they parse, call the library, print"
for f in cmd/*.c; do
    n=$(wc -l <"$f")
    [ "$n" -le 300 ] || die "$f has $n lines: its logic belongs in lib/"
done
echo "house in order"
