#!/usr/bin/env bash
# resolver.sh - every tool names a dataset the same way (io/dataset.c, the
# one resolver): `get` now takes a brace pattern of shards as cat, verify
# and shard do (it used to stat the pattern as a file: "No such file");
# a brace pattern asking for too many names is refused by get as by the
# others; verify, cat and get agree on a directory's manifest.
. "$(dirname "$0")/lib.sh"
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 40 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-count 10
key=$("$SK_BIN" cat -k ds | sed -n 25p)
[ -n "$key" ] || die "no key 25"

step "get through a brace pattern of shards"
expect_ok "$SK_BIN" get -o out 'ds/s-{00..03}.tar' "$key"
[ -n "$(ls out)" ] || die "get wrote nothing"
expect_ok "$SK_BIN" get -o out2 'ds/s-{00..03}.tar' '#24'
cmp <(cd out && cat ./*) <(cd out2 && cat ./*) || die "key and ordinal differ"

step "a brace pattern of billions of names: refused by get as by cat"
big='ds/s-{0..9999}{0..9999}.tar'
run "$SK_BIN" get "$big" "$key"
[ "$RC" -ne 0 ] || die "get accepted it"
grep -qF "brace pattern expands to over" "$ERR" || die "get: wrong reason: $(cat "$ERR")"
run "$SK_BIN" cat -k "$big"
[ "$RC" -ne 0 ] || die "cat accepted it"
grep -qF "brace pattern expands to over" "$ERR" || die "cat: wrong reason: $(cat "$ERR")"

step "one dataset, three tools: directory, manifest, brace pattern"
a=$("$SK_BIN" cat -k ds | wc -l)
b=$("$SK_BIN" cat -k ds/manifest.json | wc -l)
c=$("$SK_BIN" cat -k 'ds/s-{00..03}.tar' | wc -l)
[ "$a" = 40 ] && [ "$b" = 40 ] && [ "$c" = 40 ] || die "cat counts $a $b $c"
expect_ok "$SK_BIN" verify ds/manifest.json
echo PASS
