#!/usr/bin/env bash
# split_members: a GNU tar whose sample members are not adjacent (every
# .jpg, then every .cls: what a directory's order can give) is never split
# into half samples.  `shard` refuses it (counting them) and writes no shard
# and no manifest (an index that records the keys as several samples
# sends the reading to libarchive, which decides from the tar); `cat` refuses it; the same files with their members
# together (GNU tar --sort=name) shard and cat as 200 whole samples.
. "$(dirname "$0")/lib.sh"
need tar python3
tmpdir T
mkdir -p "$T/d"
for i in $(seq 0 199); do printf 'jpeg%d' "$i" > "$T/d/k$i.jpg"; echo "$i" > "$T/d/k$i.cls"; done
(cd "$T/d" && tar cf "$T/apart.tar" --sort=none $(ls | grep 'jpg$') $(ls | grep 'cls$')) || die "tar failed"
(cd "$T/d" && tar cf "$T/together.tar" --sort=name .) || die "tar failed"
# samples with all their members, from a tar stream on stdin
whole() { python3 -c '
import sys, tarfile, collections
n = collections.Counter()
with tarfile.open(fileobj=sys.stdin.buffer, mode="r|") as t:
    last, groups = None, 0
    for m in t:
        k = m.name.lstrip("./").split(".")[0]
        if k != last: groups += 1; last = k
        n[k] += 1
print(groups, sum(1 for v in n.values() if v == 2))'; }

step "shard of the apart tar, no index: refused with the count"
expect_fail 1 "200 samples whose members are not adjacent" "$SK_BIN" shard -q "$T/apart.tar" -o "$T/o1/x-%02d.tar"
assert_contains "$ERR" "--sort=name"
[ -z "$(ls "$T/o1" 2>/dev/null)" ] || die "a refused shard left files: $(ls "$T/o1")"

step "with its index (which records each key as two samples): refused the same"
expect_ok "$SK_BIN" index -q --no-manifest "$T/apart.tar"
expect_fail 1 "200 samples whose members are not adjacent" "$SK_BIN" shard -q "$T/apart.tar" -o "$T/o2/x-%02d.tar"
[ -z "$(ls "$T/o2" 2>/dev/null)" ] || die "a refused shard left files: $(ls "$T/o2")"

step "cat of the apart tar: refused"
run "$SK_BIN" cat "$T/apart.tar"
[ "$RC" -ne 0 ] || die "cat of a tar with split samples exited 0"
assert_contains "$ERR" "not adjacent"

step "members together: 200 whole samples"
expect_ok "$SK_BIN" shard -q "$T/together.tar" -o "$T/o3/x-%02d.tar"
expect_ok "$SK_BIN" verify "$T/o3"
assert_eq "$(cat "$T"/o3/x-*.tar | whole)" "200 200" "samples and whole samples (shard)"
expect_ok "$SK_BIN" cat "$T/together.tar"
assert_eq "$(whole < "$OUT")" "200 200" "samples and whole samples (cat)"
echo "split_members: ok"
