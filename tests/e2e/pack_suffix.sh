#!/usr/bin/env bash
# pack and shard: a shard's name says its format (our readers, tar -a and
# WebDataset all go by the suffix), so the name and the bytes must agree:
#  - -o NAME.tar.zst without --compress writes zstd (level 3), the same
#    bytes as --compress zstd, read back by cat and verify
#  - --compress none with a .zst name: exit 2 naming the pattern, no file
#  - .tar.gz / .tgz / .tar.bz2 / .tar.xz (not written by shardkit): exit 2
#  - zstd data under a name without .zst: written, with a warning
. "$(dirname "$0")/lib.sh"
need cmp
tmpdir
"$SK_TOOLS/mkcorpus" "$T/c" --samples 40 >/dev/null || die "mkcorpus failed"
"$SK_BIN" pack "$T/c" -o "$T/plain/s-%02d.tar" --max-count 15 -q || die "plain pack failed"

step "pack -o NAME.tar.zst: zstd without --compress, the same bytes as --compress zstd"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/a/s-%02d.tar.zst" --max-count 15
expect_ok "$SK_BIN" pack "$T/c" -o "$T/b/s-%02d.tar.zst" --max-count 15 --compress zstd
for f in s-00.tar.zst s-01.tar.zst s-02.tar.zst s-00.tar.zst.idx; do
    cmp "$T/a/$f" "$T/b/$f" || die "$f differs from --compress zstd's"
done
[ "$(head -c 4 "$T/a/s-00.tar.zst" | od -An -tx1 | tr -d ' ')" = 28b52ffd ] || die "not zstd data"
expect_ok "$SK_BIN" verify "$T/a/manifest.json"
expect_ok "$SK_BIN" cat "$T/a/manifest.json"
"$SK_BIN" cat "$T/plain/manifest.json" | cmp - "$OUT" || die "cat of the .zst shards differs from the plain ones"

step "shard -o NAME.tar.zst: zstd too"
expect_ok "$SK_BIN" shard "$T/plain/manifest.json" -o "$T/r/t-%02d.tar.zst" --max-count 20
[ "$(head -c 4 "$T/r/t-00.tar.zst" | od -An -tx1 | tr -d ' ')" = 28b52ffd ] || die "shard: not zstd data"
expect_ok "$SK_BIN" verify "$T/r/manifest.json"

step "--compress none under a .zst name: refused, nothing written"
expect_fail 2 "end in .zst" "$SK_BIN" pack "$T/c" -o "$T/n/s-%02d.tar.zst" --compress none
expect_fail 2 "end in .zst" "$SK_BIN" shard "$T/plain/manifest.json" -o "$T/n/t-%02d.tar.zst" --compress none
[ ! -e "$T/n" ] || die "a refused run made $T/n"

for ext in tar.gz tgz tar.bz2 tar.xz; do
    step "a .$ext name: refused (shardkit writes .tar or .tar.zst)"
    expect_fail 2 "shardkit writes .tar shards" "$SK_BIN" pack "$T/c" -o "$T/g/s-%02d.$ext"
    expect_fail 2 "shardkit writes .tar shards" "$SK_BIN" shard "$T/plain/manifest.json" -o "$T/g/t-%02d.$ext"
    [ ! -e "$T/g" ] || die "a refused run made $T/g"
done

step "zstd under a .tar name: written, with a warning"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/w/s-%02d.tar" --compress zstd
assert_contains "$ERR" "do not end in .zst"
echo "pack_suffix: ok"
