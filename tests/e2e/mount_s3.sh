#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# mount_s3: `shardkit mount s3://bucket/prefix/` (moto; SK_S3_SERVER=rgw: the
# RADOS gateway) is the packed tree (diff -r), plain and .tar.zst shards.
# Small files read in order are served from read windows: the whole tree
# costs a few ranged GETs per shard, not one per file.  A 12 MiB member
# read in order is a few ranged GETs (read-ahead), not one per kernel read.
# --cache-dir/--cache-size: the cache never holds more than its bound (and
# so evicts: the dataset is bigger), a remount reads every file from it
# with no GET of a shard or index, and a dataset replaced under the same
# names (new ETags) is not served the old bytes.  A link planted in the
# cache under a block's name is not followed (and is replaced), a file the
# cache did not make is never removed.  A shard object cut short before its
# first read: EIO past the cut only.  A crafted index whose members run
# past the object's end, start beyond it, or overlap: the overlapping ones
# are the object's bytes, the others EIO with the shard and the cause
# logged.  Through the fault proxy (503s, resets, a stalled answer) the
# retries are invisible; when the server stops answering (the proxy frozen
# with SIGSTOP), a read is EIO within the client's bounds, never a hang.
# One S3 server and two proxies for the whole script; the objects are put
# with shardkit upload (the aws cli's start-up costs seconds a call here).
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
. "$SK_ROOT/tests/e2e/lib/mount.sh"
skip_unless_fuse
s3_test_begin diff cmp timeout md5sum sha256sum curl
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 150 --per-dir 50 >/dev/null || die mkcorpus
mkdir -p c/big hr cut
head -c 12582917 /dev/urandom >c/big/00000000.bin
expect_ok "$SK_BIN" pack c -o plain/t-%03d.tar --max-size 512K
expect_ok "$SK_BIN" pack c -o zst/t-%03d.tar.zst --max-size 512K --compress zstd
expect_ok "$SK_BIN" pack c -o re/t-%03d.tar --max-size 512K --mtime 1700000000
pylib "$SK_ROOT/tests/e2e/lib/hostile_ranges.py" "$(dirname "$SK_BIN")/libshardkit.so" hr >hr.ranges ||
    die "could not write the crafted index"
moto_start || die "the S3 test server (${SK_S3_SERVER:-moto}) did not start"
A=$MOTO_URL
# the bucket: one signed PUT (the aws cli takes seconds to start here)
curl -sf --aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3" \
    --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" -X PUT "$A/dset" >/dev/null ||
    die "could not create the bucket at $A"
put() { "$SK_BIN" upload -q --endpoint-url "$A" "$@" >/dev/null || die "upload of $* failed"; }
put plain s3://dset/plain/
put zst s3://dset/zst/
put hr s3://dset/hr/
proxy_start "$A" "$T/p.log" # counts requests; frozen in the last step
P=$PROXY_URL PPROXY=$(echo $MOTO_PIDS | awk '{print $NF}')
gets() { grep -c "^GET /dset/$1" "$T/p.log"; }

step "diff -r of s3://dset/zst/"
mount_up m s3://dset/zst/ --endpoint-url "$A"
diff -r c m >diff.out || die "zst: the S3 mount differs: $(head -5 diff.out)"
mount_down m

step "s3://dset/plain/: small files read in order come from read windows, a few GETs a shard"
mount_up m s3://dset/plain/ --endpoint-url "$P"
ls m/big >/dev/null
: >"$T/p.log"
diff -r c/n00000 m/n00000 >diff.out || die "plain: the S3 mount differs: $(head -5 diff.out)"
nf=$(find c/n00000 -type f | wc -l) ng=$(gets plain/t-)
echo "$nf files in key order: $ng GETs of shards"
[ "$ng" -le $((nf / 8)) ] || die "$nf small files took $ng GETs (a window serves its neighbours)"

step "read-ahead: a 12 MiB member read in order is a few GETs"
: >"$T/p.log"
cmp m/big/00000000.bin c/big/00000000.bin || die "the big member differs"
ng=$(gets plain/t-)
echo "12 MiB in order: $ng GETs"
# the kernel may split or reorder a few reads, each restarting the window
[ "$ng" -gt 0 ] && [ "$ng" -le 16 ] || die "12 MiB read in order took $ng GETs (read-ahead: at most 16; 96 without)"

step "diff -r of s3://dset/plain/"
diff -r c m >diff.out || die "plain: the S3 mount differs: $(head -5 diff.out)"
mount_down m

step "--cache-dir: bounded, evicts, serves a remount with no GET"
bytes=$(cat plain/*.tar | wc -c)
bound=$((2 << 20))
[ "$bytes" -gt $((2 * bound)) ] || die "the dataset ($bytes bytes) is too small to make the cache evict"
mount_up m s3://dset/plain/ --endpoint-url "$A" --cache-dir "$T/cache" --cache-size 2M
diff -r c m >diff.out || die "through a bounded cache the mount differs: $(head -5 diff.out)"
mount_down m
held=$(find "$T/cache" -name '*.skc' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
echo "cache holds $held bytes (bound $bound) after reading $bytes"
[ "$held" -le "$bound" ] || die "the cache holds $held bytes, over its bound $bound"
[ "$held" -gt $((bound / 2)) ] || die "the cache holds only $held bytes: nothing was kept"
[ -z "$(find "$T/cache" -name '*.tmp')" ] || die "temporaries left in the cache"
rm -rf "$T/cache"
: >"$T/p.log"
mount_up m s3://dset/plain/ --endpoint-url "$P" --cache-dir "$T/cache"
diff -r c m >diff.out || die "through the cache the mount differs: $(head -5 diff.out)"
mount_down m
[ "$(gets 'plain/t-[0-9]*\.tar')" -gt 0 ] || die "the first mount fetched no shard"
: >"$T/p.log"
mount_up m s3://dset/plain/ --endpoint-url "$P" --cache-dir "$T/cache"
diff -r c m >diff.out || die "a remount through the cache differs: $(head -5 diff.out)"
mount_down m
if grep '^GET /dset/plain/t-[0-9]*\.tar' "$T/p.log" >gets.out; then
    die "a remount fetched again what its cache holds: $(head -3 gets.out)"
fi
echo "remount: $(grep -c '^HEAD ' "$T/p.log") HEADs, no GET of a shard or index"

step "--cache-dir: hostile entries: a planted link is not followed, a foreign file stays"
mkdir -p "$T/cache2"
etag=$(md5sum <plain/t-001.tar | cut -c1-32) # one PUT: the ETag is the bytes' MD5
blk=$(printf '%s\0etag:%s\0%s' s3://dset/plain/t-001.tar "$etag" 0 | sha256sum | cut -c1-40)
blen=$(stat -c %s plain/t-001.tar)
[ "$blen" -le 1048576 ] || blen=1048576
head -c "$blen" /dev/zero >"$T/target" # the block's size: it would be served if the link were followed
ln -s "$T/target" "$T/cache2/$blk.skc"
echo keep >"$T/cache2/notes.txt"
mount_up m s3://dset/plain/ --endpoint-url "$A" --cache-dir "$T/cache2" --cache-size 1M
diff -r c m >diff.out || die "with a planted link in the cache the mount differs: $(head -5 diff.out)"
mount_down m
[ -L "$T/cache2/$blk.skc" ] && die "the planted link is still there (block 0 of t-001.tar was not kept)"
[ -f "$T/cache2/$blk.skc" ] || echo "block 0 of t-001.tar was kept, then evicted"
cmp -s "$T/target" <(head -c "$blen" /dev/zero) || die "the link's target was written"
assert_eq "$(cat "$T/cache2/notes.txt")" keep "a file the cache did not make"

step "--cache-dir: a dataset replaced under the same names is not served the old bytes"
put re s3://dset/plain/
mount_up m s3://dset/plain/ --endpoint-url "$A" --cache-dir "$T/cache"
assert_eq "$(stat -c %Y m/n00001/00000060.jpg)" 1700000000 "mtime of a member of the replaced dataset"
diff -r c m >diff.out || die "the replaced dataset through the cache differs: $(head -5 diff.out)"
mount_down m

step "a shard object cut short before its first read: EIO past the cut only"
head -c $(( $(stat -c %s re/t-001.tar) / 2 )) re/t-001.tar >cut/t-001.tar
put cut/t-001.tar s3://dset/plain/
first=$(tar tf re/t-001.tar | sed -n 1p)
last=$(tar tf re/t-001.tar | tail -1)
mount_up m s3://dset/plain/ --endpoint-url "$A"
cat "m/$last" >/dev/null 2>cut.err && die "a member past the cut was served"
assert_contains cut.err "Input/output error"
assert_contains m.log "shard cut short"
cmp "m/$first" "c/$first" || die "a member before the cut differs"
mount_down m
put re/t-001.tar s3://dset/plain/

step "a crafted index: members past the object's end are EIO, named; overlapping ones are its bytes"
mount_up m s3://dset/hr/r-00.tar --endpoint-url "$A"
for f in good/000.bin good/001.bin over/000.a over/000.b; do
    [ -s "m/$f" ] || die "m/$f: not listed"
done
for e in a b; do # the overlapping members: the object's bytes at the ranges the index names
    read -r off len < <(grep "^$e " hr.ranges | cut -d' ' -f2-)
    cmp "m/over/000.$e" <(tail -c +$((off + 1)) hr/r-00.tar | head -c "$len") ||
        die "over/000.$e is not the bytes its index names"
done
for f in past/000.bin far/000.bin; do
    cat "m/$f" >/dev/null 2>hr.err && die "m/$f (past the end) was served"
    assert_contains hr.err "Input/output error"
done
cmp m/good/001.bin <(tar xOf hr/r-00.tar m/5.bin) || die "a sound member after the crafted ones differs"
assert_contains m.log "r-00.tar: index s3://dset/hr/r-00.tar.idx points past the end of the shard"
mount_down m

step "through faults: retried, same bytes"
proxy_start "$A" "$T/faults.log" --faults --stall 3
# small windows: enough requests (each a retry's chance) in a few seconds
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL" --read-timeout 2 --read-window 32K
diff -r c/n00001 m/n00001 >diff.out || die "through faults the mount differs: $(head -5 diff.out)"
[ "$(wc -l <"$T/faults.log")" -ge 20 ] || die "too few requests went through the fault proxy"
mount_down m

step "a server that stops answering: EIO in bounded time"
mount_up m s3://dset/plain/ --endpoint-url "$P" --max-attempts 2 --read-timeout 2 --read-window 0
cmp m/n00000/00000000.jpg c/n00000/00000000.jpg || die "first read through the proxy differs"
stat m/n00002/00000149.jpg >/dev/null # its shard opened (HEAD, first block): one GET left to freeze
kill -STOP "$PPROXY"
start=$(date +%s)
timeout 60 cat m/n00002/00000149.jpg >/dev/null 2>stop.err
rc=$?
kill -CONT "$PPROXY"
took=$(( $(date +%s) - start ))
[ "$rc" = 124 ] && die "a read hung for 60 s against a frozen server"
[ "$rc" = 0 ] && die "a read succeeded against a frozen server"
assert_contains stop.err "Input/output error"
[ "$took" -le 30 ] || die "EIO took $took s (bound: 2 attempts x 2 s low-speed window)"
echo "EIO after $took s"
mount_down m
echo "mount_s3: ok"
