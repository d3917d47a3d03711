#!/usr/bin/env bash
# place_grammar: one URL grammar wherever a place is named.  An unknown
# scheme (gs://, az://, hf://, file://, any xyz://) and pipe: are refused by
# name with exit 2 by every tool and option that names a place, and
# nothing is created in the working directory (pack -o gs://b/x-%03d.tar
# used to write a local folder "gs:/b/"); http(s):// as an output is
# refused as read only; '-' is refused with the reason where no stream
# fits (index -, verify -); pack -o - writes the samples as one tar stream,
# byte-identical to a one-shard pack, with --json on stderr.
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
