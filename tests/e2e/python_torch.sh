#!/usr/bin/env bash
# python_torch.sh - the PyTorch IterableDataset (samples/pytorch/dataset.py)
# under Debian's /usr/bin/python3 with python3-torch: DataLoader with 3
# workers on each of 2 ranks reads every sample exactly once per epoch,
# shuffled, and a different order in the next epoch; the train-loop
# example runs two epochs.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"
"$PY" -c 'import torch' 2>/dev/null || skip "python3-torch is not installed for /usr/bin/python3 (scripts/deps installs it)"
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 240 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 20
export SHARDKIT_LIB=$LIB
step "2 ranks x 3 DataLoader workers: every sample once"
"$PY" - "$T" "$SK_ROOT" <<'PY' || die "DataLoader check failed"
import sys
T, root = sys.argv[1], sys.argv[2]
sys.path.insert(0, root + "/samples/pytorch")
import torch
from torch.utils.data import DataLoader
from dataset import ShardDataset

def keys_of(epoch):
    seen = []
    for rank in (0, 1):
        ds = ShardDataset(T + "/s", rank=rank, world_size=2, shuffle_shards=True,
                          shuffle_buffer=16, seed=4, decode=lambda s: s["__key__"])
        ds.set_epoch(epoch)
        for batch in DataLoader(ds, batch_size=8, num_workers=3):
            seen.extend(batch)
    return seen

e0, e0b, e1 = keys_of(0), keys_of(0), keys_of(1)
assert len(e0) == 240 and len(set(e0)) == 240, (len(e0), len(set(e0)))
assert sorted(e1) == sorted(e0)
assert e0 == e0b, "same epoch and seed gave two orders"
assert e0 != e1, "epoch 1 has epoch 0's order"
# with workers the split is by worker too: num_workers=2 also covers all
ds = ShardDataset(T + "/s", rank=0, world_size=1, decode=lambda s: s["__key__"])
two = [k for b in DataLoader(ds, batch_size=5, num_workers=2) for k in b]
assert sorted(two) == sorted(e0) and len(two) == 240
print("ok")
PY
step "train-loop example"
expect_ok "$PY" "$SK_ROOT/samples/pytorch/train.py" "$T/s" --epochs 2 --workers 2
assert_contains "$OUT" "epoch 1: 240 samples"
