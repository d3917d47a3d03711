#!/usr/bin/env bash
# pack_roundtrip: a generated corpus (real JPEGs, labels, JSON) packed into
# several shards reads back exactly through GNU tar, bsdtar and Python's
# tarfile; the shards group into exactly the source's samples; the manifest's
# CRC32Cs and sizes are right; output is byte-identical across runs, --jobs,
# and the order in which the same files are listed; --shuffle is seeded.
. "$(dirname "$0")/lib.sh"
need tar bsdtar python3 cmp
tmpdir T
C=$T/corpus
"$SK_TOOLS/mkcorpus" "$C" --samples 600 --per-dir 250 >/dev/null || die "mkcorpus failed"

step "pack into shards of at most 1 MiB"
expect_ok "$SK_BIN" pack "$C" -o "$T/a/train-%06d.tar" --max-size 1M --json
nshards=$(ls "$T"/a/train-*.tar | wc -l)
[ "$nshards" -ge 4 ] || die "expected several shards, got $nshards"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["shards"]>=4 and d["samples"]==600 and d["files"]==1800, d' "$OUT" \
    || die "bad --json summary: $(cat "$OUT")"
check_shards "$T/a"
for s in "$T"/a/train-*.tar; do
    [ "$(stat -c %s "$s")" -le 1048576 ] || die "$s is over --max-size"
done

step "GNU tar and bsdtar extract exactly the corpus"
mkdir "$T/x-gnu" "$T/x-bsd"
for s in "$T"/a/train-*.tar; do
    tar xf "$s" -C "$T/x-gnu" || die "GNU tar failed on $s"
    bsdtar xf "$s" -C "$T/x-bsd" || die "bsdtar failed on $s"
done
diff -r "$C" "$T/x-gnu" >/dev/null || die "GNU tar extraction differs from the corpus"
diff -r "$C" "$T/x-bsd" >/dev/null || die "bsdtar extraction differs from the corpus"

step "Python tarfile reads every member; members group into the source's samples"
python3 - "$C" "$T/a" <<'PY' || die "tarfile check failed"
import os, sys, tarfile, json, zlib
corpus, out = sys.argv[1], sys.argv[2]
src = {}
for d, _, fs in os.walk(corpus):
    for f in fs:
        p = os.path.join(d, f)
        src[os.path.relpath(p, corpus)] = open(p, "rb").read()
def crc32c(b, c=0):
    t = crc32c.t
    c ^= 0xffffffff
    for x in b: c = (c >> 8) ^ t[(c ^ x) & 0xff]
    return c ^ 0xffffffff
crc32c.t = []
for n in range(256):
    c = n
    for _ in range(8): c = (c >> 1) ^ 0x82f63b78 if c & 1 else c >> 1
    crc32c.t.append(c)
seen, samples, last_key = {}, [], None
man = json.load(open(os.path.join(out, "manifest.json")))
ordinal = 0
for sh in man["shards"]:
    assert sh["first_ordinal"] == ordinal, sh
    path = os.path.join(out, sh["url"])
    data = open(path, "rb").read()
    assert len(data) == sh["bytes"], sh
    assert "%08x" % crc32c(data) == sh["crc32c"], sh
    keys = []
    with tarfile.open(path) as tf:
        for m in tf:
            assert m.isfile() and m.mtime == 0 and m.uid == 0 and m.gid == 0 and m.mode == 0o644
            assert m.uname == "" and m.gname == ""
            b = tf.extractfile(m).read()
            assert src[m.name] == b, m.name
            seen[m.name] = True
            base = m.name.rsplit("/", 1)
            key = (base[0] + "/" if len(base) == 2 else "") + base[-1].split(".", 1)[0]
            if key != last_key:
                keys.append(key); samples.append(key); last_key = key
    assert len(keys) == sh["samples"], (sh, len(keys))
    ordinal += len(keys)
assert set(seen) == set(src), "member set differs from the corpus"
assert samples == sorted(samples, key=lambda k: k.encode()), "samples not in key order"
assert len(samples) == len(set(samples)) == 600, "a sample is split or missing"
assert man["totals"]["samples"] == 600 and man["totals"]["members"] == 1800
assert man["extensions"] == {"cls": 600, "jpg": 600, "json": 600}, man["extensions"]
PY

step "byte-identical across runs, --jobs 1 and a shuffled file list"
expect_ok "$SK_BIN" pack "$C" -o "$T/b/train-%06d.tar" --max-size 1M
expect_ok "$SK_BIN" pack "$C" -o "$T/c/train-%06d.tar" --max-size 1M --jobs 1
(cd "$C" && find . -type f | sort -r) > "$T/list"
expect_ok "$SK_BIN" pack --files-from "$T/list" --root "$C" -o "$T/d/train-%06d.tar" --max-size 1M
for f in $(cd "$T/a" && ls); do
    cmp "$T/a/$f" "$T/b/$f" || die "second run differs: $f"
    cmp "$T/a/$f" "$T/c/$f" || die "--jobs 1 differs: $f"
    cmp "$T/a/$f" "$T/d/$f" || die "--files-from in another order differs: $f"
done

step "--shuffle: same seed same bytes, other seed other order, same samples"
expect_ok "$SK_BIN" pack "$C" -o "$T/s1/s-%03d.tar" --max-count 100 --shuffle --seed 7
expect_ok "$SK_BIN" pack "$C" -o "$T/s2/s-%03d.tar" --max-count 100 --shuffle --seed 7 --jobs 1
expect_ok "$SK_BIN" pack "$C" -o "$T/s3/s-%03d.tar" --max-count 100 --shuffle --seed 8
for f in $(cd "$T/s1" && ls); do cmp "$T/s1/$f" "$T/s2/$f" || die "same seed differs: $f"; done
cmp -s "$T/s1/s-000.tar" "$T/s3/s-000.tar" && die "another seed gave the same first shard"
for d in s1 s3; do
    for s in "$T/$d"/s-*.tar; do tar tf "$s"; done | sort > "$T/$d.names"
done
(cd "$C" && find . -type f | sed 's|^\./||' | sort) > "$T/src.names"
cmp "$T/s1.names" "$T/src.names" || die "shuffled shards lack or repeat members"
cmp "$T/s3.names" "$T/src.names" || die "shuffled shards lack or repeat members"
check_shards "$T/s1"

step "sources combine: a directory, a NUL list on stdin and an archive"
mkdir -p "$T/more/m" "$T/arch/z"
echo extra > "$T/more/m/e1.txt"
echo zipped > "$T/arch/z/k1.txt"
(cd "$T/arch" && bsdtar --format zip -cf "$T/z.zip" z)
printf 'n00000/00000000.jpg\0n00000/00000000.cls\0' > "$T/nul.list"
expect_ok "$SK_BIN" pack "$T/more" --files-from - -0 --root "$C" --from-archive "$T/z.zip" \
    -o "$T/mix/m-%d.tar" < "$T/nul.list"
tar tf "$T/mix/m-0.tar" > "$T/mix.names"
printf '%s\n' m/e1.txt n00000/00000000.cls n00000/00000000.jpg z/k1.txt | cmp - "$T/mix.names" \
    || die "combined sources: unexpected members: $(cat "$T/mix.names")"
echo "pack_roundtrip: ok"
