#!/usr/bin/env bash
# trust_listing.sh - a listing of empty truncated pages, each with a new
# continuation token, ends with an error that names the cap (it used to
# page forever: only a repeated token was caught), after a bounded number
# of requests; against tests/helpers/badserver.py.
. "$(dirname "$0")/lib.sh"
need python3 timeout
tmpdir T
python3 "$SK_ROOT/tests/helpers/badserver.py" "$T/port" "$T/req.log" &
srv=$!
at_exit "kill $srv 2>/dev/null"
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || die "the bad server did not start"
URL=http://127.0.0.1:$(cat "$T/port")
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1
unset AWS_MAX_ATTEMPTS AWS_PROFILE
export AWS_CONFIG_FILE=$T/aws-config AWS_SHARED_CREDENTIALS_FILE=$T/aws-credentials
: >"$AWS_CONFIG_FILE"

for cmd in "pack s3://bkt/empty/ -o $T/out/s-%02d.tar" "cat --keys s3://bkt/empty/" "verify s3://bkt/empty/"; do
    step "$cmd: empty truncated pages with new tokens end at the cap"
    : >"$T/req.log"
    # shellcheck disable=SC2086
    run timeout 60 "$SK_BIN" ${cmd%% *} --endpoint-url "$URL" ${cmd#* }
    [ "$RC" != 124 ] || die "$cmd pages forever"
    [ "$RC" != 0 ] || die "$cmd accepted an endless listing"
    assert_contains "$ERR" "empty pages that say the listing goes on (over the cap of 1000)"
    n=$(grep -c 'list-type=2' "$T/req.log" || true)
    [ "$n" -le 1001 ] || die "$n listing requests"
done
echo ok
