#!/usr/bin/env python3
"""Python anchor for bench_shard.sh: re-writes tar shards with the standard
library's tarfile, the way a user's script reshards (read each input shard
in stream mode, copy every member into rolling output shards of --max-size
bytes, cutting only between samples).  No index, no manifest.
Usage: tarfile_reshard.py INPUT... -o PATTERN [--max-size BYTES]"""
import argparse, os, tarfile

ap = argparse.ArgumentParser()
ap.add_argument("inputs", nargs="+")
ap.add_argument("-o", dest="pattern", required=True)
ap.add_argument("--max-size", type=int, default=512 << 20)
a = ap.parse_args()
n, out, size, last_key = 0, None, 0, None
for path in a.inputs:
    with tarfile.open(path, "r|") as t:
        for m in t:
            if not m.isfile():
                continue
            base = os.path.basename(m.name)
            key = m.name[: len(m.name) - len(base)] + base.split(".", 1)[0]
            if key != last_key and (out is None or size >= a.max_size):
                if out:
                    out.close()
                out = tarfile.open(a.pattern % n, "w", format=tarfile.USTAR_FORMAT)
                n, size = n + 1, 0
            last_key = key
            out.addfile(m, t.extractfile(m))
            size += 512 + (m.size + 511) // 512 * 512
if out:
    out.close()
print("shards=%d" % n)
