#!/usr/bin/env bash
# install: `make install PREFIX=... DESTDIR=...` installs the binary, both
# libraries, the header, a pkg-config file that points at them, and the docs;
# a program built only from what was installed packs a directory.
. "$(dirname "$0")/lib.sh"
need make cc pkg-config
tmpdir T
D=$T/dest P=/opt/sk
make -s -C "$SK_ROOT" install BUILD="${SK_BUILD:-build}" PREFIX=$P DESTDIR="$D" >"$T/log" 2>&1 \
    || die "make install failed: $(tail -5 "$T/log")"
for f in bin/shardkit lib/libshardkit.a lib/libshardkit.so lib/libshardkit.so.0 include/shardkit.h \
         lib/pkgconfig/shardkit.pc share/doc/shardkit/pack.md share/doc/shardkit/README.md; do
    [ -e "$D$P/$f" ] || die "not installed: $P/$f"
done
"$D$P/bin/shardkit" --version | grep -q '^shardkit ' || die "installed binary does not run"
grep -qx "prefix=$P" "$D$P/lib/pkgconfig/shardkit.pc" || die "shardkit.pc does not name PREFIX $P"
cat > "$T/use.c" <<'C'
#include <shardkit.h>
#include <stdio.h>
int main(int argc, char **argv)
{
    sk_pack_options o = {.pattern = argv[2], .max_count = 2};
    sk_pack *p;
    sk_error err = SK_ERROR_INIT;
    sk_pack_stats st;
    int rc = sk_pack_new(&p, &o, &err) || sk_pack_add_dir(p, argv[1], &err) || sk_pack_run(p, &st, &err);
    if (rc) fprintf(stderr, "%s\n", err.msg);
    else printf("%llu shards\n", (unsigned long long)st.shards);
    sk_pack_free(p);
    return rc != 0 && argc;
}
C
export PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$D$P/lib/pkgconfig
# a sanitizer build's library needs its runtime loaded first: the program
# part only makes sense for the plain build
if nm -D "$D$P/lib/libshardkit.so" 2>/dev/null | grep -q __asan_init; then
    skip "installed files checked; a program cannot load a sanitizer-built library without its runtime"
fi
cc -std=c11 "$T/use.c" -o "$T/use" $(pkg-config --cflags shardkit) $(pkg-config --libs shardkit) \
    2>"$T/cc.log" || die "cannot build against the installed library: $(cat "$T/cc.log")"
mkdir -p "$T/in"
for i in 1 2 3; do echo "$i" > "$T/in/s$i.txt"; done
LD_LIBRARY_PATH=$D$P/lib "$T/use" "$T/in" "$T/out/x-%d.tar" | grep -qx '2 shards' || die "program on the installed library failed"
tar tf "$T/out/x-1.tar" | grep -qx 's3.txt' || die "unexpected shard content"
echo "install: ok"
