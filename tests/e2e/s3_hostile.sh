#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# s3_hostile.sh - nothing hangs, nothing eats the machine, nothing hammers
# a server (issue "trust", section 4), against a loopback HTTP server that
# misbehaves on purpose (tests/helpers/badserver.py):
#   - an endless body for a manifest: an error naming the cap, bounded RSS;
#   - a listing that repeats its continuation token: an error, few requests;
#   - a body dripping one byte a second: retried within --max-attempts,
#     then an error, in bounded time;
#   - HTTP 501: not retried; AWS_MAX_ATTEMPTS (and the profile's
#     max_attempts) honoured for a retryable 503;
#   - cat takes the same S3 options as the other tools;
#   - a listing naming keys outside the prefix (other prefixes, "..",
#     subdirectories, dot names, repeats): cat, verify and index read only
#     the prefix's own shards, each once.
. "$(dirname "$0")/lib.sh"
need python3
[ -x /usr/bin/time ] || skip "GNU time is not installed"
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
count() { grep -c "$1" "$T/req.log" || true; }

step "an endless manifest body: the cap, not all memory"
: >"$T/req.log"
start=$(date +%s)
run /usr/bin/time -f '%M' -o "$T/rss" "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/endless/manifest.json
[ "$RC" -ne 0 ] || die "an endless manifest was accepted"
assert_contains "$ERR" "s3://bkt/endless/manifest.json: a manifest is at most 64 MiB"
rss=$(tail -1 "$T/rss")
[ "$rss" -lt $((300 * 1024)) ] || die "RSS grew to $rss KiB"
[ $(( $(date +%s) - start )) -lt 60 ] || die "the endless body took over a minute to refuse"

step "a listing that repeats its continuation token"
: >"$T/req.log"
run timeout 60 "$SK_BIN" pack --endpoint-url "$URL" s3://bkt/loop/ -o "$T/out/s-%02d.tar"
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] || die "the looping listing did not fail (exit $RC)"
assert_contains "$ERR" "repeats its continuation token"
n=$(count 'list-type=2')
[ "$n" -le 3 ] || die "$n listing requests for a looping listing"

step "a body dripping one byte a second: retried, then an error, in bounded time"
: >"$T/req.log"
start=$(date +%s)
run timeout 60 "$SK_BIN" cat --endpoint-url "$URL" --read-timeout 2 --low-speed-limit 1000 \
    --max-attempts 2 --keys s3://bkt/drip.tar
[ "$RC" -ne 0 ] && [ "$RC" -ne 124 ] || die "the dripping body did not fail (exit $RC)"
took=$(( $(date +%s) - start ))
[ "$took" -le 20 ] || die "the dripping body took ${took}s (2 attempts of a 2 s window)"
assert_contains "$ERR" "drip.tar"
n=$(count 'GET /bkt/drip.tar')
[ "$n" -eq 2 ] || die "$n GETs of the dripping body, want 2 (--max-attempts 2)"

step "HTTP 501 is not retried"
: >"$T/req.log"
run "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/e501.tar
[ "$RC" -ne 0 ] || die "501 read fine"
n=$(count 'e501.tar')
[ "$n" -eq 1 ] || die "$n requests for a 501, want 1"
assert_not_contains "$ERR" "(null)"

step "AWS_MAX_ATTEMPTS, then the profile's max_attempts, for a retryable 503"
: >"$T/req.log"
run env AWS_MAX_ATTEMPTS=2 "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/e503.tar
[ "$RC" -ne 0 ] || die "503 read fine"
n=$(count 'e503.tar')
[ "$n" -eq 2 ] || die "$n requests with AWS_MAX_ATTEMPTS=2, want 2"
printf '[default]\nmax_attempts = 3\n' >"$AWS_CONFIG_FILE"
: >"$T/req.log"
run "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/e503.tar
n=$(count 'e503.tar')
[ "$n" -eq 3 ] || die "$n requests with max_attempts = 3 in the profile, want 3"
: >"$T/req.log"
run env AWS_MAX_ATTEMPTS=1 "$SK_BIN" cat --endpoint-url "$URL" --max-attempts 2 --keys s3://bkt/e503.tar
n=$(count 'e503.tar')
[ "$n" -eq 2 ] || die "--max-attempts did not win over AWS_MAX_ATTEMPTS ($n requests)"
run env AWS_MAX_ATTEMPTS=zero "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/e503.tar
[ "$RC" -ne 0 ] && assert_contains "$ERR" "AWS_MAX_ATTEMPTS=zero"

step "a lying listing: only the prefix's own shard objects, each once"
for tool in cat verify index; do
    : >"$T/req.log"
    case $tool in
    cat) run "$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/lie/ ;;
    verify) run "$SK_BIN" verify --endpoint-url "$URL" s3://bkt/lie/ ;;
    index) run "$SK_BIN" index --endpoint-url "$URL" --no-manifest s3://bkt/lie/ ;;
    esac
    grep -E 'evil|sub/|\.h\.tar|lien' "$T/req.log" && die "$tool: asked for an object outside lie/'s own shards"
    grep -q 'lie/a.tar' "$T/req.log" || die "$tool: never read lie/a.tar"
done
"$SK_BIN" cat --endpoint-url "$URL" --keys s3://bkt/lie/ >"$T/keys" 2>/dev/null
[ "$(cat "$T/keys")" = "s/k" ] || die "cat of the lying prefix: $(cat "$T/keys")"
echo "bounded in bytes, time and requests"
