# rgw.sh - a one-node Ceph cluster with a RADOS gateway on 127.0.0.1, the S3
# server production clusters run, for tests and benchmarks (source it).
#   rgw_start    starts a monitor, one OSD on memstore (its objects live in
#                RAM: no disk to prepare, nothing left behind) and radosgw
#                (beast frontend) on free ports under a fresh temporary
#                directory; creates an S3 user with a random key pair, exported
#                as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY; sets RGW_URL and
#                RGW_PIDS.  About 10 s.
#   rgw_stop     stops every gateway started and removes their directories.
#   have_rgw     true when the Ceph daemons are installed (scripts/deps s3servers).
# Why a real gateway: moto serves a few hundred requests a second, which hides
# what a client does at scale; radosgw is several times faster, checks every
# SigV4 signature, and is what many on-premise clusters put in front of S3
# clients.  See docs/s3.md ("Test servers").

RGW_PIDS=${RGW_PIDS:-}
RGW_DIRS=${RGW_DIRS:-}

have_rgw() {
    for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
        command -v "$b" >/dev/null 2>&1 || return 1
    done
}

rgw_stop() {
    # runs inside EXIT traps under set -e: no failure may escape
    local p
    for p in $RGW_PIDS; do kill "$p" 2>/dev/null || true; done
    for p in $RGW_PIDS; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    RGW_PIDS=""
    for p in $RGW_DIRS; do rm -rf "$p"; done
    RGW_DIRS=""
}

rgw_start() {
    local d mp rp fsid c pidf
    have_rgw || { echo "rgw: the Ceph daemons are not installed (scripts/deps s3servers)" >&2; return 1; }
    d=$(mktemp -d "${TMPDIR:-/tmp}/rgw.XXXXXX")
    RGW_DIRS="$RGW_DIRS $d"
    mkdir -p "$d/mon" "$d/osd" "$d/run" "$d/log" "$d/rgw"
    mp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    rp=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    fsid=$(python3 -c 'import uuid; print(uuid.uuid4())')
    # auth none inside the cluster (nothing else can reach 127.0.0.1 ports of
    # a throwaway cluster); the S3 side still checks every signature.  With
    # auth none the messenger must be told to use crc mode, or daemons and
    # clients find no common mode and the gateway never connects.
    cat >"$d/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = 127.0.0.1:$mp
auth cluster required = none
auth service required = none
auth client required = none
ms bind ipv6 = false
ms mon client mode = crc
ms client mode = crc
ms cluster mode = crc
ms service mode = crc
ms mon service mode = crc
ms mon cluster mode = crc
osd objectstore = memstore
memstore device bytes = 4294967296
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
mon allow pool size one = true
mon max pg per osd = 2000
mon data avail warn = 1
mon data avail crit = 0
osd crush chooseleaf type = 0
client mount timeout = 20
rados mon op timeout = 30
run dir = $d/run
log file = $d/log/\$name.log
admin socket = $d/run/\$name.asok
pid file = $d/run/\$name.pid
[mon.a]
mon data = $d/mon
[osd.0]
osd data = $d/osd
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$rp
rgw data = $d/rgw
CONF
    c="-c $d/ceph.conf"
    monmaptool --create --add a "127.0.0.1:$mp" --fsid "$fsid" "$d/monmap" >/dev/null || return 1
    ceph-mon $c --mkfs -i a --monmap "$d/monmap" >"$d/log/mkfs" 2>&1 || { cat "$d/log/mkfs" >&2; return 1; }
    ceph-mon $c -i a || return 1
    timeout 30 ceph $c osd create >/dev/null || { echo "rgw: the monitor did not answer" >&2; return 1; }
    ceph-osd $c -i 0 --mkfs >>"$d/log/mkfs" 2>&1 || { cat "$d/log/mkfs" >&2; return 1; }
    ceph-osd $c -i 0 2>>"$d/log/mkfs" || return 1
    radosgw $c -n client.rgw || return 1
    # the daemons fork: their pids are in the pid files once they run
    for _ in $(seq 100); do
        [ -s "$d/run/mon.a.pid" ] && [ -s "$d/run/osd.0.pid" ] && [ -s "$d/run/client.rgw.pid" ] && break
        sleep 0.1
    done
    for pidf in "$d/run/client.rgw.pid" "$d/run/osd.0.pid" "$d/run/mon.a.pid"; do
        [ -s "$pidf" ] && RGW_PIDS="$RGW_PIDS $(cat "$pidf")"
    done
    RGW_URL=http://127.0.0.1:$rp
    for _ in $(seq 300); do
        curl -s -o /dev/null "$RGW_URL/" && break
        sleep 0.1
    done
    curl -s -o /dev/null "$RGW_URL/" || { echo "rgw: the gateway did not start (log: $d/log)" >&2; return 1; }
    # random keys, as real ones are: a test that looks for a leaked secret
    # in its logs must not find a common word
    AWS_ACCESS_KEY_ID=SK$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
    AWS_SECRET_ACCESS_KEY=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
    export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
    timeout 60 radosgw-admin $c user create --uid=sk --display-name=sk \
        --access-key="$AWS_ACCESS_KEY_ID" --secret="$AWS_SECRET_ACCESS_KEY" >/dev/null ||
        { echo "rgw: cannot create the S3 user" >&2; return 1; }
}
