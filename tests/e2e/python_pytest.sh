#!/usr/bin/env bash
# python_pytest.sh - the Python package's own tests (python/tests, pytest)
# from make check: Debian's /usr/bin/python3 with python3-pytest, numpy,
# PIL and torch, against this build's libshardkit.so.  Skips where pytest
# or numpy/PIL are missing, or the library is a sanitizer build (an
# uninstrumented python cannot dlopen it).
. "$(dirname "$0")/lib.sh"
need_python_lib
PY=
for p in /usr/bin/python3 python3; do
    command -v "$p" >/dev/null 2>&1 || continue
    "$p" -c 'import pytest, numpy, PIL' 2>/dev/null && { PY=$p; break; }
done
[ -n "$PY" ] || skip "no python3 with pytest, numpy and PIL (scripts/deps check installs python3-pytest)"
tmpdir
cd "$SK_ROOT" || die "no $SK_ROOT"
SHARDKIT_LIB=$LIB "$PY" -m pytest -q -p no:cacheprovider --basetemp="$T/pytest" python/tests \
    || die "pytest python/tests failed"
echo "python_pytest: ok"
