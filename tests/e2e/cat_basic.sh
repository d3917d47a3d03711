#!/usr/bin/env bash
# cat_basic.sh - `shardkit cat`: the tar stream it writes holds every
# sample byte for byte (GNU tar and bsdtar read it), one shard's cat is
# the shard itself, --keys with a 2 ranks x 3 workers split gives every key
# exactly once, shuffles repeat for a seed and differ for another, .tar.zst
# reads like .tar, and usage errors exit 2.
. "$(dirname "$0")/lib.sh"
need tar bsdtar zstd
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 40

step "the whole set as one tar: same files as the corpus"
"$SK_BIN" cat "$T/s" >"$T/all.tar" || die "cat failed"
mkdir "$T/x" "$T/y"
tar -xf "$T/all.tar" -C "$T/x" || die "GNU tar cannot read cat's output"
diff -r "$T/c" "$T/x" >/dev/null || die "extracted tree differs from the corpus"
bsdtar -tf "$T/all.tar" >"$T/bsd.list" || die "bsdtar cannot read cat's output"
assert_eq "$(wc -l <"$T/bsd.list")" 900 "members listed by bsdtar"

step "one shard: byte-identical to the shard"
"$SK_BIN" cat "$T/s/train-000003.tar" | cmp -s - "$T/s/train-000003.tar" || die "cat of one shard differs from it"

step "brace pattern and manifest give the same keys in order"
"$SK_BIN" cat --keys "$T/s/train-{000000..000007}.tar" >"$T/k1"
"$SK_BIN" cat --keys "$T/s/manifest.json" >"$T/k2"
cmp -s "$T/k1" "$T/k2" || die "brace pattern and manifest disagree"
assert_eq "$(wc -l <"$T/k1")" 300 "keys"
(cd "$T/c" && find . -name '*.cls' | sed 's|^\./||; s|\.cls$||' | LC_ALL=C sort) >"$T/want"
cmp -s "$T/k1" "$T/want" || die "keys are not the corpus keys in order"

step "2 ranks x 3 workers, shuffled: every key exactly once"
: >"$T/split"
for rank in 0 1; do
    for w in 0 1 2; do
        "$SK_BIN" cat --keys --rank $rank --world-size 2 --worker $w --num-workers 3 \
            --shuffle-shards --shuffle 50 --seed 3 "$T/s" >>"$T/split" || die "cat rank $rank worker $w failed"
    done
done
assert_eq "$(wc -l <"$T/split")" 300 "keys across the split"
assert_eq "$(LC_ALL=C sort -u "$T/split" | wc -l)" 300 "distinct keys across the split"

step "environment variables choose the slot"
RANK=1 WORLD_SIZE=2 WORKER=2 NUM_WORKERS=3 "$SK_BIN" cat --keys "$T/s" >"$T/env"
"$SK_BIN" cat --keys --rank 1 --world-size 2 --worker 2 --num-workers 3 "$T/s" >"$T/flags"
cmp -s "$T/env" "$T/flags" || die "RANK/WORLD_SIZE/WORKER/NUM_WORKERS differ from the flags"

step "same seed same order, another seed another order"
"$SK_BIN" cat --keys --shuffle-shards --shuffle 64 --seed 9 "$T/s" >"$T/a"
"$SK_BIN" cat --keys --shuffle-shards --shuffle 64 --seed 9 "$T/s" >"$T/b"
"$SK_BIN" cat --keys --shuffle-shards --shuffle 64 --seed 10 "$T/s" >"$T/c2"
"$SK_BIN" cat --keys --shuffle-shards --shuffle 64 --seed 9 --epoch 1 "$T/s" >"$T/d"
cmp -s "$T/a" "$T/b" || die "same seed gave two orders"
! cmp -s "$T/a" "$T/c2" || die "another seed gave the same order"
! cmp -s "$T/a" "$T/d" || die "another epoch gave the same order"
assert_eq "$(LC_ALL=C sort "$T/a" | cmp -s - "$T/want" && echo same)" same "shuffled keys as a set"

step ".tar.zst reads like .tar; --limit and --epochs"
zstd -q "$T/s/train-000002.tar" -o "$T/z.tar.zst"
"$SK_BIN" cat "$T/z.tar.zst" | cmp -s - "$T/s/train-000002.tar" || die ".tar.zst cat differs"
assert_eq "$("$SK_BIN" cat --keys -n 7 "$T/s" | wc -l)" 7 "--limit"
assert_eq "$("$SK_BIN" cat --keys --epochs 2 "$T/s/train-000000.tar" | wc -l)" 80 "--epochs 2"

step "usage errors"
expect_fail 2 "no URL given" "$SK_BIN" cat --keys
expect_fail 2 "bad value 'x' for --shuffle" "$SK_BIN" cat --keys --shuffle x "$T/s"
expect_fail 2 "bad value '0' for --shuffle-window" "$SK_BIN" cat --global-order --shuffle-window=0 "$T/s"
expect_fail 2 "bad value 'x' for -n" "$SK_BIN" cat -nx "$T/s"
expect_fail 2 "rank 2 is not below world_size 2" "$SK_BIN" cat --keys --rank 2 --world-size 2 "$T/s"
expect_fail 1 "cannot open" "$SK_BIN" cat --keys "$T/nope.tar"
expect_ok "$SK_BIN" cat --help
assert_contains "$OUT" "--num-workers"
