#!/usr/bin/env bash
# test: long (a minute or more: started early, so it does not run last)
# mount_s3: `shardkit mount s3://bucket/prefix/` (moto; SK_S3_SERVER=rgw: the
# RADOS gateway) is the packed tree (diff -r), plain and .tar.zst shards;
# through the fault proxy (503s, resets mid-body, a stalled answer) the
# retries are invisible and diff -r still holds; when the server stops
# answering (the proxy frozen with SIGSTOP), a read is EIO within the
# client's bounds (--max-attempts 2 --read-timeout 2), never a hang.
# A 12 MiB member read in order is a few ranged GETs (read-ahead), not one
# per kernel read.  --cache-dir/--cache-size: the cache never holds more
# than its bound (and so evicts: the dataset is bigger), a remount reads
# every file from it with no GET of a shard or index, and a dataset
# replaced under the same names (new ETags) is not served the old bytes.
# A link planted in the cache under a block's name is not followed (and is
# replaced), a file the cache did not make is never removed.  A shard
# object cut short before its first read: EIO past the cut only.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
. "$SK_ROOT/tests/e2e/lib/mount.sh"
skip_unless_fuse
skip_unless_moto
need diff cmp timeout
tmpdir T
at_exit moto_stop
cd "$T"
"$SK_TOOLS/mkcorpus" c --samples 150 --per-dir 50 >/dev/null || die mkcorpus
mkdir -p c/big
head -c 12582917 /dev/urandom >c/big/00000000.bin
expect_ok "$SK_BIN" pack c -o plain/t-%03d.tar --max-size 512K
expect_ok "$SK_BIN" pack c -o zst/t-%03d.tar.zst --max-size 512K --compress zstd
s3_serve dset
for d in plain zst; do
    aws s3 cp --quiet --recursive "$d" "s3://dset/$d/" || die "upload of $d failed"
done

for d in plain zst; do
    step "diff -r of s3://dset/$d/"
    mount_up m "s3://dset/$d/" --endpoint-url "$A"
    diff -r c m >diff.out || die "$d: the S3 mount differs: $(head -5 diff.out)"
    mount_down m
done

step "read-ahead: a 12 MiB member read in order is a few GETs"
proxy_start "$A" "$T/ra.log"
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL"
ls m/big >/dev/null
: >"$T/ra.log"
cmp m/big/00000000.bin c/big/00000000.bin || die "the big member differs"
gets=$(grep -c '^GET ' "$T/ra.log")
echo "12 MiB in order: $gets GETs"
[ "$gets" -le 12 ] || die "12 MiB read in order took $gets GETs (read-ahead: at most 12; 96 without)"
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
proxy_start "$A" "$T/cache.log"
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL" --cache-dir "$T/cache"
diff -r c m >diff.out || die "through the cache the mount differs: $(head -5 diff.out)"
mount_down m
grep -q '^GET /dset/plain/t-[0-9]*\.tar' "$T/cache.log" || die "the first mount fetched no shard"
: >"$T/cache.log"
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL" --cache-dir "$T/cache"
diff -r c m >diff.out || die "a remount through the cache differs: $(head -5 diff.out)"
mount_down m
if grep '^GET /dset/plain/t-[0-9]*\.tar' "$T/cache.log" >gets.out; then
    die "a remount fetched again what its cache holds: $(head -3 gets.out)"
fi
echo "remount: $(grep -c '^HEAD ' "$T/cache.log") HEADs, no GET of a shard or index"

step "--cache-dir: hostile entries: a planted link is not followed, a foreign file stays"
mkdir -p "$T/cache2"
etag=$(aws s3api head-object --bucket dset --key plain/t-001.tar --query ETag --output text | tr -d '"')
blk=$(python3 -c '
import hashlib, sys
print(hashlib.sha256(sys.argv[1].encode() + b"\0etag:" + sys.argv[2].encode() + b"\0" + b"0").hexdigest()[:40])' \
    s3://dset/plain/t-001.tar "$etag")
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
expect_ok "$SK_BIN" pack c -o re/t-%03d.tar --max-size 512K --mtime 1700000000
aws s3 cp --quiet --recursive re s3://dset/plain/ || die "upload of the repacked dataset failed"
mount_up m s3://dset/plain/ --endpoint-url "$A" --cache-dir "$T/cache"
assert_eq "$(stat -c %Y m/n00001/00000060.jpg)" 1700000000 "mtime of a member of the replaced dataset"
diff -r c m >diff.out || die "the replaced dataset through the cache differs: $(head -5 diff.out)"
mount_down m

step "a shard object cut short before its first read: EIO past the cut only"
head -c $(( $(stat -c %s re/t-001.tar) / 2 )) re/t-001.tar >cut.tar
aws s3 cp --quiet cut.tar s3://dset/plain/t-001.tar || die "upload of the cut shard failed"
first=$(tar tf re/t-001.tar | sed -n 1p)
last=$(tar tf re/t-001.tar | tail -1)
mount_up m s3://dset/plain/ --endpoint-url "$A"
cat "m/$last" >/dev/null 2>cut.err && die "a member past the cut was served"
assert_contains cut.err "Input/output error"
assert_contains m.log "shard cut short"
cmp "m/$first" "c/$first" || die "a member before the cut differs"
mount_down m
aws s3 cp --quiet re/t-001.tar s3://dset/plain/t-001.tar || die "upload failed"

step "through faults: retried, same bytes"
proxy_start "$A" "$T/faults.log" --faults --stall 3
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL" --read-timeout 2
diff -r c/n00001 m/n00001 >diff.out || die "through faults the mount differs: $(head -5 diff.out)"
[ "$(wc -l <"$T/faults.log")" -ge 20 ] || die "too few requests went through the fault proxy"
mount_down m

step "a server that stops answering: EIO in bounded time"
proxy_start "$A" "$T/stop.log"
mount_up m s3://dset/plain/ --endpoint-url "$PROXY_URL" --max-attempts 2 --read-timeout 2
cmp m/n00000/00000000.jpg c/n00000/00000000.jpg || die "first read through the proxy differs"
ppid=$(echo $MOTO_PIDS | awk '{print $NF}')
kill -STOP "$ppid"
start=$(date +%s)
timeout 60 cat m/n00002/00000149.jpg >/dev/null 2>stop.err
rc=$?
kill -CONT "$ppid"
took=$(( $(date +%s) - start ))
[ "$rc" = 124 ] && die "a read hung for 60 s against a frozen server"
[ "$rc" = 0 ] && die "a read succeeded against a frozen server"
assert_contains stop.err "Input/output error"
[ "$took" -le 30 ] || die "EIO took $took s (bound: 2 attempts x 2 s low-speed window)"
echo "EIO after $took s"
mount_down m
echo "mount_s3: ok"
