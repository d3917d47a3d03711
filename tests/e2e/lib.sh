# tests/e2e/lib.sh - small shared library for the end-to-end scripts.
#
# Source it first thing:   . "$(dirname "$0")/lib.sh"
#
# Conventions of tests/run: exit 0 = pass, 77 = skip (the reason is the last
# line of output), anything else = fail.  The runner exports SK_BIN (the
# shardkit binary, absolute), SK_ROOT (repo root) and SK_TOOLS (build tools
# dir); when a script is run by hand they default to the build/ tree.
#
# Helpers:
#   die MSG...            fail the test with MSG (exit 1)
#   skip REASON...        skip the test (prints REASON last, exit 77)
#   need CMD...           skip unless every CMD is on PATH
#   tmpdir [VAR]          make a temporary directory, store its path in VAR
#                         (default T), removed at exit (even if chmod 000)
#   at_exit CMD           run CMD (a string, eval'd) at exit, before removal
#   run CMD...            run CMD with stdout in $OUT and stderr in $ERR
#                         (files), exit status in $RC; never fails itself
#   expect_ok CMD...      run, and die unless it exits 0
#   expect_fail CODE SUBSTR CMD...
#                         run, and die unless it exits with CODE and its
#                         stderr contains SUBSTR (a fixed string; "" = any)
#   assert_contains FILE SUBSTR [WHAT]   fixed-string search, dies if absent
#   assert_not_contains FILE SUBSTR [WHAT]
#   assert_eq GOT WANT WHAT
#   step MSG...           prints a progress line (shows in the failure log)
#
# Shard helpers (any tool that writes indexed shards):
#   idx_size IDX          the shard size recorded in an index sidecar
#   check_shards DIR      every DIR/*.tar is complete: `tar tf` reads it, its
#                         .idx exists and records exactly its size, and (when
#                         DIR/manifest.json exists) the manifest's bytes agree;
#                         with python3, every index record matches its tar
#                         member (offsets, sizes, keys, CRC32C of small ones);
#                         and no temporary .*.tmp file is left in DIR
#   assert_no_tmp DIR     no .*.tmp left in DIR
set -u

# Executed rather than sourced (e.g. by a runner globbing *.sh): not a test.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    echo "lib.sh is a library for the e2e tests, not a test"
    exit 77
fi

SK_ROOT=${SK_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SK_BIN=${SK_BIN:-$SK_ROOT/build/shardkit}
SK_TOOLS=${SK_TOOLS:-$SK_ROOT/build/tools}
export SK_ROOT SK_BIN SK_TOOLS

_sk_exit_cmds=()
_sk_tmpdirs=()

_sk_cleanup()
{
    local rc=$? c d
    for c in "${_sk_exit_cmds[@]+"${_sk_exit_cmds[@]}"}"; do eval "$c" >/dev/null 2>&1 || :; done
    for d in "${_sk_tmpdirs[@]+"${_sk_tmpdirs[@]}"}"; do
        [ -d "$d" ] || continue
        chmod -R u+rwx "$d" 2>/dev/null || :
        rm -rf "$d" 2>/dev/null || :
    done
    exit "$rc"
}
trap _sk_cleanup EXIT
trap 'exit 130' INT TERM

die()
{
    echo "FAIL: $*" >&2
    if [ -n "${OUT:-}" ] && [ -s "$OUT" ]; then echo "--- last stdout:" >&2; tail -20 "$OUT" >&2; fi
    if [ -n "${ERR:-}" ] && [ -s "$ERR" ]; then echo "--- last stderr:" >&2; tail -20 "$ERR" >&2; fi
    exit 1
}

skip()
{
    echo "$*"
    exit 77
}

step()
{
    # the seconds since the script began: where a slow script spends its time
    echo "== $* (at ${SECONDS}s)"
}

need()
{
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "needs $c, which is not installed"
    done
}

at_exit()
{
    _sk_exit_cmds+=("$1")
}

tmpdir()
{
    local var=${1:-T} d
    d=$(mktemp -d "${TMPDIR:-/tmp}/sk-e2e.XXXXXX") || die "mktemp failed"
    _sk_tmpdirs+=("$d")
    printf -v "$var" '%s' "$d"
    # run's capture files live in the first temporary directory
    if [ -z "${_sk_cap:-}" ]; then
        _sk_cap=$d/.capture
        mkdir -p "$_sk_cap"
        OUT=$_sk_cap/stdout ERR=$_sk_cap/stderr
    fi
}

run()
{
    if [ -z "${_sk_cap:-}" ]; then local _t; tmpdir _t; fi
    "$@" >"$OUT" 2>"$ERR" && RC=0 || RC=$?
    return 0
}

expect_ok()
{
    run "$@"
    [ "$RC" -eq 0 ] || die "expected exit 0, got $RC: $*"
}

expect_fail()
{
    local code=$1 sub=$2
    shift 2
    run "$@"
    [ "$RC" -eq "$code" ] || die "expected exit $code, got $RC: $*"
    if [ -n "$sub" ]; then
        grep -qF -- "$sub" "$ERR" || die "stderr lacks '$sub': $*"
    fi
}

assert_contains()
{
    grep -qF -- "$2" "$1" || die "${3:-$1} lacks '$2'"
}

assert_not_contains()
{
    ! grep -qF -- "$2" "$1" || die "${3:-$1} contains '$2'"
}

assert_eq()
{
    [ "$1" = "$2" ] || die "${3:-value}: got '$1', want '$2'"
}

idx_size()
{
    # little-endian u64 at offset 16 of the index header (docs/format.md)
    od -An -t u8 -j 16 -N 8 "$1" | tr -d ' '
}

# empty_tree DIR NDIRS: NDIRS directories DIR/d0000... holding 100 empty
# files f000.bin... each: the trees the bounded-memory tests compare.
empty_tree()
{
    python3 - "$1" "$2" <<'PY'
import os, sys
for d in range(int(sys.argv[2])):
    p = f"{sys.argv[1]}/d{d:04d}"
    os.makedirs(p)
    for f in range(100):
        open(f"{p}/f{f:03d}.bin", "w").close()
PY
}

# rss_grew_within KIB SMALL BIG WHAT: peak RSS BIG (KiB) must stay under
# SMALL + KIB.  Not checked under AddressSanitizer: its freed memory sits
# in a quarantine, so RSS says nothing there.
rss_grew_within()
{
    nm "$SK_BIN" 2>/dev/null | grep -q __asan_init && return 0
    [ $(($3 - $2)) -lt "$1" ] || die "$4 took $(($3 - $2)) KiB more (small $2 KiB, big $3 KiB)"
}

assert_no_tmp()
{
    local left
    left=$(find "$1" -name '.*.tmp' 2>/dev/null)
    [ -z "$left" ] || die "temporary file(s) left behind: $left"
}

check_shards()
{
    local dir=$1 t size rec n=0
    for t in "$dir"/*.tar; do
        [ -e "$t" ] || continue
        n=$((n + 1))
        tar tf "$t" >/dev/null 2>&1 || die "$t: tar cannot list it (incomplete shard under a final name)"
        [ -f "$t.idx" ] || die "$t: no index beside it"
        size=$(stat -c %s "$t")
        rec=$(idx_size "$t.idx")
        [ "$size" = "$rec" ] || die "$t: $size bytes but its index records $rec"
        [ $((size % 512)) -eq 0 ] || die "$t: $size bytes, not whole tar blocks"
        if command -v python3 >/dev/null; then
            python3 - "$t" <<'PY' || die "$t: its index disagrees with the tar members"
import struct, sys, tarfile
shard = sys.argv[1]
ix = open(shard + ".idx", "rb").read()
assert ix[:8] == b"SKIDX\0\r\n", "bad magic"
S, M = struct.unpack_from("<QQ", ix, 32)
soff, moff, _, stroff = struct.unpack_from("<QQQQ", ix, 56)
T = [0] * 256
for i in range(256):
    c = i
    for _ in range(8):
        c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
    T[i] = c
def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = T[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF
with tarfile.open(shard, encoding="utf-8", errors="surrogateescape") as t:
    members = t.getmembers()
    assert len(members) == M, "index has %d members, tar %d" % (M, len(members))
    mi = 0
    for s in range(S):
        off, span, _, _, koff, klen, first, cnt = struct.unpack_from("<QQQQIIII", ix, soff + 48 * s)
        key = ix[stroff + koff: stroff + koff + klen]
        assert first == mi and cnt > 0, "sample %d: members %d+%d" % (s, first, cnt)
        assert members[mi].offset == off, "sample %d offset %d, tar %d" % (s, off, members[mi].offset)
        for k in range(cnt):
            m = members[mi + k]
            doff, size, crc, eoff, elen, hl = struct.unpack_from("<QQIIII", ix, moff + 32 * (mi + k))
            name = m.name.encode("utf-8", "surrogateescape")
            ext = ix[stroff + eoff: stroff + eoff + elen]
            assert name == key + b"." + ext or name.lower() == (key + b"." + ext).lower(), (name, key, ext)
            assert doff == m.offset_data and size == m.size, (name, doff, size, m.offset_data, m.size)
            assert hl == m.offset_data - m.offset, (name, hl)
            if size <= 65536:
                assert crc == crc32c(t.extractfile(m).read()), "%r: CRC32C differs" % name
        mi += cnt
    assert mi == M
PY
        fi
    done
    if [ -f "$dir/manifest.json" ]; then
        python3 - "$dir" <<'PY' || die "$dir/manifest.json disagrees with the shards"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.json")))
for s in m["shards"]:
    p = os.path.join(d, s["url"])
    if os.path.getsize(p) != s["bytes"]:
        sys.exit("%s: %d bytes, manifest says %d" % (p, os.path.getsize(p), s["bytes"]))
PY
    fi
    assert_no_tmp "$dir"
    SHARDS=$n
}

# need_python_lib: LIB is $SK_BIN's libshardkit.so, for the Python package;
# skips without it, or when it is a sanitizer build (an uninstrumented
# python cannot dlopen() it)
need_python_lib()
{
    LIB=$(dirname "$SK_BIN")/libshardkit.so
    [ -f "$LIB" ] || skip "no $LIB"
    if nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then skip "libshardkit.so is an AddressSanitizer build"; fi
}

# pylib ARGS...: python3 for scripts that load $SK_BIN's libshardkit.so with
# ctypes.  Under make check-asan the library wants the ASan runtime first in
# the process, so it is preloaded (and Python's own allocations are not
# reported as leaks).
pylib()
{
    if nm -D "$(dirname "$SK_BIN")/libshardkit.so" 2>/dev/null | grep -q __asan_init; then
        LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" python3 "$@"
    else
        python3 "$@"
    fi
}
