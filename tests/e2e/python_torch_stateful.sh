#!/usr/bin/env bash
# python_torch_stateful.sh - shardkit.torch's datasets under torchdata's
# StatefulDataLoader (Debian's /usr/bin/python3 with python3-torch;
# torchdata installed, or its source tree at $SK_TORCHDATA_PATH; skipped
# when neither: it is not a Debian package).  StreamingDataset (the global
# order, 2 simulated ranks) and IterableDataset (stream mode): stopped after
# k batches (several k, num_workers 0 and 2, a batch size that divides the
# shards' 20 samples and one that does not), loader.state_dict() through
# torch.save, a new StatefulDataLoader over a new dataset, load_state_dict,
# the rest of the epoch: across both runs every sample of the epoch exactly
# once.  A worker's state loaded into another world size is refused,
# naming the layouts.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"
TD=${SK_TORCHDATA_PATH:-}
# one probe (importing torch takes seconds): 3 no torch, 4 no torchdata
PYTHONPATH="$TD" "$PY" -c '
import sys
try:
    import torch
except ImportError:
    sys.exit(3)
try:
    from torchdata.stateful_dataloader import StatefulDataLoader
except ImportError:
    sys.exit(4)' 2>/dev/null
case $? in
0) ;;
3) skip "python3-torch is not installed for /usr/bin/python3 (scripts/deps installs it)" ;;
*) skip "torchdata's StatefulDataLoader is not importable (not a Debian package: pip install torchdata, or set SK_TORCHDATA_PATH to its source tree)" ;;
esac
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 120 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 20
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python${TD:+:$TD}

step "StatefulDataLoader: stop after k batches, resume in a new loader, every sample once; another layout refused"
"$PY" - "$T" <<'PY' || die "StatefulDataLoader resume"
import io, sys
import torch
from torchdata.stateful_dataloader import StatefulDataLoader
import shardkit, shardkit.torch as skt
T = sys.argv[1]
ALL = 120

def slim(s):
    return {"__key__": s["__key__"]}

def streaming(rank, batch, workers):
    return skt.StreamingDataset(T + "/s", seed=5, shuffle_window=2, batch_size=batch,
                                num_workers=workers, rank=rank, world_size=2, decode=slim,
                                epoch=1)

def stream_mode(rank, batch, workers):
    return skt.IterableDataset(T + "/s", rank=rank, world_size=1, shuffle_shards=True,
                               shuffle_buffer=8, seed=5, epoch=1, decode=slim)

def roundtrip(state):
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf)

def run(make, ranks, workers, batch, stops):
    """Each rank: a loader stopped after stops[0] batches, its state loaded
    into a new loader over a new dataset, stopped after stops[1] more, ...,
    the last one read to the end of the epoch."""
    seen = []
    for rank in range(ranks):
        state = None
        for stop in tuple(stops) + (None,):
            loader = StatefulDataLoader(make(rank, batch, workers), batch_size=batch,
                                        num_workers=workers)
            if state is not None:
                loader.load_state_dict(state)
            for i, b in enumerate(loader):
                seen.extend(b["__key__"])   # the loop has it: consumed
                if i + 1 == stop:
                    state = roundtrip(loader.state_dict())
                    break
            del loader
    return seen

# 2 ranks x 2 workers x batch 7: 4 whole rounds of 28 positions, then a last
# partial round of 8 (2 to each slot); stopping after 8 batches leaves
# every worker in it
for name, make, ranks in (("StreamingDataset", streaming, 2), ("IterableDataset", stream_mode, 1)):
    for workers in (0, 2):
        for batch in (4, 7):
            for stops in ((1,), (3, 5)):
                seen = run(make, ranks, workers, batch, stops)
                assert len(seen) == ALL and len(set(seen)) == ALL, \
                    (name, workers, batch, stops, len(seen), len(set(seen)))

# a worker's state loaded into another world size is refused, naming both
def ds(world):
    return skt.StreamingDataset(T + "/s", seed=5, batch_size=4, num_workers=2, rank=0,
                                world_size=world, decode=lambda s: {"__key__": s["__key__"]})
loader = StatefulDataLoader(ds(2), batch_size=4, num_workers=2)
it = iter(loader)
next(it), next(it), next(it)
state = loader.state_dict()
del it, loader
loader2 = StatefulDataLoader(ds(3), batch_size=4, num_workers=2)
loader2.load_state_dict(state)
try:
    list(loader2)
    raise SystemExit("a state of world size 2 was loaded into world size 3")
except Exception as e:
    msg = str(e)
    assert "MismatchError" in msg and "world size 2" in msg and "world size 3" in msg, msg
print("ok")
PY
echo "python_torch_stateful: ok"
