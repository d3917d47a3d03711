"""reader.py - shardkit.Reader: sequential iteration over a shard list
through libshardkit's reader (sk_reader_*, docs/reader.md): shards split by
rank and worker, shuffled per (seed, epoch), an optional sample shuffle
buffer, and a small state that resumes exactly after a restart."""
from __future__ import annotations

import ctypes
import os
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import _lib
from ._lib import ReaderOptions, ReaderPosition, ReaderSample, ReaderState, ReaderStats

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
    Failures raise shardkit.Error subclasses.

    A Reader is an iterator (``next(r)``, ``for s in r``: the rest of the
    current epoch), with ``len(r)`` when the shards' indexes give it, and
    WebDataset's stages: ``r.decode("pil").to_tuple("jpg", "cls")``.
    Threads: calls are serialised by a lock, so threads sharing one reader
    each get different samples (never one twice); for parallel reading give
    each thread its own reader and slot (worker=, num_workers=).  After
    close() (or its `with` block) every call raises UsageError."""

    def __init__(self, urls: Union[PathOrUrl, Sequence[PathOrUrl]], rank: Optional[int] = None,
                 world_size: Optional[int] = None, worker: Optional[int] = None,
                 num_workers: Optional[int] = None, shuffle_shards: bool = False,
                 shuffle_buffer: int = 0, seed: int = 0, epoch: int = 0, prefetch: int = 2,
                 buffer_size: int = 4 << 20, max_sample: int = 1 << 30,
                 skip_errors: bool = False, cache_dir: Optional[PathOrUrl] = None,
                 cache_size: int = 0, s3_endpoint: Optional[str] = None,
                 recordio: bool = False, lib: Optional[str] = None,
                 global_order: bool = False, shuffle_window: int = 8, batch_size: int = 1,
                 read_ahead: int = 8 << 20,
                 proportion: Optional[Sequence[float]] = None,
                 repeat: Optional[Sequence[float]] = None,
                 choose: Optional[Sequence[int]] = None, samples_per_epoch: int = 0) -> None:
        self._h: Optional[ctypes.c_void_p] = None
        # one lock for every call through the handle: the C reader is for
        # one thread at a time (a second thread's sk_reader_next would
        # race the first's and reuse the buffer its sample points into)
        self._lock = threading.Lock()
        self._stages: List[Tuple[str, Callable[[Any], Any]]] = []
        self._len: Optional[int] = None
        self._recordio = bool(recordio)
        self._endpoint_str = s3_endpoint
        self._lib = _lib.load_library(lib)
        if isinstance(urls, (str, bytes, os.PathLike)):
            urls = [urls]
        names = [os.fsdecode(u) for u in urls]
        self._inputs = names
        self._name = names[0] if len(names) == 1 else "%s (+%d)" % (names[0], len(names) - 1) \
            if names else "[]"
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
        # the global order (docs/reader.md): one sequence whatever the
        # world, split by position, resumed from a position
        self._global = bool(global_order)
        o.global_order = 1 if global_order else 0
        for name, v in (("shuffle_window", shuffle_window), ("batch_size", batch_size),
                        ("read_ahead", read_ahead), ("samples_per_epoch", samples_per_epoch)):
            _lib.set_int(o, name, v)
        # mixing: one entry per url (None: unset), kept alive with the reader
        self._mix = []
        for name, vals, ctype in (("proportion", proportion, _c.c_double),
                                  ("repeat", repeat, _c.c_double),
                                  ("choose", choose, _c.c_uint64)):
            if vals is None:
                continue
            vals = list(vals)
            if len(vals) != len(names):
                raise _lib.UsageError(_lib.SK_E_USAGE, "%s: %d values for %d urls" %
                                      (name, len(vals), len(names)))
            arr = (ctype * len(vals))(*[0 if v is None else v for v in vals])
            self._mix.append(arr)
            setattr(o, name, _c.cast(arr, _c.c_void_p))
        enc = [os.fsencode(u) for u in urls]
        arr = (_c.c_char_p * len(enc))(*enc)
        err = _lib._Error()
        h = _c.c_void_p()
        _lib.check(self._lib.sk_reader_open(_c.byref(h), arr, len(enc), _c.byref(o),
                                            _c.byref(err)), err)
        # next()'s work space, made once (the sk_error alone is 1 KiB)
        self._next_fn = self._lib.sk_reader_next
        self._p = _c.POINTER(ReaderSample)()
        self._pref = _c.byref(self._p)
        self._err = err
        self._eref = _c.byref(err)
        self._h = h
        self.epoch = int(epoch)

    def close(self) -> None:
        """Stops the reader's threads and releases it (also on `with` exit).
        Every later call raises UsageError ("the reader is closed");
        close() again does nothing."""
        lock = getattr(self, "_lock", None)
        if lock is None:   # __init__ failed before the handle existed
            return
        with lock:
            if self._h:
                self._lib.sk_reader_close(self._h)
                self._h = None

    def __del__(self) -> None:
        self.close()

    def _handle(self) -> ctypes.c_void_p:
        """The open handle, or UsageError: the C reader is freed at close,
        and a call through a freed handle would crash the interpreter.
        Callers hold self._lock."""
        if not self._h:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s: the reader is closed" % self._name)
        return self._h

    def __enter__(self) -> "Reader":
        with self._lock:
            self._handle()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        """Its input, its stages, where it stands: "<shardkit.Reader
        'data/' .decode().to_tuple() epoch 0, slot 1 of 4, 3 of 10 shards>"."""
        stages = "".join(" .%s()" % n for n, _ in getattr(self, "_stages", ()))
        lock = getattr(self, "_lock", None)
        # a second's wait at most: another thread's next() may hold the lock
        if lock is None or not lock.acquire(timeout=1.0):
            return "<shardkit.Reader %r%s busy>" % (getattr(self, "_name", "?"), stages)
        try:
            h = self._h
            if not h:
                return "<shardkit.Reader %r%s closed>" % (self._name, stages)
            st = ReaderState()
            self._lib.sk_reader_get_state(h, _c.byref(st))
            return "<shardkit.Reader %r%s epoch %d, slot %d of %d, %d of %d shards, %d " \
                "samples yielded>" % (self._name, stages, st.epoch, st.slot, st.slots,
                                      self._lib.sk_reader_slot_shards(h), st.shards, st.yielded)
        finally:
            lock.release()

    def next_raw(self) -> Optional[ReaderSample]:
        """The next sample as the C struct (pointers valid until the next
        call), or None at the end of the epoch: for zero-copy use, from one
        thread (another thread's call would replace what it points to)."""
        with self._lock:
            return self._next_raw()

    def _next_raw(self) -> Optional[ReaderSample]:
        p = _c.POINTER(ReaderSample)()
        err = _lib._Error()
        _lib.check(self._lib.sk_reader_next(self._handle(), _c.byref(p), _c.byref(err)), err)
        return p.contents if p else None

    def __iter__(self) -> "Reader":
        """The reader itself: next() gives the rest of the current epoch."""
        return self

    def __next__(self) -> Any:
        """The next sample of the epoch (a dict, or what the stages added
        by decode() / to_tuple() / map() make of it); StopIteration at its
        end (start_epoch() begins another).  The C sample's pointers are
        valid only until the next sk_reader_next, so it is copied into the
        dict under the lock, before another thread may call it."""
        string_at = _c.string_at
        with self._lock:
            h = self._h
            if not h:
                self._handle()
            rc = self._next_fn(h, self._pref, self._eref)
            if rc:
                raise _lib.error_from(rc, self._err)
            p = self._p
            if not p:
                raise StopIteration
            s = p.contents
            d = {"__key__": string_at(s.key, s.key_len).decode("utf-8", "surrogateescape"),
                 "__url__": s.shard_url.decode("utf-8", "surrogateescape"),
                 "__ordinal__": s.ordinal}
            if self._global:
                d["__position__"] = s.position
                d["__dataset__"] = s.dataset
            for i in range(s.nmembers):
                m = s.members[i]
                d[m.ext.decode("utf-8", "surrogateescape")] = string_at(m.data, m.size) \
                    if m.size else b""
        if not self._stages:
            return d
        out: Any = d
        for _, f in self._stages:
            out = f(out)
        return out

    # ------------------------------------------------- WebDataset's stages

    def decode(self, *handlers: Any, only: Optional[Sequence[str]] = None,
               partial: bool = False, pickle: bool = False) -> "Reader":
        """Decodes each sample's members as WebDataset's .decode() does and
        returns the reader (stages chain): handlers are image specs ("pil",
        "rgb8", "torchrgb", ..., see shardkit.decode.IMAGE_SPECS) or
        functions (ext, data) -> value or None; then txt/json/cls/npy...
        Pickled members ("pyd", "pickle", "pkl") are unpickled only with
        pickle=True (unpickling runs code named by the data)."""
        from .decode import Decoder
        self._stages.append(("decode", Decoder(list(handlers), only=only, partial=partial,
                                               pickle=pickle)))
        return self

    def to_tuple(self, *names: str, missing_is_error: bool = True) -> "Reader":
        """Yields tuples of these members instead of dicts, as WebDataset's
        .to_tuple(): "jpg;png" takes the first present, "jpg cls" in one
        string means two; a missing member raises ValueError (None with
        missing_is_error=False)."""
        from .decode import tuple_getter
        self._stages.append(("to_tuple", tuple_getter(names, missing_is_error)))
        return self

    def map(self, f: Callable[[Any], Any]) -> "Reader":
        """Applies f to each sample (after the stages before it)."""
        self._stages.append(("map", f))
        return self

    def __len__(self) -> int:
        """Samples this reader yields in a whole epoch, from the manifest's
        counts or the shards' indexes (.idx sidecars), once: known when
        the slot's shards do not depend on the shuffle (one slot, or
        shuffle_shards off).  TypeError otherwise (len() has no answer),
        naming why.  (list(r) asks for it too, as a size hint.)"""
        if self._global:
            with self._lock:
                return self._lib.sk_reader_slot_left(self._handle())
        if self._len is None:
            with self._lock:
                h = self._handle()
                n = self._lib.sk_reader_shard_count(h)
                st = ReaderState()
                self._lib.sk_reader_get_state(h, _c.byref(st))
                urls = [self._lib.sk_reader_shard_url(h, i).decode("utf-8", "surrogateescape")
                        for i in range(n)]
            if self._recordio:
                raise TypeError("shardkit.Reader: the length of RecordIO input is unknown")
            if st.shuffle_shards and st.slots > 1:
                raise TypeError("shardkit.Reader: with shuffle_shards and %d slots the slot's "
                                "shards change each epoch; its length is unknown" % st.slots)
            from .dataset import Dataset
            total = 0
            # one slot reads everything: the inputs' own counts (a manifest
            # gives them without opening an index); else shard by shard
            for u in (self._inputs if st.slots == 1 else urls[st.slot::st.slots]):
                try:
                    with Dataset(u, trust_index=True, s3_endpoint=self._endpoint_str) as ds:
                        total += len(ds)
                except _lib.Error as e:
                    raise TypeError("shardkit.Reader: the length is unknown: %s" % e) from None
            self._len = total
        return self._len

    # ------------------------------------------------------------ position

    def start_epoch(self, epoch: int) -> None:
        """Starts another epoch from its beginning (its own shuffle)."""
        err = _lib._Error()
        with self._lock:
            _lib.check(self._lib.sk_reader_start_epoch(self._handle(), int(epoch),
                                                       _c.byref(err)), err)
            self.epoch = int(epoch)

    def state(self) -> bytes:
        """Where the reader is, as bytes (sk_reader_state): save them with
        the checkpoint and hand them to restore() of a reader opened with
        the same options."""
        st = ReaderState()
        with self._lock:
            self._lib.sk_reader_get_state(self._handle(), _c.byref(st))
        return bytes(st)

    def restore(self, state: bytes) -> None:
        """Continues from bytes that state() returned (same options);
        MismatchError when they belong to another split, seed or list."""
        if len(state) != _c.sizeof(ReaderState):
            raise _lib.UsageError(_lib.SK_E_USAGE, "reader state is %d bytes, not %d" %
                                  (len(state), _c.sizeof(ReaderState)))
        st = ReaderState.from_buffer_copy(state)
        err = _lib._Error()
        with self._lock:
            _lib.check(self._lib.sk_reader_restore(self._handle(), _c.byref(st), _c.byref(err)),
                       err)
            self.epoch = st.epoch

    # -------------------------------------------- position (global order)

    def position(self, rank_samples: Optional[int] = None) -> bytes:
        """Where the epoch stands in the global order, as bytes
        (sk_reader_position): after every rank consumed rank_samples
        samples since the start or the last seek(), or (None) as this
        reader's own progress implies.  It names no rank or worker: seek()
        of a reader with another world size continues it."""
        p = ReaderPosition()
        err = _lib._Error()
        with self._lock:
            if rank_samples is None:
                rc = self._lib.sk_reader_get_position(self._handle(), _c.byref(p), _c.byref(err))
            else:
                rc = self._lib.sk_reader_position_at(self._handle(), _lib.as_int(
                    rank_samples, "rank_samples"), _c.byref(p), _c.byref(err))
            _lib.check(rc, err)
        return bytes(p)

    def seek(self, position: bytes) -> None:
        """Continues the epoch from a position() (any world size, any
        workers): this slot's share of the samples not yet consumed."""
        if len(position) != _c.sizeof(ReaderPosition):
            raise _lib.UsageError(_lib.SK_E_USAGE, "reader position is %d bytes, not %d" %
                                  (len(position), _c.sizeof(ReaderPosition)))
        p = ReaderPosition.from_buffer_copy(position)
        err = _lib._Error()
        with self._lock:
            _lib.check(self._lib.sk_reader_seek(self._handle(), _c.byref(p), _c.byref(err)), err)
            self.epoch = p.epoch

    @property
    def epoch_samples(self) -> int:
        """Samples in the epoch's global sequence (global order)."""
        with self._lock:
            return self._lib.sk_reader_epoch_samples(self._handle())

    def stats(self) -> Dict[str, int]:
        """Counters: samples, bytes, shards_done, shards_skipped,
        cache_hits, cache_misses, ring_grows."""
        st = ReaderStats()
        with self._lock:
            self._lib.sk_reader_get_stats(self._handle(), _c.byref(st))
        return {n: getattr(st, n) for n, _ in ReaderStats._fields_}

    @property
    def shard_count(self) -> int:
        """Shards in the whole list."""
        with self._lock:
            return self._lib.sk_reader_shard_count(self._handle())

    @property
    def slot_shards(self) -> int:
        """Shards in this reader's slot (rank, worker) for this epoch."""
        with self._lock:
            return self._lib.sk_reader_slot_shards(self._handle())

    @property
    def shard_urls(self) -> List[str]:
        """The whole shard list, resolved (patterns, manifests, directories)."""
        with self._lock:
            h = self._handle()
            return [self._lib.sk_reader_shard_url(h, i).decode("utf-8", "surrogateescape")
                    for i in range(self._lib.sk_reader_shard_count(h))]


def position_info(position: bytes) -> Dict[str, int]:
    """The fields of a Reader.position() (epoch, consumed, samples, ...)."""
    p = ReaderPosition.from_buffer_copy(position)
    return {n: getattr(p, n) for n, _ in ReaderPosition._fields_}


def state_slot(state: bytes) -> int:
    """The slot (rank * num_workers + worker) a Reader.state() belongs to."""
    return ReaderState.from_buffer_copy(state).slot


def state_info(state: bytes) -> Dict[str, int]:
    """The fields of a Reader.state() (slot, slots, epoch, yielded, ...)."""
    st = ReaderState.from_buffer_copy(state)
    return {n: getattr(st, n) for n, _ in ReaderState._fields_}
