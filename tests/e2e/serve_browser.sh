#!/usr/bin/env bash
# serve_browser.sh - `shardkit serve` (docs/view.md) driven by a real
# browser, Debian's headless Chromium, on a demo dataset:
#   - the dataset page lists every shard; the sample page shows the image
#     (coloured pixels in the screenshot where the JPEG is) and the JSON
#     pretty-printed; the grid shows thumbnails no larger than asked for;
#   - a hostile key or path in the URL (../, %2e%2e, a NUL) gets 404, and
#     the server (traced with strace) opens no file outside the dataset;
#   - a member named x.html holding a <script> is served as text/plain with
#     nosniff and a sandboxing CSP, and the script does not run (the DOM
#     Chromium dumps has no title it would set); on the sample page it is
#     escaped text; a key holding markup is escaped on the shard page;
#   - only GET: a POST is 405; --bind defaults to 127.0.0.1; SIGTERM stops
#     it (the kill reaches the server, not strace, which ignores it).
# Screenshots are kept in $SK_BUILD/artifacts/serve_browser/.
. "$(dirname "$0")/lib.sh"
need chromium curl strace
PY=/usr/bin/python3
$PY -c 'import PIL' 2>/dev/null || skip "Pillow (python3-pil) is not installed"
tmpdir T
ART="$SK_ROOT/${SK_BUILD:-build}/artifacts/serve_browser"
mkdir -p "$ART"
cd "$T"

step "a demo dataset with a script-holding .html member and a key holding markup"
"$SK_TOOLS/mkcorpus" c --samples 150 --per-dir 50 >/dev/null || die mkcorpus
mkdir -p c/zz
printf '<html><body><script>document.title="PWN"+"ED"; document.body.innerHTML="RAN"+"SCRIPT"</script><p>member</p></body></html>\n' >c/zz/x.html
printf '{"note": "html beside"}' >c/zz/x.json
printf 'markup\n' >'c/zz/<i>em.txt'
printf 'outside the dataset\n' >secret.txt
expect_ok "$SK_BIN" pack c -o ds/s-%02d.tar --max-count 40
nshards=$(ls ds/*.tar | wc -l)

strace -f -qq -e trace=open,openat -o trace.txt "$SK_BIN" serve --port 0 ds/manifest.json >srv.out 2>srv.err &
SRV=$!
at_exit "kill -9 $SRV"
for _ in $(seq 100); do grep -q serving srv.out && break; sleep 0.1; done
# strace -o FILE ignores SIGTERM: the server itself is what a kill must reach
SPID=$(ps -o pid= --ppid "$SRV" | tr -d ' ')
[ -n "$SPID" ] && at_exit "kill -9 $SPID"
U=$(sed -n 's/^serving //p' srv.out)
case $U in http://127.0.0.1:*/) ;; *) die "not listening on loopback: '$U' $(cat srv.err)" ;; esac

chrome()
{
    timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$(mktemp -d -p "$T")" \
        --window-size=1200,1000 "$@" 2>/dev/null
}

step "the dataset page lists every shard"
chrome --dump-dom "$U" >dataset.html || die "chromium --dump-dom $U"
for s in ds/*.tar; do assert_contains dataset.html "$s" "shard on the dataset page"; done
[ "$(grep -o "href=\"shard?i=" dataset.html | wc -l)" -eq "$nshards" ] || die "not $nshards shard links"
assert_contains dataset.html "<svg" "plots"

step "the sample page shows the image and the pretty JSON"
chrome --dump-dom "${U}sample?o=7" >sample.html || die "chromium sample"
assert_contains sample.html '<img src="member?o=7&amp;m=1"' "image on the sample page"
grep -q "^  \"label\": " sample.html || die "JSON not pretty-printed"
chrome --screenshot="$T/sample.png" "${U}sample?o=7" >/dev/null || die "screenshot"
cp sample.png "$ART/sample.png"
$PY - sample.png <<'PYEOF' || die "the image is not shown in the screenshot"
import sys
from PIL import Image
im = Image.open(sys.argv[1]).convert("RGB")
px = im.getdata()
coloured = sum(1 for r, g, b in px if max(r, g, b) - min(r, g, b) > 25)
assert coloured > 2000, f"{coloured} coloured pixels"
PYEOF

step "the grid shows thumbnails"
chrome --dump-dom "${U}grid" >grid.html || die "chromium grid"
[ "$(grep -o 'class="thumb"' grid.html | wc -l)" -eq 48 ] || die "not 48 thumbnails"
chrome --screenshot="$T/grid.png" "${U}grid" >/dev/null || die "screenshot grid"
cp grid.png "$ART/grid.png"
chrome --screenshot="$T/dataset.png" "$U" >/dev/null && cp dataset.png "$ART/dataset.png"
curl -sf -o th.jpg "${U}thumb?o=3&m=1" || die "thumbnail"
$PY -c 'import sys; from PIL import Image; i = Image.open(sys.argv[1]); assert i.format == "JPEG" and max(i.size) <= 160, i.size' th.jpg || die "thumbnail size"

step "hostile URLs: 404, and nothing outside the dataset is opened"
code() { curl -s --path-as-is -o /dev/null -w '%{http_code}' "$@"; }
for p in "sample?key=../secret.txt" "sample?key=..%2f..%2fsecret" "sample?key=%2e%2e/%2e%2e/secret.txt" \
         "sample?key=n00000%2f00000001%00.jpg" "sample?key=%00" "../secret.txt" "%2e%2e/secret.txt" \
         "..%2fsecret.txt" "member?o=0&m=99" "member?o=-1&m=0" "member?o=1e3&m=0" "shard?i=99" \
         "shard?i=0&page=9" "thumb?o=0&m=0" "sample?o=18446744073709551615" "grid?o=99999" \
         "member?o=0%00&m=0" "static/../../secret.txt"; do
    [ "$(code "$U$p")" = 404 ] || die "$p: $(code "$U$p"), not 404"
done
[ "$(code -X POST -d x=1 "${U}sample?o=1")" = 405 ] || die "POST not refused"
sleep 0.3
grep -q secret trace.txt && die "the server opened a file outside the dataset: $(grep secret trace.txt)"
grep -E 'open(at)?\(' trace.txt | grep -v ENOENT | grep -o '"[^"]*"' | tr -d '"' | sort -u >opened.txt
while read -r f; do
    case $f in
    /lib/* | /usr/* | /etc/ld.so* | /etc/localtime | /proc/* | /sys/* | /dev/*) ;;
    ds/*) ;;
    *) die "the server opened $f" ;;
    esac
done <opened.txt

step "x.html is served as text and its script does not run"
hk=$(curl -s "${U}search?prefix=zz/x" | grep -o 'sample?o=[0-9]*' | head -1)
[ -n "$hk" ] || die "search by prefix did not find zz/x"
o=${hk#sample?o=}
curl -s -D hdr.txt -o body.txt "${U}member?o=$o&m=0"
assert_contains hdr.txt "Content-Type: text/plain" "x.html type"
assert_contains hdr.txt "X-Content-Type-Options: nosniff" "nosniff"
assert_contains hdr.txt "sandbox" "sandboxing CSP"
chrome --dump-dom "${U}member?o=$o&m=0" >member.html || die "chromium member"
assert_not_contains member.html "PWNED" "the script ran (title)"
assert_not_contains member.html "RANSCRIPT" "the script ran (body)"
assert_contains member.html "&lt;script&gt;" "shown as text"
chrome --dump-dom "${U}sample?o=$o" >xs.html || die "chromium x sample"
assert_not_contains xs.html "PWNED" "script ran on the sample page"
assert_not_contains xs.html "<script" "script element on the sample page"
curl -s -D h2.txt -o /dev/null "$U"
assert_contains h2.txt "Content-Security-Policy: default-src 'none'" "page CSP"

step "a key holding markup is escaped on the shard page"
last=$((nshards - 1))
curl -s "${U}shard?i=$last" >shard.html
assert_contains shard.html "&lt;i&gt;em" "escaped key"
assert_not_contains shard.html "<i>em" "raw key"

step "--bind refuses what is not an address"
expect_fail 2 "" "$SK_BIN" serve --port 99999 ds
expect_fail 2 "not an IPv4" "$SK_BIN" serve --bind 'evil.example' --port 0 ds
step "SIGTERM stops the server, and strace with it"
kill -TERM "$SPID"
for _ in $(seq 100); do kill -0 "$SRV" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SRV" 2>/dev/null && die "serve still running 10 s after SIGTERM"
ls -la "$ART"
echo "serve_browser: ok"
