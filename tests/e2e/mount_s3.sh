#!/usr/bin/env bash
# mount_s3: `shardkit mount s3://bucket/prefix/` (moto; SK_S3_SERVER=rgw: the
# RADOS gateway) is the packed tree (diff -r), plain and .tar.zst shards;
# through the fault proxy (503s, resets mid-body, a stalled answer) the
# retries are invisible and diff -r still holds; when the server stops
# answering (the proxy frozen with SIGSTOP), a read is EIO within the
# client's bounds (--max-attempts 2 --read-timeout 2), never a hang.
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
