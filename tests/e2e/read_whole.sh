#!/usr/bin/env bash
# read_whole.sh - a dataset is read whole or the read fails (issue "trust",
# section 3):
#   - a shard shortened at a sample boundary (a valid tar: end blocks
#     appended) is found through the size its manifest (or, without one,
#     its index) promises, before a sample of it is read: cat fails naming
#     it; --skip-errors reports it and goes on (a stream or an S3 object is
#     held to the promised sample count at its end);
#   - several shards back to back in one stream (a FIFO, '-' for stdin,
#     /dev/stdin) are read whole, as GNU tar --ignore-zeros;
#   - .tar.gz and .tar.xz shards are read by cat and the Python binding.
. "$(dirname "$0")/lib.sh"
need python3 gzip xz
tmpdir T
cd "$T" || die cd
"$SK_TOOLS/mkcorpus" c --samples 300 >/dev/null || die mkcorpus
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-count 100
total=300

step "a shard shortened at a sample boundary"
python3 - ds/s-01.tar <<'PY'
import sys, tarfile, io
src = sys.argv[1]
with tarfile.open(src) as t:
    members = [(m, t.extractfile(m).read()) for m in t.getmembers()]
keep = members[: 3 * 60]  # 60 of its 100 samples, then proper end blocks
with tarfile.open(src + ".new", "w", format=tarfile.USTAR_FORMAT) as t:
    for m, data in keep:
        t.addfile(m, io.BytesIO(data))
PY
mv ds/s-01.tar.new ds/s-01.tar
tar tf ds/s-01.tar >/dev/null || die "the shortened shard is not a valid tar"
run "$SK_BIN" cat --keys ds
[ "$RC" = 1 ] || die "cat of a dataset with a shortened shard exited $RC"
assert_contains "$ERR" "ds/s-01.tar: 972800 bytes, its manifest says"
run "$SK_BIN" cat --keys ds/manifest.json
[ "$RC" = 1 ] || die "cat of the manifest exited $RC"
run "$SK_BIN" cat --keys --skip-errors ds
[ "$RC" = 0 ] || die "cat --skip-errors exited $RC"
assert_contains "$ERR" "ds/s-01.tar"
n=$(wc -l <"$OUT")
assert_eq "$n" 200 "samples with --skip-errors (the short shard skipped at open)"
step "without the manifest, its index tells"
rm ds/manifest.json
run "$SK_BIN" cat --keys ds
[ "$RC" = 1 ] || die "cat of a directory with a shortened shard exited $RC"
assert_contains "$ERR" "ds/s-01.tar: 972800 bytes, its index ds/s-01.tar.idx says"
run "$SK_BIN" cat --keys --skip-errors ds
[ "$RC" = 0 ] || die "cat --skip-errors exited $RC"
assert_eq "$(wc -l <"$OUT")" 200 "samples with --skip-errors"

step "shards back to back in one stream"
expect_ok "$SK_BIN" pack c -o whole/s-%02d.tar --max-count 100
cat whole/s-00.tar whole/s-01.tar whole/s-02.tar | "$SK_BIN" cat --keys - >stdin.keys || die "cat - failed"
assert_eq "$(wc -l <stdin.keys)" $total "samples through '-'"
"$SK_BIN" cat --keys /dev/stdin < <(cat whole/s-00.tar whole/s-01.tar whole/s-02.tar) >devstdin.keys ||
    die "cat /dev/stdin failed"
assert_eq "$(wc -l <devstdin.keys)" $total "samples through /dev/stdin"
mkfifo pipe
(cat whole/s-00.tar whole/s-01.tar whole/s-02.tar >pipe &)
"$SK_BIN" cat pipe >fifo.tar || die "cat FIFO failed"
assert_eq "$(tar tf fifo.tar | wc -l)" $((3 * total)) "members through a FIFO"

step ".tar.gz and .tar.xz"
gzip -k whole/s-00.tar && xz -k whole/s-01.tar
expect_ok "$SK_BIN" cat --keys whole/s-00.tar.gz whole/s-01.tar.xz
assert_eq "$(wc -l <"$OUT")" 200 "samples of .tar.gz + .tar.xz"
"$SK_BIN" cat whole/s-00.tar | cmp - <("$SK_BIN" cat whole/s-00.tar.gz) || die ".tar.gz gives other bytes"
LIB=$(dirname "$SK_BIN")/libshardkit.so
if [ -f "$LIB" ] && ! nm -D "$LIB" 2>/dev/null | grep -q __asan_init; then
    SHARDKIT_LIB=$LIB /usr/bin/python3 - "$SK_ROOT" whole/s-00.tar.gz <<'PY' || die "the Python binding cannot read .tar.gz"
import sys
sys.path.insert(0, sys.argv[1] + "/samples/python")
import shardkit
n = sum(1 for _ in shardkit.Reader([sys.argv[2]]))
assert n == 100, n
PY
fi
echo "read whole or not at all"
