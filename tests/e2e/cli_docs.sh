#!/usr/bin/env bash
# cli_docs.sh - the docs say what --help says: the usage block of every
# docs/CMD.md equals `shardkit CMD --help` (the commands come from
# `shardkit --help`, so a tool added later needs its page); the man pages
# shardkit(1) and shardkit-CMD(1) and the bash and zsh completions are
# generated from the same text by scripts/gen-cli, hold every option --help
# lists, and `make install` installs them.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T

step "docs usage blocks equal --help"
run python3 "$SK_ROOT/scripts/gen-cli" "$SK_BIN" check "$SK_ROOT/docs"
[ "$RC" = 0 ] || die "$(cat "$ERR")"

step "man pages and completions hold every option"
expect_ok python3 "$SK_ROOT/scripts/gen-cli" "$SK_BIN" man "$T/man"
expect_ok python3 "$SK_ROOT/scripts/gen-cli" "$SK_BIN" completion "$T/comp"
[ -s "$T/man/shardkit.1" ] || die "no shardkit.1"
tools=$("$SK_BIN" --help | sed -n 's/^  \([a-z][a-z-]*\)  .*/\1/p')
for t in $tools; do
    [ -s "$T/man/shardkit-$t.1" ] || die "no shardkit-$t.1"
    grep -q "shardkit\\\\-$t" "$T/man/shardkit.1" || die "shardkit.1 does not list $t"
    for o in $("$SK_BIN" "$t" --help | grep -o -- '^ *\(-[a-zA-Z0-9], \)\?--[a-z][a-z0-9-]*' | grep -o -- '--[a-z0-9-]*'); do
        grep -q -- "${o//-/\\\\-}" "$T/man/shardkit-$t.1" || die "shardkit-$t.1 lacks $o"
        out=$(bash -c '. "$1"; COMP_WORDS=(shardkit "$2" "$3"); COMP_CWORD=2; _shardkit; printf "%s\n" "${COMPREPLY[@]}"' _ \
              "$T/comp/shardkit.bash" "$t" "$o")
        grep -qx -- "$o" <<<"$out" || die "bash completion of '$t $o' gives: $out"
        grep -q -- "'$o\\[" "$T/comp/_shardkit" || die "zsh completion lacks $t $o"
    done
done
if command -v man >/dev/null; then
    man -l "$T/man/shardkit-pack.1" 2>/dev/null | grep -q 'max-size' || die "man cannot render shardkit-pack.1"
fi

step "make install puts them in place"
expect_ok make -C "$SK_ROOT" -s install DESTDIR="$T/dest" PREFIX=/usr BUILD="${SK_BUILD:-build}"
for f in share/man/man1/shardkit.1 share/man/man1/shardkit-verify.1 \
         share/bash-completion/completions/shardkit share/zsh/site-functions/_shardkit; do
    [ -s "$T/dest/usr/$f" ] || die "make install did not install $f"
done
exit 0
