#!/usr/bin/env bash
# header_langs: the public header is clean strict C99 (-std=c99
# -pedantic-errors: no typedef repeated, no C11-only construct) and C++
# (g++ and clang++, -pedantic-errors), so a program in either language
# includes it as it is; a C++ program built against it links and runs,
# found through an rpath (the docs' way to run against a non-system prefix).
# The unstable part (the index builder, the S3 client's requests) is
# declared only under SHARDKIT_UNSTABLE_API, and is as clean with it.
. "$(dirname "$0")/lib.sh"
tmpdir T
H=$SK_ROOT/lib
[ -f "$SK_ROOT/${SK_BUILD:-build}/libshardkit.so" ] || skip "no shared library built"
cat > "$T/use.c" <<'C'
#include <shardkit.h>
#include <stdio.h>
int main(void)
{
    sk_error err = SK_ERROR_INIT;
    sk_pack_options o;
    sk_pack_options_init(&o);
    (void)err;
    printf("%s %d\n", sk_version(), (int)(o.struct_size == sizeof o));
    return 0;
}
C
cp "$T/use.c" "$T/use.cc"
ran=0
for cc in gcc clang; do
    command -v $cc >/dev/null || continue
    step "$cc -std=c99 -pedantic-errors"
    $cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -I"$H" -c "$T/use.c" -o "$T/c.o" 2>"$T/log" ||
        die "$cc -std=c99 -pedantic-errors: $(head -20 "$T/log")"
    ran=$((ran + 1))
    step "$cc: the unstable part, only when asked for"
    $cc -std=c99 -pedantic-errors -Wall -Wextra -Werror -DSHARDKIT_UNSTABLE_API -I"$H" -c "$T/use.c" -o "$T/c.o" \
        2>"$T/log" || die "$cc -DSHARDKIT_UNSTABLE_API: $(head -20 "$T/log")"
    printf '#include <shardkit.h>\nint f(void) { return sk_index_builder_new() != 0; }\n' >"$T/unstable.c"
    if $cc -std=c99 -Werror -I"$H" -c "$T/unstable.c" -o "$T/u.o" 2>/dev/null; then
        die "$cc: sk_index_builder_new is declared without SHARDKIT_UNSTABLE_API"
    fi
    $cc -std=c99 -Werror -DSHARDKIT_UNSTABLE_API -I"$H" -c "$T/unstable.c" -o "$T/u.o" 2>"$T/log" ||
        die "$cc: sk_index_builder_new is not declared with SHARDKIT_UNSTABLE_API: $(head -5 "$T/log")"
done
# the build tree holds libshardkit.so; programs load it by its soname
mkdir -p "$T/lib"
ln -s "$SK_ROOT/${SK_BUILD:-build}/libshardkit.so" "$T/lib/libshardkit.so"
ln -s "$SK_ROOT/${SK_BUILD:-build}/libshardkit.so" "$T/lib/libshardkit.so.0"
LIB=$T/lib
for cxx in g++ clang++; do
    command -v $cxx >/dev/null || continue
    for std in c++11 c++17; do
        step "$cxx -std=$std -pedantic-errors"
        $cxx -std=$std -pedantic-errors -Wall -Wextra -Werror -I"$H" -c "$T/use.cc" -o "$T/cc.o" 2>"$T/log" ||
            die "$cxx -std=$std -pedantic-errors: $(head -20 "$T/log")"
    done
    # linked with an rpath to the build tree: runs with no LD_LIBRARY_PATH
    if ! nm -D "$LIB/libshardkit.so" 2>/dev/null | grep -q __asan_init; then
        $cxx "$T/cc.o" -L"$LIB" -Wl,-rpath,"$LIB" -lshardkit -o "$T/use-$cxx" 2>"$T/log" ||
            die "$cxx link: $(head -20 "$T/log")"
        env -u LD_LIBRARY_PATH "$T/use-$cxx" > "$T/out" || die "$cxx program failed"
        grep -q '^[0-9.]* 1$' "$T/out" || die "$cxx program printed: $(cat "$T/out")"
    fi
    ran=$((ran + 1))
done
[ $ran -ge 2 ] || skip "no C or C++ compiler to try the header with"
echo "header_langs: ok ($ran compilers)"
