"""decode.py - members' bytes into Python values, as WebDataset's
.decode() and .to_tuple() make them, so a loop written for WebDataset
reads shardkit's samples unchanged.

    r = shardkit.Reader("data/").decode("rgb8").to_tuple("jpg", "cls")
    img, label = next(r)                 # a uint8 HxWx3 numpy array, an int

A handler is WebDataset's: a function (key, data) -> value, or None to
pass the member on to the next handler; key is "." + the member's
extension ("seg.png": ".seg.png").  A Decoder tries its handlers in order
and keeps the bytes when none takes them.  After the handlers given, the
basic ones: txt/text/transcript -> str, cls/cls2/index/inx/id -> int,
json/jsn -> json.loads, npy -> numpy (no pickled objects), npz -> a dict of
arrays.  Pickled members (pyd, pickle, pkl) are unpickled only when asked
(pickle=True, or the handler `unpickle`): unpickling runs code the data
names, so reading an untrusted shard must not do it by default (WebDataset
does).  Images: an image spec ("pil", "rgb8", "torchrgb", ... IMAGE_SPECS)
decodes every extension PIL opens; "numpy" is shardkit's name for "rgb8".
numpy, PIL and torch are imported only when a member needs them.
"""
from __future__ import annotations

import io
import json
import pickle as _pickle
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

Handler = Callable[[str, bytes], Any]

__all__ = ["Decoder", "DecodingError", "IMAGE_SPECS", "basic", "unpickle", "image",
           "image_extensions", "decode_sample", "tuple_getter"]


class DecodingError(ValueError):
    """A member a handler could not decode; names the sample, its shard and
    the member, with the handler's exception as __cause__."""

    def __init__(self, key: Any, url: Any, ext: str, exc: BaseException) -> None:
        super().__init__("%s: sample %r: member %r: %s: %s" % (
            url, key, ext, type(exc).__name__, exc))
        self.key, self.url, self.ext = key, url, ext


def _ext(key: str) -> str:
    """The last extension of a handler's key (".seg.png" -> "png")."""
    return key.rsplit(".", 1)[-1]


def _text(data: bytes) -> str:
    return data.decode("utf-8")


def _number(data: bytes) -> int:
    return int(data)


def _json(data: bytes) -> Any:
    return json.loads(data)


def _npy(data: bytes) -> Any:
    import numpy.lib.format
    return numpy.lib.format.read_array(io.BytesIO(data), allow_pickle=False)


def _npz(data: bytes) -> Dict[str, Any]:
    import numpy as np
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return dict(z)


#: what the basic handler decodes, by extension (WebDataset's names)
BASIC: Dict[str, Callable[[bytes], Any]] = {
    "txt": _text, "text": _text, "transcript": _text,
    "cls": _number, "cls2": _number, "index": _number, "inx": _number, "id": _number,
    "json": _json, "jsn": _json, "npy": _npy, "npz": _npz,
}
PICKLED = ("pyd", "pickle", "pkl")


def basic(key: str, data: bytes) -> Any:
    """The basic types (BASIC), or None for any other extension."""
    f = BASIC.get(_ext(key))
    return f(data) if f is not None else None


def unpickle(key: str, data: bytes) -> Any:
    """pyd / pickle / pkl members unpickled: only for shards you trust."""
    return _pickle.loads(data) if _ext(key) in PICKLED else None


#: image spec -> (array type, element type, PIL mode), WebDataset's table
IMAGE_SPECS: Dict[str, Tuple[str, Optional[str], str]] = {
    "l8": ("numpy", "uint8", "L"), "rgb8": ("numpy", "uint8", "RGB"),
    "rgba8": ("numpy", "uint8", "RGBA"), "l": ("numpy", "float", "L"),
    "rgb": ("numpy", "float", "RGB"), "rgba": ("numpy", "float", "RGBA"),
    "torchl8": ("torch", "uint8", "L"), "torchrgb8": ("torch", "uint8", "RGB"),
    "torchrgba8": ("torch", "uint8", "RGBA"), "torchl": ("torch", "float", "L"),
    "torchrgb": ("torch", "float", "RGB"), "torch": ("torch", "float", "RGB"),
    "torchrgba": ("torch", "float", "RGBA"),
    "pill": ("pil", None, "L"), "pil": ("pil", None, "RGB"), "pilrgb": ("pil", None, "RGB"),
    "pilrgba": ("pil", None, "RGBA"),
    "numpy": ("numpy", "uint8", "RGB"),   # shardkit's name for rgb8
}

_image_exts: Optional[frozenset] = None


def image_extensions() -> frozenset:
    """The extensions PIL can open (its EXTENSION table, formats it reads),
    which is how WebDataset's list was made."""
    global _image_exts
    if _image_exts is None:
        import PIL.Image
        PIL.Image.init()
        _image_exts = frozenset(e[1:].lower() for e, fmt in PIL.Image.EXTENSION.items()
                                if fmt in PIL.Image.OPEN)
    return _image_exts


def image(spec: str, extensions: Optional[Iterable[str]] = None) -> Handler:
    """A handler decoding images (any extension PIL opens, or those given)
    to the spec's form: PIL images, numpy HxW(xC) arrays (uint8, or float32
    in [0, 1]), torch tensors CxHxW (HxW for one channel)."""
    try:
        atype, etype, mode = IMAGE_SPECS[spec.lower()]
    except KeyError:
        raise ValueError("unknown image spec %r (one of %s)" %
                         (spec, ", ".join(sorted(IMAGE_SPECS)))) from None
    exts = frozenset(e.lower() for e in extensions) if extensions is not None else None

    def handler(key: str, data: bytes) -> Any:
        if _ext(key).lower() not in (exts if exts is not None else image_extensions()):
            return None
        import PIL.Image
        with io.BytesIO(data) as f:
            img = PIL.Image.open(f)
            img.load()
        img = img.convert(mode)
        if atype == "pil":
            return img
        import numpy as np
        a = np.asarray(img)
        if etype == "float":
            a = a.astype(np.float32) / 255.0
        if atype == "numpy":
            return a
        import torch
        return torch.from_numpy(a.transpose(2, 0, 1).copy() if a.ndim == 3 else a.copy())

    handler.__name__ = "image_" + spec
    return handler


class Decoder:
    """Decodes a sample dict: each member through the handlers (image
    specs or functions) then the basic ones (and unpickle with
    pickle=True); "__" fields pass as they are.  only: decode just these
    extensions; partial: leave values that are not bytes as they are
    (else TypeError)."""

    def __init__(self, handlers: Sequence[Any] = (), only: Optional[Iterable[str]] = None,
                 partial: bool = False, pickle: bool = False) -> None:
        hs: List[Handler] = []
        for h in handlers:
            if isinstance(h, str):
                hs.append(image(h))
            elif callable(h):
                hs.append(h)
            else:
                raise TypeError("a decode handler is an image spec or a function (key, data), "
                                "not %r" % (h,))
        hs.append(basic)
        if pickle:
            hs.append(unpickle)
        self.handlers = hs
        if isinstance(only, str):
            only = only.split()
        self.only = frozenset(only) if only is not None else None
        self.partial = partial

    def decode1(self, ext: str, data: bytes) -> Any:
        key = "." + ext
        for h in self.handlers:
            v = h(key, data)
            if v is not None:
                return v
        return data

    def __call__(self, sample: Dict[str, Any]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        for k, v in sample.items():
            if k[:2] == "__" or (self.only is not None and k not in self.only):
                out[k] = v
                continue
            if not isinstance(v, (bytes, bytearray, memoryview)):
                if self.partial:
                    out[k] = v
                    continue
                raise TypeError("member %r of %r is a %s, not bytes (decoded twice? "
                                "partial=True leaves it)" % (k, sample.get("__key__"),
                                                            type(v).__name__))
            try:
                out[k] = self.decode1(k, bytes(v))
            except Exception as e:
                raise DecodingError(sample.get("__key__"), sample.get("__url__"), k, e) from e
        return out


def decode_sample(sample: Dict[str, Any], *handlers: Any, pickle: bool = False) -> Dict[str, Any]:
    """One sample decoded: Decoder(handlers, pickle=pickle)(sample)."""
    return Decoder(handlers, pickle=pickle)(sample)


def tuple_getter(names: Sequence[str], missing_is_error: bool = True
                 ) -> Callable[[Dict[str, Any]], Tuple[Any, ...]]:
    """The function to_tuple() applies: names as WebDataset takes them
    (one string with spaces means several; "jpg;png" the first present)."""
    if len(names) == 1 and isinstance(names[0], str) and " " in names[0]:
        names = names[0].split()
    alts = [n.split(";") for n in names]

    def get(sample: Dict[str, Any]) -> Tuple[Any, ...]:
        out = []
        for choice in alts:
            for n in choice:
                if n in sample:
                    out.append(sample[n])
                    break
            else:
                if missing_is_error:
                    raise ValueError("%s: sample %r has no %s (it has %s)" % (
                        sample.get("__url__"), sample.get("__key__"), " or ".join(choice),
                        ", ".join(k for k in sample if k[:2] != "__")))
                out.append(None)
        return tuple(out)

    return get
