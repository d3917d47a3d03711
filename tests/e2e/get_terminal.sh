#!/usr/bin/env bash
# get_terminal: `get` with stdout on a terminal refuses to write a binary
# member (a JPEG) or a --tar there, as `cat` refuses its tar stream (exit 2,
# nothing written to the terminal); a text member still prints, and a
# redirected stdout gets the bytes.  The terminal is a real pty.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir T
mkdir -p "$T/in"
printf '\377\330\377\340\000\020JFIF\000\001\033[2J' > "$T/in/a.jpg"
printf 'a cat\n' > "$T/in/a.txt"
expect_ok "$SK_BIN" pack -q "$T/in" -o "$T/ds/x-%03d.tar"
# runs argv with stdout on a new pty; prints "RC BYTES_ON_PTY" and stderr
cat > "$T/pty.py" <<'PY'
import os, subprocess, sys, select
m, s = os.openpty()
p = subprocess.Popen(sys.argv[1:], stdout=s, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
os.close(s)
got = b""
while True:
    r, _, _ = select.select([m], [], [], 10)
    if not r:
        break
    try:
        b = os.read(m, 65536)
    except OSError:
        break
    if not b:
        break
    got += b
rc = p.wait(timeout=30)
sys.stderr.write(p.stderr.read().decode())
print(rc, len(got))
PY
step "a JPEG member to a terminal: refused"
python3 "$T/pty.py" "$SK_BIN" get -e jpg "$T/ds" a > "$T/o" 2> "$T/e"
assert_eq "$(cat "$T/o")" "2 0" "exit status and bytes on the terminal (jpg)"
assert_contains "$T/e" "stdout is a terminal"
assert_contains "$T/e" "'jpg'"
step "--tar to a terminal: refused"
python3 "$T/pty.py" "$SK_BIN" get --tar "$T/ds" a > "$T/o" 2> "$T/e"
assert_eq "$(cat "$T/o")" "2 0" "exit status and bytes on the terminal (--tar)"
assert_contains "$T/e" "stdout is a terminal"
step "a text member to a terminal: printed"
python3 "$T/pty.py" "$SK_BIN" get -e txt "$T/ds" a > "$T/o" 2> "$T/e"
assert_eq "$(cut -d' ' -f1 "$T/o")" "0" "exit status (txt)"
step "redirected: the bytes"
expect_ok "$SK_BIN" get -e jpg "$T/ds" a
cmp "$OUT" "$T/in/a.jpg" || die "redirected jpg differs"
echo "get_terminal: ok"
