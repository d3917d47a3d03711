#!/usr/bin/env bash
# cat_errors.sh - a truncated shard and a corrupt header are errors naming
# the shard and the offset (exit 1, nothing after them); with
# --skip-errors a warning names them and the other shards are read whole.
. "$(dirname "$0")/lib.sh"
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 90 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 30
mkdir "$T/d"
cp "$T"/s/train-00000[012].tar "$T/d/"
truncate -s 30000 "$T/d/train-000001.tar"

step "truncated shard: named error"
expect_fail 1 "$T/d/train-000001.tar: truncated at offset 30000" "$SK_BIN" cat --keys "$T/d"
n=$(wc -l <"$OUT")
[ "$n" -ge 30 ] && [ "$n" -lt 60 ] || die "expected the first shard and part of the second, got $n keys"

step "--skip-errors: a warning, then the next shard"
expect_ok "$SK_BIN" cat --keys --skip-errors "$T/d"
assert_contains "$ERR" "train-000001.tar: truncated at offset 30000"
assert_contains "$ERR" "skipping the rest of $T/d/train-000001.tar"
assert_eq "$(grep -c . "$OUT")" "$((n + 30))" "keys with --skip-errors"
tail -1 "$OUT" | grep -q 00000089 || die "the last shard was not read to its end"

step "corrupt header: named error with its offset"
cp "$T/s/train-000002.tar" "$T/bad.tar"
off=$(( $(tar -tvf "$T/bad.tar" --block-number | sed -n '7s/^block \([0-9]*\):.*/\1/p') * 512 ))
printf 'X' | dd of="$T/bad.tar" bs=1 seek=$((off + 3)) conv=notrunc status=none
expect_fail 1 "$T/bad.tar: corrupt tar header at offset $off" "$SK_BIN" cat --keys "$T/bad.tar"
# member 7 opens the third sample; the second ends only when the next
# header is read, so one complete sample comes out before the error
assert_eq "$(wc -l <"$OUT")" 1 "samples before the bad header"
