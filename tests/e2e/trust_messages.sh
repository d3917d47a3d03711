#!/usr/bin/env bash
# trust_messages.sh - what shardkit prints on stderr is safe for a terminal
# and names what the user named (issue "trust, third pass"):
#   - control characters (ESC, BEL, C1, bytes that are not UTF-8) in member
#     names, keys, paths and arguments are escaped as \xHH in every error
#     and warning: from the library (index's skipped members, cat's missing
#     file) and from the command line (an unknown command or option);
#   - an output that cannot be created is named as the user gave it
#     (`get -o /proc/foo.tar`), not by its temporary name beside it.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
cd "$T" || die cd

raw_controls() { # FILE: fails when it holds a C0 control other than newline, DEL or C1
    LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$1" && die "$2: a raw control character reached stderr: $(cat -v "$1")"
    python3 -c 'import sys; d=open(sys.argv[1],"rb").read(); d.decode("utf-8"); sys.exit(any(0x80<=ord(c)<=0x9f for c in d.decode()))' "$1" \
        || die "$2: a C1 control or invalid UTF-8 reached stderr: $(cat -v "$1")"
}

step "a tar whose member names hold ESC, BEL, C1 and invalid UTF-8"
python3 - <<'PY'
import io, tarfile
with tarfile.open("esc.tar", "w", format=tarfile.GNU_FORMAT) as t:
    for name in (b"ok/\x1b]0;pwned\x07a/../../x.txt", b"noext\x1b[2J\x9b31m", b"bad\xff\xfe/y/../../z.txt"):
        ti = tarfile.TarInfo(name.decode("utf-8", "surrogateescape")); ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
PY
run "$SK_BIN" index esc.tar
raw_controls "$ERR" "index's warnings"
assert_contains "$ERR" 'ok/\x1b]0;pwned\x07a/'
assert_contains "$ERR" 'noext\x1b[2J'
assert_contains "$ERR" 'bad\xff\xfe'

step "errors naming a path or an argument"
run "$SK_BIN" cat $'missing\e[31m\a.tar'
[ "$RC" != 0 ] || die "cat of a missing file exited 0"
raw_controls "$ERR" "cat's error"
assert_contains "$ERR" 'missing\x1b[31m\x07.tar'
run "$SK_BIN" $'nope\e[2J'
[ "$RC" = 2 ] || die "an unknown command exited $RC"
raw_controls "$ERR" "an unknown command"
run "$SK_BIN" pack $'--bad\e[2J' c -o o/s-%03d.tar
[ "$RC" = 2 ] || die "an unknown option exited $RC"
raw_controls "$ERR" "an unknown option"
assert_contains "$ERR" '--bad\x1b[2J'

step "the user's name for an output, not the temporary one"
mkdir -p src && printf x >src/a.txt
expect_ok "$SK_BIN" pack src -o ds/s-%03d.tar -q
run "$SK_BIN" get ds/s-000.tar a --tar -o /proc/foo.tar
[ "$RC" != 0 ] || die "get -o /proc/foo.tar exited 0"
assert_contains "$ERR" "/proc/foo.tar: cannot create"
assert_not_contains "$ERR" ".tmp"
run "$SK_BIN" index ds/s-000.tar -o /proc/m.json -q
[ "$RC" != 0 ] || die "index -o /proc/m.json exited 0"
assert_contains "$ERR" "/proc/m.json: cannot create"
assert_not_contains "$ERR" ".tmp"
echo "messages escape control characters and name the user's paths"
