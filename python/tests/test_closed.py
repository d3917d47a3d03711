"""After close() (or its `with` block) every public method and property
of every class that holds a library handle raises shardkit.Error (or,
for close-like calls, does nothing); none crashes the interpreter.  The
methods are found by introspection, so a new one is covered at once (and
needs an argument below if it takes one).  Each class runs in a child
interpreter so a SIGSEGV is a failure naming the last call, not the end
of the test run."""
import inspect
import os
import subprocess
import sys

import pytest

import shardkit

#: may be called after close and do nothing (or return what they did)
IDEMPOTENT = {"close", "abort", "finish", "__exit__", "__del__", "__repr__"}
#: an argument for each parameter name a public method takes
ARGS = {"i": 0, "state": bytes(shardkit._lib.ReaderState()),
        "position": bytes(shardkit._lib.ReaderPosition()), "epoch": 1, "key": "d0/s0000", "exts": ["cls"],
        "indices": [0, 1], "sample": {"__key__": "z", "cls": 1}, "handlers": None,
        "names": None, "f": (lambda s: s), "exc": None, "exc_type": None}
#: dunders of the data model that a closed object must refuse too
DUNDERS = {"__len__", "__getitem__", "__getitems__", "__iter__", "__next__", "__contains__",
           "__enter__"}


def public_members(cls):
    """(name, kind) of every public method and property of cls."""
    out = []
    for name, v in inspect.getmembers(cls):
        if name.startswith("_") and name not in DUNDERS and name not in IDEMPOTENT:
            continue
        if isinstance(inspect.getattr_static(cls, name), property):
            out.append((name, "property"))
        elif callable(v) and not inspect.isclass(v):
            if name.startswith("__") and name not in DUNDERS and name not in IDEMPOTENT:
                continue
            out.append((name, "method"))
    return out


CHILD = r'''
import inspect, sys
sys.path.insert(0, sys.argv[1])
import shardkit
sys.path.insert(0, sys.argv[2])
from test_closed import ARGS, IDEMPOTENT, public_members
cls_name, data = sys.argv[3], sys.argv[4]
make = {
    "Reader": lambda: shardkit.Reader(data, rank=0, world_size=1, worker=0, num_workers=1),
    "Dataset": lambda: shardkit.Dataset(data),
    "ShardWriter": lambda: shardkit.ShardWriter(data + "/closed/w-%03d.tar"),
}
cls = getattr(shardkit, cls_name)
members = public_members(cls)
for how in ("close", "with"):
    for name, kind in members:
        obj = make[cls_name]()
        if how == "close":
            obj.close()
        else:
            with obj:
                pass
        print("%s %s after %s" % (cls_name, name, how), flush=True)
        try:
            if kind == "property":
                r = getattr(obj, name)
            else:
                fn = getattr(obj, name)
                params = [p for p in inspect.signature(fn).parameters.values()
                          if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY,
                                                                 p.POSITIONAL_OR_KEYWORD)]
                missing = [p.name for p in params if p.name not in ARGS]
                if missing:
                    raise SystemExit("%s.%s: no test argument for %s (add it to ARGS)" %
                                     (cls_name, name, missing))
                r = fn(*[ARGS[p.name] for p in params])
                if hasattr(r, "__next__") and name != "__enter__":
                    next(r)
        except shardkit.Error as e:
            assert "closed" in str(e) or "abandoned" in str(e), (name, str(e))
            continue
        if name not in IDEMPOTENT:
            raise SystemExit("%s.%s after %s returned %r instead of raising" %
                             (cls_name, name, how, r))
print("ok", len(members))
'''


@pytest.mark.parametrize("cls_name", ["Reader", "Dataset", "ShardWriter"])
def test_every_call_after_close_raises(cls_name, data):
    here = os.path.dirname(os.path.abspath(__file__))
    pkg = os.path.dirname(os.path.dirname(shardkit.__file__))
    p = subprocess.run([sys.executable, "-c", CHILD, pkg, here, cls_name, data],
                       capture_output=True, text=True, timeout=120)
    last = (p.stdout.strip().splitlines() or ["(nothing)"])[-1]
    assert p.returncode == 0, "exit %d at %s: %s" % (p.returncode, last, p.stderr[-2000:])
    assert last.startswith("ok "), last


def test_classes_with_handles_are_all_covered():
    """Every public class of the package that has close() is in the list
    above."""
    closable = sorted(n for n in shardkit.__all__
                      if inspect.isclass(getattr(shardkit, n))
                      and hasattr(getattr(shardkit, n), "close"))
    assert closable == ["Dataset", "Reader", "ShardWriter"], closable
