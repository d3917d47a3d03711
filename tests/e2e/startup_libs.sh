#!/usr/bin/env bash
# startup_libs.sh - libcurl, libcrypto, libarchive, libmicrohttpd (serve),
# libfuse3 (mount) and liburing (the global order) are opened when first
# needed, not at start: `shardkit --version` and a local `get` from a plain
# tar load none of them (LD_DEBUG=files lists what the loader opens), and
# neither the binary nor libshardkit.so names them as NEEDED; a .tar.gz
# lookup then loads libarchive and works, and pkg-config's static link line
# no longer asks for the three.
. "$(dirname "$0")/lib.sh"
need readelf gzip pkg-config
tmpdir T
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 6 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar
key=$(tar tf ds/s-00.tar | sed -n 1p | sed 's/\.[^/]*$//')

# loaded LIB CMD...: does the process running CMD open LIB (file=LIB... in LD_DEBUG)?
opened() { LD_DEBUG=files "${@:2}" 2>&1 >/dev/null | grep -c "file=$1" || true; }
for lib in libcurl libcrypto libssl libarchive libxml2 libicu libmicrohttpd libgnutls libfuse liburing; do
    assert_eq "$(opened "$lib" "$SK_BIN" --version)" 0 "$lib opened by --version"
    assert_eq "$(opened "$lib" "$SK_BIN" get ds/manifest.json "$key" --ext cls)" 0 "$lib opened by a local get"
done
for f in "$SK_BIN" "$(dirname "$SK_BIN")/libshardkit.so"; do
    readelf -d "$f" | grep NEEDED >needed
    for lib in libcurl libcrypto libssl libarchive libmicrohttpd libfuse liburing; do assert_not_contains needed "$lib" "NEEDED of $f"; done
done

step "a .tar.gz lookup opens libarchive when it needs it"
gzip -c ds/s-00.tar >gz.tar.gz
expect_ok "$SK_BIN" index gz.tar.gz
expect_ok "$SK_BIN" get gz.tar.gz "$key" --ext cls
cmp -s "$OUT" "c/$key.cls" || die "get from .tar.gz: wrong bytes"
[ "$(opened libarchive "$SK_BIN" get gz.tar.gz "$key" --ext cls)" -gt 0 ] || die "libarchive not opened for .tar.gz"

step "the global order's local reads open liburing when they need it"
[ "$(opened liburing "$SK_BIN" cat --keys --global-order ds/manifest.json)" -gt 0 ] ||
    die "liburing not opened by the global order's local reads"

step "pkg-config: the static link line does not ask for them"
PKG_CONFIG_PATH="$(dirname "$SK_BIN")" pkg-config --print-requires-private shardkit >req
for p in libcurl openssl libarchive; do assert_not_contains req "$p" "Requires.private"; done
