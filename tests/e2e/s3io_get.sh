#!/usr/bin/env bash
# s3io_get: `shardkit get` from a dataset in S3 (moto, auth on) returns
# exactly what it returns from the same dataset on disk: by key and by
# ordinal, one member, a directory of members, a one-sample tar, plain and
# .tar.zst shards, through a manifest, a prefix, or one shard.  An index
# object that belongs to another shard is refused; a missing key fails.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
s3_dataset auth dset 120 --max-count 50
G=("$SK_BIN" get --endpoint-url "$A")

step "by key and by ordinal, plain and zstd, same bytes as from disk"
for d in plain zst; do
    for q in n00000/00000000 n00000/00000077 '#0' '#63' '#119'; do
        expect_ok "${G[@]}" "s3://dset/$d/manifest.json" "$q" --tar -o "$T/s3.tar"
        expect_ok "$SK_BIN" get "$T/$d/manifest.json" "$q" --tar -o "$T/local.tar"
        cmp "$T/s3.tar" "$T/local.tar" || die "$d $q: the sample from S3 differs"
    done
done
expect_ok "${G[@]}" s3://dset/plain/ n00000/00000101 --ext jpg -o "$T/s3.jpg"
cmp "$T/s3.jpg" "$T/c/n00000/00000101.jpg" || die "--ext jpg from a prefix differs from the source file"
expect_ok "${G[@]}" s3://dset/zst/t-001.tar.zst n00000/00000060 -o "$T/dir"
for e in jpg cls json; do
    cmp "$T/dir/00000060.$e" "$T/c/n00000/00000060.$e" || die "one shard, -o DIR: .$e differs"
done

step "errors: a missing key, an index from another shard, no such dataset"
expect_fail 1 "no sample with key 'nosuch'" "${G[@]}" s3://dset/plain/manifest.json nosuch
aws s3 cp --quiet "$T/plain/t-000.tar.idx" s3://dset/plain/t-001.tar.idx
expect_fail 1 "does not belong to this shard" "${G[@]}" s3://dset/plain/t-001.tar '#0' --tar -o "$T/x.tar"
[ ! -e "$T/x.tar" ] || die "a failed get left its output behind"
expect_fail 1 "s3://dset/nothing/: no manifest.json" "${G[@]}" s3://dset/nothing/ '#0'
echo "s3io_get: ok"
