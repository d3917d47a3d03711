"""dataset.py - ShardDataset, the PyTorch IterableDataset over shardkit
shards, now shardkit.torch.IterableDataset of the package (python/shardkit,
docs/python.md); kept under its old name for train.py and older scripts.

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

try:
    import shardkit.torch as _skt
except ImportError:  # not installed: the source tree's copy
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "python"))
    import shardkit.torch as _skt

ShardDataset = _skt.IterableDataset
