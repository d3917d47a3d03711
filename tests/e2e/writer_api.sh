#!/usr/bin/env bash
# writer_api.sh - the streaming sample writer of the C API
# (sk_sample_writer_*, driven by tests/tools/sample_write.c) writes exactly
# what `shardkit pack` writes for the same samples as files: every shard,
# .idx and manifest.json compared with cmp (again after a run killed
# midway is resumed; resume over other samples is refused), across shard
# rollovers by size
# and count, with --start/--mtime, with zstd, and with members over the
# 4 MiB slot and 8 MiB frame sizes; GNU tar, Python's tarfile and the
# shardkit reader read the output back to the files; hostile keys and
# extensions, a repeated key and calls after finish are refused by name; a
# write that fails (file size limit) leaves complete shards only, no
# temporary file and no manifest.
. "$(dirname "$0")/lib.sh"
need cmp tar python3 zstd
W=$SK_TOOLS/sample_write
[ -x "$W" ] || die "$W not built"
tmpdir T
step "the samples as files"
expect_ok "$W" --big --files "$T/src" 7 40

# same_as_pack NAME "WRITER OPTIONS" "PACK OPTIONS" SUFFIX
same_as_pack()
{
    local name=$1 wopts=$2 popts=$3 suf=$4 f n=0
    step "$name: writer and pack"
    # shellcheck disable=SC2086
    expect_ok "$W" --big $wopts 7 40 "$T/$name-w/s-%04d$suf"
    # shellcheck disable=SC2086
    expect_ok "$SK_BIN" pack -q $popts -o "$T/$name-p/s-%04d$suf" "$T/src"
    (cd "$T/$name-p" && ls -A) >"$T/list-p"
    (cd "$T/$name-w" && ls -A) >"$T/list-w"
    cmp -s "$T/list-p" "$T/list-w" || die "$name: the writer wrote other files than pack: $(diff "$T/list-p" "$T/list-w")"
    for f in "$T/$name-p"/*; do
        cmp "$f" "$T/$name-w/${f##*/}" || die "$name: ${f##*/} differs from pack's"
        n=$((n + 1))
    done
    echo "$name: $n files identical"
}

same_as_pack plain "" "" .tar
same_as_pack size "--max-size 200000" "--max-size 200000" .tar
same_as_pack count "--max-count 5 --start 3 --mtime 1700000000" "--max-count 5 --start 3 --mtime 1700000000" .tar
same_as_pack zstd "--compress 3 --max-size 300000" "--compress zstd:3 --max-size 300000" .tar.zst
same_as_pack zstd1 "--compress 1" "--compress zstd:1" .tar.zst
[ "$(ls "$T"/size-w/*.tar | wc -l)" -ge 5 ] || die "size: expected several shards"
[ "$(ls "$T"/zstd-w/*.tar.zst | wc -l)" -ge 5 ] || die "zstd: expected several shards"

# resume: a run killed after some shards (its manifest and last shards not
# there) rerun with the same samples keeps what is complete, writes the
# rest, and ends with pack's bytes again
resume_same_as_pack()
{
    local name=$1 wopts=$2 suf=$3 last f
    step "$name: resume after a kill"
    last=$(cd "$T/$name-w" && ls s-*"$suf" | tail -3 | head -1)
    last=${last#s-}
    last=${last%%.*}
    rm -f "$T/$name-w/manifest.json"
    for f in "$T/$name-w"/s-*"$suf"; do
        n=${f##*/s-}
        n=${n%%.*}
        [ "$((10#$n))" -ge "$((10#$last))" ] && rm -f "$f" "$f.idx"
    done
    # shellcheck disable=SC2086
    expect_ok "$W" --big --resume $wopts 7 40 "$T/$name-w/s-%04d$suf"
    grep -q 'resumed=[1-9]' "$OUT" || die "$name: no shard was kept: $(cat "$OUT")"
    for f in "$T/$name-p"/*; do cmp "$f" "$T/$name-w/${f##*/}" || die "$name: after resume ${f##*/} differs"; done
    [ "$(ls -A "$T/$name-p" | wc -l)" = "$(ls -A "$T/$name-w" | wc -l)" ] || die "$name: other files after resume"
}
resume_same_as_pack size "--max-size 200000" .tar
resume_same_as_pack zstd "--compress 3 --max-size 300000" .tar.zst
step "resume with other samples: refused, naming the shard"
run "$W" --resume --max-size 200000 8 40 "$T/size-w/s-%04d.tar"
[ "$RC" -eq 1 ] || die "resume over other samples: exit $RC"
assert_contains "$ERR" "$T/size-w/s-0000.tar: sample 0"
assert_contains "$ERR" "is not the one an earlier run wrote there"

step "readers: GNU tar, Python tarfile, index agreement"
check_shards "$T/size-w"
mkdir "$T/x"
for s in "$T"/size-w/*.tar; do tar -xf "$s" -C "$T/x" || die "$s: GNU tar cannot extract it"; done
for s in "$T"/zstd-w/*.tar.zst; do zstd -dcq "$s" | tar -t >/dev/null || die "$s: zstd | tar cannot list it"; done
diff -r "$T/src" "$T/x" >/dev/null || die "GNU tar's extraction differs from the samples"
python3 - "$T/src" "$T"/count-w/*.tar <<'PY' || die "Python tarfile disagrees with the samples"
import os, sys, tarfile
src, shards = sys.argv[1], sys.argv[2:]
seen = 0
for s in shards:
    with tarfile.open(s, encoding="utf-8") as t:
        for m in t:
            assert m.isfile() and m.mtime == 1700000000, (s, m.name)
            want = open(os.path.join(src, m.name), "rb").read()
            assert t.extractfile(m).read() == want, (s, m.name)
            seen += 1
files = sum(len(f) for _, _, f in os.walk(src))
assert seen == files, (seen, files)
PY
# (the reader names members with the extension lowercased)
"$SK_BIN" cat "$T/zstd-w" | tar -t --quoting-style=literal | LC_ALL=C tr A-Z a-z | LC_ALL=C sort >"$T/cat-names" ||
    die "shardkit cat cannot read the writer's .tar.zst"
(cd "$T/src" && find . -type f | sed 's|^\./||' | LC_ALL=C tr A-Z a-z | LC_ALL=C sort) >"$T/src-names"
cmp -s "$T/cat-names" "$T/src-names" || die "shardkit cat of the writer's shards lists other members"

step "hostile keys and extensions, calls after finish"
run "$W" --hostile "$T/h"
[ "$RC" -eq 0 ] || die "a hostile call was not refused"
[ "$(grep -c '^refused: ' "$OUT")" -eq 16 ] || die "expected 16 refusals: $(cat "$OUT")"
assert_contains "$OUT" 'key "../escape": not a usable member name'
assert_contains "$OUT" 'extension "a/b" holds a '"'/'"
assert_contains "$OUT" "key \"dot.key\": a dot in its last component"
assert_contains "$OUT" "holds a NUL byte"
assert_contains "$OUT" "longer than 4096 bytes"
assert_contains "$OUT" "a component longer than 255 bytes"
assert_contains "$OUT" "k.jpg and k.JPG: the same extension twice in one sample"
assert_contains "$OUT" 'key "good": the same key as the sample before it'
assert_contains "$OUT" "sample added after the writer finished"
check_shards "$T/h"
python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["totals"]["samples"] == 1, m' \
    "$T/h/manifest.json" || die "the refused samples reached the manifest"
step "the output runs out of space (ulimit -f): the shard being written goes, the others stay"
run bash -c 'trap "" XFSZ; ulimit -f 100; exec "$@"' sh "$W" --max-count 3 7 40 "$T/full/s-%03d.tar"
[ "$RC" -eq 1 ] || die "expected exit 1, got $RC"
assert_contains "$ERR" "$T/full/s-" # the shard's own name, not its temporary one
assert_not_contains "$ERR" ".tmp"
assert_contains "$ERR" "File too large"
check_shards "$T/full"
[ "$SHARDS" -ge 1 ] || die "no complete shard kept"
[ ! -e "$T/full/manifest.json" ] || die "a manifest was written for a failed run"
echo "writer = pack, byte for byte; hostile names refused"
