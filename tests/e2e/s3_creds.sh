#!/usr/bin/env bash
# s3_creds.sh - each credential source carries a real upload to moto with
# signature checking on: a profile in the shared credentials file, container
# credentials (relative URI with a token; full URI with a token file), and
# EC2 instance metadata with an IMDSv2 session token, the HTTP ones served
# by a local stand-in (tests/helpers/credserver.py).  Temporary credentials
# are fetched anew before they expire: the stand-in's first answer expires
# a few seconds after the advisory window starts, its second is another IAM
# key, and a proxy that logs each request's key id shows the switch.
set -euo pipefail
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
t=$(mktemp -d)
trap 'moto_stop; rm -rf "$t"' EXIT
moto_start auth
command aws --endpoint-url "$MOTO_URL" s3 mb s3://bkt >/dev/null
AK=$AWS_ACCESS_KEY_ID SK=$AWS_SECRET_ACCESS_KEY
fifo=$t/fifo; mkfifo "$fifo"
python3 "$SK_ROOT/tests/helpers/credserver.py" --ak "$AK" --sk "$SK" --auth "Bearer tok-123" --log "$t/cred.log" >"$fifo" &
MOTO_PIDS="$MOTO_PIDS $!"
read -r port <"$fifo"
C=http://127.0.0.1:$port
echo data >"$t/f"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
# output is captured whole and matched from a here-string: a pipe into
# grep -q could close early and SIGPIPE the writer under pipefail
up() { local o; o=$("$SK_BIN" upload -v --endpoint-url "$MOTO_URL" "$t/f" "s3://bkt/$1" "${@:2}" 2>&1 >/dev/null) || true; printf '%s\n' "$o"; }

# shared credentials file, named profile
printf '[other]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$AK" "$SK" >"$t/credentials"
grep -q 'credentials from shared credentials file' <<<"$(AWS_SHARED_CREDENTIALS_FILE=$t/credentials up prof --profile other)"

# container credentials, relative URI + token
out=$(AWS_CONTAINER_CREDENTIALS_RELATIVE_URI=/creds SHARDKIT_CONTAINER_CREDENTIALS_HOST=$C \
    AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer tok-123" up rel)
grep -q 'credentials from container credentials' <<<"$out"
# full URI + token file
echo "Bearer tok-123" >"$t/tokfile"
out=$(AWS_CONTAINER_CREDENTIALS_FULL_URI=$C/creds AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE=$t/tokfile \
    up full)
grep -q 'credentials from container credentials' <<<"$out"
# a wrong token is an error that names the endpoint, not a silent fallback
set +e
out=$(AWS_CONTAINER_CREDENTIALS_FULL_URI=$C/creds AWS_CONTAINER_AUTHORIZATION_TOKEN=wrong up bad)
set -e
grep -q 'HTTP 401' <<<"$out"

# EC2 instance metadata, IMDSv2
unset AWS_EC2_METADATA_DISABLED
grep -q 'credentials from instance metadata' <<<"$(AWS_EC2_METADATA_SERVICE_ENDPOINT=$C up imds)"
grep -q 'PUT /latest/api/token' "$t/cred.log"
grep -q 'GET /latest/meta-data/iam/security-credentials/sk-role' "$t/cred.log"
# ... and AWS_EC2_METADATA_DISABLED is honoured
set +e
out=$(AWS_EC2_METADATA_DISABLED=true AWS_EC2_METADATA_SERVICE_ENDPOINT=$C \
      "$SK_BIN" upload -v --endpoint-url "$MOTO_URL" "$t/f" s3://bkt/none 2>&1 >/dev/null)
rc=$?
set -e
# (a failed [ ] && grep in a list does not stop a set -e script: say it)
{ [ $rc -eq 1 ] && grep -q 'no AWS credentials found' <<<"$out"; } ||
    { echo "no credentials: exit $rc, output: $out"; exit 1; }

# refresh: the first answer (key 1) expires in 15 min + 2 s, so about 2 s
# in the advisory window (15 min) starts and the next signing fetches key 2.
# Parts go one at a time, each answer held 1 s by the proxy.
out=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK s3_second_key)
AK2=${out%%$'\t'*} SK2=${out##*$'\t'}
mkfifo "$t/fifo2"
python3 "$SK_ROOT/tests/helpers/credserver.py" --ak "$AK" --sk "$SK" --ak2 "$AK2" --sk2 "$SK2" --ttl 902 \
    --auth "Bearer tok-123" --log "$t/cred2.log" >"$t/fifo2" &
MOTO_PIDS="$MOTO_PIDS $!"
read -r port2 <"$t/fifo2"
proxy_start "$MOTO_URL" "$t/proxy.log" --delay 1 --log-key
head -c $((20 << 20)) /dev/urandom >"$t/big"
out=$(AWS_CONTAINER_CREDENTIALS_FULL_URI=http://127.0.0.1:$port2/creds AWS_CONTAINER_AUTHORIZATION_TOKEN="Bearer tok-123" \
      "$SK_BIN" upload -v --endpoint-url "$PROXY_URL" --concurrency 1 --part-size 5MiB \
      --multipart-threshold 5MiB "$t/big" s3://bkt/rot 2>&1 >/dev/null) || { printf '%s\n' "$out"; exit 1; }
grep -q 'credentials refreshed from container credentials' <<<"$out"
[ "$(grep -c '^creds ' "$t/cred2.log")" -eq 2 ] || { cat "$t/cred2.log"; exit 1; }
# the first requests were signed with key 1, the last ones with key 2
head -1 "$t/proxy.log" | grep -q "key=$AK\$" || { cat "$t/proxy.log"; exit 1; }
tail -1 "$t/proxy.log" | grep -q "key=$AK2\$" || { cat "$t/proxy.log"; exit 1; }
[ "$(grep -c " 200 key=$AK2\$" "$t/proxy.log")" -ge 3 ] || { cat "$t/proxy.log"; exit 1; }
AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK command aws --endpoint-url "$MOTO_URL" s3 cp s3://bkt/rot "$t/back" >/dev/null
cmp "$t/big" "$t/back"

# credentials past their AWS_CREDENTIAL_EXPIRATION that no refresh renews:
# a clear error, not a storm of ExpiredToken answers
out=$(AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_CREDENTIAL_EXPIRATION=2020-01-01T00:00:00Z up expired)
grep -q 'environment expired at 2020-01-01T00:00:00Z and could not be refreshed' <<<"$out" || { printf '%s\n' "$out"; exit 1; }

for k in prof rel full imds; do
    AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK command aws --endpoint-url "$MOTO_URL" s3 cp "s3://bkt/$k" "$t/back" >/dev/null
    cmp "$t/f" "$t/back"
done
if grep -rqe "$SK" -e "$SK2" "$t"/*.log 2>/dev/null || grep -qe "$SK" -e "$SK2" <<<"$out"; then echo "secret in a log"; exit 1; fi
echo ok
