#!/usr/bin/env bash
# s3_retry_notice.sh - an endpoint that cannot be reached is retried with
# backoff (a quarter of a minute with the default 8 attempts); the wait is
# not silent: after the first failure one line on stderr names the URL and
# the cause and says it is being retried, once however many requests
# retry; the final error follows.  No retry (--max-attempts 1), no notice.
. "$(dirname "$0")/lib.sh"
need python3
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=not-a-secret AWS_REGION=us-east-1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
E=http://127.0.0.1:$port

for tool in verify index; do
    step "$tool: one notice, then the error"
    run "$SK_BIN" $tool --endpoint-url "$E" --max-attempts 3 s3://bkt/x.tar
    [ "$RC" -ne 0 ] || die "$tool of an unreachable endpoint succeeded"
    n=$(grep -c 'retrying' "$ERR" || true)
    assert_eq "$n" 1 "$tool: notices"
    grep 'retrying' "$ERR" | grep -q "127.0.0.1:$port" || die "$tool: the notice does not name the endpoint"
    grep 'retrying' "$ERR" | grep -qi "connect" || die "$tool: the notice does not give the cause"
    [ "$(grep -n retrying "$ERR" | cut -d: -f1)" = 1 ] || die "$tool: the notice is not the first line"
done

step "--max-attempts 1: no retry, no notice"
run "$SK_BIN" verify --endpoint-url "$E" --max-attempts 1 s3://bkt/x.tar
[ "$RC" -ne 0 ] || die "verify succeeded"
assert_not_contains "$ERR" retrying "stderr"
exit 0
