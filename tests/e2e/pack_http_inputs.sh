#!/usr/bin/env bash
# pack_http_inputs.sh - pack's remote inputs read through the store, so
# files published on a web server are pack inputs as S3 objects are: a
# list of names (--files-from) with an http:// --root on nginx packs the
# same samples, byte for byte, as the same files packed locally.  And what
# a hostile list or server does is refused with the URL named, bounded: a
# listed name that climbs out of the root (".."), a file that is not there,
# a body longer than its size (one that never ends), a full URL under
# another root.  The other inputs named by URL, each read over http with
# the same result as the local file, and each refused when hostile: a
# --files-from list on the server (one naming a file outside its root, one
# cut short), a --from-archive archive (one whose member climbs out, one
# cut short), and shard's --keys list (one not there, one cut short); a
# refused run writes no shard.
set -euo pipefail
. "$SK_ROOT/tests/helpers/nginx.sh"
http_test_begin
refused() { # what, pattern the message must match, command...
    local what=$1 pat=$2 rc=0
    shift 2
    "$@" >"$t/out" 2>"$t/err" || rc=$?
    [ "$rc" -ne 0 ] || fail "$what: accepted"
    [ "$rc" -ne 124 ] || fail "$what: not bounded (timed out)"
    grep -Eq -- "$pat" "$t/err" || fail "$what: the message does not match '$pat': $(cat "$t/err")"
}

"$SK_TOOLS/mkcorpus" "$t/www/c" --samples 60 >/dev/null
(cd "$t/www/c" && find . -type f | sed 's|^\./||' | sort) >"$t/list"
[ "$(wc -l <"$t/list")" -ge 120 ] || fail "test setup: the corpus has too few files"
echo "secret" >"$t/www/secret.txt"
nginx_start "$t/www"
U=$NGINX_URL

echo "== pack --files-from LIST --root http://... packs what the local files pack"
sk pack --files-from "$t/list" --root "$t/www/c" -o "$t/local/s-%03d.tar" --max-count 25 -q
sk pack --files-from "$t/list" --root "$U/c/" -o "$t/web/s-%03d.tar" --max-count 25 -q
[ "$(ls "$t/web" | grep -c '\.tar$')" = "$(ls "$t/local" | grep -c '\.tar$')" ] || fail "another number of shards"
mkdir -p "$t/xl" "$t/xw"
for f in "$t"/local/*.tar; do tar -xf "$f" -C "$t/xl"; done
for f in "$t"/web/*.tar; do tar -xf "$f" -C "$t/xw"; done
diff -r "$t/xl" "$t/xw" >/dev/null || fail "the web inputs packed other members or bytes"
"$SK_BIN" cat --keys "$t/local/manifest.json" >"$t/kl"
"$SK_BIN" cat --keys "$t/web/manifest.json" >"$t/kw"
cmp -s "$t/kl" "$t/kw" || fail "the web inputs packed the samples in another order"
grep -q 'HEAD /c/' "$NGINX_DIR/access.log" || fail "no HEAD sized a file on nginx"
grep -q 'GET /c/' "$NGINX_DIR/access.log" || fail "no GET of a file reached nginx"
# the root without its '/' names the same directory; full URLs under it are taken too
sed "s|^|$U/c/|" "$t/list" >"$t/urls"
sk pack --files-from "$t/urls" --root "$U/c" -o "$t/web2/s-%03d.tar" --max-count 25 -q
"$SK_BIN" cat --keys "$t/web2/manifest.json" | cmp -s - "$t/kl" || fail "full URLs under the root packed other samples"

echo "== --files-from, --from-archive and shard --keys over http"
cp "$t/list" "$t/www/list.txt"
sk pack --files-from "$U/list.txt" --root "$t/www/c" -o "$t/wl/s-%03d.tar" --max-count 25 -q
"$SK_BIN" cat --keys "$t/wl/manifest.json" | cmp -s - "$t/kl" || fail "a list over http packed other samples"
grep -q 'GET /list.txt' "$NGINX_DIR/access.log" || fail "the list was not read from nginx"
tar -cf "$t/www/c.tar" -C "$t/www/c" -T "$t/list"
sk pack --from-archive "$U/c.tar" -o "$t/wa/s-%03d.tar" --max-count 25 -q
"$SK_BIN" cat --keys "$t/wa/manifest.json" | cmp -s - "$t/kl" || fail "an archive over http packed other samples"
for f in "$t"/wa/*.tar; do cmp -s "$f" "$t/local/${f##*/}" || fail "$f: not the bytes the local files pack"; done
sed -n '3,40p' "$t/kl" >"$t/www/keys.txt"
sk shard "$t/local/manifest.json" --keys "$U/keys.txt" -o "$t/wk/s-%03d.tar" -q
"$SK_BIN" cat --keys "$t/wk/manifest.json" | cmp -s - "$t/www/keys.txt" || fail "--keys over http kept other samples"

echo "== hostile lists and servers: refused, the URL named, bounded"
printf '../secret.txt\n' >"$t/www/evil.txt"
refused "a list over http naming a file outside its root" "\.\./secret\.txt.*not a usable member name" \
    sk pack --files-from "$U/evil.txt" --root "$t/www/c" -o "$t/e5/s-%03d.tar"
[ ! -e "$t/e5" ] || fail "a list over http naming a file outside its root wrote $t/e5"
"$(command -v /usr/bin/python3 || echo python3)" - "$t/www/evil.tar" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w") as t:
    for n in ("ok/a.jpg", "../../escape.jpg"):
        i = tarfile.TarInfo(n)
        i.size = 3
        t.addfile(i, io.BytesIO(b"abc"))
PY
mkdir "$t/spool"
refused "an archive over http whose member climbs out" "$U/evil\.tar: member '\.\./\.\./escape\.jpg' is not a usable name" \
    sk pack --from-archive "$U/evil.tar" -o "$t/e6/s-%03d.tar" --tmp-dir "$t/spool"
[ ! -e "$t/e6" ] && [ -z "$(ls -A "$t/spool")" ] && [ ! -e "$t/escape.jpg" ] || fail "the hostile archive left files"
refused "--keys not on the server" "$U/nokeys\.txt: no such file" \
    sk shard "$t/local/manifest.json" --keys "$U/nokeys.txt" -o "$t/e7/s-%03d.tar"
[ ! -e "$t/e7" ] || fail "shard wrote $t/e7 without its --keys"
printf '../secret.txt\n' >"$t/evil"
refused "a name climbing out of the root" "\.\./secret\.txt.*not a usable member name" \
    sk pack --files-from "$t/evil" --root "$U/c/" -o "$t/e1/s-%03d.tar"
[ ! -e "$t/e1" ] || ! ls "$t/e1" | grep -q '\.tar$' || fail "a shard was written from a hostile list"
grep -q 'secret.txt' "$NGINX_DIR/access.log" && fail "the name climbing out was asked of the server"
printf 'nothere.jpg\n' >"$t/missing"
refused "a file that is not there" "$U/c/nothere\.jpg: no such" \
    sk pack --files-from "$t/missing" --root "$U/c/" -o "$t/e2/s-%03d.tar"
printf 'http://127.0.0.1:1/c/x.jpg\n' >"$t/other"
refused "a full URL under another root" "is not under $U/c/" \
    sk pack --files-from "$t/other" --root "$U/c/" -o "$t/e3/s-%03d.tar"

tar -cf "$t/one.tar" -C "$t/www/c" "$(head -1 "$t/list")"
python3 "$SK_ROOT/tests/helpers/badweb.py" "$t/bad.port" "$t/one.tar" "$t/list" &
pids+=($!)
for _ in $(seq 100); do [ -s "$t/bad.port" ] && break; sleep 0.1; done
B=http://127.0.0.1:$(cat "$t/bad.port")
printf 'endless.tar\n' >"$t/endless"
export AWS_MAX_ATTEMPTS=2
refused "a body longer than its size (never ending)" "${B}/endless\.tar: object grew" \
    sk pack --files-from "$t/endless" --root "$B/" -o "$t/e4/s-%03d.tar"
# a list, an archive, a keys list cut short: an error, never the part that came
refused "a --files-from list cut short" "$B/short\.txt: Transferred a partial file" \
    sk pack --files-from "$B/short.txt" --root "$t/www/c" -o "$t/e8/s-%03d.tar"
refused "a --from-archive archive cut short" "$B/short\.tar: Transferred a partial file" \
    sk pack --from-archive "$B/short.tar" -o "$t/e9/s-%03d.tar" --tmp-dir "$t/spool"
refused "a --keys list cut short" "$B/short\.txt: Transferred a partial file" \
    sk shard "$t/local/manifest.json" --keys "$B/short.txt" -o "$t/e10/s-%03d.tar"
for d in e8 e9 e10; do [ ! -e "$t/$d" ] || fail "a run with an input cut short wrote $t/$d"; done
[ -z "$(ls -A "$t/spool")" ] || fail "the archive cut short left its spool file"
echo "ok"
