#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# python_dataset.sh - shardkit.Dataset (random access through the indexes)
# returns, by global ordinal and by key, exactly the sample `shardkit get`
# returns, for plain and .tar.zst shards, through a manifest, a directory,
# a brace pattern and one shard; many threads reading at random at once get
# the same samples, by ordinal, by key and in batches at once; samples past
# a thread's buffer grow it (or get their own); and hostile cases raise the right
# shardkit.Error subclass: an ordinal out of range, a missing key, a
# corrupt index, an index of another shard, a damaged member, a missing
# dataset; sk_dataset_get refuses too small a buffer with the size needed;
# batches (__getitems__, big samples among them, an ordinal out of range
# in the middle) give what ds[i] gives.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 130 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/plain/t-%03d.tar" --max-count 40
expect_ok "$SK_BIN" pack "$T/c" -o "$T/zst/t-%03d.tar.zst" --max-count 40 --compress zstd
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python

step "by ordinal and by key: what shardkit get returns"
python3 - "$T" "$SK_BIN" <<'PY' || die "Dataset differs from shardkit get"
import io, subprocess, sys, tarfile
import shardkit
T, sk = sys.argv[1], sys.argv[2]

def get(dataset, q):
    """The sample `shardkit get --tar` writes, as a dict."""
    tar = subprocess.run([sk, "get", dataset, q, "--tar", "-o", "-"], check=True,
                         stdout=subprocess.PIPE).stdout
    d = {}
    with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
        for m in tf:
            key, ext = m.name.split(".", 1)
            d.setdefault("__key__", key)
            d[ext] = tf.extractfile(m).read()
    return d

def strip(s):
    return {k: v for k, v in s.items() if k not in ("__url__", "__index__", "__ordinal__")}

for kind in ("plain", "zst"):
    sfx = "tar" if kind == "plain" else "tar.zst"
    for url, n in ((T + "/" + kind + "/manifest.json", 130), (T + "/" + kind, 130),
                   (T + "/" + kind + "/t-{000..003}." + sfx, 130),
                   (T + "/" + kind + "/t-001." + sfx, 40)):
        ds = shardkit.Dataset(url)
        assert len(ds) == n, (url, len(ds))
        for i in sorted({0, 1, 39, 40, 41, n // 2, n - 1} & set(range(n))):
            s = ds[i]
            assert s["__index__"] == i, (url, i, s["__index__"])
            want = get(url, "#%d" % i)
            assert strip(s) == want, (url, i, sorted(s), sorted(want))
            by_key = ds.get(s["__key__"])
            assert by_key == s, (url, s["__key__"])
            assert ds.index_of(s["__key__"]) == i and s["__key__"] in ds
        assert ds[-1] == ds[n - 1] and [x["__index__"] for x in ds[2:5]] == [2, 3, 4]
        assert "nosuch" not in ds
    # every sample once, against the source files themselves
    ds = shardkit.Dataset(T + "/" + kind)
    seen = set()
    for s in ds:
        for ext in ("jpg", "cls", "json"):
            assert s[ext] == open("%s/c/%s.%s" % (T, s["__key__"], ext), "rb").read(), s["__key__"]
        seen.add(s["__key__"])
    assert len(seen) == 130
    only = ds.get("n00000/00000077", exts=["cls"])
    assert set(only) == {"__key__", "__url__", "__index__", "__ordinal__", "cls"}, sorted(only)
    info = ds.info(77)
    assert info["key"] == "n00000/00000077" and info["shard"] == 1 and info["ordinal"] == 37, info
print("ok")
PY

step "threads: random reads at once give the same samples"
python3 - "$T" <<'PY' || die "threaded reads differ"
import random, sys, threading
import shardkit
T = sys.argv[1]
for kind in ("plain", "zst"):
    want = [s["__key__"] for s in shardkit.Dataset(T + "/" + kind)]
    ds = shardkit.Dataset(T + "/" + kind + "/manifest.json")   # fresh: every shard still cold
    bad = []
    def work(seed):
        rnd = random.Random(seed)
        for _ in range(300):
            i = rnd.randrange(len(ds))
            # by ordinal, by key and in batches at once
            s = ds.__getitems__([i, 0])[0] if i % 3 == 0 else ds[i] if i % 2 else ds.get(want[i])
            if s["__key__"] != want[i] or s["jpg"] != open("%s/c/%s.jpg" % (T, want[i]), "rb").read():
                bad.append(i)
    th = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    [t.start() for t in th]
    [t.join() for t in th]
    assert not bad, (kind, bad[:5])
print("ok")
PY

step "big samples (past the reused buffer), a forked child, numpy-style ordinals"
python3 - "$T" <<'PY' || die "big samples / fork"
import os, sys
import shardkit
T = sys.argv[1]
big = bytes(range(256)) * (5 << 12)          # 5 MiB: more than a thread's kept buffer
with shardkit.ShardWriter(T + "/big/b-%03d.tar") as w:
    for i in range(6):
        w.write({"__key__": "k%d" % i, "bin": big[i:] if i % 2 else b"x%d" % i, "cls": i})
ds = shardkit.Dataset(T + "/big")
for rep in range(2):                          # cold, then warm (the one-call path)
    for i in (1, 0, 3, 2, 5, 4):
        s = ds[i]
        assert s["bin"] == (big[i:] if i % 2 else b"x%d" % i) and s["cls"] == b"%d" % i, i
        assert s["__key__"] == "k%d" % i and s["__index__"] == i and s["__url__"].endswith("b-000.tar")
        assert ds.get("k%d" % i) == s
class Ordinal:
    def __index__(self): return 3
    def __int__(self): return 3
assert ds[Ordinal()]["__key__"] == "k3"
try:                                          # a bool is not an ordinal (issue 25)
    ds[True]
    raise SystemExit("ds[True] read a sample")
except TypeError:
    pass
# a sample past the thread's first buffer (256 KiB) but under what it keeps
# (4 MiB): the buffer grows, and serves the small samples after it
with shardkit.ShardWriter(T + "/mid/m-%03d.tar") as w:
    for i in range(4):
        w.write({"__key__": "m%d" % i, "bin": big[:(1 << 20) + i] if i % 2 else b"m%d" % i})
mid = shardkit.Dataset(T + "/mid")
for i in (0, 1, 2, 3, 1, 0):
    assert mid[i]["bin"] == (big[:(1 << 20) + i] if i % 2 else b"m%d" % i), i
    assert mid.get("m%d" % i) == mid[i]
# a dataset opened before a fork reads in the child (opened anew there)
pid = os.fork()
if pid == 0:
    ok = ds[5]["bin"] == big[5:] and ds.get("k2")["bin"] == b"x2"
    os._exit(0 if ok else 1)
_, st = os.waitpid(pid, 0)
assert os.WEXITSTATUS(st) == 0, st
assert ds[4]["bin"] == b"x4"
print("ok")
PY

step "batches (__getitems__) give what ds[i] gives"
python3 - "$T" <<'PY' || die "batches"
import random, sys
import shardkit
T = sys.argv[1]
for sub in ("plain", "zst", "big", "mid"):
    ds = shardkit.Dataset(T + "/" + sub)
    n = len(ds)
    rnd = random.Random(7)
    idx = [rnd.randrange(n) for _ in range(600)] + [-1, -n, 0]
    one = [ds[i] for i in idx]
    assert ds.__getitems__(idx) == one, sub          # 600 at once: many buffer-fulls
    assert ds.__getitems__([]) == []
    for bad in (n, -n - 1, 2**64 + 1):               # out of range, even mid-batch
        try:
            ds.__getitems__([0, 1, bad, 2])
            raise SystemExit("no error for #%d in a batch" % bad)
        except IndexError as e:
            assert isinstance(e, shardkit.NotFoundError) and "#%d" % bad in str(e), str(e)
    assert ds.__getitems__([1, 0]) == [ds[1], ds[0]]  # the dataset still serves after
    # an ordinal past what a uint64 holds is out of range, not wrapped round
    for call in (lambda: ds[2**64 + 1], lambda: ds.read(2**64 + 1, exts=["cls"]),
                 lambda: ds.info(2**64 + 1), lambda: ds[-2**65]):
        try:
            call()
            raise SystemExit("an ordinal past 2**64 read a sample")
        except IndexError as e:
            assert isinstance(e, shardkit.NotFoundError), type(e)
print("ok")
PY

step "hostile: out of range, missing key, corrupt index, foreign index, damaged member"
cp -r "$T/plain" "$T/bad"
python3 - "$T" <<'PY' || die "hostile cases"
import os, shutil, sys
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

ds = shardkit.Dataset(T + "/plain")
expect(shardkit.SampleIndexError, 8, ["#130", "130"], lambda: ds[130])
expect(IndexError, 8, [], lambda: ds[-131])
expect(shardkit.KeyNotFoundError, 8, ["nosuch"], lambda: ds.get("nosuch"))
expect(KeyError, 8, [], lambda: ds.get("n00000/0000007"))
expect(shardkit.NotFoundError, 8, ["nothing"], lambda: shardkit.Dataset(T + "/nothing"))

# a flipped byte in an index body: refused by its checksum
with open(T + "/bad/t-001.tar.idx", "r+b") as f:
    f.seek(os.path.getsize(T + "/bad/t-001.tar.idx") - 20)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 0xFF]))
bad = shardkit.Dataset(T + "/bad")
assert bad[5]["__key__"] == "n00000/00000005"            # shard 0 is sound
expect(shardkit.CorruptError, 4, ["t-001.tar.idx"], lambda: bad[45])
# an index that belongs to another shard
shutil.copy(T + "/plain/t-000.tar.idx", T + "/bad/t-002.tar.idx")
expect(shardkit.MismatchError, 9, ["t-002"], lambda: shardkit.Dataset(T + "/bad/t-002.tar")[0])
# a damaged member: its CRC32C no longer matches
info = ds.info(3)
off = None
with open(T + "/plain/t-000.tar", "rb") as f:
    data = f.read()
shutil.copy(T + "/plain/t-000.tar", T + "/bad/t-000.tar")
shutil.copy(T + "/plain/t-000.tar.idx", T + "/bad/t-000.tar.idx")
jpg = open(T + "/c/n00000/00000003.jpg", "rb").read()
at = data.index(jpg)
with open(T + "/bad/t-000.tar", "r+b") as f:
    f.seek(at + len(jpg) // 2)
    f.write(b"\0" if jpg[len(jpg) // 2] else b"\1")
one = shardkit.Dataset(T + "/bad/t-000.tar")
assert one[2]["__key__"] == "n00000/00000002"
expect(shardkit.MismatchError, 9, ["CRC32C", "00000003.jpg"], lambda: one[3])
expect(shardkit.MismatchError, 9, ["CRC32C"], lambda: one.get("n00000/00000003"))
# the whole-sample call refuses too little room rather than writing past it
import ctypes
from shardkit import _lib
h = ds._at(7)
ms = (_lib.MemberRef * 3)()
buf = ctypes.create_string_buffer(64)
err = _lib._Error()
rc = ds._lib.sk_dataset_read_sample(ds._ds, ctypes.byref(h), buf, 64, ms, 1, ctypes.byref(err))
assert rc == 1 and b"room for 1 members" in err.msg, (rc, err.msg)
rc = ds._lib.sk_dataset_read_sample(ds._ds, ctypes.byref(h), buf, 64, ms, 3, ctypes.byref(err))
assert rc == 1 and b"buffer of 64 bytes" in err.msg, (rc, err.msg)
# the one-call lookup and read (sk_dataset_get): too small a buffer is
# refused with the size it needs, and that size serves it
res = _lib.GetResult()
res.struct_size = ctypes.sizeof(res)
rc = ds._lib.sk_dataset_get(ds._ds, None, 0, 7, buf, 64, ctypes.byref(res), ctypes.byref(err))
assert rc == 1 and b"buffer of 64 bytes" in err.msg and res.need > 64, (rc, err.msg, res.need)
big_enough = ctypes.create_string_buffer(res.need)
rc = ds._lib.sk_dataset_get(ds._ds, b"n00000/00000007", 15, 0, big_enough, res.need,
                            ctypes.byref(res), ctypes.byref(err))
assert rc == 0 and res.hit.global_ordinal == 7, (rc, err.msg)
assert ctypes.string_at(res.key) == b"n00000/00000007"
rc = ds._lib.sk_dataset_get(ds._ds, None, 0, 1 << 40, big_enough, res.need, ctypes.byref(res),
                            ctypes.byref(err))
assert rc == 8 and res.need == 0, (rc, err.msg)
# a closed dataset
ds.close()
expect(shardkit.UsageError, 1, ["closed"], lambda: ds[0])
print("ok")
PY
echo "python_dataset: ok"
