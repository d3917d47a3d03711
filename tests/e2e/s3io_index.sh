#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# s3io_index: `shardkit index` of shards where they live in S3 (moto, auth
# off for its listings): a prefix, a brace pattern, one shard; plain, .tar.zst and .tar.gz.
# The index objects it puts beside the shards, and the manifest under the
# prefix, are byte-identical to what a local index of the same shards
# writes (the aws cli downloads them to compare).  --resume keeps what
# matches and redoes a shard whose object changed.  A hostile listing
# (keys with '../', in "subdirectories", dot names) indexes nothing outside
# the prefix's own shards.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp
"$SK_TOOLS/mkcorpus" "$T/c" --samples 150 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/p/t-%03d.tar" --max-count 50
expect_ok "$SK_BIN" pack "$T/c" -o "$T/z/t-%03d.tar.zst" --max-count 50 --compress zstd
mkdir -p "$T/g"
(cd "$T/c" && tar --sort=name -czf "$T/g/a.tar.gz" n00000/0000000*)
(cd "$T/c" && tar --sort=name -czf "$T/g/b.tar.gz" n00000/0000001*)
# the local reference: the same shards, indexed on disk
for d in p z g; do
    rm -f "$T/$d"/*.idx "$T/$d"/manifest.json
    mkdir -p "$T/loc/$d"
    cp "$T/$d"/* "$T/loc/$d/"
done
s3_serve dset other   # auth off: moto mis-signs listings with a percent-encoded prefix (DESIGN.md)
for d in p z g; do
    aws s3 cp --quiet --recursive "$T/$d" "s3://dset/$d/" || die "upload of $d failed"
done
I=("$SK_BIN" index --endpoint-url "$A")

step "a prefix: index objects and manifest identical to a local index"
for d in p z g; do
    expect_ok "${I[@]}" -j 3 "s3://dset/$d/"
    assert_contains "$OUT" "s3://dset/$d/"
    expect_ok "$SK_BIN" index -q "$T/loc/$d"/*.tar*
    rm -rf "$T/down"
    aws s3 cp --quiet --recursive "s3://dset/$d/" "$T/down/" || die "download failed"
    for f in "$T/loc/$d"/*.idx "$T/loc/$d/manifest.json"; do
        cmp "$f" "$T/down/$(basename "$f")" || die "$d: $(basename "$f") from S3 differs from the local one"
    done
done
[ "$(ls "$T/down" | grep -c '\.idx$')" = 2 ] || die "g: not one index per shard"

step "--fast: big samples by ranged GETs (the local --fast index); small ones streamed"
mkdir -p "$T/big/v" "$T/bigloc"
for i in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19; do
    head -c 5000000 /dev/urandom >"$T/big/v/s$i.mp4"; echo "{\"i\": $i}" >"$T/big/v/s$i.json"
done
(cd "$T/big" && tar --format=gnu --sort=name -cf "$T/bigloc/big.tar" v)
aws s3 cp --quiet "$T/bigloc/big.tar" s3://dset/big/big.tar
expect_ok "${I[@]}" --fast --no-manifest s3://dset/big/big.tar
assert_contains "$OUT" "(headers only)"
expect_ok "$SK_BIN" index -q --fast --no-manifest "$T/bigloc/big.tar"
aws s3 cp --quiet s3://dset/big/big.tar.idx "$T/f.idx"
cmp "$T/f.idx" "$T/bigloc/big.tar.idx" || die "--fast index of big.tar from S3 differs from the local one"
expect_ok "${I[@]}" --fast --no-manifest "s3://dset/p/t-{000..002}.tar"
assert_not_contains "$OUT" "(headers only)"
for i in 000 001 002; do
    aws s3 cp --quiet "s3://dset/p/t-$i.tar.idx" "$T/f.idx"
    cmp "$T/f.idx" "$T/loc/p/t-$i.tar.idx" || die "--fast of small samples from S3: not the streamed index"
done

step "DALI index and a brace pattern with -o in S3"
expect_ok "${I[@]}" --dali "s3://dset/p/t-{000..001}.tar" -o s3://dset/p/two.json
expect_ok "$SK_BIN" index -q --dali "$T/loc/p/t-000.tar" "$T/loc/p/t-001.tar" -o "$T/loc/p/two.json"
aws s3 cp --quiet s3://dset/p/t-001.tar.dali.idx "$T/d.idx"
cmp "$T/d.idx" "$T/loc/p/t-001.tar.dali.idx" || die "the DALI index from S3 differs"
aws s3 cp --quiet s3://dset/p/two.json "$T/two.json"
cmp "$T/two.json" "$T/loc/p/two.json" || die "the manifest of two shards differs"

step "--resume keeps what matches and redoes a replaced shard"
proxy_start "$A" "$T/proxy.log"
expect_ok "$SK_BIN" index --endpoint-url "$PROXY_URL" --resume s3://dset/p/
[ "$(grep -c '(kept' "$OUT")" = 3 ] || die "--resume did not keep all three shards: $(cat "$OUT")"
# the index objects carry the ETag they were built from: no shard is read
grep -E '^GET /dset/p/t-[0-9]+\.tar( |\?|$)' "$T/proxy.log" && die "--resume read a shard's data"
grep -qE '^PUT /dset/p/t-[0-9]+\.tar\.idx' "$T/proxy.log" && die "--resume uploaded an index again"
aws s3 cp --quiet "$T/p/t-000.tar" s3://dset/p/t-002.tar   # another shard's bytes
expect_ok "${I[@]}" --resume s3://dset/p/
[ "$(grep -c '(kept' "$OUT")" = 2 ] || die "--resume kept a changed shard: $(cat "$OUT")"
aws s3 cp --quiet s3://dset/p/t-002.tar.idx "$T/r.idx"
cmp "$T/r.idx" "$T/loc/p/t-000.tar.idx" || die "the redone index does not describe the new object"
expect_fail 2 "--resume applies to shards in S3 only" "$SK_BIN" index --resume "$T/loc/p/t-000.tar"

step "hostile listing: keys outside the prefix's own shards are not indexed"
python3 - "$A" "$T/p/t-000.tar" <<'EOF'
import sys, boto3
s3 = boto3.client("s3", endpoint_url=sys.argv[1])
body = open(sys.argv[2], "rb").read()
for k in ["h/a.tar", "h/../evil.tar", "h/sub/../../up.tar", "h/sub/x.tar", "h/.hidden.tar",
          "h/notashard.txt", "hx/b.tar"]:
    s3.put_object(Bucket="dset", Key=k, Body=body)
EOF
expect_ok "${I[@]}" s3://dset/h/
[ "$(grep -c 'samples' "$OUT")" = 1 ] || die "indexed more than h/a.tar: $(cat "$OUT")"
aws s3api list-objects-v2 --bucket dset --query 'Contents[].Key' --output text | tr '\t' '\n' >"$T/keys"
grep -qx 'h/a.tar.idx' "$T/keys" || die "no index for h/a.tar"
grep -E '^(h/\.\.|h/sub/.*idx|hx/|h/\.hidden.*idx)' "$T/keys" | grep -q idx && die "an index outside h/'s shards: $(cat "$T/keys")"
aws s3 cp --quiet s3://dset/h/manifest.json "$T/hm.json"
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert [s['url'] for s in m['shards']]==['a.tar'], m" "$T/hm.json" \
    || die "the manifest of h/ lists more than a.tar"
ls -A "$T" | grep -q evil && die "something was written locally"

step "errors: nothing under a prefix, several buckets, no client for a local manifest"
expect_fail 1 "s3://dset/none/: no .tar, .tar.zst, .tar.gz, .tgz, .tar.bz2 or .tar.xz objects under it" "${I[@]}" s3://dset/none/
aws s3 cp --quiet "$T/p/t-000.tar" s3://other/t.tar
expect_fail 2 "several buckets" "${I[@]}" s3://dset/p/t-000.tar s3://other/t.tar
expect_fail 2 "local and remote (S3, http(s)://) shards" "${I[@]}" s3://other/t.tar "$T/loc/p/t-000.tar"
expect_fail 2 "wids" "${I[@]}" --wids s3://other/t.tar
echo "s3io_index: ok"
