"""hostile_index.py - a tar and an index for it whose checksums all hold but
whose keys and extensions are crafted: names that would climb out of a
mount, absolute ones, empty and "." components, NUL bytes, '/' in an
extension, an empty extension, an extension twice in one sample, a sample of more
members than a mount serves.  Each
crafted sample points at a real member of the tar.  For mount_hostile.sh.

  hostile_index.py LIBSHARDKIT DIR   writes DIR/h-00.tar and DIR/h-00.tar.idx;
                                     prints the number of crafted members
"""
import io
import os
import sys
import tarfile

from index_writer import IndexWriter

GOOD = [(b"good/000", [b"txt"]), (b"good/001", [b"txt", b"json"])]
BAD = [  # (key, [exts]): every member of these must be left out
    (b"../evil", [b"txt"]),
    (b"good/../../evil", [b"txt"]),
    (b"/abs/evil", [b"txt"]),
    (b"a//evil", [b"txt"]),
    (b"a/./evil", [b"txt"]),
    (b"a/evil/..", [b"txt"]),
    (b"nul\x00evil", [b"txt"]),
    (b"dot/ev.il", [b"txt"]),
    (b"ext/slash", [b"x/../../y"]),
    (b"ext/empty", [b""]),
    (b"ext/nul", [b"t\x00xt"]),
]
DUP = (b"good/002", [b"txt", b"txt"])  # the second member is left out
MANY = (b"many/000", [b"e%d" % i for i in range(1025)])  # over the cap: one warning


def main(lib_path, out):
    w = IndexWriter(lib_path)
    samples = GOOD + BAD + [DUP, MANY]
    tar = os.path.join(out, "h-00.tar")
    with tarfile.open(tar, "w", format=tarfile.USTAR_FORMAT) as tf:
        for i, (key, exts) in enumerate(samples):
            for j, _ in enumerate(exts):
                data = b"sample %d member %d\n" % (i, j)
                ti = tarfile.TarInfo("m%03d/%d.dat%d" % (i, i, j))
                ti.size = len(data)
                tf.addfile(ti, io.BytesIO(data))
    data = open(tar, "rb").read()
    with tarfile.open(tar) as tf:
        members = [m for m in tf]
    records = []
    k = 0
    for key, exts in samples:
        first = members[k]
        last = members[k + len(exts) - 1]
        end = last.offset_data + (last.size + 511) // 512 * 512
        ms = []
        for ext in exts:
            m = members[k]
            d = data[m.offset_data:m.offset_data + m.size]
            ms.append((ext, m.offset_data, m.size, m.offset_data - m.offset, w.crc(d)))
            k += 1
        records.append((key, first.offset, end, ms))
    w.write(tar + ".idx", data, records)
    print(sum(len(e) for _, e in BAD) + 2)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
