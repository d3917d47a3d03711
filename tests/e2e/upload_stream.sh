#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# upload_stream: upload's plan is streamed, not held.  A tree of 100,000
# files is planned in the memory a tree of 1,000 takes (before: about 100
# bytes more per object, and a phase sort that was O(n^2)); the order is
# still data, then *.idx, then manifest.json, each walked sorted; a bucket
# copy of a prefix holding all three kinds arrives whole; a source that
# does not exist fails before anything is sent, and one that fails in the
# middle of the data never lets an index or a manifest be published.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
need python3
tmpdir T

step "memory: 100,000 files planned in what 1,000 take"
empty_tree "$T/small" 10; empty_tree "$T/big" 1000
rss() { /usr/bin/time -f %M -o "$T/rss" "$SK_BIN" upload --dry-run "$1" s3://b/p/ >"$T/plan" || die "dry run of $1 failed"; cat "$T/rss"; }
small=$(rss "$T/small"); big=$(rss "$T/big")
[ "$(wc -l <"$T/plan")" -eq 100000 ] || die "the plan of the big tree does not have 100,000 items"
rss_grew_within 3072 "$small" "$big" "planning 100,000 files rather than 1,000"

step "order: data, then indexes, then manifests, each walked sorted"
mkdir -p "$T/ds/a" "$T/ds/b"
for d in a b; do
    for f in s-000.tar s-000.tar.idx manifest.json s-001.tar s-001.tar.idx; do echo "$d/$f" >"$T/ds/$d/$f"; done
done
echo top >"$T/ds/manifest.json"; echo x >"$T/ds/z.idx"; echo y >"$T/ds/readme.txt"
expect_ok "$SK_BIN" upload --dry-run "$T/ds" s3://b/p/
sed -n 's|^would upload: \(.*\) -> .*|\1|p' "$OUT" | sed "s|^$T/ds/||" >"$T/order"
cat >"$T/want" <<'W'
a/s-000.tar
a/s-001.tar
b/s-000.tar
b/s-001.tar
readme.txt
a/s-000.tar.idx
a/s-001.tar.idx
b/s-000.tar.idx
b/s-001.tar.idx
z.idx
a/manifest.json
b/manifest.json
manifest.json
W
diff "$T/want" "$T/order" || die "the plan's order is not data, indexes, manifests"

step "errors: a missing source stops before anything is sent"
expect_fail 1 "nosuch: No such file or directory" "$SK_BIN" upload --dry-run "$T/ds" "$T/nosuch" s3://b/p/
[ ! -s "$OUT" ] || die "a plan was printed although a source is missing"

command -v moto_server >/dev/null 2>&1 && command -v aws >/dev/null 2>&1 || { echo "upload_stream: ok (no moto: S3 steps skipped)"; exit 0; }
at_exit moto_stop
s3_serve
aws s3 mb s3://src >/dev/null; aws s3 mb s3://dst >/dev/null

step "a bucket copy of a dataset prefix arrives whole"
expect_ok "$SK_BIN" upload --endpoint-url "$A" "$T/ds" s3://src/ds/
expect_ok "$SK_BIN" upload --endpoint-url "$A" s3://src/ds/ s3://dst/copy/
aws s3 cp --quiet --recursive s3://dst/copy/ "$T/back" || die "download failed"
diff -r "$T/ds" "$T/back" || die "the copy differs from the source tree"

step "a data object that fails: no index or manifest published after it"
# unreadable to the user that runs it (root reads anything: run as nobody)
as_user=()
[ "$(id -u)" -ne 0 ] || as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod -R a+rX "$T/ds"; chmod 755 "$T"; chmod 000 "$T/ds/b/s-001.tar"
expect_fail 1 "s-001.tar: Permission denied" "${as_user[@]}" "$SK_BIN" upload --endpoint-url "$A" "$T/ds" s3://dst/fail/
n=$(aws s3 ls --recursive s3://dst/fail/ | grep -c -e '\.idx$' -e 'manifest\.json$' || true)
[ "$n" -eq 0 ] || die "$n indexes or manifests were published after a failed data object"
chmod 644 "$T/ds/b/s-001.tar"
echo "upload_stream: ok"
