#!/usr/bin/env python3
"""Python anchor for `make bench`: a rolling tar-shard writer built on the
standard library's tarfile, doing what a WebDataset user's packing script
does with webdataset.ShardWriter (not installed here, so re-created):

  - walk SOURCE directories in sorted order, group files into samples by
    WebDataset key (path up to the first dot of the basename), read them;
  - write each sample's members, sorted by extension, as "key.ext" through
    tarfile.open(mode="w|") with TarInfo(mtime=time.time(), mode=0o444,
    uname=gname="bigdata"); with the PAX format (tarfile's default, and what
    webdataset used until it pinned USTAR) the float mtime makes tarfile write
    a pax extended header before every member, as those shards have;
  - roll to the next shard (open(pattern % n, "wb")) before a sample when the
    current one holds --max-count samples or --max-size bytes of member data,
    the ShardWriter rule.

No index, no manifest, no checksums: it is the floor a Python pipeline pays.
Usage: tarfile_writer.py SOURCE... -o PATTERN [--max-size SIZE] [--max-count N]
       [--format pax|ustar]; prints "samples=N files=F shards=S" at the end.
"""
import argparse
import io
import os
import sys
import tarfile
import time


def parse_size(s):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    s = s.strip().upper().removesuffix("B").removesuffix("I")
    num = s.rstrip("KMGT")
    return int(float(num) * units[s[len(num):]])


def samples(roots):
    """Yield (key, {ext: path}) in sorted path order, one per sample."""
    for root in roots:
        root = root.rstrip("/") or "/"
        stack = [""]
        while stack:
            rel = stack.pop()
            d = os.path.join(root, rel) if rel else root
            entries = sorted(os.scandir(d), key=lambda e: e.name)
            cur_key, cur = None, {}
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    continue
                stem, dot, ext = e.name.partition(".")
                if not dot or not stem or not ext:
                    sys.exit(f"tarfile_writer: {e.path}: no WebDataset key (no dot in the name)")
                key = f"{rel}/{stem}" if rel else stem
                if key != cur_key:
                    if cur:
                        yield cur_key, cur
                    cur_key, cur = key, {}
                ext = ext.lower()
                if ext in cur:
                    sys.exit(f"tarfile_writer: {e.path}: extension {ext} twice in sample {key}")
                cur[ext] = e.path
            if cur:
                yield cur_key, cur
            subdirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
            stack.extend(os.path.join(rel, s) if rel else s for s in reversed(subdirs))


class TarWriter:
    """One shard: the body of webdataset.TarWriter.write, for bytes values."""

    def __init__(self, fileobj, fmt):
        self.stream = fileobj
        self.tarstream = tarfile.open(fileobj=fileobj, mode="w|", format=fmt)

    def write(self, key, members):
        total = 0
        for ext in sorted(members):
            v = members[ext]
            ti = tarfile.TarInfo(key + "." + ext)
            ti.size = len(v)
            ti.mtime = time.time()
            ti.mode = 0o444
            ti.uname = ti.gname = "bigdata"
            self.tarstream.addfile(ti, io.BytesIO(v))
            total += ti.size
        return total

    def close(self):
        self.tarstream.close()
        self.stream.close()


class ShardWriter:
    """webdataset.ShardWriter's rolling rule: check limits before each sample."""

    def __init__(self, pattern, maxcount, maxsize, fmt):
        self.pattern, self.maxcount, self.maxsize, self.fmt = pattern, maxcount, maxsize, fmt
        self.shard = 0
        self.tar = None
        self.count = self.size = 0

    def write(self, key, members):
        if self.tar is None or self.count >= self.maxcount or self.size >= self.maxsize:
            self.finish()
            self.tar = TarWriter(open(self.pattern % self.shard, "wb"), self.fmt)
            self.shard += 1
            self.count = self.size = 0
        self.size += self.tar.write(key, members)
        self.count += 1

    def finish(self):
        if self.tar is not None:
            self.tar.close()
            self.tar = None


def main():
    ap = argparse.ArgumentParser(prog="tarfile_writer.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", metavar="SOURCE", help="directories to pack")
    ap.add_argument("-o", "--output", required=True, metavar="PATTERN",
                    help="shard name pattern, e.g. out/train-%%06d.tar")
    ap.add_argument("--max-size", default="3e9", metavar="SIZE",
                    help="roll after this many bytes of member data (512M, 3e9; default 3e9)")
    ap.add_argument("--max-count", type=int, default=100000, metavar="N",
                    help="roll after N samples (default 100000)")
    ap.add_argument("--format", choices=("pax", "ustar"), default="pax",
                    help="pax: a pax header per member, as webdataset wrote (default)")
    a = ap.parse_args()
    fmt = tarfile.PAX_FORMAT if a.format == "pax" else tarfile.USTAR_FORMAT
    w = ShardWriter(a.output, a.max_count, parse_size(a.max_size), fmt)
    nsamples = nfiles = 0
    for key, paths in samples(a.sources):
        members = {}
        for ext, p in paths.items():
            with open(p, "rb") as f:
                members[ext] = f.read()
        w.write(key, members)
        nsamples += 1
        nfiles += len(members)
    w.finish()
    print(f"samples={nsamples} files={nfiles} shards={w.shard}")


if __name__ == "__main__":
    sys.exit(main())
