"""The compiled lookups (shardkit._ext) against the ctypes path they
replace: ds[i], negative i, slices, ds.get(key) and ds.__getitems__ give
the same samples and raise the same exceptions, from one thread or many;
a closed dataset raises; a damaged index raises shardkit.Error, never
crashes the interpreter (each hostile case runs in a child process).

The extension comes from `make` (build/python/_ext<suffix>, beside the
library) or pip; these tests skip when it is not built, and fail when it
is built but not used."""
import glob
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import threading

import pytest

import shardkit
from shardkit import dataset as dsmod

HERE = os.path.dirname(os.path.abspath(__file__))


def _ext_expected():
    """Whether an extension was built for this interpreter where the
    package looks (then it must be in use)."""
    lib = os.environ.get("SHARDKIT_LIB", "")
    import importlib.machinery
    return any(os.path.isfile(os.path.join(os.path.dirname(lib), "python", "_ext" + s))
               for s in importlib.machinery.EXTENSION_SUFFIXES)


@pytest.fixture(scope="module", autouse=True)
def need_ext():
    if os.environ.get("SHARDKIT_EXT") == "0":
        pytest.skip("SHARDKIT_EXT=0")
    if dsmod._EXT is None:
        assert not _ext_expected(), "the extension is built but shardkit.dataset did not load it"
        pytest.skip("shardkit._ext is not built")
    assert dsmod.BACKEND == "ext"


def ctypes_dataset(path, **kw):
    """A Dataset on the ctypes path (as when the extension is not built)."""
    ext, dsmod._EXT = dsmod._EXT, None
    try:
        return shardkit.Dataset(path, **kw)
    finally:
        dsmod._EXT = ext


@pytest.fixture
def pair(data):
    x, c = shardkit.Dataset(data), ctypes_dataset(data)
    assert x.backend == "ext" and c.backend == "ctypes"
    yield x, c
    x.close()
    c.close()


def same(a, b):
    assert list(a) == list(b)   # the members in the shard's order too
    assert a == b


def raises_same(f):
    """f(ds) on both paths raises the same exception class and message."""
    def run(ds):
        try:
            f(ds)
        except Exception as e:
            return type(e), str(e)
        raise AssertionError("no exception")
    return run


def test_every_sample_by_ordinal(pair, samples):
    x, c = pair
    assert len(x) == len(c) == len(samples)
    for i in range(len(c)):
        same(x[i], c[i])
        assert type(x[i]["jpg"]) is bytes and x[i]["__index__"] == i


def test_negative_and_slices(pair):
    x, c = pair
    n = len(c)
    for i in (-1, -2, -n, -n // 2):
        same(x[i], c[i])
    for sl in (slice(2, 9, 3), slice(-5, None), slice(None, None, -7), slice(4, 4)):
        got, want = x[sl], c[sl]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            same(a, b)


@pytest.mark.parametrize("i", [-10 ** 6, 10 ** 6, 2 ** 64, 2 ** 64 - 1, -2 ** 70, 2 ** 80])
def test_out_of_range(pair, i):
    x, c = pair
    r = raises_same(lambda ds: ds[i])
    got, want = r(x), r(c)
    assert got == want and issubclass(got[0], IndexError), (got, want)
    r = raises_same(lambda ds: ds.__getitems__([0, i]))
    got = r(x)
    assert issubclass(got[0], shardkit.SampleIndexError), got


@pytest.mark.parametrize("i", [1.0, True, "3x", None])
def test_bad_index_types(pair, i):
    x, c = pair
    for ds in (x, c):
        with pytest.raises((TypeError, KeyError)):
            ds[i]
    with pytest.raises(TypeError):
        x.__getitems__([0, i]) if not isinstance(i, str) else x.__getitems__([0, 1.5])


def test_get_by_key(pair, samples):
    x, c = pair
    for s in samples:
        k = s["__key__"]
        same(x.get(k), c.get(k))
        same(x.get(k.encode()), c.get(k))
        same(x[k], c[k])
    r = raises_same(lambda ds: ds.get("no/such/key"))
    got, want = r(x), r(c)
    assert got == want and issubclass(got[0], KeyError), (got, want)
    assert x.get(samples[0]["__key__"], exts=["cls"]) == c.get(samples[0]["__key__"], exts=["cls"])


def test_getitems(pair):
    x, c = pair
    n = len(c)
    rnd = random.Random(5)
    idx = [rnd.randrange(-n, n) for _ in range(700)]   # several of the ctypes path's buffers
    got, want = x.__getitems__(idx), c.__getitems__(idx)
    assert len(got) == len(want) == len(idx)
    for a, b in zip(got, want):
        same(a, b)
    assert x.__getitems__([]) == []
    np = pytest.importorskip("numpy")
    arr = np.array(idx[:20], dtype=np.int64)
    for a, b in zip(x.__getitems__(list(arr)), c.__getitems__(list(arr))):
        same(a, b)
    for a, b in zip(x.__getitems__(tuple(idx[:9])), c.__getitems__(tuple(idx[:9]))):
        same(a, b)


def test_closed_raises(data):
    ds = shardkit.Dataset(data)
    getter = ds._x
    ds.close()
    for f in (lambda: ds[0], lambda: ds.get("d0/s0000"), lambda: ds.__getitems__([0])):
        with pytest.raises(shardkit.UsageError, match="closed"):
            f()
    # the Getter itself, kept past the close, refuses too (no use of a freed handle)
    with pytest.raises(shardkit.UsageError, match="closed"):
        getter.get(None, 0)
    with pytest.raises(shardkit.UsageError, match="closed"):
        getter.get_many([0])
    # one made without its dataset raises too
    bare = type(getter).__new__(type(getter))
    for f in (lambda: bare.get(None, 0), lambda: bare.get(b"k", 0), lambda: bare.get_many([0])):
        with pytest.raises(ValueError, match="not initialised"):
            f()


def test_threads(data):
    """Eight threads each read every sample in an order of their own from
    one dataset: each gets what one thread alone gets."""
    c = ctypes_dataset(data)
    want = [c[i] for i in range(len(c))]
    c.close()
    ds = shardkit.Dataset(data)
    errors = []

    def work(seed):
        rnd = random.Random(seed)
        order = list(range(len(want))) * 20
        rnd.shuffle(order)
        try:
            for at in range(0, len(order), 17):
                chunk = order[at:at + 17]
                if seed % 2:
                    got = ds.__getitems__(chunk)
                else:
                    got = [ds[i] if i % 3 else ds.get(want[i]["__key__"]) for i in chunk]
                for i, s in zip(chunk, got):
                    if s != want[i]:
                        errors.append((seed, i))
                        return
        except Exception as e:   # noqa: BLE001 - reported below
            errors.append((seed, repr(e)))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ds.close()
    assert not errors, errors[:5]


# ------------------------------------------------------------------ hostile

CHILD = r'''
import sys
sys.path.insert(0, sys.argv[1])
import shardkit
from shardkit import dataset as dsmod
path, ext = sys.argv[2], sys.argv[3] == "ext"
if not ext:
    dsmod._EXT = None
out = []
ds = shardkit.Dataset(path, trust_index=True)
assert ds.backend == ("ext" if ext else "ctypes")
def run(name, f):
    try:
        s = f()
        out.append("%s ok %r" % (name, sorted((k, v if k.startswith("__") else len(v)) for k, v in s.items())
                                  if isinstance(s, dict) else [len(t) for t in s]))
    except shardkit.Error as e:
        out.append("%s %s %s" % (name, type(e).__name__, e))
for i in range(int(sys.argv[4])):
    run("at%d" % i, lambda: ds[i])
run("key", lambda: ds.get("d0/s0000"))
run("many", lambda: ds.__getitems__(list(range(int(sys.argv[4])))))
print("\n".join(out))
'''


def child(path, backend, n):
    """The child's answers.  The CRC32C a MismatchError reports of a
    member is masked: where a damaged index has members overlap, the
    library's one read of a sample's span compacts them over each other
    and checksums what is left (an error either way), while the extension
    reads each member from the shard."""
    pkg = os.path.dirname(os.path.dirname(shardkit.__file__))
    p = subprocess.run([sys.executable, "-c", CHILD, pkg, path, backend, str(n)],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, "%s crashed (exit %d): %s" % (backend, p.returncode, p.stderr[-1500:])
    return re.sub(r"CRC32C [0-9a-f]{8}, the index", "CRC32C ?, the index", p.stdout)


def damaged(tmp_path, data, name, edit):
    """A copy of the first shard with its index edited by edit(bytearray)
    (the header, and its CRC, left alone: trust_index skips the body's)."""
    d = tmp_path / name
    d.mkdir()
    shard = sorted(glob.glob(os.path.join(data, "*.tar")))[0]
    shutil.copy(shard, d / "t.tar")
    b = bytearray(open(shard + ".idx", "rb").read())
    edit(b)
    (d / "t.tar.idx").write_bytes(bytes(b))
    return str(d / "t.tar")


def member_field(b, m, off, fmt, value):
    s = struct.unpack_from("<Q", b, 32)[0]
    struct.pack_into(fmt, b, 96 + 48 * s + 32 * m + off, value)


def sample_field(b, i, off, fmt, value):
    struct.pack_into(fmt, b, 96 + 48 * i + off, value)


HOSTILE = {
    # a member far past the end of the shard: refused before any buffer is sized
    "huge_member": (lambda b: member_field(b, 0, 8, "<Q", 1 << 62), "CorruptError"),
    "member_past_end": (lambda b: member_field(b, 1, 0, "<Q", (1 << 63) + 5), "CorruptError"),
    # more members than the table holds
    "member_count": (lambda b: sample_field(b, 0, 44, "<I", 0xFFFFFFFF), "CorruptError"),
    "first_member": (lambda b: sample_field(b, 2, 40, "<I", 0xFFFFFFF0), "CorruptError"),
    # a key and an extension pointing outside the string pool
    "key_offset": (lambda b: sample_field(b, 1, 32, "<I", 0xFFFFFF00), "CorruptError"),
    "ext_length": (lambda b: member_field(b, 0, 24, "<I", 0x7FFFFFFF), "CorruptError"),
    # data that no longer matches its CRC32C: of the first sample read (by
    # the library, which proves the shard) and of a later one (read with
    # the extension's own preadv once the shard is proven)
    "crc": (lambda b: member_field(b, 0, 16, "<I", 0x12345678), "MismatchError"),
    "crc_later": (lambda b: member_field(b, first_member(b, 2) + 1, 16, "<I", 0x12345678),
                  "MismatchError"),
    # a later sample's member moved onto another's bytes, or past its span
    "offset_later": (lambda b: member_field(b, first_member(b, 3), 0, "<Q", 512), "MismatchError"),
    # (members outside their sample's span: the library reads them one by
    # one, so the extension must not take its one-read path either)
    "span_later": (lambda b: sample_field(b, 2, 8, "<Q", 512), "at2 ok"),
}


def first_member(b, i):
    return struct.unpack_from("<I", b, 96 + 48 * i + 40)[0]


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_damaged_index(tmp_path, data, name):
    edit, want = HOSTILE[name]
    path = damaged(tmp_path, data, name, edit)
    got, ref = child(path, "ext", 4), child(path, "ctypes", 4)
    assert want in got, got
    assert got == ref, "ext:\n%s\nctypes:\n%s" % (got, ref)


def test_random_damage(tmp_path, data):
    """Bytes of an index body overwritten at random (24 copies;
    PYEXT_SEED and PYEXT_COPIES run others): the compiled path answers as
    the ctypes path does, and never crashes."""
    rnd = random.Random(int(os.environ.get("PYEXT_SEED", "11")))
    shard = sorted(glob.glob(os.path.join(data, "*.tar")))[0]
    size = os.path.getsize(shard + ".idx")
    for k in range(int(os.environ.get("PYEXT_COPIES", "24"))):
        hits = [(rnd.randrange(96, size), rnd.randrange(256)) for _ in range(rnd.choice((1, 4, 16)))]

        def edit(b, hits=hits):
            for at, v in hits:
                b[at] = v
        path = damaged(tmp_path, data, "r%d" % k, edit)
        got, ref = child(path, "ext", 10), child(path, "ctypes", 10)
        assert got == ref, "copy %d %r\next:\n%s\nctypes:\n%s" % (k, hits, got, ref)


def test_truncated_shard(tmp_path, data):
    """A shard cut short after it was indexed: the samples before the cut
    are served and those past it raise (docs/get.md, the cut-short rule),
    the same on both paths."""
    path = damaged(tmp_path, data, "cut", lambda b: None)
    n = len(ctypes_dataset(path))
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    # the offset named may be the sample's or its first member's past the end
    past = re.compile(r" \((sample|member) at \d+\)$", re.M)
    got, ref = (past.sub("", child(path, b, n)) for b in ("ext", "ctypes"))
    assert got == ref, (got, ref)
    lines = got.splitlines()
    assert lines[0].startswith("at0 ok"), lines[0]
    assert " ok " not in lines[n - 1] and "Error" in lines[n - 1], lines[n - 1]


def test_cut_after_first_read(tmp_path, data):
    """A shard cut short after the dataset proved it and read from it (the
    samples after are the extension's preadv): an error, as the ctypes
    path gives, not short data."""
    path = damaged(tmp_path, data, "cut2", lambda b: None)
    x, c = shardkit.Dataset(path), ctypes_dataset(path)
    n = len(c)
    same(x[0], c[0])
    with open(path, "r+b") as f:
        f.truncate(os.path.getsize(path) // 2)
    for i in range(n // 2, n):
        with pytest.raises(shardkit.Error) as e1:
            x[i]
        with pytest.raises(shardkit.Error) as e2:
            c[i]
        assert type(e1.value) is type(e2.value), (e1.value, e2.value)
    x.close()
    c.close()
