#!/usr/bin/env bash
# python_webdataset.sh - the real WebDataset libraries read what
# shardkit.ShardWriter writes: webdataset.WebDataset yields the samples
# written (WebDataset's encodings), in order; wids.ShardListDataset over
# `shardkit index --wids` returns, by index, what shardkit.Dataset returns.
# Skips where webdataset / wids cannot be imported (they are on PyPI only:
# put them on PYTHONPATH to run it).
. "$(dirname "$0")/lib.sh"
tmpdir
need_python_lib
PY=
for p in python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    "$p" -c 'import webdataset' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip "the webdataset package is not importable (PyPI only; put it on PYTHONPATH)"
export SHARDKIT_LIB=$LIB PYTHONPATH=$SK_ROOT/python${PYTHONPATH:+:$PYTHONPATH}

step "webdataset.WebDataset reads ShardWriter's shards"
"$PY" - "$T" <<'PY' || die "webdataset disagrees"
import json, sys
import shardkit, webdataset as wds
T = sys.argv[1]
written = []
with shardkit.ShardWriter(T + "/w/t-%06d.tar", max_count=7) as w:
    for i in range(40):
        s = {"__key__": "d%02d/s%04d" % (i % 3, i), "bin": bytes([i]) * (i * 101),
             "txt": "sample %d \u00e9" % i, "cls": i % 5, "json": {"i": i, "l": [i, "x"]}}
        if i % 4 == 0:
            s["seg.png"] = b"\x89PNG" + bytes(i)
        w.write(s)
        written.append(s)
urls = [T + "/w/t-%06d.tar" % k for k in range(w.stats["shards"])]
got = list(wds.WebDataset(urls, shardshuffle=False))
assert len(got) == len(written), (len(got), len(written))
for g, s in zip(got, written):
    assert g["__key__"] == s["__key__"], (g["__key__"], s["__key__"])
    members = {k: v for k, v in g.items() if not k.startswith("__")}
    want = {k: shardkit.encode_value(k, v) for k, v in s.items() if not k.startswith("__")}
    assert members == want, (s["__key__"], sorted(members), sorted(want))
    assert json.loads(g["json"]) == s["json"] and int(g["cls"]) == s["cls"]
    assert g["txt"].decode() == s["txt"]
print("ok")
PY
"$PY" -c 'import wids' 2>/dev/null || { echo "wids is not importable: its part skipped"; echo "python_webdataset: ok"; exit 0; }
step "wids.ShardListDataset over index --wids: what shardkit.Dataset returns"
expect_ok "$SK_BIN" index "$T"/w/t-*.tar --wids
"$PY" - "$T" <<'PY' || die "wids disagrees"
import sys
import shardkit, wids
T = sys.argv[1]
ds = shardkit.Dataset(T + "/w")
wd = wids.ShardListDataset(T + "/w/wids.json", transformations=[], localname=lambda u: u)
assert len(wd) == len(ds) == 40
for i in range(40):
    a, b = ds[i], wd[i]
    assert a["__key__"] == b["__key__"], (i, a["__key__"], b["__key__"])
    mine = {k: v for k, v in a.items() if not k.startswith("__")}
    theirs = {k[1:]: v.read() for k, v in b.items() if not k.startswith("__")}
    assert mine == theirs, (i, sorted(mine), sorted(theirs))
print("ok")
PY
echo "python_webdataset: ok"
