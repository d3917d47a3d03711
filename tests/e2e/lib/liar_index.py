"""liar_index.py - writes an index for a tar that is sound as a file (its
checksums, size and shard CRC32C all hold) but says what the test asks of
the tar's members, true or not.  For tests/e2e/shard_index_path.sh.

  liar_index.py LIBSHARDKIT TAR IDX MODE
  MODE: true   what the tar holds (read with Python's tarfile)
        crc    sample 2, first member: a wrong CRC32C
        shift  sample 3: every offset 512 bytes later
        omit   sample 1: its last member left out (the next sample still
               starts where the tar has it)
        split  sample 1 made two samples with one key
        ext    sample 4: its first two extensions swapped
        size   sample 5, first member: one byte longer
"""
import os
import sys
import tarfile

from index_writer import IndexWriter


def main(lib_path, tar, idx, mode):
    w = IndexWriter(lib_path)
    data = open(tar, "rb").read()
    crc = w.crc
    samples = []  # [key, offset, end, [[ext, data_offset, size, header_len, crc]]]
    with tarfile.open(tar) as tf:
        for m in tf:
            if not m.isfile():
                continue
            base = m.name.rfind("/") + 1
            dot = m.name.find(".", base)
            key, ext = m.name[:dot], m.name[dot + 1:].lower()
            if not samples or samples[-1][0] != key:
                samples.append([key, m.offset, 0, []])
            samples[-1][2] = m.offset_data + (m.size + 511) // 512 * 512
            samples[-1][3].append([ext, m.offset_data, m.size, m.offset_data - m.offset,
                                   crc(data[m.offset_data:m.offset_data + m.size])])
    if mode == "crc":
        samples[2][3][0][4] ^= 1
    elif mode == "shift":
        samples[3][1] += 512
        samples[3][2] += 512
        for mem in samples[3][3]:
            mem[1] += 512
    elif mode == "omit":
        last = samples[1][3].pop()
        samples[1][2] = last[1] - last[3]
    elif mode == "split":
        s = samples[1]
        first = s[3][0]
        samples[1:2] = [[s[0], s[1], first[1] + (first[2] + 511) // 512 * 512, s[3][:1]],
                        [s[0], s[3][1][1] - s[3][1][3], s[2], s[3][1:]]]
    elif mode == "ext":
        m = samples[4][3]
        m[0][0], m[1][0] = m[1][0], m[0][0]
    elif mode == "size":
        samples[5][3][0][2] += 1
    elif mode != "true":
        sys.exit("unknown mode " + mode)
    w.write(idx, data, [(key.encode(), off, end, [(ext.encode(), doff, size, hlen, c)
                                                   for ext, doff, size, hlen, c in members])
                        for key, off, end, members in samples])


if __name__ == "__main__":
    main(*sys.argv[1:5])
