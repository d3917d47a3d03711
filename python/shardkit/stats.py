"""shardkit.stats - what a dataset holds, as `shardkit stats --json` gives
it (the schema is docs/stats.md), computed by libshardkit's sk_stats_run
over the dataset's indexes:

    import shardkit
    s = shardkit.stats("data/manifest.json", images=True)
    s["totals"]["samples"], s["extensions"]["jpg"]["size"]["p50"]
"""
from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, Optional, Union

from . import _lib
from .dataset import Dataset

_c = ctypes
STATS_IMAGES = 1
STATS_JSON_KEYS = 2


class _StatsOptions(_c.Structure):
    # sk_stats_options
    _fields_ = [("struct_size", _c.c_size_t), ("flags", _c.c_uint),
                ("image_ext", _c.c_char_p), ("key_mem", _c.c_uint64)]


def _declare(lib: ctypes.CDLL) -> None:
    if getattr(lib, "_sk_stats_declared", False):
        return
    if not hasattr(lib, "sk_stats_run"):
        raise _lib.LibraryError(_lib.SK_E_NOTFOUND, "this libshardkit has no sk_stats_run")
    vp, E = _c.c_void_p, _c.POINTER(_lib._Error)
    lib.sk_stats_options_init_sized.argtypes = [_c.POINTER(_StatsOptions), _c.c_size_t]
    lib.sk_stats_options_init_sized.restype = None
    lib.sk_stats_run.argtypes = [vp, _c.c_char_p, _c.POINTER(_StatsOptions), _c.POINTER(vp), E]
    lib.sk_stats_run.restype = _c.c_int
    lib.sk_stats_json.argtypes = [vp]
    lib.sk_stats_json.restype = vp  # malloc'd text: freed below
    lib.sk_stats_free.argtypes = [vp]
    lib.sk_stats_free.restype = None
    lib._sk_stats_declared = True


def stats(dataset: Union[str, "os.PathLike[str]"], *, images: bool = False,
          json_keys: bool = False, image_ext: Optional[str] = None,
          key_mem: int = 0, trust_index: bool = True, s3_endpoint: Optional[str] = None,
          lib: Optional[str] = None) -> Dict[str, Any]:
    """The statistics of dataset (a manifest, directory, shard or brace
    pattern; local or s3://) as a dict: the numbers `shardkit stats --json`
    prints.  images: JPEG sizes from their headers; json_keys: the keys of
    .json members; key_mem: memory of the duplicate-key sort (0: 64 MiB)."""
    if key_mem < 0 or key_mem >= 1 << 64:
        raise _lib.UsageError(_lib.SK_E_USAGE, "key_mem=%r out of range" % (key_mem,))
    ds = Dataset(dataset, trust_index=trust_index, s3_endpoint=s3_endpoint, lib=lib)
    try:
        L = ds._lib
        _declare(L)
        o = _StatsOptions()
        L.sk_stats_options_init_sized(_c.byref(o), _c.sizeof(o))
        o.flags = (STATS_IMAGES if images else 0) | (STATS_JSON_KEYS if json_keys else 0)
        enc_ext = image_ext.encode() if image_ext else None
        o.image_ext = enc_ext
        o.key_mem = key_mem
        st = _c.c_void_p()
        err = _lib._Error()
        _lib.check(L.sk_stats_run(ds._ds, os.fsencode(os.fspath(dataset)), _c.byref(o),
                                  _c.byref(st), _c.byref(err)), err)
        try:
            p = L.sk_stats_json(st)
            if not p:
                raise _lib.NoMemoryError(_lib.SK_E_NOMEM, "stats: out of memory")
            try:
                text = _c.string_at(p)
            finally:
                _c.CDLL(None).free(_c.c_void_p(p))
        finally:
            L.sk_stats_free(st)
    finally:
        ds.close()
    return json.loads(text.decode("utf-8", "surrogateescape"))
