"""python_loop_bench.py - times the two loops docs/benchmarks.md compares for
the Python Reader's lock and the writer's repeated-key check:

    SHARDKIT_LIB=build/libshardkit.so python3 bench/python_loop_bench.py python read DIR
    SHARDKIT_LIB=build/libshardkit.so python3 bench/python_loop_bench.py python write DIR

argv: the directory holding the shardkit package (python/ of a tree), "read"
(iterates DIR/data: 100,000 samples of 2 members in 5 shards, written the
first time) or "write" (200,000 one-member samples in scrambled key order
into a fresh directory under DIR, removed after), DIR.  Prints seconds.
Run both sides interleaved and quote medians.
"""
import os
import shutil
import sys
import time

sys.path.insert(0, sys.argv[1])
import shardkit  # noqa: E402

mode, d = sys.argv[2], sys.argv[3]
if mode == "write":
    out = os.path.join(d, "w%d" % os.getpid())
    t = time.perf_counter()
    with shardkit.ShardWriter(out + "/t-%04d.tar", max_count=10000) as w:
        for i in range(200000):
            w.write({"__key__": "k%07d" % ((i * 7919) % 200000), "cls": b"1"})
    print("%.3f" % (time.perf_counter() - t))
    shutil.rmtree(out)
else:
    data = os.path.join(d, "data")
    if not os.path.isdir(data):
        with shardkit.ShardWriter(data + "/t-%03d.tar", max_count=20000) as w:
            for i in range(100000):
                w.write({"__key__": "k%07d" % i, "cls": b"1", "txt": b"x" * 100})
    t = time.perf_counter()
    n = sum(1 for _ in shardkit.Reader(data, rank=0, world_size=1, worker=0, num_workers=1))
    assert n == 100000, n
    print("%.3f" % (time.perf_counter() - t))
