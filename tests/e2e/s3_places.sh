#!/usr/bin/env bash
# s3_places.sh - s3:// is taken wherever a tool takes a file that is not a
# dataset (issue 27): pack --files-from and --from-archive, shard --keys,
# get -o (one PUT), index merge's manifests and its output.  Each result
# equals what the same run makes from local files (the aws cli moves them
# between the two); a missing object is an error naming its URL; an object
# that is no list (a 1 MiB line) is refused by its size, not read into
# memory whole.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin cmp python3 bsdtar
"$SK_TOOLS/mkcorpus" "$T/c" --samples 60 --per-dir 30 >/dev/null || die "mkcorpus failed"
s3_serve bkt
E=(--endpoint-url "$A")

step "pack --files-from s3:// equals the local list"
(cd "$T/c" && find . -type f -name '*.jpg' -o -type f -name '*.cls' | sort | head -60) >"$T/list.txt"
aws s3 cp --quiet "$T/list.txt" s3://bkt/in/list.txt || die "upload of the list failed"
expect_ok "$SK_BIN" pack -q --files-from "$T/list.txt" --root "$T/c" -o "$T/l1/t-%03d.tar" --max-count 10
expect_ok "$SK_BIN" pack -q "${E[@]}" --files-from s3://bkt/in/list.txt --root "$T/c" -o "$T/l2/t-%03d.tar" --max-count 10
for f in "$T"/l1/*.tar; do cmp -s "$f" "$T/l2/${f##*/}" || die "${f##*/} differs"; done
[ "$(ls "$T"/l2/*.tar | wc -l)" = 3 ] || die "want 3 shards from the s3:// list"
expect_fail 1 "s3://bkt/in/nolist.txt" "$SK_BIN" pack -q "${E[@]}" --files-from s3://bkt/in/nolist.txt --root "$T/c" -o "$T/l3/t-%03d.tar"
[ ! -e "$T/l3/t-000000.tar" ] || die "a missing list wrote a shard"

step "a 1 MiB object with no line end is no list: refused, bounded"
head -c $((1 << 20)) /dev/zero | tr '\0' 'a' >"$T/huge"
aws s3 cp --quiet "$T/huge" s3://bkt/in/huge || die "upload failed"
expect_fail 1 "s3://bkt/in/huge: a line of over 65536 bytes" "$SK_BIN" pack -q "${E[@]}" --files-from s3://bkt/in/huge --root "$T/c" -o "$T/l4/t-%03d.tar"

step "pack --from-archive s3:// (a zip: its directory is at the end) equals the local archive"
(cd "$T/c" && bsdtar --format zip -cf "$T/a.zip" n00000)
aws s3 cp --quiet "$T/a.zip" s3://bkt/in/a.zip || die "upload of the zip failed"
expect_ok "$SK_BIN" pack -q --from-archive "$T/a.zip" -o "$T/z1/t-%03d.tar" --max-count 10
expect_ok "$SK_BIN" pack -q "${E[@]}" --from-archive s3://bkt/in/a.zip -o "$T/z2/t-%03d.tar" --max-count 10
for f in "$T"/z1/*.tar; do cmp -s "$f" "$T/z2/${f##*/}" || die "${f##*/} differs"; done
[ "$(ls "$T"/z2/*.tar | wc -l)" = 3 ] || die "want 3 shards from the s3:// zip"
expect_fail 1 "s3://bkt/in/none.zip" "$SK_BIN" pack -q "${E[@]}" --from-archive s3://bkt/in/none.zip -o "$T/z3/t-%03d.tar"

step "shard --keys s3:// keeps the keys listed"
printf 'n00000/00000003\nn00000/00000020\n' >"$T/keys.txt"
aws s3 cp --quiet "$T/keys.txt" s3://bkt/in/keys.txt || die "upload failed"
expect_ok "$SK_BIN" shard -q "${E[@]}" "$T/l1/manifest.json" --keys s3://bkt/in/keys.txt -o "$T/k/t-%03d.tar" --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["samples"] == 2, d' "$OUT" || die "--keys: $(cat "$OUT")"
expect_fail 1 "s3://bkt/in/nokeys.txt" "$SK_BIN" shard -q "${E[@]}" "$T/l1/manifest.json" --keys s3://bkt/in/nokeys.txt -o "$T/k2/t-%03d.tar"

step "get -o s3:// writes one object, whole"
"$SK_BIN" get "$T/l1/manifest.json" n00000/00000003 -e jpg >"$T/want.jpg" || die "local get failed"
expect_ok "$SK_BIN" get "${E[@]}" "$T/l1/manifest.json" n00000/00000003 -e jpg -o s3://bkt/out/x.jpg
aws s3 cp --quiet s3://bkt/out/x.jpg "$T/got.jpg" && cmp -s "$T/got.jpg" "$T/want.jpg" || die "x.jpg differs"
"$SK_BIN" get "$T/l1/manifest.json" n00000/00000003 --tar -o "$T/want.tar" || die "local --tar failed"
expect_ok "$SK_BIN" get "${E[@]}" "$T/l1/manifest.json" n00000/00000003 --tar -o s3://bkt/out/x.tar
aws s3 cp --quiet s3://bkt/out/x.tar "$T/got.tar" && cmp -s "$T/got.tar" "$T/want.tar" || die "x.tar differs"
expect_ok "$SK_BIN" get "${E[@]}" "$T/l1/manifest.json" n00000/00000003 -o s3://bkt/out/dir/
aws s3 ls s3://bkt/out/dir/ >"$T/ls" || die "listing failed"
grep -q ' 00000003.jpg$' "$T/ls" && grep -q ' 00000003.cls$' "$T/ls" || die "the sample's members: $(cat "$T/ls")"
expect_fail 1 "s3://nobucket: the bucket does not exist" "$SK_BIN" get "${E[@]}" "$T/l1/manifest.json" n00000/00000003 -e jpg -o s3://nobucket/x.jpg

step "index merge: s3:// manifests in, s3:// manifest out"
expect_ok "$SK_BIN" pack -q "${E[@]}" "$T/c" -o 's3://bkt/ds/p{part}/t-%03d.tar' --max-count 10 --part 0/2
expect_ok "$SK_BIN" pack -q "${E[@]}" "$T/c" -o 's3://bkt/ds/p{part}/t-%03d.tar' --max-count 10 --part 1/2
expect_ok "$SK_BIN" index merge "${E[@]}" s3://bkt/ds/p0/manifest-0.json s3://bkt/ds/p1/manifest-1.json -o s3://bkt/ds/all/manifest.json
aws s3 cp --quiet s3://bkt/ds/all/manifest.json "$T/all.json" || die "no merged manifest"
python3 - "$T/all.json" <<'PY' || die "merged: $(cat "$T/all.json")"
import json, sys
m = json.load(open(sys.argv[1]))
urls = [s["url"] for s in m["shards"]]
assert all(u.startswith("s3://bkt/ds/p0/") or u.startswith("s3://bkt/ds/p1/") for u in urls), urls
assert m["totals"]["samples"] == 60, m["totals"]
PY
"$SK_BIN" get "${E[@]}" s3://bkt/ds/all/manifest.json n00000/00000020 -e cls >"$T/cls" || die "get through the merged manifest"
"$SK_BIN" get "$T/l1/manifest.json" n00000/00000020 -e cls | cmp -s - "$T/cls" || die "wrong sample through the merge"
expect_ok "$SK_BIN" index merge "${E[@]}" s3://bkt/ds/p0/manifest-0.json s3://bkt/ds/p1/manifest-1.json -o "$T/local.json"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert all(s["url"].startswith("s3://bkt/ds/p") for s in m["shards"]), m' "$T/local.json" ||
    die "a local merge of s3:// parts keeps absolute URLs"
expect_fail 1 "s3://bkt/ds/p3/manifest.json" "$SK_BIN" index merge "${E[@]}" s3://bkt/ds/p0/manifest-0.json s3://bkt/ds/p3/manifest.json -o "$T/x.json"
expect_fail 2 "is a local file" "$SK_BIN" index merge "${E[@]}" "$T/l1/manifest.json" -o s3://bkt/ds/bad.json
exit 0
