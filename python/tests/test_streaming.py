"""shardkit.torch.StreamingDataset and Reader(global_order=True): one
sequence whatever the world size and DataLoader workers, exact len() per
rank, state_dict() mid-epoch restored into another world size and worker
count reading every sample once across the runs, and two streams mixed by
weight."""
import collections
import os

import pytest

import shardkit

torch = pytest.importorskip("torch")
from torch.utils.data import DataLoader  # noqa: E402

import shardkit.torch as skt  # noqa: E402


def slim(s):
    """What collates: the key and the position (members differ in kind)."""
    return {"__key__": s["__key__"], "__position__": s["__position__"]}


def keys_of(batch):
    return list(batch["__key__"])


def run(ds, workers, batch=2, stop=None):
    """The keys a DataLoader over ds yields (the first `stop` batches)."""
    out = []
    loader = DataLoader(ds, batch_size=batch, num_workers=workers)
    for i, b in enumerate(ds.track(loader)):
        out.extend(keys_of(b))   # the loop has it: consumed
        if stop is not None and i + 1 == stop:
            break
    return out


def test_reader_global_order_is_the_same_for_every_split(data, samples):
    def seq(world, workers):
        got = {}
        for r in range(world):
            for w in range(workers):
                with shardkit.Reader(data, rank=r, world_size=world, worker=w,
                                     num_workers=workers, global_order=True,
                                     shuffle_shards=True, seed=3, shuffle_window=2) as rd:
                    n = len(rd)
                    mine = [(s["__position__"], s["__key__"]) for s in rd]
                    assert len(mine) == n
                    got.update(mine)
        return [got[p] for p in sorted(got)]
    one = seq(1, 1)
    assert sorted(one) == sorted(s["__key__"] for s in samples)
    for world, workers in ((2, 1), (3, 2), (8, 4)):   # 8 x 4 slots > 30 samples
        assert seq(world, workers) == one


@pytest.mark.parametrize("world,workers", [(1, 0), (2, 2), (3, 1)])
def test_len_is_exact_per_rank(data, samples, world, workers):
    total = 0
    for r in range(world):
        ds = skt.StreamingDataset(data, rank=r, world_size=world, batch_size=2, seed=1,
                                  decode=slim)
        got = run(ds, workers)
        assert len(got) == len(ds)
        total += len(got)
    assert total == len(samples)


def test_resume_into_another_world(data, samples):
    # 2 ranks x 2 workers stop after 3 batches of 2; 3 ranks x 1 worker finish
    first, states = [], []
    for r in range(2):
        ds = skt.StreamingDataset(data, rank=r, world_size=2, batch_size=2, num_workers=2,
                                  seed=5, shuffle_window=2, decode=slim)
        first += run(ds, 2, batch=2, stop=3)
        states.append(ds.state_dict())
    assert states[0] == states[1]            # it names no rank
    rest = []
    for r in range(3):
        ds = skt.StreamingDataset(data, rank=r, world_size=3, batch_size=1, seed=5,
                                  shuffle_window=2, decode=slim)
        ds.load_state_dict(states[0])
        n = len(ds)
        got = run(ds, 0, batch=1)
        assert len(got) == n
        rest += got
    assert len(first) == 12
    assert sorted(first + rest) == sorted(s["__key__"] for s in samples)


def test_state_of_own_iteration_without_track(data, samples):
    # num_workers=0 and no track() (as torchdata's StatefulDataLoader with
    # num_workers=0 uses it): state_dict() is what the loop took, per slot
    # ("slot") and as a position; the same layout continues the slot, another
    # world size continues from the position
    keys = sorted(s["__key__"] for s in samples)
    def make(r, world, batch):
        return skt.StreamingDataset(data, rank=r, world_size=world, batch_size=batch, seed=5,
                                    shuffle_window=2, decode=slim)
    for stop, batch in ((1, 3), (2, 4), (4, 3)):
        first, states = [], []
        for r in range(2):
            ds = make(r, 2, batch)
            for i, b in enumerate(DataLoader(ds, batch_size=batch, num_workers=0)):
                first += keys_of(b)
                if i + 1 == stop:
                    break
            st = ds.state_dict()
            assert st["slot"]["yielded"] == stop * batch and st["slot"]["world_size"] == 2
            states.append(st)
        same = [k for r in range(2) for k in run(_loaded(make(r, 2, batch), states[r]), 0, batch)]
        assert sorted(first + same) == keys, (stop, batch)
        other = [k for r in range(3) for k in run(_loaded(make(r, 3, 1), states[0]), 0, 1)]
        assert sorted(first + other) == keys, (stop, batch)


def _loaded(ds, state):
    ds.load_state_dict(state)
    return ds


def test_a_position_of_other_data_is_refused(data, tmp_path):
    ds = skt.StreamingDataset(data, seed=1)
    st = ds.state_dict()
    other = skt.StreamingDataset(data, seed=2)
    other.load_state_dict(st)
    with pytest.raises(shardkit.MismatchError, match="fingerprint"):
        list(other)


def test_mixing_by_weight(data, tmp_path):
    d2 = tmp_path / "two"
    d2.mkdir()
    with shardkit.ShardWriter(str(d2 / "u-%03d.tar"), max_count=5) as w:
        for i in range(20):
            w.write({"__key__": "u%04d" % i, "txt": "u %d" % i})
    ds = skt.StreamingDataset([skt.Stream(data, proportion=1), skt.Stream(str(d2), proportion=3)],
                              samples_per_epoch=4000, seed=0)
    seen = collections.Counter()
    for s in ds:
        seen[s["__dataset__"]] += 1
    assert seen == {0: 1000, 1: 3000}
    assert len(ds) == 4000
    # weights= is the same as proportions
    ds2 = skt.StreamingDataset([data, str(d2)], weights=[1, 3], samples_per_epoch=4000, seed=0)
    assert [s["__key__"] for s in ds2] == [s["__key__"] for s in ds]


def test_a_forged_position_is_refused(data):
    import struct
    with shardkit.Reader(data, global_order=True, shuffle_shards=True, seed=1) as r:
        good = r.position(0)
        magic, version, epoch, consumed, n, fp = struct.unpack("<IIQQQQ", good)
        past = struct.pack("<IIQQQQ", magic, version, epoch, n + 1, n, fp)
        with pytest.raises(shardkit.MismatchError, match="does not fit"):
            r.seek(past)
        with pytest.raises(shardkit.UsageError, match="not a reader position"):
            r.seek(struct.pack("<IIQQQQ", 0, version, epoch, 0, n, fp))
        with pytest.raises(shardkit.UsageError, match="bytes"):
            r.seek(good[:-1])
        r.seek(good)                       # the real one still works
        assert len(list(r)) == n
