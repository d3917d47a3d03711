"""dataset.py - shardkit.Dataset: map-style random access to a dataset's
samples through the .idx sidecars (sk_dataset_*, the lookup `shardkit get`
uses): by global ordinal or by key, each member one pread (or one ranged
GET on S3) checked against its CRC32C.

Thread safety: libshardkit's sk_dataset opens a shard's index and the
shard itself lazily, on first use, and is not safe for concurrent calls
while it does.  So lookups (ordinal or key -> record) run under a lock,
and so does every read from a shard until one read through it has
completed (the shard is then open, its index proven to belong to it and,
for .tar.zst, its seek table loaded); after that, reads from it run
without the lock, in parallel (ctypes releases the GIL during the call).
"""
from __future__ import annotations

import ctypes
import os
import struct
import threading
from typing import Any, Dict, Iterator, List, Optional, Set, Union

from . import _lib
from ._lib import Hit, MemberRef, S3Config

_c = ctypes
Sample = Dict[str, Any]

# sk_hit and sk_member_ref read in one struct call each (a ctypes field
# access per value costs as much as the rest of a lookup)
_HIT = struct.Struct("=QQQQQQQQQQII")
_MEMBER = struct.Struct("=QQQQII")
assert _HIT.size == _c.sizeof(Hit) and _MEMBER.size == _c.sizeof(MemberRef)

# bumped in a forked child (a DataLoader worker): a dataset opened before
# the fork opens anew in the child (see _handle); cheaper than asking the
# kernel for the pid on every lookup
_fork_gen = 0


def _forked() -> None:
    global _fork_gen
    _fork_gen += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)

#: samples up to this span are read into a thread's reused buffer
_KEEP_BUF = 4 << 20


class _Thread(threading.local):
    """A thread's work space for lookups: made once per thread, not per
    call (the sk_error alone is 1 KiB)."""

    def __init__(self) -> None:
        self.err = _lib._Error()
        self.eref = _c.byref(self.err)
        self.hit = Hit()
        self.href = _c.byref(self.hit)
        self.nm = 0
        self.members: Any = None
        self.mmv: Any = None
        self.cap = 0
        self.buf: Any = None
        self.mv: Any = None

    def room(self, n: int, span: int) -> Any:
        """Makes room for n members and span bytes; returns a buffer of
        this call's own when span is too big to keep (else None)."""
        if n > self.nm:
            self.nm = max(n, 16)
            self.members = (MemberRef * self.nm)()
            self.mmv = memoryview(self.members).cast("B")
        if span > self.cap:
            cap = max(span, 256 << 10)
            buf = (_c.c_char * cap)()
            if cap > _KEEP_BUF:    # a big sample: this call's buffer only
                return buf
            self.cap, self.buf = cap, buf
            self.mv = memoryview(buf).cast("B")
        return None

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
        self.url = os.fspath(url)
        self.trust_index = bool(trust_index)
        self.s3_endpoint = s3_endpoint
        self._libpath = lib
        self._lib = _lib.load_library(lib)
        self._lock = threading.Lock()
        self._warm: Set[int] = set()
        self._len: Optional[int] = None
        self._gen = _fork_gen
        self._tls = _Thread()
        self._exts: Dict[int, str] = {}   # an index's extension (by address) -> str
        self._urls: Dict[int, str] = {}   # shard position -> its path
        # samples up to this span are read in one call into one buffer
        self._whole_max = 64 << 20
        err = _lib._Error()
        enc = os.fsencode(self.url)
        if enc.startswith(b"s3://"):
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

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Releases the dataset (and its S3 client).  No other thread may
        be using it then."""
        if getattr(self, "_ds", None):
            self._lib.sk_dataset_close(self._ds)
            self._ds = None
        if getattr(self, "_s3", None):
            self._lib.sk_s3_free(self._s3)
            self._s3 = None

    __del__ = close

    def __enter__(self) -> "Dataset":
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
            with self._lock:
                _lib.check(self._lib.sk_dataset_samples(self._handle(), _c.byref(n),
                                                        _c.byref(err)), err)
            self._len = n.value
        return self._len

    def _at(self, ordinal: int) -> Hit:
        h = Hit()
        err = self._err()
        if ordinal < 0:
            raise _lib.SampleIndexError(_lib.SK_E_NOTFOUND, "%s: no sample #%d" %
                                        (self.url, ordinal))
        with self._lock:
            rc = self._lib.sk_dataset_at(self._handle(), ordinal, _c.byref(h), _c.byref(err))
        _lib.check(rc, err, _lib.SampleIndexError)
        return h

    def _find(self, key: Union[str, bytes]) -> Hit:
        k = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else bytes(key)
        h = Hit()
        err = self._err()
        with self._lock:
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

    def _read(self, h: Hit, exts: Optional[Set[str]] = None) -> Sample:
        ds = self._ds   # _at or _find has just checked it (and the process)
        err = self._err()
        d: Sample = {
            "__key__": _c.string_at(h.sample.key, h.sample.key_len).decode("utf-8",
                                                                           "surrogateescape"),
            "__url__": h.shard_path.decode("utf-8", "surrogateescape"),
            "__index__": h.global_ordinal,
            "__ordinal__": h.sample.ordinal,
        }
        n = h.sample.member_count
        if exts is None and h.sample.span <= self._whole_max:
            # the whole sample in one call: its members' data, back to back,
            # fit in the sample's span (headers and padding included)
            cap = int(h.sample.span)
            buf = (_c.c_char * max(cap, 1))()
            ms = (MemberRef * n)()
            rc = self._lib.sk_dataset_read_sample(ds, _c.byref(h), buf, cap, ms, n,
                                                  _c.byref(err))
            if rc == 0:
                mv = memoryview(buf).cast("B")
                pos = 0
                for m in ms:
                    size = int(m.size)
                    d[_c.string_at(m.ext, m.ext_len).decode("utf-8", "surrogateescape")] = \
                        mv[pos:pos + size].tobytes()
                    pos += size
                return d
            if rc != _lib.SK_E_USAGE:   # else the index's sizes are odd: member by member
                raise _lib.error_from(rc, err)
        for i, m in enumerate(self._members(h)):
            ext = _c.string_at(m.ext, m.ext_len).decode("utf-8", "surrogateescape")
            if exts is not None and ext not in exts:
                continue
            size = int(m.size)
            mbuf = (_c.c_char * max(size, 1))()
            _lib.check(self._lib.sk_dataset_read(ds, _c.byref(h), i, mbuf, size,
                                                 _c.byref(err)), err)
            d[ext] = mbuf.raw[:size] if size else b""
        return d

    def _fast(self, t: _Thread, at: bool, where: Any) -> Sample:
        """The whole sample at an ordinal (at) or key: one call for the
        record, one that reads all members into the thread's buffer, the
        records read with struct, extension names and shard paths cached.
        Falls back to _sample for what it does not cover."""
        ds = self._ds
        if self._gen != _fork_gen or not ds:
            ds = self._handle()
        lib = self._lib
        with self._lock:
            if at:
                rc = lib.sk_dataset_at(ds, where, t.href, t.eref)
            else:
                rc = lib.sk_dataset_find(ds, where, len(where), t.href, t.eref)
        if rc:
            raise _lib.error_from(rc, t.err, _lib.SampleIndexError if at else
                                  _lib.KeyNotFoundError)
        (shard, path, gord, ordinal, key, key_len, _off, span, soff, _ss, _first,
         n) = _HIT.unpack_from(t.hit)
        if span > self._whole_max or shard not in self._warm:
            return self._sample(t.hit)
        own = t.room(n, span) if n > t.nm or span > t.cap else None
        buf, cap = (own, len(own)) if own is not None else (t.buf, t.cap)
        rc = lib.sk_dataset_read_sample(ds, t.href, buf, cap, t.members, n, t.eref)
        if rc:
            if rc != _lib.SK_E_USAGE:
                raise _lib.error_from(rc, t.err)
            return self._sample(t.hit)   # the index's sizes are odd: member by member
        url = self._urls.get(shard)
        if url is None:
            url = self._urls[shard] = _c.string_at(path).decode("utf-8", "surrogateescape")
        d: Sample = {"__key__": _c.string_at(key, key_len).decode("utf-8", "surrogateescape"),
                     "__url__": url, "__index__": gord, "__ordinal__": ordinal}
        mv = t.mv if own is None else memoryview(own).cast("B")
        names = self._exts
        pos = 0
        for ext, ext_len, _do, size, _hl, _crc in _MEMBER.iter_unpack(t.mmv[:n * _MEMBER.size]):
            name = names.get(ext)
            if name is None:
                if len(names) > 4096:
                    names.clear()
                name = names[ext] = _c.string_at(ext, ext_len).decode("utf-8",
                                                                      "surrogateescape")
            d[name] = mv[pos:pos + size].tobytes()
            pos += size
        return d

    def _sample(self, h: Hit, exts: Optional[Set[str]] = None) -> Sample:
        if h.shard in self._warm:
            return self._read(h, exts)
        with self._lock:
            d = self._read(h, exts)
            # a read at a stored offset past 0 has opened the shard and,
            # for .tar.zst, loaded its seek table: nothing lazy is left
            if h.sample.stored_offset != 0 and (exts is None or len(d) > 4):
                self._warm.add(h.shard)
        return d

    def __getitem__(self, i: Union[int, slice]) -> Any:
        """The sample at global ordinal i (negative: from the end); a slice
        gives a list.  SampleIndexError (an IndexError) when out of range."""
        if type(i) is not int:
            if isinstance(i, slice):
                return [self[j] for j in range(*i.indices(len(self)))]
            i = int(i)
        if i < 0:
            i += len(self)
            if i < 0:
                raise _lib.SampleIndexError(_lib.SK_E_NOTFOUND, "%s: no sample #%d" %
                                            (self.url, i))
        return self._fast(self._tls, True, i)

    def get(self, key: Union[str, bytes], exts: Optional[List[str]] = None) -> Sample:
        """The sample with this key; exts limits the members read.
        KeyNotFoundError (a KeyError) when no sample has it."""
        if exts is None:
            k = key.encode("utf-8", "surrogateescape") if isinstance(key, str) else bytes(key)
            return self._fast(self._tls, False, k)
        return self._sample(self._find(key), set(exts))

    def read(self, i: int, exts: Optional[List[str]] = None) -> Sample:
        """ds[i] with only the members whose extension is in exts read."""
        i = int(i)
        if i < 0:
            i += len(self)
        return self._sample(self._at(i), set(exts) if exts is not None else None)

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
        h = self._at(int(i) + (len(self) if int(i) < 0 else 0))
        with self._lock:
            ms = self._members(h)
        return {"key": _c.string_at(h.sample.key, h.sample.key_len).decode(
                    "utf-8", "surrogateescape"),
                "url": h.shard_path.decode("utf-8", "surrogateescape"),
                "shard": h.shard, "index": h.global_ordinal, "ordinal": h.sample.ordinal,
                "offset": h.sample.offset, "span": h.sample.span,
                "members": [{"ext": _c.string_at(m.ext, m.ext_len).decode(
                                 "utf-8", "surrogateescape"),
                             "size": m.size, "crc32c": m.crc32c} for m in ms]}
