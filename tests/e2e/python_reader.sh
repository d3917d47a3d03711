#!/usr/bin/env bash
# python_reader.sh - shardkit.Reader of the Python package (python/shardkit,
# ctypes) over build/libshardkit.so: every sample's members equal what Python's tarfile
# reads from the shards, in order; keys match `shardkit cat --keys` with
# the same options; state() / restore() mid-epoch continues exactly; an
# option its C field cannot hold is a UsageError, not wrapped round.
. "$(dirname "$0")/lib.sh"
need python3
tmpdir
need_python_lib
"$SK_TOOLS/mkcorpus" "$T/c" --samples 250 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/train-%06d.tar" --max-count 30
"$SK_BIN" cat --keys --shuffle-shards --shuffle 40 --seed 5 --rank 1 --world-size 2 "$T/s" >"$T/cat.keys"
SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python python3 - "$T" <<'PY' || die "python binding check failed"
import glob, sys, tarfile
import shardkit
T = sys.argv[1]
shards = sorted(glob.glob(T + "/s/*.tar"))
want = []
for sh in shards:
    with tarfile.open(sh) as tf:
        cur = None
        for m in tf:
            key, ext = m.name.split(".", 1)
            if cur is None or cur["__key__"] != key:
                cur = {"__key__": key}
                want.append(cur)
            cur[ext] = tf.extractfile(m).read()
got = list(shardkit.Reader(T + "/s", rank=0, world_size=1, worker=0, num_workers=1))
assert len(got) == len(want) == 250, (len(got), len(want))
for g, w in zip(got, want):
    g = {k: v for k, v in g.items() if k not in ("__url__", "__ordinal__")}
    assert g == w, (g["__key__"], w["__key__"])

# the same options as `shardkit cat` give the same keys
opts = dict(shuffle_shards=True, shuffle_buffer=40, seed=5, rank=1, world_size=2, worker=0,
            num_workers=1)
keys = [s["__key__"] for s in shardkit.Reader(T + "/s", **opts)]
assert keys == open(T + "/cat.keys").read().split(), "keys differ from shardkit cat --keys"

# save / restore mid-epoch
for stop in (0, 1, 17, 60, len(keys)):
    r = shardkit.Reader(T + "/s", **opts)
    it = iter(r)
    first = [next(it)["__key__"] for _ in range(stop)]
    state = r.state()
    r.close()
    r2 = shardkit.Reader(T + "/s", **opts)
    r2.restore(state)
    rest = [s["__key__"] for s in r2]
    assert first + rest == keys, "restore after %d samples differs" % stop

# errors come back as ShardkitError with the library's message
try:
    shardkit.Reader(T + "/nope.tar", rank=0, world_size=1, worker=0, num_workers=1)
    list(shardkit.Reader(T + "/nope.tar", rank=0, world_size=1, worker=0, num_workers=1))
    raise SystemExit("no error for a missing shard")
except shardkit.ShardkitError as e:
    assert "nope.tar: cannot open" in str(e), str(e)
    assert isinstance(e, shardkit.NotFoundError) and e.code == 8, (type(e), e.code)
# a state from another split is a MismatchError
r = shardkit.Reader(T + "/s", **opts)
st = r.state()
r.close()
try:
    shardkit.Reader(T + "/s", **dict(opts, rank=0)).restore(st)
    raise SystemExit("a state of another split was accepted")
except shardkit.MismatchError as e:
    assert e.code == 9, e.code
assert shardkit.state_slot(st) == 1 and shardkit.state_info(st)["slots"] == 2
# an option its C field cannot hold is refused, not wrapped round (a
# world_size of 2**32 + 1 would have been 1: every rank reading everything)
for bad in (dict(world_size=2**32 + 1), dict(rank=2**31), dict(shuffle_buffer=-1),
            dict(seed=2**64), dict(cache_size=-5)):
    try:
        shardkit.Reader(T + "/s", **dict(opts, **bad))
        raise SystemExit("accepted %r" % bad)
    except shardkit.UsageError as e:
        name = list(bad)[0]
        assert "%s=%d is out of range" % (name, bad[name]) in str(e), str(e)
print("ok")
PY
