#!/usr/bin/env bash
# python_torch_dataset.sh - shardkit.torch under Debian's /usr/bin/python3
# with python3-torch.  IterableDataset: DataLoader with 2 workers on each of
# 2 simulated ranks (the rank argument, and $RANK / $WORLD_SIZE) yields
# every sample exactly once per epoch, another order the next epoch; stopped
# mid-epoch and resumed from state_dict() (through torch.save) in a new
# DataLoader, the two parts together are again every sample exactly once.
# MapDataset: with DistributedSampler on 2 ranks x 2 workers, every sample
# once, each equal to shardkit.Dataset's; the loader fetches a batch with
# one __getitems__.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"
"$PY" -c 'import torch' 2>/dev/null || skip "python3-torch is not installed for /usr/bin/python3 (scripts/deps installs it)"
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 240 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 20
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python

step "IterableDataset: 2 ranks x 2 workers, every sample once per epoch"
"$PY" - "$T" <<'PY' || die "IterableDataset epochs"
import os, sys
from torch.utils.data import DataLoader
import shardkit.torch as skt
T = sys.argv[1]
ALL = 240

def epoch_keys(epoch, by_env=False):
    seen = []
    for rank in (0, 1):
        if by_env:
            os.environ["RANK"], os.environ["WORLD_SIZE"] = str(rank), "2"
            ds = skt.IterableDataset(T + "/s", shuffle_shards=True, shuffle_buffer=16, seed=4)
        else:
            ds = skt.IterableDataset(T + "/s", rank=rank, world_size=2, shuffle_shards=True,
                                     shuffle_buffer=16, seed=4)
        ds.set_epoch(epoch)
        for batch in ds.track(DataLoader(ds, batch_size=8, num_workers=2)):
            assert "__state__" not in batch
            seen.extend(batch["__key__"])
    os.environ.pop("RANK", None), os.environ.pop("WORLD_SIZE", None)
    return seen

e0, e1, e0env = epoch_keys(0), epoch_keys(1), epoch_keys(0, by_env=True)
assert len(e0) == ALL and len(set(e0)) == ALL, (len(e0), len(set(e0)))
assert sorted(e1) == sorted(e0) and e0 != e1, "epoch 1 is not a reshuffle of epoch 0"
assert e0env == e0, "ranks from $RANK / $WORLD_SIZE differ from the arguments"
# decode, and the sample's members
ds = skt.IterableDataset(T + "/s", rank=0, world_size=1,
                         decode=lambda s: (s["__key__"], s["cls"]))
got = dict(x for b in DataLoader(ds, batch_size=None, num_workers=2) for x in [b])
assert len(got) == ALL and got["n00000/00000007"] == open(T + "/c/n00000/00000007.cls", "rb").read()
print("ok")
PY

step "IterableDataset: stop mid-epoch, resume from state_dict in a new DataLoader"
"$PY" - "$T" <<'PY' || die "IterableDataset resume"
import io, sys
import torch
from torch.utils.data import DataLoader
import shardkit.torch as skt
T = sys.argv[1]
ALL = 240
opts = dict(world_size=2, shuffle_shards=True, shuffle_buffer=16, seed=9)

for stop in (0, 1, 3, 7, 100):
    seen = []
    for rank in (0, 1):
        ds = skt.IterableDataset(T + "/s", rank=rank, **opts)
        ds.set_epoch(2)
        loader = DataLoader(ds, batch_size=5, num_workers=2, prefetch_factor=4)
        # a batch counts as consumed once the loop has it (as a checkpoint
        # taken in the loop's body expects)
        for step, batch in enumerate(ds.track(loader)):
            seen.extend(batch["__key__"])
            if step == stop:
                break
        buf = io.BytesIO()
        torch.save(ds.state_dict(), buf)
        del loader
        # a new process would build all of this again
        ds2 = skt.IterableDataset(T + "/s", rank=rank, **opts)
        buf.seek(0)
        ds2.load_state_dict(torch.load(buf))
        ds2.set_epoch(2)
        rest = [k for b in ds2.track(DataLoader(ds2, batch_size=5, num_workers=2)) for k in b["__key__"]]
        seen.extend(rest)
        # at the end of the epoch the position says so: restored, nothing is left
        ds3 = skt.IterableDataset(T + "/s", rank=rank, **opts)
        ds3.load_state_dict(ds2.state_dict())
        left = [k for b in ds3.track(DataLoader(ds3, batch_size=5, num_workers=2)) for k in b["__key__"]]
        assert left == [], (stop, rank, len(left))
        # and the next epoch starts afresh
        ds3.set_epoch(3)
        assert ds3.state_dict()["states"] == {}
    assert len(seen) == ALL and len(set(seen)) == ALL, (stop, len(seen), len(set(seen)))
print("ok")
PY

step "MapDataset with DistributedSampler: 2 ranks x 2 workers, every sample once"
"$PY" - "$T" <<'PY' || die "MapDataset"
import sys
from torch.utils.data import DataLoader, DistributedSampler
import shardkit, shardkit.torch as skt
T = sys.argv[1]
ref = shardkit.Dataset(T + "/s")
seen = []
for rank in (0, 1):
    ds = skt.MapDataset(T + "/s/manifest.json", transform=lambda s: (s["__key__"], s["__index__"], s["jpg"]))
    assert len(ds) == 240
    sampler = DistributedSampler(ds, num_replicas=2, rank=rank, shuffle=True, seed=3)
    sampler.set_epoch(1)
    for keys, idx, jpgs in DataLoader(ds, batch_size=7, sampler=sampler, num_workers=2,
                                      collate_fn=lambda b: list(zip(*b))):
        for k, i, j in zip(keys, idx, jpgs):
            r = ref[i]
            assert r["__key__"] == k and r["jpg"] == j, (k, i)
        seen.extend(keys)
assert len(seen) == 240 and len(set(seen)) == 240, (len(seen), len(set(seen)))
# the loader fetches each batch with one __getitems__ (one library call per
# buffer-full), transformed as [i] would be
class Counting(skt.MapDataset):
    calls = 0
    def __getitems__(self, indices):
        Counting.calls += 1
        return super().__getitems__(indices)
ds = Counting(T + "/s", transform=lambda s: (s["__key__"], s["__index__"], s["json"]))
batches = list(DataLoader(ds, batch_size=16, shuffle=True, num_workers=0, collate_fn=list))
assert Counting.calls == 15 and sorted(i for b in batches for _, i, _ in b) == list(range(240))
for b in batches:
    for k, i, j in b:
        assert (k, i, j) == (ref[i]["__key__"], i, ref[i]["json"]), (k, i)
try:
    skt.MapDataset(T + "/s")[240]
    raise SystemExit("no error out of range")
except IndexError as e:
    assert isinstance(e, shardkit.NotFoundError)
print("ok")
PY
echo "python_torch_dataset: ok"
