"""train.py - a small training loop fed by ShardDataset: a linear classifier
over the first bytes of each sample's .jpg, labelled by its .cls, for a few
epochs, DataLoader workers splitting the shards.  It shows the wiring (epochs,
workers, checkpointing the position is the reader's state), not a model.

    /usr/bin/python3 samples/pytorch/train.py SHARDS [--epochs 2] [--workers 2]
"""
import argparse
import os
import sys

import torch
from torch.utils.data import DataLoader

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dataset import ShardDataset  # noqa: E402

FEATURES = 256
CLASSES = 10


def decode(sample):
    """jpg bytes -> a fixed-size float vector; cls -> a class index."""
    raw = sample["jpg"][:FEATURES].ljust(FEATURES, b"\0")
    x = torch.frombuffer(bytearray(raw), dtype=torch.uint8).float() / 255.0
    y = int(sample["cls"]) % CLASSES
    return x, y


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("shards", nargs="+")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.manual_seed(0)
    ds = ShardDataset(args.shards, decode=decode, shuffle_shards=True, shuffle_buffer=256, seed=1)
    model = torch.nn.Linear(FEATURES, CLASSES)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = torch.nn.CrossEntropyLoss()
    for epoch in range(args.epochs):
        ds.set_epoch(epoch)
        loader = DataLoader(ds, batch_size=args.batch, num_workers=args.workers)
        n, total = 0, 0.0
        for x, y in loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            n += len(y)
            total += loss.item() * len(y)
        print("epoch %d: %d samples, mean loss %.4f" % (epoch, n, total / max(n, 1)))


if __name__ == "__main__":
    main()
