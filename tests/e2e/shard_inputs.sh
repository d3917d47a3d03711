#!/usr/bin/env bash
# shard_inputs.sh - `shardkit shard` takes a dataset as every reading tool
# does (a directory: its manifest.json, else the shards in it), and never
# replaces its own inputs: a run whose output names include an input (the
# same directory and pattern, reached by another path, a symbolic link, a
# manifest or a brace pattern) is refused before anything is written, and
# the dataset is left as it was.  Before: a directory was "read failed: Is
# a directory", and `shard ds -o ds/s-%03d.tar` renamed new shards over
# inputs not yet read, leaving duplicated keys.
. "$(dirname "$0")/lib.sh"
need python3 md5sum
tmpdir T
cd "$T"
M="python3 $SK_ROOT/tests/e2e/lib/members.py"
"$SK_TOOLS/mkcorpus" c --samples 60 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack c -o ds/s-%03d.tar --max-count 20 -q
$M ds/s-*.tar > want

step "a directory is its manifest's shards, or the shards in it"
expect_ok "$SK_BIN" shard ds -o od/t-%03d.tar --max-count 7 -q
$M od/t-*.tar > got
cmp -s want got || die "members differ when the input is a directory"
cp -r ds bare && rm bare/manifest.json
expect_ok "$SK_BIN" shard bare -o ob/t-%03d.tar --max-count 7 -q
$M ob/t-*.tar > got
cmp -s want got || die "members differ when the input is a directory without a manifest"
mkdir empty
expect_fail 1 "empty: no manifest.json and no .tar" "$SK_BIN" shard empty -o oe/t-%03d.tar
[ ! -e oe/t-000.tar ] || die "an empty input wrote a shard"

step "hostile: the output would replace an input"
md5sum ds/* > sums
ln -s ds/s-001.tar link.tar
for args in "ds -o ds/s-%03d.tar" "ds/manifest.json -o ./ds/s-%03d.tar" \
    "ds/s-{000..002}.tar -o ds/../ds/s-%03d.tar" "ds/s-002.tar -o ds/s-%03d.tar" \
    "link.tar -o ds/s-%03d.tar" "ds --shuffle --seed 1 -o ds/s-%03d.tar"; do
    # shellcheck disable=SC2086  # the arguments are words
    expect_fail 2 "is also one of its output names" "$SK_BIN" shard $args --max-count 7
    md5sum -c --quiet sums || die "shard $args changed the dataset"
done
assert_no_tmp ds
(cd ds && expect_fail 2 "s-000.tar: an input of this run" "$SK_BIN" shard s-000.tar -o s-%03d.tar)

step "output names past the inputs' numbers are not inputs"
# (--overwrite: ds/manifest.json lists s-000..002, which this run does not
# write; without it the run is refused, as append.sh checks)
expect_ok "$SK_BIN" shard ds/s-002.tar -o ds/s-%03d.tar --start 3 -q --overwrite
[ -f ds/s-003.tar ] || die "--start 3 did not write ds/s-003.tar"
md5sum -c --quiet <(grep -v manifest.json sums) || die "--start 3 changed an input shard"
echo "shard_inputs: ok"
