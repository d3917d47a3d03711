"""dataset.py - a PyTorch IterableDataset over shardkit shards, through the
ctypes binding in samples/python/shardkit.py.

Shards are split by node (rank, world_size: torch.distributed when it is
initialised, else $RANK / $WORLD_SIZE) and by DataLoader worker
(torch.utils.data.get_worker_info()), so with any num_workers every sample
of an epoch is read exactly once across all of them.  Call set_epoch(e)
before each epoch, as with DistributedSampler, to get that epoch's shuffle.

    ds = ShardDataset("data/manifest.json", shuffle_buffer=1000, seed=0,
                      decode=my_decode)
    loader = DataLoader(ds, batch_size=64, num_workers=3)
"""
import os
import sys

import torch
from torch.utils.data import IterableDataset, get_worker_info

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import shardkit  # noqa: E402


def _dist():
    """(rank, world_size): torch.distributed's when running, else None."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return None, None


class ShardDataset(IterableDataset):
    """urls: shards, brace patterns, a manifest or a directory (a string or
    a list).  decode: a function from the sample dict to what the loader
    should yield (default: the dict).  Other keyword arguments go to
    shardkit.Reader (shuffle_shards, shuffle_buffer, seed, prefetch,
    buffer_size, cache_dir, ...)."""

    def __init__(self, urls, decode=None, rank=None, world_size=None, **reader_args):
        super().__init__()
        self.urls = [urls] if isinstance(urls, str) else list(urls)
        self.decode = decode
        self.rank, self.world_size = rank, world_size
        self.reader_args = reader_args
        self.epoch = reader_args.pop("epoch", 0)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __iter__(self):
        info = get_worker_info()
        worker, num_workers = (info.id, info.num_workers) if info else (0, 1)
        rank, world = self.rank, self.world_size
        if rank is None or world is None:
            drank, dworld = _dist()
            rank = rank if rank is not None else drank
            world = world if world is not None else dworld
        # None lets the library take $RANK / $WORLD_SIZE (or 0 / 1).
        with shardkit.Reader(self.urls, rank=rank, world_size=world, worker=worker,
                             num_workers=num_workers, epoch=self.epoch,
                             **self.reader_args) as r:
            for sample in r:
                yield self.decode(sample) if self.decode else sample
