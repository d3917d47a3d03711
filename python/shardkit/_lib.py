"""_lib.py - finds and loads libshardkit.so, declares the C calls the
package uses (ctypes mirrors of lib/shardkit.h's structs), and turns an
sk_error into a shardkit.Error subclass.

Where the library is looked for, first hit wins:
  1. the path given to load_library(path) (then only that one);
  2. $SHARDKIT_LIB;
  2b. the copy bundled in the package (pip install ./python builds it);
  3. the prefix the package was installed into: `make install PREFIX=P`
     puts the package in P/lib/pythonX.Y/site-packages/shardkit and the
     library in P/lib, so P/lib is three levels up from this file;
     (and P/lib as `make install` wrote it into _install.py, for a
     package copied elsewhere);
  4. a source tree: python/shardkit/ -> build/libshardkit.so;
  5. the system's (ctypes.util.find_library, i.e. ldconfig's cache).
"""
from __future__ import annotations

import ctypes
import errno
import operator
import os
import threading
from typing import Any, Dict, Iterator, Optional, Type

_c = ctypes
P = ctypes.POINTER

# --------------------------------------------------------------- errors

SK_E_USAGE, SK_E_IO, SK_E_INPUT, SK_E_CORRUPT, SK_E_NOMEM = 1, 2, 3, 4, 5
SK_E_NET, SK_E_REMOTE, SK_E_NOTFOUND, SK_E_MISMATCH = 6, 7, 8, 9


class Error(Exception):
    """A libshardkit failure.  ``code`` is the sk_code (shardkit.h's
    SK_E_*), ``message`` (and str()) the library's message, which names the
    file or URL and the cause."""

    code: int = 0

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = int(code)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(Error, ValueError):
    """SK_E_USAGE: a bad argument or option."""


class IoError(Error):
    """SK_E_IO: a read, write, open or rename failed."""


class InputError(Error):
    """SK_E_INPUT: input breaks a rule (no key, duplicate member, ...)."""


class CorruptError(Error):
    """SK_E_CORRUPT: a shard, index or manifest is damaged or truncated."""


class NoMemoryError(Error, MemoryError):
    """SK_E_NOMEM."""


class NetworkError(Error):
    """SK_E_NET: connection, DNS, TLS or timeout."""


class RemoteError(Error):
    """SK_E_REMOTE: the server answered with an error."""


class NotFoundError(Error, LookupError, FileNotFoundError):
    """SK_E_NOTFOUND: no such file, object, key or ordinal.  A
    FileNotFoundError too (errno ENOENT), so `except FileNotFoundError`
    catches a missing shard or manifest as it does for open()."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.errno, self.strerror = errno.ENOENT, message


class SampleIndexError(NotFoundError, IndexError):
    """No sample at that ordinal (``ds[i]`` out of range): an IndexError too,
    so ``for s in ds`` and ``list(ds)`` stop as with a list."""


class KeyNotFoundError(NotFoundError, KeyError):
    """No sample with that key (``ds.get(key)``): a KeyError too."""


class MismatchError(Error):
    """SK_E_MISMATCH: checksums, sizes or counts disagree (a CRC32C that
    does not match, an index that belongs to another shard)."""


class LibraryError(Error, ImportError):
    """libshardkit.so could not be found or loaded."""


_BY_CODE: Dict[int, Type[Error]] = {
    SK_E_USAGE: UsageError, SK_E_IO: IoError, SK_E_INPUT: InputError,
    SK_E_CORRUPT: CorruptError, SK_E_NOMEM: NoMemoryError, SK_E_NET: NetworkError,
    SK_E_REMOTE: RemoteError, SK_E_NOTFOUND: NotFoundError, SK_E_MISMATCH: MismatchError,
}


class _Error(_c.Structure):
    _fields_ = [("code", _c.c_int), ("msg", _c.c_char * 1024)]


def error_from(rc: int, err: _Error, not_found: Optional[Type[Error]] = None) -> Error:
    """The exception for a failed call: the class for its code (not_found
    replaces NotFoundError where the caller knows better)."""
    cls = _BY_CODE.get(int(rc), Error)
    if cls is NotFoundError and not_found is not None:
        cls = not_found
    msg = err.msg.decode("utf-8", "replace") or "libshardkit error %d" % rc
    return cls(rc, msg)


# enum sk_place_kind and the flags that take every place (shardkit.h)
SK_PLACE_S3 = 2
_PLACE_ANY = 1 | 4 | 8 | 16


def is_s3(lib: ctypes.CDLL, place: Any) -> bool:
    """Whether place names S3 by the library's one grammar (docs/places.md:
    "S3://b/k" is S3; a refused name is not): the binding never compares a
    prefix itself."""
    kind = ctypes.c_int(0)
    name = place if isinstance(place, bytes) else os.fsencode(place)
    return lib.sk_place_check(name, _PLACE_ANY, None, ctypes.byref(kind), None) == 0 and \
        kind.value == SK_PLACE_S3


def set_int(st: ctypes.Structure, name: str, value: Any) -> None:
    """st.name = int(value), refused with UsageError when the C field cannot
    hold it: ctypes would wrap it round silently (world_size=2**32 + 1
    would become 1, shuffle_buffer=-1 the largest size_t)."""
    v = int(value)
    setattr(st, name, v)
    if getattr(st, name) != v:
        raise UsageError(SK_E_USAGE, "%s=%d is out of range" % (name, v))


def as_int(value: Any, name: str) -> int:
    """value as an int (int, numpy or torch integers), TypeError naming
    name for a float, a bool or a string, which int() would take."""
    if isinstance(value, bool):
        raise TypeError("%s=%r: an integer, not a bool" % (name, value))
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("%s=%r: an integer, not a %s" % (name, value,
                                                         type(value).__name__)) from None


def check(rc: int, err: _Error, not_found: Optional[Type[Error]] = None) -> None:
    if rc:
        raise error_from(rc, err, not_found)


# -------------------------------------------------------------- structs

WARN_FN = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_char_p)


class ReaderOptions(_c.Structure):
    # sk_reader_options; s3 (the caller's client) is left NULL.
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("rank", _c.c_int), ("world_size", _c.c_int),
        ("worker", _c.c_int), ("num_workers", _c.c_int),
        ("shuffle_shards", _c.c_int),
        ("shuffle_buffer", _c.c_size_t),
        ("seed", _c.c_uint64), ("epoch", _c.c_uint64),
        ("prefetch", _c.c_int),
        ("buffer_size", _c.c_size_t), ("max_sample", _c.c_size_t),
        ("skip_errors", _c.c_int),
        ("cache_dir", _c.c_char_p), ("cache_size", _c.c_uint64),
        ("warn", WARN_FN), ("warn_ctx", _c.c_void_p),
        ("s3_endpoint", _c.c_char_p),
        ("s3", _c.c_void_p), ("recordio", _c.c_int),
        ("read_inline", _c.c_int),
        ("global_order", _c.c_int), ("shuffle_window", _c.c_size_t),
        ("batch_size", _c.c_int), ("read_ahead", _c.c_size_t),
        ("max_gap", _c.c_uint64),
        ("proportion", _c.c_void_p), ("repeat", _c.c_void_p), ("choose", _c.c_void_p),
        ("samples_per_epoch", _c.c_uint64),
    ]


class ReaderMember(_c.Structure):
    _fields_ = [("ext", _c.c_char_p), ("ext_len", _c.c_size_t),
                ("data", _c.c_void_p), ("size", _c.c_uint64)]


class ReaderSample(_c.Structure):
    _fields_ = [("key", _c.c_void_p), ("key_len", _c.c_size_t),
                ("shard_url", _c.c_char_p), ("shard", _c.c_size_t),
                ("ordinal", _c.c_uint64), ("offset", _c.c_uint64),
                ("nmembers", _c.c_size_t), ("members", P(ReaderMember)),
                ("position", _c.c_uint64), ("dataset", _c.c_size_t)]


class ReaderPosition(_c.Structure):
    # sk_reader_position: where a reader in the global order is
    _fields_ = [("magic", _c.c_uint32), ("version", _c.c_uint32),
                ("epoch", _c.c_uint64), ("consumed", _c.c_uint64),
                ("samples", _c.c_uint64), ("fingerprint", _c.c_uint64)]


class ReaderState(_c.Structure):
    _fields_ = [("magic", _c.c_uint32), ("version", _c.c_uint32),
                ("slot", _c.c_uint32), ("slots", _c.c_uint32),
                ("shards", _c.c_uint64), ("seed", _c.c_uint64), ("epoch", _c.c_uint64),
                ("shuffle_shards", _c.c_uint64), ("shuffle_buffer", _c.c_uint64),
                ("yielded", _c.c_uint64), ("shard_pos", _c.c_uint64),
                ("ordinal", _c.c_uint64)]


class ReaderStats(_c.Structure):
    _fields_ = [(n, _c.c_uint64) for n in (
        "samples", "bytes", "shards_done", "shards_skipped", "cache_hits", "cache_misses",
        "ring_grows")]


class SampleRef(_c.Structure):
    _fields_ = [("ordinal", _c.c_uint64), ("key", _c.c_void_p), ("key_len", _c.c_size_t),
                ("offset", _c.c_uint64), ("span", _c.c_uint64),
                ("stored_offset", _c.c_uint64), ("stored_span", _c.c_uint64),
                ("first_member", _c.c_uint32), ("member_count", _c.c_uint32)]


class MemberRef(_c.Structure):
    _fields_ = [("ext", _c.c_void_p), ("ext_len", _c.c_size_t),
                ("data_offset", _c.c_uint64), ("size", _c.c_uint64),
                ("header_len", _c.c_uint32), ("crc32c", _c.c_uint32)]


class Hit(_c.Structure):
    _fields_ = [("shard", _c.c_size_t), ("shard_path", _c.c_char_p),
                ("global_ordinal", _c.c_uint64), ("sample", SampleRef)]


class GetResult(_c.Structure):
    # sk_get_result (sk_dataset_get): struct_size, the hit, need, pointers into the buffer
    _fields_ = [("struct_size", _c.c_size_t), ("hit", Hit), ("need", _c.c_size_t),
                ("members", _c.c_void_p), ("key", _c.c_void_p), ("data", _c.c_void_p)]


class S3Config(_c.Structure):
    _fields_ = [("struct_size", _c.c_size_t),
                ("endpoint_url", _c.c_char_p), ("region", _c.c_char_p),
                ("profile", _c.c_char_p), ("creds", _c.c_void_p),
                ("path_style", _c.c_int), ("concurrency", _c.c_int),
                ("max_attempts", _c.c_int), ("read_timeout", _c.c_int),
                ("sign_payload", _c.c_int), ("verbose", _c.c_int),
                ("low_speed_limit", _c.c_long), ("retry_notice", _c.c_int),
                ("http_only", _c.c_int)]


PACK_PROGRESS_FN = _c.CFUNCTYPE(None, _c.c_void_p, _c.c_void_p)


class PackOptions(_c.Structure):
    # sk_pack_options whole; images stays NULL (none), dry_run 0.
    _fields_ = [
        ("struct_size", _c.c_size_t),
        ("pattern", _c.c_char_p), ("manifest", _c.c_char_p),
        ("max_size", _c.c_uint64), ("max_count", _c.c_uint64), ("start", _c.c_uint64),
        ("shuffle", _c.c_int), ("seed", _c.c_uint64), ("mtime", _c.c_uint64),
        ("jobs", _c.c_int), ("resume", _c.c_int), ("skip_errors", _c.c_int),
        ("follow_symlinks", _c.c_int), ("tmp_dir", _c.c_char_p),
        ("compress_level", _c.c_int), ("part", _c.c_int), ("parts", _c.c_int),
        ("warn", WARN_FN), ("progress", PACK_PROGRESS_FN), ("ctx", _c.c_void_p),
        ("images", _c.c_void_p), ("existing", _c.c_int), ("dry_run", _c.c_int),
    ]
SK_EXISTING_REFUSE, SK_EXISTING_APPEND, SK_EXISTING_OVERWRITE = 0, 1, 2


class PackStats(_c.Structure):
    _fields_ = [(n, _c.c_uint64) for n in (
        "files_total", "files_done", "bytes_total", "bytes_done", "samples", "shards",
        "shards_resumed", "skipped", "output_bytes")] + [("seconds", _c.c_double)] + [
        (n, _c.c_uint64) for n in ("images", "image_skips", "bad_images")]


class SampleMember(_c.Structure):
    # data as c_char_p: a bytes object assigned to it is passed by pointer,
    # no copy (ctypes keeps it alive with the struct)
    _fields_ = [("ext", _c.c_char_p), ("ext_len", _c.c_size_t),
                ("data", _c.c_char_p), ("size", _c.c_uint64)]


# ------------------------------------------------------------- loading

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None
_lib_path: Optional[str] = None


def _candidates(path: Optional[str]) -> Iterator[str]:
    """The places to try, in order.  A generator: the system's lookup
    (find_library runs ldconfig, gcc and ld in subprocesses: a tenth of a
    second or more) happens only when nothing before it loaded."""
    here = os.path.dirname(os.path.abspath(__file__))
    if path:   # asked for by name: that one or an error, not another found instead
        yield os.fspath(path)
        return
    env = os.environ.get("SHARDKIT_LIB")
    if env:
        yield env
    # built and bundled by `pip install ./python` (setup.py)
    for name in ("libshardkit.so.0", "libshardkit.so"):
        p = os.path.join(here, name)
        if os.path.isfile(p):
            yield p
    prefix_lib = os.path.normpath(os.path.join(here, "..", "..", ".."))
    tree = os.path.normpath(os.path.join(here, "..", "..", "build"))
    dirs = [prefix_lib]
    try:  # written by `make install`; absent in a source tree or a pip install
        from . import _install  # type: ignore[attr-defined]
        dirs.append(_install.LIBDIR)
    except ImportError:
        pass
    dirs.append(tree)
    for d in dirs:
        for name in ("libshardkit.so.0", "libshardkit.so"):
            p = os.path.join(d, name)
            if os.path.isfile(p):
                yield p
    import ctypes.util
    sysname = ctypes.util.find_library("shardkit")
    if sysname:
        yield sysname


def _declare(lib: ctypes.CDLL) -> None:
    vp, sz, u64, i = _c.c_void_p, _c.c_size_t, _c.c_uint64, _c.c_int
    E = P(_Error)
    decl = {
        "sk_version": ([], _c.c_char_p),
        "sk_code_name": ([i], _c.c_char_p),
        "sk_reader_options_init_sized": ([P(ReaderOptions), sz], None),
        "sk_reader_open": ([P(vp), P(_c.c_char_p), sz, P(ReaderOptions), E], i),
        "sk_reader_close": ([vp], None),
        "sk_reader_next": ([vp, P(P(ReaderSample)), E], i),
        "sk_reader_start_epoch": ([vp, u64, E], i),
        "sk_reader_get_state": ([vp, P(ReaderState)], None),
        "sk_reader_restore": ([vp, P(ReaderState), E], i),
        "sk_reader_get_stats": ([vp, P(ReaderStats)], None),
        "sk_reader_shard_count": ([vp], sz),
        "sk_reader_slot_shards": ([vp], sz),
        "sk_reader_shard_url": ([vp, sz], _c.c_char_p),
        "sk_reader_get_position": ([vp, P(ReaderPosition), E], i),
        "sk_reader_position_at": ([vp, u64, P(ReaderPosition), E], i),
        "sk_reader_seek": ([vp, P(ReaderPosition), E], i),
        "sk_reader_epoch_samples": ([vp], u64),
        "sk_reader_slot_left": ([vp], u64),
        "sk_reader_global_reads": ([vp], u64),
        "sk_s3_config_init_sized": ([P(S3Config), sz], None),
        "sk_s3_new": ([P(vp), P(S3Config), E], i),
        "sk_s3_free": ([vp], None),
        "sk_place_check": ([_c.c_char_p, _c.c_uint, _c.c_char_p, P(i), E], i),
        "sk_dataset_open_s3": ([P(vp), _c.c_char_p, vp, _c.c_uint, E], i),
        "sk_dataset_close": ([vp], None),
        "sk_dataset_samples": ([vp, P(u64), E], i),
        "sk_dataset_find": ([vp, _c.c_char_p, sz, P(Hit), E], i),
        "sk_dataset_at": ([vp, u64, P(Hit), E], i),
        "sk_dataset_member": ([vp, P(Hit), _c.c_uint32, P(MemberRef), E], i),
        "sk_dataset_read": ([vp, P(Hit), _c.c_uint32, vp, sz, E], i),
        "sk_pack_options_init_sized": ([P(PackOptions), sz], None),
        "sk_dataset_read_sample": ([vp, P(Hit), vp, sz, P(MemberRef), sz, E], i),
        "sk_dataset_get": ([vp, _c.c_char_p, sz, u64, vp, sz, P(GetResult), E], i),
        "sk_dataset_get_many": ([vp, vp, sz, vp, sz, vp, P(sz), E], i),
    }
    # the sample writer came later: a library without it still serves the rest
    writer = {
        "sk_sample_writer_open": ([P(vp), P(PackOptions), E], i),
        "sk_sample_writer_set_s3": ([vp, vp, u64, E], i),
        "sk_sample_writer_add": ([vp, _c.c_char_p, sz, P(SampleMember), sz, E], i),
        "sk_sample_writer_finish": ([vp, P(PackStats), E], i),
        "sk_sample_writer_close": ([vp], None),
    }
    if hasattr(lib, "sk_sample_writer_open"):
        decl.update(writer)
    for name, (args, res) in decl.items():
        f = getattr(lib, name)
        f.argtypes = args
        f.restype = res


def load_library(path: Optional[str] = None) -> ctypes.CDLL:
    """Loads libshardkit.so once (see the module's docstring for where it
    looks) and declares its calls; with path, loads that one instead (and
    makes it the default when no library was loaded yet)."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None and path is None:
            return _lib
        tried = []
        for p in _candidates(path):
            try:
                lib = _c.CDLL(p)
                _declare(lib)
            except (OSError, AttributeError) as e:
                tried.append("%s: %s" % (p, e))
                continue
            if path is None or _lib is None:   # an explicit path first becomes the default
                _lib, _lib_path = lib, p
            return lib
        raise LibraryError(SK_E_NOTFOUND, "libshardkit.so not found (set SHARDKIT_LIB, or "
                           "install it with make install): " + ("; ".join(tried) or
                                                                "no candidate exists"))


def library_path() -> Optional[str]:
    """The path of the libshardkit.so this process loaded (None before)."""
    return _lib_path


def library_version() -> str:
    """libshardkit's version at run time ("MAJOR.MINOR.PATCH")."""
    return load_library().sk_version().decode()
