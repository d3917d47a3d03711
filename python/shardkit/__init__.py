"""shardkit - indexed tar (WebDataset) shards from Python, over libshardkit
through ctypes (no compiler needed).

    import shardkit
    for sample in shardkit.Reader("data/manifest.json", shuffle_buffer=1000, seed=1):
        ...                                   # {"__key__": ..., "jpg": b"...", ...}
    ds = shardkit.Dataset("s3://bkt/train/")  # random access through the .idx sidecars
    len(ds), ds[17], ds.get("n00000/00000017")
    with shardkit.ShardWriter("out/train-%06d.tar", max_size=1 << 30) as w:
        w.write({"__key__": "a/b", "jpg": jpeg_bytes, "json": {"w": 3}, "cls": 3})

WebDataset's decoding: shardkit.Reader(...).decode("pil").to_tuple("jpg", "cls"),
and shardkit.decode's handlers.
PyTorch datasets are in shardkit.torch (imported only when used).
Failures raise shardkit.Error subclasses (see _lib.py).  docs/python.md.
"""
from ._lib import (Error, UsageError, IoError, InputError, CorruptError, NoMemoryError,
                   NetworkError, RemoteError, NotFoundError, SampleIndexError,
                   KeyNotFoundError, MismatchError, LibraryError, load_library,
                   library_path, library_version)
from .reader import Reader, state_info, state_slot
from .dataset import Dataset
from .writer import ShardWriter, encode_value, parse_size
from . import decode
from .stats import stats

__version__ = "0.1.0"

# the name samples/python/shardkit.py exported
ShardkitError = Error

__all__ = ["Reader", "Dataset", "ShardWriter", "encode_value", "parse_size", "decode", "Error", "ShardkitError", "UsageError", "IoError", "InputError",
           "CorruptError", "NoMemoryError", "NetworkError", "RemoteError", "NotFoundError",
           "SampleIndexError", "KeyNotFoundError", "MismatchError", "LibraryError",
           "load_library", "library_path", "library_version", "state_info", "state_slot",
           "stats"]
