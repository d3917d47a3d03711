"""hostile_ranges.py - a tar and an index for it whose checksums all hold
but whose member ranges are crafted, for the read windows of a mount
(mount_s3.sh): a member whose bytes run past the end of the object, one
that starts far beyond it, and two members that overlap each other and a
sound member (their CRC32Cs are those of the bytes they name, so they are
served).  Sound members before and after them.

  hostile_ranges.py LIBSHARDKIT DIR   writes DIR/r-00.tar and DIR/r-00.tar.idx;
                                      prints "EXT OFF SIZE" of each
                                      overlapping member, one a line
"""
import io
import os
import sys
import tarfile

from index_writer import IndexWriter


def main(lib_path, out):
    w = IndexWriter(lib_path)
    tar = os.path.join(out, "r-00.tar")
    with tarfile.open(tar, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(6):
            data = bytes((i * 37 + j) & 0xFF for j in range(3000 + 100 * i))
            ti = tarfile.TarInfo("m/%d.bin" % i)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    data = open(tar, "rb").read()
    with tarfile.open(tar) as tf:
        ms = [m for m in tf]
    size = len(data)

    def sample(key, members):
        """members: (ext, data_offset, size, header_len); the span covers them"""
        lo = min(d - h for _, d, _, h in members)
        hi = max(d + n for _, d, n, _ in members)
        return (key, lo, hi, [(e, d, n, h, w.crc(data[d:d + n])) for e, d, n, h in members])

    def real(i):
        m = ms[i]
        return (m.offset_data, m.size, m.offset_data - m.offset)

    good0, good1 = real(0), real(5)
    past = real(4)
    overlap_a = (ms[1].offset_data + 100, 2500)  # inside member 1
    overlap_b = (ms[1].offset_data + 2000, ms[2].offset_data - ms[1].offset_data)  # 1's tail, 2's header and head
    records = [
        sample(b"good/000", [(b"bin", good0[0], good0[1], good0[2])]),
        sample(b"over/000", [(b"a", overlap_a[0], overlap_a[1], 0),
                             (b"b", overlap_b[0], overlap_b[1], 0)]),
        # its bytes run 5 MiB past the object's end (the CRC is of what exists)
        sample(b"past/000", [(b"bin", past[0], size - past[0] + (5 << 20), past[2])]),
        # it starts 10 MiB past the end
        sample(b"far/000", [(b"bin", size + (10 << 20), 4000, 512)]),
        sample(b"good/001", [(b"bin", good1[0], good1[1], good1[2])]),
    ]
    w.write(tar + ".idx", data, records)
    for ext, (off, n) in (("a", overlap_a), ("b", overlap_b)):
        print(ext, off, n)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
