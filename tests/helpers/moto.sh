# moto.sh - start and stop a moto_server for one e2e test (source it).
#   moto_start [auth]   starts moto on 127.0.0.1 with a free port; sets
#                       MOTO_URL and exports AWS_* for the aws cli and shardkit.
#                       With "auth": creates an IAM user with an access key
#                       while auth is off, then turns signature checking on
#                       (POST /moto-api/reset-auth with body 0) and switches
#                       to the new key.
#   moto_auth_on        the same switch to auth on the server already running
#   moto_stop           stops them all; call it from the test's EXIT trap.
#   skip_unless_moto    exits 77 when moto_server or aws is missing.
#   s3_test_begin [COMMAND...]
#                       skip_unless_moto, need COMMAND..., tmpdir T and
#                       at_exit moto_stop: how an S3 test starts.
#   s3_serve [auth] [BUCKET...]
#                       the usual start of an S3 test: moto_start [auth], then
#                       A=$MOTO_URL, aws() bound to A, and the buckets made;
#                       ends the test with a message when any of it fails.
#   s3_dataset [auth] BUCKET SAMPLES PACK_OPTION...
#                       the usual start of a test that reads a dataset from
#                       S3: a corpus of SAMPLES samples in $T/c packed with
#                       the options, plain ($T/plain/t-%03d.tar) and zstd
#                       ($T/zst/t-%03d.tar.zst); then s3_serve [auth] BUCKET
#                       and each file copied to s3://BUCKET/plain/ and
#                       s3://BUCKET/zst/.  Needs lib.sh ($T, expect_ok).
#   s3_put_dir DIR s3://B/P/, s3_same_dir DIR s3://B/P/
#                       each file of DIR put as P+name, or compared with that
#                       object, in one client process (tests/helpers/s3batch.py,
#                       botocore): an aws cli call per object costs a second.
#   kill_mid_upload BUCKET KEY CMD...
#                       runs CMD (through a proxy_start proxy whose log is
#                       $PROXY_LOG) in the background and SIGKILLs it once
#                       the proxy has seen the first part of KEY's multipart
#                       upload; fails unless that upload is left unfinished
#                       and no manifest.json was written beside KEY.
# Each call of moto_start starts another server; MOTO_PIDS tracks them all.
# SK_S3_SERVER=rgw runs the same tests against a RADOS gateway instead
# (tests/helpers/rgw.sh): MOTO_URL is then the gateway's, which checks
# signatures always, so "auth" needs nothing more.

. "$(dirname "${BASH_SOURCE[0]}")/rgw.sh"

MOTO_PIDS=${MOTO_PIDS:-}

skip_unless_moto() {
    if [ "${SK_S3_SERVER:-moto}" = rgw ]; then
        have_rgw || { echo "SK_S3_SERVER=rgw: the Ceph daemons are not installed"; exit 77; }
        command -v aws >/dev/null 2>&1 || { echo "aws cli not installed"; exit 77; }
        return 0
    fi
    command -v moto_server >/dev/null 2>&1 || { echo "moto_server not installed"; exit 77; }
    command -v aws >/dev/null 2>&1 || { echo "aws cli not installed"; exit 77; }
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

moto_stop() {
    # runs inside EXIT traps under set -e: no failure may escape
    for p in $MOTO_PIDS; do kill "$p" 2>/dev/null || true; done
    for p in $MOTO_PIDS; do wait "$p" 2>/dev/null || true; done
    MOTO_PIDS=""
    rgw_stop
}

moto_start() {
    local port log
    if [ "${SK_S3_SERVER:-moto}" = rgw ]; then
        export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
        unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL
        export AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent
        rgw_start || return 1
        MOTO_URL=$RGW_URL
        return 0
    fi
    port=$(free_port)
    log=${TMPDIR:-/tmp}/moto.$$.$port.log
    moto_server -H 127.0.0.1 -p "$port" >"$log" 2>&1 &
    MOTO_PIDS="$MOTO_PIDS $!"
    MOTO_URL=http://127.0.0.1:$port
    export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1
    export AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
    unset AWS_SESSION_TOKEN AWS_PROFILE AWS_ENDPOINT_URL
    export AWS_SHARED_CREDENTIALS_FILE=/nonexistent AWS_CONFIG_FILE=/nonexistent
    for _ in $(seq 100); do
        curl -s -o /dev/null "$MOTO_URL/moto-api/" && break
        sleep 0.1
    done
    if [ "${1:-}" = auth ]; then moto_auth_on || return 1; fi
}

# moto_auth_on: signature checking on from now, with a new IAM user's key
# (a test can do its auth-off steps first on the same server)
moto_auth_on() {
    [ "${SK_S3_SERVER:-moto}" = rgw ] && return 0
    local out
    # one Python process for the three IAM calls (an aws cli call each cost
    # seconds on a loaded machine)
    out=$(python3 - "$MOTO_URL" <<'PY'
import sys, boto3
iam = boto3.client("iam", endpoint_url=sys.argv[1])
iam.create_user(UserName="sk")
iam.put_user_policy(UserName="sk", PolicyName="all", PolicyDocument=
    '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"*","Resource":"*"}]}')
k = iam.create_access_key(UserName="sk")["AccessKey"]
print(k["AccessKeyId"] + "\t" + k["SecretAccessKey"])
PY
) || { echo "moto: could not make an IAM user" >&2; return 1; }
    export AWS_ACCESS_KEY_ID=${out%%$'\t'*} AWS_SECRET_ACCESS_KEY=${out##*$'\t'}
    curl -sf -X POST -H "Content-Type: text/plain" --data-binary 0 "$MOTO_URL/moto-api/reset-auth" >/dev/null ||
        { echo "moto: could not turn auth on" >&2; return 1; }
}

# s3_second_key: prints "ACCESS_KEY<TAB>SECRET" of a second key for the same
# user as the current one (moto: IAM CreateAccessKey; rgw: radosgw-admin).
s3_second_key() {
    if [ "${SK_S3_SERVER:-moto}" = rgw ]; then
        local d=${RGW_DIRS##* } ak sk
        ak=SK$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n' | tr a-f A-F)
        sk=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
        timeout 60 radosgw-admin -c "$d/ceph.conf" key create --uid=sk --key-type=s3 \
            --access-key="$ak" --secret="$sk" >/dev/null || return 1
        printf '%s\t%s\n' "$ak" "$sk"
        return 0
    fi
    command aws --endpoint-url "$MOTO_URL" iam create-access-key --user-name sk \
        --query 'AccessKey.[AccessKeyId,SecretAccessKey]' --output text
}

# proxy_start UPSTREAM_URL LOG [faultproxy options]: sets PROXY_URL.
proxy_start() {
    local up=${1##*:} log=$2 fifo
    shift 2
    fifo=$(mktemp -u)
    mkfifo "$fifo"
    python3 "$SK_ROOT/tests/helpers/faultproxy.py" --upstream "$up" --log "$log" "$@" >"$fifo" &
    MOTO_PIDS="$MOTO_PIDS $!"
    read -r port <"$fifo"
    rm -f "$fifo"
    PROXY_URL=http://127.0.0.1:$port
    PROXY_LOG=$log
}

kill_mid_upload() {
    local bucket=$1 key=$2 pid n
    shift 2
    "$@" 2>/dev/null &
    pid=$!
    for _ in $(seq 600); do
        grep -q "^PUT /$bucket/$key?partNumber=1" "$PROXY_LOG" 2>/dev/null && break
        sleep 0.05
    done
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    grep -q "^PUT /$bucket/$key?partNumber=1" "$PROXY_LOG" || die "the run never reached $key"
    n=$(command aws --endpoint-url "$MOTO_URL" s3api list-multipart-uploads --bucket "$bucket" \
        --query 'length(Uploads || `[]`)' --output text)
    [ "$n" -ge 1 ] || die "the killed run left no multipart upload (the test did not kill mid-upload)"
    if command aws --endpoint-url "$MOTO_URL" s3api head-object --bucket "$bucket" \
        --key "$(dirname "$key")/manifest.json" >/dev/null 2>&1; then
        die "manifest written by a killed run"
    fi
}

s3_serve() {
    local auth=
    [ "${1:-}" = auth ] && { auth=auth; shift; }
    moto_start $auth || { echo "FAIL: the S3 test server (${SK_S3_SERVER:-moto}) did not start" >&2; exit 1; }
    A=$MOTO_URL
    aws() { command aws --endpoint-url "$A" "$@"; }
    local b
    for b in "$@"; do
        aws s3 mb "s3://$b" >/dev/null || { echo "FAIL: could not create bucket $b at $A" >&2; exit 1; }
    done
}

# s3_test_begin [COMMAND...]: the start every S3 test shares: skips without
# moto_server or the aws cli (or a COMMAND), makes the scratch directory $T,
# and stops every server the test starts when it ends
s3_test_begin() {
    skip_unless_moto
    need "$@"
    tmpdir T
    at_exit moto_stop
}

# s3_put_dir DIR s3://B/P/ and s3_same_dir DIR s3://B/P/: every file of DIR
# put as P+name, or compared with it, in one client process (s3batch.py)
# against the latest server started (MOTO_URL)
s3_put_dir() { python3 "$SK_ROOT/tests/helpers/s3batch.py" "$MOTO_URL" put "$@" || die "upload of $1 to $2 failed"; }
s3_same_dir() { python3 "$SK_ROOT/tests/helpers/s3batch.py" "$MOTO_URL" same "$@" || die "$2 does not hold what $1 does"; }

s3_dataset() {
    local auth= b n d f
    [ "${1:-}" = auth ] && { auth=auth; shift; }
    b=$1 n=$2
    shift 2
    "$SK_TOOLS/mkcorpus" "$T/c" --samples "$n" >/dev/null || die "mkcorpus failed"
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/plain/t-%03d.tar" "$@"
    expect_ok "$SK_BIN" pack "$T/c" -o "$T/zst/t-%03d.tar.zst" "$@" --compress zstd
    s3_serve $auth "$b"
    s3_put_dir "$T/plain" "s3://$b/plain/"
    s3_put_dir "$T/zst" "s3://$b/zst/"
}
