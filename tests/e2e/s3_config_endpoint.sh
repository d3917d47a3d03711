#!/usr/bin/env bash
# s3_config_endpoint.sh - the endpoint from the aws config file, as the aws
# cli v2 reads it, against moto: a profile's endpoint_url (AWS_CONFIG_FILE,
# AWS_PROFILE or --profile); a [services NAME] section's nested
# "s3 = / endpoint_url" before the profile's own; and the order --endpoint-url,
# AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, services, profile, with
# ignore_configured_endpoint_urls (and AWS_IGNORE_CONFIGURED_ENDPOINT_URLS)
# setting all but --endpoint-url aside.  A dead endpoint (a port nobody
# listens on) stands for every place that must lose.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
s3_test_begin
s3_serve bkt
printf 'hello\n' >"$T/x.txt"
aws s3 cp --quiet "$T/x.txt" s3://bkt/x.txt || die "aws upload failed"
DEAD=http://127.0.0.1:$(free_port)
cat >"$T/config" <<CONF
[default]
region = us-east-1

[profile dev]
endpoint_url = $MOTO_URL

[profile svc]
endpoint_url = $DEAD
services = local-s3

[profile dead]
endpoint_url = $DEAD

[profile ignore]
endpoint_url = $MOTO_URL
ignore_configured_endpoint_urls = true

[services local-s3]
s3 =
  endpoint_url = $MOTO_URL
CONF
export AWS_CONFIG_FILE=$T/config
# the object copied within moto: a request that must reach the endpoint
cp_ok() { # WHAT ARGS...: an s3:// to s3:// upload works
    local what=$1
    shift
    run "$SK_BIN" upload --max-attempts 1 "$@" s3://bkt/x.txt s3://bkt/copy/
    [ "$RC" = 0 ] || die "$what: $(cat "$ERR")"
}
cp_dead() {
    local what=$1
    shift
    run "$SK_BIN" upload --max-attempts 1 "$@" s3://bkt/x.txt s3://bkt/copy/
    [ "$RC" != 0 ] || die "$what: reached moto, the endpoint should have been $DEAD"
}

step "a profile's endpoint_url, through AWS_PROFILE and --profile"
AWS_PROFILE=dev cp_ok "AWS_PROFILE=dev"
# (--profile skips the environment's keys, as the aws cli: give the profile keys)
printf '[dev]\naws_access_key_id = testing\naws_secret_access_key = testing\n' >"$T/credentials"
AWS_SHARED_CREDENTIALS_FILE=$T/credentials cp_ok "--profile dev" --profile dev

step "the services section's s3 endpoint before the profile's"
AWS_PROFILE=svc cp_ok "services = local-s3"

step "the order: --endpoint-url, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the config"
AWS_PROFILE=dead cp_ok "--endpoint-url over the profile" --endpoint-url "$MOTO_URL"
AWS_PROFILE=dead AWS_ENDPOINT_URL=$MOTO_URL cp_ok "AWS_ENDPOINT_URL over the profile"
AWS_PROFILE=dev AWS_ENDPOINT_URL=$DEAD cp_dead "AWS_ENDPOINT_URL (dead) over the profile"
AWS_PROFILE=dead AWS_ENDPOINT_URL=$DEAD AWS_ENDPOINT_URL_S3=$MOTO_URL cp_ok "AWS_ENDPOINT_URL_S3 first"
AWS_PROFILE=dead cp_dead "a dead profile endpoint"

step "ignore_configured_endpoint_urls: the profile's and the environment's set aside"
AWS_PROFILE=ignore run "$SK_BIN" upload -v --dry-run --max-attempts 1 s3://bkt/x.txt s3://bkt/copy/
grep -q 's3: endpoint https://s3.us-east-1.amazonaws.com' "$ERR" ||
    die "ignore_configured_endpoint_urls: $(head -3 "$ERR")"
AWS_PROFILE=dev AWS_IGNORE_CONFIGURED_ENDPOINT_URLS=true run "$SK_BIN" upload -v --dry-run \
    --max-attempts 1 s3://bkt/x.txt s3://bkt/copy/
grep -q 's3: endpoint https://s3.us-east-1.amazonaws.com' "$ERR" ||
    die "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: $(head -3 "$ERR")"
AWS_PROFILE=ignore cp_ok "--endpoint-url still counts" --endpoint-url "$MOTO_URL"
exit 0
