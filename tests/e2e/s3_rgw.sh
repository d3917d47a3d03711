#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3_rgw: the S3 paths of every tool against a RADOS gateway (Ceph's S3
# server, one node, tests/helpers/rgw.sh) rather than moto: a server that
# checks every signature its own way, answers listings and multipart
# uploads as production clusters do, and would show a request moto lets
# through.  One pass: pack straight into the bucket with multipart shards,
# upload a dataset, get by key and ordinal, cat of a manifest, verify,
# shard bucket to bucket; each result compared with the same job on disk.
# `make check-rgw` runs every S3 test against the gateway; this is the part
# `make check` keeps.
. "$(dirname "$0")/lib.sh"
SK_S3_SERVER=rgw
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
"$SK_TOOLS/mkcorpus" "$T/c" --samples 300 >/dev/null || die "mkcorpus failed"
s3_serve rgw-data
E=(--endpoint-url "$A")

step "pack into the bucket (multipart shards) equals pack to disk"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/local/t-%03d.tar" --max-count 120
expect_ok "$SK_BIN" pack "${E[@]}" "$T/c" -o "s3://rgw-data/packed/t-%03d.tar" --max-count 120 --part-size 5MiB
for f in $(cd "$T/local" && ls); do
    aws s3 cp --quiet "s3://rgw-data/packed/$f" "$T/back-$f" || die "download of $f failed"
    cmp "$T/local/$f" "$T/back-$f" || die "$f from the gateway differs from the local pack"
done

step "upload a dataset; get by key and by ordinal as from disk"
expect_ok "$SK_BIN" upload "${E[@]}" "$T/local" s3://rgw-data/up/
for q in n00000/00000007 '#0' '#299'; do
    expect_ok "$SK_BIN" get "${E[@]}" s3://rgw-data/up/manifest.json "$q" --tar -o "$T/s3.tar"
    expect_ok "$SK_BIN" get "$T/local/manifest.json" "$q" --tar -o "$T/disk.tar"
    cmp "$T/s3.tar" "$T/disk.tar" || die "get $q from the gateway differs"
done

step "cat and verify of the dataset in the bucket"
"$SK_BIN" cat "${E[@]}" s3://rgw-data/packed/manifest.json >"$T/s3cat.tar" || die "cat from the gateway failed"
"$SK_BIN" cat "$T/local/manifest.json" >"$T/diskcat.tar" || die "cat from disk failed"
cmp "$T/s3cat.tar" "$T/diskcat.tar" || die "cat from the gateway differs"
expect_ok "$SK_BIN" verify "${E[@]}" s3://rgw-data/packed/manifest.json

step "shard from bucket to bucket equals shard on disk"
expect_ok "$SK_BIN" shard "${E[@]}" s3://rgw-data/packed/manifest.json -o "s3://rgw-data/re/r-%03d.tar" --max-count 70
expect_ok "$SK_BIN" shard "$T/local/manifest.json" -o "$T/re/r-%03d.tar" --max-count 70
for f in $(cd "$T/re" && ls); do
    aws s3 cp --quiet "s3://rgw-data/re/$f" "$T/re-$f" || die "download of $f failed"
    cmp "$T/re/$f" "$T/re-$f" || die "resharded $f differs"
done
echo "s3_rgw: ok"
