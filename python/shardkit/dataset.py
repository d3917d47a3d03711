"""dataset.py - shardkit.Dataset: map-style random access to a dataset's
samples through the .idx sidecars (sk_dataset_*, the lookup `shardkit get`
uses): by global ordinal or by key, each member one pread (or one ranged
GET on S3) checked against its CRC32C.

A whole sample (ds[i], ds.get(key)) is one C call, sk_dataset_get: the
lookup, the read of the sample's span and the CRC32C checks, into a buffer
the thread keeps, with the member records, the key and the extensions in
front of the data; Python then reads the records with one struct call and
slices the data.  A batch (ds.__getitems__, which a PyTorch DataLoader
calls with each batch of indices) is one sk_dataset_get_many per
buffer-full.  libshardkit opens indexes and shards lazily under a lock of its own
and takes none once they are open, so no call here holds a Python lock
(ctypes releases the GIL during each call): threads read in parallel.

Those three lookups have a compiled fast path, shardkit._ext (_ext.c,
built by pip's setup.py, or by `make` beside the library in a source
tree): the dict built in C, each member read by the library straight into
its bytes object.  Where it is not built (no compiler, no Python headers)
or SHARDKIT_EXT=0, the ctypes path above serves them; BACKEND says which.
"""
from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import operator
import os
import struct
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, Set, Union

from . import _lib
from ._lib import GetResult, Hit, MemberRef, S3Config

_c = ctypes
Sample = Dict[str, Any]

# what a lookup needs of sk_get_result (shard, shard path, global ordinal,
# ordinal, key_len, member_count, need, key, data) and of each sk_member_ref (size):
# one struct call each (a ctypes field access per value costs as much as
# the rest)
_RESULT = struct.Struct("=8xQQQQ8xQ32x4xIQ8xQQ")
_SIZE = struct.Struct("=24xQ8x")
assert _SIZE.size == _c.sizeof(MemberRef) and _RESULT.size == _c.sizeof(GetResult)

# bumped in a forked child (a DataLoader worker): a dataset opened before
# the fork opens anew in the child (see _handle); cheaper than asking the
# kernel for the pid on every lookup
_fork_gen = 0


def _forked() -> None:
    global _fork_gen
    _fork_gen += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)



def _load_ext() -> Any:
    """The compiled lookups (shardkit._ext), or None: SHARDKIT_EXT=0 says
    none; SHARDKIT_EXT=PATH names the module file (an ImportError when it
    does not load); else the copy pip built into the package, else the one
    `make` built beside the library a source tree's package finds
    (DIR/python/_ext<suffix> for DIR/libshardkit.so)."""
    want = os.environ.get("SHARDKIT_EXT", "")
    if want == "0":
        return None
    paths = [want] if want else []
    if not want:
        try:
            from . import _ext  # type: ignore[attr-defined]
            return _ext
        except ImportError:
            pass
        lib = next(iter(_lib._candidates(None)), None)
        if lib:
            paths = [os.path.join(os.path.dirname(lib), "python", "_ext" + suffix)
                     for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    for path in paths:
        if not os.path.isfile(path):
            continue
        spec = importlib.util.spec_from_file_location(
            __package__ + "._ext", path,
            loader=importlib.machinery.ExtensionFileLoader(__package__ + "._ext", path))
        if spec is None or spec.loader is None:
            continue
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        sys.modules[spec.name] = mod
        return mod
    if want:
        raise ImportError("SHARDKIT_EXT=%s: no such extension module" % want)
    return None


_EXT = _load_ext()
#: which path serves ds[i], ds.get(key) and ds.__getitems__ in Datasets
#: opened now: "ext" (the compiled shardkit._ext) or "ctypes"
BACKEND = "ext" if _EXT is not None else "ctypes"


def _ext_error(code: int, message: bytes, kind: int) -> Exception:
    """The exception for a failed lookup of the compiled path, as the
    ctypes path raises it (kind 1: by key, so not found is a KeyError)."""
    msg = message if isinstance(message, str) else message.decode("utf-8", "replace")
    cls = _lib._BY_CODE.get(int(code), _lib.Error)
    if cls is _lib.NotFoundError:
        cls = _lib.KeyNotFoundError if kind == 1 else _lib.SampleIndexError
    return cls(code, msg)


#: a thread keeps a buffer up to this size; a sample needing more gets one
#: of its own for the call
_KEEP_BUF = 4 << 20
#: samples per sk_dataset_get_many call at most (its result array)
_BATCH = 256
#: ordinals are uint64 in the library; ctypes would wrap a larger int
_U64 = 1 << 64


def _as_index(i: Any) -> int:
    """i as an int when it is one (int, numpy or torch integers: what
    operator.index takes); TypeError for a float, a bool, a string of
    digits, which int() would turn into another sample's ordinal."""
    if isinstance(i, bool):
        raise TypeError("dataset indices must be integers, not bool")
    try:
        return operator.index(i)
    except TypeError:
        raise TypeError("dataset indices must be integers, slices or keys (str), not %s" %
                        type(i).__name__) from None


class _Thread(threading.local):
    """A thread's work space for lookups: made once per thread, not per
    call (the sk_error alone is 1 KiB)."""

    def __init__(self) -> None:
        self.err = _lib._Error()
        self.eref = _c.byref(self.err)
        self.res = GetResult()
        self.res.struct_size = _c.sizeof(GetResult)
        self.rref = _c.byref(self.res)
        self.keep(256 << 10)
        self.many: Any = None   # sk_dataset_get_many's arrays, made on first use

    def batch(self) -> Any:
        """The ordinals, results and done count of a get_many call."""
        if self.many is None:
            res = (GetResult * _BATCH)()
            for r in res:
                r.struct_size = _c.sizeof(GetResult)
            self.many = ((_c.c_uint64 * _BATCH)(), res, memoryview(res).cast("B"),
                         _c.c_size_t())
        return self.many

    def keep(self, cap: int) -> None:
        """A buffer of cap bytes for this thread's lookups."""
        self.cap = cap
        self.buf: Any = (_c.c_char * cap)()
        self.base = _c.addressof(self.buf)
        self.mv: Any = memoryview(self.buf).cast("B")

#: open every index in O(1): skip its body checksum (records are still
#: bounds-checked as they are read)
TRUST_INDEX = 1


class Dataset:
    """Random access to the samples of a dataset.

    url: a manifest.json, a directory (its manifest.json, or its shards
    with .idx sidecars), a brace pattern of shards or one shard; local or
    s3:// (s3://bucket/prefix/ means its manifest.json, else the shard
    objects listed directly under it).  trust_index skips
    each index's body checksum (--trust-index).  s3_endpoint: the S3
    endpoint for s3:// (default: $AWS_ENDPOINT_URL, else AWS), with the
    aws cli's credentials and region.

    ``len(ds)``, ``ds[i]`` (a global ordinal, negative from the end; a
    slice gives a list), ``ds.get(key)``, ``key in ds``, ``iter(ds)``.  A
    sample is a dict: "__key__" (str), "__url__" (its shard), "__index__"
    (the global ordinal), "__ordinal__" (within the shard) and one bytes
    value per member extension, in the shard's order.  Safe to use from
    several threads; picklable (a copy reopens the dataset)."""

    def __init__(self, url: Union[str, "os.PathLike[str]"], *, trust_index: bool = False,
                 s3_endpoint: Optional[str] = None, lib: Optional[str] = None) -> None:
        self._ds: Optional[ctypes.c_void_p] = None
        self._s3: Optional[ctypes.c_void_p] = None
        self._x: Any = None   # the compiled lookups (shardkit._ext.Getter), if built
        self.url = os.fspath(url)
        self.trust_index = bool(trust_index)
        self.s3_endpoint = s3_endpoint
        self._libpath = lib
        self._lib = _lib.load_library(lib)
        self._get_fn = self._lib.sk_dataset_get
        self._many_fn = self._lib.sk_dataset_get_many
        self._len: Optional[int] = None
        self._gen = _fork_gen
        self._tls = _Thread()
        self._exts: Dict[int, str] = {}   # an index's extension (by address) -> str
        self._names: Dict[bytes, List[str]] = {}  # a sample's extensions (as in buf) -> names
        self._urls: Dict[int, str] = {}   # shard position -> its path
        # samples needing up to this are read in one call into one buffer
        self._whole_max = 64 << 20
        err = _lib._Error()
        enc = os.fsencode(self.url)
        if _lib.is_s3(self._lib, enc):
            cfg = S3Config()
            self._lib.sk_s3_config_init_sized(_c.byref(cfg), _c.sizeof(cfg))
            self._endpoint = s3_endpoint.encode() if s3_endpoint else None
            cfg.endpoint_url = self._endpoint
            s3 = _c.c_void_p()
            _lib.check(self._lib.sk_s3_new(_c.byref(s3), _c.byref(cfg), _c.byref(err)), err)
            self._s3 = s3
        ds = _c.c_void_p()
        rc = self._lib.sk_dataset_open_s3(_c.byref(ds), enc, self._s3,
                                          TRUST_INDEX if trust_index else 0, _c.byref(err))
        if rc:
            self.close()
            raise _lib.error_from(rc, err)
        self._ds = ds
        if _EXT is not None:
            addr = [_c.cast(f, _c.c_void_p).value for f in (
                self._lib.sk_dataset_get, self._lib.sk_dataset_at, self._lib.sk_dataset_find,
                self._lib.sk_dataset_member, self._lib.sk_dataset_read,
                self._lib.sk_dataset_read_sample, self._lib.sk_dataset_samples,
                self._lib.sk_dataset_set_range_open, self._lib.sk_crc32c)]
            self._x = _EXT.Getter(ds.value, *addr, self.url, _ext_error)

    @property
    def backend(self) -> str:
        """"ext" when the compiled shardkit._ext serves this dataset's
        ds[i], get(key) and __getitems__, else "ctypes"."""
        self._handle()
        return "ctypes" if self._x is None else "ext"

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Releases the dataset (and its S3 client).  No other thread may
        be using it then."""
        x = getattr(self, "_x", None)
        if x is not None:
            self._x = None
            x.close()
        if getattr(self, "_ds", None):
            self._lib.sk_dataset_close(self._ds)
            self._ds = None
        if getattr(self, "_s3", None):
            self._lib.sk_s3_free(self._s3)
            self._s3 = None

    __del__ = close

    def __enter__(self) -> "Dataset":
        self._handle()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __getstate__(self) -> Dict[str, Any]:
        return {"url": self.url, "trust_index": self.trust_index,
                "s3_endpoint": self.s3_endpoint, "lib": self._libpath}

    def __setstate__(self, st: Dict[str, Any]) -> None:
        self.__init__(st["url"], trust_index=st["trust_index"],  # type: ignore[misc]
                      s3_endpoint=st["s3_endpoint"], lib=st["lib"])

    def __repr__(self) -> str:
        return "shardkit.Dataset(%r)" % self.url

    # ------------------------------------------------------------- lookups

    def _err(self) -> "_lib._Error":
        """This thread's sk_error."""
        return self._tls.err

    def _handle(self) -> ctypes.c_void_p:
        if self._gen != _fork_gen:
            # a forked child (a DataLoader worker): the parent's S3 client
            # thread and lock did not come along, so open anew; the
            # inherited handles are dropped, not closed (that would wait
            # for a thread that is not in this process)
            self._ds = self._s3 = None
            self.__setstate__(self.__getstate__())
        if not self._ds:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s: the dataset is closed" % self.url)
        return self._ds

    def __len__(self) -> int:
        """Samples in the dataset (opens every index unless a manifest
        gives the counts)."""
        if self._len is None:
            n = _c.c_uint64()
            err = self._err()
            _lib.check(self._lib.sk_dataset_samples(self._handle(), _c.byref(n),
                                                    _c.byref(err)), err)
            self._len = n.value
        return self._len

    def _ordinal(self, i: Any) -> int:
        """i as a global ordinal (negative: from the end); SampleIndexError
        when none can be (below the start, or past what a uint64 holds,
        which ctypes would wrap round to a sample that exists)."""
        j = _as_index(i)
        if j < 0:
            j += len(self)
        if not 0 <= j < _U64:
            raise _lib.SampleIndexError(_lib.SK_E_NOTFOUND, "%s: no sample #%d" %
                                        (self.url, int(i)))
        return j

    def _at(self, ordinal: int) -> Hit:
        h = Hit()
        err = self._err()
        ordinal = self._ordinal(ordinal)
        rc = self._lib.sk_dataset_at(self._handle(), ordinal, _c.byref(h), _c.byref(err))
        _lib.check(rc, err, _lib.SampleIndexError)
        return h

    def _find(self, key: Union[str, bytes]) -> Hit:
        k = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else bytes(key)
        h = Hit()
        err = self._err()
        rc = self._lib.sk_dataset_find(self._handle(), k, len(k), _c.byref(h), _c.byref(err))
        _lib.check(rc, err, _lib.KeyNotFoundError)
        return h

    def _members(self, h: Hit) -> List[MemberRef]:
        out = []
        err = self._err()
        for i in range(h.sample.member_count):
            m = MemberRef()
            _lib.check(self._lib.sk_dataset_member(self._handle(), _c.byref(h), i, _c.byref(m),
                                                   _c.byref(err)), err)
            out.append(m)
        return out

    def _url(self, shard: int, path: Any) -> str:
        url = self._urls.get(shard)
        if url is None:
            url = self._urls[shard] = _c.string_at(path).decode("utf-8", "surrogateescape")
        return url

    def _ext(self, ext: int, ext_len: int) -> str:
        """An extension's name, by the address of its bytes in the index
        (mapped while the dataset is open): decoded once."""
        name = self._exts.get(ext)
        if name is None:
            if len(self._exts) > 4096:
                self._exts.clear()
            name = self._exts[ext] = _c.string_at(ext, ext_len).decode("utf-8",
                                                                        "surrogateescape")
        return name

    def _read(self, h: Hit, exts: Optional[Set[str]] = None) -> Sample:
        """The members of a sample found before (those in exts), member by
        member: one buffer each."""
        ds = self._handle()
        err = self._err()
        d: Sample = {
            "__key__": _c.string_at(h.sample.key, h.sample.key_len).decode("utf-8",
                                                                           "surrogateescape"),
            "__url__": self._url(h.shard, h.shard_path),
            "__index__": h.global_ordinal,
            "__ordinal__": h.sample.ordinal,
        }
        for i, m in enumerate(self._members(h)):
            ext = self._ext(m.ext, m.ext_len)
            if exts is not None and ext not in exts:
                continue
            size = int(m.size)
            mbuf = (_c.c_char * max(size, 1))()
            _lib.check(self._lib.sk_dataset_read(ds, _c.byref(h), i, mbuf, size,
                                                 _c.byref(err)), err)
            d[ext] = mbuf.raw[:size] if size else b""
        return d

    def _get(self, key: Optional[bytes], ordinal: int) -> Sample:
        """The whole sample with this key (key not None) or at this global
        ordinal: one sk_dataset_get into the thread's buffer (grown, or a
        buffer of this call's own, when the sample needs more).  The
        buffer holds the member records, the key, the extensions (NUL
        after each) and the data; the extensions' bytes map to their names
        through a cache (most samples of a dataset share them)."""
        ds = self._ds
        if self._gen != _fork_gen or not ds:
            ds = self._handle()
        if self._x is not None:
            return self._x.get(key, ordinal)
        t = self._tls
        klen = len(key) if key is not None else 0
        buf, cap, mv, base = t.buf, t.cap, t.mv, t.base
        rc = self._get_fn(ds, key, klen, ordinal, buf, cap, t.rref, t.eref)
        if rc:
            need = t.res.need
            if rc != _lib.SK_E_USAGE or need <= cap:
                raise _lib.error_from(rc, t.err, _lib.KeyNotFoundError if key is not None
                                      else _lib.SampleIndexError)
            if need > self._whole_max:   # a huge sample: one buffer per member
                return self._read(Hit.from_buffer_copy(t.res.hit))
            if need <= _KEEP_BUF:
                t.keep(max(need, 2 * cap))
                buf, cap, mv, base = t.buf, t.cap, t.mv, t.base
            else:   # this call's own
                cap = need
                buf = (_c.c_char * cap)()
                mv, base = memoryview(buf).cast("B"), _c.addressof(buf)
            rc = self._get_fn(ds, key, klen, ordinal, buf, cap, t.rref, t.eref)
            if rc:
                raise _lib.error_from(rc, t.err)
        return self._sample(_RESULT.unpack_from(t.res), mv, base)

    def _sample(self, fields: Any, mv: Any, base: int) -> Sample:
        """The dict of a sample sk_dataset_get(_many) put in the buffer at
        address base (mv: the buffer's bytes); fields: its result's
        _RESULT."""
        shard, spath, gord, ordinal, key_len, n, _need, kp, dp = fields
        url = self._urls.get(shard)
        if url is None:
            url = self._url(shard, spath)
        ko, pos = kp - base, dp - base
        d: Sample = {"__key__": str(mv[ko:ko + key_len], "utf-8", "surrogateescape"),
                     "__url__": url, "__index__": gord, "__ordinal__": ordinal}
        raw = mv[ko + key_len + 1:pos].tobytes()
        names = self._names.get(raw)
        if names is None:
            if len(self._names) > 1024:
                self._names.clear()
            names = self._names[raw] = str(raw, "utf-8", "surrogateescape").split("\0")[:n]
        for name, (size,) in zip(names, _SIZE.iter_unpack(mv[ko - n * _SIZE.size:ko])):
            d[name] = mv[pos:pos + size].tobytes()
            pos += size
        return d

    def __getitem__(self, i: Union[int, slice, str, bytes]) -> Any:
        """The sample at global ordinal i (negative: from the end); a slice
        gives a list; a str (or bytes) is a key, as get(key).
        SampleIndexError (an IndexError) when out of range,
        KeyNotFoundError (a KeyError) for a missing key, TypeError for
        anything else (a float, a bool: not silently truncated)."""
        if type(i) is int and 0 <= i < _U64:
            x = self._x
            if x is not None and self._gen == _fork_gen:
                return x.get(None, i)
            return self._get(None, i)
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if isinstance(i, (str, bytes)):
            return self.get(i)
        return self._get(None, self._ordinal(i))

    def __getitems__(self, indices: List[int]) -> List[Sample]:
        """The samples at these global ordinals (negative: from the end), in
        order: [ds[i] for i in indices], with one call into the library per
        buffer-full rather than one per sample.  A PyTorch DataLoader calls
        this with each batch of its sampler's indices."""
        ds = self._ds
        if self._gen != _fork_gen or not ds:
            ds = self._handle()
        if self._x is not None:
            return self._x.get_many(indices)
        t = self._tls
        ords, results, rmv, done = t.batch()
        stride = _c.sizeof(GetResult)
        out: List[Sample] = []
        wanted = list(indices)
        at = 0
        while at < len(wanted):
            chunk = wanted[at:at + _BATCH]
            for j, i in enumerate(chunk):
                ords[j] = i if type(i) is int and 0 <= i < _U64 else self._ordinal(i)
            ds = self._handle()
            first = 0
            while first < len(chunk):
                buf, cap, mv, base = t.buf, t.cap, t.mv, t.base
                rc = self._many_fn(ds, _c.byref(ords, first * 8), len(chunk) - first, buf, cap,
                                   results, _c.byref(done), t.eref)
                k = done.value
                for j in range(k):
                    out.append(self._sample(_RESULT.unpack_from(rmv, j * stride), mv, base))
                first += k
                if rc == _lib.SK_E_USAGE and k:
                    # the buffer is full: the rest in the next call, into a
                    # bigger one while the thread keeps growing its own
                    if cap < _KEEP_BUF:
                        t.keep(min(_KEEP_BUF, 4 * cap))
                    continue
                if rc:
                    if rc != _lib.SK_E_USAGE or results[0].need <= cap:
                        raise _lib.error_from(rc, t.err, _lib.SampleIndexError)
                    out.append(self._get(None, ords[first]))   # grows the buffer
                    first += 1
            at += len(chunk)
        return out

    def get(self, key: Union[str, bytes], exts: Optional[List[str]] = None) -> Sample:
        """The sample with this key; exts limits the members read.
        KeyNotFoundError (a KeyError) when no sample has it."""
        if exts is None:
            k = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else bytes(key)
            return self._get(k, 0)
        return self._read(self._find(key), set(exts))

    def read(self, i: int, exts: Optional[List[str]] = None) -> Sample:
        """ds[i] with only the members whose extension is in exts read."""
        if exts is None:
            return self[i]
        return self._read(self._at(i), set(exts))

    def index_of(self, key: Union[str, bytes]) -> int:
        """The global ordinal of the sample with this key."""
        return int(self._find(key).global_ordinal)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, (str, bytes)):
            return False
        try:
            self._find(key)
            return True
        except _lib.KeyNotFoundError:
            return False

    def __iter__(self) -> Iterator[Sample]:
        for i in range(len(self)):
            yield self[i]

    def info(self, i: int) -> Dict[str, Any]:
        """Where sample i is, without reading it: key, shard url, ordinal,
        offset, span and each member's extension, size and CRC32C."""
        h = self._at(i)
        ms = self._members(h)
        return {"key": _c.string_at(h.sample.key, h.sample.key_len).decode(
                    "utf-8", "surrogateescape"),
                "url": h.shard_path.decode("utf-8", "surrogateescape"),
                "shard": h.shard, "index": h.global_ordinal, "ordinal": h.sample.ordinal,
                "offset": h.sample.offset, "span": h.sample.span,
                "members": [{"ext": _c.string_at(m.ext, m.ext_len).decode(
                                 "utf-8", "surrogateescape"),
                             "size": m.size, "crc32c": m.crc32c} for m in ms]}
