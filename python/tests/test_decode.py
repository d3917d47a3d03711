"""Decoding as WebDataset's .decode() / .to_tuple(): each spec's result
equals what PIL and numpy give for the same bytes (computed here, not by
the code under test), pickles are loaded only when asked, and where the
real webdataset package imports, its decoders agree sample for sample."""
import io
import json
import pickle

import numpy as np
import pytest
from PIL import Image

import shardkit
from shardkit.decode import Decoder

torch = pytest.importorskip("torch")


def reader(data):
    return shardkit.Reader(data, rank=0, world_size=1, worker=0, num_workers=1)


def by_key(samples):
    return {s["__key__"]: s for s in samples}


def test_basic_types(data, samples):
    want = by_key(samples)
    got = list(reader(data).decode())
    assert len(got) == len(samples)
    for g in got:
        s = want[g["__key__"]]
        assert g["cls"] == s["cls"] and type(g["cls"]) is int
        assert g["txt"] == s["txt"]
        assert g["json"] == json.loads(json.dumps(s["json"]))
        assert isinstance(g["npy"], np.ndarray) and g["npy"].dtype == np.int16
        assert np.array_equal(g["npy"], s["npy"])
        assert isinstance(g["jpg"], bytes)      # no image spec: images stay bytes


def pil_rgb(b):
    return Image.open(io.BytesIO(b)).convert("RGB")


@pytest.mark.parametrize("spec", ["pil", "rgb8", "numpy", "rgb", "torchrgb", "torchrgb8", "l8",
                                  "torchl", "pilrgba"])
def test_image_specs(data, spec):
    for g, raw in zip(reader(data).decode(spec), reader(data)):
        b = raw["jpg"]
        rgb = np.asarray(pil_rgb(b))          # H x W x 3 uint8
        gray = np.asarray(Image.open(io.BytesIO(b)).convert("L"))
        v = g["jpg"]
        if spec == "pil":
            assert isinstance(v, Image.Image) and v.mode == "RGB"
            assert np.array_equal(np.asarray(v), rgb)
        elif spec == "pilrgba":
            assert v.mode == "RGBA" and np.array_equal(np.asarray(v)[:, :, :3], rgb)
        elif spec in ("rgb8", "numpy"):
            assert v.dtype == np.uint8 and v.shape == rgb.shape and np.array_equal(v, rgb)
        elif spec == "rgb":
            assert v.dtype == np.float32 and np.allclose(v, rgb / 255.0)
        elif spec == "torchrgb":
            assert v.dtype == torch.float32 and tuple(v.shape) == (3,) + rgb.shape[:2]
            assert np.allclose(v.numpy(), rgb.transpose(2, 0, 1) / 255.0)
        elif spec == "torchrgb8":
            assert v.dtype == torch.uint8 and np.array_equal(v.numpy(), rgb.transpose(2, 0, 1))
        elif spec == "l8":
            assert v.shape == gray.shape and np.array_equal(v, gray)
        elif spec == "torchl":
            assert tuple(v.shape) == gray.shape and np.allclose(v.numpy(), gray / 255.0)
        if "seg.png" in raw:   # any extension PIL opens, after the last dot
            assert not isinstance(g["seg.png"], bytes)


def test_to_tuple(data, samples):
    want = by_key(samples)
    keys = [s["__key__"] for s in reader(data)]
    got = list(reader(data).decode("rgb8").to_tuple("jpg", "cls"))
    assert len(got) == len(samples)
    for k, (img, cls) in zip(keys, got):
        assert cls == want[k]["cls"] and img.dtype == np.uint8 and img.ndim == 3
    # "a;b": the first present; one string with spaces: several
    got = list(reader(data).to_tuple("png;seg.png;cls txt json"))
    assert all(len(t) == 3 for t in got)
    with pytest.raises(ValueError, match="has no nothing"):
        next(reader(data).to_tuple("nothing"))
    assert next(reader(data).to_tuple("nothing", missing_is_error=False)) == (None,)


def test_pickle_only_when_asked(tmp_path):
    with shardkit.ShardWriter(str(tmp_path / "p-%03d.tar")) as w:
        w.write({"__key__": "a", "pyd": {"x": (1, 2)}, "pickle": [3], "pkl": pickle.dumps(5)})
    s = next(reader(str(tmp_path)).decode())
    assert s["pyd"] == pickle.dumps({"x": (1, 2)}) and isinstance(s["pickle"], bytes)
    s = next(reader(str(tmp_path)).decode(pickle=True))
    assert s["pyd"] == {"x": (1, 2)} and s["pickle"] == [3] and s["pkl"] == 5


def test_handlers_and_errors(data):
    def upper(key, b):
        return b.decode().upper() if key.endswith(".txt") else None

    s = next(reader(data).decode(upper))
    assert s["txt"] == s["txt"].upper() and isinstance(s["cls"], int)
    with pytest.raises(ValueError, match="unknown image spec"):
        Decoder(["jpeg-please"])
    with pytest.raises(shardkit.decode.DecodingError, match="member 'cls'"):
        Decoder()({"__key__": "k", "cls": b"not a number"})


def test_encodings_round_trip(tmp_path):
    """Numbers and strings as WebDataset writes them come back as written."""
    vals = {"cls": 7, "id": 12345678901, "txt": "h\u00e9", "json": {"a": [1, "b"]},
            "index": np.int64(4)}
    with shardkit.ShardWriter(str(tmp_path / "e-%03d.tar")) as w:
        w.write(dict(vals, __key__="k"))
    s = next(reader(str(tmp_path)).decode())
    assert s["cls"] == 7 and s["id"] == 12345678901 and s["txt"] == "h\u00e9"
    assert s["json"] == {"a": [1, "b"]} and s["index"] == 4


def test_equal_to_webdataset(data):
    """Where webdataset imports (PyPI only: put it on PYTHONPATH), its
    decoders give what shardkit's do, spec by spec."""
    wds = pytest.importorskip("webdataset")
    for spec in ("pil", "rgb8", "torchrgb", "l", "torchl8"):
        ours = list(reader(data).decode(spec))
        theirs = list(wds.WebDataset([u for u in reader(data).shard_urls], shardshuffle=False)
                      .decode(spec))
        assert [s["__key__"] for s in ours] == [s["__key__"] for s in theirs]
        for a, b in zip(ours, theirs):
            for k in ("jpg", "seg.png", "cls", "json", "txt", "npy"):
                if k not in a:
                    continue
                x, y = a[k], b[k]
                if isinstance(x, Image.Image):
                    x, y = np.asarray(x), np.asarray(y)
                if hasattr(x, "numpy"):
                    x, y = x.numpy(), y.numpy()
                if isinstance(x, np.ndarray):
                    assert x.dtype == y.dtype and np.array_equal(x, y), (spec, k)
                else:
                    assert x == y, (spec, k)
