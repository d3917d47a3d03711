#!/usr/bin/env bash
# trust_keep.sh - a failed pack or shard run destroys nothing the user had:
# the shard (and its index) already at an output name stays as it was until
# a new, complete shard is renamed over it; an output name that is not a
# regular file is refused, never replaced.
. "$(dirname "$0")/lib.sh"
tmpdir T
cd "$T" || die cd
mkdir in
for i in 1 2 3 4 5 6; do head -c 3000 /dev/urandom >in/k$i.bin; done
expect_ok "$SK_BIN" pack in -o 'good/s-%03d.tar' -q
head -c 5000 good/s-000.tar >cut.tar # ends inside the second member

step "shard: a failing run leaves an existing shard and index untouched"
mkdir o
echo "the user's shard" >o/s-000.tar
echo "the user's index" >o/s-000.tar.idx
expect_fail 1 "Truncated tar archive" "$SK_BIN" shard cut.tar -o 'o/s-%03d.tar'
assert_eq "$(cat o/s-000.tar)" "the user's shard" "o/s-000.tar after a failed shard"
assert_eq "$(cat o/s-000.tar.idx)" "the user's index" "o/s-000.tar.idx after a failed shard"
assert_no_tmp o

step "pack: a failing run leaves an earlier run's shard untouched"
cp -r good keep
cp good/s-000.tar before.tar
expect_fail 1 "" "$SK_BIN" pack --from-archive cut.tar -o 'keep/s-%03d.tar' -q
cmp before.tar keep/s-000.tar || die "pack's failed run changed keep/s-000.tar"
assert_no_tmp keep

step "a successful run still replaces the old shard"
expect_ok "$SK_BIN" shard good/s-000.tar -o 'o/s-%03d.tar'
tar tf o/s-000.tar | grep -q k1.bin || die "o/s-000.tar was not replaced"

step "an output name that is a FIFO or a directory is refused, not replaced"
mkdir -p f && mkfifo f/s-000.tar && mkdir f/s-000.tar.idx
expect_fail 2 "f/s-000.tar exists and is a FIFO, not a regular file" "$SK_BIN" shard good/s-000.tar -o 'f/s-%03d.tar'
[ -p f/s-000.tar ] || die "the FIFO was replaced"
echo ok
