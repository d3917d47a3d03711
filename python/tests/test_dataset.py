"""shardkit.Dataset indexing: integers only (a float or a string of
digits is not silently another sample), a str is a key."""
import numpy as np
import pytest

import shardkit


def test_refuses_non_integers(data):
    with shardkit.Dataset(data) as ds:
        for bad in (1.9, 1.0, True, None, 2 + 0j):
            with pytest.raises(TypeError):
                ds[bad]
        with pytest.raises(TypeError):
            ds.__getitems__([0, 1.5])
        with pytest.raises(TypeError):
            ds.read(1.9)
        with pytest.raises(TypeError):
            ds.info("3")
        assert ds[np.int64(3)]["__index__"] == 3
        assert ds[-1]["__index__"] == len(ds) - 1


def test_key_lookup(data, samples):
    with shardkit.Dataset(data) as ds:
        s = ds["d1/s0007"]
        assert s["__key__"] == "d1/s0007" and s == ds.get("d1/s0007")
        assert ds[b"d1/s0007"]["__key__"] == "d1/s0007"
        with pytest.raises(KeyError):
            ds["5"]        # no such key: not sample #5
        with pytest.raises(shardkit.KeyNotFoundError):
            ds["d9/nope"]


def test_not_found_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        shardkit.Dataset(str(tmp_path / "nope.tar"))
    assert isinstance(e.value, shardkit.NotFoundError) and e.value.code == 8
    assert "nope.tar" in str(e.value)
    with pytest.raises(FileNotFoundError):
        list(shardkit.Reader(str(tmp_path / "nope.tar"), rank=0, world_size=1, worker=0,
                             num_workers=1))


def test_places_by_the_library_grammar():
    """The binding asks the library what a name is (docs/places.md), as
    every tool does: S3:// is S3, a lost slash or a ./ path is not."""
    from shardkit import _lib
    lib = _lib.load_library()
    assert _lib.is_s3(lib, "s3://b/k") and _lib.is_s3(lib, "S3://b/k") and _lib.is_s3(lib, b"s3://b/")
    for name in ("s3:/b/k", "s3:", "./s3:/b/k", "data/s3://b", "https://h/x.tar", "-"):
        assert not _lib.is_s3(lib, name), name
