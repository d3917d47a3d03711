#!/usr/bin/env bash
# mount_hostile: an index whose checksums hold but whose keys and extensions
# are crafted (.., absolute, empty and "." components, NUL, '/' in or an
# empty extension, a dot in a key's last component, an extension twice,
# a sample of 1,025 members)
# never puts such a name in the mounted tree: opened as is, the index is
# refused (the mount fails naming it); with --trust-index (no checks at
# open) every crafted member is skipped with a warning naming the shard and
# offset, and only the sound ones are served.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/e2e/lib/mount.sh"
skip_unless_fuse
need python3
tmpdir T
cd "$T"
mkdir ds
nbad=$(pylib "$SK_ROOT/tests/e2e/lib/hostile_index.py" "$(dirname "$SK_BIN")/libshardkit.so" ds) ||
    die "could not write the hostile index"

step "the index as is: refused, named"
mkdir m
expect_fail 1 "h-00.tar.idx" "$SK_BIN" mount -f ds m
assert_contains "$ERR" "not a safe relative name"
mountpoint -q m && die "a refused mount was mounted"

step "--trust-index: the crafted members skipped with warnings, the sound ones served"
mount_up m ds --trust-index
find m >tree
sort tree >tree.sorted
printf '%s\n' m m/good m/good/000.txt m/good/001.json m/good/001.txt m/good/002.txt >want
diff want tree.sorted || die "the tree is not the sound members alone"
grep -c "skipped" m.log >nwarn || :
assert_eq "$(cat nwarn)" "$nbad" "warnings, one per crafted member"
assert_contains m.log "ds/h-00.tar: member at offset"
assert_eq "$(cat m/good/001.json)" "sample 1 member 1" "a sound member's bytes"
assert_eq "$(cat m/good/002.txt)" "sample 13 member 0" "the first of two equal extensions"
for p in ../evil evil abs a ext nul dot many; do [ -e "m/$p" ] && die "m/$p exists"; done
[ -e "$T/evil" ] && die "a crafted name reached outside the mount"
mount_down m
echo "mount_hostile: ok"
