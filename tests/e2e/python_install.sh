#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# python_install.sh - the Python package installs offline and is imported
# from outside the source tree: `pip install --no-build-isolation ./python`
# into a fresh venv (--system-site-packages: setuptools and wheel come from
# the system, nothing from an index) builds libshardkit from the tree and
# bundles it, so the package reads a dataset with no variable set; and
# `make install`, whose copy finds the installed libshardkit without
# $SHARDKIT_LIB.  Both carry the compiled lookups (shardkit._ext), which
# give what the ctypes path gives; a package whose extension does not
# compile installs and reads through ctypes.  Each reads a dataset
# and raises shardkit.Error subclasses; the old samples/python path still
# imports the package.
. "$(dirname "$0")/lib.sh"
tmpdir
need_python_lib
# an interpreter that can build the package offline (scripts/deps check
# installs Debian's python3-venv, python3-setuptools, python3-wheel)
PY=
for p in python3 /usr/bin/python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    "$p" -c 'import venv, ensurepip, setuptools, wheel' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip "no python3 with venv, ensurepip, setuptools and wheel (scripts/deps check installs them)"
"$SK_TOOLS/mkcorpus" "$T/c" --samples 40 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/s/t-%03d.tar" --max-count 15
"$SK_BIN" cat --keys "$T/s" >"$T/keys"

# the check every installed copy runs, from $T (not the source tree)
cat >"$T/use.py" <<'PY'
import os, sys
import shardkit
want_prefix, T = sys.argv[1], sys.argv[2]
f = os.path.realpath(shardkit.__file__)
assert f.startswith(os.path.realpath(want_prefix)), "imported %s, not from %s" % (f, want_prefix)
keys = [s["__key__"] for s in shardkit.Reader(T + "/s", rank=0, world_size=1, worker=0, num_workers=1)]
assert keys == open(T + "/keys").read().split(), "keys differ from shardkit cat"
try:
    list(shardkit.Reader(T + "/nope.tar", rank=0, world_size=1, worker=0, num_workers=1))
    raise SystemExit("no error for a missing shard")
except shardkit.NotFoundError as e:
    assert isinstance(e, shardkit.Error) and e.code == 8 and "nope.tar: cannot open" in str(e), (e.code, str(e))
print(shardkit.library_path())
PY

step "pip install into a fresh venv, offline ($PY): it builds and bundles libshardkit"
# a copy of the source tree without its builds: pip builds python/ in place
# and setup.py compiles the library from python/.. with the Makefile
mkdir -p "$T/src"
tar -C "$SK_ROOT" --exclude='./build*' --exclude='./.git' --exclude='./python/build' \
    --exclude='*.egg-info' --exclude='./demo-out' -cf - . | tar -C "$T/src" -xf - \
    || die "copying the source tree failed"
"$PY" -m venv --system-site-packages "$T/venv" >"$T/venv.log" 2>&1 || die "venv failed: $(tail -3 "$T/venv.log")"
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 nice "$T/venv/bin/pip" install -q --no-build-isolation \
    "$T/src/python" >"$T/pip.log" 2>&1 || die "pip install failed: $(tail -5 "$T/pip.log")"
VSITE=$(echo "$T"/venv/lib/python3*/site-packages)
[ -f "$VSITE/shardkit/libshardkit.so" ] || die "the venv's package has no libshardkit.so"
# no variable set, no library on any path it searches but its own
(cd "$T" && env -u SHARDKIT_LIB -u LD_LIBRARY_PATH "$T/venv/bin/python" use.py "$T/venv" "$T") >"$T/out" 2>&1 \
    || die "the venv's package failed: $(tail -5 "$T/out")"
assert_eq "$(tail -1 "$T/out")" "$VSITE/shardkit/libshardkit.so" "library the venv's package loaded"
# every module came along; shardkit.torch where the system has torch
(cd "$T" && SHARDKIT_LIB=$LIB "$T/venv/bin/python" -c '
import importlib.util, shardkit, shardkit.writer, shardkit.dataset
assert shardkit.ShardWriter and shardkit.Dataset
if importlib.util.find_spec("torch"):
    import shardkit.torch
    assert shardkit.torch.IterableDataset and shardkit.torch.MapDataset
') || die "the venv's package lacks a module"
# the compiled lookups were built into the package and serve Dataset,
# giving what the ctypes path (SHARDKIT_EXT=0) gives
cat >"$T/ext.py" <<'PY'
import json, sys
import shardkit, shardkit.dataset as d
ds = shardkit.Dataset(sys.argv[1] + "/s")
out = [d.BACKEND, ds.backend, ds[3], ds[-1], ds.get(ds[7]["__key__"]), ds.__getitems__([1, -2, 5])]
print(repr(out))
PY
(cd "$T" && env -u SHARDKIT_LIB "$T/venv/bin/python" ext.py "$T") >"$T/ext.out" 2>&1 \
    || die "the venv's Dataset failed: $(tail -3 "$T/ext.out")"
ls "$VSITE"/shardkit/_ext.*so >/dev/null 2>&1 || die "pip did not build shardkit._ext: $(grep -i _ext "$T/pip.log" | tail -3)"
grep -q "^\['ext', 'ext', " "$T/ext.out" || die "the venv's Dataset does not use shardkit._ext: $(head -c 300 "$T/ext.out")"
(cd "$T" && env -u SHARDKIT_LIB SHARDKIT_EXT=0 "$T/venv/bin/python" ext.py "$T") >"$T/ctypes.out" 2>&1 \
    || die "the venv's Dataset with SHARDKIT_EXT=0 failed: $(tail -3 "$T/ctypes.out")"
grep -q "^\['ctypes', 'ctypes', " "$T/ctypes.out" || die "SHARDKIT_EXT=0 did not give the ctypes path"
assert_eq "$(sed 's/^..ext., .ext.//' "$T/ext.out")" "$(sed 's/^..ctypes., .ctypes.//' "$T/ctypes.out")" \
    "samples of the compiled path against ctypes"

step "an extension that does not compile: pip installs the rest, Dataset uses ctypes"
# a compiler that fails on _ext.c alone (the package without its library,
# SHARDKIT_BUNDLE=0, so the library is not built again), on a fresh copy of
# python/ (the first install left its build/ in place, _ext.so included)
mkdir -p "$T/bin" "$T/py2"
tar -C "$T/src/python" --exclude='./build' --exclude='*.egg-info' -cf - . | tar -C "$T/py2" -xf - \
    || die "copying python/ failed"
printf '#!/bin/sh\ncase "$*" in *_ext.c*) echo "cc: refusing _ext.c" >&2; exit 1;; esac\nexec cc "$@"\n' >"$T/bin/cc"
chmod +x "$T/bin/cc"
"$PY" -m venv --system-site-packages "$T/venv2" >"$T/venv.log" 2>&1 || die "venv failed"
CC=$T/bin/cc SHARDKIT_SRC=$T/src SHARDKIT_BUNDLE=0 PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 nice "$T/venv2/bin/pip" install \
    -v --no-build-isolation "$T/py2" >"$T/pip2.log" 2>&1 \
    || die "pip install failed when the extension does not compile: $(tail -5 "$T/pip2.log")"
grep -q "refusing _ext.c" "$T/pip2.log" || die "the failing compiler was not asked for _ext.c: $(tail -5 "$T/pip2.log")"
V2=$(echo "$T"/venv2/lib/python3*/site-packages)
! ls "$V2"/shardkit/_ext.*so >/dev/null 2>&1 || die "an extension was installed though it did not compile"
# (a copy of the library alone: beside the build's is the extension make built)
mkdir -p "$T/lib2" && cp "$LIB" "$T/lib2/libshardkit.so"
(cd "$T" && SHARDKIT_LIB=$T/lib2/libshardkit.so "$T/venv2/bin/python" ext.py "$T") >"$T/ext2.out" 2>&1 \
    || die "the package without its extension failed: $(tail -3 "$T/ext2.out")"
assert_eq "$(cat "$T/ext2.out")" "$(cat "$T/ctypes.out")" "samples of the package without its extension"

# without $SHARDKIT_LIB and with no library anywhere it looks: a LibraryError
(cd "$T" && env -u SHARDKIT_LIB LD_LIBRARY_PATH= "$T/venv/bin/python" -c '
import shardkit
try:
    shardkit.load_library("/nonexistent/libshardkit.so")
    raise SystemExit("no error")
except shardkit.LibraryError as e:
    assert isinstance(e, ImportError) and "/nonexistent/libshardkit.so" in str(e), str(e)
') || die "a missing library is not a LibraryError"

step "make install copies the package; it finds PREFIX/lib by itself"
D=$T/dest P=/opt/sk
make -s -C "$SK_ROOT" install BUILD="${SK_BUILD:-build}" PREFIX=$P DESTDIR="$D" PYTHON="$PY" >"$T/log" 2>&1 \
    || die "make install failed: $(tail -5 "$T/log")"
SITE=$(echo "$D$P"/lib/python3*/site-packages)
[ -f "$SITE/shardkit/__init__.py" ] && [ -f "$SITE/shardkit/reader.py" ] || die "package not installed under $D$P/lib"
grep -qx "LIBDIR = \"$P/lib\"" "$SITE/shardkit/_install.py" || die "_install.py does not name $P/lib"
(cd "$T" && env -u SHARDKIT_LIB PYTHONPATH="$SITE" "$PY" use.py "$SITE" "$T") >"$T/out" 2>&1 \
    || die "the installed package failed: $(tail -5 "$T/out")"
assert_eq "$(tail -1 "$T/out")" "$D$P/lib/libshardkit.so.0" "library the installed package loaded"
# with its compiled lookups when make built them for this python
if ls "$(dirname "$LIB")"/python/_ext"$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')" >/dev/null 2>&1; then
    (cd "$T" && env -u SHARDKIT_LIB PYTHONPATH="$SITE" "$PY" ext.py "$T") >"$T/ext3.out" 2>&1 \
        || die "the installed Dataset failed: $(tail -3 "$T/ext3.out")"
    grep -q "^\['ext', 'ext', " "$T/ext3.out" || die "make install's package does not use shardkit._ext: $(head -c 300 "$T/ext3.out")"
fi

step "samples/python still imports the package"
(cd "$T" && SHARDKIT_LIB=$LIB PYTHONPATH="$SK_ROOT/samples/python" "$PY" use.py "$SK_ROOT/python" "$T") >"$T/out" 2>&1 \
    || die "samples/python shim failed: $(tail -5 "$T/out")"
echo "python_install: ok"
