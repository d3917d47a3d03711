"""index_check.py - independent checks for the index e2e tests (Python
tarfile, not shardkit's reader).

  index_check.py corpus DIR            make the test corpus
  index_check.py paxtar DIR OUT        WebDataset-style tar: PAX_FORMAT, a pax header per member
  index_check.py members TAR           print "key<TAB>ext<TAB>offset_data<TAB>size<TAB>name" (WebDataset rule)
  index_check.py dali TAR DALIIDX      compare a DALI v1.2 index with tarfile offset_data
"""
import os
import sys
import tarfile

def corpus(d):
    os.makedirs(d, exist_ok=True)
    files = {}
    sizes = [0, 1, 511, 512, 513, 4096, 10000]
    for i, sz in enumerate(sizes):
        files[f"s/k{i:03d}.jpg"] = bytes((i * 7 + j * 13) & 255 for j in range(sz))
        files[f"s/k{i:03d}.cls"] = b"%d\n" % i
    files["s/k007.seg.png"] = b"segmentation" * 50
    files["s/UP.JPG"] = b"upper case extension"
    files["s/UP.txt"] = b"caption"
    # a 200-byte name that ustar can still split at a '/'
    long_dir = "l/" + "d" * 120 + "/"
    long_key = long_dir + "f" * (200 - len(long_dir) - 4)
    files[long_key + ".bin"] = b"long name payload" * 40
    files[long_key + ".txt"] = b"long"
    # non-ASCII (UTF-8) names
    files["u/na\u00efve-\u00f1\u00fc.json"] = '{"caption": "caf\u00e9"}'.encode()
    files["u/na\u00efve-\u00f1\u00fc.jpg"] = os.urandom(3000)
    for rel, data in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    # a list in sample order (members of a key adjacent)
    with open(os.path.join(d, "..", "list.txt"), "w", encoding="utf-8") as f:
        for rel in sorted(files):
            f.write(rel + "\n")

def paxtar(d, out):
    names = open(os.path.join(d, "..", "list.txt"), encoding="utf-8").read().split("\n")
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tf:
        for rel in filter(None, names):
            data = open(os.path.join(d, rel), "rb").read()
            ti = tarfile.TarInfo(rel)
            ti.size = len(data)
            ti.mtime = 1700000000
            # what webdataset's TarWriter does: a pax header on every member
            ti.pax_headers = {"comment": "x"}
            import io
            tf.addfile(ti, io.BytesIO(data))
        meta = b'{"meta": 1}'
        ti = tarfile.TarInfo("__meta__")
        ti.size = len(meta)
        import io
        tf.addfile(ti, io.BytesIO(meta))

def split(name):
    base = name.rfind("/") + 1
    dot = name.find(".", base)
    return name[:dot], name[dot + 1:]

def members(tarpath):
    with tarfile.open(tarpath, "r:") as tf:
        for m in tf:
            if not m.isreg():
                continue
            n = m.name
            if "/" not in n and n.startswith("__") and n.endswith("__"):
                continue
            k, e = split(n)
            print(f"{k}\t{e.lower()}\t{m.offset_data}\t{m.size}\t{n}")

def wds2idx_split(name):
    """NVIDIA DALI's wds2idx rule, restated: split at the first dot of the
    basename; with no dot there, the base is the name without its last
    character and the extension is the whole name."""
    dot = name.find(".", name.rfind("/") + 1)
    return (name[:dot], name[dot + 1:]) if dot >= 0 else (name[:-1], name)


def dali(tarpath, idxpath):
    """The DALI index lists what wds2idx lists: every regular file but
    hidden ones (empty basename before the dot), members of adjacent equal
    bases on one line, in tar order; metadata and key-less members too."""
    with tarfile.open(tarpath, "r:") as tf:
        want, last = [], None
        for m in tf:
            if not m.isreg():
                continue
            base, ext = wds2idx_split(m.name)
            if not base or base.endswith("/"):
                continue
            if base != last:
                want.append([])
                last = base
            want[-1].append((ext, m.offset_data, m.size, m.name))
    lines = open(idxpath, encoding="utf-8").read().split("\n")
    head = lines[0].split()
    assert head[0] == "v1.2", head
    assert lines[-1] == "", "no line break at the end"
    rows = lines[1:-1]
    assert int(head[1]) == len(rows), (head, len(rows))
    got = []
    for l in rows:
        f = l.split(" ")
        assert len(f) % 4 == 0, l
        got.append([(f[i], int(f[i + 1]), int(f[i + 2]), f[i + 3]) for i in range(0, len(f), 4)])
    assert got == want, "\n".join(f"{a} != {b}" for a, b in zip(got, want) if a != b) or f"{len(got)} vs {len(want)}"
    print(f"dali ok: {len(got)} samples")

if __name__ == "__main__":
    cmd = sys.argv[1]
    {"corpus": lambda: corpus(sys.argv[2]), "paxtar": lambda: paxtar(sys.argv[2], sys.argv[3]),
     "members": lambda: members(sys.argv[2]), "dali": lambda: dali(sys.argv[2], sys.argv[3])}[cmd]()
