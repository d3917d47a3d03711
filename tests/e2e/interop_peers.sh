#!/usr/bin/env bash
# interop_peers: what the peers' own code expects of shardkit's exports.
#   DALI: `index --dali` lists what NVIDIA's wds2idx lists (every regular
#     file but hidden ones, metadata and key-less members included, its
#     split rule for names without a dot), so DALI numbers samples alike;
#   wids: `index --wids` never names a compressed shard (wids maps plain
#     tars): refused with the reason, indexes and manifest still written;
#   pkg-config: a program links against the static libshardkit.a with
#     exactly `pkg-config --static --libs shardkit`, and runs.
. "$(dirname "$0")/lib.sh"
need cc pkg-config tar zstd
tmpdir T
CHECK="python3 $SK_ROOT/tests/e2e/lib/index_check.py"
BUILD_DIR=$(dirname "$SK_BIN")

step "DALI: the members wds2idx keeps (metadata, no key, hidden ones left out)"
mkdir -p "$T/s/d" && cd "$T/s"
for f in __meta__ README d/a.jpg d/a.cls d/.hidden d/b.x.y d/c.jpg LICENSE .dot d/e.Ab; do
    printf '%s' "$f" >"$f"
done
tar --format=gnu -cf "$T/w.tar" __meta__ README d/a.jpg d/a.cls d/.hidden d/b.x.y LICENSE d/c.jpg .dot d/e.Ab
cd "$T"
expect_ok "$SK_BIN" index --dali --no-manifest w.tar
$CHECK dali w.tar w.tar.dali.idx >/dev/null || die "the DALI index is not wds2idx's: $(cat w.tar.dali.idx)"
[ "$(head -1 w.tar.dali.idx)" = "v1.2 7" ] || die "wds2idx counts 7 samples: $(head -1 w.tar.dali.idx)"
grep -q '^__meta__ 512 8 __meta__$' w.tar.dali.idx || die "__meta__ is not its own DALI sample"
expect_ok "$SK_BIN" get w.tar '#0' -o "$T/g"   # our own index still skips them (WebDataset's rule)
[ -e "$T/g/a.jpg" ] || die "our index's first sample is not d/a"

step "wids: a compressed shard is refused with the reason, the rest is written"
mkdir -p "$T/wd"
cp w.tar "$T/wd/a.tar"
zstd -q "$T/wd/a.tar" -o "$T/wd/b.tar.zst"
expect_fail 1 "b.tar.zst is zstd-compressed, and wids reads uncompressed .tar shards only" \
    "$SK_BIN" index --wids "$T/wd/a.tar" "$T/wd/b.tar.zst"
[ ! -e "$T/wd/wids.json" ] || die "a wids.json naming a compressed shard was written"
[ -e "$T/wd/manifest.json" ] && [ -e "$T/wd/b.tar.zst.idx" ] || die "the indexes and manifest were not written"
expect_ok "$SK_BIN" index --wids -q --overwrite "$T/wd/a.tar"
[ -e "$T/wd/wids.json" ] || die "no wids.json for a plain tar"

step "pkg-config --static: a static libshardkit.a links and runs"
mkdir -p "$T/pc"
sed -e "s|^prefix=.*|prefix=$SK_ROOT|" -e "s|^libdir=.*|libdir=$BUILD_DIR|" \
    -e "s|^includedir=.*|includedir=$SK_ROOT/lib|" "$BUILD_DIR/shardkit.pc" >"$T/pc/shardkit.pc"
export PKG_CONFIG_PATH=$T/pc
L=$(pkg-config --static --libs shardkit) || die "pkg-config --static cannot resolve shardkit's Requires.private"
cat >"$T/use.c" <<'C'
#include <shardkit.h>
#include <stdio.h>
int main(void)
{
    char low[16];
    size_t n = sk_ext_lower("\xc3\x84PFEL", 6, low);
    printf("%zu %.*s\n", n, (int)n, low);
    return 0;
}
C
# every object of the archive, so every library it calls must be named
if nm "$BUILD_DIR/libshardkit.a" 2>/dev/null | grep -q __asan_init; then
    skip "a sanitizer build's archive needs its runtime"
fi
cc -std=c11 $(pkg-config --cflags shardkit) "$T/use.c" -o "$T/use" \
    ${L/-lshardkit/-Wl,--whole-archive -Wl,-Bstatic -lshardkit -Wl,--no-whole-archive -Wl,-Bdynamic} \
    2>"$T/ld.log" || die "static libshardkit.a does not link with pkg-config --static --libs: $(grep -m5 'undefined\|cannot' "$T/ld.log")"
ldd "$T/use" | grep -q libshardkit && die "linked the shared library, not libshardkit.a"
[ "$("$T/use")" = "6 äpfel" ] || die "the statically linked program does not run: $("$T/use")"
echo "interop_peers: ok"
