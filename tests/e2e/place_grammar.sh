#!/usr/bin/env bash
# place_grammar: one URL grammar wherever a place is named.  An unknown
# scheme (gs://, az://, hf://, file://, any xyz://) and pipe: are refused by
# name with exit 2 by every tool and option that names a place, and
# nothing is created in the working directory (pack -o gs://b/x-%03d.tar
# used to write a local folder "gs:/b/"); http(s):// as an output is
# refused as read only; '-' is refused with the reason where no stream
# fits (index -, verify -); pack -o - writes the samples as one tar stream,
# byte-identical to a one-shard pack, with --json on stderr.  A scheme is
# matched in any case (S3://b/k is S3, not a local folder "S3:"); a lost
# slash (s3:/b/k, S3:b/k, http:/h/x, s3:) is refused, never taken for a
# local path, and a local folder named "s3:" is written ./s3: (docs/places.md).
. "$(dirname "$0")/lib.sh"
need tar
tmpdir T
mkdir -p "$T/in" "$T/cwd"
for i in 0 1 2; do echo "$i" > "$T/in/k$i.txt"; printf 'x%d' "$i" > "$T/in/k$i.bin"; done
expect_ok "$SK_BIN" pack -q "$T/in" -o "$T/ds/x-%03d.tar"
cd "$T/cwd"
for url in gs://b/p/x-%03d.tar az://c/p/x-%03d.tar hf://org/ds/x-%03d.tar xyz://h/x-%03d.tar \
           file:///tmp/x-%03d.tar; do
    scheme=${url%%://*}
    step "$scheme:// refused everywhere"
    expect_fail 2 "$scheme://" "$SK_BIN" pack -q "$T/in" -o "$url"
    expect_fail 2 "$scheme://" "$SK_BIN" pack -q "$T/in" -o "$T/o/x-%03d.tar" --manifest "${url%/*}/m.json"
    expect_fail 2 "$scheme://" "$SK_BIN" pack -q "${url%/*}/" -o "$T/o/x-%03d.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" pack -q "$T/in" --from-archive "${url%/*}/a.tar" -o "$T/o/x-%03d.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" pack -q "$T/in" --files-from "${url%/*}/list" -o "$T/o/x-%03d.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" shard -q "$T/ds/x-000.tar" -o "$url"
    expect_fail 2 "$scheme://" "$SK_BIN" shard -q "${url%/*}/a.tar" -o "$T/o/y-%03d.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" shard -q "$T/ds/x-000.tar" -o "$T/o/y-%03d.tar" --keys "${url%/*}/k"
    expect_fail 2 "$scheme://" "$SK_BIN" cat "${url%/*}/a.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" get "${url%/*}/" k0
    expect_fail 2 "$scheme://" "$SK_BIN" get -e txt "$T/ds" k0 -o "${url%/*}/k0.txt"
    expect_fail 2 "$scheme://" "$SK_BIN" verify "${url%/*}/manifest.json"
    expect_fail 2 "$scheme://" "$SK_BIN" index -q "${url%/*}/a.tar"
    expect_fail 2 "$scheme://" "$SK_BIN" index -q "$T/ds/x-000.tar" -o "${url%/*}/m.json"
    expect_fail 2 "$scheme://" "$SK_BIN" index merge "${url%/*}/m.json" -o "$T/o/m.json"
    expect_fail 2 "$scheme://" "$SK_BIN" index merge "$T/ds/manifest.json" -o "${url%/*}/m.json"
    expect_fail 2 "$scheme://" "$SK_BIN" upload "${url%/*}/a.tar" s3://bucket/p/
    [ -z "$(ls -A "$T/cwd")" ] || die "$scheme:// created local files: $(ls -A "$T/cwd")"
    [ ! -e "$T/o" ] || die "$scheme://: a refused run created $T/o"
done
step "a lost slash (s3:/b, S3:b, http:/h, s3:) is refused everywhere, never a local folder"
for url in 's3:/b/p/x-%03d.tar' 'S3:b/p/x-%03d.tar' 'http:/127.0.0.1/x-%03d.tar' 'https:x-%03d.tar' 's3:'; do
    d=${url%/*}
    expect_fail 2 "two slashes" "$SK_BIN" pack -q "$T/in" -o "$url"
    expect_fail 2 "two slashes" "$SK_BIN" pack -q "$d/" -o "$T/o/x-%03d.tar"
    expect_fail 2 "two slashes" "$SK_BIN" shard -q "$T/ds/x-000.tar" -o "$url"
    expect_fail 2 "two slashes" "$SK_BIN" cat "$d/a.tar"
    expect_fail 2 "two slashes" "$SK_BIN" get -e txt "$T/ds" k0 -o "$d/k0.txt"
    expect_fail 2 "two slashes" "$SK_BIN" index merge "$T/ds/manifest.json" -o "$d/m.json"
    expect_fail 2 "two slashes" "$SK_BIN" upload "$d/a.tar" s3://bucket/p/
    assert_contains "$ERR" "written './"
    [ -z "$(ls -A "$T/cwd")" ] || die "$url created local files: $(ls -A "$T/cwd")"
done
step "S3:// (any case) is S3: asked of the endpoint, no local folder 'S3:'"
export AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=y
expect_fail 1 "127.0.0.1:9/b/x.tar" "$SK_BIN" cat --endpoint-url http://127.0.0.1:9 --max-attempts 1 S3://b/x.tar
expect_fail 1 "127.0.0.1:9/b/" "$SK_BIN" pack -q "$T/in" -o 'S3://b/x-%03d.tar' --endpoint-url http://127.0.0.1:9 --max-attempts 1
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
[ -z "$(ls -A "$T/cwd")" ] || die "S3:// created local files: $(ls -A "$T/cwd")"
step "a local folder named 's3:' is written ./s3: and works as any folder"
expect_ok "$SK_BIN" pack -q "$T/in" -o './s3:/x-%03d.tar'
cmp -s "$T/cwd/s3:/x-000.tar" "$T/ds/x-000.tar" || die "./s3:/x-000.tar differs from the same pack elsewhere"
expect_ok "$SK_BIN" verify ./s3:
expect_ok "$SK_BIN" get -e txt ./s3: k1
assert_eq "$(cat "$OUT")" 1 "k1.txt through ./s3:"
rm -rf "$T/cwd/s3:"
step "pipe: refused: it would run a shell command"
expect_fail 2 "pipe:" "$SK_BIN" cat "pipe:curl -s http://h/x.tar"
expect_fail 2 "pipe:" "$SK_BIN" shard -q "pipe:cat x.tar" -o "$T/o/y-%03d.tar"
step "http(s):// is read only"
expect_fail 2 "read only" "$SK_BIN" pack -q "$T/in" -o "http://127.0.0.1:9/x-%03d.tar"
expect_fail 2 "read only" "$SK_BIN" shard -q "$T/ds/x-000.tar" -o "https://127.0.0.1:9/y-%03d.tar"
step "'-' where no stream fits: refused with the reason"
expect_fail 2 "standard input cannot be read here" "$SK_BIN" index -
expect_fail 2 "standard input cannot be read here" "$SK_BIN" verify -
expect_fail 2 "standard output cannot take" "$SK_BIN" pack -q "$T/in" -o "$T/o/x-%03d.tar" --manifest -
[ -z "$(ls -A "$T/cwd")" ] || die "created local files: $(ls -A "$T/cwd")"
step "pack -o -: one tar stream, as a one-shard pack"
expect_ok "$SK_BIN" pack -q "$T/in" -o - --json
cmp "$OUT" "$T/ds/x-000.tar" || die "pack -o - differs from the one-shard pack"
assert_contains "$ERR" '"samples": 3'
expect_fail 2 "--compress" "$SK_BIN" pack -q "$T/in" -o - --compress zstd
echo "place_grammar: ok"
