"""conftest.py - what every test of the shardkit package shares: the
package from this source tree, the library from $SHARDKIT_LIB (the e2e
wrapper sets it to the build's) or the tree's build/, and a small dataset
written once per session with ShardWriter (JPEG, PNG, cls, json, txt, npy
members, 3 shards with .idx sidecars and a manifest).

Run: SHARDKIT_LIB=build/libshardkit.so /usr/bin/python3 -m pytest python/tests
(tests/e2e/python_pytest.sh does it from make check)."""
import io
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
os.environ.setdefault("SHARDKIT_LIB", os.path.join(ROOT, os.environ.get("SK_BUILD", "build"),
                                                   "libshardkit.so"))

import shardkit  # noqa: E402

N = 30


def jpeg(i: int) -> bytes:
    from PIL import Image
    img = Image.new("RGB", (24 + i % 3, 16), (i * 8 % 256, 100, 255 - i * 8 % 256))
    img.putpixel((1, 1), (0, 255, 0))
    b = io.BytesIO()
    img.save(b, format="JPEG", quality=90)
    return b.getvalue()


def png(i: int) -> bytes:
    from PIL import Image
    img = Image.new("RGBA", (8, 6 + i % 2), (i, 2 * i % 256, 3, 200))
    b = io.BytesIO()
    img.save(b, format="PNG")
    return b.getvalue()


def sample(i: int) -> dict:
    import numpy as np
    s = {"__key__": "d%d/s%04d" % (i % 2, i), "jpg": jpeg(i), "cls": i % 7,
         "json": {"i": i, "name": "n\u00e9%d" % i, "l": [1.5, None, True]},
         "txt": "text %d \u2603" % i, "npy": np.arange(i, i + 6, dtype=np.int16).reshape(2, 3)}
    if i % 3 == 0:
        s["seg.png"] = png(i)
    return s


@pytest.fixture(scope="session")
def samples():
    return [sample(i) for i in range(N)]


@pytest.fixture(scope="session")
def data(tmp_path_factory, samples):
    """A directory of 3 shards (10 samples each), written in key order."""
    d = tmp_path_factory.mktemp("data")
    with shardkit.ShardWriter(str(d / "t-%03d.tar"), max_count=10) as w:
        for s in sorted(samples, key=lambda s: s["__key__"].encode()):
            w.write(s)
    return str(d)
