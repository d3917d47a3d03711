#!/usr/bin/env bash
# mkcorpus.sh - end-to-end test of build/tools/mkcorpus, the corpus generator
# behind `make demo` and the benchmarks: two runs with the same seed give a
# byte-identical tree, another seed differs, the counts and folder layout are
# right, every .jpg decodes with djpeg, every .json parses and agrees with its
# path and .cls, and bad arguments exit 2 with a message.
set -euo pipefail
: "${SK_TOOLS:?}"
mk=$SK_TOOLS/mkcorpus
[ -x "$mk" ] || { echo "no $mk (run make)"; exit 1; }
command -v djpeg >/dev/null || { echo "djpeg not installed (scripts/deps installs libjpeg-turbo-progs)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# Determinism: same options, same bytes; pool 20 so that copies repeat.
"$mk" "$tmp/a" --samples 250 --per-dir 100 --pool 20 --seed 7 >"$tmp/a.out"
"$mk" "$tmp/b" --samples 250 --per-dir=100 -p 20 -s 7 >/dev/null
diff -r "$tmp/a" "$tmp/b" >/dev/null || fail "two runs with seed 7 differ"
"$mk" "$tmp/c" --samples 250 --per-dir 100 --pool 20 --seed 8 >/dev/null
if diff -r "$tmp/a" "$tmp/c" >/dev/null; then fail "seeds 7 and 8 give the same tree"; fi
grep -q '^samples=250 files=750 bytes=[0-9]* seconds=' "$tmp/a.out" || fail "summary line: $(cat "$tmp/a.out")"

# Layout and counts: 3 folders (100, 100, 50 samples), 3 files per sample.
[ "$(ls "$tmp/a")" = "$(printf 'n00000\nn00001\nn00002')" ] || fail "folders: $(ls "$tmp/a" | tr '\n' ' ')"
[ "$(find "$tmp/a" -type f | wc -l)" -eq 750 ] || fail "file count"
for e in jpg cls json; do
    [ "$(find "$tmp/a" -name "*.$e" | wc -l)" -eq 250 ] || fail "count of .$e"
done
[ "$(ls "$tmp/a/n00002" | wc -l)" -eq 150 ] || fail "n00002 should hold 50 samples"
[ -f "$tmp/a/n00002/00000249.jpg" ] || fail "last sample is not n00002/00000249"
[ "$(cat "$tmp/a/n00001/00000150.cls")" = 1 ] || fail "label of 00000150"

# Every JPEG decodes; the pool gives at most 20 distinct ones, at least 2.
find "$tmp/a" -name '*.jpg' | sort | while read -r f; do
    djpeg -outfile /dev/null "$f" 2>"$tmp/djpeg.err" || fail "djpeg rejects $f: $(cat "$tmp/djpeg.err")"
    [ ! -s "$tmp/djpeg.err" ] || fail "djpeg warns on $f: $(cat "$tmp/djpeg.err")"
done
n=$(find "$tmp/a" -name '*.jpg' -exec md5sum {} + | cut -d' ' -f1 | sort -u | wc -l)
[ "$n" -ge 2 ] && [ "$n" -le 20 ] || fail "$n distinct JPEGs with --pool 20"

# Every JSON parses and matches its path, label and the JPEG's real size.
python3 - "$tmp/a" <<'PY' || fail "json check"
import json, os, struct, sys
root = sys.argv[1]
for d in sorted(os.listdir(root)):
    for f in sorted(os.listdir(os.path.join(root, d))):
        if not f.endswith(".json"):
            continue
        stem = f[:-5]
        m = json.load(open(os.path.join(root, d, f)))
        assert set(m) == {"key", "label", "width", "height"}, (f, m)
        assert m["key"] == f"{d}/{stem}", (f, m)
        assert m["label"] == int(d[1:]), (f, m)
        assert open(os.path.join(root, d, stem + ".cls")).read() == str(m["label"])
        jpg = open(os.path.join(root, d, stem + ".jpg"), "rb").read()
        i = jpg.find(b"\xff\xc0")  # baseline SOF0: len(2) precision(1) h(2) w(2)
        assert i > 0, f"{d}/{stem}.jpg is not baseline"
        h, w = struct.unpack(">HH", jpg[i + 5:i + 9])
        assert (w, h) == (m["width"], m["height"]), (f, m, w, h)
        assert 64 <= w <= 384 and 64 <= h <= 384
PY

# Usage errors exit 2 and say why; a non-empty DIR is refused.
set +e
"$mk" "$tmp/x" 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q -- '--samples' "$tmp/err" || fail "missing --samples: exit $rc"
"$mk" "$tmp/x" --samples ten 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "'ten'" "$tmp/err" || fail "bad number: exit $rc"
"$mk" "$tmp/a" --samples 1 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "not empty" "$tmp/err" || fail "non-empty DIR: exit $rc"
"$mk" /proc/nonexistent/x --samples 1 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "/proc/nonexistent/x" "$tmp/err" || fail "unwritable DIR: exit $rc $(cat "$tmp/err")"
set -e
echo "mkcorpus: ok"
