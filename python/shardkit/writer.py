"""writer.py - shardkit.ShardWriter: samples from memory into indexed
shards through libshardkit's sample writer (sk_sample_writer_*,
docs/writer.md): the same tar bytes, .idx sidecars and manifest.json that
`shardkit pack` writes for the same samples as files, cut by max_size /
max_count, published atomically, local or s3://.

Values are encoded as WebDataset's ShardWriter encodes them: bytes (and
bytearray, memoryview) as they are, str as UTF-8, int / float / bool as
their text, dict / list as JSON (json.dumps), and for the extensions
"pyd" / "pickle" any object pickled, for "npy" a numpy array in .npy
format.  Keys starting with "_" other than "__key__" are metadata and not
written (as WebDataset's TarWriter skips them).
"""
from __future__ import annotations

import ctypes
import io
import json
import os
import pickle
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from . import _lib
from ._lib import PackOptions, PackStats, S3Config, SampleMember

_c = ctypes


_UNITS = {"": 1, "b": 1, "k": 1 << 10, "kb": 10**3, "kib": 1 << 10, "m": 1 << 20, "mb": 10**6,
          "mib": 1 << 20, "g": 1 << 30, "gb": 10**9, "gib": 1 << 30, "t": 1 << 40,
          "tb": 10**12, "tib": 1 << 40}


def parse_size(value: Any, name: str = "size") -> int:
    """A size as the command line takes it: an int, or a string of a
    number and an optional unit, case ignored ("512M" = "512MiB" =
    512 * 2**20, "1.5G", "200MB" = 200 * 10**6, "4096"); UsageError naming
    name for anything else."""
    if isinstance(value, str):
        t = value.strip()
        num = t.rstrip("bBkKmMgGtTiI")
        unit = t[len(num):].lower()
        try:
            v = float(num) if num[:1].isdigit() or num[:1] == "." else -1.0
        except ValueError:
            v = -1.0
        if v < 0 or unit not in _UNITS or v != v or v * _UNITS[unit] >= 1.8e19:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s=%r is not a size (a number, then "
                                  "k, M, G, T (powers of 1024), kB, MB, GB, TB (of 1000) "
                                  "or KiB, MiB...)" % (name, value))
        return int(round(v * _UNITS[unit]))
    if isinstance(value, float):   # WebDataset's examples write maxsize=3e9
        if not 0 <= value < 1.8e19:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s=%r is out of range" % (name, value))
        return int(value)
    return _lib.as_int(value, name)


def encode_value(ext: str, value: Any) -> bytes:
    """One member's bytes by WebDataset's conventions (see the module's
    docstring); UsageError for a value it has no rule for."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8")
    base = ext.lower().rsplit(".", 1)[-1]
    if base in ("pyd", "pickle"):
        return pickle.dumps(value)
    if isinstance(value, (bool, int, float)):
        return str(value).encode("ascii")
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value).encode("utf-8")
    if base == "npy" and hasattr(value, "dtype"):
        import numpy as np  # only when an .npy member needs it
        buf = io.BytesIO()
        np.save(buf, value)
        return buf.getvalue()
    if hasattr(value, "item") and hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0:
        return str(value.item()).encode("ascii")     # a numpy or torch scalar
    raise _lib.UsageError(_lib.SK_E_USAGE, "member '%s': no encoding for a %s value (give bytes, "
                          "str, int, float, dict or list)" % (ext, type(value).__name__))


class ShardWriter:
    """Writes samples into shards named by pattern (printf style, one
    integer field: "out/train-%06d.tar"; names ending in ".tar.zst" get zstd
    at compress_level, 3 unless given),
    a new shard before one would pass max_size bytes or max_count samples,
    and manifest.json beside them (or manifest=) when closed.

        with shardkit.ShardWriter("out/train-%06d.tar", max_size=1 << 30) as w:
            w.write({"__key__": "a/b", "jpg": jpeg_bytes, "json": {"w": 3}, "cls": 3})

    A sample is a dict with "__key__" (str) and one value per extension;
    members are written in extension order.  To get pack's bytes for the
    same files, write samples in key order (bytewise).  Leaving the `with`
    block normally (or close()) publishes the last shard and writes the
    manifest; leaving it on an exception abandons the run (abort()): the
    shard being written is removed, published shards stay, no manifest.
    A refused sample (InputError: a bad key or extension, no members, the
    same key as the sample before) writes nothing and the writer goes on;
    a failure to write (IoError, S3) is final.  One thread at a time.

    A manifest already there that lists shards this writer would not
    write (another pattern, an earlier start) is refused (UsageError,
    naming it): append=True continues that dataset (numbering after its
    last shard, its options; the manifest grows when closed),
    overwrite=True replaces it.

    max_size takes the command line's sizes ("512M", "1.5G", "200MB") or
    a number; maxsize / maxcount are accepted as WebDataset spells them.
    stats["seconds"] is the run's wall time, open to close.  encoder:
    a function (ext, value) -> bytes replacing encode_value, or False to
    take bytes only."""

    def __init__(self, pattern: Union[str, "os.PathLike[str]"],
                 max_size: Union[int, float, str, None] = None,
                 max_count: Optional[int] = None, *, manifest: Optional[str] = None,
                 start: int = 0, compress_level: Optional[int] = None, mtime: int = 0,
                 s3_endpoint: Optional[str] = None, part_size: int = 0,
                 encoder: Union[bool, Callable[[str, Any], bytes]] = True,
                 maxsize: Union[int, float, str, None] = None, maxcount: Optional[int] = None,
                 append: bool = False, overwrite: bool = False,
                 lib: Optional[str] = None) -> None:
        self._w: Optional[ctypes.c_void_p] = None
        self._s3: Optional[ctypes.c_void_p] = None
        self._lib = _lib.load_library(lib)
        if not hasattr(self._lib, "sk_sample_writer_open"):
            raise _lib.LibraryError(_lib.SK_E_USAGE, "%s has no sample writer (an older "
                                    "libshardkit)" % _lib.library_path())
        if max_size is None and maxsize is not None:
            max_size = maxsize
        if max_count is None and maxcount is not None:
            max_count = maxcount
        max_size = parse_size(max_size, "max_size") if max_size is not None else None
        max_count = _lib.as_int(max_count, "max_count") if max_count is not None else None
        self.pattern = os.fspath(pattern)
        if encoder is True:
            self._encode: Optional[Callable[[str, Any], bytes]] = encode_value
        elif encoder is False or encoder is None:
            self._encode = None
        else:
            self._encode = encoder
        o = PackOptions()
        self._lib.sk_pack_options_init_sized(_c.byref(o), _c.sizeof(o))
        self._keep = [os.fsencode(self.pattern),
                      os.fsencode(manifest) if manifest is not None else None]
        o.pattern, o.manifest = self._keep
        if compress_level is None:  # as `pack -o NAME.tar.zst`: the suffix decides
            compress_level = 3 if self.pattern.endswith(".zst") else 0
        if append and overwrite:
            raise _lib.UsageError(_lib.SK_E_USAGE, "append=True and overwrite=True: choose one")
        existing = (_lib.SK_EXISTING_APPEND if append else
                    _lib.SK_EXISTING_OVERWRITE if overwrite else _lib.SK_EXISTING_REFUSE)
        for name, v in (("max_size", max_size or 0), ("max_count", max_count or 0),
                        ("start", start), ("compress_level", compress_level), ("mtime", mtime),
                        ("existing", existing)):
            _lib.set_int(o, name, v)
        err = _lib._Error()
        self._err = err
        self._errref = _c.byref(err)
        self._add = self._lib.sk_sample_writer_add
        w = _c.c_void_p()
        _lib.check(self._lib.sk_sample_writer_open(_c.byref(w), _c.byref(o), _c.byref(err)), err)
        self._w = w
        if _lib.is_s3(self._lib, self.pattern) or (manifest and _lib.is_s3(self._lib, manifest)):
            cfg = S3Config()
            self._lib.sk_s3_config_init_sized(_c.byref(cfg), _c.sizeof(cfg))
            self._endpoint = s3_endpoint.encode() if s3_endpoint else None
            cfg.endpoint_url = self._endpoint
            s3 = _c.c_void_p()
            rc = self._lib.sk_s3_new(_c.byref(s3), _c.byref(cfg), _c.byref(err))
            if not rc:
                self._s3 = s3
                rc = self._lib.sk_sample_writer_set_s3(w, s3, int(part_size), _c.byref(err))
            if rc:
                self.abort()
                raise _lib.error_from(rc, err)
        self._plans: Dict[tuple, Tuple[List[str], List[SampleMember], Any]] = {}
        self.count = 0
        self.stats: Optional[Dict[str, Any]] = None

    # ------------------------------------------------------------- writing

    def write(self, sample: Mapping[str, Any]) -> None:
        """Writes one sample (see the class docstring)."""
        w = self._w
        if not w:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s: the writer is closed" % self.pattern)
        try:
            key = sample["__key__"]
        except KeyError:
            raise _lib.UsageError(_lib.SK_E_USAGE, "sample has no __key__") from None
        if type(key) is str or isinstance(key, str):
            kb = key.encode("utf-8", "surrogateescape")
        elif isinstance(key, bytes):
            kb = key
        else:
            raise _lib.UsageError(_lib.SK_E_USAGE, "__key__ is a %s, not a str" %
                                  type(key).__name__)
        # The members' layout is made once per set of dict keys (a plan:
        # which keys are members, a SampleMember array with their
        # extensions filled in, a view of each element); a sample then sets
        # only each member's data and size.  (ctypes keeps a sample's bytes
        # alive through its plan's array until the next sample of that
        # shape replaces them; close() drops them.)
        shape = tuple(sample)
        plan = self._plans.get(shape)
        if plan is None:
            plan = self._plan(shape)
        names, views, ms = plan
        enc = self._encode
        for ext, m in zip(names, views):
            v = sample[ext]
            if type(v) is not bytes:
                if enc is None:
                    raise _lib.UsageError(_lib.SK_E_USAGE, "member '%s' of '%s' is a %s, not "
                                          "bytes (encoder=False)" % (ext, key,
                                                                     type(v).__name__))
                v = enc(ext, v)
            m.data = v
            m.size = len(v)
        n = len(names)
        rc = self._add(w, kb, len(kb), ms, n, self._errref)
        if rc:
            raise _lib.error_from(rc, self._err)
        self.count += 1

    def _plan(self, shape: tuple) -> Tuple[List[str], List[SampleMember], Any]:
        """The plan for samples whose dict keys are shape (see write)."""
        names = [ext for ext in shape if ext[:1] != "_"]
        ms = (SampleMember * max(len(names), 1))()
        for ext, m in zip(names, ms):
            e = ext.encode("utf-8", "surrogateescape")
            m.ext, m.ext_len = e, len(e)
        plan = (names, list(ms), ms)
        if len(self._plans) >= 64:   # bounded: samples of ever new shapes
            self._plans.clear()
        self._plans[shape] = plan
        return plan

    # ------------------------------------------------------------ lifetime

    def close(self) -> Dict[str, Any]:
        """Publishes the last shard and writes the manifest; returns the
        run's counters (samples, shards, output_bytes, seconds...)."""
        if self.stats is not None:
            return self.stats
        if not self._w:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s: the writer was abandoned" % self.pattern)
        st = PackStats()
        err = self._err
        rc = self._lib.sk_sample_writer_finish(self._w, _c.byref(st), _c.byref(err))
        self._free()
        if rc:
            raise _lib.error_from(rc, err)
        self.stats = {n: getattr(st, n) for n, _ in PackStats._fields_
                      if n in ("samples", "shards", "output_bytes", "seconds")}
        return self.stats

    finish = close

    def abort(self) -> None:
        """Abandons the run: the shard being written is removed, shards
        already published stay, no manifest is written."""
        self._free()

    def _free(self) -> None:
        if getattr(self, "_w", None):
            self._lib.sk_sample_writer_close(self._w)
            self._w = None
            self._plans = {}
        if getattr(self, "_s3", None):
            self._lib.sk_s3_free(self._s3)
            self._s3 = None

    def __del__(self) -> None:
        # never finished: abandoned, as in C (no manifest for a partial run)
        self._free()

    def __enter__(self) -> "ShardWriter":
        if not self._w:
            raise _lib.UsageError(_lib.SK_E_USAGE, "%s: the writer is closed" % self.pattern)
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()
