"""reader.py - shardkit.Reader: sequential iteration over a shard list
through libshardkit's reader (sk_reader_*, docs/reader.md): shards split by
rank and worker, shuffled per (seed, epoch), an optional sample shuffle
buffer, and a small state that resumes exactly after a restart."""
from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from . import _lib
from ._lib import ReaderOptions, ReaderSample, ReaderState, ReaderStats

_c = ctypes
PathOrUrl = Union[str, bytes, "os.PathLike[str]"]
Sample = Dict[str, Any]


class Reader:
    """Iterates the samples of a shard list (see sk_reader_open).  Each
    sample is a dict: "__key__" (str), "__url__" (the shard), "__ordinal__"
    (within the shard), and one bytes value per member extension.

    urls: shards (.tar, .tar.zst), brace patterns, a manifest, a directory
    or an s3:// URL of any of these (s3://bucket/prefix/: its manifest.json,
    else its listed shards, as a directory); one or a list.  The options mirror
    sk_reader_options; None for rank / world_size / worker / num_workers
    means the environment ($RANK, $WORLD_SIZE, $WORKER, $NUM_WORKERS, else
    0 / 1).  recordio: every URL is RecordIO records, one shard each (a
    SageMaker Pipe channel with RecordWrapperType=RecordIO; docs/sagemaker.md).
    Failures raise shardkit.Error subclasses."""

    def __init__(self, urls: Union[PathOrUrl, Sequence[PathOrUrl]], rank: Optional[int] = None,
                 world_size: Optional[int] = None, worker: Optional[int] = None,
                 num_workers: Optional[int] = None, shuffle_shards: bool = False,
                 shuffle_buffer: int = 0, seed: int = 0, epoch: int = 0, prefetch: int = 2,
                 buffer_size: int = 4 << 20, max_sample: int = 1 << 30,
                 skip_errors: bool = False, cache_dir: Optional[PathOrUrl] = None,
                 cache_size: int = 0, s3_endpoint: Optional[str] = None,
                 recordio: bool = False, lib: Optional[str] = None) -> None:
        self._h: Optional[ctypes.c_void_p] = None
        self._lib = _lib.load_library(lib)
        if isinstance(urls, (str, bytes, os.PathLike)):
            urls = [urls]
        o = ReaderOptions()
        self._lib.sk_reader_options_init_sized(_c.byref(o), _c.sizeof(o))
        for name, v in (("rank", rank), ("world_size", world_size), ("worker", worker),
                        ("num_workers", num_workers)):
            if v is not None:
                _lib.set_int(o, name, v)
        o.shuffle_shards = 1 if shuffle_shards else 0
        for name, v in (("shuffle_buffer", shuffle_buffer), ("seed", seed), ("epoch", epoch),
                        ("prefetch", prefetch), ("buffer_size", buffer_size),
                        ("max_sample", max_sample), ("cache_size", cache_size)):
            _lib.set_int(o, name, v)
        o.skip_errors = 1 if skip_errors else 0
        self._cache_dir = os.fsencode(cache_dir) if cache_dir else None
        o.cache_dir = self._cache_dir
        self._endpoint = s3_endpoint.encode() if s3_endpoint else None
        o.s3_endpoint = self._endpoint
        o.recordio = 1 if recordio else 0
        enc = [os.fsencode(u) for u in urls]
        arr = (_c.c_char_p * len(enc))(*enc)
        err = _lib._Error()
        h = _c.c_void_p()
        _lib.check(self._lib.sk_reader_open(_c.byref(h), arr, len(enc), _c.byref(o),
                                            _c.byref(err)), err)
        self._h = h
        self.epoch = int(epoch)

    def close(self) -> None:
        """Stops the reader's threads and releases it (also on `with` exit)."""
        if getattr(self, "_h", None):
            self._lib.sk_reader_close(self._h)
            self._h = None

    __del__ = close

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def next_raw(self) -> Optional[ReaderSample]:
        """The next sample as the C struct (pointers valid until the next
        call), or None at the end of the epoch: for zero-copy use."""
        p = _c.POINTER(ReaderSample)()
        err = _lib._Error()
        _lib.check(self._lib.sk_reader_next(self._h, _c.byref(p), _c.byref(err)), err)
        return p.contents if p else None

    def __iter__(self) -> Iterator[Sample]:
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

    def start_epoch(self, epoch: int) -> None:
        """Starts another epoch from its beginning (its own shuffle)."""
        err = _lib._Error()
        _lib.check(self._lib.sk_reader_start_epoch(self._h, int(epoch), _c.byref(err)), err)
        self.epoch = int(epoch)

    def state(self) -> bytes:
        """Where the reader is, as bytes (sk_reader_state): save them with
        the checkpoint and hand them to restore() of a reader opened with
        the same options."""
        st = ReaderState()
        self._lib.sk_reader_get_state(self._h, _c.byref(st))
        return bytes(st)

    def restore(self, state: bytes) -> None:
        """Continues from bytes that state() returned (same options);
        MismatchError when they belong to another split, seed or list."""
        if len(state) != _c.sizeof(ReaderState):
            raise _lib.UsageError(_lib.SK_E_USAGE, "reader state is %d bytes, not %d" %
                                  (len(state), _c.sizeof(ReaderState)))
        st = ReaderState.from_buffer_copy(state)
        err = _lib._Error()
        _lib.check(self._lib.sk_reader_restore(self._h, _c.byref(st), _c.byref(err)), err)
        self.epoch = st.epoch

    def stats(self) -> Dict[str, int]:
        """Counters: samples, bytes, shards_done, shards_skipped,
        cache_hits, cache_misses, ring_grows."""
        st = ReaderStats()
        self._lib.sk_reader_get_stats(self._h, _c.byref(st))
        return {n: getattr(st, n) for n, _ in ReaderStats._fields_}

    @property
    def shard_count(self) -> int:
        """Shards in the whole list."""
        return self._lib.sk_reader_shard_count(self._h)

    @property
    def slot_shards(self) -> int:
        """Shards in this reader's slot (rank, worker) for this epoch."""
        return self._lib.sk_reader_slot_shards(self._h)

    @property
    def shard_urls(self) -> List[str]:
        """The whole shard list, resolved (patterns, manifests, directories)."""
        return [self._lib.sk_reader_shard_url(self._h, i).decode("utf-8", "surrogateescape")
                for i in range(self.shard_count)]


def state_slot(state: bytes) -> int:
    """The slot (rank * num_workers + worker) a Reader.state() belongs to."""
    return ReaderState.from_buffer_copy(state).slot


def state_info(state: bytes) -> Dict[str, int]:
    """The fields of a Reader.state() (slot, slots, epoch, yielded, ...)."""
    st = ReaderState.from_buffer_copy(state)
    return {n: getattr(st, n) for n, _ in ReaderState._fields_}
