#!/usr/bin/env bash
# pack: inputs that are not regular files.
#  - symbolic links: skipped with a warning naming them unless
#    --follow-symlinks, which packs what they point to (a link to a file, a
#    link to a directory); a dangling link with --follow-symlinks is an
#    error naming it
#  - a directory symlink loop with --follow-symlinks: exit 1 naming the
#    link; with --on-error skip, skipped with a warning and counted
#  - a character device (mknod), a socket and a FIFO: skipped with a warning
#    naming each, counted in "skipped", the rest packed, exit 0
. "$(dirname "$0")/lib.sh"
need python3 tar
tmpdir

members() { tar tf "$1" | LC_ALL=C sort | tr '\n' ' '; }

mkdir -p "$T/in/s" "$T/target/t"
echo "real a" >"$T/in/s/a.txt"; echo 1 >"$T/in/s/a.cls"
echo "elsewhere" >"$T/target/t/q.txt"
ln -s a.txt "$T/in/s/b.txt"                # file link inside the tree
ln -s "$T/target/t" "$T/in/linkdir"        # directory link out of the tree

step "symlinks, default: not followed, a warning naming each, counted"
expect_ok "$SK_BIN" pack "$T/in" -o "$T/o1/s-%03d.tar" --json
assert_contains "$ERR" "s/b.txt"
assert_contains "$ERR" "linkdir"
assert_contains "$ERR" "symbolic link"
assert_contains "$OUT" '"skipped": 2'
check_shards "$T/o1"
assert_eq "$(members "$T/o1/s-000.tar")" "s/a.cls s/a.txt " "members"

step "symlinks, --follow-symlinks: packed as the files they point to"
expect_ok "$SK_BIN" pack "$T/in" -o "$T/o2/s-%03d.tar" --json --follow-symlinks
assert_contains "$OUT" '"skipped": 0'
check_shards "$T/o2"
assert_eq "$(members "$T/o2/s-000.tar")" "linkdir/q.txt s/a.cls s/a.txt s/b.txt " "members"
mkdir "$T/x2" && tar xf "$T/o2/s-000.tar" -C "$T/x2"
[ -f "$T/x2/s/b.txt" ] && [ ! -L "$T/x2/s/b.txt" ] || die "s/b.txt was not packed as a regular file"
cmp "$T/x2/s/b.txt" "$T/in/s/a.txt" || die "s/b.txt does not hold its target's bytes"
cmp "$T/x2/linkdir/q.txt" "$T/target/t/q.txt" || die "linkdir/q.txt differs"

step "symlinks in --files-from: skipped by default, followed with --follow-symlinks"
printf 's/a.txt\ns/b.txt\n' >"$T/list"
expect_ok "$SK_BIN" pack --files-from "$T/list" --root "$T/in" -o "$T/o3/s-%03d.tar" --json
assert_contains "$ERR" "s/b.txt"
assert_contains "$OUT" '"skipped": 1'
assert_eq "$(members "$T/o3/s-000.tar")" "s/a.txt " "members"
expect_ok "$SK_BIN" pack --files-from "$T/list" --root "$T/in" -o "$T/o4/s-%03d.tar" --follow-symlinks
assert_eq "$(members "$T/o4/s-000.tar")" "s/a.txt s/b.txt " "members"

step "dangling symlink with --follow-symlinks: exit 1 naming it"
ln -s nowhere.txt "$T/in/s/c.txt"
expect_fail 1 "s/c.txt" "$SK_BIN" pack "$T/in" -o "$T/o5/s-%03d.tar" --follow-symlinks
check_shards "$T/o5"; [ "$SHARDS" -eq 0 ] || die "shard published"
rm "$T/in/s/c.txt"

step "directory symlink loop"
ln -s .. "$T/in/s/up"
expect_fail 1 "s/up" "$SK_BIN" pack "$T/in" -o "$T/o6/s-%03d.tar" --follow-symlinks
assert_contains "$ERR" "loop"
check_shards "$T/o6"; [ "$SHARDS" -eq 0 ] || die "shard published"
expect_ok timeout 20 "$SK_BIN" pack "$T/in" -o "$T/o7/s-%03d.tar" --follow-symlinks --on-error skip --json
assert_contains "$ERR" "s/up"
assert_contains "$ERR" "loop"
assert_contains "$OUT" '"skipped": 1'
check_shards "$T/o7"
assert_eq "$(members "$T/o7/s-000.tar")" "linkdir/q.txt s/a.cls s/a.txt s/b.txt " "members"
step "a loop of two links (a -> b/, b -> a/)"
mkdir -p "$T/in2/p" "$T/in2/q"; echo z >"$T/in2/z.txt"
ln -s ../q "$T/in2/p/toq"; ln -s ../p "$T/in2/q/top"
expect_fail 1 "loop" timeout 20 "$SK_BIN" pack "$T/in2" -o "$T/o8/s-%03d.tar" --follow-symlinks
check_shards "$T/o8"
expect_ok "$SK_BIN" pack "$T/in2" -o "$T/o8b/s-%03d.tar" --json
assert_contains "$OUT" '"skipped": 2'
rm "$T/in/s/up" "$T/in/linkdir" "$T/in/s/b.txt"

step "device, socket and FIFO: skipped with a warning, counted, the rest packed"
mkdir -p "$T/in/sp"
nspecial=0
if mknod "$T/in/sp/dev.null" c 1 3 2>/dev/null; then
    nspecial=$((nspecial + 1))
else
    echo "note: mknod failed (no CAP_MKNOD?): the device sub-case is skipped"
fi
mkfifo "$T/in/sp/pipe.fifo" && nspecial=$((nspecial + 1))
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$T/in/sp/sock.s" \
    && nspecial=$((nspecial + 1))
expect_ok timeout 20 "$SK_BIN" pack "$T/in" -o "$T/o9/s-%03d.tar" --json
for f in dev.null pipe.fifo sock.s; do
    [ -e "$T/in/sp/$f" ] || continue
    assert_contains "$ERR" "sp/$f"
done
assert_contains "$ERR" "not a regular file"
assert_contains "$OUT" "\"skipped\": $nspecial"
check_shards "$T/o9"
assert_eq "$(members "$T/o9/s-000.tar")" "s/a.cls s/a.txt " "members"
step "the same listed with --files-from"
(cd "$T/in" && ls sp/*) >"$T/list2"; echo s/a.txt >>"$T/list2"
expect_ok timeout 20 "$SK_BIN" pack --files-from "$T/list2" --root "$T/in" -o "$T/o10/s-%03d.tar" --json
assert_contains "$OUT" "\"skipped\": $nspecial"
assert_contains "$ERR" "sp/pipe.fifo"
assert_eq "$(members "$T/o10/s-000.tar")" "s/a.txt " "members"
echo "special file cases passed"
