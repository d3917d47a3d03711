"""shardkit.Reader as a Python iterator: next(), len(), repr, and one
reader shared by threads (every sample once, no false corruption)."""
import threading

import pytest

import shardkit


def reader(data, **kw):
    kw.setdefault("rank", 0)
    kw.setdefault("world_size", 1)
    kw.setdefault("worker", 0)
    kw.setdefault("num_workers", 1)
    return shardkit.Reader(data, **kw)


def test_next_and_stop(data, samples):
    with reader(data) as r:
        assert iter(r) is r
        first = next(r)
        assert first["__key__"] == "d0/s0000"
        rest = list(r)
        assert len(rest) == len(samples) - 1
        with pytest.raises(StopIteration):
            next(r)
        r.start_epoch(1)
        assert next(r)["__key__"] == "d0/s0000"


def test_len(data, samples):
    with reader(data) as r:
        assert len(r) == len(samples)
    for slot in range(2):   # two slots, no shard shuffle: each its shards' samples
        with reader(data, worker=slot, num_workers=2) as r:
            assert len(r) == len(list(r))
    with reader(data, worker=0, num_workers=2, shuffle_shards=True) as r:
        with pytest.raises(TypeError, match="shuffle_shards"):
            len(r)


def test_repr(data):
    r = reader(data, worker=1, num_workers=2)
    next(r)
    text = repr(r)
    assert data in text and "epoch 0" in text and "slot 1 of 2" in text and \
        "1 of 3 shards" in text and "1 samples yielded" in text, text
    r.decode().to_tuple("cls")
    assert ".decode() .to_tuple()" in repr(r)
    r.close()
    assert "closed" in repr(r)


def test_shared_by_threads(data, samples):
    """Eight threads pulling from one reader: every sample exactly once and
    no error (on main, false CorruptError and samples seen twice)."""
    for _ in range(5):
        r = reader(data, prefetch=1, buffer_size=4096)
        got, errors = [], []

        def pull():
            try:
                for s in r:
                    got.append((s["__key__"], s["jpg"]))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        ts = [threading.Thread(target=pull) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        r.close()
        assert not errors, errors
        keys = sorted(k for k, _ in got)
        assert keys == sorted(s["__key__"] for s in samples)
        by_key = {s["__key__"]: s for s in samples}
        assert all(by_key[k]["jpg"] == j for k, j in got)
