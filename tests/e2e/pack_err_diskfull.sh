#!/usr/bin/env bash
# pack: the output runs out of space.
#  - file size limit (ulimit -f, with SIGXFSZ ignored so write() fails with
#    EFBIG instead of killing): exit 1, the error names the temporary shard
#    file, the shards finished before stay complete, no incomplete shard
#    under a final name, no leftover temporary file
#  - a full file system (a 2 MiB tmpfs; skipped where mount is not allowed):
#    the same promises with ENOSPC
. "$(dirname "$0")/lib.sh"
need python3 tar
tmpdir

# 5 small samples, then 5 of 40 KB: with --max-count 5 the first shard is
# about 10 KB and the second about 210 KB.
mkdir -p "$T/in"
for i in 1 2 3 4 5; do echo "small $i" >"$T/in/a$i.txt"; done
for i in 1 2 3 4 5; do head -c 40000 /dev/urandom >"$T/in/b$i.bin"; done

step "ulimit -f 100 (KiB): the second shard cannot be written"
for jobs in 1 2; do
    rm -rf "$T/o"
    run bash -c 'trap "" XFSZ; ulimit -f 100; exec "$@"' sh \
        "$SK_BIN" pack "$T/in" -o "$T/o/s-%03d.tar" --max-count 5 -j $jobs
    [ "$RC" -eq 1 ] || die "expected exit 1, got $RC"
    assert_contains "$ERR" "$T/o/s-001.tar: write failed" # the user's name, not the temporary one
    assert_contains "$ERR" "File too large"
    check_shards "$T/o"
    assert_eq "$SHARDS" 1 "complete shards kept"
    assert_eq "$(tar tf "$T/o/s-000.tar" | tr '\n' ' ')" "a1.txt a2.txt a3.txt a4.txt a5.txt " "first shard"
    [ ! -e "$T/o/s-001.tar" ] || die "incomplete s-001.tar under its final name"
    [ ! -e "$T/o/manifest.json" ] || die "manifest written by a failed run"
done

step "ulimit -f 100, one shard: fails on the first shard"
rm -rf "$T/o"
run bash -c 'trap "" XFSZ; ulimit -f 100; exec "$@"' sh "$SK_BIN" pack "$T/in" -o "$T/o/s-%03d.tar"
[ "$RC" -eq 1 ] || die "expected exit 1, got $RC"
assert_contains "$ERR" "$T/o/s-000.tar: write failed"
check_shards "$T/o"
assert_eq "$SHARDS" 0 "complete shards"

step "a full 2 MiB tmpfs"
mkdir "$T/mnt"
if ! mount -t tmpfs -o size=2m sk-e2e-full "$T/mnt" 2>/dev/null; then
    echo "note: cannot mount a tmpfs here (not root, or no CAP_SYS_ADMIN): sub-case skipped"
    echo "disk-full cases passed (tmpfs sub-case skipped)"
    exit 0
fi
at_exit "umount '$T/mnt'"
for i in $(seq 1 30); do head -c 100000 /dev/urandom >"$T/in/c$i.bin"; done
for jobs in 1 2; do
    rm -rf "$T/mnt/o"
    expect_fail 1 "$T/mnt/o/" "$SK_BIN" pack "$T/in" -o "$T/mnt/o/s-%03d.tar" --max-size 900K -j $jobs
    assert_contains "$ERR" "No space left on device"
    assert_not_contains "$ERR" ".tmp" # errors name the shard, not its temporary name
    check_shards "$T/mnt/o"
    [ "$SHARDS" -ge 1 ] || die "no complete shard kept before the disk filled"
    [ ! -e "$T/mnt/o/manifest.json" ] || die "manifest written by a failed run"
done
echo "disk-full cases passed"
