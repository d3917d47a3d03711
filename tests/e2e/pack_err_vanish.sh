#!/usr/bin/env bash
# pack: a file that exists when listed but is gone when its turn comes to be
# read.  Deterministic: the list comes through a FIFO; shardkit stats each
# path as it reads its line and opens files only after the list ends, so we
# write the lines, wait until shardkit has consumed them and blocks reading
# the FIFO again, delete one file, then close the FIFO.
# Default: exit 1, the error names the file and says it vanished, nothing
# published.  --on-error skip: exit 0, a warning, skipped=1, the rest packed.
. "$(dirname "$0")/lib.sh"
need mkfifo python3 tar
tmpdir

feed()   # feed FIFO PID FILE-TO-DELETE LINE...
{
    python3 - "$@" <<'PY'
import fcntl, os, struct, sys, termios, time
fifo, pid, victim, lines = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
fd = os.open(fifo, os.O_WRONLY)          # blocks until shardkit opens the list
os.write(fd, "".join(l + "\n" for l in lines).encode())
deadline = time.time() + 10
def pending():
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
def blocked_on_pipe():
    try:
        return "pipe" in open("/proc/%d/wchan" % pid).read()   # pipe_read, anon_pipe_read...
    except OSError:
        return False
# consumed from the pipe, then every line processed: back in read(2) on it
def settled():
    return not pending() and blocked_on_pipe()
while not (settled() and (time.sleep(0.02) or settled())) and time.time() < deadline:
    time.sleep(0.01)
if time.time() >= deadline:
    time.sleep(0.5)   # /proc/PID/wchan unavailable: fall back to a pause
os.unlink(victim)
os.close(fd)
PY
}

for mode in fail skip; do
    step "vanishing file, --on-error $mode"
    rm -rf "$T/in" "$T/out" "$T/list"
    mkdir -p "$T/in/a"
    for i in 1 2 3; do echo "label $i" >"$T/in/a/k$i.cls"; echo "data $i" >"$T/in/a/k$i.txt"; done
    mkfifo "$T/list"
    args=(pack --files-from "$T/list" --root "$T/in" -o "$T/out/s-%03d.tar" --json -j 2)
    [ $mode = skip ] && args+=(--on-error skip)
    "$SK_BIN" "${args[@]}" >"$T/stdout" 2>"$T/stderr" &
    pid=$!
    feed "$T/list" $pid "$T/in/a/k2.txt" a/k1.cls a/k1.txt a/k2.cls a/k2.txt a/k3.cls a/k3.txt \
        || { kill $pid; die "feeding the FIFO failed"; }
    wait $pid && rc=0 || rc=$?
    OUT=$T/stdout ERR=$T/stderr
    if [ $mode = fail ]; then
        [ $rc -eq 1 ] || die "expected exit 1, got $rc"
        assert_contains "$ERR" "a/k2.txt"
        assert_contains "$ERR" "vanished"
        check_shards "$T/out"
        [ "$SHARDS" -eq 0 ] || die "a shard was published although the run failed"
    else
        [ $rc -eq 0 ] || die "expected exit 0, got $rc"
        assert_contains "$ERR" "a/k2.txt"
        assert_contains "$ERR" "vanished"
        assert_contains "$OUT" '"skipped": 1'
        check_shards "$T/out"
        tar tf "$T/out/s-000.tar" >"$T/names"
        assert_eq "$(tr '\n' ' ' <"$T/names")" "a/k1.cls a/k1.txt a/k2.cls a/k3.cls a/k3.txt " "members"
    fi
done
echo "vanishing file cases passed"
