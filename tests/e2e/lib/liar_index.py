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
import ctypes
import os
import sys
import tarfile


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


class Info(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("crc32c", ctypes.c_uint32),
                ("first_block_crc32c", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


def main(lib_path, tar, idx, mode):
    lib = ctypes.CDLL(lib_path)
    lib.sk_crc32c.restype = ctypes.c_uint32
    lib.sk_crc32c.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
    lib.sk_index_builder_new.restype = ctypes.c_void_p
    u64, sz = ctypes.c_uint64, ctypes.c_size_t
    lib.sk_index_add_sample.argtypes = [ctypes.c_void_p, ctypes.c_char_p, sz, u64, u64, u64, u64,
                                        ctypes.POINTER(Err)]
    lib.sk_index_add_member.argtypes = [ctypes.c_void_p, ctypes.c_char_p, sz, u64, u64,
                                        ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(Err)]
    lib.sk_index_builder_write.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Info),
                                           ctypes.POINTER(Err)]
    data = open(tar, "rb").read()
    crc = lambda b: lib.sk_crc32c(0, b, len(b))
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
    err = Err()
    b = lib.sk_index_builder_new()
    for key, off, end, members in samples:
        k = key.encode()
        assert lib.sk_index_add_sample(b, k, len(k), off, end - off, off, end - off, err) == 0, err.msg
        for ext, doff, size, hlen, c in members:
            e = ext.encode()
            assert lib.sk_index_add_member(b, e, len(e), doff, size, hlen, c, err) == 0, err.msg
    info = Info(len(data), crc(data), crc(data[:512]), 0)
    assert lib.sk_index_builder_write(b, idx.encode(), info, err) == 0, err.msg


if __name__ == "__main__":
    main(*sys.argv[1:5])
