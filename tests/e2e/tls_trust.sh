#!/usr/bin/env bash
# tls_trust.sh - https peers are checked against the CA bundle the
# environment names, as the aws cli, curl and Python do: nginx on
# 127.0.0.1 with a certificate signed by itself (trusted by nothing else)
# serving a packed dataset and photos, and in front of moto_server for S3.
#   - untrusted: cat, pack --from-urls (each row) and S3 fail naming the
#     URL and the certificate problem; never read unchecked;
#   - SSL_CERT_FILE, CURL_CA_BUNDLE (before SSL_CERT_FILE), for S3
#     endpoints only AWS_CA_BUNDLE (before both), and SSL_CERT_DIR when no
#     file is named make it trusted: the bytes equal the local ones;
#   - the system bundle is read once a run, not once a connection;
#   - pack --from-urls takes HTTP/2 where the server offers it;
#   - a bundle that cannot be read stops the run at the start, naming the
#     variable and the file; a trusted certificate for another host name
#     (https://localhost/ on a certificate for 127.0.0.1) is refused.
. "$(dirname "$0")/lib.sh"
PATH=/usr/bin:$PATH
. "$SK_ROOT/tests/helpers/nginx.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_nginx
skip_unless_moto
need openssl
tmpdir T
at_exit nginx_stop
at_exit moto_stop
"$SK_TOOLS/mkcorpus" "$T/c" --samples 20 >/dev/null || die "mkcorpus failed"
expect_ok "$SK_BIN" pack "$T/c" -o "$T/www/ds/%03d.tar" --max-count 10 -q
mkdir -p "$T/www/img" && cp "$T"/c/*/*.jpg "$T/www/img/" || die "no photos"
"$SK_BIN" cat "$T/www/ds/manifest.json" >"$T/local.tar" || die "local cat failed"
moto_start || die "moto_server did not start"
aws --endpoint-url "$MOTO_URL" s3 mb s3://tlsb >/dev/null || die "bucket not made"
# /tlsb/ (path-style S3) goes to moto behind nginx's TLS; the rest is files;
# a second port offers HTTP/2
H2=$(nginx_free_port)
NGINX_TLS=1 NGINX_EXTRA="listen 127.0.0.1:$H2 ssl http2;
        location /tlsb { proxy_pass $MOTO_URL; proxy_set_header Host \$http_host;
        client_max_body_size 0; proxy_request_buffering off; }" nginx_start "$T/www" || die "nginx did not start"
U=$NGINX_URL CA=$NGINX_CA
# another self-signed certificate: a bundle that trusts something else
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -keyout "$T/other.key" \
    -out "$T/other.pem" -subj /CN=other 2>/dev/null || die "openssl failed"
unset AWS_CA_BUNDLE CURL_CA_BUNDLE SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE
sk() { timeout 60 "$SK_BIN" "$@"; }

step "untrusted: refused, the URL and the cause named"
expect_fail 1 "$U/ds/" sk cat "$U/ds/manifest.json"
assert_contains "$ERR" "self-signed certificate"
SSL_CERT_FILE=$T/other.pem expect_fail 1 "self-signed certificate" sk cat "$U/ds/manifest.json"

step "SSL_CERT_FILE, SSL_CERT_DIR, CURL_CA_BUNDLE: trusted, the same bytes"
SSL_CERT_FILE=$CA sk cat "$U/ds/manifest.json" | cmp -s - "$T/local.tar" || die "SSL_CERT_FILE: cat differs"
mkdir "$T/certs" && cp "$CA" "$T/certs/" && openssl rehash "$T/certs" 2>/dev/null || die "openssl rehash failed"
SSL_CERT_DIR=$T/certs sk cat "$U/ds/manifest.json" | cmp -s - "$T/local.tar" || die "SSL_CERT_DIR: cat differs"
# a named file is the whole trust: the directory is then not read
SSL_CERT_FILE=$T/other.pem SSL_CERT_DIR=$T/certs expect_fail 1 "self-signed certificate" sk cat "$U/ds/manifest.json"
CURL_CA_BUNDLE=$CA SSL_CERT_FILE=$T/other.pem sk cat "$U/ds/manifest.json" | cmp -s - "$T/local.tar" ||
    die "CURL_CA_BUNDLE: cat differs"
CURL_CA_BUNDLE=$T/other.pem SSL_CERT_FILE=$CA expect_fail 1 "self-signed certificate" \
    sk cat "$U/ds/manifest.json"
# AWS_CA_BUNDLE is the aws cli's, for S3 endpoints: not for a web server's URL
AWS_CA_BUNDLE=$CA expect_fail 1 "self-signed certificate" sk cat "$U/ds/manifest.json"

step "a bundle that cannot be read stops the run at the start"
CURL_CA_BUNDLE=$T/none.pem expect_fail 1 "CURL_CA_BUNDLE=$T/none.pem: the CA bundle cannot be read" \
    sk cat "$U/ds/manifest.json"
ls "$T/www/img" | sed "s|^|$U/img/|" >"$T/list.txt"
CURL_CA_BUNDLE=$T/none.pem expect_fail 1 "the CA bundle cannot be read" \
    sk pack --from-urls "$T/list.txt" -o "$T/none/%05d.tar" --allow-private-addresses -q
[ ! -e "$T/none" ] || die "a run stopped at the start left $T/none"

step "a trusted certificate for another host name is refused"
SSL_CERT_FILE=$CA expect_fail 1 "localhost" sk cat "https://localhost:$NGINX_PORT/ds/manifest.json"
assert_contains "$ERR" "subject name"

step "pack --from-urls over https: each row checked"
expect_ok sk pack --from-urls "$T/list.txt" -o "$T/u0/%05d.tar" --allow-private-addresses -q
[ "$(grep -c '"status":"failed_to_download","error_message":"SSL certificate problem: self-signed certificate"' \
    "$T/u0/00000.status.jsonl")" = "$(wc -l <"$T/list.txt")" ] || die "untrusted rows: $(head -2 "$T/u0/00000.status.jsonl")"
SSL_CERT_FILE=$CA expect_ok sk pack --from-urls "$T/list.txt" -o "$T/u1/%05d.tar" --allow-private-addresses -q
[ "$(grep -c '"status":"success"' "$T/u1/00000.status.jsonl")" = "$(wc -l <"$T/list.txt")" ] ||
    die "trusted rows: $(grep -v success "$T/u1/00000.status.jsonl" | head -2)"
mkdir "$T/x" && tar -xf "$T/u1/00000.tar" -C "$T/x" || die "untar failed"
i=0
while read -r url; do
    cmp -s "$T/x/$(printf '%09d' $i).jpg" "$T/www/img/${url##*/}" || die "row $i: the image differs from $url"
    i=$((i + 1))
done <"$T/list.txt"

step "HTTP/2 where the server offers it: the same images, every request over it"
sed "s|^$U/|https://127.0.0.1:$H2/|" "$T/list.txt" >"$T/list-h2.txt"
: >"$NGINX_DIR/access.log"
SSL_CERT_FILE=$CA expect_ok sk pack --from-urls "$T/list-h2.txt" -o "$T/h2/%05d.tar" --allow-private-addresses -q
[ "$(grep -c '"status":"success"' "$T/h2/00000.status.jsonl")" = "$(wc -l <"$T/list.txt")" ] ||
    die "rows over HTTP/2: $(grep -v success "$T/h2/00000.status.jsonl" | head -2)"
assert_eq "$(grep -c 'GET /img/.* HTTP/2.0"' "$NGINX_DIR/access.log")" "$(wc -l <"$T/list.txt")" "requests over HTTP/2"
mkdir "$T/x2" && tar -xf "$T/h2/00000.tar" -C "$T/x2" --wildcards '*.jpg' || die "untar failed"
for f in "$T"/x/*.jpg; do cmp -s "$f" "$T/x2/${f##*/}" || die "${f##*/}: other bytes over HTTP/2"; done

step "the bundle is read once a run, not once a connection"
need strace
cp "$CA" "$T/bundle.pem"
# (LeakSanitizer cannot run under ptrace: the asan build's leak check is off here)
SSL_CERT_FILE=$T/bundle.pem SSL_CERT_DIR=$T/certs ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 strace -f -e trace=open,openat,connect -o "$T/strace" \
    "$SK_BIN" pack --from-urls "$T/list.txt" -o "$T/u2/%05d.tar" --concurrency 8 --per-host 8 \
    --allow-private-addresses -q || die "pack under strace failed"
conns=$(grep -c "connect(.*htons($NGINX_PORT)" "$T/strace")
[ "$conns" -ge 2 ] || die "want several connections to nginx, saw $conns"
assert_eq "$(grep -c "bundle.pem\", O_RDONLY" "$T/strace")" 1 "opens of the CA bundle by $conns connections"
cmp -s "$T/u1/00000.tar" "$T/u2/00000.tar" || die "the shards of two trusted runs differ"

step "S3 over https: AWS_CA_BUNDLE first for the endpoint"
export AWS_ENDPOINT_URL=$U
expect_fail 1 "self-signed certificate" sk pack "$T/c" -o "s3://tlsb/ds/%03d.tar" --max-count 10 -q
AWS_CA_BUNDLE=$CA CURL_CA_BUNDLE=$T/other.pem SSL_CERT_FILE=$T/other.pem \
    expect_ok sk pack "$T/c" -o "s3://tlsb/ds/%03d.tar" --max-count 10 -q
AWS_CA_BUNDLE=$CA sk cat s3://tlsb/ds/manifest.json | cmp -s - "$T/local.tar" || die "S3 over https: cat differs"
AWS_CA_BUNDLE=$T/none.pem expect_fail 1 "AWS_CA_BUNDLE=$T/none.pem: the CA bundle cannot be read" \
    sk cat s3://tlsb/ds/manifest.json
# an S3 endpoint over plain http checks no certificate: a stale bundle does not stop it
AWS_ENDPOINT_URL=$MOTO_URL AWS_CA_BUNDLE=$T/none.pem sk cat s3://tlsb/ds/manifest.json | cmp -s - "$T/local.tar" ||
    die "plain http endpoint with an unreadable AWS_CA_BUNDLE"
echo "tls_trust: ok"
