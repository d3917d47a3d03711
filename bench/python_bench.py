#!/usr/bin/env python3
"""Python side of `make bench` (bench/bench_python.sh): the shardkit package
against the standard library doing what the WebDataset family does (the
webdataset and wids packages cannot be installed here; when they are
importable, bench_python.sh times them too, with the modes marked "real").

  write SOURCE N -o PATTERN [--max-size S]   shardkit.ShardWriter: N samples
        made in memory (an ETL step's output): the members of SOURCE's first
        1,000 samples, loaded once, cycled under new keys
  write-tar SOURCE N -o PATTERN [--max-size S]  the same through
        tarfile_writer.py's re-creation of webdataset.ShardWriter
  write-wds SOURCE N -o PATTERN [--max-size S]  the real webdataset.ShardWriter
  random DIR N SEED                        shardkit.Dataset: N samples at random
        global ordinals, every member read, one ds[i] at a time
  random-batch DIR N SEED                  the same ordinals in batches of 64
        through ds.__getitems__, as a PyTorch DataLoader (batch_size=64)
        fetches from a map-style dataset that has it (wids has not: the
        loader calls its [i] once per index, as random-wids does)
  random-tar DIR N SEED                    the same through a wids-style
        reader: sample counts from the manifest (as wids' shard index gives
        them), each shard opened on first use, its tar headers scanned once
        into an index (wids does this when it opens a shard), then a seek and
        a read per member
  random-wids WIDS_JSON N SEED             the real wids.ShardListDataset
  seq DIR                                  shardkit.Reader over the shards
  seq-tar SHARD...                         tarfile streaming iteration, the core
        of WebDataset's reader
  seq-wds SHARD...                         the real webdataset.WebDataset
  order DIR N SEED                         shardkit.torch.StreamingDataset: the
        global order (shards shuffled, samples shuffled within windows of 8
        shards), N samples, every member read
  order-wds N SEED SHARD...                the real webdataset pipeline for
        training: WebDataset(shards, resampled=True, shardshuffle=False)
        (resampled: shards drawn at random; shardshuffle is moot then)
        with a 1,000-sample shuffle buffer, N samples
Each prints "samples=N bytes=B".  With PB_LOOP_LOG set, a line "MODE WALL CPU"
is appended to that file: the seconds of the work alone, timed after every
package the mode uses is imported (the real webdataset and wids import
torch, about a second, which a whole-process time would count as theirs;
a training job has torch loaded already).
"""
import bisect
import json
import os
import random
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def _pool(src, n):
    """The first n samples of src, loaded: [{ext: bytes}]."""
    from tarfile_writer import samples
    pool = []
    for _, paths in samples([src]):
        m = {}
        for ext, p in paths.items():
            with open(p, "rb") as f:
                m[ext] = f.read()
        pool.append(m)
        if len(pool) == n:
            break
    return pool


def _write_args(argv):
    from tarfile_writer import parse_size
    size = parse_size(argv[argv.index("--max-size") + 1]) if "--max-size" in argv else 0
    return _pool(argv[0], 1000), int(argv[1]), argv[argv.index("-o") + 1], size


def write(argv):
    import shardkit
    pool, n, pattern, size = _write_args(argv)
    with shardkit.ShardWriter(pattern, max_size=size) as w:
        for i in range(n):
            w.write(dict(pool[i % len(pool)], __key__="s%08d" % i))
    print("samples=%d shards=%d" % (n, w.stats["shards"]))


def write_tar(argv):
    import tarfile_writer
    pool, n, pattern, size = _write_args(argv)
    w = tarfile_writer.ShardWriter(pattern, 1 << 62, size or 3e9, tarfile.PAX_FORMAT)
    for i in range(n):
        w.write("s%08d" % i, pool[i % len(pool)])
    w.finish()
    print("samples=%d shards=%d" % (n, w.shard))


def write_wds(argv):
    import webdataset as wds
    pool, n, pattern, size = _write_args(argv)
    with wds.ShardWriter(pattern, maxsize=size or 3e9, verbose=0) as w:
        for i in range(n):
            w.write(dict(pool[i % len(pool)], __key__="s%08d" % i))
    print("samples=%d" % n)


def random_sk(argv):
    import shardkit
    ds = shardkit.Dataset(argv[0])
    rnd = random.Random(int(argv[2]))
    total = len(ds)
    b = 0
    for _ in range(int(argv[1])):
        s = ds[rnd.randrange(total)]
        b += sum(len(v) for k, v in s.items() if not k.startswith("__"))
    print("samples=%s bytes=%d" % (argv[1], b))


def random_sk_batch(argv):
    import shardkit
    ds = shardkit.Dataset(argv[0])
    rnd = random.Random(int(argv[2]))
    total, n = len(ds), int(argv[1])
    b = 0
    for at in range(0, n, 64):
        for s in ds.__getitems__([rnd.randrange(total) for _ in range(min(64, n - at))]):
            b += sum(len(v) for k, v in s.items() if not k.startswith("__"))
    print("samples=%s bytes=%d" % (argv[1], b))


class TarShard:
    """A shard opened the way wids opens one: its headers scanned once into
    an index of samples, each a list of (ext, data offset, size)."""

    def __init__(self, path):
        self.f = open(path, "rb")
        self.samples = []
        cur = None
        with tarfile.open(path, "r:") as tf:
            for m in tf:
                if not m.isreg():
                    continue
                key, ext = m.name.split(".", 1)
                if cur is None or cur[0] != key:
                    cur = (key, [])
                    self.samples.append(cur)
                cur[1].append((ext, m.offset_data, m.size))

    def read(self, i):
        key, members = self.samples[i]
        d = {"__key__": key}
        for ext, off, size in members:
            self.f.seek(off)
            d[ext] = self.f.read(size)
        return d


def random_tar(argv):
    d = argv[0]
    man = json.load(open(os.path.join(d, "manifest.json")))
    urls = [os.path.join(d, s["url"]) for s in man["shards"]]
    starts, acc = [], 0
    for s in man["shards"]:
        starts.append(acc)
        acc += s["samples"]
    shards = {}
    rnd = random.Random(int(argv[2]))
    b = 0
    for _ in range(int(argv[1])):
        i = rnd.randrange(acc)
        k = bisect.bisect_right(starts, i) - 1
        sh = shards.get(k)
        if sh is None:
            sh = shards[k] = TarShard(urls[k])
        s = sh.read(i - starts[k])
        b += sum(len(v) for kk, v in s.items() if not kk.startswith("__"))
    print("samples=%s bytes=%d" % (argv[1], b))


def random_wids(argv):
    import wids
    # raw bytes, as the others; local shards read in place (the default
    # would first copy each into wids' cache directory)
    ds = wids.ShardListDataset(argv[0], transformations=[], localname=lambda url: url)
    rnd = random.Random(int(argv[2]))
    b = 0
    for _ in range(int(argv[1])):
        s = ds[rnd.randrange(len(ds))]
        # wids hands out members as streams: read each, as the others do
        b += sum(len(v.read()) for k, v in s.items() if not k.startswith("__"))
    print("samples=%s bytes=%d" % (argv[1], b))


def seq_sk(argv):
    import shardkit
    n = b = 0
    for s in shardkit.Reader(argv[0], rank=0, world_size=1, worker=0, num_workers=1):
        n += 1
        b += sum(len(v) for k, v in s.items() if not k.startswith("__"))
    print("samples=%d bytes=%d" % (n, b))


def seq_tar(argv):
    n = b = 0
    for path in argv:
        with tarfile.open(path, mode="r|") as tf:
            cur = None
            for m in tf:
                if not m.isreg():
                    continue
                key, _ = m.name.split(".", 1)
                b += len(tf.extractfile(m).read())
                if key != cur:
                    cur = key
                    n += 1
    print("samples=%d bytes=%d" % (n, b))


def seq_wds(argv):
    import webdataset as wds
    n = b = 0
    for s in wds.WebDataset(argv, shardshuffle=False):
        n += 1
        b += sum(len(v) for k, v in s.items() if not k.startswith("__") and isinstance(v, bytes))
    print("samples=%d bytes=%d" % (n, b))


def order_sk(argv):
    from shardkit.torch import StreamingDataset
    n, b, want = 0, 0, int(argv[1])
    for s in StreamingDataset(argv[0], seed=int(argv[2]), shuffle=True, shuffle_window=8):
        b += sum(len(v) for k, v in s.items() if not k.startswith("__"))
        n += 1
        if n == want:
            break
    print("samples=%d bytes=%d" % (n, b))


def order_wds(argv):
    import webdataset as wds
    n, b, want = 0, 0, int(argv[0])
    ds = wds.WebDataset(argv[2:], resampled=True, shardshuffle=False, seed=int(argv[1])).shuffle(1000)
    for s in ds:
        b += sum(len(v) for k, v in s.items() if not k.startswith("__") and isinstance(v, bytes))
        n += 1
        if n == want:
            break
    print("samples=%d bytes=%d" % (n, b))


MODES = {"write": write, "write-tar": write_tar, "write-wds": write_wds, "random": random_sk,
         "random-batch": random_sk_batch, "random-tar": random_tar,
         "random-wids": random_wids, "seq": seq_sk, "seq-tar": seq_tar, "seq-wds": seq_wds,
         "order": order_sk, "order-wds": order_wds}

# The packages each mode imports, imported before its work is timed.
IMPORTS = {"write": "shardkit", "random": "shardkit", "random-batch": "shardkit", "seq": "shardkit",
           "write-wds": "webdataset", "seq-wds": "webdataset", "random-wids": "wids",
           "order": "shardkit.torch", "order-wds": "webdataset"}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(__doc__)
    import time
    if sys.argv[1] in IMPORTS:
        __import__(IMPORTS[sys.argv[1]])
    wall, cpu = time.perf_counter(), time.process_time()
    MODES[sys.argv[1]](sys.argv[2:])
    if os.environ.get("PB_LOOP_LOG"):
        with open(os.environ["PB_LOOP_LOG"], "a") as log:
            # shardkit.Dataset's ctypes path (SHARDKIT_EXT=0) logged apart
            tag = "-ctypes" if os.environ.get("SHARDKIT_EXT") == "0" and sys.argv[1] in IMPORTS else ""
            log.write("%s%s %.4f %.4f\n" % (sys.argv[1], tag, time.perf_counter() - wall,
                                             time.process_time() - cpu))
