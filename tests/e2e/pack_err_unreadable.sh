#!/usr/bin/env bash
# pack: an unreadable input file stops the run by default (exit 1, the file
# named, no shard published), and with --on-error skip is skipped with a
# warning naming it, counted in --json's "skipped", the rest packed.  An
# output directory the user cannot write is exit 1 naming the path.
# Runs shardkit as nobody (setpriv), since root reads anything.
. "$(dirname "$0")/lib.sh"
need setpriv python3 tar
tmpdir
chmod 755 "$T"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
"${NOBODY[@]}" true 2>/dev/null || skip "setpriv cannot switch to uid 65534 here"

mkdir -p "$T/in/d"
for i in 1 2 3 4; do printf 'text %d\n' $i >"$T/in/d/s$i.txt"; printf '{"i":%d}\n' $i >"$T/in/d/s$i.json"; done
chmod 000 "$T/in/d/s3.json"
chmod -R a+rX "$T/in"; chmod 000 "$T/in/d/s3.json"
mkdir "$T/w"; chmod 777 "$T/w"

step "unreadable file, default: exit 1 naming it, nothing published"
expect_fail 1 "d/s3.json" "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out/s-%03d.tar" -j 2
assert_contains "$ERR" "Permission denied" "stderr"
check_shards "$T/w/out"
[ "$SHARDS" -eq 0 ] || die "a shard was published although the run failed"
[ ! -e "$T/w/out/manifest.json" ] || die "manifest written by a failed run"

step "unreadable file, several shards, fails in the second: the first stays complete"
expect_fail 1 "d/s3.json" "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out2/s-%03d.tar" --max-count 1 -j 1
check_shards "$T/w/out2"
[ "$SHARDS" -le 2 ] || die "shards published past the failure: $SHARDS"

step "--on-error skip: exit 0, warning naming it, skipped=1, the rest packed"
expect_ok "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out3/s-%03d.tar" --on-error skip --json -j 2
assert_contains "$ERR" "d/s3.json" "warning"
assert_contains "$ERR" "warning" "stderr"
python3 - "$OUT" <<'PY' || die "--json summary wrong: $(cat "$OUT")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["skipped"] == 1, j
assert j["files"] == 7, j
assert j["samples"] == 4, j
PY
check_shards "$T/w/out3"
tar tf "$T/w/out3/s-000.tar" >"$T/list"
assert_not_contains "$T/list" "d/s3.json" "shard listing"
assert_eq "$(wc -l <"$T/list")" 7 "members packed"
mkdir "$T/x" && tar xf "$T/w/out3/s-000.tar" -C "$T/x"
for f in s1.txt s1.json s2.txt s2.json s3.txt s4.txt s4.json; do
    cmp "$T/in/d/$f" "$T/x/d/$f" || die "d/$f differs after extraction"
done

step "--on-error skip, a sample whose only member is unreadable: no sample, not an empty one"
echo lonely >"$T/in/d/s5.txt"; chmod 000 "$T/in/d/s5.txt"
expect_ok "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out6/s-%03d.tar" --on-error skip --json -j 2
assert_contains "$ERR" "d/s5.txt"
python3 - "$OUT" "$T/w/out6/manifest.json" <<'PY' || die "counts wrong: $(cat "$OUT")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["skipped"] == 2 and j["samples"] == 4 and j["files"] == 7, j
m = json.load(open(sys.argv[2]))
assert m["totals"]["samples"] == 4 and m["totals"]["members"] == 7, m["totals"]
assert sum(s["samples"] for s in m["shards"]) == 4
PY
check_shards "$T/w/out6"
rm -f "$T/in/d/s5.txt"

step "unreadable directory: default fails naming it; skip packs the rest"
chmod 644 "$T/in/d/s3.json"
mkdir -p "$T/in/locked" && echo x >"$T/in/locked/k.txt" && chmod 000 "$T/in/locked"
expect_fail 1 "locked" "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out4/s-%03d.tar"
check_shards "$T/w/out4"
expect_ok "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/w/out5/s-%03d.tar" --on-error skip --json
assert_contains "$ERR" "locked"
assert_contains "$OUT" '"skipped": 1'
check_shards "$T/w/out5"
chmod 755 "$T/in/locked"; rm -r "$T/in/locked"

step "unreadable big file (streamed by the writer, not built in a slot)"
mkdir -p "$T/big/b"
for i in 1 2 3; do echo $i >"$T/big/b/m$i.cls"; head -c 5000 /dev/urandom >"$T/big/b/m$i.bin"; done
head -c $((5 * 1024 * 1024)) /dev/urandom >"$T/big/b/m2.huge"
chmod -R a+rX "$T/big"; chmod 000 "$T/big/b/m2.huge"
expect_fail 1 "b/m2.huge" "${NOBODY[@]}" "$SK_BIN" pack "$T/big" -o "$T/w/big1/s-%03d.tar"
check_shards "$T/w/big1"
[ "$SHARDS" -eq 0 ] || die "a shard was published although the run failed"
expect_ok "${NOBODY[@]}" "$SK_BIN" pack "$T/big" -o "$T/w/big2/s-%03d.tar" --on-error skip --json
assert_contains "$ERR" "b/m2.huge"
assert_contains "$OUT" '"skipped": 1'
check_shards "$T/w/big2"
assert_eq "$(tar tf "$T/w/big2/s-000.tar" | tr '\n' ' ')" "b/m1.bin b/m1.cls b/m2.bin b/m2.cls b/m3.bin b/m3.cls " "members"
mkdir "$T/xb" && tar xf "$T/w/big2/s-000.tar" -C "$T/xb"
chmod 644 "$T/big/b/m2.huge"; rm "$T/big/b/m2.huge"
diff -r "$T/big" "$T/xb" >/dev/null || die "extracted members differ"

step "output directory not writable: exit 1 naming it"
mkdir -p "$T/ro/out" && chmod 555 "$T/ro/out" "$T/ro"
expect_fail 1 "$T/ro/out" "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/ro/out/s-%03d.tar"
check_shards "$T/ro/out"
[ -z "$(ls -A "$T/ro/out")" ] || die "files appeared in the read-only directory"
step "output parent not writable (directory to create): exit 1 naming it"
expect_fail 1 "$T/ro/new" "${NOBODY[@]}" "$SK_BIN" pack "$T/in" -o "$T/ro/new/s-%03d.tar"
echo "all unreadable/unwritable cases passed"
