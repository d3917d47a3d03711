#!/usr/bin/env bash
# trust_outputs.sh - what a run writes beside its shards (issue "trust,
# third pass"):
#   - no side output replaces an input: `index --wids=PATH`, `index -o
#     PATH`, `shard --manifest PATH` and `pack --sagemaker-manifest PATH`
#     naming an input shard, a packed file or archive (by any spelling or
#     link) are refused before anything is written (exit 2), the input kept;
#   - one run at a time per set of shard names: a second pack with the same
#     -o pattern and another --manifest fails at once, naming the first;
#   - a manifest in another directory names its shards relative to itself
#     (docs/format.md): verify, cat and get of it work from anywhere.
. "$(dirname "$0")/lib.sh"
need mkfifo
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 12 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%03d.tar --max-count 6 -q
cp -r ds keep

kept() { cmp -s "$1" "keep/${1#*/}" || die "$2 replaced the input $1"; }

step "index: --wids and -o naming an input shard"
run "$SK_BIN" index ds/s-000.tar ds/s-001.tar --wids=ds/s-001.tar -q
[ "$RC" = 2 ] || die "index --wids=INPUT exited $RC"
assert_contains "$ERR" "ds/s-001.tar (--wids) is also an input of this run"
kept ds/s-001.tar "index --wids"
ln -s s-000.tar ds/alias.tar
run "$SK_BIN" index ds/s-000.tar -o ./ds/alias.tar -q
[ "$RC" = 2 ] || die "index -o LINK-TO-INPUT exited $RC"
assert_contains "$ERR" "(the manifest) is the input ds/s-000.tar"
kept ds/s-000.tar "index -o"
rm ds/alias.tar

step "shard: --manifest naming an input"
run "$SK_BIN" shard ds/s-000.tar ds/s-001.tar -o o1/x-%03d.tar --manifest ds/s-001.tar -q
[ "$RC" = 2 ] || die "shard --manifest INPUT exited $RC"
assert_contains "$ERR" "ds/s-001.tar (the manifest) is also an input"
kept ds/s-001.tar "shard --manifest"
[ ! -e o1/x-000.tar ] || die "shard wrote shards before refusing"

step "pack: --sagemaker-manifest naming a packed file or archive"
f=$(cd c && find . -type f | sort | head -1); f=c/${f#./}
cp "$f" keep.file
run "$SK_BIN" pack c -o o2/s-%03d.tar --sagemaker-manifest "$f" --sagemaker-prefix s3://b/p/ -q
[ "$RC" = 2 ] || die "pack --sagemaker-manifest FILE-IN-SOURCE exited $RC"
assert_contains "$ERR" "is inside the input directory c"
cmp -s "$f" keep.file || die "pack replaced a file it packs"
[ ! -e o2/s-000.tar ] || die "pack wrote shards before refusing"
run "$SK_BIN" pack --from-archive keep/s-000.tar -o o3/s-%03d.tar \
    --sagemaker-manifest keep/s-000.tar --sagemaker-prefix s3://b/p/ -q
[ "$RC" = 2 ] || die "pack --sagemaker-manifest ARCHIVE exited $RC"
assert_contains "$ERR" "keep/s-000.tar (--sagemaker-manifest) is also an input"
cmp -s keep/s-000.tar ds/s-000.tar || die "pack replaced the archive it packs"

step "one run at a time per shard names, whatever the manifest"
mkdir -p out
mkfifo list
(cd c && find . -type f | sort) >names
"$SK_BIN" pack --files-from list --root c -o out/s-%03d.tar --manifest out/a.json -q 2>first.err &
first=$!
exec 7>list # the first run holds its locks and waits for its file list
sleep 0.5
run "$SK_BIN" pack c -o out/s-%03d.tar --manifest out/b.json -q
[ "$RC" = 2 ] || die "a second pack onto the same shard names exited $RC, not 2"
assert_contains "$ERR" "out/s-%03d.tar is being written by another run (pid $first: shardkit pack)"
run "$SK_BIN" shard ds/s-000.tar -o out/s-%03d.tar --manifest out/c.json -q
[ "$RC" = 2 ] || die "shard onto the same shard names exited $RC, not 2"
cat names >&7
exec 7>&-
wait "$first" || die "the first pack failed: $(cat first.err)"
[ ! -e out/b.json ] && [ ! -e out/c.json ] || die "a refused run wrote its manifest"
ls -a out | grep -q '\.lock' && die "a lock file was left: $(ls -a out)"

step "a manifest in another directory: URLs relative to it"
expect_ok "$SK_BIN" pack c -o o4/s-%03d.tar --manifest m4/sub/man.json --max-count 6 -q
assert_contains m4/sub/man.json '"url": "../../o4/s-000.tar"'
expect_ok "$SK_BIN" shard ds/s-000.tar -o o5/s-%03d.tar --manifest m5/man.json -q
assert_contains m5/man.json '"url": "../o5/s-000.tar"'
mkdir -p m6 && expect_ok "$SK_BIN" index ds/s-000.tar ds/s-001.tar -o m6/man.json -q
assert_contains m6/man.json '"url": "../ds/s-000.tar"'
key=$(tar tf ds/s-000.tar | head -1); key=${key%%.*}
for m in m4/sub/man.json m5/man.json m6/man.json; do
    expect_ok "$SK_BIN" verify "$m"
    "$SK_BIN" cat "$m" | tar tf - >/dev/null || die "cat $m failed"
    (cd / && "$SK_BIN" get "$T/$m" "$key" -o "$T/got") || die "get through $m failed"
done
echo "no side output replaces an input; one run per shard names; URLs relative to the manifest"
