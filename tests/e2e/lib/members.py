#!/usr/bin/env python3
"""members.py SHARD... - prints one line per member of the given shards
(plain tar, .tar.gz, .tar.zst via `zstd -dc`): "name crc32 size", sorted,
so two shard sets can be compared as multisets of members."""
import io, subprocess, sys, tarfile, zlib

out = []
for path in sys.argv[1:]:
    if path.endswith(".zst"):
        data = subprocess.run(["zstd", "-dcq", path], check=True, stdout=subprocess.PIPE).stdout
        t = tarfile.open(fileobj=io.BytesIO(data))
    else:
        t = tarfile.open(path)
    for m in t.getmembers():
        if m.isfile():
            out.append("%s %08x %d" % (m.name, zlib.crc32(t.extractfile(m).read()), m.size))
for line in sorted(out):
    print(line)
