# nginx.sh - sourced by tests: a real web server (Debian's nginx-light)
# serving a directory on 127.0.0.1, started with a config of the test's
# own in a scratch directory (no root, no system config, no logs outside it).
#
#   skip_unless_nginx           exit 77 when nginx is not installed
#   nginx_start ROOT            serves ROOT; sets NGINX_URL (http://127.0.0.1:PORT)
#                               and NGINX_PORT; extra server-block lines may
#                               come in $NGINX_EXTRA (e.g. a redirect);
#                               $NGINX_CONNECTIONS: worker_connections (64);
#                               NGINX_TLS=1: https with a certificate made for
#                               IP 127.0.0.1 only, signed by itself, its PEM in
#                               $NGINX_CA (trusted by nothing else)
#   nginx_stop                  stops it (call from the test's EXIT trap)
#   http_test_begin             the preamble of an HTTP test: skips without
#                               nginx; scratch dir $t, background pids in
#                               pids=() killed and nginx stopped at exit;
#                               fail MSG and sk ARGS (shardkit, 120 s bound)
NGINX_BIN=${NGINX_BIN:-$(command -v nginx || echo /usr/sbin/nginx)}

skip_unless_nginx() {
    [ -x "$NGINX_BIN" ] || { echo "needs nginx (nginx-light: scripts/deps check)"; exit 77; }
}

nginx_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

nginx_start() {
    local root=$1
    NGINX_DIR=$(mktemp -d)
    NGINX_PORT=$(nginx_free_port)
    # as root nginx's workers would run as nobody and could not read a
    # test's private scratch directory: keep them the test's own user
    local user=
    [ "$(id -u)" = 0 ] && user="user root root;"
    local listen="127.0.0.1:$NGINX_PORT" scheme=http tls=
    NGINX_CA=
    if [ "${NGINX_TLS:-}" = 1 ]; then
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
            -keyout "$NGINX_DIR/key.pem" -out "$NGINX_DIR/cert.pem" -subj /CN=127.0.0.1 \
            -addext subjectAltName=IP:127.0.0.1 2>"$NGINX_DIR/start.err" ||
            { cat "$NGINX_DIR/start.err" >&2; return 1; }
        NGINX_CA=$NGINX_DIR/cert.pem
        listen="$listen ssl" scheme=https
        tls="ssl_certificate $NGINX_DIR/cert.pem; ssl_certificate_key $NGINX_DIR/key.pem;"
    fi
    cat >"$NGINX_DIR/nginx.conf" <<CONF
$user
daemon on;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log;
worker_processes 1;
events { worker_connections ${NGINX_CONNECTIONS:-64}; }
http {
    access_log $NGINX_DIR/access.log;
    client_body_temp_path $NGINX_DIR/body;
    proxy_temp_path $NGINX_DIR/proxy;
    fastcgi_temp_path $NGINX_DIR/fastcgi;
    uwsgi_temp_path $NGINX_DIR/uwsgi;
    scgi_temp_path $NGINX_DIR/scgi;
    types { application/json json; application/x-tar tar; }
    default_type application/octet-stream;
    server {
        listen $listen;
        $tls
        root $root;
        ${NGINX_EXTRA:-}
    }
}
CONF
    "$NGINX_BIN" -c "$NGINX_DIR/nginx.conf" -p "$NGINX_DIR" -e "$NGINX_DIR/error.log" 2>"$NGINX_DIR/start.err" ||
        { cat "$NGINX_DIR/start.err" >&2; return 1; }
    NGINX_URL=$scheme://127.0.0.1:$NGINX_PORT
    local i
    for i in $(seq 50); do
        curl -s -o /dev/null ${NGINX_CA:+--cacert "$NGINX_CA"} "$NGINX_URL/" && return 0
        sleep 0.1
    done
    echo "nginx did not answer on $NGINX_URL" >&2
    return 1
}

nginx_stop() {
    [ -n "${NGINX_DIR:-}" ] || return 0
    [ -f "$NGINX_DIR/nginx.pid" ] && kill "$(cat "$NGINX_DIR/nginx.pid")" 2>/dev/null
    sleep 0.1
    rm -rf "$NGINX_DIR"
    NGINX_DIR=
}

http_test_begin() {
    skip_unless_nginx
    t=$(mktemp -d)
    pids=()
    trap 'nginx_stop; for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$t"' EXIT
    fail() { echo "FAIL: $*" >&2; exit 1; }
    sk() { timeout 120 "$SK_BIN" "$@"; }
}
