#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# reader_order.sh - the reader's global order (tests/tools/order_grid) over
# world sizes 1,2,3,4,8 x workers 0,1,2,4, on a dataset with fewer shards
# than slots (3 shards, up to 32 slots) and one with many (40 shards):
# every slot's samples together are the epoch once, the sequence is the
# same at every grid point, and a job stopped at several points resumes in
# another world size with every sample read exactly once.  Then datasets
# in S3 (moto_server, signature checking on, through a logging proxy): a
# few grid points and a resume into another world size read the same
# sequence as the local copy (the local grid proved the order; S3 proves
# the store hands it out), and the ranged GETs a sample made (coalesced
# neighbours: one GET for several).  Hostile shards and indexes are
# refused by name.  The private cache of a reader killed with SIGKILL is
# swept by the next reader's start; a live reader's is not touched.
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
t=$(mktemp -d)
spid= # a stalled reader of the private cache steps, stopped with the script
trap '[ -z "$spid" ] || kill -9 $spid 2>/dev/null; moto_stop; rm -rf "$t"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
grid() { "$SK_TOOLS/order_grid" "$@" || fail "order_grid $*"; }
seq_of() { sed -n 's/.*sequence=\([0-9a-f]*\).*/\1/p' <<<"$1"; }

"$SK_TOOLS/mkcorpus" "$t/c" --samples 400 >/dev/null
"$SK_BIN" pack "$t/c" -o "$t/few/train-%06d.tar" --max-count 150 >/dev/null 2>&1
"$SK_BIN" pack "$t/c" -o "$t/many/train-%06d.tar" --max-count 10 >/dev/null 2>&1

echo "== fewer shards than slots (3 shards)"
few=$(grid "$t/few/manifest.json")
echo "$few"
echo "== many shards (40), window 3, batch 3"
many=$(grid --window 3 --batch 3 "$t/many/manifest.json")
echo "$many"
echo "== a brace pattern (counts from the indexes) gives the manifest's sequence"
# (the sequence is the reference reader's: one grid point is enough)
brace=$(grid --no-resume --points 2:1 --window 3 --batch 3 "$t/many/train-{000000..000039}.tar")
[ "$(seq_of "$brace")" = "$(seq_of "$many")" ] || fail "pattern and manifest orders differ"

echo "== a shard without its index is refused by name"
mkdir "$t/noidx" && cp "$t/few/train-000001.tar" "$t/noidx/"
out=$("$SK_TOOLS/order_grid" "$t/noidx/train-000001.tar" 2>&1) && fail "read a shard without an index"
grep -q "train-000001.tar" <<<"$out" && grep -q "index" <<<"$out" || fail "unclear refusal: $out"

echo "== hostile shards and indexes: each refused by name, never read past"
cp -r "$t/few" "$t/bad"
gcat() { "$SK_BIN" cat --keys --global-order --shuffle-shards "$@"; }
# a byte of a member's data changed: its CRC32C (from the index) says so
off=$(( $(stat -c %s "$t/bad/train-000001.tar") / 2 ))
printf 'X' | dd of="$t/bad/train-000001.tar" bs=1 seek=$off conv=notrunc status=none
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000001.tar: member .*CRC32C" <<<"$out" || fail "a changed byte was not caught (rc $rc): $out"
# another shard's index: sizes and counts disagree
cp "$t/few/train-000001.tar" "$t/bad/train-000001.tar"
cp "$t/few/train-000002.tar.idx" "$t/bad/train-000000.tar.idx"
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000000.tar" <<<"$out" || fail "a foreign index was used (rc $rc): $out"
cp "$t/few/train-000000.tar.idx" "$t/bad/"
# a shard cut short: the manifest's size (and the index's) disagree
head -c 100000 "$t/few/train-000002.tar" >"$t/bad/train-000002.tar"
rc=0; out=$(gcat "$t/bad/manifest.json" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000002.tar" <<<"$out" || fail "a truncated shard was read (rc $rc): $out"
rc=0; out=$(gcat "$t/bad/train-{000000..000002}.tar" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000002.tar" <<<"$out" || fail "a truncated shard was read (rc $rc): $out"
# a .tar.zst without a seek table (one zstd stream) or a stream: the global
# order says why it cannot and to read it without
if command -v zstd >/dev/null; then
    mkdir "$t/z" && zstd -q "$t/few/train-000000.tar" -o "$t/z/z.tar.zst"
    "$SK_BIN" index "$t/z/z.tar.zst" >/dev/null 2>&1 || fail "index of a .tar.zst"
    rc=0; out=$(gcat "$t/z/z.tar.zst" 2>&1 >/dev/null) || rc=$?
    [ $rc != 0 ] && grep -q "z.tar.zst: .*seek table.*global_order" <<<"$out" ||
        fail "a .tar.zst without a seek table in the global order (rc $rc): $out"
fi
rc=0; out=$(gcat - <"$t/few/train-000000.tar" 2>&1 >/dev/null) || rc=$?
[ $rc != 0 ] && grep -q "stream" <<<"$out" || fail "stdin in the global order (rc $rc): $out"

echo "== seekable .tar.zst: the same samples, bytes and order as the plain shards"
"$SK_BIN" pack "$t/c" -o "$t/fewz/train-%06d.tar.zst" --max-count 150 --compress zstd >/dev/null 2>&1
gcat_all() { "$SK_BIN" cat --global-order --shuffle-shards --shuffle-window 2 --seed 3 "$@"; }
cmp <(gcat_all --rank 1 --world-size 3 "$t/few/manifest.json") \
    <(gcat_all --rank 1 --world-size 3 "$t/fewz/manifest.json") || fail ".tar.zst and .tar differ"
# frames cut every 3000 bytes, across samples (another writer's seekable zstd)
mkdir "$t/zs" && cp "$t/few/train-000001.tar" "$t/few/train-000001.tar.idx" "$t/zs/"
"$SK_TOOLS/zstd_seekable" 3000 "$t/zs/train-000001.tar" "$t/zs/train-000001.tar.zst"
"$SK_BIN" index "$t/zs/train-000001.tar.zst" >/dev/null || fail "index of a seekable .tar.zst"
cmp <(gcat_all "$t/zs/train-000001.tar") <(gcat_all "$t/zs/train-000001.tar.zst") ||
    fail "a .tar.zst whose frames straddle samples differs"
# a byte of its compressed data changed: zstd or the CRC32C says so, by name
off=$(( $(stat -c %s "$t/fewz/train-000001.tar.zst") / 2 ))
printf 'X' | dd of="$t/fewz/train-000001.tar.zst" bs=1 seek=$off conv=notrunc status=none
rc=0; out=$(gcat_all "$t/fewz/manifest.json" 2>&1 >/dev/null) || rc=$?
[ $rc = 1 ] && grep -q "train-000001.tar.zst: .*\(CRC32C\|zstd\)" <<<"$out" ||
    fail "a changed byte of a .tar.zst was not caught (rc $rc): $out"

echo "== local shards: a batch's reads in one io_uring submission; pread where it is refused"
# every path gives the same samples and bytes: the ring, SHARDKIT_IO_URING=0,
# a kernel that refuses to make a ring (io_uring_setup fails: seccomp, the
# io_uring_disabled sysctl) and one that makes it but refuses its use
# (io_uring_enter fails), the last two injected by strace
want=$(gcat_all "$t/many/manifest.json" | sha256sum)
[ "$(SHARDKIT_IO_URING=0 gcat_all "$t/many/manifest.json" | sha256sum)" = "$want" ] ||
    fail "SHARDKIT_IO_URING=0 reads other bytes"
# LeakSanitizer cannot run under ptrace: the asan build's leak check is off under strace
nolsan=ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
if command -v strace >/dev/null; then
    for inj in io_uring_setup io_uring_enter; do
        got=$(env "$nolsan" strace -f -qq -o /dev/null -e trace=$inj -e inject=$inj:error=EPERM \
            "$SK_BIN" cat --global-order --shuffle-shards --shuffle-window 2 --seed 3 \
            "$t/many/manifest.json" | sha256sum)
        [ "$got" = "$want" ] || fail "with $inj refused, other bytes"
    done
    # 400 samples of 40 shards, window 3: one pread each without the ring
    env "$nolsan" strace -f -qq -c -U name,calls -e trace=pread64,io_uring_setup,io_uring_enter -o "$t/sc" \
        "$SK_BIN" cat --keys --global-order --shuffle-shards --shuffle-window 3 --seed 3 \
        "$t/many/manifest.json" >/dev/null
    preads=$(awk '$1 == "pread64" {print $2}' "$t/sc"); enters=$(awk '$1 == "io_uring_enter" {print $2}' "$t/sc")
    echo "reads of 400 samples: ${preads:-0} preads, ${enters:-0} io_uring_enter"
    # does this kernel let a process make a ring? (io_uring_setup is 425)
    if python3 -c 'import ctypes, sys; sys.exit(ctypes.CDLL(None).syscall(425, 1, ctypes.create_string_buffer(120)) < 0)'; then
        [ "${preads:-0}" -lt 40 ] && [ "${enters:-0}" -gt 0 ] && [ "${enters:-0}" -lt 100 ] ||
            fail "io_uring: ${preads:-0} preads and ${enters:-0} submissions for 400 samples"
    else
        echo "(this kernel makes no io_uring: the pread path only)"
    fi
fi

echo "== mixing: two datasets at 0.3 / 0.7 over 100,000 samples, three grid points"
# and within the epoch: at every point each stream is within 150 samples
# (the largest shard) of its share (measured: 56; 1,102 when the shards of
# both were shuffled as one list)
"$SK_TOOLS/mkcorpus" "$t/c2" --samples 600 --seed 3 >/dev/null
"$SK_BIN" pack "$t/c2" -o "$t/b/b-%06d.tar" --max-count 20 >/dev/null 2>&1
grid --no-resume --points 1:0,3:2,8:4 --proportion 0.3,0.7 --samples 100000 --drift 150 \
    "$t/few/manifest.json" "$t/b/manifest.json"
echo "== mixing: every grid point, three resumes into other world sizes (5,000 samples)"
grid --resume 8:4:6:2@0.13,2:0:8:4@0.5,3:1:1:2@0.77 --proportion 0.3,0.7 --samples 5000 --window 4 \
    "$t/few/manifest.json" "$t/b/manifest.json"

skip_unless_moto
s3_serve auth bkt
proxy_start "$MOTO_URL" "$t/req.log"
# small datasets and a few grid points: each reader fetches the indexes
# it reads through, and moto answers a few dozen requests a second on a
# loaded machine (the whole grid made this script take four minutes)
"$SK_TOOLS/mkcorpus" "$t/c3" --samples 240 --seed 5 >/dev/null
"$SK_BIN" pack "$t/c3" -o "$t/s3/few/train-%06d.tar" --max-count 100 >/dev/null 2>&1
"$SK_BIN" pack "$t/c3" -o "$t/s3/many/train-%06d.tar" --max-count 20 >/dev/null 2>&1
"$SK_BIN" pack "$t/c3" -o "$t/s3/z/train-%06d.tar.zst" --max-count 100 --compress zstd >/dev/null 2>&1
aws s3 cp --recursive --quiet "$t/s3" s3://bkt/ # one aws run: each costs seconds on a loaded machine
quick=(--points 2:2,3:0 --resume 4:2:3:0@0.5)
echo "== S3: fewer shards than slots (3 shards), grid points 2x2 and 3x0, resume 4x2 -> 3x0"
lfew=$(grid "${quick[@]}" --read-ahead 4000000 "$t/s3/few/manifest.json")
s3few=$(grid "${quick[@]}" --read-ahead 4000000 --endpoint "$PROXY_URL" s3://bkt/few/manifest.json)
echo "$s3few"
[ "$(seq_of "$s3few")" = "$(seq_of "$lfew")" ] || fail "S3 and local orders differ (few)"
echo "== S3: more shards (12), window 3, batch 3, grid point 3x1"
lmany=$(grid --no-resume --points 3:1 --read-ahead 4000000 --window 3 --batch 3 "$t/s3/many/manifest.json")
s3many=$(grid --no-resume --points 3:1 --read-ahead 4000000 --endpoint "$PROXY_URL" --window 3 --batch 3 \
    s3://bkt/many/manifest.json)
echo "$s3many"
[ "$(seq_of "$s3many")" = "$(seq_of "$lmany")" ] || fail "S3 and local orders differ (many)"
echo "== S3: a seekable .tar.zst reads the same as the local copy"
cmp <(gcat_all "$t/s3/z/manifest.json") <(gcat_all --endpoint-url "$PROXY_URL" s3://bkt/z/manifest.json) ||
    fail "S3 and local .tar.zst samples differ"
cp "$t/req.log" "$t/req.log.all"
echo "== S3: the global order with --cache-dir: a block a GET, then none"
# without the cache a window's samples lie too far apart to join into one
# range (0.89 GETs a sample over 20,000 samples from a RADOS gateway)
: >"$t/req.log"
cmp <(gcat_all "$t/s3/many/manifest.json") \
    <(gcat_all --cache-dir "$t/cache" --endpoint-url "$PROXY_URL" s3://bkt/many/manifest.json) ||
    fail "S3 through the cache and local samples differ"
cgets=$(grep -Ec '^GET /bkt/many/train-[0-9]+\.tar 20' "$t/req.log" || true)
[ "$cgets" -ge 1 ] && [ "$cgets" -le 12 ] || fail "$cgets GETs of 12 small shards through the cache"
: >"$t/req.log"
cmp <(gcat_all "$t/s3/many/manifest.json") \
    <(gcat_all --cache-dir "$t/cache" --endpoint-url "$PROXY_URL" s3://bkt/many/manifest.json) ||
    fail "S3 from the cache and local samples differ"
! grep -Eq '^GET /bkt/many/train-[0-9]+\.tar ' "$t/req.log" || fail "the cached blocks were fetched again"
echo "== S3: no cache named: the reader's own private cache in \$TMPDIR, a block a GET, gone at close"
# (before it: a ranged GET for nearly every sample, 12 minutes for 20,000
# from a RADOS gateway)
mkdir "$t/tmpd"
cmp <(gcat_all "$t/s3/many/manifest.json") \
    <(TMPDIR="$t/tmpd" gcat_all --endpoint-url "$PROXY_URL" s3://bkt/many/manifest.json) ||
    fail "S3 through the private cache and local samples differ"
echo "== S3: a private cache a SIGKILLed reader left goes at the next start; a live one stays"
# a reader whose output nobody reads (4 MB into a pipe of 64 KiB) stops
# mid-epoch with blocks in its private cache: killed (-9: no cleanup runs),
# or live while other readers start
stalled() { # FIFO: starts the reader writing into it; its pid in $spid
    mkfifo "$1"
    # (the binary itself, not a function: $! is then its pid, which kill -9 kills)
    TMPDIR="$t/tmpd" "$SK_BIN" cat --global-order --shuffle-shards --shuffle-window 2 --seed 3 \
        --endpoint-url "$PROXY_URL" s3://bkt/many/manifest.json >"$1" &
    spid=$!
}
cache_of() { # the private cache of $1 (not $2) once it holds a block
    local d
    for _ in $(seq 200); do
        for d in "$t"/tmpd/shardkit-cache-*; do
            [ "$d" != "${2:-}" ] && [ "$d" != "$t/tmpd/shardkit-cache-old123" ] &&
                compgen -G "$d/*.skc" >/dev/null && { echo "$d"; return; }
        done
        kill -0 "$1" 2>/dev/null || break
        sleep 0.05
    done
    fail "no private cache with a block appeared"
}
# an older shardkit's cache (no marker): never the sweep's
mkdir "$t/tmpd/shardkit-cache-old123" && echo old >"$t/tmpd/shardkit-cache-old123/$(printf '%040d' 0).skc"
stalled "$t/fa"
exec 5<"$t/fa" # open, never read
adir=$(cache_of $spid)
kill -9 $spid && { wait $spid 2>/dev/null || true; }
exec 5<&-
compgen -G "$adir/*.skc" >/dev/null || fail "the killed reader left no cache: the test killed nothing"
stalled "$t/fb"
exec 6<"$t/fb"
bpid=$spid
bdir=$(cache_of $bpid "$adir")
[ ! -e "$adir" ] || fail "the SIGKILLed reader's cache was not swept by the next start: $(ls -A "$adir")"
[ -s "$t/tmpd/shardkit-cache-old123/$(printf '%040d' 0).skc" ] || fail "a cache without the marker was swept"
ls "$bdir" >"$t/b.before"
TMPDIR="$t/tmpd" "$SK_BIN" cat --keys --global-order s3://bkt/few/manifest.json --endpoint-url "$PROXY_URL" \
    >/dev/null || fail "a reader started beside a live one"
ls "$bdir" >"$t/b.after"
[ -z "$(comm -23 "$t/b.before" "$t/b.after")" ] ||
    fail "a live reader's cache lost files to another's start: $(comm -23 "$t/b.before" "$t/b.after")"
cmp <(gcat_all "$t/s3/many/manifest.json") <(cat <&6) || fail "the live reader's samples differ"
exec 6<&-
wait $bpid || fail "the live reader failed"
spid=
[ ! -e "$bdir" ] || fail "the live reader's cache was left at close"
rm -r "$t/tmpd/shardkit-cache-old123"
# a batch of one sample (no neighbour to join): a GET a sample without a
# cache (480 for the two readers order_grid runs, before), with it at most
# one a shard each
: >"$t/req.log"
TMPDIR="$t/tmpd" grid --no-resume --points 1:0 --read-ahead 1 --endpoint "$PROXY_URL" \
    s3://bkt/many/manifest.json >/dev/null
tgets=$(grep -Ec '^GET /bkt/many/train-[0-9]+\.tar 20' "$t/req.log" || true)
[ "$tgets" -ge 1 ] && [ "$tgets" -le 24 ] || fail "$tgets GETs of 12 small shards (240 samples, two readers) with no cache named"
[ -z "$(ls -A "$t/tmpd")" ] || fail "the private cache was left behind: $(ls -A "$t/tmpd")"
if command -v strace >/dev/null; then
    echo "== S3: a cached block's file is opened once, not once a sample"
    # the same 240 one-sample batches: each read opened its block file
    # again (about 500 opens, before), now kept open by the cache store
    env "$nolsan" strace -f -qq -e trace=openat -o "$t/opens" env TMPDIR="$t/tmpd" "$SK_TOOLS/order_grid" \
        --no-resume --points 1:0 --read-ahead 1 --endpoint "$PROXY_URL" s3://bkt/many/manifest.json \
        >/dev/null || fail "order_grid under strace"
    opens=$(grep -c '[0-9a-f]\{40\}\.skc"' "$t/opens" || true)
    echo "$opens opens of block files"
    [ "$opens" -ge 12 ] && [ "$opens" -le 100 ] ||
        fail "$opens opens of block files for 12 one-block shards, 240 samples, two readers"
fi
echo "== S3: a TMPDIR that cannot hold the private cache: refused by name, no sample"
rc=0; out=$(TMPDIR="$t/no/such" gcat_all --endpoint-url "$PROXY_URL" s3://bkt/many/manifest.json \
    2>&1 >"$t/none.out") || rc=$?
[ $rc != 0 ] && grep -q "$t/no/such: cannot make" <<<"$out" && [ ! -s "$t/none.out" ] ||
    fail "an unusable TMPDIR was not refused (rc $rc): $out"
grep -Eq '^GET /bkt/(few|many)/train-[0-9]+\.tar 206' "$t/req.log.all" || fail "no ranged GET of a shard"
rps=$(sed -n 's/.*reads_per_sample=\([0-9.]*\).*/\1/p' <<<"$s3few")
awk -v r="$rps" 'BEGIN { exit !(r < 1) }' || fail "$rps GETs a sample: reads are not coalesced"
echo "ok"
