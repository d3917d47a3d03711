#!/usr/bin/env bash
# urls_hostile.sh - pack --from-urls against a hostile web server of the
# test's own (tests/helpers/badimages.py on 127.0.0.1) and a hostile list:
# every row gets the status it deserves, the good rows still become
# samples, and the run ends in bounded time.
#   - 404, 500 (retried, then failed), 429 with Retry-After (waited, then
#     fetched), 503 with a Retry-After longer than we wait;
#   - a slow drip (timed out), an endless body (capped while it arrives),
#     a body longer than its Content-Length (the declared bytes only);
#   - HTML served as image/jpeg, a decompression bomb (bad images, no
#     allocation of 60000x60000 pixels);
#   - a redirect loop (over 5), redirects to 169.254.169.254 and to a
#     private address (refused at connect when only 127.0.0.0/8 is
#     allowed), a loopback URL without --allow-private-addresses;
#   - X-Robots-Tag: noai (refused), another agent's line (taken), our
#     token's line (refused with --user-agent-token MyBot);
#   - a 10 MB URL line, a non-UTF-8 caption, duplicate URLs, ftp://.
. "$(dirname "$0")/lib.sh"
# Debian's python3 first: it needs no module beyond the standard library
# here and starts in a fraction of the time of the pyenv shim
PATH=/usr/bin:$PATH
PY=/usr/bin/python3 # Debian's: starts faster than the pyenv shim
tmpdir T
"$SK_TOOLS/mkcorpus" "$T/c" --samples 1 >/dev/null || die "mkcorpus failed"
JPEG=$(find "$T/c" -name '*.jpg' | head -1)
$PY "$SK_ROOT/tests/helpers/badimages.py" "$T/port" "$JPEG" &
at_exit "kill $!"
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
[ -s "$T/port" ] || die "the hostile server did not start"
B=http://127.0.0.1:$(cat "$T/port")

step "a list of hostile rows"
{
    printf 'url\tcaption\n'
    printf '%s\tgood\n' "$B/ok.jpg"
    printf '%s\tnot found\n' "$B/404"
    printf '%s\tserver error\n' "$B/500"
    printf '%s\ttoo many\n' "$B/429?a"
    printf '%s\tunavailable\n' "$B/503-long"
    printf '%s\tdrip\n' "$B/drip.jpg"
    printf '%s\tendless\n' "$B/endless.jpg"
    printf '%s\tlonger\n' "$B/longer.jpg"
    printf '%s\thtml\n' "$B/html.jpg"
    printf '%s\tbomb\n' "$B/bomb.jpg"
    printf '%s\tloop\n' "$B/loop"
    printf '%s\tmetadata\n' "$B/to-metadata"
    printf '%s\tprivate\n' "$B/to-private"
    printf '%s\trobots\n' "$B/robots.jpg"
    printf '%s\trobots other\n' "$B/robots-other.jpg"
    printf '%s\trobots ours\n' "$B/robots-ours.jpg"
    printf '%s?' "$B/ok.jpg"; head -c 10000000 /dev/zero | tr '\0' 'a'; printf '\tlong line\n'
    printf '%s\tbad \xff\xfe utf-8 \xc3\n' "$B/ok.jpg"
    printf '%s\tdup\n' "$B/ok.jpg"
    printf 'ftp://127.0.0.1/x.jpg\tftp\n'
    printf '%s\tlast\n' "$B/ok.jpg"
    # a port nothing listens on (bound, then closed): curl's message says
    # how many ms the refusal took, which a status line must not carry
    printf 'http://127.0.0.1:%s/x.jpg\tclosed\n' "$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
} >"$T/list.tsv"

start=$(date +%s)
expect_ok "$SK_BIN" pack --from-urls "$T/list.tsv" --caption-col caption -o "$T/o/%05d.tar" \
    --allow-private-addresses=127.0.0.0/8 --timeout 3 --retries 2 --max-image-bytes 1M \
    --user-agent-token MyBot --number-sample-per-shard 100 -q
took=$(( $(date +%s) - start ))
[ "$took" -le 40 ] || die "the run took ${took}s (bounded waits expected)"

# key -> "status|error" for each row, in list order
$PY - "$T/o/00000.status.jsonl" >"$T/st" <<'EOF' || die "status file unreadable"
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    r = json.loads(line)
    print(r["key"], r["status"], r["http"], r["error_message"] or "", sep="|")
EOF
cat "$T/st"
row() { sed -n "$(( $1 + 1 ))p" "$T/st"; }
want() { # row, status, part of the error
    local r; r=$(row "$1")
    case "$r" in *"|$2|"*"$3"*) ;; *) die "row $1: want $2 ($3), got: $r" ;; esac
}
want 0 success ""
want 1 failed_to_download "HTTP 404"
want 2 failed_to_download "HTTP 500"
want 3 success ""
want 4 failed_to_download "Retry-After 3600"
want 5 failed_to_download "timed out"
want 6 failed_to_download "max-image-bytes"
want 7 success ""
want 8 failed_to_resize "not a JPEG"
want 9 failed_to_resize "pixel cap"
want 10 failed_to_download "more than 5 redirects"
want 11 failed_to_download "refused: link-local address 169.254.169.254"
want 12 failed_to_download "refused: private address 10.11.12.13"
want 13 failed_to_download "X-Robots-Tag"
want 14 success ""
want 15 failed_to_download "X-Robots-Tag"
want 16 failed_to_download "unreadable row"
want 17 success ""
want 18 success ""
want 19 failed_to_download "not an http or https URL"
want 20 success ""
want 21 failed_to_download "Failed to connect to 127.0.0.1 port"
[ "$(wc -l <"$T/st")" = 22 ] || die "every row has one status line"
# a row's status is what the server did, not how long it took (that is
# "ms"): the same answers give the same lines, and stats.json's kinds of
# error do not split by timing
! grep -E '[0-9] ?(ms|milliseconds)\b' "$T/st" || die "a status message carries a timing"

step "the samples: the good rows only, the declared bytes only, captions as given"
tar tf "$T/o/00000.tar" | grep '\.jpg$' | tr '\n' ' ' >"$T/jpgs"
assert_eq "$(cat "$T/jpgs")" "0000000.jpg 0000003.jpg 0000007.jpg 0000014.jpg 0000017.jpg 0000018.jpg 0000020.jpg " "samples written (keys: shard 00000, row 00..99)"
tar xOf "$T/o/00000.tar" 0000007.jpg | cmp - "$JPEG" || die "a body longer than its Content-Length: not the declared bytes"
tar xOf "$T/o/00000.tar" 0000017.txt | od -An -tx1 | tr -d ' \n' >"$T/cap"
assert_eq "$(cat "$T/cap")" "62616420fffe207574662d3820c3" ".txt keeps the caption's bytes"
tar xOf "$T/o/00000.tar" 0000017.json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["caption"]=="bad \ufffd\ufffd utf-8 \ufffd", d' ||
    die ".json is valid JSON with U+FFFD for bytes that are not UTF-8"

step "retries: 500 tried 3 times, 429 twice (after its Retry-After)"
curl -s "$B/hits" >"$T/hits"
$PY - "$T/hits" <<'EOF' || die "retries wrong: $(cat "$T/hits")"
import json, sys
h = json.load(open(sys.argv[1]))
assert h["/500"] == 3, h
assert h["/429"] == 2, h
assert h["/404"] == 1, h
assert h["/503-long"] == 1, h
EOF

step "stats.json counts every row"
$PY - "$T/o/stats.json" <<'EOF' || die "stats.json wrong: $(cat "$T/o/stats.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["rows"] == 22 and s["success"] == 7, s
assert s["failed_to_download"] == 13 and s["failed_to_resize"] == 2, s
assert s["errors"]["HTTP 404"] == 1, s
EOF

step "a loopback URL is refused without --allow-private-addresses"
printf '%s\n' "$B/ok.jpg" "http://localhost:$(cat "$T/port")/ok.jpg" >"$T/lo.txt"
expect_ok "$SK_BIN" pack --from-urls "$T/lo.txt" -o "$T/lo/%05d.tar" -q
grep -c '"refused: loopback address 127.0.0.1' "$T/lo/00000.status.jsonl" | grep -qx 1 ||
    grep -c 'refused: loopback address' "$T/lo/00000.status.jsonl" | grep -qx 2 ||
    die "loopback not refused: $(cat "$T/lo/00000.status.jsonl")"
assert_eq "$(tar tf "$T/lo/00000.tar" | wc -l)" 0 "no sample from a loopback address"

step "usage errors"
expect_fail 2 "--allow-private-addresses" "$SK_BIN" pack --from-urls "$T/lo.txt" -o "$T/u/%05d.tar" \
    --allow-private-addresses=10.0.0.0/99
expect_fail 2 "--input-format" "$SK_BIN" pack --from-urls "$T/lo.txt" -o "$T/u/%05d.tar" --input-format xml
expect_fail 2 "takes no SOURCE" "$SK_BIN" pack --from-urls "$T/lo.txt" -o "$T/u/%05d.tar" "$T"
echo "urls_hostile: ok"
