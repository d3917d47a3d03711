# mount.sh - starting and stopping `shardkit mount` in the e2e tests (source
# it after lib.sh).
#   skip_unless_fuse      exit 77 with the reason when this machine cannot
#                         mount (no /dev/fuse, no fusermount3, not allowed)
#   mount_up MP ARGS...   runs `shardkit mount -f ARGS... MP` in the
#                         background (stderr in $MP.log, pid in MOUNT_PID),
#                         waits until MP is a mount point; the unmount is
#                         registered with at_exit, so a failing test never
#                         leaves a mount behind
#   mount_down MP         fusermount3 -u, then: the process ended with 0 and
#                         within 10 s, MP is in no mount table and is empty
need fusermount3 mountpoint
skip_unless_fuse() {
    [ -c /dev/fuse ] || skip "no /dev/fuse on this machine: cannot mount"
    { exec 9<>/dev/fuse; } 2>/dev/null || skip "/dev/fuse cannot be opened here (not root, no access)"
    exec 9>&-
}
MOUNT_PID=
mount_up() {
    local mp=$1 i
    shift
    mkdir -p "$mp"
    "$SK_BIN" mount -f "$@" "$mp" 2>"$mp.log" &
    MOUNT_PID=$!
    at_exit "fusermount3 -u '$mp' 2>/dev/null; kill $MOUNT_PID 2>/dev/null"
    for i in $(seq 1 200); do
        mountpoint -q "$mp" && return 0
        kill -0 "$MOUNT_PID" 2>/dev/null || break
        sleep 0.05
    done
    if grep -q "fuse: device not found\|Operation not permitted\|fusermount3: mount failed" "$mp.log"; then
        skip "FUSE mounts are not allowed here: $(cat "$mp.log")"
    fi
    die "mount of $mp did not come up: $(cat "$mp.log")"
}
mount_down() {
    local mp=$1 i rc
    fusermount3 -u "$mp" || die "fusermount3 -u $mp failed"
    for i in $(seq 1 200); do kill -0 "$MOUNT_PID" 2>/dev/null || break; sleep 0.05; done
    kill -0 "$MOUNT_PID" 2>/dev/null && die "the mount process of $mp still runs 10 s after unmount"
    wait "$MOUNT_PID"; rc=$?
    [ "$rc" = 0 ] || die "the mount process of $mp exited $rc: $(cat "$mp.log")"
    grep -q " $(realpath "$mp") " /proc/mounts && die "$mp is still in /proc/mounts"
    [ -z "$(ls -A "$mp")" ] || die "$mp is not empty after unmount"
    return 0
}
