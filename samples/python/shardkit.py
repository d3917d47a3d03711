"""shardkit.py - a ctypes binding of libshardkit's reader (lib/shardkit.h,
"reader"): no compiler at install, only libshardkit.so.

    import shardkit
    r = shardkit.Reader(["data/train-{000000..000009}.tar"], shuffle_buffer=1000, seed=1)
    for sample in r:              # {"__key__": "n00000/00000001", "jpg": b"...", ...}
        ...
    state = r.state()             # bytes: save them with the checkpoint
    r2 = shardkit.Reader([...same options...]); r2.restore(state)

The library is found through $SHARDKIT_LIB, then ../../build/libshardkit.so
beside this file (a source tree), then the system's libshardkit.so.
"""
import ctypes
import ctypes.util
import os

__all__ = ["Reader", "ShardkitError", "load_library"]

_c = ctypes


class _Error(_c.Structure):
    _fields_ = [("code", _c.c_int), ("msg", _c.c_char * 1024)]


_WARN = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_char_p)


class _Options(_c.Structure):
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("rank", _c.c_int), ("world_size", _c.c_int),
        ("worker", _c.c_int), ("num_workers", _c.c_int),
        ("shuffle_shards", _c.c_int),
        ("shuffle_buffer", _c.c_size_t),
        ("seed", _c.c_uint64), ("epoch", _c.c_uint64),
        ("prefetch", _c.c_int),
        ("buffer_size", _c.c_size_t), ("max_sample", _c.c_size_t),
        ("skip_errors", _c.c_int),
        ("cache_dir", _c.c_char_p), ("cache_size", _c.c_uint64),
        ("warn", _WARN), ("warn_ctx", _c.c_void_p),
        ("s3_endpoint", _c.c_char_p),
    ]


class _Member(_c.Structure):
    _fields_ = [("ext", _c.c_char_p), ("ext_len", _c.c_size_t),
                ("data", _c.c_void_p), ("size", _c.c_uint64)]


class _Sample(_c.Structure):
    _fields_ = [("key", _c.c_void_p), ("key_len", _c.c_size_t),
                ("shard_url", _c.c_char_p), ("shard", _c.c_size_t),
                ("ordinal", _c.c_uint64), ("offset", _c.c_uint64),
                ("nmembers", _c.c_size_t), ("members", _c.POINTER(_Member))]


class _State(_c.Structure):
    _fields_ = [("magic", _c.c_uint32), ("version", _c.c_uint32),
                ("slot", _c.c_uint32), ("slots", _c.c_uint32),
                ("shards", _c.c_uint64), ("seed", _c.c_uint64), ("epoch", _c.c_uint64),
                ("shuffle_shards", _c.c_uint64), ("shuffle_buffer", _c.c_uint64),
                ("yielded", _c.c_uint64), ("shard_pos", _c.c_uint64), ("ordinal", _c.c_uint64)]


class _Stats(_c.Structure):
    _fields_ = [(n, _c.c_uint64) for n in (
        "samples", "bytes", "shards_done", "shards_skipped", "cache_hits", "cache_misses",
        "ring_grows")]


class ShardkitError(Exception):
    """A libshardkit failure; .code is the sk_code, str() the message."""

    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


_lib = None


def load_library(path=None):
    """Loads libshardkit.so once and declares the reader's calls."""
    global _lib
    if _lib is not None and path is None:
        return _lib
    cands = [path, os.environ.get("SHARDKIT_LIB"),
             os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build",
                          "libshardkit.so"),
             ctypes.util.find_library("shardkit")]
    last = None
    for p in cands:
        if not p:
            continue
        try:
            lib = _c.CDLL(p)
            break
        except OSError as e:
            last = e
    else:
        raise OSError("libshardkit.so not found (set SHARDKIT_LIB): %s" % last)
    P = _c.POINTER
    lib.sk_reader_options_init_sized.argtypes = [P(_Options), _c.c_size_t]
    lib.sk_reader_options_init_sized.restype = None
    lib.sk_reader_open.argtypes = [P(_c.c_void_p), P(_c.c_char_p), _c.c_size_t, P(_Options),
                                   P(_Error)]
    lib.sk_reader_close.argtypes = [_c.c_void_p]
    lib.sk_reader_close.restype = None
    lib.sk_reader_next.argtypes = [_c.c_void_p, P(P(_Sample)), P(_Error)]
    lib.sk_reader_start_epoch.argtypes = [_c.c_void_p, _c.c_uint64, P(_Error)]
    lib.sk_reader_get_state.argtypes = [_c.c_void_p, P(_State)]
    lib.sk_reader_get_state.restype = None
    lib.sk_reader_restore.argtypes = [_c.c_void_p, P(_State), P(_Error)]
    lib.sk_reader_get_stats.argtypes = [_c.c_void_p, P(_Stats)]
    lib.sk_reader_get_stats.restype = None
    lib.sk_reader_shard_count.argtypes = [_c.c_void_p]
    lib.sk_reader_shard_count.restype = _c.c_size_t
    lib.sk_reader_slot_shards.argtypes = [_c.c_void_p]
    lib.sk_reader_slot_shards.restype = _c.c_size_t
    _lib = lib
    return lib


def _check(rc, err):
    if rc:
        raise ShardkitError(rc, err.msg.decode("utf-8", "replace"))


class Reader:
    """Iterates the samples of a shard list (see sk_reader_open).  Each
    sample is a dict: "__key__" (str), "__url__" (the shard), "__ordinal__"
    (within the shard), and one bytes value per member extension.  Options
    mirror sk_reader_options; None for rank/world_size/worker/num_workers
    means the environment ($RANK, $WORLD_SIZE, $WORKER, $NUM_WORKERS)."""

    def __init__(self, urls, rank=None, world_size=None, worker=None, num_workers=None,
                 shuffle_shards=False, shuffle_buffer=0, seed=0, epoch=0, prefetch=2,
                 buffer_size=4 << 20, max_sample=1 << 30, skip_errors=False, cache_dir=None,
                 cache_size=0, s3_endpoint=None, lib=None):
        self._lib = load_library(lib)
        if isinstance(urls, (str, bytes, os.PathLike)):
            urls = [urls]
        o = _Options()
        self._lib.sk_reader_options_init_sized(_c.byref(o), _c.sizeof(o))
        for name, v in (("rank", rank), ("world_size", world_size), ("worker", worker),
                        ("num_workers", num_workers)):
            if v is not None:
                setattr(o, name, int(v))
        o.shuffle_shards = 1 if shuffle_shards else 0
        o.shuffle_buffer = int(shuffle_buffer)
        o.seed = int(seed)
        o.epoch = int(epoch)
        o.prefetch = int(prefetch)
        o.buffer_size = int(buffer_size)
        o.max_sample = int(max_sample)
        o.skip_errors = 1 if skip_errors else 0
        self._cache_dir = os.fsencode(cache_dir) if cache_dir else None
        o.cache_dir = self._cache_dir
        o.cache_size = int(cache_size)
        self._endpoint = s3_endpoint.encode() if s3_endpoint else None
        o.s3_endpoint = self._endpoint
        enc = [os.fsencode(u) for u in urls]
        arr = (_c.c_char_p * len(enc))(*enc)
        err = _Error()
        h = _c.c_void_p()
        _check(self._lib.sk_reader_open(_c.byref(h), arr, len(enc), _c.byref(o), _c.byref(err)),
               err)
        self._h = h
        self.epoch = int(epoch)

    def close(self):
        if getattr(self, "_h", None):
            self._lib.sk_reader_close(self._h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def next_raw(self):
        """The next sample as the C struct (pointers valid until the next
        call), or None at the end of the epoch: for zero-copy use."""
        p = _c.POINTER(_Sample)()
        err = _Error()
        _check(self._lib.sk_reader_next(self._h, _c.byref(p), _c.byref(err)), err)
        return p.contents if p else None

    def __iter__(self):
        """The rest of the current epoch, one dict per sample."""
        string_at = _c.string_at
        while True:
            s = self.next_raw()
            if s is None:
                return
            d = {"__key__": string_at(s.key, s.key_len).decode("utf-8", "surrogateescape"),
                 "__url__": s.shard_url.decode("utf-8", "surrogateescape"),
                 "__ordinal__": s.ordinal}
            for i in range(s.nmembers):
                m = s.members[i]
                d[m.ext.decode("utf-8", "surrogateescape")] = string_at(m.data, m.size) \
                    if m.size else b""
            yield d

    def start_epoch(self, epoch):
        err = _Error()
        _check(self._lib.sk_reader_start_epoch(self._h, int(epoch), _c.byref(err)), err)
        self.epoch = int(epoch)

    def state(self):
        """Where the reader is, as bytes (sk_reader_state)."""
        st = _State()
        self._lib.sk_reader_get_state(self._h, _c.byref(st))
        return bytes(st)

    def restore(self, state):
        """Continues from bytes that state() returned (same options)."""
        st = _State.from_buffer_copy(state)
        err = _Error()
        _check(self._lib.sk_reader_restore(self._h, _c.byref(st), _c.byref(err)), err)
        self.epoch = st.epoch

    def stats(self):
        st = _Stats()
        self._lib.sk_reader_get_stats(self._h, _c.byref(st))
        return {n: getattr(st, n) for n, _ in _Stats._fields_}

    @property
    def shard_count(self):
        return self._lib.sk_reader_shard_count(self._h)

    @property
    def slot_shards(self):
        return self._lib.sk_reader_slot_shards(self._h)
