"""torch.py - PyTorch datasets over shardkit (the only module that imports
torch, so the package works without it).

IterableDataset: streams a shard list through shardkit.Reader.  Shards are
split by rank (explicit, else torch.distributed when initialised, else
$RANK / $WORLD_SIZE) and by DataLoader worker (get_worker_info()), so every
sample of an epoch is read exactly once across all ranks and workers;
set_epoch(e) before each epoch gives that epoch's shuffle.  For resume,
each sample carries its reader's state ("__state__"); iterate the
DataLoader through ds.track(loader), which takes those states off the
batches and keeps the newest per reader, so ds.state_dict() is exactly
where consumption stopped, whatever the workers had prefetched.  A batch
counts as consumed once the loop has it.

StreamingDataset: the global order (docs/reader.md): one sequence of each
epoch's samples whatever the number of ranks and workers, several
datasets mixed as MosaicML's Streams (Stream, or urls with weights), an
exact len() per rank, and a position that resumes into another world size
or worker count with every sample of the epoch read once across the runs.

    ds = shardkit.torch.StreamingDataset([Stream("a/manifest.json", proportion=0.3),
                                          Stream("s3://b/ds/", proportion=0.7)],
                                         samples_per_epoch=100_000, batch_size=64, seed=0)
    loader = DataLoader(ds, batch_size=64, num_workers=4)
    for batch in ds.track(loader):      # counts what the loop consumed
        ...
        torch.save({"data": ds.state_dict(), ...}, path)
    # another job, any world size: ds.load_state_dict(saved["data"])

Both also work under torchdata's StatefulDataLoader, without track():
asked in a worker, state_dict() is that worker's own slot (StreamingDataset:
its layout and the samples it handed out; IterableDataset: its reader's
state), which load_state_dict() in the same worker of a loader with the
same layout continues exactly (another layout: MismatchError; use the
position of track() to change it).

MapDataset: shardkit.Dataset (random access through the indexes) as a
map-style torch Dataset, for any sampler (DistributedSampler included).

    ds = shardkit.torch.IterableDataset("data/manifest.json", shuffle_buffer=1000, seed=0)
    loader = DataLoader(ds, batch_size=64, num_workers=4)
    for epoch in range(start_epoch, epochs):
        ds.set_epoch(epoch)
        for batch in ds.track(loader):
            ...
            if step % 1000 == 0:
                torch.save({"data": ds.state_dict(), ...}, path)
    # after a restart: ds.load_state_dict(saved["data"]) before iterating
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import torch
import torch.utils.data as tud

from . import _lib
from .dataset import Dataset as _Dataset
from ._lib import ReaderPosition
from .reader import Reader, position_info, state_info

__all__ = ["IterableDataset", "MapDataset", "Stream", "StreamingDataset", "dist_info"]

STATE_KEY = "__state__"


def dist_info(rank: Optional[int] = None,
              world_size: Optional[int] = None) -> Tuple[Optional[int], Optional[int]]:
    """(rank, world_size): the arguments when given, else torch.distributed's
    when it is initialised, else None (the library then reads $RANK and
    $WORLD_SIZE, else 0 / 1)."""
    if rank is not None and world_size is not None:
        return rank, world_size
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        r, w = torch.distributed.get_rank(), torch.distributed.get_world_size()
        return (rank if rank is not None else r, world_size if world_size is not None else w)
    return rank, world_size


class IterableDataset(tud.IterableDataset):
    """urls: shards, brace patterns, a manifest or a directory, local or
    s3:// (one or a list).  decode: a function from the sample dict to what
    the loader should yield (default: the dict); to resume, keep
    "__state__" in what it returns (a dict) or pass resumable=False.
    rank / world_size: None means torch.distributed, else the environment.
    Other keyword arguments go to shardkit.Reader (shuffle_shards,
    shuffle_buffer, seed, prefetch, buffer_size, cache_dir, s3_endpoint, ...).

    With fewer shards than ranks x workers, the last readers get no shard
    and yield nothing: have at least that many shards."""

    def __init__(self, urls: Union[str, Sequence[str]],
                 decode: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 resumable: bool = True, **reader_args: Any) -> None:
        super().__init__()
        self.urls = [os.fspath(urls)] if isinstance(urls, (str, os.PathLike)) else list(urls)
        self.decode = decode
        self.rank, self.world_size = rank, world_size
        self.resumable = resumable
        self.epoch = int(reader_args.pop("epoch", 0))
        for k in ("worker", "num_workers"):
            if k in reader_args:
                raise _lib.UsageError(_lib.SK_E_USAGE, "%s comes from the DataLoader, not an "
                                      "argument" % k)
        self.reader_args = reader_args
        self._resume: Dict[int, bytes] = {}   # slot -> state, for this epoch
        self._seen: Dict[int, bytes] = {}     # slot -> newest state consumed

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads (its shard and sample
        shuffle).  A saved position of another epoch is dropped."""
        epoch = int(epoch)
        if epoch != self.epoch:
            self._resume, self._seen = {}, {}
        self.epoch = epoch

    # ------------------------------------------------------------- workers

    def _slot(self) -> Tuple[Optional[int], Optional[int], int, int]:
        info = tud.get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info else (0, 1)
        rank, world = dist_info(self.rank, self.world_size)
        return rank, world, worker, num_workers

    def __iter__(self) -> Iterator[Any]:
        rank, world, worker, num_workers = self._slot()
        with Reader(self.urls, rank=rank, world_size=world, worker=worker,
                    num_workers=num_workers, epoch=self.epoch, **self.reader_args) as r:
            if self._resume:
                # a reader's state names its slot (rank x num_workers +
                # worker, as the library resolved rank from the environment)
                st = self._resume.get(state_info(r.state())["slot"])
                if st is not None and state_info(st)["epoch"] == self.epoch:
                    r.restore(st)
            for sample in r:
                st = r.state()
                # this process's own view (a StatefulDataLoader asks the
                # dataset in the worker for it after each batch)
                self._seen[state_info(st)["slot"]] = st
                if self.resumable:
                    sample[STATE_KEY] = st
                yield self.decode(sample) if self.decode else sample

    # ---------------------------------------------------- main process side

    def track(self, loader: Iterable[Any]) -> Iterator[Any]:
        """Iterates loader (a DataLoader over this dataset), taking each
        batch's "__state__" off it and keeping the newest state of every
        reader, so state_dict() is where consumption stands: a batch counts
        as consumed once the loop has it.  At the end of the epoch the
        position says so (restored, the epoch yields nothing more), and a
        resumed position is used up: iterating again reads the epoch anew."""
        self._seen = dict(self._resume)
        for batch in loader:
            for st in _pop_states(batch):
                self._seen[state_info(st)["slot"]] = st
            yield batch
        self._resume = {}

    def state_dict(self) -> Dict[str, Any]:
        """Where this rank's consumption stands: the epoch and, per reader
        (slot = rank x num_workers + worker), its state after the last
        sample consumed from it.  Plain data: torch.save it.  Asked inside
        a DataLoader worker (torchdata's StatefulDataLoader does, after each
        batch), the worker's own reader's state after its last sample."""
        return {"epoch": self.epoch, "states": {int(k): bytes(v) for k, v in self._seen.items()}}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from state_dict(): the next iteration reads the rest
        of that epoch, each reader from just after its last consumed
        sample (a reader with no saved state starts at its beginning).  The
        DataLoader must have the same num_workers, and the dataset the same
        urls, rank, world size and shuffle options (else MismatchError in
        the workers)."""
        self.epoch = int(state["epoch"])
        self._resume = {int(k): bytes(v) for k, v in state["states"].items()}
        self._seen = dict(self._resume)


def _pop_states(batch: Any) -> list:
    """The reader states in a batch (a sample dict, a collated dict, or a
    list of samples), removed from it."""
    if isinstance(batch, dict):
        st = batch.pop(STATE_KEY, None)
        if st is None:
            return []
        return [st] if isinstance(st, (bytes, bytearray)) else list(st)
    if isinstance(batch, (list, tuple)):
        out: list = []
        for x in batch:
            if isinstance(x, dict):
                out.extend(_pop_states(x))
        return out
    return []


class Stream:
    """One dataset of a StreamingDataset and how much of it an epoch takes,
    as MosaicML's Stream: proportion (relative to the other streams'), or
    repeat (a multiple of its size) or choose (a number of samples); one
    kind for all streams, none: repeat 1.  A stream taking fewer samples
    than it has gets a new random subset each epoch."""

    def __init__(self, url: str, proportion: Optional[float] = None,
                 repeat: Optional[float] = None, choose: Optional[int] = None) -> None:
        self.url = os.fspath(url)
        self.proportion, self.repeat, self.choose = proportion, repeat, choose

    def __repr__(self) -> str:
        return "Stream(%r, proportion=%r, repeat=%r, choose=%r)" % (
            self.url, self.proportion, self.repeat, self.choose)


POSITION_KEY = "__position__"


class StreamingDataset(tud.IterableDataset):
    """The global order over one or several datasets (see the module's
    docstring).  streams: urls (each a dataset: manifest, directory,
    pattern, s3:// or http(s)://) or Streams; weights: proportions for
    plain urls.  batch_size: the DataLoader's, so that a rank consuming
    whole batches consumes a prefix of the sequence (exact resume).
    num_workers: the DataLoader's, for the position in the epoch's last
    partial round only (None: 1).  Samples are dicts with "__position__"
    (in the epoch's sequence) and "__dataset__" (the stream's index) beside
    the members; decode maps them.  Reader options (shuffle_window,
    read_ahead, s3_endpoint, ...) pass through."""

    def __init__(self, streams: Union[str, Sequence[Union[str, Stream]]],
                 weights: Optional[Sequence[float]] = None,
                 samples_per_epoch: Optional[int] = None, seed: int = 0,
                 shuffle: bool = True, batch_size: int = 1,
                 num_workers: Optional[int] = None,
                 decode: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 rank: Optional[int] = None, world_size: Optional[int] = None,
                 **reader_args: Any) -> None:
        super().__init__()
        if isinstance(streams, (str, os.PathLike, Stream)):
            streams = [streams]
        self.streams = [x if isinstance(x, Stream) else Stream(x) for x in streams]
        if weights is not None:
            if len(weights) != len(self.streams):
                raise _lib.UsageError(_lib.SK_E_USAGE, "%d weights for %d streams" %
                                      (len(weights), len(self.streams)))
            for st, w in zip(self.streams, weights):
                st.proportion = float(w)
        self.decode = decode
        self.rank, self.world_size = rank, world_size
        self.batch_size = int(batch_size)
        self.num_workers = num_workers
        self.epoch = int(reader_args.pop("epoch", 0))
        for k in ("worker", "global_order", "shuffle_shards", "shuffle_buffer"):
            if k in reader_args:
                raise _lib.UsageError(_lib.SK_E_USAGE, "%s is not an argument here" % k)
        args = dict(reader_args, seed=seed, shuffle_shards=bool(shuffle), global_order=True,
                    batch_size=self.batch_size)
        if samples_per_epoch:
            args["samples_per_epoch"] = int(samples_per_epoch)
        for kind in ("proportion", "repeat", "choose"):
            vals = [getattr(x, kind) for x in self.streams]
            if any(v is not None for v in vals):
                args[kind] = vals
        self.reader_args = args
        self._resume: Optional[bytes] = None   # the position iteration starts from
        self._consumed = 0                     # samples the rank consumed since then
        self._tracked = False                  # _consumed counted by track()
        self._main: Optional[Reader] = None    # the main process's reader (positions)
        # this process's own iteration (a DataLoader worker's, or the main
        # process's with num_workers=0): its layout and the samples its slot
        # yielded since _resume, for a StatefulDataLoader's per-worker state
        self._it: Optional[Dict[str, Any]] = None
        self._slot_resume: Optional[Dict[str, Any]] = None  # such a state, loaded
        self._fallback: Optional[bytes] = None  # the position saved beside it

    def __getstate__(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["_main"] = None  # a worker opens its own readers
        return d

    def _world(self, worker: int, num_workers: int) -> Dict[str, Any]:
        rank, world = dist_info(self.rank, self.world_size)
        return dict(rank=rank, world_size=world, worker=worker, num_workers=num_workers)

    def _rank_world(self) -> Tuple[int, int]:
        """rank and world size as the library resolves them."""
        rank, world = dist_info(self.rank, self.world_size)
        rank = int(os.environ.get("RANK", 0)) if rank is None else rank
        world = int(os.environ.get("WORLD_SIZE", 1)) if world is None else world
        return rank, world

    def _reader(self, worker: int, num_workers: int,
                start: Optional[bytes] = None) -> Reader:
        start = self._resume if start is None else start
        r = Reader([x.url for x in self.streams], epoch=self.epoch,
                   **self._world(worker, num_workers), **self.reader_args)
        if start is not None and position_info(start)["epoch"] == self.epoch:
            r.seek(start)
        return r

    def _main_reader(self) -> Reader:
        if self._main is None:
            self._main = self._reader(0, max(1, self.num_workers or 1))
        return self._main

    def set_epoch(self, epoch: int) -> None:
        """The epoch the next iteration reads; a saved position of another
        epoch is dropped."""
        epoch = int(epoch)
        if epoch != self.epoch:
            self._resume, self._consumed = None, 0
            self._it = self._slot_resume = self._fallback = None
            if self._main is not None:
                self._main.close()
                self._main = None
        self.epoch = epoch

    def _layout(self) -> Dict[str, int]:
        """This process's slot: what a per-worker state is valid for."""
        info = tud.get_worker_info()
        rank, world = self._rank_world()
        return {"rank": rank, "world_size": world,
                "worker": info.id if info else 0,
                "num_workers": info.num_workers if info else 1,
                "batch_size": self.batch_size}

    def __iter__(self) -> Iterator[Any]:
        layout = self._layout()
        slot, start = self._slot_resume, self._resume
        if slot is not None and slot["epoch"] != self.epoch:
            slot = None
        if slot is not None and any(slot[k] != v for k, v in layout.items()):
            if self._fallback is None:
                raise _lib.MismatchError(_lib.SK_E_MISMATCH, (
                    "shardkit.torch.StreamingDataset: this worker's saved state belongs to %s; "
                    "this worker is %s: a StatefulDataLoader's state continues only the same "
                    "layout (use the position of state_dict() counted by track() to resume "
                    "into another one)") % (_layout_text(slot), _layout_text(layout)))
            slot, start = None, self._fallback   # the main process's position: elastic
        with self._reader(layout["worker"], layout["num_workers"], start) as r:
            p0 = position_info(r.position(0))
            it = dict(layout, epoch=self.epoch, yielded=0, base=start,
                      fingerprint=p0["fingerprint"], samples=p0["samples"])
            if slot is not None and slot["yielded"]:
                if slot["fingerprint"] is not None and (slot["fingerprint"], slot["samples"]) != \
                        (p0["fingerprint"], p0["samples"]):
                    raise _lib.MismatchError(_lib.SK_E_MISMATCH, (
                        "shardkit.torch.StreamingDataset: this worker's saved state belongs to "
                        "another dataset or order (fingerprint %016x, %d samples; here %016x, "
                        "%d)") % (slot["fingerprint"], slot["samples"], p0["fingerprint"],
                                  p0["samples"]))
                it["yielded"] = int(slot["yielded"])
            self._it = it
            if it["yielded"] and not _skip_slot(r, it, p0):
                self._slot_resume = None
                return
            for sample in r:
                it["yielded"] += 1   # before the yield: the fetcher has it
                yield self.decode(sample) if self.decode else sample
        # used up: iterating again (num_workers=0) reads from the start
        # position, as after a plain position's resume
        self._slot_resume = None

    def __len__(self) -> int:
        """Samples this rank reads in the epoch (from its start, or from the
        position loaded): the same whatever the number of workers."""
        r = self._main_reader()
        p = position_info(r.position(0))
        m = p["samples"] - p["consumed"]
        rank, world = self._rank_world()
        return m // world + (1 if rank < m % world else 0)

    def track(self, loader: Iterable[Any]) -> Iterator[Any]:
        """Iterates loader, counting the samples the loop consumed (a batch
        counts once the loop has it), for state_dict()."""
        self._tracked = True
        for batch in loader:
            self._consumed += _count(batch)
            yield batch

    def state_dict(self) -> Dict[str, Any]:
        """Where the epoch stands.  In the main process "position": every
        rank consumed as many samples as this one (track() counted them;
        without track(), those this process's own iteration yielded, as
        with num_workers=0); plain data that names no rank or worker.
        Beside it, in a process that iterated the dataset itself (a
        DataLoader worker, where torchdata's StatefulDataLoader asks after
        each batch, or the main process with num_workers=0), "slot": that
        iteration's layout and the samples its slot yielded, which
        load_state_dict() continues exactly in the same layout."""
        st: Dict[str, Any] = {"epoch": self.epoch}
        info = tud.get_worker_info()
        if info is None:
            n = self._consumed if self._tracked or self._it is None else self._it["yielded"]
            st["position"] = self._main_reader().position(n)
        if self._it is not None:
            st["slot"] = {k: v for k, v in self._it.items() if k != "epoch"}
        elif info is not None:   # a worker before its first batch
            st["slot"] = dict(self._layout(), yielded=0, base=self._resume,
                              fingerprint=None, samples=None)
        return st

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues from state_dict(): with "slot" (a StatefulDataLoader's
        per-worker state, or num_workers=0), exactly where that slot's
        iteration stopped, in the same layout (rank, world size, worker,
        num_workers, batch_size; else MismatchError, or the position when
        the state has one); with only "position", in any world size and
        workers: the next iteration reads this rank's share of what is
        left."""
        self.set_epoch(int(state["epoch"]))
        slot, pos = state.get("slot"), state.get("position")
        self._fallback = bytes(pos) if pos is not None else None
        if slot is not None:
            self._slot_resume = dict(slot, epoch=self.epoch)
            base = slot.get("base")
            self._resume = bytes(base) if base is not None else None
        else:
            self._slot_resume = None
            self._resume = self._fallback
        self._consumed, self._tracked, self._it = 0, False, None
        if self._main is not None:
            self._main.close()
            self._main = None


def _layout_text(d: Dict[str, Any]) -> str:
    return "rank %d of world size %d, worker %d of %d, batch_size %d" % (
        d["rank"], d["world_size"], d["worker"], d["num_workers"], d["batch_size"])


def _skip_slot(r: Reader, it: Dict[str, Any], p0: Dict[str, int]) -> bool:
    """Moves r (sought to the slot's base, p0 its position) past the
    it["yielded"] samples its slot already handed out, without reading
    them where it can: in the same layout a slot's samples come in rounds
    of ranks x workers x batch_size positions, and seeking to a round's
    start continues every slot's own sequence unchanged; the rest (less
    than a batch) is read and dropped.  False when the slot has nothing
    left."""
    n = it["yielded"]
    if n >= len(r):
        return False
    per_round = it["world_size"] * it["num_workers"] * it["batch_size"]
    rounds = min(n // it["batch_size"], (p0["samples"] - p0["consumed"]) // per_round)
    if rounds:
        p = ReaderPosition.from_buffer_copy(r.position(0))
        p.consumed += rounds * per_round
        r.seek(bytes(p))
    for _ in range(n - rounds * it["batch_size"]):
        next(r)
    return True


def _count(batch: Any) -> int:
    """Samples in a batch: its "__position__" values (a collated dict, a
    list of samples, or one sample)."""
    if isinstance(batch, dict):
        p = batch.get(POSITION_KEY)
        if p is None:
            return 0
        return len(p) if hasattr(p, "__len__") else 1
    if isinstance(batch, (list, tuple)):
        return sum(_count(x) if isinstance(x, dict) else 0 for x in batch)
    return 0


class MapDataset(tud.Dataset):
    """shardkit.Dataset as a map-style torch Dataset: len() and [i] by
    global ordinal, so DistributedSampler, RandomSampler and batch
    samplers work as with any map-style dataset.  transform maps the sample
    dict to what the loader yields.  Each DataLoader worker process opens
    the dataset for itself (a forked handle is never shared)."""

    def __init__(self, url: str, transform: Optional[Callable[[Dict[str, Any]], Any]] = None,
                 trust_index: bool = False, s3_endpoint: Optional[str] = None) -> None:
        super().__init__()
        self.url = os.fspath(url)
        self.transform = transform
        self._args = {"trust_index": trust_index, "s3_endpoint": s3_endpoint}
        self._ds: Optional[_Dataset] = None
        self._pid = -1
        self._len = len(self._dataset())

    def _dataset(self) -> _Dataset:
        if self._ds is None or self._pid != os.getpid():
            self._ds = _Dataset(self.url, **self._args)
            self._pid = os.getpid()
        return self._ds

    def __getstate__(self) -> Dict[str, Any]:
        d = dict(self.__dict__)
        d["_ds"], d["_pid"] = None, -1
        return d

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> Any:
        s = self._dataset()[int(i)]
        return self.transform(s) if self.transform else s

    def __getitems__(self, indices: List[int]) -> List[Any]:
        """A batch of samples in one call into the library per buffer-full
        (the DataLoader calls this with each batch of indices)."""
        got = self._dataset().__getitems__(indices)
        return [self.transform(s) for s in got] if self.transform else got

    def get(self, key: str) -> Any:
        """The sample with this key, transformed."""
        s = self._dataset().get(key)
        return self.transform(s) if self.transform else s
