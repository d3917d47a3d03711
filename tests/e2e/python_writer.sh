#!/usr/bin/env bash
# python_writer.sh - shardkit.ShardWriter (over the C sample writer):
# samples read from a directory and written in key order give the same
# bytes as `shardkit pack` of that directory (tars, .idx sidecars and
# manifest, plain and .tar.zst, cut by count and by size); values are
# encoded by WebDataset's conventions (str UTF-8, int/float text, dict/list
# JSON, pyd pickle, bytes as they are) and Python's tarfile reads them back;
# hostile samples (no __key__, bad keys, a repeated extension or key, a
# value with no encoding) raise the right shardkit.Error subclass and the
# writer goes on; an exception in the `with` block leaves published shards
# and no manifest; a size, count or level its C field cannot hold is a
# UsageError, not wrapped round.
. "$(dirname "$0")/lib.sh"
need python3 cmp
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 150 >/dev/null || die "mkcorpus failed"
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python

# writes the corpus' samples, in key order, with the given writer options
cat >"$T/write.py" <<'PY'
import ast, os, sys
import shardkit
src, pattern, opts = sys.argv[1], sys.argv[2], ast.literal_eval(sys.argv[3])
samples = {}
for d, _, fs in os.walk(src):
    for f in fs:
        rel = os.path.relpath(os.path.join(d, f), src)
        key, ext = rel.split(".", 1)
        samples.setdefault(key.encode(), {})[ext] = open(os.path.join(d, f), "rb").read()
with shardkit.ShardWriter(pattern, **opts) as w:
    for k in sorted(samples):
        w.write(dict(samples[k], __key__=k.decode()))
print(w.stats["samples"], w.stats["shards"])
PY

same_dirs() {
    local a=$1 b=$2 f n=0
    for f in $(cd "$a" && ls); do
        cmp "$a/$f" "$b/$f" || die "$f differs between pack and ShardWriter"
        n=$((n + 1))
    done
    [ "$(ls "$b" | wc -l)" -eq "$n" ] || die "ShardWriter wrote other files than pack: $(ls "$b")"
    [ "$n" -ge 4 ] || die "only $n files"
}

step "the same bytes as shardkit pack: by count, by size, .tar.zst"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/pack1/t-%06d.tar" --max-count 40
expect_ok python3 "$T/write.py" "$T/c" "$T/w1/t-%06d.tar" "{'max_count': 40}"
assert_eq "$(cat "$OUT")" "150 4" "samples and shards"
same_dirs "$T/pack1" "$T/w1"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/pack2/t-%03d.tar" --max-size 100k
expect_ok python3 "$T/write.py" "$T/c" "$T/w2/t-%03d.tar" "{'maxsize': 102400}"
same_dirs "$T/pack2" "$T/w2"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/pack3/t-%06d.tar.zst" --max-count 60 --compress zstd:5
expect_ok python3 "$T/write.py" "$T/c" "$T/w3/t-%06d.tar.zst" "{'max_count': 60, 'compress_level': 5}"
same_dirs "$T/pack3" "$T/w3"
expect_ok "$SK_BIN" verify --deep "$T/w3/manifest.json"

step "WebDataset's encodings, read back by tarfile and shardkit.Dataset"
python3 - "$T" <<'PY' || die "encodings"
import json, pickle, sys, tarfile
import shardkit
T = sys.argv[1]
s = {"__key__": "a/b", "txt": "h\u00e9llo", "cls": 3, "f": 1.5, "flag": True,
     "json": {"x": [1, 2], "y": "z"}, "seg.json": [1, "two"], "raw": b"\0\1",
     "buf": bytearray(b"ab"), "pyd": {"k": (1, 2)}, "__url__": "not written", "_meta": "x"}
want = {"txt": "h\u00e9llo".encode(), "cls": b"3", "f": b"1.5", "flag": b"True",
        "json": json.dumps({"x": [1, 2], "y": "z"}).encode(), "seg.json": b'[1, "two"]',
        "raw": b"\0\1", "buf": b"ab"}
with shardkit.ShardWriter(T + "/enc/e-%03d.tar") as w:
    w.write(s)
    w.write({"__key__": "a/c", "txt": "second"})
    many = {"m%02d" % i: "v%d" % i for i in range(40)}
    w.write(dict(many, __key__="a/d"))
    for i in range(200):     # members freed and rewritten many times over
        w.write({"__key__": "z/%03d" % i, "txt": "t%d" % i * 50, "cls": i, "json": {"i": i}})
assert w.count == 203 and w.stats["samples"] == 203
with tarfile.open(T + "/enc/e-000.tar") as tf:
    got = {m.name: tf.extractfile(m).read() for m in tf}
assert pickle.loads(got.pop("a/b.pyd")) == {"k": (1, 2)}
assert got.pop("a/c.txt") == b"second"
for i in range(40):
    assert got.pop("a/d.m%02d" % i) == b"v%d" % i
for i in range(200):
    assert got.pop("z/%03d.txt" % i) == ("t%d" % i * 50).encode()
    assert got.pop("z/%03d.cls" % i) == b"%d" % i
    assert got.pop("z/%03d.json" % i) == b'{"i": %d}' % i
assert got == {"a/b." + k: v for k, v in want.items()}, {k: v for k, v in got.items() if want.get(k[4:]) != v}
d = shardkit.Dataset(T + "/enc").get("a/b")
assert d["json"] == want["json"] and d["cls"] == b"3"
assert shardkit.encode_value("x.npy", 3) == b"3"
print("ok")
PY

step "samples of many shapes (more than the writer keeps layouts for) read back"
python3 - "$T" <<'PY' || die "shapes"
import sys
import shardkit
T = sys.argv[1]
want = []
with shardkit.ShardWriter(T + "/shapes/s-%03d.tar") as w:
    for i in range(300):
        # 70 member sets, met in turn (each again after 70 others), key order varied
        s = {"e%02d" % (i % 70): b"x%d" % i, "__key__": "s%04d" % i, "cls": i}
        if i % 3 == 0:
            s = dict(reversed(list(s.items())), _meta="skipped")
        w.write(s)
        want.append({"e%02d" % (i % 70): b"x%d" % i, "cls": b"%d" % i})
got = [{k: v for k, v in s.items() if not k.startswith("__")} for s in shardkit.Dataset(T + "/shapes")]
assert got == want, [(i, a, b) for i, (a, b) in enumerate(zip(got, want)) if a != b][:3]
print("ok")
PY

step "hostile samples: the right Error, and the writer goes on"
python3 - "$T" <<'PY' || die "hostile samples"
import os, sys
import shardkit
T = sys.argv[1]

def expect(cls, code, words, fn):
    try:
        fn()
    except cls as e:
        assert isinstance(e, shardkit.Error) and e.code == code, (cls, type(e), e.code, str(e))
        assert all(w in str(e) for w in words), (words, str(e))
        return
    raise SystemExit("no %s" % cls.__name__)

w = shardkit.ShardWriter(T + "/h/h-%03d.tar", max_count=2)
w.write({"__key__": "k0", "txt": "ok"})
expect(shardkit.UsageError, 1, ["__key__"], lambda: w.write({"txt": "no key"}))
expect(shardkit.UsageError, 1, ["__key__", "int"], lambda: w.write({"__key__": 7, "txt": "x"}))
expect(shardkit.InputError, 3, [], lambda: w.write({"__key__": "k1", "": b"empty ext"}))
for bad in ("a.b", "../x", "a//b", "", "/abs"):
    expect(shardkit.InputError, 3, [], lambda: w.write({"__key__": bad, "txt": "x"}))
expect(shardkit.InputError, 3, [], lambda: w.write({"__key__": "k1", "jpg": b"1", "JPG": b"2"}))
expect(shardkit.InputError, 3, [], lambda: w.write({"__key__": "k1"}))
expect(shardkit.InputError, 3, ["k0"], lambda: w.write({"__key__": "k0", "txt": "again"}))
expect(shardkit.UsageError, 1, ["obj", "object"], lambda: w.write({"__key__": "k1", "obj": object()}))
for i in range(1, 5):
    w.write({"__key__": "k%d" % i, "txt": str(i)})
st = w.close()
assert st["samples"] == 5 and st["shards"] == 3, st
assert [s["txt"] for s in shardkit.Dataset(T + "/h")] == [b"ok", b"1", b"2", b"3", b"4"]
expect(shardkit.UsageError, 1, ["closed"], lambda: w.write({"__key__": "k9", "txt": "late"}))

# an exception in the with block: published shards stay, no manifest, no temporaries
try:
    with shardkit.ShardWriter(T + "/x/x-%03d.tar", max_count=2) as w2:
        for i in range(5):
            w2.write({"__key__": "k%d" % i, "txt": str(i)})
        raise RuntimeError("the producer failed")
except RuntimeError:
    pass
names = sorted(os.listdir(T + "/x"))
assert "manifest.json" not in names and not [n for n in names if n.endswith(".tmp")], names
assert names == ["x-000.tar", "x-000.tar.idx", "x-001.tar", "x-001.tar.idx"], names
assert len(shardkit.Dataset(T + "/x/x-{000..001}.tar")) == 4
# a pattern without an integer field, a directory that cannot be made
expect(shardkit.UsageError, 1, [], lambda: shardkit.ShardWriter(T + "/y/no-field.tar"))
open(T + "/file", "w").close()
expect(shardkit.Error, None or 2, [], lambda: shardkit.ShardWriter(T + "/file/sub/s-%03d.tar"))
# a name ending in .zst gets zstd unless told otherwise; told none, or a
# compression the writer does not write: refused before any file is made
with shardkit.ShardWriter(T + "/z/z-%03d.tar.zst") as w:
    w.write({"__key__": "k", "txt": "v"})
assert open(T + "/z/z-000.tar.zst", "rb").read(4) == b"\x28\xb5\x2f\xfd"
expect(shardkit.UsageError, 1, ["end in .zst"],
       lambda: shardkit.ShardWriter(T + "/z2/z-%03d.tar.zst", compress_level=0))
expect(shardkit.UsageError, 1, ["not gz"], lambda: shardkit.ShardWriter(T + "/z3/z-%03d.tar.gz"))
assert not os.path.exists(T + "/z2") and not os.path.exists(T + "/z3")
# a size or count its C field cannot hold is refused, not wrapped round
# (max_count=-1 would have been no limit at all)
for bad in (dict(max_count=-1), dict(max_size=2**64), dict(compress_level=2**40),
            dict(start=-3)):
    expect(shardkit.UsageError, 1, ["%s=%d is out of range" % list(bad.items())[0]],
           lambda: shardkit.ShardWriter(T + "/z4/z-%03d.tar", **bad))
assert not os.path.exists(T + "/z4")
print("ok")
PY
assert_no_tmp "$T/h"
echo "python_writer: ok"
