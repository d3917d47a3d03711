"""index_writer.py - an index written through libshardkit's own builder
(ctypes), saying whatever the test asks of a tar: the part the tests'
crafted indexes share (hostile_index.py, liar_index.py).  The index is
sound as a file (its checksums, the shard's size and CRC32C all hold);
only its samples and members are the caller's.

  w = IndexWriter(LIBSHARDKIT)
  w.write(IDX, tar_bytes, [(key, offset, end, [(ext, data_offset, size,
                                                header_len, crc32c)])])
"""
import ctypes


class Err(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("msg", ctypes.c_char * 1024)]


class Info(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("crc32c", ctypes.c_uint32),
                ("first_block_crc32c", ctypes.c_uint32), ("flags", ctypes.c_uint32)]


class IndexWriter:
    def __init__(self, lib_path):
        lib = ctypes.CDLL(lib_path)
        lib.sk_crc32c.restype = ctypes.c_uint32
        lib.sk_crc32c.argtypes = [ctypes.c_uint32, ctypes.c_char_p, ctypes.c_size_t]
        lib.sk_index_builder_new.restype = ctypes.c_void_p
        u64, sz = ctypes.c_uint64, ctypes.c_size_t
        lib.sk_index_add_sample.argtypes = [ctypes.c_void_p, ctypes.c_char_p, sz, u64, u64, u64,
                                            u64, ctypes.POINTER(Err)]
        lib.sk_index_add_member.argtypes = [ctypes.c_void_p, ctypes.c_char_p, sz, u64, u64,
                                            ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(Err)]
        lib.sk_index_builder_write.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                               ctypes.POINTER(Info), ctypes.POINTER(Err)]
        self.lib = lib

    def crc(self, b):
        return self.lib.sk_crc32c(0, b, len(b))

    def write(self, idx, data, samples):
        """samples: (key, offset, end, members) with bytes keys; members:
        (ext, data_offset, size, header_len, crc32c) with bytes extensions."""
        lib, err = self.lib, Err()
        b = lib.sk_index_builder_new()
        for key, off, end, members in samples:
            assert lib.sk_index_add_sample(b, key, len(key), off, end - off, off, end - off,
                                           err) == 0, err.msg
            for ext, doff, size, hlen, c in members:
                assert lib.sk_index_add_member(b, ext, len(ext), doff, size, hlen, c,
                                               err) == 0, err.msg
        info = Info(len(data), self.crc(data), self.crc(data[:512]), 0)
        assert lib.sk_index_builder_write(b, idx.encode(), info, err) == 0, err.msg
