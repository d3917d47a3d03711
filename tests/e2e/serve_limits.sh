#!/usr/bin/env bash
# serve_limits.sh - `shardkit serve`'s bounds and its way out (docs/view.md):
#   - it listens on 127.0.0.1 only unless told otherwise (the kernel's
#     socket table, not the URL it prints);
#   - --max-connections holds: with that many idle connections open, one
#     more is not answered until one of them closes, then it is;
#   - the ordinal box takes "#N" as `shardkit get` writes an ordinal;
#   - SIGTERM stops it with exit 0 even when --max-connections is below
#     --threads (libmicrohttpd left a thread with no connection to hold,
#     which never woke for the stop: the server hung).
. "$(dirname "$0")/lib.sh"
need curl python3
tmpdir T
cd "$T"

"$SK_TOOLS/mkcorpus" c --samples 60 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-count 30

"$SK_BIN" serve --port 0 --max-connections 2 --threads 4 ds >srv.out 2>srv.err &
SRV=$!
at_exit "kill -9 $SRV"
for _ in $(seq 100); do grep -q serving srv.out && break; sleep 0.1; done
U=$(sed -n 's/^serving //p' srv.out)
[ -n "$U" ] || die "serve did not start: $(cat srv.err)"
port=${U##*:}; port=${port%/}

step "listening on 127.0.0.1 only"
python3 - "$port" <<'PY' || die "not bound to loopback alone"
import sys
port = int(sys.argv[1])
found = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(table).read().splitlines()[1:]
    except FileNotFoundError:
        continue
    for l in lines:
        f = l.split()
        addr, p = f[1].rsplit(":", 1)
        if int(p, 16) == port and f[3] == "0A":  # LISTEN
            found.append(addr)
assert found == ["0100007F"], f"listening sockets on port {port}: {found}"
PY

step "--max-connections 2: a third connection waits until one closes"
python3 - "$U" <<'PY' || die "the connection bound"
import socket, sys, time, urllib.parse, urllib.request
u = sys.argv[1]
p = urllib.parse.urlparse(u)
idle = [socket.create_connection((p.hostname, p.port)) for _ in range(2)]
time.sleep(0.5)  # the server has accepted both
try:
    urllib.request.urlopen(u + "sample?o=1", timeout=1.5).read()
    raise SystemExit("a third connection was served while two were open")
except OSError:
    pass  # no answer within the time: it waits in the backlog
for s in idle:
    s.close()
r = urllib.request.urlopen(u + "sample?o=1", timeout=20)
assert r.status == 200, r.status
PY

step "the ordinal box: #N as well as N"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
curl -s "${U}sample?o=%2342" >s42.html
assert_contains s42.html "sample #42" "sample?o=#42"
for bad in "%23" "%23%2342" "%23-1" "42%23"; do
    [ "$(code "${U}sample?o=$bad")" = 404 ] || die "sample?o=$bad: not 404"
done

step "SIGTERM stops it (exit 0) with fewer connections than threads"
kill -TERM "$SRV"
for _ in $(seq 100); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SRV" 2>/dev/null && die "serve still running 10 s after SIGTERM"
wait "$SRV"
rc=$?
[ "$rc" = 0 ] || die "serve exited $rc after SIGTERM: $(cat srv.err)"
echo "serve_limits: ok"
