#!/usr/bin/env bash
# test: alone (it bounds its own time or memory: nothing beside it)
# s3_upload_sync_scale.sh - `upload --sync` holds one listing page of the
# destination, not all of it: its listing is merged with the files' keys
# (both in key order) a page at a time.  Measured as the slope of peak RSS
# between a rerun over 1,000 and over 3,500 objects whose keys are ~1,000
# bytes long (holding every key, as the whole listing in memory did, costs
# ~2.7 MB more at 3,500, far above the noise; a page of 1,000 is held in
# both: measured +0.7 MB now, +3.5 MB before, so the bound is 1.5 MB); and
# the rerun asks for about one page per 1,000 objects (no listing per key)
# and sends nothing.
. "$(dirname "$0")/lib.sh"
. "$SK_ROOT/tests/helpers/moto.sh"
skip_unless_moto
need python3
[ -x /usr/bin/time ] || skip "/usr/bin/time not installed"
tmpdir T
at_exit moto_stop
s3_serve bkt
proxy_start "$MOTO_URL" "$T/log"
# four directory levels of 245 characters: each key is ~1,000 bytes
long=$(python3 -c 'print("/".join(c * 245 for c in "abcd"))')
mk() { # mk DIR N: N small files under the long path
    mkdir -p "$1/$long"
    (cd "$1/$long" && python3 -c '
import sys
for i in range(int(sys.argv[1])):
    open("f%06d.bin" % i, "w").write("object %d\n" % i)' "$2")
}
rss() { # rss N: RSS = peak RSS (KiB) of a rerun with --sync over N objects
    local d=$T/d$1
    expect_ok "$SK_BIN" upload -q --endpoint-url "$MOTO_URL" --sync "$d" "s3://bkt/n$1/"
    : >"$T/log"
    expect_ok /usr/bin/time -f '%M' -o "$T/rss$1" "$SK_BIN" upload --json --endpoint-url "$PROXY_URL" --sync "$d" "s3://bkt/n$1/"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["objects_same"] == int(sys.argv[2]) and d["objects_ok"] == 0, d' \
        "$OUT" "$1" || die "rerun over $1: $(cat "$OUT")"
    assert_eq "$(grep -c '^PUT' "$T/log")" 0 "PUTs of the rerun over $1"
    local lists
    lists=$(grep -c 'list-type=2' "$T/log")
    [ "$lists" -le $(($1 / 1000 + 2)) ] || die "the rerun over $1 objects listed $lists pages"
    RSS=$(cat "$T/rss$1")
}
mk "$T/d1000" 1000
mk "$T/d3500" 3500
step "reruns over 1,000 and 3,500 objects"
rss 1000
small=$RSS
rss 3500
big=$RSS
echo "peak RSS: $small KiB at 1,000 objects, $big KiB at 3,500"
[ $((big - small)) -lt 1536 ] || die "peak RSS grew by $((big - small)) KiB from 1,000 to 3,500 objects (the listing is held whole)"
exit 0
